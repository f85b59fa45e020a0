# -*- coding: utf-8 -*-
"""gevent greenlets blocked in a sleep, an Event (waited on with and
without a keyword argument), a socket read, a Queue and a Lock; plain
greenlets switched out several levels deep, one the child of another,
one switching with a keyword argument; an unstarted one and a dead one.  The main greenlet
blocks the thread (time.sleep: nothing is monkey-patched).  A second
thread has greenlets of its own: one switched out, one unstarted.
Without gevent (3.15: Debian builds greenlet for it, not gevent) only the
plain greenlets; "gevent" in the ground truth says which.

Ground truth: base_truth() and "greenlets": for every greenlet
gc.get_objects() holds, {"id", "thread", "state", "main", "parent",
"spawned", "frames"}, its frames walked by this process through gr_frame
and f_back (innermost first), each with its "arguments" and "locals" as
--locals renders them (_pyd_vars), its thread the native id of the
thread whose main greenlet ends its parent chain, and "waiting": the
call its innermost frame switched away in, {"function": its
__qualname__, "args": the receiver and arguments as --locals renders
them}, from what this program knows of its own code and the frame's
f_locals (null where no call is expected).

With PYD_GREENLET_PATH set, greenlet is imported from there first (a
build with debug information); with PYD_GREENLET_VERSION set,
greenlet.__version__ is made to say it: a release pystack-dump has no
layout row for.

usage: greenlets.py GROUND_TRUTH.json
"""
import gc
import os
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import _stack, base_truth, fail, write_json  # noqa: E402
from _pyd_vars import brepr, frame_vars  # noqa: E402

if os.environ.get("PYD_GREENLET_PATH"):
    sys.path.insert(0, os.environ["PYD_GREENLET_PATH"])
try:
    import greenlet
except ImportError as e:
    fail("greenlet not installed: %s" % e)
try:
    import gevent
    import gevent.event
    import gevent.lock
    import gevent.queue
    import gevent.socket
except ImportError:
    gevent = None

if os.environ.get("PYD_GREENLET_VERSION"):
    greenlet.__version__ = os.environ["PYD_GREENLET_VERSION"]
MAIN = greenlet.getcurrent()
MAINS = {}             # id of each thread's main greenlet: its native id


def in_sleep():
    gevent.sleep(1e6)


def in_event(ev):
    ev.wait()


def in_event_kw(ev):
    ev.wait(timeout=300)


def in_socket(sock):
    sock.recv(1)


def in_queue(q):
    q.get()


def in_lock(lock):
    lock.acquire()


def level3():
    MAIN.switch()


def level2():
    level3()


def level1():
    level2()


def child_inner():
    MAIN.switch()


def switch_kw():
    MAIN.switch(1, why="kw")


def child():
    child_inner()


def never_run():
    pass


def worker_inner(main):
    main.switch()


def worker(ready, keep):
    main = greenlet.getcurrent()
    MAINS[id(main)] = threading.get_native_id()
    RUNNING.add(id(main))  # it sleeps below, running
    switched = greenlet.greenlet(worker_inner)
    switched.switch(main)
    keep += [main, switched, greenlet.greenlet(never_run)]
    ready.set()
    time.sleep(1e6)


def finished():
    return 1


RUNNING = set()        # ids of the greenlet each thread runs


def state(g):
    if id(g) in RUNNING or g is greenlet.getcurrent():
        return "running"
    if g.dead:
        return "dead"
    return "suspended" if g else "unstarted"


def spawned(g):
    """What it runs: an unstarted greenlet's run, a gevent Greenlet's
    function (its __dict__'s _run, until it ends); plain functions only."""
    run = getattr(g, "run", None) if state(g) == "unstarted" else None
    if run is None and g.parent is not None:
        run = getattr(g, "__dict__", {}).get("_run")
    return run.__name__ if hasattr(run, "__code__") else None


def call(fn, *args, **kwargs):
    """The call as pystack-dump shows it: positional arguments, then
    keyword ones as name=value, in the call's order."""
    return {"function": fn.__qualname__,
            "args": [brepr(a) for a in args] +
                    ["%s=%s" % (k, brepr(v)) for k, v in kwargs.items()]}


def waiting(g):
    """The call g's innermost frame waits in, as this program wrote it."""
    if state(g) != "suspended" or g.gr_frame is None:
        return None
    f = g.gr_frame
    loc, name = f.f_locals, f.f_code.co_name
    if name in ("level3", "child_inner"):
        return call(greenlet.greenlet.switch, MAIN)
    if name == "worker_inner":
        return call(greenlet.greenlet.switch, loc["main"])
    if name == "switch_kw":
        return call(greenlet.greenlet.switch, MAIN, 1, why="kw")
    if not gevent:
        return None
    hub = gevent.get_hub()
    if name == "sleep":                       # gevent.sleep: hub.wait(t)
        return call(type(loc["hub"]).wait, loc["hub"], loc["t"])
    if name == "recv":                        # self._wait(self._read_event)
        sock = loc["self"]
        return call(type(sock)._wait, sock, sock._read_event)
    if name == "run" and g is hub:            # Hub.run: loop.run()
        return call(type(loc["loop"]).run, loc["loop"])
    if name == "in_event_kw":
        return call(type(loc["ev"]).wait, loc["ev"], timeout=300)
    waits = {"in_event": ("ev", "wait"), "in_queue": ("q", "get"),
             "in_lock": ("lock", "acquire")}
    if name in waits:
        var, meth = waits[name]
        return call(getattr(type(loc[var]), meth), loc[var])
    return None


def thread_of(g):
    while g.parent is not None:
        g = g.parent
    return MAINS.get(id(g))


def truth():
    out = []
    for g in gc.get_objects():
        if not isinstance(g, greenlet.greenlet):
            continue
        # a running greenlet's stack is its thread's
        frames = []
        if g.gr_frame is not None and state(g) != "running":
            walked = [f for f, _ in traceback.walk_stack(g.gr_frame)]
            frames = [dict(d, **frame_vars(f))
                      for d, f in zip(_stack(g.gr_frame), walked)]
        out.append({"id": id(g), "thread": thread_of(g), "state": state(g),
                    "main": g.parent is None,
                    "parent": id(g.parent) if g.parent is not None else None,
                    "spawned": spawned(g), "frames": frames,
                    "waiting": waiting(g)})
    return out


def main():
    MAINS[id(MAIN)] = threading.get_native_id()
    ready, theirs = threading.Event(), []
    threading.Thread(target=worker, args=(ready, theirs), name="worker",
                     daemon=True).start()
    if not ready.wait(60):
        fail("the worker thread never set up its greenlets")
    keep = []
    if gevent:
        a, b = gevent.socket.socketpair()
        lock = gevent.lock.Semaphore(1)
        lock.acquire()
        keep = [gevent.spawn(in_sleep), gevent.spawn(in_event, gevent.event.Event()),
                gevent.spawn(in_event_kw, gevent.event.Event()),
                gevent.spawn(in_socket, a), gevent.spawn(in_queue, gevent.queue.Queue()),
                gevent.spawn(in_lock, lock), b]
    outer = greenlet.greenlet(level1)
    outer.switch()
    inner = greenlet.greenlet(child, parent=outer)
    inner.switch()
    with_kw = greenlet.greenlet(switch_kw)
    with_kw.switch()
    unstarted = greenlet.greenlet(never_run)
    dead = greenlet.greenlet(finished)
    dead.switch()
    if gevent:
        gevent.sleep(0.2)   # every gevent greenlet runs to where it blocks
    doc = base_truth()
    doc["greenlet_version"] = greenlet.__version__
    doc["gevent"] = gevent is not None
    doc["greenlets"] = truth()
    write_json(sys.argv[1], doc)
    time.sleep(1e6)
    return keep, outer, inner, with_kw, unstarted, dead, theirs


main()
