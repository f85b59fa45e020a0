#!/usr/bin/env python3
"""What `sample --push` costs: the same run (bench/targets.py spin 31 under
Debian sid's python3.15, --every 1, so one profile a second) writing each
interval to a file (-o prof-%s.pb.gz) and pushing it to a Pyroscope
stand-in on loopback (an HTTP server in this process answering 200, so
its CPU is not the sampler's), interleaved so machine noise hits both
alike, at -r 1000 and at -r max.  Reported: the sampler's CPU seconds
(user + system, its sender thread included), samples per second and per
CPU second, and the push/files ratios.
Usage: bench/bench_push.py [--build build] [--secs 10] [--rounds 5]
"""
import argparse
import http.server
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading

from common import ROOT, SID, record, setup_sid, start_target, stop, tool_path

DEPTH = 31


class Ok(http.server.BaseHTTPRequestHandler):
    count = 0

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        Ok.count += 1
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def sampled(cmd):
    """Run one sampling command: (CPU seconds, samples/s) from its rusage
    and its summary."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    m = re.search(r"after ([\d.]+) s\. (\d+) samples", err)
    if proc.returncode != 0 or not m:
        sys.exit("benchmark command failed: %s\n%s" % (" ".join(cmd), err))
    return usage.ru_utime + usage.ru_stime, int(m.group(2)) / float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--secs", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    tool = tool_path(args.build)
    if not os.access(tool, os.X_OK):
        sys.exit("no %s (tools/build.sh)" % tool)
    setup_sid()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d" % server.server_address[1]
    target = start_target("spin", DEPTH)
    out = tempfile.mkdtemp(prefix="pyd-bench-push-")
    figures = []
    print("sample --every 1 for %g s of spin %d, pushing vs writing files, %d interleaved "
          "rounds (medians)" % (args.secs, DEPTH, args.rounds))
    print("%-26s %12s %12s %8s" % ("", "files", "push", "ratio"))
    try:
        for rate in ("1000", "max"):
            base = [tool, "sample", "-r", rate, "-d", str(args.secs), "--every", "1",
                    str(target.pid)]
            cmds = {"files": base + ["-o", os.path.join(out, "prof-%s.pb.gz")],
                    "push": base + ["--push", url]}
            got = {k: [] for k in cmds}
            for _ in range(args.rounds):
                for k, cmd in cmds.items():
                    got[k].append(sampled(cmd))
            cpu = {k: statistics.median(c for c, _ in v) for k, v in got.items()}
            sps = {k: statistics.median(s for _, s in v) for k, v in got.items()}
            for what, val, fmt in (("CPU s", cpu, "%12.3f"), ("samples/s", sps, "%12.0f")):
                ratio = val["push"] / val["files"]
                print(("%-26s " + fmt + " " + fmt + " %7.3fx")
                      % ("-r %s %s" % (rate, what), val["files"], val["push"], ratio))
                figures.append({"id": "-r %s %s" % (rate, what), "files": val["files"],
                                "push": val["push"], "ratio": ratio})
            per = {k: sps[k] * args.secs / cpu[k] for k in cmds}
            ratio = per["push"] / per["files"]
            print("%-26s %12.0f %12.0f %7.3fx" % ("-r %s samples/CPU s" % rate,
                                                  per["files"], per["push"], ratio))
            figures.append({"id": "-r %s samples per CPU s" % rate, "files": per["files"],
                            "push": per["push"], "ratio": ratio})
    finally:
        stop(target)
        server.shutdown()
        subprocess.run(["rm", "-rf", out])
    print("%d profiles pushed" % Ok.count)
    record("bench_push", figures, tool=tool,
           interpreters=["sid python3.15 (/usr/bin/python3.15 in %s)" % SID])
    return 0


if __name__ == "__main__":
    sys.exit(main())
