# -*- coding: utf-8 -*-
"""A frame whose local points at freed memory: a 4 MB bytes object (its
own mmap'd chunk) is freed behind its variable's back, so the pointer
dangles into an unmapped page (in a free-threaded build, whose allocator
keeps freed memory, a copy of it in pages that are then unmapped).  The thread then blocks forever; nothing
touches the variable again.

usage: locals_dangling.py GROUND_TRUTH.json ADDR_FILE
"""
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import checkpoint, free_threaded, native_tid, write_text  # noqa: E402


LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.mmap.restype = ctypes.c_void_p
LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
PAGES = 1 << 16


def mapped_copy(blob):
    """A free-threaded build's allocator (mimalloc) keeps freed memory
    mapped, so its dangling pointer is made by hand: a copy of blob's
    header in pages of their own, which the caller unmaps once nothing
    will touch the copy again.  Returns (pages, copy)."""
    page = LIBC.mmap(None, PAGES, 3, 0x22, -1, 0)  # RW, PRIVATE|ANONYMOUS
    ctypes.memmove(page, id(blob), PAGES)
    return page, ctypes.cast(page, ctypes.py_object).value


def dangling():
    blob = bytes(4 << 20)
    other = "ok"
    page = None
    if free_threaded():
        page, blob = mapped_copy(blob)
        alias = None
    else:
        alias = blob
    write_text(sys.argv[2], str(id(blob)))
    native_tid()  # its imports (3.6, 3.7) allocate: done before the free
    if alias is not None:
        # Leave alias as the only counted reference, then drop it: the
        # object is freed while blob still points at it (glibc unmaps
        # a 4 MB chunk).
        ctypes.c_ssize_t.from_address(id(blob)).value = 1
    del alias
    if page is not None:
        LIBC.munmap(page, PAGES)
    del page
    checkpoint(); time.sleep(1e6)
    return blob, other


dangling()
