# -*- coding: utf-8 -*-
"""A thread-state list that loops, made with ctypes the way a heap
corruption would: after the ground truth is recorded, the last thread
state's `next` is pointed back into the list.  Every thread then blocks
forever; nothing in the target walks the list again.

usage: looping.py GROUND_TRUTH.json DONE_FILE MODE
  MODE self: the last thread state points at itself
       back: the last thread state points at the first (the list is a ring)
"""
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import BLOCK, checkpoint, ready, spawn, write_text  # noqa: E402

api = ctypes.pythonapi
for fn in (api.PyInterpreterState_Head, api.PyInterpreterState_ThreadHead,
           api.PyThreadState_Next):
    fn.restype = ctypes.c_void_p
api.PyInterpreterState_ThreadHead.argtypes = [ctypes.c_void_p]
api.PyThreadState_Next.argtypes = [ctypes.c_void_p]


def thread_states():
    ts = api.PyInterpreterState_ThreadHead(api.PyInterpreterState_Head())
    out = []
    while ts:
        out.append(ts)
        ts = api.PyThreadState_Next(ts)
    return out


def next_offset(first, second):
    """Where `next` sits in a thread state: the first word of `first`
    holding `second` (`prev` comes before it and is NULL in the head)."""
    for off in range(0, 512, 8):
        if ctypes.c_void_p.from_address(first + off).value == second:
            return off
    raise RuntimeError("no next pointer in the thread state")


def corrupt(mode):
    states = thread_states()
    off = next_offset(states[0], states[1])
    tail = states[-1]
    ctypes.c_void_p.from_address(tail + off).value = tail if mode == "self" else states[0]
    write_text(sys.argv[2], "%d threads, next at +%d" % (len(states), off))


def worker():
    ready("worker"); BLOCK.acquire()


def other():
    ready("other"); BLOCK.acquire()


spawn("worker", worker)
spawn("other", other)
checkpoint(); corrupt(sys.argv[3]); time.sleep(1e6)
