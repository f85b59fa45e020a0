#!/usr/bin/env python3
"""Task-graph benchmark: pystack-dump --tasks vs CPython's python -m asyncio pstree.

Both read the same Debian sid Python 3.14 target holding N pending tasks,
interleaved in one run so machine noise hits both alike.  Reported: median
wall time of each, the ratio, and the task count each saw (they must agree).
Usage: bench/bench_tasks.py [--build build] [--tasks 10000] [--runs 9]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SID = os.environ.get("PYD_SID_DIR", "/var/cache/pystack-dump/sid")


def timed(cmd):
    start = time.perf_counter()
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    if res.returncode != 0:
        sys.exit("benchmark command failed: %s\n%s" % (" ".join(cmd), res.stderr.decode()))
    return wall, res.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--tasks", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--python", default="3.14")
    args = ap.parse_args()
    if subprocess.call([os.path.join(ROOT, "tests", "setup-sid.sh")]) != 0:
        sys.exit("the sid chroot could not be set up")
    shutil.copy(os.path.join(HERE, "tasks_target.py"), os.path.join(SID, "tmp", "pyd-bench-tasks.py"))
    py = "/usr/bin/python" + args.python
    target = subprocess.Popen(["chroot", SID, py, "/tmp/pyd-bench-tasks.py", str(args.tasks)],
                              stdout=subprocess.PIPE)
    try:
        if target.stdout.readline().strip() != b"ready":
            sys.exit("target did not start")
        ours = [os.path.join(args.build, "cli", "pystack-dump"), "--tasks", "--json",
                str(target.pid)]
        anchor = ["chroot", SID, py, "-m", "asyncio", "pstree", str(target.pid)]
        timed(ours), timed(anchor)  # warm caches
        t_ours, t_anchor = [], []
        for _ in range(args.runs):
            w, out = timed(ours)
            t_ours.append(w)
            t_anchor.append(timed(anchor)[0])
        seen = len(json.loads(out)["tasks"])
    finally:
        target.kill()
        target.wait()
    mo, ma = statistics.median(t_ours), statistics.median(t_anchor)
    print("task-graph benchmark: sid python%s, %d pending tasks (%d seen), %d interleaved runs"
          % (args.python, args.tasks, seen, args.runs))
    print("%-32s %10.1f ms" % ("pystack-dump --tasks --json", mo * 1e3))
    print("%-32s %10.1f ms" % ("python -m asyncio pstree", ma * 1e3))
    print("%-32s %10.1fx" % ("anchor / pystack-dump", ma / mo))
    return 0 if seen >= args.tasks else 1


if __name__ == "__main__":
    sys.exit(main())
