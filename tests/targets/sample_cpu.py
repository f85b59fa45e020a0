# -*- coding: utf-8 -*-
"""For `pystack-dump sample --mode cpu`: a thread "burner" always on CPU
(pure Python, burn_cpu()), a thread "sleeper" asleep in time.sleep
(sleep_forever()), and the main thread asleep too.

Ground truth: base fields, "threads" {name: native tid} (burner, sleeper,
main), "busy" / "idle" (worker names), "functions" {name: code_info}.

usage: sample_cpu.py GROUND_TRUTH.json
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import (base_truth, code_info, ready, spawn, thread_table,  # noqa: E402
                         wait_workers, write_json)


def burn_cpu(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) % 1000003
    return x


def burn_forever():
    ready("burner")
    while True:
        burn_cpu(10000)


def sleep_forever():
    ready("sleeper"); time.sleep(1e6)


def main():
    spawn("burner", burn_forever)
    spawn("sleeper", sleep_forever)
    wait_workers()
    doc = base_truth()
    doc.update({"threads": thread_table(), "busy": ["burner"], "idle": ["sleeper", "main"],
                "functions": dict((f.__name__, code_info(f))
                                  for f in (burn_cpu, burn_forever, sleep_forever))})
    write_json(sys.argv[1], doc)
    time.sleep(1e6)


if __name__ == "__main__":
    main()
