# -*- coding: utf-8 -*-
"""A frame's variables as Python itself sees them, rendered with the
bounded repr that pystack-dump --locals promises: repr() itself for None,
bool, int, float, str and bytes, reprlib's rules for containers (depth,
items, "..."), repr()'s own for a container inside itself ("[...]": the
objects on the path, Py_ReprEnter), and <TYPE object at 0xADDR> for
anything else.

Must run unchanged on CPython 3.6 through 3.15."""

import ctypes
import sys

STRING, ITEMS, DEPTH, DIGITS, INT_HEAD = 80, 10, 2, 60, 20
# An int of more 30-bit digits than this shows only how many decimal
# digits it has: <int of N digits at 0xADDR> (repr.c's MAX_INT_DIGITS).
GIANT_DIGITS30 = 2000
HEAPTYPE = 1 << 9
CO_VARARGS, CO_VARKEYWORDS = 0x4, 0x8
EMPTY = {tuple: "()", list: "[]", dict: "{}", set: "set()", frozenset: "frozenset()"}
# What repr() prints for a container met again inside itself.
RECURSION = {tuple: "(...)", list: "[...]", dict: "{...}", set: "set(...)",
             frozenset: "frozenset(...)"}


# Where a type object keeps tp_name: past its PyVarObject head, whose
# ob_size follows the object header (16 bytes; 32 in free-threaded builds).
TP_NAME = object.__basicsize__ + 8


def type_name(t):
    """tp_name, which <TYPE object at ...> shows: read from the type
    object itself, since __name__ drops the module part of a C type's
    name."""
    try:
        return ctypes.c_char_p.from_address(id(t) + TP_NAME).value.decode("utf-8")
    except Exception:
        return t.__name__


def int_str(v):
    """str(v) past the 4,300 digits 3.11+ refuses by default."""
    limit = getattr(sys, "get_int_max_str_digits", None)
    if limit is None:
        return repr(v)
    old = limit()
    sys.set_int_max_str_digits(0)
    try:
        return repr(v)
    finally:
        sys.set_int_max_str_digits(old)


def decimal_digits(v):
    """How many decimal digits v > 0 has, exactly."""
    n = int(v.bit_length() * 0.30102999566398120)
    while 10 ** n <= v:
        n += 1
    while n > 1 and 10 ** (n - 1) > v:
        n -= 1
    return n


def brepr(v, level=0, path=()):
    """The bounded repr of v; path: the ids of the containers v is inside."""
    t = type(v)
    if v is None or t is bool or t is float:
        return repr(v)
    if t is int:
        if (abs(v).bit_length() + 29) // 30 > GIANT_DIGITS30:
            n = decimal_digits(abs(v))
            return "<%sint of %d digits at 0x%x>" % ("negative " if v < 0 else "", n, id(v))
        s = int_str(v)
        digits = s.lstrip("-")
        if len(digits) > DIGITS:
            return s[:len(s) - len(digits)] + digits[:INT_HEAD] + "... (%d digits)" % len(digits)
        return s
    if t is str or t is bytes:
        return repr(v[:STRING]) + ("..." if len(v) > STRING else "")
    if t in EMPTY:
        items = list(v.items()) if t is dict else list(v)
        if not items:
            return EMPTY[t]
        if id(v) in path:
            return RECURSION[t]
        path += (id(v),)
        shown = items[:ITEMS] if level < DEPTH else []
        if t is dict:
            parts = [brepr(k, level + 1, path) + ": " + brepr(x, level + 1, path)
                     for k, x in shown]
        else:
            parts = [brepr(x, level + 1, path) for x in shown]
        if len(items) > len(shown):
            parts.append("...")
        body = ", ".join(parts)
        if t is tuple:
            return "(" + body + ("," if len(items) == 1 and shown else "") + ")"
        if t is list:
            return "[" + body + "]"
        if t is frozenset:
            return "frozenset({" + body + "})"
        return "{" + body + "}"
    return "<%s object at 0x%x>" % (type_name(t), id(v))


def print_values():
    """What py-print shows deeper than the dump (1000 characters, 100
    items, 5 levels): locals.py's main() holds them, the test renders
    them here.  deep passes every default limit and some of py-print's;
    wide's repr passes py-print's 64 KiB; ring holds itself through a
    dict and through a tuple, within the dump's depth and py-print's, so
    repr() itself is its repr under both."""
    deep = [["x" * 1200, "y"], list(range(150)), [[[[[[1]]]]]]]
    wide = ["z" * 1200] * 100
    ring = []
    ring += [{"ring": ring}, (ring,)]
    if brepr(ring) != repr(ring):
        raise AssertionError("brepr %s, repr %s" % (brepr(ring), repr(ring)))
    return deep, wide, ring


def ordered_names(code):
    """Every variable of a code object in code-object order (arguments
    first), and how many are arguments."""
    names = list(code.co_varnames)
    names += [c for c in code.co_cellvars if c not in names]
    names += list(code.co_freevars)
    nargs = code.co_argcount + code.co_kwonlyargcount
    nargs += bool(code.co_flags & CO_VARARGS) + bool(code.co_flags & CO_VARKEYWORDS)
    return names, nargs


def frame_vars(frame):
    """{"arguments": [[name, repr]...], "locals": [[name, repr]...]} of
    the variables bound in frame, in code-object order."""
    names, nargs = ordered_names(frame.f_code)
    fl = frame.f_locals
    out = {"arguments": [], "locals": []}
    for i, n in enumerate(names):
        if n in fl:
            out["arguments" if i < nargs else "locals"].append([n, brepr(fl[n])])
    return out
