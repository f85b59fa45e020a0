"""--save-snapshot then --snapshot: a live dump recorded, decoded the same
anywhere."""

import os

import pytest

from harness.dumps import compare, gt_sanity, parse_dump, roundtrip_errors
from harness.procs import TOOL_TIMEOUT, host_tmp, run, vlog
from harness.results import Result, settle
from harness.target import Target


SNAPSHOT_TARGETS = ["threads", "recursion", "generators", "names", "busy"]


def snapshot_roundtrip(interp, target, tool, tg, gt):
    """--json --save-snapshot on the live target, then --snapshot --json:
    the same document but for "source", and equal to the ground truth."""
    name = "snapshot:" + target
    snap = os.path.join(host_tmp(), "snap-" + tg.run_id)
    try:
        argv = [tool.path, "--json", "--save-snapshot", snap, str(tg.pid)]
        rc, out, err, secs = run(argv, TOOL_TIMEOUT)
        vlog("%s -> rc=%s in %.2fs" % (" ".join(argv), rc, secs))
        live, e = parse_dump(rc, out, err, secs)
        if e:
            return Result(name, "FAIL", "%s: %s" % (" ".join(argv), e))
        if not os.path.isfile(snap):
            return Result(name, "FAIL", "%s exited 0 but wrote no %s"
                          % (" ".join(argv), snap))
        size = os.path.getsize(snap)
        argv2 = [tool.path, "--snapshot", snap, "--json"]
        rep, e = parse_dump(*run(argv2, TOOL_TIMEOUT))
        if e:
            return Result(name, "FAIL", "%s: %s" % (" ".join(argv2), e))
        errs = roundtrip_errors(live, rep, "dump")
        errs += ["live dump with --save-snapshot: " + x for x in compare(gt, live, interp, tg.pid)]
        return Result(name, "FAIL" if errs else "PASS", "\n".join(errs),
                      info="%d bytes" % size)
    finally:
        if os.path.exists(snap):
            os.unlink(snap)




@pytest.mark.parametrize("target", SNAPSHOT_TARGETS)
def test_snapshot_roundtrip(interp, target, tool, request):
    """A snapshot of the live target decodes, anywhere, to the same dump;
    the recursion target's size is printed in the summary."""
    with Target(interp, target) as tg:
        gt = tg.settled_truth(gt_sanity)
        r = snapshot_roundtrip(interp, target, tool, tg, gt)
    if target == "recursion" and r.info:
        request.node.user_properties.append(("snapshot_bytes", int(r.info.split()[0])))
    settle(r, request.node)
