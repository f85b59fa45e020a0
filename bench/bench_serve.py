#!/usr/bin/env python3
"""What pystack-dump serve costs while a profile runs: the server's CPU
seconds per second profiled (at serve's default rate, 100 Hz) against
`pystack-dump sample` run directly on the same processes for the same
seconds at the same rate (one sample per process: sample takes one PID),
for 1 and 4 processes spinning 31 frames deep under sid's python3.15.
Runs interleaved; medians.

usage: bench/bench_serve.py [--build build] [--secs 10] [--rounds 3]"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

RATE = 100  # serve's default


def cpu_seconds(pid):
    """utime + stime of a live process, from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(tool, pids):
    proc = subprocess.Popen([tool, "serve", "-q", "--listen", "127.0.0.1:0"] +
                            [str(p) for p in pids], stderr=subprocess.PIPE)
    line = proc.stderr.readline().decode()
    m = re.search(r"127\.0\.0\.1:(\d+)/", line)
    if not m:
        proc.kill()
        sys.exit("serve did not start: %s" % line)
    return proc, int(m[1])


def serve_round(server, port, secs):
    """CPU seconds of the server over one profile of secs."""
    before = cpu_seconds(server.pid)
    url = "http://127.0.0.1:%d/debug/pprof/profile?seconds=%g" % (port, secs)
    with urllib.request.urlopen(url, timeout=secs + 60) as r:
        body = r.read()
    if r.status != 200 or body[:2] != b"\x1f\x8b":
        sys.exit("serve answered %s" % r.status)
    return cpu_seconds(server.pid) - before


def sample_round(tool, pids, secs):
    """CPU seconds of one pystack-dump sample per process, run at once."""
    procs = [subprocess.Popen([tool, "sample", "-q", "-r", str(RATE), "-d", str(secs),
                               "-f", "pprof", "-o", "/dev/null", str(p)])
             for p in pids]
    total = 0.0
    for p in procs:
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode:
            sys.exit("sample exited %s" % p.returncode)
        total += ru.ru_utime + ru.ru_stime
    return total


def measure(tool, n, secs, rounds):
    targets = [common.start_target("spin", 31) for _ in range(n)]
    pids = [t.pid for t in targets]
    server, port = start_server(tool, pids)
    served, direct = [], []
    try:
        for _ in range(rounds):
            served.append(serve_round(server, port, secs) / secs)
            direct.append(sample_round(tool, pids, secs) / secs)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()
        for t in targets:
            common.stop(t)
    return statistics.median(served), statistics.median(direct)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(common.ROOT, "build"))
    ap.add_argument("--secs", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tool = common.tool_path(args.build)
    common.setup_sid()
    rows = []
    print("CPU seconds per profiled second at %d Hz (median of %d rounds of %g s):"
          % (RATE, args.rounds, args.secs))
    for n in (1, 4):
        served, direct = measure(tool, n, args.secs, args.rounds)
        what = "%d process%s" % (n, "" if n == 1 else "es")
        print("  %-12s serve %.4f (%.4f per process)   sample %.4f   serve/sample %.2fx"
              % (what, served, served / n, direct, served / direct if direct else 0))
        rows += [
            {"id": "%s | serve" % what, "cpu_s_per_s": served,
             "cpu_ms_per_s_per_process": 1000 * served / n, "processes": n},
            {"id": "%s | sample" % what, "cpu_s_per_s": direct,
             "cpu_ms_per_s_per_process": 1000 * direct / n, "processes": n},
            {"id": "%s | serve / sample" % what,
             "ratio": served / direct if direct else 0.0},
        ]
    common.record("bench_serve", rows, tool=tool,
                  interpreters=["sid python3.15 (/usr/bin/python3.15 in %s)" % common.SID])


if __name__ == "__main__":
    main()
