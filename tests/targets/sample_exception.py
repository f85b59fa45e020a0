# -*- coding: utf-8 -*-
"""For `pystack-dump sample -m exception` and the table's idle threads:
the main thread spends half its time in in_handler(), a busy loop run
from an except block with the exception active, and half in outside(),
the same loop with no exception; a thread "idler" waits on an event
forever (idle_forever()), never on a CPU.

Ground truth (written once the loop runs): base fields, "handler" and
"outside" (code_info of the two functions), "idle" (code_info of
idle_forever), "slice_ms" (each function's share of a round, the same).

usage: sample_exception.py GROUND_TRUTH.json
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import (base_truth, code_info, fail, ready, spawn,  # noqa: E402
                         wait_workers, write_json)

SLICE_S = 0.010
EVENT = threading.Event()


def in_handler(until):
    x = 0
    while time.monotonic() < until:
        x += 1
    return x


def outside(until):
    x = 0
    while time.monotonic() < until:
        x += 1
    return x


def idle_forever():
    ready("idler"); EVENT.wait()


def main():
    spawn("idler", idle_forever)
    wait_workers()
    doc = base_truth()
    doc.update({"handler": code_info(in_handler), "outside": code_info(outside),
                "idle": code_info(idle_forever), "slice_ms": SLICE_S * 1e3})
    written = False
    while True:
        try:
            raise ValueError("handled below")
        except ValueError:
            in_handler(time.monotonic() + SLICE_S)
        outside(time.monotonic() + SLICE_S)
        if not written:            # the loop runs: now the ground truth
            write_json(sys.argv[1], doc)
            written = True


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        import traceback
        fail("sample_exception raised:\n" + traceback.format_exc())
