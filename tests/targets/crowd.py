# -*- coding: utf-8 -*-
"""Forty blocked threads, each named, and one busy in pure Python: a dump
of many threads, whose thread states it lists through blocks of pages and
whose stacks and names it reads ahead in batches.  Every thread's frames,
name and run state are checked.

usage: crowd.py GROUND_TRUTH.json
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import BLOCK, checkpoint, ready, spawn, spawn_busy  # noqa: E402
from busy import busy_loop  # noqa: E402

BLOCKED = 40


def blocked(name):
    ready(name); BLOCK.acquire()


def main():
    spawn_busy("busy", busy_loop, ["spin_step"])
    for i in range(BLOCKED):
        name = "crowd-%02d" % i
        spawn(name, blocked, name)
    checkpoint(); time.sleep(1e6)


if __name__ == "__main__":
    main()
