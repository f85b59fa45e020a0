#!/usr/bin/env python3
"""Dump benchmark: pystack-dump vs CPython 3.15's `profiling.sampling dump`.

Both tools dump the same Python 3.15 target (Debian sid's, from the chroot
tests/setup-sid.sh makes), interleaved in one run (the order turned each
round), so machine noise hits both
alike.  Scenarios: a 200-frame stack, 20 and 100 threads, and a 200-frame
stack whose frames hold six locals each (an int, a str, a list, a dict,
an object, a bytes), and a parent with 4 forked children blocked 30
frames deep; each also dumped with --locals (goal: under 50 ms),
--native (libdwfl unwinding every thread, the target paused),
--native-all (the interpreter's frames too, with their lines) and
--subprocesses (every descendant: 1 + 4 processes in the last scenario);
then --greenlets of 1,000 greenlets (no anchor shows greenlets).  The
plain dump is also run by the static binary (tools/build-static.sh, with
--static-build), the one the release wheel and `pip install` ship
(README): its row and its own anchor ratio are left out, with a note, if
it is not built.
Reported: median wall time and peak RSS of each tool per scenario, the
anchor/ours ratios, and what each option costs over the plain dump; and
for each of ours the instructions (callgrind, the dynamic loader's
included), system calls (strace -c) and page faults (GNU time) of one
dump, which the machine's noise does not move.
Usage: bench/bench_dump.py [--build build] [--static-build build-static] [--runs 20]
"""
import argparse
import os
import statistics
import sys

from common import (ROOT, SID, count_instructions, count_page_faults, count_syscalls,
                    from_disk, interleaved, peak_rss_kib,
                    record, run_measured, setup_sid, start_target, stop, tool_path)

# Issue 12's goal: the dump with locals of a 200-frame stack (the locals
# scenario) takes under this long, median.
LOCALS_GOAL_MS = 50.0
STATIC = "pystack-dump (static)"    # the row of the static binary's plain dump


def bench(target, tools, runs):
    rows = {}
    walls = interleaved({label: cmd(target.pid) for label, cmd in tools}, runs)
    for label, cmd in tools:
        rss = max(peak_rss_kib(cmd(target.pid)) for _ in range(3))
        rows[label] = (statistics.median(walls[label]), rss)
    return rows


def counts(target, tools):
    """{label: (instructions, syscalls, page faults)} of one dump by each
    of ours."""
    return {label: (count_instructions(cmd(target.pid)), count_syscalls(cmd(target.pid)),
                    count_page_faults(cmd(target.pid)))
            for label, cmd in tools if label.startswith("pystack-dump")}


def greenlets(ours, runs, n=1000):
    """--greenlets of n switched-out greenlets 5 frames deep, which no
    anchor shows: its time and what it reads them with."""
    target = start_target("greenlets", n)
    try:
        cmd = [ours, "--greenlets", "--no-source", str(target.pid)]
        run_measured(cmd)  # warm the page cache
        wall = statistics.median(run_measured(cmd)[0] for _ in range(runs))
        ins, calls = count_instructions(cmd), count_syscalls(cmd)
        faults = count_page_faults(cmd)
    finally:
        stop(target)
    label = "%d greenlets" % n
    print("%-22s %-28s %12.2f %12s %14s %9s %7s" % (
        label, "pystack-dump --greenlets", wall * 1e3, "",
        "-" if ins is None else "{:,}".format(ins), "-" if calls is None else calls, faults))
    return {"id": "%s | pystack-dump --greenlets" % label, "median_ms": wall * 1e3,
            "instructions": ins, "syscalls": calls, "page_faults": faults}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--static-build", default=os.path.join(ROOT, "build-static"))
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    ours = tool_path(args.build)
    static = tool_path(args.static_build)
    from_disk(ours, static)
    setup_sid()
    tools = [
        ("pystack-dump", lambda pid: [ours, "--no-source", str(pid)]),
        ("pystack-dump --json", lambda pid: [ours, "--json", str(pid)]),
        ("pystack-dump --locals", lambda pid: [ours, "--locals", "--no-source", str(pid)]),
        ("pystack-dump --locals --json", lambda pid: [ours, "--locals", "--json", str(pid)]),
        ("pystack-dump --native", lambda pid: [ours, "--native", "--no-source", str(pid)]),
        ("pystack-dump --native-all", lambda pid: [ours, "--native-all", "--no-source",
                                                   str(pid)]),
        ("pystack-dump --subprocesses", lambda pid: [ours, "--subprocesses", "--no-source",
                                                     str(pid)]),
        ("profiling.sampling dump -a", lambda pid: ["chroot", SID, "/usr/bin/python3.15", "-m",
                                                    "profiling.sampling", "dump", "-a", str(pid)]),
    ]
    if os.access(static, os.X_OK):
        tools.insert(-1, (STATIC, lambda pid: [static, "--no-source", str(pid)]))
    else:
        print("note: no static binary at %s (tools/build-static.sh): its rows are left out"
              % static)
    print("dump benchmark, target: Debian sid python3.15, %d interleaved runs each" % args.runs)
    print("%-22s %-28s %12s %12s %14s %9s %7s" % ("scenario", "tool", "median ms",
                                                  "peak RSS MB", "instructions", "syscalls",
                                                  "faults"))
    figures = []                        # what record() writes: one row per line printed
    for name, kind, n in (("200-frame stack", "deep", 200), ("20 threads", "threads", 20),
                          ("100 threads", "threads", 100), ("200 frames, 6 locals", "locals", 200),
                          ("4 child processes", "sleepers", 4)):
        target = start_target(kind, n)
        try:
            rows = bench(target, tools, args.runs)
            counted = counts(target, tools)
        finally:
            stop(target)
        anchor_wall, anchor_rss = rows[tools[-1][0]]
        for label, (wall, rss) in rows.items():
            ins, calls, faults = counted.get(label, (None, None, None))
            print("%-22s %-28s %12.2f %12.2f %14s %9s %7s" % (
                name, label, wall * 1e3, rss / 1024, "-" if ins is None else "{:,}".format(ins),
                "-" if calls is None else calls, "-" if faults is None else faults))
            figures.append({"id": "%s | %s" % (name, label), "median_ms": wall * 1e3,
                            "peak_rss_mb": rss / 1024, "instructions": ins, "syscalls": calls,
                            "page_faults": faults})
        wall, rss = rows["pystack-dump"]
        print("%-22s %-28s %11.1fx %11.1fx" % (name, "anchor / pystack-dump", anchor_wall / wall,
                                             anchor_rss / rss))
        figures.append({"id": "%s | anchor / pystack-dump" % name,
                        "wall_ratio": anchor_wall / wall, "rss_ratio": anchor_rss / rss})
        if STATIC in rows:
            swall, srss = rows[STATIC]
            print("%-22s %-28s %11.1fx %11.1fx" % (name, "anchor / " + STATIC,
                                                 anchor_wall / swall, anchor_rss / srss))
            figures.append({"id": "%s | anchor / %s" % (name, STATIC),
                            "wall_ratio": anchor_wall / swall, "rss_ratio": anchor_rss / srss})
        for opt in ("--locals", "--native", "--native-all", "--subprocesses"):
            owall, orss = rows["pystack-dump " + opt]
            print("%-22s %-28s %11.2fx %11.2fx" % (name, opt + " / pystack-dump", owall / wall,
                                                 orss / rss))
            figures.append({"id": "%s | %s / pystack-dump" % (name, opt),
                            "wall_ratio": owall / wall, "rss_ratio": orss / rss})
        ins, calls, faults = counted["pystack-dump"]
        if kind == "threads" and ins is not None and calls is not None:
            print("%-22s %-28s %12s %12s %14s %9s %7s" % (
                name, "pystack-dump, per thread", "", "", "{:,}".format(ins // n),
                "%.1f" % (calls / n), "%.1f" % (faults / n)))
            figures.append({"id": "%s | pystack-dump per thread" % name,
                            "instructions": ins // n, "syscalls": round(calls / n, 1),
                            "page_faults": round(faults / n, 1)})
        if kind == "locals":
            for label in ("pystack-dump --locals", "pystack-dump --locals --json"):
                ms = rows[label][0] * 1e3
                print("%-22s %-28s %12s" % (name, label, "goal < %.0f ms: %s" % (
                    LOCALS_GOAL_MS, "met" if ms < LOCALS_GOAL_MS else "MISSED")))
    figures.append(greenlets(ours, args.runs))
    record("bench_dump", figures, tool=ours,
           interpreters=["sid python3.15 (/usr/bin/python3.15 in %s)" % SID])
    return 0


if __name__ == "__main__":
    sys.exit(main())
