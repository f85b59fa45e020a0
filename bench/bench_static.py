#!/usr/bin/env python3
"""The static pystack-dump (tools/build-static.sh) against the dynamic build,
side by side: the size of each file (as built and stripped), start-up
(`--version`), and the dump of a 200-frame stack, plain and with --native
(libdwfl), of Debian sid's python3.15 (tests/setup-sid.sh), interleaved in
one run so machine noise hits both alike.  Reported: median wall time and
peak RSS of each, and the static/dynamic ratios.
Usage: bench/bench_static.py [--build build] [--static-build build-static] [--runs 30]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

from common import (ROOT, SID, from_disk, interleaved, peak_rss_kib, record, setup_sid,
                    start_target, stop, tool_path)


def sizes(path):
    """(bytes as built, bytes stripped)"""
    with tempfile.NamedTemporaryFile() as f:
        subprocess.run(["strip", "-o", f.name, path], check=True)
        return os.path.getsize(path), os.path.getsize(f.name)


def median_ms(cmds, runs):
    """{label: median ms} of commands run interleaved."""
    return {label: statistics.median(w) * 1e3
            for label, w in interleaved(cmds, runs).items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--static-build", default=os.path.join(ROOT, "build-static"))
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    tools = {"dynamic": tool_path(args.build), "static": tool_path(args.static_build)}
    for path in tools.values():
        if not os.access(path, os.X_OK):
            sys.exit("no %s (tools/build.sh, tools/build-static.sh)" % path)
    setup_sid()
    print("static vs dynamic pystack-dump, %d interleaved runs each" % args.runs)
    print("%-26s %14s %14s %8s" % ("", "dynamic", "static", "ratio"))
    size = {k: sizes(p) for k, p in tools.items()}
    figures = []
    for i, what in enumerate(("size as built (KiB)", "size stripped (KiB)")):
        d, s = size["dynamic"][i] / 1024, size["static"][i] / 1024
        print("%-26s %14.0f %14.0f %7.2fx" % (what, d, s, s / d))
        figures.append({"id": what, "dynamic": d, "static": s, "ratio": s / d})
    from_disk(*tools.values())  # after strip read them
    target = start_target("deep", 200)
    try:
        pid = str(target.pid)
        for what, extra in (("start-up --version", ["--version"]),
                            ("200-frame dump", ["--no-source", pid]),
                            ("200-frame dump --native", ["--native", "--no-source", pid])):
            cmds = {k: [p] + extra for k, p in tools.items()}
            ms = median_ms(cmds, args.runs)
            rss = {k: max(peak_rss_kib(c) for _ in range(3)) / 1024 for k, c in cmds.items()}
            print("%-26s %14.2f %14.2f %7.2fx" % (what + " (ms)", ms["dynamic"], ms["static"],
                                                  ms["static"] / ms["dynamic"]))
            print("%-26s %14.2f %14.2f %7.2fx" % ("  peak RSS (MB)", rss["dynamic"],
                                                  rss["static"], rss["static"] / rss["dynamic"]))
            figures.append({"id": what + " (ms)", "dynamic": ms["dynamic"],
                            "static": ms["static"], "ratio": ms["static"] / ms["dynamic"]})
            figures.append({"id": what + " peak RSS (MB)", "dynamic": rss["dynamic"],
                            "static": rss["static"], "ratio": rss["static"] / rss["dynamic"]})
    finally:
        stop(target)
    record("bench_static", figures, tool=tools["dynamic"],
           interpreters=["sid python3.15 (/usr/bin/python3.15 in %s)" % SID])
    return 0


if __name__ == "__main__":
    sys.exit(main())
