"""`pystack-dump sample`'s modes and markers: -m exception samples only
threads raising or handling an exception; a thread running the garbage
collector has a <GC> frame on top (--no-gc: none); the table leaves idle
threads out (--idle keeps them)."""

import os

import pytest

from harness.dumps import base_gt_sanity
from harness.procs import short
from harness.results import Result, settle
from harness.target import Target, tool_run

EXCEPTION_IN_MIN = 0.90    # share of exception mode's samples in the handler
EXCEPTION_OUT_MAX = 0.05   # ... and outside it
GC_MIN = (3, 7)            # 3.6 keeps gc.collecting in a static variable
GC_NONE = "3.6 keeps the collector's state in a static variable: no <GC> frames"
# -d of each run: 1 s at the default 1000 Hz is about 500 samples here, of
# which 99.5% or more fall in the handler (CI: 958 of 959 to 993 of 997 in
# 2 s), and every <GC> and idle check is a yes or no over all of them.
SECONDS = "1"


def truth(tg, interp):
    """The target's ground truth, once its loop runs."""
    gt = tg.wait_ground_truth()
    sanity = base_gt_sanity(gt, interp)
    if sanity:
        raise AssertionError("ground truth: " + "; ".join(sanity))
    return gt


def collapsed(tool, tg, name, args):
    """Sample tg with args into collapsed stacks: ([frame names...], count)
    pairs, outermost first, or an error."""
    out = os.path.join(tg.out_host, name + ".collapsed")
    argv, rc, so, se, secs = tool_run(tool, ["sample", "-d", SECONDS, "-q", "-f", "collapsed",
                                             "-o", out] + args + [str(tg.pid)], timeout=60)
    if rc != 0:
        return None, "%s exited %s: %s" % (" ".join(argv), rc, short(se))
    stacks = []
    with open(out) as f:
        for line in f:
            if line.strip():
                path, n = line.rsplit(" ", 1)
                stacks.append(([fr.split(" (")[0] for fr in path.split(";")], int(n)))
    return stacks, None


def share(stacks, function):
    """Samples with function anywhere on the stack, and all samples."""
    total = sum(n for _, n in stacks)
    return sum(n for s, n in stacks if function in s), total


def exception_check(tool, tg, gt):
    """The samples are nearly all in the except block's in_handler(), none
    in outside(), which the same loop runs with no exception."""
    stacks, err = collapsed(tool, tg, "exception", ["-m", "exception"])
    errs = [err] if err else []
    info = ""
    if stacks is not None:
        inside, total = share(stacks, gt["handler"]["function"])
        out, _ = share(stacks, gt["outside"]["function"])
        info = "%d of %d samples in the handler, %d outside" % (inside, total, out)
        if not total or inside < EXCEPTION_IN_MIN * total:
            errs.append("only %s (want %d%%)" % (info, EXCEPTION_IN_MIN * 100))
        if out > EXCEPTION_OUT_MAX * max(total, 1):
            errs.append("%s (want at most %d%% outside)" % (info, EXCEPTION_OUT_MAX * 100))
    return Result("exception", "FAIL" if errs else "PASS", "\n".join(errs), info=info)


def idle_check(tool, tg, gt):
    """The table leaves the idle thread (waiting on an event) out and says
    so in the summary; --idle keeps it."""
    idle = gt["idle"]["function"]
    errs = []
    for args, want in (([], False), (["--idle"], True)):
        argv, rc, so, se, secs = tool_run(
            tool, ["sample", "-d", SECONDS, "-f", "table", "--limit", "0"] + args
            + [str(tg.pid)], timeout=60)
        if rc != 0:
            errs.append("%s exited %s: %s" % (" ".join(argv), rc, short(se)))
            continue
        table = so.decode()
        if (idle in table) != want:
            errs.append("%s: %s %s the table" % (" ".join(argv), idle,
                                                 "missing from" if want else "in"))
        said = b"idle thread" in se
        if said == want:
            errs.append("%s: the summary %s the idle thread left out: %s"
                        % (" ".join(argv), "tells of" if said else "does not tell of",
                           short(se)))
    return Result("idle", "FAIL" if errs else "PASS", "\n".join(errs))


def exception_job(interp, tool):
    """One sample_exception target for the exception-mode and idle checks."""
    with Target(interp, "sample_exception") as tg:
        gt = truth(tg, interp)
        return [exception_check(tool, tg, gt), idle_check(tool, tg, gt)]


@pytest.mark.job("sample-exception")
def test_exception_mode(interp, tool, jobs, request):
    """-m exception: the handler's samples, not the same loop's outside it."""
    settle(jobs.result("exception", exception_job, interp, tool), request.node)


def test_gc_frames(interp, tool, request):
    """A loop of gc.collect() on cyclic garbage: <GC> frames on top of its
    stacks, on the versions that show the collector's state; none with
    --no-gc."""
    if interp.minor < GC_MIN:
        settle(Result("gc", "SKIP", GC_NONE), request.node)
    with Target(interp, "sample_gc") as tg:
        gt = truth(tg, interp)
        errs = []
        stacks, err = collapsed(tool, tg, "gc", [])
        if err:
            errs.append(err)
        else:
            gc, total = sum(n for s, n in stacks if s[-1] == "<GC>"), sum(n for _, n in stacks)
            misplaced = sum(n for s, n in stacks if "<GC>" in s[:-1])
            under = sum(n for s, n in stacks
                        if s[-1] == "<GC>" and gt["collect"]["function"] in s)
            if not gc:
                errs.append("no <GC> frame in %d samples of a gc.collect() loop" % total)
            if misplaced or under < gc:
                errs.append("<GC> not on top of collect_forever()'s stack: %d elsewhere, "
                            "%d of %d under it" % (misplaced, under, gc))
        stacks, err = collapsed(tool, tg, "nogc", ["--no-gc"])
        if err:
            errs.append(err)
        elif any("<GC>" in s for s, _ in stacks):
            errs.append("--no-gc: <GC> frames still there")
    settle(Result("gc", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)


@pytest.mark.job("sample-exception")
def test_idle_threads(interp, tool, jobs, request):
    """The table leaves idle threads out and says so; --idle keeps them."""
    settle(jobs.result("idle", exception_job, interp, tool), request.node)
