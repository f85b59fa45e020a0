# -*- coding: utf-8 -*-
"""Native frames between Python frames: a thread calls libc's qsort
through ctypes with a Python comparison callback that blocks, so its
stack is Python -> ctypes/libffi -> qsort -> libffi -> Python; a thread
that runs no Python at all (pthread_create of libc's sleep); a thread
calling through C++ functions (native_cpp.cpp, built by the test) into a
Python callback that blocks; and threads blocked in sleep, a lock and
select.

With "perf" after the library (3.12+), every Python call first goes
through a perf trampoline (sys.activate_stack_trampoline("perf"), as
python -X perf does): code in anonymous memory with no CFI, which the
native unwinding must get past.

usage: native.py GROUND_TRUTH.json LIBPYD_CPP.so [perf]
"""
import ctypes
import ctypes.util
import os
import select
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import BLOCK, checkpoint, ready, spawn, write_text  # noqa: E402

LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
# glibc before 2.34 (bullseye's 2.31) has pthread_create there, not in
# libc; later ones keep libpthread as a stub that finds it in libc.
PTHREAD = ctypes.CDLL("libpthread.so.0")
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)


def compare(a, b):
    ready("callback"); BLOCK.acquire()
    return 0


def sort_with_callback():
    arr = (ctypes.c_int * 2)(2, 1)
    LIBC.qsort(arr, 2, ctypes.sizeof(ctypes.c_int), CMP(compare))


def cpp_callback(x):
    ready("cpp"); BLOCK.acquire()
    return x


def call_cpp(path):
    ctypes.CDLL(path).pyd_cpp_call(CB(cpp_callback), 1)


def in_sleep():
    ready("sleep"); time.sleep(1e6)


def in_select():
    r, w = os.pipe()
    ready("select"); select.select([r], [], [])


def c_thread():
    """A thread that never runs Python: pthread_create(sleep, 100000)."""
    tid = ctypes.c_ulong()
    start = ctypes.cast(LIBC.sleep, ctypes.c_void_p)
    PTHREAD.pthread_create.argtypes = [ctypes.POINTER(ctypes.c_ulong), ctypes.c_void_p,
                                       ctypes.c_void_p, ctypes.c_void_p]
    if PTHREAD.pthread_create(ctypes.byref(tid), None, start, ctypes.c_void_p(100000)):
        raise OSError("pthread_create failed")


def main():
    if sys.argv[3:] == ["perf"]:
        sys.activate_stack_trampoline("perf")
    spawn("callback", sort_with_callback)
    spawn("cpp", call_cpp, sys.argv[2])
    spawn("sleep", in_sleep)
    spawn("select", in_select)
    c_thread()
    checkpoint(); time.sleep(1e6)


if __name__ == "__main__":
    main()
