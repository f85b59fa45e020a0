# -*- coding: utf-8 -*-
"""Threads that come and go fast: ALIVE threads live at all times, each
for LIFE seconds (a short sleep in worker()), and the main thread starts
a new one as each ends, about ALIVE / LIFE = 1,000 a second.  A sampler
reading the thread list meets nodes freed and reused under it.

Ground truth (once ALIVE threads run): base fields, "worker"
(code_info of worker) and, on SIGUSR1, GROUND_TRUTH.json.started: the
number of threads started so far.

usage: thread_storm.py GROUND_TRUTH.json
"""
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import base_truth, code_info, fail, wait_workers, write_json  # noqa: E402

ALIVE = 500
LIFE = 0.5
STARTED = [0]


def worker(done):
    time.sleep(LIFE)
    done.release()


def write_started(*_):
    write_json(sys.argv[1] + ".started", {"started": STARTED[0]})


def start(done):
    threading.Thread(target=worker, args=(done,), daemon=True).start()
    STARTED[0] += 1


def main():
    signal.signal(signal.SIGUSR1, write_started)
    wait_workers()
    doc = base_truth()
    doc["worker"] = code_info(worker)
    done = threading.Semaphore(0)
    for _ in range(ALIVE):
        start(done)
    write_json(sys.argv[1], doc)
    while True:
        done.acquire()
        start(done)


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        import traceback
        fail("thread_storm raised:\n" + traceback.format_exc())
