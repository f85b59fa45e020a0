# -*- coding: utf-8 -*-
"""A thread appends one byte to a heartbeat file every 20 ms, so that the
harness can tell whether the process is running (used by the test that
SIGKILLs `pystack-dump --locked` while it has the process paused).

usage: heartbeat.py GROUND_TRUTH.json HEARTBEAT_FILE
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import checkpoint, ready, spawn_busy  # noqa: E402


def beat(path):
    with open(path, "a") as f:
        f.write(".")


def heartbeat_loop(path):
    ready("heartbeat")
    while True:
        beat(path)
        time.sleep(0.02)


def main():
    if len(sys.argv) < 3:
        sys.stderr.write("usage: heartbeat.py GROUND_TRUTH.json HEARTBEAT_FILE\n")
        sys.exit(2)
    spawn_busy("heartbeat", heartbeat_loop, ["beat"], sys.argv[2])
    checkpoint(); time.sleep(1e6)


if __name__ == "__main__":
    main()
