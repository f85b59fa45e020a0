# -*- coding: utf-8 -*-
"""A stack of 150,000 frames (or DEPTH): a worker thread (with a 1 GB C
stack, for the interpreters whose Python calls recurse in C) recurses that
deep under a raised recursion limit and blocks at the bottom.

With DEPTH the ground truth records no frames (a million of them would
take longer to record than to dump): each thread has "frames": [].

usage: very_deep.py GROUND_TRUTH.json [DEPTH]
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import (BLOCK, _tids, base_truth, checkpoint, ready, spawn,  # noqa: E402
                         wait_workers, write_json)

DEPTH = 150000


def dive(n):
    if n <= 0:
        ready("very_deep"); BLOCK.acquire()
    return dive(n - 1) + 1


def depth_truth(worker):
    """The ground truth without frames, once the worker blocks."""
    wait_workers()
    main = threading.main_thread()
    doc = base_truth()
    doc["threads"] = [
        {"tid": _tids[t.ident], "ident": t.ident, "name": t.name, "main": t is main,
         "busy": False, "frames": []}
        for t in (main, worker)]
    write_json(sys.argv[1], doc)


def main():
    depth = int(sys.argv[2]) if len(sys.argv) > 2 else DEPTH
    sys.setrecursionlimit(depth + 1000)
    threading.stack_size(1 << 30)
    worker = spawn("very_deep", dive, depth)
    if len(sys.argv) > 2:
        depth_truth(worker)
        time.sleep(1e6)
    checkpoint(); time.sleep(1e6)


if __name__ == "__main__":
    main()
