# -*- coding: utf-8 -*-
"""The target of bench/bench_ft.py: four threads spinning in pure Python
at once (on a free-threaded build they really run in parallel), each at
the bottom of its own chain of functions, and the main thread waiting.

  alpha    threading's bootstrap, alpha_1 .. alpha_6, alpha_spin (a loop
           of arithmetic: its innermost frame never changes)
  beta     the same with beta_* and 7 levels
  gamma    the same with gamma_* and 8 levels
  delta    delta_1 .. delta_5, delta_spin, which calls delta_leaf in a
           loop: its innermost frame changes all the time (delta_spin,
           then delta_leaf, then delta_spin ...)

No two threads share a function of their own: a sample of one thread
that holds another's function is a mix-up.  Once every thread is in its
loop it writes the ground truth to ARGV[1] (JSON, atomically: each
thread's native id, name and chain of qualnames from threading's
bootstrap down to its spinning function, as the thread itself saw it,
and the function names allowed on top of that chain), then prints
"ready".

usage: ft_target.py GROUND_TRUTH.json
"""
import json
import os
import sys
import threading
import time

_lock = threading.Lock()
_truth = {}                     # thread name -> its entry in the ground truth
_all_in = threading.Event()     # set once every spinning thread is in its loop
SPINNERS = 4


def _chain_here(frame):
    """The qualnames from the outermost frame down to frame (outermost
    first), as the interpreter itself sees them."""
    out = []
    while frame is not None:
        code = frame.f_code
        out.append(getattr(code, "co_qualname", code.co_name))
        frame = frame.f_back
    return out[::-1]


def _arrived(name, leaves):
    """Called by each spinning function once, just before its loop: record
    the thread's own view of its stack (the spinning function innermost)."""
    entry = {"name": name, "tid": threading.get_native_id(),
             "chain": _chain_here(sys._getframe(1)), "leaves": leaves}
    with _lock:
        _truth[name] = entry
        if len(_truth) == SPINNERS:
            _all_in.set()


# --- alpha: 6 levels, then a loop of arithmetic ------------------------------
def alpha_spin():
    _arrived("alpha", [])
    x = 1
    while True:
        x = (x * 31 + 7) % 1000003


def alpha_6():
    alpha_spin()


def alpha_5():
    alpha_6()


def alpha_4():
    alpha_5()


def alpha_3():
    alpha_4()


def alpha_2():
    alpha_3()


def alpha_1():
    alpha_2()


# --- beta: 7 levels, then a loop of arithmetic -------------------------------
def beta_spin():
    _arrived("beta", [])
    x = 2
    while True:
        x = (x * 17 + 3) % 999983


def beta_7():
    beta_spin()


def beta_6():
    beta_7()


def beta_5():
    beta_6()


def beta_4():
    beta_5()


def beta_3():
    beta_4()


def beta_2():
    beta_3()


def beta_1():
    beta_2()


# --- gamma: 8 levels, then a loop over a list ------------------------------
def gamma_spin():
    _arrived("gamma", [])
    values = list(range(64))
    total = 0
    while True:
        for v in values:
            total = (total + v * v) & 0xFFFFFF


def gamma_8():
    gamma_spin()


def gamma_7():
    gamma_8()


def gamma_6():
    gamma_7()


def gamma_5():
    gamma_6()


def gamma_4():
    gamma_5()


def gamma_3():
    gamma_4()


def gamma_2():
    gamma_3()


def gamma_1():
    gamma_2()


# --- delta: 5 levels, then a loop calling a small function --------------------
def delta_leaf(x):
    return (x * 13 + 1) % 65521


def delta_spin():
    _arrived("delta", ["delta_leaf"])
    x = 3
    while True:
        x = delta_leaf(x)


def delta_5():
    delta_spin()


def delta_4():
    delta_5()


def delta_3():
    delta_4()


def delta_2():
    delta_3()


def delta_1():
    delta_2()


def wait_forever():
    """The main thread's own frame while it waits (in C: time.sleep)."""
    main = {"name": "main", "tid": threading.get_native_id(),
            "chain": _chain_here(sys._getframe()), "leaves": []}
    doc = {"pid": os.getpid(), "version": sys.version,
           "gil_enabled": getattr(sys, "_is_gil_enabled", lambda: True)(),
           "threads": [_truth[n] for n in sorted(_truth)] + [main]}
    path = sys.argv[1]
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(path + ".tmp", path)
    print("ready", flush=True)
    time.sleep(1e6)


def main():
    for name, fn in (("alpha", alpha_1), ("beta", beta_1), ("gamma", gamma_1),
                     ("delta", delta_1)):
        threading.Thread(target=fn, name=name, daemon=True).start()
    if not _all_in.wait(60):
        sys.exit("the spinning threads did not all start")
    wait_forever()


if __name__ == "__main__":
    main()
