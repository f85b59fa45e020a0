# -*- coding: utf-8 -*-
"""Threads asleep in and out of exception handlers: "handler" in an
except block, "in_gen" in a generator's except block (its exc_info points
into the generator), "nested" in an except inside another's, "after" past
an except that ended, "plain" in no handler at all; the main thread, past
a handled ZeroDivisionError, sleeps too.

Ground truth (once every worker sleeps): base fields, "tids" {name:
native tid}, "handling" {name: whether sys.exc_info() said an exception
was being handled, as the thread saw it on the line before its sleep}.

usage: exc_states.py GROUND_TRUTH.json
"""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import base_truth, ready, spawn, thread_table, wait_workers, write_json  # noqa: E402

FOREVER = threading.Event()
HANDLING = {}


def block(name):
    HANDLING[name] = sys.exc_info()[0] is not None
    ready(name) or FOREVER.wait()


def handler():
    try:
        raise ValueError("handled")
    except ValueError:
        block("handler")


def gen():
    try:
        raise KeyError("in a generator")
    except KeyError:
        yield block("in_gen")


def in_gen():
    for _ in gen():
        pass


def nested():
    try:
        raise ValueError("outer")
    except ValueError:
        try:
            raise TypeError("inner")
        except TypeError:
            pass
        block("nested")


def after():
    try:
        raise ValueError("over")
    except ValueError:
        pass
    block("after")


def plain():
    block("plain")


def main():
    for f in (handler, in_gen, nested, after, plain):
        spawn(f.__name__, f)
    try:
        1 / 0
    except ZeroDivisionError:
        pass
    wait_workers()
    doc = base_truth()
    doc["tids"] = thread_table()
    doc["handling"] = dict(HANDLING, main=sys.exc_info()[0] is not None)
    write_json(sys.argv[1], doc)
    FOREVER.wait()


if __name__ == "__main__":
    main()
