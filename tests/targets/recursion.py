# -*- coding: utf-8 -*-
"""Deep recursion: main thread 1,500 frames deep (mutual recursion), a worker
1,000 frames deep (self recursion), both blocked at the bottom.

usage: recursion.py GROUND_TRUTH.json
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import BLOCK, checkpoint, ready, spawn  # noqa: E402

MAIN_DEPTH = 1500
WORKER_DEPTH = 1000


def ping(n):
    if n <= 0:
        checkpoint(); time.sleep(1e6)
    return pong(n - 1)


def pong(n):
    if n <= 0:
        checkpoint(); time.sleep(1e6)
    return ping(n - 1)


def dive(n):
    if n <= 0:
        ready("deep_worker"); BLOCK.acquire()
    return dive(n - 1) + 1


def main():
    sys.setrecursionlimit(20000)
    threading.stack_size(64 * 1024 * 1024)   # plenty of C stack on <= 3.10
    spawn("deep_worker", dive, WORKER_DEPTH)
    threading.stack_size(0)
    ping(MAIN_DEPTH)


if __name__ == "__main__":
    main()
