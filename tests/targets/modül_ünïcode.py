# -*- coding: utf-8 -*-
"""Module with a latin-1 (1-byte, non-ASCII) file name and function names
whose strings need 1, 2 and 4 bytes per character."""
from _pyd_common import BLOCK, ready


def grüße_löwe():
    ready("latin1"); BLOCK.acquire()


def fünktion_日本():
    ready("ucs2"); BLOCK.acquire()


def fünktion_𠀋():
    ready("ucs4"); BLOCK.acquire()


class Klässe:
    def méthode(self):
        ready("latin1_method"); BLOCK.acquire()
