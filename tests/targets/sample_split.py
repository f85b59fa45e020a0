# -*- coding: utf-8 -*-
"""For `pystack-dump sample` (wall mode): the main thread spends a known
share of wall time in each of two functions, in rounds of 30 ms in
spend_hot() then 10 ms in spend_cold() (time-sliced busy loops, so a 75/25
split), and measures what it really spent.

Ground truth (written once the loop runs): base fields, "hot" and "cold"
(code_info of the two functions), "slice_ms" {hot, cold}.  On SIGUSR1 it
writes GROUND_TRUTH.json.split: {"rounds": [[monotonic time, seconds in
spend_hot so far, seconds in spend_cold so far], ...]}, one entry per round
(time.monotonic is CLOCK_MONOTONIC, the same clock in every process), so
the harness can take the split over exactly the window it sampled.

Options: exit-after=SECS ends the loop after SECS seconds and exits 0
(writing the .split file first), counted from the first SIGUSR2 with
exit-on=usr2; hot-ms=MS and cold-ms=MS change the
slices (30 and 10), for profiles of two different splits.

usage: sample_split.py GROUND_TRUTH.json [exit-after=SECS [exit-on=usr2]]
                       [hot-ms=MS] [cold-ms=MS]
"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import (ExitClock, base_truth, code_info, fail, options, wait_workers,  # noqa: E402
                         write_json)

HOT_S = 0.030
COLD_S = 0.010
ROUNDS = []          # [monotonic, hot seconds, cold seconds] after each round


def spend_hot(until):
    x = 0
    while time.monotonic() < until:
        x += 1
    return x


def spend_cold(until):
    x = 0
    while time.monotonic() < until:
        x += 1
    return x


def write_split(*_):
    write_json(sys.argv[1] + ".split", {"rounds": list(ROUNDS)})


def main():
    opts = options()
    clock = ExitClock(opts)
    hot_s = float(opts.get("hot-ms", HOT_S * 1e3)) / 1e3
    cold_s = float(opts.get("cold-ms", COLD_S * 1e3)) / 1e3
    signal.signal(signal.SIGUSR1, write_split)
    wait_workers()
    doc = base_truth()
    doc.update({"hot": code_info(spend_hot), "cold": code_info(spend_cold),
                "slice_ms": {"hot": hot_s * 1e3, "cold": cold_s * 1e3}})
    hot = cold = 0.0
    written = False
    while not clock.due():
        t0 = time.monotonic()
        spend_hot(t0 + hot_s)
        t1 = time.monotonic()
        spend_cold(t1 + cold_s)
        t2 = time.monotonic()
        hot += t1 - t0
        cold += t2 - t1
        ROUNDS.append([t2, hot, cold])
        if not written:            # the loop runs: now the ground truth
            write_json(sys.argv[1], doc)
            written = True
    write_split()
    sys.exit(0)


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except BaseException:
        import traceback
        fail("sample_split raised:\n" + traceback.format_exc())
