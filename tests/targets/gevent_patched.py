# -*- coding: utf-8 -*-
"""A program under gevent.monkey.patch_all(): threading's Thread objects
are greenlets and threading._active is keyed by greenlet ids, not by the
OS threads' idents.  A threading.Thread "worker" (a greenlet of the main
OS thread) and a gevent thread-pool worker (an OS thread of its own)
block forever; the main greenlet sleeps in the patched time.sleep, so
the main OS thread runs the hub, blocked in epoll_wait: nothing runs on
a CPU.

Ground truth: base_truth(), "threads": for each OS thread, {"tid": its
native id, "name": threading.current_thread().name as that thread sees
it}, and "enumerate": [[name, native_id]...] of threading.enumerate().

usage: gevent_patched.py GROUND_TRUTH.json
"""
from gevent import monkey

monkey.patch_all()

import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import gevent  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import base_truth, fail, write_json  # noqa: E402

# Blocks an OS thread without the hub: a lock gevent did not patch.
real_lock = monkey.get_original("_thread", "allocate_lock")


def seen_by_threading():
    return {"tid": threading.get_native_id(), "name": threading.current_thread().name}


def pooled(seen, forever):
    seen.append(seen_by_threading())
    forever.acquire()


def worker():
    gevent.sleep(1e6)


def main():
    threading.Thread(target=worker, name="worker", daemon=True).start()
    seen, forever = [seen_by_threading()], real_lock()
    forever.acquire()
    gevent.get_hub().threadpool.spawn(pooled, seen, forever)
    deadline = time.time() + 60
    while len(seen) < 2:
        if time.time() > deadline:
            fail("the thread-pool worker never ran")
        gevent.sleep(0.01)
    gevent.sleep(0.2)     # the worker greenlet runs to its sleep
    doc = base_truth()
    doc["threads"] = seen
    doc["enumerate"] = [[t.name, t.native_id] for t in threading.enumerate()]
    write_json(sys.argv[1], doc)
    time.sleep(1e6)


main()
