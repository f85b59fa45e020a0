# -*- coding: utf-8 -*-
"""A family of processes: multiprocessing workers started with fork (2),
spawn and forkserver (1 each) blocked in worker(), a Python child
started with subprocess, and a child that is not Python (sleep).  Writes
{"workers": [pid...], "python_child": pid, "other_child": pid} to
FAMILY_FILE once every worker is blocked.

usage: family.py GROUND_TRUTH.json FAMILY_FILE
"""
import json
import multiprocessing
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import checkpoint, write_text  # noqa: E402


def worker(ready_dir):
    with open(os.path.join(ready_dir, str(os.getpid())), "w"):
        pass
    time.sleep(1e6)


def main():
    ready_dir = sys.argv[2] + ".ready"
    os.makedirs(ready_dir)
    procs = []
    for method in ("fork", "fork", "spawn", "forkserver"):
        p = multiprocessing.get_context(method).Process(target=worker, args=(ready_dir,))
        p.daemon = True
        p.start()
        procs.append(p)
    py = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1e6)"])
    other = subprocess.Popen(["sleep", "1000000"])
    deadline = time.time() + 60
    while len(os.listdir(ready_dir)) < 4 and time.time() < deadline:
        time.sleep(0.05)
    workers = sorted(int(p) for p in os.listdir(ready_dir))
    write_text(sys.argv[2], json.dumps({"workers": workers, "python_child": py.pid,
                                        "other_child": other.pid}))
    checkpoint(); time.sleep(1e6)
    return procs


if __name__ == "__main__":
    main()
