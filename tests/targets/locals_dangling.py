# -*- coding: utf-8 -*-
"""A frame whose local points at freed memory: a 4 MB bytes object (its
own mmap'd chunk) is freed behind its variable's back, so the pointer
dangles into an unmapped page.  The thread then blocks forever; nothing
touches the variable again.

usage: locals_dangling.py GROUND_TRUTH.json ADDR_FILE
"""
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import checkpoint, native_tid, write_text  # noqa: E402


def dangling():
    blob = bytes(4 << 20)
    other = "ok"
    alias = blob
    write_text(sys.argv[2], str(id(blob)))
    native_tid()  # its imports (3.6, 3.7) allocate: done before the free
    # Leave alias as the only counted reference, then drop it: the object
    # is freed while blob still points at it.
    ctypes.c_ssize_t.from_address(id(blob)).value = 1
    del alias
    checkpoint(); time.sleep(1e6)
    return blob, other


dangling()
