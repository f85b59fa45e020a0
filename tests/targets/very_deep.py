# -*- coding: utf-8 -*-
"""A stack of 150,000 frames: a worker thread (with a 1 GB C stack, for the
interpreters whose Python calls recurse in C) recurses that deep under a
raised recursion limit and blocks at the bottom.

usage: very_deep.py GROUND_TRUTH.json
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import BLOCK, checkpoint, ready, spawn  # noqa: E402

DEPTH = 150000


def dive(n):
    if n <= 0:
        ready("very_deep"); BLOCK.acquire()
    return dive(n - 1) + 1


def main():
    sys.setrecursionlimit(DEPTH + 1000)
    threading.stack_size(1 << 30)
    spawn("very_deep", dive, DEPTH)
    checkpoint(); time.sleep(1e6)


if __name__ == "__main__":
    main()
