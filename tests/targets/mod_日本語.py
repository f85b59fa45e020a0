# -*- coding: utf-8 -*-
"""Module whose file name needs 2 bytes per character (UCS-2)."""
from _pyd_common import BLOCK, ready


def 関数_ユニコード():
    ready("ucs2_file"); BLOCK.acquire()
