# -*- coding: utf-8 -*-
"""Locals: every kind of value pystack-dump --locals renders, in frames
of three threads, each recorded with Python's own repr() (_pyd_vars):
ints small and huge, floats, strs with quotes, escapes, non-ASCII and
non-printable characters, long strs, bytes, nested and long containers,
containers inside themselves (a list, a dict, a list through a dict, a
tuple through a list: repr()'s "[...]", checked against repr() here),
closures (cell and free variables, an argument in a cell), unbound and
deleted names, user objects, *args and **kwargs.

usage: locals.py GROUND_TRUTH.json
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _pyd_common  # noqa: E402
from _pyd_common import BLOCK, checkpoint, ready, spawn  # noqa: E402
from _pyd_vars import brepr, print_values  # noqa: E402

_pyd_common.RECORD_VARS = True


class Request(object):
    def __init__(self, path):
        self.path = path


class Slotted(object):
    __slots__ = ("a",)


class MyInt(int):
    pass


def scalars(a, b=-7, *args, key=None, **kwargs):
    none, true, false = None, True, False
    small, big, huge, neg_huge = 42, 2 ** 64, 2 ** 1000, -(10 ** 70) - 1
    # past Python's own 4,300-digit limit; past 2,000 30-bit digits
    large, giant, neg_giant = 7 ** 6000, 3 ** 50000, -(3 ** 50001)
    zero, fl = 0, 0.1
    floats = (1.5e-7, 1e16, 1e15, 123456789.125, -0.0, float("inf"),
              float("-inf"), float("nan"), 5e-324, 1 / 3.0, 1e-5, 1e-4)
    quotes = ["it's", 'say "hi"', "both ' and \"", "back\\slash"]
    escapes = "tab\there\nnl\rcr\x00nul\x7fdel\x85nel\xa0nbsp"
    uni = "é日本語𠀋 \u200b\u2028\U000e0001\ud800"
    long_str = "x" * 79 + "yz" + "w" * 100
    exact = "e" * 80
    by = (b"", b"'", b'"', b"'\"", bytes(range(0, 256, 7)), b"z" * 90)
    ready("scalars"); BLOCK.acquire()
    never = 1  # noqa: F841  (not bound yet at the checkpoint)


def containers(depth=3):
    one, empty = (1,), ()
    lists = [[], [1, [2, [3, [4]]]], list(range(25))]
    d = {"a": 1, 2: (3,), (4, 5): {"x": [6]}, None: frozenset([7])}
    big_d = dict((i, str(i)) for i in range(30))
    s, fs, es, efs = {1, 2, 3}, frozenset(["q"]), set(), frozenset()
    rec = [1]
    rec.append(rec)
    rec_d = {"k": 1}
    rec_d["self"] = rec_d
    ring = [0]          # a list holding a dict holding the list
    ring.append({"ring": ring})
    rec_t = ([],)       # a tuple inside itself through its list
    rec_t[0].append(rec_t)
    for v in (rec, rec_d, ring, ring[1], rec_t):
        if brepr(v) != repr(v):     # the ground truth's renderer is repr()'s
            raise AssertionError("brepr %s, repr %s" % (brepr(v), repr(v)))
    mixed = (Request("/x"), Slotted(), MyInt(5), len, Request)
    deleted = 1
    del deleted
    ready("containers"); BLOCK.acquire()


def closures(arg_cell, plain):
    cell = {"k": arg_cell}

    def inner(n):
        total = n + len(cell) + len(arg_cell)
        ready("closures"); BLOCK.acquire()
        return total
    return inner(3)


def main(argv, *rest):
    spawn("scalars", lambda: scalars(1, 2, 3, 4, key="k", extra=1.25, more=[1]))
    spawn("containers", containers)
    spawn("closures", closures, "cellarg", b"plain")
    req = Request("/main")
    req.me = req
    deep, wide, ring = print_values()
    checkpoint(); time.sleep(1e6)
    return req, deep, wide, ring


main(sys.argv, "rest")
