# -*- coding: utf-8 -*-
"""For `pystack-dump sample`: code objects freed while it samples, and
their addresses taken by others.  Round after round the main thread
compiles a module defining work_K (K = round % 4, file gen_K.py), runs
it (a busy loop of 20 ms in work_K), then drops it and collects, so the
next round's code objects can land where these were.  Each function
gets a quarter of the time in work_* functions.

Ground truth (written after 8 rounds): base fields, "rounds" and
"distinct_ids": how many rounds ran and how many different addresses
their work_K code objects had (fewer than rounds: addresses were reused).

usage: code_reuse.py GROUND_TRUTH.json
"""
import gc
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import base_truth, wait_workers, write_json  # noqa: E402

SLICE_S = 0.020
FUNCTIONS = 4
SOURCE = ("def work_%d(until):\n"
          "    x = 0\n"
          "    while time.monotonic() < until:\n"
          "        x += 1\n"
          "work_%d(time.monotonic() + %r)\n")


def one_round(k):
    scope = {"time": time}
    code = compile(SOURCE % (k, k, SLICE_S), "gen_%d.py" % k, "exec")
    exec(code, scope)
    addr = id(scope["work_%d" % k].__code__)
    del code, scope
    gc.collect()           # the function's globals refer back to it
    return addr


def main():
    wait_workers()
    ids = []
    rounds = 0
    while True:
        addr = one_round(rounds % FUNCTIONS)
        rounds += 1
        if rounds <= 8:
            ids.append(addr)
        if rounds == 8:
            doc = base_truth()
            doc.update({"rounds": rounds, "distinct_ids": len(set(ids))})
            write_json(sys.argv[1], doc)


if __name__ == "__main__":
    main()
