# -*- coding: utf-8 -*-
"""Blocking inside generators, generator expressions, coroutines, async
generators and an asyncio task.

usage: generators.py GROUND_TRUTH.json
"""
import asyncio
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import (BLOCK, checkpoint, ready, register_thread, spawn,  # noqa: E402
                         spawn_first)


# --- main thread: for loop -> generator -> yield from -> generator ----------
def inner_gen():
    yield 1
    checkpoint(); time.sleep(1e6)
    yield 2


def outer_gen():
    yield 0
    yield from inner_gen()


def main_consumer():
    total = 0
    for x in outer_gen():
        total += x
    return total


# --- worker: plain generator iterated by next() ------------------------------
def counting_gen():
    for i in range(3):
        if i == 2:
            ready("generator"); BLOCK.acquire()
        yield i


def gen_worker():
    it = counting_gen()
    while True:
        next(it)


# --- worker: generator expression consumed by sum() --------------------------
def block_on(x):
    if x == 1:
        ready("genexpr"); BLOCK.acquire()
    return x


def genexpr_worker():
    return sum(block_on(x) for x in range(3))


# --- worker: coroutine chain driven by hand ----------------------------------
async def co_inner():
    ready("coroutine"); BLOCK.acquire()


async def co_outer():
    await co_inner()


def coroutine_worker():
    c = co_outer()
    c.send(None)


# --- worker: async generator consumed by async for ---------------------------
async def agen():
    yield 1
    ready("asyncgen"); BLOCK.acquire()
    yield 2


async def agen_consumer():
    async for _ in agen():
        pass


def asyncgen_worker():
    c = agen_consumer()
    c.send(None)


# --- worker: asyncio event loop running a task that blocks -------------------
async def asyncio_task():
    await asyncio.sleep(0)
    ready("asyncio"); time.sleep(1e6)


def asyncio_worker():
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(asyncio_task())


# --- a thread whose first frame is a generator's (C code runs it) ------------
def first_frame_gen():
    register_thread()
    ready("first_frame_gen"); BLOCK.acquire()
    yield


def main():
    spawn("generator", gen_worker)
    spawn("genexpr", genexpr_worker)
    spawn("coroutine", coroutine_worker)
    spawn("asyncgen", asyncgen_worker)
    spawn("asyncio", asyncio_worker)
    spawn_first("first_frame_gen", first_frame_gen())
    main_consumer()


if __name__ == "__main__":
    main()
