# -*- coding: utf-8 -*-
"""For `pystack-dump sample --mode async` (CPython 3.7+): on one event loop,
a task "sleeper" suspended in `await asyncio.sleep(3)` in a loop, and a
task "burner" burning CPU in burn_cpu() (50 ms at a time, then
`await asyncio.sleep(0)`), awaited by the main task "main".

Ground truth (recorded by the burner once both tasks run): base fields,
"tasks_named" (task names exist from 3.8), "sleeper": {"task": name,
"chain": the sleeper task's coroutine chain while it waits, outermost
first: [sleeper() at its await line, asyncio's sleep() at its own await],
each {function, qualname, file, line}, "await_line": that line of
sleeper()}, "burner": {"task": name, "function": code_info(burn_cpu),
"coroutine": code_info(burner)}, "main": {"task": name}.

Options: exit-after=SECS: the burner stops after SECS seconds (counted
from the first SIGUSR2 with exit-on=usr2), main returns, asyncio.run()
ends and the process exits 0.

usage: sample_async.py GROUND_TRUTH.json [exit-after=SECS [exit-on=usr2]]
"""
import asyncio
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import ExitClock, base_truth, code_info, fail, options, write_json  # noqa: E402

NAMED = sys.version_info >= (3, 8)


async def sleeper():
    while True:
        await asyncio.sleep(3)


def burn_cpu(secs):
    until = time.monotonic() + secs
    x = 0
    while time.monotonic() < until:
        x += 1
    return x


def coroutine_chain(coro):
    """The chain of a suspended coroutine, outermost first."""
    out = []
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is None:
            break
        code = frame.f_code
        out.append({"function": code.co_name, "qualname": getattr(code, "co_qualname", None),
                    "file": code.co_filename, "line": frame.f_lineno})
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return out


def record(sleeper_task):
    coro = sleeper_task.get_coro() if hasattr(sleeper_task, "get_coro") else sleeper_task._coro
    chain = coroutine_chain(coro)
    if not chain or chain[0]["function"] != "sleeper":
        fail("unexpected chain of the sleeper task: %r" % (chain,))
    doc = base_truth()
    doc.update({
        "tasks_named": NAMED,
        "sleeper": {"task": "sleeper" if NAMED else None, "chain": chain,
                    "await_line": chain[0]["line"]},
        "burner": {"task": "burner" if NAMED else None, "function": code_info(burn_cpu),
                   "coroutine": code_info(burner)},
        "main": {"task": "main" if NAMED else None},
    })
    write_json(sys.argv[1], doc)


async def burner(sleeper_task, clock):
    await asyncio.sleep(0.1)            # the sleeper is in its sleep by now
    record(sleeper_task)
    while not clock.due():
        burn_cpu(0.05)
        await asyncio.sleep(0)


def create_task(coro, name):
    if NAMED:
        return asyncio.get_event_loop().create_task(coro, name=name)
    return asyncio.get_event_loop().create_task(coro)


async def main(clock):
    if NAMED:
        asyncio.current_task().set_name("main")
    s = create_task(sleeper(), "sleeper")
    await create_task(burner(s, clock), "burner")
    s.cancel()


if __name__ == "__main__":
    opts = options()
    asyncio.run(main(ExitClock(opts)))
