#!/usr/bin/env python3
"""gdb benchmark: pystack-dump's `py-bt` (gdb-plugin/, no gdb Python) vs
CPython's own python-gdb.py `py-bt`, on a 1,000-frame stack.

One target (pyenv's CPython, which ships python3.X-gdb.py next to its
binary), three commands run in interleaved rounds so machine noise hits
them alike:
  gdb                     gdb -batch -nx -p PID            (gdb's start-up)
  gdb + pystack-dump      ... -x pystack-dump.gdb -ex py-bt
  gdb + python-gdb.py     ... -ex 'source python3.X-gdb.py' -ex py-bt
and, for py-bt -n, gdb's own bt against ours:
  gdb bt                  ... -ex bt
  gdb + py-bt -n          ... -x pystack-dump.gdb -ex 'py-bt -n'
The order turns each round.  Reported: median wall ms and peak RSS of
each, the ratio of the two py-bt, and each py-bt's ms beyond gdb's own
start-up, the median of each round's difference (goal for ours: <= 15 ms,
issue 31).  Then, inside one gdb session, what each step of ours costs:
sourcing the command file, the first py-bt (which loads the reader), a
second, and a bare `shell true` (each py-bt's pipe is one), timed by
`shell date` between the steps, less a pair of `shell date` with nothing
between (the same gdb, so its start-up's swing is not in them).
Usage: bench/bench_gdb.py [--build build-gdb] [--runs 20] [--python 3.12]
"""
import argparse
import glob
import os
import statistics
import sys

from common import ROOT, interleaved, peak_rss_kib, record, run_measured, start_ready, stop, tool_path

FRAMES = 1000


def find_python(minor):
    """pyenv's newest 3.X and its python3.X-gdb.py, or exit."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for d in sorted(glob.glob(os.path.join(root, "versions", minor + ".*")), reverse=True):
        exe = os.path.join(d, "bin", "python" + minor)
        gdb_py = os.path.join(d, "bin", "python%s-gdb.py" % minor)
        if os.access(exe, os.X_OK) and os.path.exists(gdb_py):
            return exe, gdb_py
    sys.exit("no pyenv %s with python%s-gdb.py under %s" % (minor, minor, root))


def paired_ms(walls, label, base):
    """What label takes beyond base, in ms: the median over the rounds of
    the difference of the two runs of a round.  gdb's own start-up (about
    280 ms) swings by more than the 15 ms measured; a difference of two
    medians took the swing of both, a round's pair shares its moment."""
    return statistics.median(a - b for a, b in zip(walls[label], walls[base])) * 1e3


MARK = "PYD-T"
STEPS = ["source", "first py-bt", "second py-bt", "shell true"]


def in_session(cmds, pid, runs):
    """{step: median ms} of STEPS inside one gdb session each run: the
    time between the `shell date` before and after the step, less that of
    two `shell date` with nothing between, whose spawns and waits are in
    every step's measure too."""
    date = ["-ex", "shell date +%s%%s%%N" % MARK]
    cmd = (["gdb", "-batch", "-nx", "-p", str(pid)] + date + date + ["-x", cmds] + date
           + ["-ex", "py-bt"] + date + ["-ex", "py-bt"] + date + ["-ex", "shell true"] + date)
    per_step = {step: [] for step in STEPS}
    for _ in range(runs):
        out = run_measured(cmd)[1].decode("utf-8", "replace")
        t = [int(line[len(MARK):]) / 1e6 for line in out.splitlines()
             if line.startswith(MARK) and line[len(MARK):].isdigit()]
        if len(t) != len(STEPS) + 2:
            sys.exit("gdb printed %d of the %d time marks: %s" % (len(t), len(STEPS) + 2,
                                                                   " ".join(cmd)))
        empty = t[1] - t[0]
        for i, step in enumerate(STEPS):
            per_step[step].append(t[i + 2] - t[i + 1] - empty)
    return {step: statistics.median(v) for step, v in per_step.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--python", default="3.12")
    args = ap.parse_args()
    cmds = os.path.join(os.path.abspath(args.build), "gdb-plugin", "pystack-dump.gdb")
    if not os.path.exists(cmds):
        sys.exit("no %s: build with tools/build.sh %s -Dgdb=enabled" % (cmds, args.build))
    exe, gdb_py = find_python(args.python)
    base = ["gdb", "-batch", "-nx", "-p"]
    tools = [
        ("gdb", lambda pid: base + [str(pid)]),
        ("gdb + pystack-dump", lambda pid: base + [str(pid), "-x", cmds, "-ex", "py-bt"]),
        ("gdb + python-gdb.py", lambda pid: base + [str(pid), "-ex", "source " + gdb_py,
                                                    "-ex", "py-bt"]),
        ("gdb bt", lambda pid: base + [str(pid), "-ex", "bt"]),
        ("gdb + py-bt -n", lambda pid: base + [str(pid), "-x", cmds, "-ex", "py-bt -n"]),
    ]
    target = start_ready([exe, os.path.join(ROOT, "bench", "targets.py"), "deep", str(FRAMES)])
    try:
        walls = interleaved({label: cmd(target.pid) for label, cmd in tools}, args.runs)
        rss = {label: max(peak_rss_kib(cmd(target.pid)) for _ in range(2))
               for label, cmd in tools}
        out = run_measured(tools[1][1](target.pid))[1].decode("utf-8", "replace")
        steps = in_session(cmds, target.pid, args.runs)
    finally:
        stop(target)
    frames = out.count('  File "')
    print("gdb benchmark: py-bt of a %d-frame stack (%s), %d interleaved runs each"
          % (FRAMES, exe, args.runs))
    print("pystack-dump's py-bt printed %d frames" % frames)
    med = {label: statistics.median(w) * 1e3 for label, w in walls.items()}
    beyond = {label: paired_ms(walls, label, "gdb") for label in walls}
    print("%-22s %12s %12s %16s" % ("command", "median ms", "peak RSS MB", "ms beyond gdb"))
    figures = []
    for label, _ in tools:
        print("%-22s %12.1f %12.1f %16.1f" % (label, med[label], rss[label] / 1024,
                                              beyond[label]))
        figures.append({"id": label, "median_ms": med[label], "peak_rss_mb": rss[label] / 1024,
                        "beyond_gdb_ms": beyond[label]})
    ours = beyond["gdb + pystack-dump"]
    theirs = beyond["gdb + python-gdb.py"]
    print("python-gdb.py / pystack-dump: %.1fx wall, %.1fx beyond gdb's start-up; "
          "goal <= 15 ms beyond: %s" % (med["gdb + python-gdb.py"] / med["gdb + pystack-dump"],
                                        theirs / ours if ours > 0 else float("inf"),
                                        "met" if ours <= 15 else "NOT met"))
    print("py-bt -n (gdb's unwinding, named and merged by pystack-dump) costs %.1f ms beyond "
          "gdb's own bt of the same stack: %.2fx its wall time"
          % (paired_ms(walls, "gdb + py-bt -n", "gdb bt"), med["gdb + py-bt -n"] / med["gdb bt"]))
    figures.append({"id": "python-gdb.py / pystack-dump",
                    "wall_ratio": med["gdb + python-gdb.py"] / med["gdb + pystack-dump"],
                    "beyond_gdb_ratio": theirs / ours if ours > 0 else None})
    figures.append({"id": "py-bt -n / gdb bt",
                    "beyond_bt_ms": paired_ms(walls, "gdb + py-bt -n", "gdb bt"),
                    "wall_ratio": med["gdb + py-bt -n"] / med["gdb bt"]})
    first = steps["source"] + steps["first py-bt"]
    print("Inside one gdb session, medians of %d runs (a `shell date` pair's own time taken "
          "out of each step): sourcing the command file %.1f ms, the first py-bt %.1f ms "
          "(loading the reader), a second py-bt %.1f ms; a bare `shell true` %.1f ms. "
          "Source and first py-bt: %.1f ms (goal <= 15 ms: %s)"
          % (args.runs, steps["source"], steps["first py-bt"], steps["second py-bt"],
             steps["shell true"], first, "met" if first <= 15 else "NOT met"))
    figures.append({"id": "in session", "source_ms": steps["source"],
                    "first_py_bt_ms": steps["first py-bt"],
                    "second_py_bt_ms": steps["second py-bt"],
                    "shell_true_ms": steps["shell true"],
                    "source_and_py_bt_ms": first})
    # gdb reads the command file a byte at a time: its size is the most of
    # what sourcing it costs (gen_gdb.c), the help file's only on `help`.
    sizes = {"bytes": os.path.getsize(cmds),
             "help_bytes": os.path.getsize(os.path.join(os.path.dirname(cmds),
                                                        "pystack-dump-help.gdb"))}
    print("command file: %(bytes)d bytes, read on `source`; help file: %(help_bytes)d bytes, "
          "read on the first `help`" % sizes)
    figures.append(dict(id="command file", **sizes))
    record("bench_gdb", figures, tool=tool_path(args.build), interpreters=[exe])
    return 0


if __name__ == "__main__":
    sys.exit(main())
