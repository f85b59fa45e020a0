# -*- coding: utf-8 -*-
"""Shared machinery for the pystack-dump test targets.

Must run unchanged on CPython 3.6 through 3.15: no walrus, no match,
no ``from __future__ import annotations``.

A target:
  * starts worker threads with ``spawn(name, fn, *args)``; each worker calls
    ``ready(name)`` on the very line of its blocking call, e.g.
    ``ready("lock"); BLOCK.acquire()``;
  * starts a thread whose first Python frame is a generator's with
    ``spawn_first(name, gen)``;
  * starts threads whose stack keeps changing with
    ``spawn_busy(name, loop_fn, allowed, *args)``; ``loop_fn`` must call
    ``ready(name)`` once it is inside its loop;
  * finally calls ``checkpoint(); time.sleep(1e6)`` (or any blocking call) on
    one line, anywhere in the main thread.

``checkpoint()`` waits for every worker, records the ground truth twice about
100 ms apart (retrying until both agree for all non-busy threads), writes it
atomically as JSON to ``sys.argv[1]`` and returns so that the caller blocks
on the very same line.

Ground truth format (JSON)::

  {"target": str, "pid": int, "python_version": "3.12.1",
   "sys_version": str, "debug_build": bool, "main_tid": int,
   "threads": [{"tid": int, "ident": int, "name": str, "main": bool,
                "busy": bool,
                "frames": [frame...],          # innermost first
                "stable_outer": [frame...],    # busy only: innermost first
                "allowed_inner": [str...]}]}   # busy only: function names
  frame = {"function": co_name, "qualname": co_qualname or null,
           "file": co_filename, "line": int,
           # with RECORD_VARS (_pyd_vars.frame_vars), code-object order:
           "arguments": [[name, repr]...], "locals": [[name, repr]...]}
"""

import json
import os
import signal
import sys
import threading
import time
import traceback

BLOCK = threading.Lock()
BLOCK.acquire()          # held forever by the main thread: workers block on it

_registry_lock = threading.Lock()
_expected = {}           # name -> threading.Event
_tids = {}               # thread ident -> native tid
_busy = {}               # thread ident -> (code object, allowed names)
_HERE = os.path.basename(__file__)
RECORD_GAP_S = 0.05      # checkpoint(): the main thread's sleep before each recording
_errors = []


def native_tid():
    """Native (kernel) id of the calling thread."""
    get = getattr(threading, "get_native_id", None)
    if get is not None:
        return get()
    try:
        import ctypes
        import platform
        if platform.machine() in ("x86_64", "AMD64"):
            tid = ctypes.CDLL(None).syscall(186)   # SYS_gettid on x86-64
            if tid > 0:
                return tid
    except Exception:
        pass
    # "PID/task/TID"
    return int(os.readlink("/proc/thread-self").rsplit("/", 1)[1])


def _out_path():
    if len(sys.argv) < 2:
        sys.stderr.write("usage: %s GROUND_TRUTH.json [extra]\n" % sys.argv[0])
        sys.exit(2)
    return sys.argv[1]


def fail(msg):
    """Report a target-side failure to the harness and exit."""
    path = _out_path() + ".error"
    try:
        with open(path + ".tmp", "w") as f:
            f.write(msg)
        os.replace(path + ".tmp", path)
    except Exception:
        pass
    sys.stderr.write("target failure: %s\n" % msg)
    sys.stderr.flush()
    os._exit(1)


def _entry(name, fn, args):
    with _registry_lock:
        _tids[threading.current_thread().ident] = native_tid()
    try:
        fn(*args)
    except BaseException:
        fail("worker %r raised:\n%s" % (name, traceback.format_exc()))
    fail("worker %r returned (it must block forever)" % (name,))


def _add_expected(name):
    with _registry_lock:
        if name in _expected:
            raise ValueError("duplicate worker name %r" % (name,))
        _expected[name] = threading.Event()


def spawn(name, fn, *args):
    """Start a daemon thread that must end blocked on a ``ready(name)`` line."""
    _add_expected(name)
    t = threading.Thread(target=_entry, args=(name, fn, args), name=name)
    t.daemon = True
    t.start()
    return t


def spawn_first(name, gen):
    """Start a thread whose first Python frame is generator gen's: C code
    (next, given to _thread) runs it.  gen calls register_thread() first,
    then blocks on a ``ready(name)`` line."""
    import _thread
    _add_expected(name)
    _thread.start_new_thread(next, (gen,))


def register_thread():
    """Record the calling thread (one spawn_first started) as threading's
    dummy thread and its native tid."""
    threading.current_thread()
    with _registry_lock:
        _tids[threading.get_ident()] = native_tid()


def spawn_busy(name, loop_fn, allowed, *args):
    """Start a thread whose stack keeps changing.

    The frames outside ``loop_fn`` are stable and compared exactly; every
    frame from ``loop_fn`` inwards must have a co_name in ``allowed``.
    """
    _add_expected(name)
    allowed = sorted(set(allowed) | {loop_fn.__code__.co_name})

    def busy_entry():
        with _registry_lock:
            _busy[threading.current_thread().ident] = (loop_fn.__code__, allowed)
        loop_fn(*args)

    t = threading.Thread(target=_entry, args=(name, busy_entry, ()), name=name)
    t.daemon = True
    t.start()
    return t


def ready(name):
    """Called by a worker on the same line as (just before) its blocking call."""
    ev = _expected.get(name)
    if ev is None:
        fail("ready(%r) for an unknown worker" % (name,))
    ev.set()
    # returns None so that ``ready(x) or blocking_call()`` works in expressions


# Set by a target to record each frame's variables too (_pyd_vars).
RECORD_VARS = False


def _frame_dict(frame, lineno):
    code = frame.f_code
    d = {
        "function": code.co_name,
        "qualname": getattr(code, "co_qualname", None),
        "file": code.co_filename,
        "line": lineno,
    }
    if RECORD_VARS:
        import _pyd_vars
        d.update(_pyd_vars.frame_vars(frame))
    return d


def _stack(frame):
    """Innermost-first list of frame dicts, from ``frame`` outwards."""
    return [_frame_dict(f, lineno) for f, lineno in traceback.walk_stack(frame)]


def _record(caller):
    main_ident = threading.main_thread().ident
    names = dict((t.ident, t.name) for t in threading.enumerate())
    frames = sys._current_frames()
    threads = []
    for ident in sorted(frames):
        if ident == main_ident:
            frame = caller
            tid = _tids[main_ident]
        else:
            frame = frames[ident]
            with _registry_lock:
                tid = _tids.get(ident)
            if tid is None:
                return None, "thread ident %d has no native tid yet" % ident
        entry = {
            "tid": tid,
            "ident": ident,
            "name": names.get(ident),
            "main": ident == main_ident,
            "busy": False,
            "frames": _stack(frame),
        }
        busy = _busy.get(ident)
        if busy is None and ident != main_ident:
            if _in_ready(entry):
                return None, "worker %r still in ready()" % names.get(ident)
        if busy is not None:
            code, allowed = busy
            chain = [f for f, _ in traceback.walk_stack(frame)]
            idx = None
            for i, f in enumerate(chain):
                if f.f_code is code:
                    idx = i
                    break
            if idx is None:
                return None, "busy thread %r not inside its loop yet" % names.get(ident)
            entry["busy"] = True
            entry["stable_outer"] = entry["frames"][idx + 1:]
            entry["allowed_inner"] = list(allowed)
        threads.append(entry)
        del frame
    del frames
    return threads, None


def _comparable(threads):
    out = []
    for t in threads:
        out.append((t["tid"], t["busy"],
                    t["stable_outer"] if t["busy"] else t["frames"]))
    return out


def _in_ready(entry):
    """Is the worker still inside ready() (not yet at its blocking call)?"""
    frames = entry["frames"]
    return bool(frames) and frames[0]["function"] == "ready" and \
        os.path.basename(frames[0]["file"]) == _HERE


def checkpoint(timeout=60.0):
    """Wait for all workers, record ground truth, write it, return.

    The ground truth is two equal recordings with every worker past
    ready(), a moment apart (the main thread sleeps before each: a worker
    that wanted the GIL gets it and moves on to its blocking call).  No
    /proc state check: each read releases the GIL, and with a busy thread
    taking it each time, forty threads' reads took 0.6 s."""
    path = _out_path()
    wait_workers(timeout)
    caller = sys._getframe(1)

    threads = None
    why = "never recorded"
    for attempt in range(200):
        time.sleep(RECORD_GAP_S)
        first, why = _record(caller)
        if first is None:
            continue
        time.sleep(RECORD_GAP_S)
        second, why = _record(caller)
        if second is None:
            continue
        if _comparable(first) == _comparable(second):
            threads = second
            break
        why = "two recordings differ (a worker is not blocked yet?)"
    if threads is None:
        fail("could not record a stable ground truth: %s" % why)
    if len(threads) != len(_expected) + 1:
        fail("expected %d threads, sys._current_frames() has %d"
             % (len(_expected) + 1, len(threads)))

    doc = base_truth()
    doc["threads"] = threads
    write_json(path, doc)
    del caller


def wait_workers(timeout=60.0):
    """Record the main thread's native id and wait until every worker has
    called ready()."""
    with _registry_lock:
        _tids[threading.main_thread().ident] = native_tid()
    deadline = time.time() + timeout
    for name, ev in sorted(_expected.items()):
        if not ev.wait(max(0.0, deadline - time.time())):
            fail("worker %r never became ready" % (name,))


def version_string():
    """The version as PY_VERSION has it: "3.12.1", "3.15.0a0"."""
    vi = sys.version_info
    level = {"alpha": "a", "beta": "b", "candidate": "rc"}.get(vi.releaselevel)
    return "%d.%d.%d" % tuple(vi[:3]) + ("%s%d" % (level, vi.serial) if level else "")


def free_threaded():
    """A free-threading build (Py_GIL_DISABLED), whether or not a module
    turned the GIL back on."""
    import sysconfig
    return bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def base_truth():
    """The fields every ground truth starts with."""
    with _registry_lock:
        main_tid = _tids.get(threading.main_thread().ident)
    return {
        "target": os.path.splitext(os.path.basename(sys.argv[0]))[0],
        "pid": os.getpid(),
        "python_version": version_string(),
        "sys_version": sys.version,
        "debug_build": hasattr(sys, "gettotalrefcount"),
        "free_threaded": free_threaded(),
        "executable": sys.executable,
        "main_tid": main_tid if main_tid is not None else native_tid(),
    }


def write_text(path, text):
    """Write text to path atomically (tmp + rename)."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def write_json(path, doc):
    """Write doc as JSON to path atomically (tmp + rename: the harness
    reads it whole or not at all).  No fsync: a ground truth need not
    outlive a crash of the machine, only reach the harness.  One line, no
    indent: json.dumps encodes in C only then (150,000 frames: 8.5 s on a
    debug build indented, in Python)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(json.dumps(doc, ensure_ascii=True, sort_keys=True))
    os.replace(tmp, path)


def thread_table():
    """{worker name: native tid} of the spawned workers and "main"."""
    names = dict((t.ident, t.name) for t in threading.enumerate())
    main_ident = threading.main_thread().ident
    with _registry_lock:
        return dict(("main" if ident == main_ident else names.get(ident, "?"), tid)
                    for ident, tid in _tids.items())


def code_info(fn):
    """function / qualname / file / first line of a function's code."""
    code = fn.__code__
    return {"function": code.co_name, "qualname": getattr(code, "co_qualname", None),
            "file": code.co_filename, "firstline": code.co_firstlineno}


def options():
    """key=value words after the ground-truth path: {key: value}."""
    out = {}
    for a in sys.argv[2:]:
        k, _, v = a.partition("=")
        out[k] = v
    return out


class ExitClock(object):
    """exit-after=SECS: due SECS after it was made; with exit-on=usr2 as
    well, SECS after the first SIGUSR2.  A test arms it once its sampler
    runs, so that a slow start on a loaded machine cannot use up the time
    the target was to be sampled in."""

    def __init__(self, opts):
        self.after = float(opts["exit-after"]) if "exit-after" in opts else None
        self.start = time.monotonic()
        if self.after is not None and opts.get("exit-on") == "usr2":
            self.start = None
            signal.signal(signal.SIGUSR2, self._arm)

    def _arm(self, *_):
        if self.start is None:
            self.start = time.monotonic()

    def due(self):
        return (self.after is not None and self.start is not None
                and time.monotonic() - self.start >= self.after)
