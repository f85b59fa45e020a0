# -*- coding: utf-8 -*-
"""An asyncio task graph with every kind of await edge, for --tasks.

usage: asyncio_graph.py GROUND_TRUTH.json [cycle] [many=N] [pytasks] [eager]

Standalone (does not use _pyd_common.py); runs on CPython 3.7+, degrading
by version: TaskGroup and asyncio.timeout only where they exist (3.11+);
3.7 tasks have no names (``name=`` is dropped), so their ground-truth name
is ``<task 0xADDR>``, what pystack-dump prints for a nameless task.  Builds, on the main thread's
event loop:

  * ``gather_parent`` gathering two tasks and a nested ``gather`` of two
    more (``gather-leaf-*``), one of which itself gathers two tasks;
  * a ``TaskGroup`` whose parent waits in ``__aexit__`` for three children;
  * a ``create_task`` chain: chain-0 awaits chain-1 awaits chain-2;
  * ``wait_for`` on a task (an edge) and on a coroutine (inline frames),
    and ``asyncio.timeout`` around an await (inline);
  * ``shield``: a task awaits a shielded task;
  * a generator-based coroutine (``types.coroutine``, ``yield from``) in
    a task's chain;
  * ``as_completed`` over two tasks (edges from 3.14, where CPython records
    them; before, the awaited object is a queue's future: no edge);
  * an async generator iterated by ``async for`` whose body is suspended in
    an await (the asend awaitable leads to the generator's frame);
  * a Task subclass (``SubTask``), named tasks (one non-ASCII), and unnamed
    ones (``Task-N``, a name CPython keeps as an int until asked);
  * a task awaited by three tasks (CPython then keeps its awaiters in a
    set, not a single pointer);
  * with ``cycle``: two tasks that await each other;
  * with ``many=N``: N more tasks, each awaiting an Event (performance);
  * with ``pytasks``: every loop makes pure-Python tasks
    (``asyncio.tasks._PyTask``) instead of C ones, except ``SubTask`` and
    the main task of ``asyncio.run``.  3.14+ keeps those out of the
    per-thread task lists, in the module's sets as before;
  * with ``eager`` (3.12+, ignored before): the main loop's tasks are
    eager (``asyncio.eager_task_factory``): each runs its first step
    inside ``create_task``.

Besides the main loop:

  * thread ``loop-thread`` runs its own loop, whose task ``sync-blocker`` is
    *running*: it called ``time.sleep`` (``ready.set(); time.sleep(1e6)`` on
    one line), while its sibling ``thread-waiter`` waits on an Event;
  * thread ``short-lived`` ran a loop just long enough to start task
    ``orphan`` and exited: CPython moves such tasks to the interpreter's
    list, so they have no thread (``"thread": null``).

Ground truth is recorded from a plain loop callback (no task runs then, so
every main-loop task is suspended on the line it stays on), twice 200 ms
apart until both agree, and written atomically as JSON to argv[1]; then
the main loop idles forever.  Format::

  {"target": "asyncio_graph", "pid", "python_version", "sys_version",
   "debug_build", "executable", "main_tid", "options": [str...],
   "edges_checked": bool,
   "cycles": [[id...]],     # each await cycle's task ids, sorted
   "tasks": [{"id": id(task), "name": task.get_name(), "state": "pending",
              "thread": native tid | null, "running": bool,
              "type": type(task).__name__,
              "coroutine_stack": [frame...],   # innermost first
              "awaits": [id...], "awaited_by": [id...]}]}
  frame = {"function": co_name, "qualname": co_qualname or null,
           "file": co_filename, "line": f_lineno}

How the ground truth is derived, without the 3.14 introspection API (so
the same target serves the 3.7-3.13 decoder later):

  * tasks: ``asyncio.all_tasks(loop)`` for each of the three loops (on
    3.14+ with the pure-Python ``asyncio.tasks._py_all_tasks(loop)``:
    the C one misses pure-Python tasks);
    ``thread`` is the native id of the thread running the task's loop
    (null for the exited thread).
  * coroutine stack of a suspended task: from ``task.get_coro()`` follow
    ``cr_await`` / ``gi_yieldfrom`` / ``ag_await`` through coroutines,
    generators and async generators (an ``async_generator_asend``/
    ``athrow`` awaitable leads to its generator, found with
    ``gc.get_referents``), taking each frame's ``f_lineno``; it stops at
    the first awaited object that has no frame (a Future).  Of a running
    task: its thread's frames (``sys._current_frames()``) from the top down
    to the coroutine's ``cr_frame``.  (``task.get_stack()`` gives only the
    outermost coroutine frame of a suspended task, so it is not used.)
  * awaits: a task waits on ``task._fut_waiter`` (the future its
    coroutine chain yielded).  If that is a Task, it awaits that task; a
    ``gather()`` future: every Task among its ``_children``, recursively
    through nested gathers; a ``shield()`` outer future: the task whose
    done-callback ``_inner_done_callback`` holds that future in its
    closure; a TaskGroup's completion future (the chain has a frame whose
    ``self`` is a TaskGroup): every task in ``self._tasks``.  ``awaited_by``
    is the same edges turned around.
  * On 3.14+ the result is checked against CPython's own bookkeeping
    (``Future._asyncio_awaited_by``), which has only edges between two C
    tasks; a mismatch fails the target
    (``edges_checked`` says whether the check ran).

A failure writes argv[1] + ".error" and exits 1.
"""
import asyncio
import gc
import os
import sys
import threading
import time
import traceback
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import (_out_path, fail, free_threaded, native_tid, version_string,  # noqa: E402
                         write_json)

OPTIONS = sys.argv[2:]
CYCLE = "cycle" in OPTIONS
PYTASKS = "pytasks" in OPTIONS
EAGER = "eager" in OPTIONS and hasattr(asyncio, "eager_task_factory")
MANY = 0
for _opt in OPTIONS:
    if _opt.startswith("many="):
        MANY = int(_opt[5:])

FOREVER = None           # an Event nobody sets (created on the main loop)
HAS_NAMES = sys.version_info >= (3, 8)
SYNC_BLOCKER = []        # the task that is running in loop-thread
_tids = {}               # loop -> native tid of the thread running it
_keep = []               # objects kept alive for the whole run
_errors = []


# --- the graph ---------------------------------------------------------------

def create_task(loop, coro, name=None):
    """loop.create_task(coro, name=name), without the name before 3.8."""
    if name is None or not HAS_NAMES:
        return loop.create_task(coro)
    return loop.create_task(coro, name=name)


def use_pytasks(loop):
    if PYTASKS:
        loop.set_task_factory(
            lambda loop, coro, **kw: asyncio.tasks._PyTask(coro, loop=loop,
                                                           **kw))


def is_pytask(t):
    return isinstance(t, asyncio.tasks._PyTask) and \
        not isinstance(t, asyncio.Task)


def all_tasks(loop):
    """asyncio.all_tasks(loop); from 3.14 the C version lists C tasks only
    (pure-Python ones stay in the module's _scheduled_tasks / _eager_tasks,
    which only the Python version reads), so add those."""
    tasks = set(asyncio.all_tasks(loop))
    py_all = getattr(asyncio.tasks, "_py_all_tasks", None)
    if py_all is not None and py_all is not asyncio.all_tasks:
        tasks |= set(py_all(loop))
    return tasks


def task_name(t):
    if HAS_NAMES:
        return t.get_name()
    return "<task 0x%x>" % id(t)


# Task types: the C one (and its subclasses) and the pure-Python one.
TASK_TYPES = (asyncio.Task, asyncio.tasks._PyTask)


def get_coro(t):
    return t.get_coro() if hasattr(t, "get_coro") else t._coro


async def leaf(ev):
    await ev.wait()


async def gather_inner(ev):
    loop = asyncio.get_running_loop()
    a = create_task(loop, leaf(ev), "gather-leaf-3")
    b = create_task(loop, leaf(ev), "gather-leaf-4")
    await asyncio.gather(a, b)


async def gather_parent(ev):
    loop = asyncio.get_running_loop()
    t1 = create_task(loop, leaf(ev), "gather-leaf-1")
    t2 = loop.create_task(leaf(ev))                       # unnamed
    t3 = create_task(loop, gather_inner(ev), "gather-inner")
    t4 = create_task(loop, leaf(ev), "gather-leaf-2")
    await asyncio.gather(t1, t2, asyncio.gather(t3, t4))


async def tg_child(ev, n):
    await asyncio.sleep(0)
    await ev.wait()


async def taskgroup_parent(ev):
    async with asyncio.TaskGroup() as tg:
        for n in range(3):
            tg.create_task(tg_child(ev, n), name="tg-child-%d" % n)


async def chain_link(ev, depth):
    if depth == 2:
        await ev.wait()
        return
    nxt = create_task(asyncio.get_running_loop(),
                      chain_link(ev, depth + 1), "chain-%d" % (depth + 1))
    await nxt


async def waitfor_task_parent(ev):
    t = create_task(asyncio.get_running_loop(), leaf(ev), "waitfor-target")
    await asyncio.wait_for(t, timeout=1e6)


async def waitfor_coro_parent(ev):
    await asyncio.wait_for(leaf(ev), timeout=1e6)


async def timeout_parent(ev):
    async with asyncio.timeout(1e6):
        await leaf(ev)


async def shielded(ev):
    await ev.wait()


async def shield_parent(ev):
    inner = create_task(asyncio.get_running_loop(), shielded(ev),
                        "shielded")
    await asyncio.shield(inner)


async def as_completed_parent(ev, loop):
    """Waits on two tasks through as_completed.  From 3.14 CPython records
    the caller as awaiting every pending input; before, it records nothing
    and the awaited object is a queue's future: no edge."""
    pending = [create_task(loop, leaf(ev), "as-completed-%d" % i) for i in (1, 2)]
    for fut in asyncio.as_completed(pending):
        await fut


async def agen(ev):
    yield 1
    await ev.wait()
    yield 2


async def agen_consumer(ev):
    async for _ in agen(ev):
        pass


class SubTask(asyncio.Task):
    """A Task subclass: still a C task underneath."""


async def sub_body(ev):
    await leaf(ev)


@types.coroutine
def legacy_wait(ev):
    """A generator-based coroutine: the chain runs through a generator's
    yield from, not an await."""
    yield from leaf(ev)


async def legacy_parent(ev):
    await legacy_wait(ev)


async def shared_waiter(tasks):
    await tasks["shared"]


async def cycle_a(tasks):
    await asyncio.sleep(0)
    await tasks["b"]


async def cycle_b(tasks):
    await asyncio.sleep(0)
    await tasks["a"]


def build(loop, ev):
    made = []

    def task(coro, name=None):
        t = create_task(loop, coro, name)
        made.append(t)
        return t

    task(gather_parent(ev), "gather-parent")
    if hasattr(asyncio, "TaskGroup"):
        task(taskgroup_parent(ev), "taskgroup-parent")
    task(chain_link(ev, 0), "chain-0")
    task(waitfor_task_parent(ev), "waitfor-task-parent")
    task(waitfor_coro_parent(ev))                             # unnamed
    if hasattr(asyncio, "timeout"):
        task(timeout_parent(ev), "timeout-parent")
    task(shield_parent(ev), "shield-parent")
    task(as_completed_parent(ev, loop), "as-completed-parent")
    task(agen_consumer(ev), "agen-consumer")
    task(legacy_parent(ev), "generator-coroutine")
    task(leaf(ev), u"t\u00e2che-\u00fc")                       # non-ASCII
    if HAS_NAMES:
        st = SubTask(sub_body(ev), loop=loop, name="subclassed")
    else:
        st = SubTask(sub_body(ev), loop=loop)
    made.append(st)
    shared = {"shared": task(leaf(ev), "shared-target")}
    for n in range(1, 4):
        task(shared_waiter(shared), "shared-waiter-%d" % n)
    if CYCLE:
        pair = {}
        pair["a"] = task(cycle_a(pair), "cycle-a")
        pair["b"] = task(cycle_b(pair), "cycle-b")
    for i in range(MANY):
        task(leaf(ev), "many-%d" % i)
    return made


# --- other threads -----------------------------------------------------------

LOOP2_READY = threading.Event()


async def sync_blocker():
    await asyncio.sleep(0)
    LOOP2_READY.set(); time.sleep(1e6)


def loop_thread():
    loop = asyncio.new_event_loop()
    use_pytasks(loop)
    _tids[loop] = native_tid()
    _keep.append(loop)

    async def main2():
        # Made on the running loop: before 3.10 an Event binds the
        # thread's current loop when it is created.
        ev = asyncio.Event()
        _keep.append(ev)
        create_task(loop, leaf(ev), "thread-waiter")
        blocker = create_task(loop, sync_blocker(), "sync-blocker")
        SYNC_BLOCKER.append(blocker)
        await blocker

    try:
        loop.run_until_complete(main2())
    except BaseException:
        fail("loop-thread raised:\n%s" % traceback.format_exc())


def short_lived():
    loop = asyncio.new_event_loop()
    use_pytasks(loop)
    _tids[loop] = None          # its thread is gone when we record

    async def start():
        ev = asyncio.Event()    # on the running loop (see loop_thread)
        t = create_task(loop, leaf(ev), "orphan")
        _keep.extend([ev, t])
        await asyncio.sleep(0.01)

    loop.run_until_complete(start())
    _keep.append(loop)


# --- ground truth ------------------------------------------------------------

def frame_dict(frame):
    code = frame.f_code
    return {"function": code.co_name,
            "qualname": getattr(code, "co_qualname", None),
            "file": code.co_filename,
            "line": frame.f_lineno}


def awaited_of(obj):
    """What a coroutine / generator / async generator is suspended on."""
    for attr in ("cr_await", "gi_yieldfrom", "ag_await"):
        if hasattr(obj, attr):
            return getattr(obj, attr)
    return None


def frame_of(obj):
    for attr in ("cr_frame", "gi_frame", "ag_frame"):
        if hasattr(obj, attr):
            return getattr(obj, attr)
    return None


def coro_chain(coro):
    """Frames outermost first."""
    out = []
    obj = coro
    for _ in range(10000):
        if obj is None:
            break
        tname = type(obj).__name__
        if tname in ("async_generator_asend", "async_generator_athrow"):
            gens = [r for r in gc.get_referents(obj)
                    if type(r).__name__ == "async_generator"]
            obj = gens[0] if gens else None
            continue
        f = frame_of(obj)
        if f is None:
            break
        out.append(f)
        obj = awaited_of(obj)
    return out


def running_stack(task, thread_ident):
    top = sys._current_frames().get(thread_ident)
    target = get_coro(task).cr_frame
    out = []
    f = top
    while f is not None:
        out.append(frame_dict(f))
        if f is target:
            return out
        f = f.f_back
    return None


def gather_children(fut, seen):
    out = []
    if id(fut) in seen:
        return out
    seen.add(id(fut))
    for ch in getattr(fut, "_children", None) or []:
        if isinstance(ch, TASK_TYPES):
            out.append(ch)
        else:
            out.extend(gather_children(ch, seen))
    return out


def shield_map(all_tasks):
    """id(outer future of a shield()) -> [inner tasks]."""
    out = {}
    for t in all_tasks:
        for cb in getattr(t, "_callbacks", None) or []:
            fn = cb[0] if isinstance(cb, tuple) else cb
            if getattr(fn, "__name__", "") != "_inner_done_callback":
                continue
            for c in getattr(fn, "__closure__", None) or ():
                if isinstance(c.cell_contents, asyncio.Future):
                    out.setdefault(id(c.cell_contents), []).append(t)
    return out


def records_awaited_by(cls):
    """Does as_completed's iterator tell CPython who awaits its inputs?
    3.14 does; 3.15.0a0 (main before that came) does not."""
    return cls is not None and any(
        "future_add_to_awaited_by" in f.__code__.co_names
        for f in vars(cls).values() if hasattr(f, "__code__"))


def derived_awaits(task, shields):
    w = getattr(task, "_fut_waiter", None)
    if w is None:
        return []
    if isinstance(w, TASK_TYPES):
        return [w]
    if hasattr(w, "_children"):                       # gather()
        return gather_children(w, set())
    # a TaskGroup's completion future, awaited in TaskGroup.__aexit__
    tg_type = getattr(asyncio, "TaskGroup", None)
    if tg_type is not None:
        for f in coro_chain(get_coro(task)):
            me = f.f_locals.get("self")
            if isinstance(me, tg_type) and \
                    getattr(me, "_on_completed_fut", None) is w:
                return [t for t in me._tasks]
    # as_completed(): from 3.14 (where C tasks carry CPython's own
    # awaited-by bookkeeping; pure-Python ones get none, so their waiter
    # alone tells, as before 3.14) the caller awaits every input still
    # pending
    iterator_type = getattr(asyncio.tasks, "_AsCompletedIterator", None)
    if records_awaited_by(iterator_type) and hasattr(task, "_asyncio_awaited_by") \
            and not is_pytask(task):
        for f in coro_chain(get_coro(task)):
            me = f.f_locals.get("self")
            if isinstance(me, iterator_type):
                return list(me._todo)
    # shield(): the inner task's done callback holds the outer future
    return shields.get(id(w), [])


def record(loops, loop2_ident):
    tasks = []
    for loop in loops:
        for t in all_tasks(loop):
            tasks.append((loop, t))
    everyone = [t for _, t in tasks]
    ids = set(id(t) for t in everyone)
    awaits = {}
    shields = shield_map(everyone)
    for _, t in tasks:
        awaits[id(t)] = sorted(id(x) for x in derived_awaits(t, shields)
                               if id(x) in ids)
    awaited_by = dict((i, []) for i in ids)
    for i, targets in awaits.items():
        for j in targets:
            awaited_by[j].append(i)
    checked = False
    if all(hasattr(t, "_asyncio_awaited_by") for t in everyone):
        checked = True
        # CPython records awaited-by only between C tasks (its
        # future_add_to_awaited_by ignores pure-Python futures)
        c_ids = set(id(t) for t in everyone if not is_pytask(t))
        for t in everyone:
            if id(t) not in c_ids:
                continue
            official = sorted(id(x) for x in (t._asyncio_awaited_by or ())
                              if id(x) in ids)
            if official != sorted(i for i in awaited_by[id(t)] if i in c_ids):
                return None, ("edges of %r: derived awaited_by %r, CPython "
                              "says %r" % (t.get_name(),
                                           sorted(awaited_by[id(t)]),
                                           official)), checked
    out = []
    for loop, t in tasks:
        running = t in SYNC_BLOCKER
        if running:
            stack = running_stack(t, loop2_ident)
            if stack is None:
                return None, "sync-blocker is not on its thread's stack", \
                    checked
        else:
            stack = [frame_dict(f) for f in coro_chain(get_coro(t))]
            stack.reverse()
        out.append({
            "id": id(t),
            "name": task_name(t),
            "state": "pending" if not t.done() else
                     ("cancelled" if t.cancelled() else "done"),
            "thread": _tids.get(loop),
            "running": running,
            "type": type(t).__name__,
            "coroutine_stack": stack,
            "awaits": awaits[id(t)],
            "awaited_by": sorted(awaited_by[id(t)]),
        })
    out.sort(key=lambda d: d["id"])
    return out, None, checked


def find_cycles(tasks):
    """Await cycles, each as [a, b, ..., a] (a awaits b ...), as sorted
    lists of ids without the repeated end: order-independent to compare."""
    graph = dict((t["id"], t["awaits"]) for t in tasks)
    color, path, found = {}, [], set()

    def dfs(v):
        color[v] = 1
        path.append(v)
        for w in graph.get(v, ()):
            if color.get(w) == 1:
                found.add(tuple(sorted(path[path.index(w):])))
            elif w not in color:
                dfs(w)
        color[v] = 2
        path.pop()

    for v in sorted(graph):
        if v not in color:
            dfs(v)
    return [list(c) for c in sorted(found)]


def write_truth(tasks, checked):
    doc = {
        "target": "asyncio_graph",
        "pid": os.getpid(),
        "python_version": version_string(),
        "sys_version": sys.version,
        "debug_build": hasattr(sys, "gettotalrefcount"),
        "free_threaded": free_threaded(),
        "executable": sys.executable,
        "main_tid": native_tid(),
        "options": OPTIONS,
        "edges_checked": checked,
        "tasks": tasks,
        "cycles": find_cycles(tasks),
    }
    write_json(_out_path(), doc)


class Recorder:
    """Runs as plain loop callbacks, so no task is running meanwhile."""

    def __init__(self, loop, loops, loop2_ident):
        self.loop, self.loops, self.ident = loop, loops, loop2_ident
        self.prev = None
        self.attempts = 0

    def step(self):
        try:
            self._step()
        except BaseException:
            fail("recording raised:\n%s" % traceback.format_exc())

    def _step(self):
        self.attempts += 1
        if self.attempts > 50:
            fail("could not record a stable ground truth")
        tasks, why, checked = record(self.loops, self.ident)
        if tasks is None:
            sys.stderr.write("retrying: %s\n" % why)
            self.prev = None
        elif self.prev == tasks:
            write_truth(tasks, checked)
            return
        else:
            self.prev = tasks
        self.loop.call_later(0.2, self.step)


async def main():
    global FOREVER
    loop = asyncio.get_running_loop()
    use_pytasks(loop)
    if EAGER:
        loop.set_task_factory(asyncio.eager_task_factory)
    _tids[loop] = native_tid()
    FOREVER = asyncio.Event()
    ev = asyncio.Event()
    _keep.append(ev)
    _keep.extend(build(loop, ev))

    t = threading.Thread(target=short_lived, name="short-lived")
    t.start()
    t.join()
    t2 = threading.Thread(target=loop_thread, name="loop-thread")
    t2.daemon = True
    t2.start()
    if not LOOP2_READY.wait(60):
        fail("loop-thread never blocked")
    loops = [loop] + [l for l in _keep if isinstance(l, asyncio.AbstractEventLoop)]
    loop.call_later(0.3, Recorder(loop, loops, t2.ident).step)
    await FOREVER.wait()


if __name__ == "__main__":
    asyncio.run(main())
