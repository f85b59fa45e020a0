#!/usr/bin/env python3
"""Dump benchmark: pystack-dump vs CPython 3.15's `profiling.sampling dump`.

Both tools dump the same Python 3.15 target (Debian sid's, from the chroot
tests/setup-sid.sh makes), interleaved in one run, so machine noise hits both
alike.  Reported: median wall time and peak RSS of each tool per scenario,
and our/anchor ratios.  Usage: bench/bench_dump.py [--build build] [--runs 20]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SID = os.environ.get("PYD_SID_DIR", "/var/cache/pystack-dump/sid")


def run_measured(cmd):
    """Wall seconds of one command, which must succeed."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit("benchmark command failed: %s\n%s" % (" ".join(cmd), err.decode()))
    return wall, out


def peak_rss_kib(cmd):
    """Peak RSS of a command, as GNU time reports it.  (wait4's ru_maxrss of
    a child we fork would include this Python process's pages from before
    the exec.)"""
    res = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, check=True)
    return int(res.stderr.split()[-1])


def start_target(kind, n):
    shutil.copy(os.path.join(HERE, "targets.py"), os.path.join(SID, "tmp", "pyd-bench-targets.py"))
    proc = subprocess.Popen(["chroot", SID, "/usr/bin/python3.15", "/tmp/pyd-bench-targets.py",
                             kind, str(n)], stdout=subprocess.PIPE)
    if proc.stdout.readline().strip() != b"ready":
        proc.kill()
        sys.exit("target did not start")
    return proc


def bench(target, tools, runs):
    rows = {}
    for label, cmd in tools:
        run_measured(cmd(target.pid))  # warm the page cache
    walls = {label: [] for label, _ in tools}
    for _ in range(runs):
        for label, cmd in tools:
            walls[label].append(run_measured(cmd(target.pid))[0])
    for label, cmd in tools:
        rss = max(peak_rss_kib(cmd(target.pid)) for _ in range(3))
        rows[label] = (statistics.median(walls[label]), rss)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    ours = os.path.join(args.build, "cli", "pystack-dump")
    if not os.path.exists("/usr/bin/time"):
        sys.exit("bench needs GNU time: apt-get install time")
    if subprocess.call([os.path.join(ROOT, "tests", "setup-sid.sh")]) != 0:
        sys.exit("the sid chroot (python3.15) could not be set up")
    tools = [
        ("pystack-dump", lambda pid: [ours, "--no-source", str(pid)]),
        ("pystack-dump --json", lambda pid: [ours, "--json", str(pid)]),
        ("profiling.sampling dump -a", lambda pid: ["chroot", SID, "/usr/bin/python3.15", "-m",
                                                    "profiling.sampling", "dump", "-a", str(pid)]),
    ]
    print("dump benchmark, target: Debian sid python3.15, %d interleaved runs each" % args.runs)
    print("%-22s %-28s %12s %12s" % ("scenario", "tool", "median ms", "peak RSS MB"))
    for name, kind, n in (("200-frame stack", "deep", 200), ("100 threads", "threads", 100)):
        target = start_target(kind, n)
        try:
            rows = bench(target, tools, args.runs)
        finally:
            target.kill()
            target.wait()
        anchor_wall, anchor_rss = rows[tools[-1][0]]
        for label, (wall, rss) in rows.items():
            print("%-22s %-28s %12.2f %12.2f" % (name, label, wall * 1e3, rss / 1024))
        wall, rss = rows["pystack-dump"]
        print("%-22s %-28s %11.1fx %11.1fx" % (name, "anchor / pystack-dump", anchor_wall / wall,
                                             anchor_rss / rss))
    return 0


if __name__ == "__main__":
    sys.exit(main())
