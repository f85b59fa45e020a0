"""Benchmark targets: `deep N` blocks under an N-frame stack, `locals N`
the same with six locals of different kinds in each frame, `threads N`
blocks in N threads (each a few frames deep), `spin N` runs a busy loop at
the bottom of an N-frame stack (<module> and N - 1 calls of spin_rec), for
the sampling benchmark, and `builtins N` a loop calling builtins there (the
Python stack stands still while C runs: the case a sampler that caches
unchanged frames does best on); `family N` forks N workers that each spin 31
frames deep while the parent waits for them; `sleepers N` forks N workers
that each block 30 frames deep, for the dump benchmark.  Prints "ready" when set up.  Runs on 3.6+."""
import os
import sys
import threading
import time


def deep(n):
    if n <= 1:
        print("ready", flush=True)
        time.sleep(1e6)
    deep(n - 1)


class Request(object):
    def __init__(self, n):
        self.n = n


def with_locals(n):
    ident, name = n, "frame-%d" % n
    ids = [n, n + 1, n + 2, n + 3, n + 4]
    opts = {"depth": n, "name": name, "ratio": n / 7.0}
    req, blob = Request(n), b"\x00payload" * 4
    if n <= 1:
        print("ready", flush=True)
        time.sleep(1e6)
    with_locals(n - 1)
    return ident, ids, opts, req, blob


def spin_rec(n, say_ready=True):
    if n <= 1:
        if say_ready:
            print("ready", flush=True)
        x = 0
        while True:
            x += 1
    spin_rec(n - 1, say_ready)


def greenlets(n):
    """n plain greenlets, each switched out 5 frames deep (greenlet is
    sid's python3-greenlet); the main greenlet sleeps."""
    import greenlet
    main = greenlet.getcurrent()

    def level(k):
        if k:
            return level(k - 1)
        main.switch()

    keep = [greenlet.greenlet(level) for _ in range(n)]
    for g in keep:
        g.switch(4)
    print("ready", flush=True)
    time.sleep(1e6)


def builtins_rec(n):
    if n <= 1:
        print("ready", flush=True)
        data = list(range(2000, 0, -1))
        while True:
            sorted(data)
            sum(data)
    builtins_rec(n - 1)


def family(n):
    import ctypes
    for _ in range(n):
        if os.fork() == 0:
            # PR_SET_PDEATHSIG, SIGKILL: a worker ends with the benchmark's target
            ctypes.CDLL(None).prctl(1, 9)
            spin_rec(30, False)
    print("ready", flush=True)
    os.wait()


def sleepers(n):
    import ctypes
    for _ in range(n):
        if os.fork() == 0:
            ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
            deep_quiet(30)
    print("ready", flush=True)
    os.wait()


def deep_quiet(n):
    if n <= 1:
        time.sleep(1e6)
    deep_quiet(n - 1)


def idle_thread(started):
    started.release()
    time.sleep(1e6)


def threads(n):
    started = threading.Semaphore(0)
    for _ in range(n - 1):
        threading.Thread(target=idle_thread, args=(started,), daemon=True).start()
        started.acquire()
    print("ready", flush=True)
    time.sleep(1e6)


if __name__ == "__main__":
    kind, n = sys.argv[1], int(sys.argv[2])
    # deep() itself adds frames below <module>: leave room for them.
    sys.setrecursionlimit(n + 100)
    if kind == "spin":
        spin_rec(n - 1)
    elif kind == "builtins":
        builtins_rec(n - 1)
    else:
        {"deep": deep, "locals": with_locals, "threads": threads, "family": family,
         "sleepers": sleepers, "greenlets": greenlets}[kind](n)
