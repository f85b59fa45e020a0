# -*- coding: utf-8 -*-
"""Qualified names: methods, nested classes and functions, class/static
methods, properties, decorators, lambdas, comprehensions (list, dict, set,
generator expression), non-ASCII identifiers and file names (latin-1, UCS-2,
UCS-4), a 300-character function name.

usage: names.py GROUND_TRUTH.json
"""
import functools
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import BLOCK, checkpoint, ready, spawn  # noqa: E402
import modül_ünïcode  # noqa: E402
import mod_日本語  # noqa: E402
import mod_𠀋  # noqa: E402


class Outer:
    class Inner:
        def method(self):
            def nested():
                def deeper():
                    ready("nested"); BLOCK.acquire()
                deeper()
            nested()

    @classmethod
    def cm(cls):
        ready("classmethod"); BLOCK.acquire()

    @staticmethod
    def sm():
        ready("staticmethod"); BLOCK.acquire()

    @property
    def prop(self):
        ready("property"); BLOCK.acquire()

    def __init__(self, block=False):
        if block:
            ready("init"); BLOCK.acquire()


def decorator(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@decorator
def decorated():
    ready("decorated"); BLOCK.acquire()


def in_lambda():
    f = lambda: ready("lambda") or BLOCK.acquire()  # noqa: E731
    f()


def in_listcomp():
    return [ready("listcomp") or BLOCK.acquire() for _ in range(1)]


def in_dictcomp():
    return {k: ready("dictcomp") or BLOCK.acquire() for k in range(1)}


def in_setcomp():
    return {ready("setcomp") or BLOCK.acquire() for _ in range(1)}


def in_genexpr():
    return list(ready("genexpr") or BLOCK.acquire() for _ in range(1))


def a_very_long_function_name_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_end():
    ready("long_name"); BLOCK.acquire()


def non_ascii_thread_name():
    ready("ünï-名前-𠀋"); BLOCK.acquire()


class Main:
    def go(self):
        return [(lambda: checkpoint() or time.sleep(1e6))() for _ in range(1)]


def main():
    spawn("nested", Outer.Inner().method)
    spawn("classmethod", Outer.cm)
    spawn("staticmethod", Outer.sm)
    spawn("property", lambda: Outer().prop)
    spawn("init", Outer, True)
    spawn("decorated", decorated)
    spawn("lambda", in_lambda)
    spawn("listcomp", in_listcomp)
    spawn("dictcomp", in_dictcomp)
    spawn("setcomp", in_setcomp)
    spawn("genexpr", in_genexpr)
    spawn("long_name", a_very_long_function_name_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_end)
    spawn("ünï-名前-𠀋", non_ascii_thread_name)
    spawn("latin1", modül_ünïcode.grüße_löwe)
    spawn("ucs2", modül_ünïcode.fünktion_日本)
    spawn("ucs4", modül_ünïcode.fünktion_𠀋)
    spawn("latin1_method", modül_ünïcode.Klässe().méthode)
    spawn("ucs2_file", mod_日本語.関数_ユニコード)
    spawn("ucs4_file", mod_𠀋.f_𠀋𠀋)
    Main().go()


if __name__ == "__main__":
    main()
