# -*- coding: utf-8 -*-
"""Several threads blocked in different places; main blocked in time.sleep.

usage: threads.py GROUND_TRUTH.json
"""
import os
import queue
import select
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import BLOCK, checkpoint, ready, spawn  # noqa: E402


def in_lock():
    ready("lock"); BLOCK.acquire()


def in_rlock(rlock):
    ready("rlock"); rlock.acquire()


def in_event():
    ev = threading.Event()
    ready("event"); ev.wait()


def in_sleep():
    ready("sleep"); time.sleep(1e6)


def in_renamed():
    # Renamed after it started, to a name longer than the kernel keeps:
    # the OS name (3.14+) is still the first one, cut at 15 bytes.
    threading.current_thread().name = "renamed after it started: Größe"
    ready("renamed"); BLOCK.acquire()


def in_select():
    a, b = socket.socketpair()
    ready("select"); select.select([a], [], [])


def in_accept():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    ready("accept"); srv.accept()


def in_queue():
    q = queue.Queue()
    ready("queue"); q.get()


def in_condition():
    cond = threading.Condition()
    with cond:
        ready("condition"); cond.wait()


class Widget:
    def __init__(self, last):
        if last:
            ready("in_init"); BLOCK.acquire()


def in_init():
    # One call site creating many objects: 3.13+ then enters __init__
    # through the interpreter's own trampoline frame, which tracebacks
    # (and the dump) leave out.
    for i in range(1000):
        Widget(i == 999)


def middle(n):
    if n:
        return middle(n - 1)
    ready("nested_calls"); time.sleep(1e6)


def main():
    rlock = threading.RLock()
    rlock.acquire()                                   # owned by main forever
    spawn("lock", in_lock)
    spawn("rlock", in_rlock, rlock)
    spawn("event", in_event)
    spawn("in_init", in_init)
    spawn("sleep", in_sleep)
    spawn("renamed", in_renamed)
    spawn("select", in_select)
    spawn("accept", in_accept)
    spawn("queue", in_queue)
    spawn("condition", in_condition)
    spawn("nested_calls", middle, 5)
    checkpoint(); time.sleep(1e6)


if __name__ == "__main__":
    main()
