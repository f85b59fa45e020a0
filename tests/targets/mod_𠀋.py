# -*- coding: utf-8 -*-
"""Module whose file name needs 4 bytes per character (UCS-4)."""
from _pyd_common import BLOCK, ready


def f_𠀋𠀋():
    ready("ucs4_file"); BLOCK.acquire()
