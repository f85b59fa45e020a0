#!/usr/bin/env python3
"""What never showing a torn stack costs: pystack-dump against another
build of it (--vs, e.g. the release before) on six threads that live in
generators (tests/targets/gen_races.py: a generator expression consumed
by sum(), a for loop, a pipeline, a yield from chain, an async generator
and coroutines driven by hand), whose stacks change millions of times a
second.  Interleaved rounds of `sample --rate max` and of dumps, so
machine noise hits both alike.  Reported per interpreter and build:
rounds per second, reads per round, errors (rounds that dropped a torn
stack), samples and dumped stacks cut short without a word (a worker
thread's stack without threading's _bootstrap under it), and the ratios.

Usage: bench/bench_races.py --vs OTHER_BUILD [--build build] [--rounds 3]
           [--secs 3] [--dumps 100]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from common import ROOT, SID, record, setup_sid, stop, tool_path

TARGETS = os.path.join(ROOT, "tests", "targets")
# One of each way a stack's start is known: sid's 3.15 (the anchor of
# every bench; its thread's base frame), 3.14 (the first frame of its data
# stack), pyenv's 3.12 (the same, and its threads can wait for the GIL in
# a state no re-read makes whole) and 3.10 (frame objects).
PYENV = os.path.expanduser("~/.pyenv/versions")
INTERPS = [("sid-3.15", "/usr/bin/python3.15", True),
           ("sid-3.14", "/usr/bin/python3.14", True),
           ("pyenv-3.12", PYENV + "/3.12.1/bin/python3.12", False),
           ("pyenv-3.10", PYENV + "/3.10.13/bin/python3.10", False)]
SUMMARY = re.compile(r"in (\d+) rounds \((\d+) rounds/s\), (\d+) errors .* ([\d.]+) reads per round")


def start(python, chroot):
    """gen_races.py under python; returns the process once its ground
    truth is written (its threads are all in their loops)."""
    tmp = tempfile.mkdtemp(dir=os.path.join(SID, "tmp") if chroot else None)
    for f in ("gen_races.py", "_pyd_common.py"):
        shutil.copy(os.path.join(TARGETS, f), tmp)
    inside = tmp[len(SID):] if chroot else tmp
    cmd = [python, "-B", os.path.join(inside, "gen_races.py"), os.path.join(inside, "gt.json")]
    proc = subprocess.Popen((["chroot", SID] if chroot else []) + cmd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        if os.path.exists(os.path.join(tmp, "gt.json")):
            return proc, tmp
        time.sleep(0.05)
    stop(proc)
    sys.exit("gen_races.py did not start under %s" % python)


def cut_short(frames_outermost_first):
    return not any("_bootstrap" in f for f in frames_outermost_first)


def sample(tool, pid, secs):
    """(rounds/s, reads per round, errors, samples, worker samples cut short)."""
    with tempfile.NamedTemporaryFile(suffix=".collapsed") as out:
        res = subprocess.run([tool, "sample", "-r", "max", "-d", str(secs), "-f", "collapsed",
                              "--threads", "-o", out.name, str(pid)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
        m = SUMMARY.search(res.stderr.decode())
        samples = short = 0
        for line in open(out.name):
            stack, n = line.rsplit(" ", 1)
            frames = stack.split(";")
            samples += int(n)
            if "MainThread" not in frames[0] and cut_short(frames[1:]):
                short += int(n)
    return int(m.group(2)), float(m.group(4)), int(m.group(3)), samples, short


def dumps(tool, pid, n):
    """(worker stacks read, marked torn, cut short without a word)."""
    read = torn = short = 0
    for _ in range(n):
        res = subprocess.run([tool, "--json", str(pid)], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
        for t in json.loads(res.stdout)["threads"]:
            if t["name"] == "MainThread":
                continue
            read += 1
            if t["error"]:
                torn += 1
            elif cut_short([f["function"] for f in reversed(t["frames"])]):
                short += 1
    return read, torn, short


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--vs", required=True, help="the other build directory")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--secs", type=float, default=3)
    ap.add_argument("--dumps", type=int, default=100)
    a = ap.parse_args()
    setup_sid()
    tools = [("this", tool_path(a.build)), ("vs", tool_path(a.vs))]
    print("## `sample --rate max` and dumps of six threads living in generators, "
          "%d interleaved rounds of %g s and %d dumps\n" % (a.rounds, a.secs, a.dumps))
    print("| interpreter | build | rounds/s | reads/round | errors | samples | cut short "
          "| dumped stacks | marked torn | cut short |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    figures, measured = [], []
    for label, python, chroot in INTERPS:
        if not os.path.exists((SID if chroot else "") + python):
            print("| %s | (not installed: skipped) |||||||||" % label)
            continue
        measured.append("%s (%s%s)" % (label, python, " in " + SID if chroot else ""))
        proc, tmp = start(python, chroot)
        try:
            got = {b: [] for b, _ in tools}
            dumped = {b: (0, 0, 0) for b, _ in tools}
            for _ in range(a.rounds):
                for b, tool in tools:
                    got[b].append(sample(tool, proc.pid, a.secs))
                    d = dumps(tool, proc.pid, a.dumps // a.rounds)
                    dumped[b] = tuple(x + y for x, y in zip(dumped[b], d))
        finally:
            stop(proc)
            shutil.rmtree(tmp, ignore_errors=True)
        rates = {}
        for b, _ in tools:
            runs = got[b]
            rates[b] = statistics.median(r[0] for r in runs)
            row = (rates[b], statistics.median(r[1] for r in runs), sum(r[2] for r in runs),
                   sum(r[3] for r in runs), sum(r[4] for r in runs)) + dumped[b]
            print("| %s | %s | %d | %.2f | %d | %d | %d | %d | %d | %d |" % ((label, b) + row))
            figures.append(dict(zip(("rounds_per_s", "reads_per_round", "errors", "samples",
                                     "samples_cut_short", "dumped", "dumps_torn",
                                     "dumps_cut_short"), row), id="%s | %s" % (label, b)))
        print("| %s | this/vs | **%.2fx** |||||||||" % (label, rates["this"] / rates["vs"]))
        figures.append({"id": "%s | this/vs" % label, "ratio": rates["this"] / rates["vs"]})
    record("bench_races", figures, tool=tools[0][1], interpreters=measured)


if __name__ == "__main__":
    main()
