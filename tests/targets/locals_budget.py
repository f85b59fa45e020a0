# -*- coding: utf-8 -*-
"""Locals that would cost more than one dump's budget: 600 frames, each
with ten variables holding one big nested list (10 lists of 10 strs of
80 characters: about 111 objects per variable).  Rendering them all
takes more reads than PYD_LOCALS_MAX_READS, so the dump must stop at the
budget, say so, and stay quick and small.

usage: locals_budget.py GROUND_TRUTH.json
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import checkpoint  # noqa: E402

BIG = [["x" * 80 for _ in range(10)] for _ in range(10)]


def heavy(n):
    a = b = c = d = e = f = g = h = i = j = BIG
    if n <= 1:
        checkpoint(); time.sleep(1e6)
    heavy(n - 1)
    return a, b, c, d, e, f, g, h, i, j


sys.setrecursionlimit(2000)
heavy(600)
