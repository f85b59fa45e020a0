# -*- coding: utf-8 -*-
"""Children that come and go: the main thread starts a forked child every
JOB_S seconds, each running job() (a busy loop) for JOB_S seconds and
exiting, so a sampler that follows descendants sees them start and exit
while it samples.  Records each child's pid and its start and exit times
(time.monotonic, the same clock in every process).

Ground truth (once the first child runs): base fields and "job"
(code_info of job).  On SIGUSR1 it writes GROUND_TRUTH.json.children:
{"children": [[pid, started, exited or null], ...]}.

usage: churn.py GROUND_TRUTH.json
"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import base_truth, code_info, fail, wait_workers, write_json  # noqa: E402

JOB_S = 0.4
CHILDREN = []


def job(until):
    x = 0
    while time.monotonic() < until:
        x += 1
    os._exit(0)


def write_children(*_):
    write_json(sys.argv[1] + ".children", {"children": [list(c) for c in CHILDREN]})


def main():
    signal.signal(signal.SIGUSR1, write_children)
    wait_workers()
    doc = base_truth()
    doc["job"] = code_info(job)
    written = False
    while True:
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            job(started + JOB_S)
        CHILDREN.append([pid, started, None])
        if not written:
            write_json(sys.argv[1], doc)
            written = True
        os.waitpid(pid, 0)
        CHILDREN[-1][2] = time.monotonic()


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        import traceback
        fail("churn raised:\n" + traceback.format_exc())
