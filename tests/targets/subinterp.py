# -*- coding: utf-8 -*-
"""A thread that entered a sub-interpreter (3.14+, concurrent.interpreters):
the main thread runs <module> -> outer() -> Interpreter.call(napper),
and napper, in interpreter 1, sleeps.  One OS thread then holds two
thread states, one per interpreter: the native frames of _interpreters'
call (interp_call, _run_in_interpreter) belong under interpreter 0's
Interpreter._call, the sleep under interpreter 1's napper.

Ground truth (written by napper, in interpreter 1, on the line of its
sleep): base fields, "napper" {"function", "file", "line"}, "outer"
(code_info of outer).

usage: subinterp.py GROUND_TRUTH.json
"""
import json
import os
import sys
from concurrent import interpreters

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import base_truth, code_info, wait_workers  # noqa: E402


def napper(path, doc):
    import json, os, sys, time
    d = json.loads(doc)
    d["napper"] = {"function": "napper", "file": sys._getframe().f_code.co_filename,
                   "line": sys._getframe().f_lineno + 4}
    with open(path + ".tmp", "w") as f:
        f.write(json.dumps(d))
    os.rename(path + ".tmp", path)
    time.sleep(1e6)


def outer():
    interp = interpreters.create()
    doc = base_truth()
    doc["outer"] = code_info(outer)
    interp.call(napper, sys.argv[1], json.dumps(doc))


if __name__ == "__main__":
    wait_workers()
    outer()
