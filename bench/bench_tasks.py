#!/usr/bin/env python3
"""Task-graph benchmark: pystack-dump --tasks vs CPython's python -m asyncio pstree.

Both read the same Debian sid Python 3.14 target holding N pending tasks,
interleaved in one run so machine noise hits both alike.  Reported: median
wall time of each, the ratio, and the task count each saw (they must agree);
and, noise-free, the instructions (callgrind), system calls (strace -c) and
page faults (GNU time) of one run of ours, in all and per task.
Usage: bench/bench_tasks.py [--build build] [--tasks 10000] [--runs 9]
"""
import argparse
import json
import os
import statistics
import sys

from common import (ROOT, SID, copy_to_sid, count_instructions, count_page_faults,
                    count_syscalls, interleaved, record, run_measured, setup_sid, start_ready,
                    stop, tool_path)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--tasks", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--python", default="3.14")
    args = ap.parse_args()
    setup_sid()
    script = copy_to_sid("tasks_target.py", "pyd-bench-tasks.py")
    py = "/usr/bin/python" + args.python
    target = start_ready(["chroot", SID, py, script, str(args.tasks)])
    try:
        ours = [tool_path(args.build), "--tasks", "--json", str(target.pid)]
        anchor = ["chroot", SID, py, "-m", "asyncio", "pstree", str(target.pid)]
        walls = interleaved({"ours": ours, "anchor": anchor}, args.runs)
        t_ours, t_anchor = walls["ours"], walls["anchor"]
        seen = len(json.loads(run_measured(ours)[1])["tasks"])
        ins, calls, faults = (count_instructions(ours), count_syscalls(ours),
                              count_page_faults(ours))
    finally:
        stop(target)
    mo, ma = statistics.median(t_ours), statistics.median(t_anchor)
    print("task-graph benchmark: sid python%s, %d pending tasks (%d seen), %d interleaved runs"
          % (args.python, args.tasks, seen, args.runs))
    print("%-32s %10.1f ms" % ("pystack-dump --tasks --json", mo * 1e3))
    print("%-32s %10.1f ms" % ("python -m asyncio pstree", ma * 1e3))
    print("%-32s %10.1fx" % ("anchor / pystack-dump", ma / mo))
    per = {}
    for name, v in (("instructions", ins), ("syscalls", calls), ("page_faults", faults)):
        if v is not None and seen:
            print("%-32s %10d  (%.2f a task)" % (name.replace("_", " "), v, v / seen))
            per[name] = v
            per[name + "_per_task"] = round(v / seen, 2)
    record("bench_tasks", [dict({"id": "%d tasks" % args.tasks, "tasks": args.tasks,
                                 "seen": seen, "runs": args.runs,
                                 "pystack_dump_ms": mo * 1e3, "pstree_ms": ma * 1e3,
                                 "ratio": ma / mo}, **per)],
           tool=tool_path(args.build), interpreters=["sid python%s (%s in %s)" % (
               args.python, py, SID)])
    return 0 if seen >= args.tasks else 1


if __name__ == "__main__":
    sys.exit(main())
