# -*- coding: utf-8 -*-
"""A family of processes: multiprocessing workers started with fork (2),
spawn and forkserver (1 each) blocked in worker(), on 3.7+ a forked one
running asyncio with family_task() awaiting a sleep, a forked process
owning a multiprocessing Pool(2) whose workers each block in pool_task()
(a Pool's threads in the target would spoil its ground truth), a gunicorn-style
pre-fork master (os.fork(), in arbiter()) with two os.fork() workers
blocked in accept_loop() on the master's listening socket, a Python child
started with subprocess with a multi-line -c, and a child that is not
Python (sh running a multi-line -c, which waits in its own child, sleep).
Writes {"workers": [pid...], "pool_workers": [pid, pid], "master": pid,
"prefork_workers": [pid, pid], "python_child": pid, "other_child": pid,
"python_child_cmdline": str, "other_child_cmdline": str (each argv
joined by blanks, as /proc gives it), "asyncio_child": pid or null} to
FAMILY_FILE once every worker is blocked.

usage: family.py GROUND_TRUTH.json FAMILY_FILE
"""
import asyncio
import json
import multiprocessing
import os
import select
import socket
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


def pool_task(ready_dir):
    with open(os.path.join(ready_dir, "pool-%d" % os.getpid()), "w"):
        pass
    time.sleep(1e6)


def pool_owner(ready_dir):
    pool = multiprocessing.Pool(2)
    for _ in range(2):
        pool.apply_async(pool_task, (ready_dir,))
    time.sleep(1e6)
    return pool


def accept_loop(sock, ready_dir):
    with open(os.path.join(ready_dir, "prefork-%d" % os.getpid()), "w"):
        pass
    while True:
        select.select([sock], [], [])


def arbiter(ready_dir):
    """The pre-fork master: listens, forks its workers, waits on them."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    for _ in range(2):
        if os.fork() == 0:
            accept_loop(sock, ready_dir)
    with open(os.path.join(ready_dir, "master-%d" % os.getpid()), "w"):
        pass
    while True:
        os.wait()


def prefork(ready_dir):
    """Fork the master before any thread starts (a fork copies only the
    forking thread)."""
    if os.fork() == 0:
        arbiter(ready_dir)


def pids(ready, prefix):
    return sorted(int(p[len(prefix):]) for p in ready if p.startswith(prefix))


def asyncio_worker(ready_dir):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(family_main(ready_dir))


def main():
    ready_dir = sys.argv[2] + ".ready"
    os.makedirs(ready_dir)
    prefork(ready_dir)
    procs = []
    targets = [worker] * 4 + ([asyncio_worker] if sys.version_info >= (3, 7) else [])
    for method, target in zip(("fork", "fork", "spawn", "forkserver", "fork"), targets):
        p = multiprocessing.get_context(method).Process(target=target, args=(ready_dir,))
        p.daemon = True
        p.start()
        procs.append(p)
    owner = multiprocessing.get_context("fork").Process(target=pool_owner, args=(ready_dir,))
    owner.start()
    py_argv = [sys.executable, "-c", "import time\nwhile True:\n\ttime.sleep(1e6)"]
    other_argv = ["sh", "-c", "sleep 1000000\nexit 0"]
    py = subprocess.Popen(py_argv)
    other = subprocess.Popen(other_argv)
    deadline = time.time() + 60
    # the targets, 2 pool tasks, the master and its 2 workers
    while len(os.listdir(ready_dir)) < len(targets) + 5 and time.time() < deadline:
        time.sleep(0.05)
    ready = os.listdir(ready_dir)
    workers = sorted(int(p) for p in ready if p.isdigit())
    tasks = pids(ready, "asyncio-")
    write_text(sys.argv[2], json.dumps({"workers": workers, "pool_workers": pids(ready, "pool-"),
                                        "master": (pids(ready, "master-") or [None])[0],
                                        "prefork_workers": pids(ready, "prefork-"),
                                        "python_child": py.pid, "other_child": other.pid,
                                        "python_child_cmdline": " ".join(py_argv),
                                        "other_child_cmdline": " ".join(other_argv),
                                        "asyncio_child": tasks[0] if tasks else None}))
    checkpoint(); time.sleep(1e6)
    return procs, owner


if __name__ == "__main__":
    main()
