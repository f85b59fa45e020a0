# -*- coding: utf-8 -*-
"""A family of processes: multiprocessing workers started with fork (2),
spawn and forkserver (1 each) blocked in worker(), on 3.7+ a forked one
running asyncio with family_task() awaiting a sleep, a Python child
started with subprocess, and a child that is not Python (sleep).  Writes
{"workers": [pid...], "python_child": pid, "other_child": pid,
"asyncio_child": pid or null} to FAMILY_FILE once every worker is
blocked.

usage: family.py GROUND_TRUTH.json FAMILY_FILE
"""
import asyncio
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


async def family_task(ready_dir):
    with open(os.path.join(ready_dir, "asyncio-%d" % os.getpid()), "w"):
        pass
    await asyncio.sleep(1e6)


async def family_main(ready_dir):
    await asyncio.gather(asyncio.ensure_future(family_task(ready_dir)))


def asyncio_worker(ready_dir):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(family_main(ready_dir))


def main():
    ready_dir = sys.argv[2] + ".ready"
    os.makedirs(ready_dir)
    procs = []
    targets = [worker] * 4 + ([asyncio_worker] if sys.version_info >= (3, 7) else [])
    for method, target in zip(("fork", "fork", "spawn", "forkserver", "fork"), targets):
        p = multiprocessing.get_context(method).Process(target=target, args=(ready_dir,))
        p.daemon = True
        p.start()
        procs.append(p)
    py = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1e6)"])
    other = subprocess.Popen(["sleep", "1000000"])
    deadline = time.time() + 60
    while len(os.listdir(ready_dir)) < len(targets) and time.time() < deadline:
        time.sleep(0.05)
    ready = os.listdir(ready_dir)
    workers = sorted(int(p) for p in ready if p.isdigit())
    tasks = [int(p.split("-")[1]) for p in ready if p.startswith("asyncio-")]
    write_text(sys.argv[2], json.dumps({"workers": workers, "python_child": py.pid,
                                        "other_child": other.pid,
                                        "asyncio_child": tasks[0] if tasks else None}))
    checkpoint(); time.sleep(1e6)
    return procs


if __name__ == "__main__":
    main()
