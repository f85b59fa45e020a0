# -*- coding: utf-8 -*-
"""An InterpreterPoolExecutor (3.14+): its worker thread runs work() in
a sub-interpreter, and work() sums a generator that sleeps.  The worker's
OS thread holds two thread states: interpreter 0's, in the pool's
Interpreter._call over _interpreters' call into the other, and the
sub-interpreter's, in work() -> gen().  With --native-all, builtin_sum
(C, called by work, calling gen) belongs to the sub-interpreter's
listing, between work and gen, and not under interpreter 0's _call.

Ground truth (written by gen, in the sub-interpreter, on the line before
its sleep): base fields, "work" and "gen" {"function", "line"}, "tid" (the
worker's OS thread).

usage: subinterp_pool.py GROUND_TRUTH.json
"""
import json
import os
import sys
from concurrent.futures import InterpreterPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import base_truth, wait_workers  # noqa: E402


def gen(path, doc):
    import json, os, sys, threading, time
    d = json.loads(doc)
    d["gen"] = {"function": "gen", "line": sys._getframe().f_lineno + 7}
    d["work"] = {"function": "work", "line": sys._getframe(1).f_lineno}
    d["tid"] = threading.get_native_id()
    yield 1
    with open(path + ".tmp", "w") as f:
        f.write(json.dumps(d))
    os.rename(path + ".tmp", path)
    time.sleep(1e6)
    yield 2


def work(path, doc):
    return sum(gen(path, doc))


if __name__ == "__main__":
    wait_workers()
    with InterpreterPoolExecutor(max_workers=1) as ex:
        ex.submit(work, sys.argv[1], json.dumps(base_truth())).result()
