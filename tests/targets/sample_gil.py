# -*- coding: utf-8 -*-
"""For `pystack-dump sample --mode gil`: a thread "holder" that holds the
GIL for ~0.3 s at a time (sum() over a range: a C loop that never lets the
GIL go), two pure-Python busy threads "contender_a" / "contender_b" that
want it (they get it only in the short gaps between the holder's sums),
a thread "sleeper" asleep in time.sleep (no GIL), and the main thread
asleep too.  The holder and the contenders start their loops once the
ground truth is written.

Ground truth: base fields, "threads" {name: native tid}, "holder",
"contenders", "idle" (names), "functions" {name: code_info}, "hold_n"
(the range summed), "hold_s" (seconds one sum should take, calibrated).
The contenders measure when they run: an iteration of their loop (well
under a millisecond) that took less than GAP_S ran without waiting for the
GIL; runs of such iterations are spans of GIL-held time.  On SIGUSR1 the
target writes GROUND_TRUTH.json.gil: {"spans": {contender: [[start, end],
...]}} in time.time() seconds, so the harness can take each contender's
share of exactly the window it sampled.

With switch=SECS, sys.setswitchinterval(SECS) first: a contender then
waits for the GIL asleep that long before it asks the holder to drop it,
rather than waking every 5 ms (on a loaded machine, to wait for a CPU
instead: runnable, not asleep on the GIL), which tests/test_gil_states.py
needs; the sampler's checks keep the default.

usage: sample_gil.py GROUND_TRUTH.json [switch=SECS]
"""
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import (base_truth, code_info, options, ready, spawn,  # noqa: E402
                         thread_table, wait_workers, write_json)

HOLD_S = 0.3
GAP_S = 0.002
SPANS = {"contender_a": [], "contender_b": []}   # closed runs [start, end]
OPEN = {}                                        # name -> the run going on
# Set once the ground truth is written: a main thread that wrote it while
# the holder held the GIL 0.3 s at a time waited seconds for each step.
GO = threading.Event()


def hold_gil(n):
    return sum(range(n))


def calibrate():
    n = 100000
    while True:
        t0 = time.monotonic()
        hold_gil(n)
        dt = time.monotonic() - t0
        if dt > 0.02:
            return max(1, int(n * HOLD_S / dt))
        n *= 4


def holder_loop(n):
    ready("holder")
    GO.wait()
    while True:
        hold_gil(n)


def contend(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) % 1000003
    return x


def contender_loop(name):
    ready(name)
    GO.wait()
    spans = SPANS[name]
    start = last = time.time()
    while True:
        contend(1000)
        t = time.time()
        if t - last > GAP_S:            # waited for the GIL in there
            if last > start:
                spans.append([start, last])
            start = t
        last = t
        OPEN[name] = [start, last]


def write_spans(*_):
    spans = dict((n, v + ([OPEN[n]] if n in OPEN else [])) for n, v in SPANS.items())
    write_json(sys.argv[1] + ".gil", {"spans": spans})


def sleep_forever():
    ready("sleeper"); time.sleep(1e6)


def main():
    if "switch" in options():
        sys.setswitchinterval(float(options()["switch"]))
    signal.signal(signal.SIGUSR1, write_spans)
    n = calibrate()
    spawn("sleeper", sleep_forever)
    spawn("contender_a", contender_loop, "contender_a")
    spawn("contender_b", contender_loop, "contender_b")
    spawn("holder", holder_loop, n)
    wait_workers()
    doc = base_truth()
    doc.update({"threads": thread_table(), "holder": "holder",
                "contenders": ["contender_a", "contender_b"], "idle": ["sleeper", "main"],
                "hold_n": n, "hold_s": HOLD_S,
                "functions": dict((f.__name__, code_info(f))
                                  for f in (hold_gil, holder_loop, contend, contender_loop,
                                            sleep_forever))})
    write_json(sys.argv[1], doc)
    GO.set()
    time.sleep(1e6)


if __name__ == "__main__":
    main()
