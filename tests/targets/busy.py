# -*- coding: utf-8 -*-
"""A thread busy in pure Python (its stack keeps changing) next to blocked
threads.  Only the busy thread's frames outside busy_loop() are stable; the
frames from busy_loop() inwards must be busy_loop/spin_step.

usage: busy.py GROUND_TRUTH.json
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import BLOCK, checkpoint, ready, spawn, spawn_busy  # noqa: E402


def spin_step(x):
    for i in range(20000):
        x = (x * 31 + i) % 1000003
    return x


def busy_loop():
    x = 1
    ready("busy")
    while True:
        x = spin_step(x)


def blocked():
    ready("blocked"); BLOCK.acquire()


def main():
    spawn_busy("busy", busy_loop, ["spin_step"])
    spawn("blocked", blocked)
    checkpoint(); time.sleep(1e6)


if __name__ == "__main__":
    main()
