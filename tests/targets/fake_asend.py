# -*- coding: utf-8 -*-
"""A task suspended on an awaitable of a user class that calls itself
async_generator_asend, the name of CPython's own asend type (as in
CPython's test for gh-159620), with a suspended coroutine in its first slot
where the real type keeps its async generator.  A task-graph walk that trusts
the name follows that slot into `decoy`, which the task does not await.

usage: fake_asend.py GROUND_TRUTH.json
"""
import asyncio
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import checkpoint, ready, spawn  # noqa: E402
import time  # noqa: E402


async def decoy():
    await asyncio.sleep(1e6)


class async_generator_asend(object):
    # CPython lays slots out sorted by name: ag_gen is the first, where
    # the real type has its ags_gen.
    __slots__ = ("ag_gen", "fut")

    def __init__(self, gen, fut):
        self.ag_gen, self.fut = gen, fut

    def __await__(self):
        return self

    def __iter__(self):
        return self

    def __next__(self):
        return self.fut.__next__() if hasattr(self.fut, "__next__") else next(iter(self.fut))

    def send(self, value):
        return self.__next__()


async def waiter(started):
    fut = asyncio.get_running_loop().create_future()
    gen = decoy()
    gen.send(None)  # suspended in its await, as an awaited generator is
    started.set()
    await async_generator_asend(gen, fut)


def run_loop(started):
    async def main():
        task = asyncio.ensure_future(waiter(started))
        task.set_name("fake") if hasattr(task, "set_name") else None
        await asyncio.sleep(1e6)
    ready("loop"); asyncio.run(main())


started = threading.Event()
spawn("loop", run_loop, started)
started.wait()
checkpoint(); time.sleep(1e6)
