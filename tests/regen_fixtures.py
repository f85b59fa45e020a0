#!/usr/bin/env python3
"""Record the snapshot fixtures of tests/fixtures from live targets.

    python3 tests/regen_fixtures.py [--build build] [--only LABELS]

Each is LABEL-TARGET.{snap,ground_truth.json,dump.json|tasks.json}: a
snapshot, the target's own ground truth, and what pystack-dump printed live.
tests/test_fixtures.py decodes them on every machine."""

import argparse
import os
import re
import shutil
import sys

from harness.dumps import compare, first_difference, parse_dump, roundtrip_errors, without_source
from harness.interps import FIXTURES_DIR, REPO, SID_DIR_DEFAULT, discover, prepare_chroot
from harness.procs import TOOL_TIMEOUT, host_tmp, kill_all, run
from harness.target import Target, Tool
from harness.tasks import (compare_tasks, parse_tasks, tasks_run, wait_all_sleeping,
                           wait_tasks_truth)


# What tests/fixtures holds: (interpreter labels, target, kind); a "dump"
# fixture is LABEL-TARGET.{snap,ground_truth.json,dump.json} (pystack-dump
# --json), a "tasks" one LABEL-TARGET.{snap,ground_truth.json,tasks.json}
# (--tasks --json).  Together they decode every supported version from a
# snapshot, on any machine.
_SID = ["sid-3.13", "sid-3.14", "sid-3.15"]
FIXTURE_SETS = [
    (_SID, "threads", "dump"),
    (_SID, "names", "dump"),
    (["pyenv-3.6", "pyenv-3.7", "pyenv-3.8", "pyenv-3.9", "pyenv-3.10", "pyenv-3.11",
      "deb-3.11d", "pyenv-3.12"], "threads", "dump"),
    (["pyenv-3.7", "pyenv-3.8", "pyenv-3.9", "pyenv-3.10", "pyenv-3.11", "pyenv-3.12",
      "pyenv-3.13", "sid-3.14", "sid-3.15"], "asyncio_graph", "tasks"),
]
FIXTURE_MAX_BYTES = 100 * 1024


def _record_dump(interp, target, tool, snap):
    """(gt bytes, live --json bytes, errors) from a live target."""
    with Target(interp, target) as tg:
        gt = tg.wait_ground_truth()
        tg.wait_settled()
        argv = [tool.path, "--json", "--save-snapshot", snap, str(tg.pid)]
        rc, out, err, secs = run(argv, TOOL_TIMEOUT)
        live, e = parse_dump(rc, out, err, secs)
        errs = [e] if e else compare(gt, live, interp, tg.pid)
        with open(tg.gt_host, "rb") as f:
            gt_bytes = f.read()
    if not errs:
        rep, e = parse_dump(*run([tool.path, "--snapshot", snap, "--json"], TOOL_TIMEOUT))
        d = e or first_difference(without_source(live), without_source(rep))
        if d:
            errs.append("snapshot does not decode like the live dump: %s" % d)
    return gt_bytes, out, errs


def _record_tasks(interp, target, tool, snap):
    """The same with --tasks --json, taken --locked (a consistent graph)."""
    with Target(interp, target) as tg:
        gt = wait_tasks_truth(tg)
        wait_all_sleeping(tg.pid)
        argv, rc, out, err, secs = tasks_run(tool, ["--json", "--locked", "--save-snapshot",
                                                    snap, str(tg.pid)])
        live, e = parse_tasks(argv, rc, out, err, secs)
        errs = [e] if e else compare_tasks(gt, live, interp)
        with open(tg.gt_host, "rb") as f:
            gt_bytes = f.read()
    if not errs:
        argv = [tool.path, "--snapshot", snap, "--tasks", "--json"]
        rc, rout, rerr, secs = run(argv, TOOL_TIMEOUT)
        rep, e = parse_tasks(argv, rc, rout or b"", rerr or b"", secs)
        errs += [e] if e else roundtrip_errors(live, rep, "graph")
    return gt_bytes, out, errs


def regen_fixtures(tool, sid_dir, only=()):
    """Record the fixtures FIXTURE_SETS names (those of the interpreters
    in only, if given) from live targets into tests/fixtures."""
    interps = dict((i.label, i) for i in discover(sid_dir))
    err = prepare_chroot(sid_dir)
    if err:
        print("FAIL: " + err)
        return 1
    os.makedirs(FIXTURES_DIR, exist_ok=True)
    failed = 0
    for labels, target, kind in FIXTURE_SETS:
        for label in labels:
            interp = interps[label]
            if only and not any(interp.matches(t) for t in only):
                continue
            stem = "%s-%s" % (label, target)
            if interp.missing:
                print("FAIL %s: interpreter missing: %s" % (stem, interp.missing))
                failed += 1
                continue
            snap = os.path.join(host_tmp(), stem + ".snap")
            record = _record_tasks if kind == "tasks" else _record_dump
            gt_bytes, out, errs = record(interp, target, tool, snap)
            size = os.path.getsize(snap) if os.path.exists(snap) else 0
            if size > FIXTURE_MAX_BYTES:
                errs.append("snapshot is %d bytes, more than %d: use a smaller target"
                            % (size, FIXTURE_MAX_BYTES))
            if errs:
                print("FAIL %s: %s" % (stem, "\n    ".join(errs)))
                failed += 1
                continue
            shutil.copyfile(snap, os.path.join(FIXTURES_DIR, stem + ".snap"))
            with open(os.path.join(FIXTURES_DIR, stem + ".ground_truth.json"), "wb") as f:
                f.write(gt_bytes)
            with open(os.path.join(FIXTURES_DIR, "%s.%s.json" % (stem, kind)), "wb") as f:
                f.write(out)
            os.unlink(snap)
            print("wrote %s/%s.{snap,ground_truth.json,%s.json} (snapshot %d bytes)"
                  % (os.path.relpath(FIXTURES_DIR, REPO), stem, kind, size))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"),
                    help="build directory (default: %(default)s)")
    ap.add_argument("--only", action="append", default=[],
                    help="only these interpreters (comma separated; repeatable): a label "
                         "such as pyenv-3.12 or sid-3.15, a minor version, a source")
    args = ap.parse_args()
    tool = Tool(os.path.join(os.path.abspath(args.build), "cli", "pystack-dump"))
    if not (os.path.isfile(tool.path) and os.access(tool.path, os.X_OK)):
        ap.error("%s not found: build it first" % tool.path)
    only = [t for o in args.only for t in re.split(r"[,\s]+", o) if t]
    try:
        return regen_fixtures(tool, os.environ.get("PYD_SID_DIR", SID_DIR_DEFAULT), only)
    finally:
        kill_all()


if __name__ == "__main__":
    sys.exit(main())
