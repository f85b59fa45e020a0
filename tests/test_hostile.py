"""Hostile memory: a target whose thread-state list loops back (damaged
with ctypes after it recorded its ground truth, as a heap corruption
would).  The dump shows every thread read before the loop, says the
memory is corrupt and exits 9, live and replayed from a snapshot; the
sampler samples what it can read and says the same; nothing crashes,
hangs or grows."""

import json
import os
import time

import pytest

from harness.cores import remove
from harness.dumps import compare, gt_sanity
from harness.procs import TOOL_TIMEOUT, crashed, host_tmp, run, short
from harness.results import Result, settle
from harness.target import Target

CORRUPT = b"the interpreter's memory is corrupt: the thread list of interpreter"


def wait_file(path, timeout=10.0):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if time.time() > deadline:
            raise AssertionError("the target never wrote %s" % path)
        time.sleep(0.05)


def corrupt_dump_errors(argv, gt, interp, pid):
    """pystack-dump ARGV: exit 9, the corruption named on stderr and in
    the JSON, and every thread of the ground truth whole."""
    rc, out, err, secs = run(argv, TOOL_TIMEOUT)
    if rc is None or crashed(rc):
        return ["%s: exit %s after %.1fs; stderr: %s" % (" ".join(argv), rc, secs, short(err))]
    errs = []
    if rc != 9:
        errs.append("%s exited %s, expected 9; stderr: %s" % (" ".join(argv), rc, short(err)))
    if CORRUPT not in err:
        errs.append("stderr does not say the thread list is corrupt: %s" % short(err))
    try:
        doc = json.loads(out.decode("utf-8"))
    except ValueError as e:
        return errs + ["output is not JSON (%s): %s" % (e, short(out))]
    if "loops back to thread state 0x" not in (doc.get("corrupt") or ""):
        errs.append("JSON \"corrupt\" is %r" % (doc.get("corrupt"),))
    return errs + compare(gt, doc, interp, pid)


@pytest.mark.parametrize("mode", ["self", "back"])
def test_looping_thread_list(interp, tool, mode, request):
    """The last thread state points at itself (self) or at the first
    (back): dump, snapshot round trip and sampler."""
    snap = os.path.join(host_tmp(), "snap-loop-%s-%s-%d" % (interp.label, mode, os.getpid()))
    with Target(interp, "looping", extra=["done.txt"], args=[mode]) as tg:
        gt = tg.settled_truth(gt_sanity)
        wait_file(tg.host_extra(0))
        try:
            errs = corrupt_dump_errors([tool.path, "--json", "--save-snapshot", snap,
                                        str(tg.pid)], gt, interp, tg.pid)
            errs += ["snapshot: " + e for e in
                     corrupt_dump_errors([tool.path, "--json", "--snapshot", snap],
                                         gt, interp, tg.pid)]
        finally:
            remove(snap)
        argv = [tool.path, "sample", "-d", "1", "-f", "collapsed", str(tg.pid)]
        rc, out, err, secs = run(argv, TOOL_TIMEOUT)
        if rc != 0:
            errs.append("%s exited %s; stderr: %s" % (" ".join(argv), rc, short(err)))
        elif b"sample: the interpreter's memory is corrupt" not in err:
            errs.append("sample's summary does not name the corruption: %s" % short(err))
        elif b"<module> (" not in out:
            errs.append("sample recorded no stack of the main thread: %s" % short(out))
    settle(Result(mode, "FAIL" if errs else "PASS", "\n".join(errs)), request.node)
