# -*- coding: utf-8 -*-
"""Threads that live in generators of every kind, entering and leaving
them as fast as the interpreter can: a reader catches them between a yield
and the next resume, when a generator's frame has no caller.  Their frames
outside each loop are stable; inside it, only the loop and its generators.

usage: gen_races.py GROUND_TRUTH.json
"""
import os
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import checkpoint, ready, spawn_busy  # noqa: E402


# --- a generator expression consumed by sum() (from C) ----------------------
def genexpr_loop():
    ready("genexpr")
    while True:
        sum(i * i for i in range(1000))


# --- a for loop over a generator ---------------------------------------------
def counter(n):
    for i in range(n):
        yield i


def for_loop():
    ready("for")
    while True:
        for _ in counter(1000):
            pass


# --- a pipeline of generators --------------------------------------------------
def evens(it):
    for x in it:
        if x % 2 == 0:
            yield x


def doubled(it):
    for x in it:
        yield 2 * x


def pipeline_loop():
    ready("pipeline")
    while True:
        for _ in doubled(evens(counter(1000))):
            pass


# --- a yield from chain --------------------------------------------------------
def inner_yf(n):
    for i in range(n):
        yield i


def middle_yf(n):
    yield from inner_yf(n)


def outer_yf(n):
    yield from middle_yf(n)


def yield_from_loop():
    ready("yield_from")
    while True:
        for _ in outer_yf(1000):
            pass


# --- an async generator driven by hand ------------------------------------
async def ticks(n):
    for i in range(n):
        yield i


def agen_loop():
    ready("asyncgen")
    while True:
        ag = ticks(1000)
        try:
            while True:
                ag.asend(None).send(None)
        except StopIteration:
            pass
        except StopAsyncIteration:
            pass


# --- coroutines driven by hand -------------------------------------------------
@types.coroutine
def hop():
    yield


async def coro_chain(n):
    for _ in range(n):
        await hop()


def coro_loop():
    ready("coroutine")
    while True:
        c = coro_chain(1000)
        try:
            while True:
                c.send(None)
        except StopIteration:
            pass


def main():
    spawn_busy("genexpr", genexpr_loop, ["<genexpr>"])
    spawn_busy("for", for_loop, ["counter"])
    spawn_busy("pipeline", pipeline_loop, ["counter", "evens", "doubled"])
    spawn_busy("yield_from", yield_from_loop, ["outer_yf", "middle_yf", "inner_yf"])
    spawn_busy("asyncgen", agen_loop, ["ticks"])
    spawn_busy("coroutine", coro_loop, ["coro_chain", "hop"])
    checkpoint(); time.sleep(1e6)


if __name__ == "__main__":
    main()
