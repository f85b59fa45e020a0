#!/usr/bin/env python3
"""Check that the real pprof reads a profile of ours (stdlib only).

    python3 tests/check_pprof.py FILE.pb.gz [--expect NAME ...] [--pprof PATH]

pprof is $PYD_PPROF if set, else what tools/build-pprof.sh builds (once,
offline, from Debian's golang-github-google-pprof-dev).  The file must
pass `pprof -raw` (pprof parses and validates the whole profile) and
`pprof -top`, which must list every expected function: NAME matches a
function called NAME, or a method or nested function whose qualified
name ends in .NAME.  Prints one line, "check_pprof: OK ..." with the
total sample count pprof reports, and exits 0; else a message and 1.
Every pprof run has a time limit, so this never hangs.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD_TIMEOUT = 600  # a first build compiles pprof and its dependencies
RUN_TIMEOUT = 60


class Failure(Exception):
    pass


def run(cmd, timeout, env=None):
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, errors="replace", timeout=timeout,
                           env=env)
    except subprocess.TimeoutExpired:
        raise Failure(f"{cmd[0]} took more than {timeout} s: {' '.join(cmd)}")
    except OSError as e:
        raise Failure(f"cannot run {cmd[0]}: {e}")
    if r.returncode != 0:
        raise Failure(f"{' '.join(cmd)} exited {r.returncode}:\n"
                      f"{r.stderr.strip() or r.stdout.strip()}")
    return r.stdout


def find_pprof(path):
    path = path or os.environ.get("PYD_PPROF")
    if path:
        return path
    out = run([os.path.join(ROOT, "tools", "build-pprof.sh")], BUILD_TIMEOUT)
    return out.strip().splitlines()[-1]


def pprof(tool, args, tmp):
    # PPROF_TMPDIR: pprof keeps nothing of ours in $HOME; no browser, no
    # network: a local file and a text report need neither.
    env = dict(os.environ, PPROF_TMPDIR=tmp, HOME=tmp)
    return run([tool] + args, RUN_TIMEOUT, env)


def raw_sample_count(text):
    """Sum of the first value of every sample that -raw lists."""
    lines = text.splitlines()
    try:
        start = lines.index("Samples:") + 2  # skip the sample type line
    except ValueError:
        raise Failure("pprof -raw lists no samples section")
    total = 0
    for line in lines[start:]:
        m = re.match(r"\s*(\d+)\s+\d+:", line)
        if m:
            total += int(m.group(1))
        elif not line.startswith(" "):
            break
    return total


def top_functions(text):
    """The function names of pprof -top, and the total it reports."""
    m = re.search(r"of (\d+) total", text)
    if not m:
        raise Failure(f"no total in pprof -top output:\n{text}")
    names = []
    in_table = False
    for line in text.splitlines():
        if line.split()[:2] == ["flat", "flat%"]:
            in_table = True
        elif in_table:
            cols = line.split(None, 5)
            if len(cols) == 6:
                names.append(cols[5])
    return int(m.group(1)), names


def has_function(names, want):
    return any(n == want or n.endswith("." + want) for n in names)


def check(tool, path, expect):
    with tempfile.TemporaryDirectory(prefix="check_pprof.") as tmp:
        raw = pprof(tool, ["-raw", path], tmp)
        top = pprof(tool, ["-top", "-nodecount=0", "-nodefraction=0",
                           "-sample_index=samples", path], tmp)
    total, names = top_functions(top)
    raw_total = raw_sample_count(raw)
    if raw_total < total:
        raise Failure(f"pprof -raw lists {raw_total} samples, "
                      f"-top counts {total}")
    missing = [w for w in expect if not has_function(names, w)]
    if missing:
        raise Failure(f"pprof -top lacks {', '.join(missing)}; it has: "
                      f"{', '.join(names[:40])}")
    return total, len(names)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--expect", action="append", default=[], metavar="NAME",
                    help="a function pprof must list (repeatable)")
    ap.add_argument("--pprof", help="the pprof binary to use")
    a = ap.parse_args()
    try:
        if not os.path.isfile(a.file):
            raise Failure(f"no such file: {a.file}")
        total, nfuncs = check(find_pprof(a.pprof), a.file, a.expect)
    except Failure as e:
        print(f"check_pprof: FAIL {a.file}: {e}", file=sys.stderr)
        return 1
    print(f"check_pprof: OK {a.file}: {total} samples, {nfuncs} functions"
          + (f", found {' '.join(a.expect)}" if a.expect else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
