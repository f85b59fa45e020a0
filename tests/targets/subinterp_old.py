# -*- coding: utf-8 -*-
"""A thread that entered a sub-interpreter before concurrent.interpreters
(3.8-3.12: _xxsubinterpreters.run_string; 3.13: _interpreters'): the main thread runs
<module> -> outer() -> run_string, and the script's napper, in
interpreter 1, sleeps.  One OS thread then holds two thread states: the
native frames of run_string (interp_run_string, _run_script) belong under
interpreter 0's outer, the sleep under interpreter 1's napper.

Ground truth (written by napper, in interpreter 1, on the line before its
sleep): base fields, "napper" {"function", "file", "line"}, "outer"
(code_info of outer).

usage: subinterp_old.py GROUND_TRUTH.json
"""
import json
import os
import sys

try:
    import _xxsubinterpreters as interpreters
except ImportError:             # 3.13
    import _interpreters as interpreters

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import base_truth, code_info, wait_workers  # noqa: E402

SCRIPT = """
import json, os, sys, time
def napper(path, doc):
    d = json.loads(doc)
    d["napper"] = {"function": "napper", "file": sys._getframe().f_code.co_filename,
                   "line": sys._getframe().f_lineno + 4}
    with open(path + ".tmp", "w") as f:
        f.write(json.dumps(d))
    os.rename(path + ".tmp", path)
    time.sleep(1e6)
napper(%r, %r)
"""


def outer():
    interp = interpreters.create()
    doc = base_truth()
    doc["outer"] = code_info(outer)
    interpreters.run_string(interp, SCRIPT % (sys.argv[1], json.dumps(doc)))


if __name__ == "__main__":
    wait_workers()
    outer()
