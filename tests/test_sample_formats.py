"""pystack-dump sample's output formats, each read by a consumer that is
not ours."""

import os
import sys

import pytest

from harness.cores import remove
from harness.dumps import base_gt_sanity
from harness.interps import REPO
from harness.procs import run, short, vlog
from harness.profiles import (FLAMEGRAPH_SCREENSHOT, PROFILE_FORMAT, SAMPLE_FORMAT_TICKS,
                              SAMPLE_RATE, SAMPLE_TIMEOUT, collapsed_errors, result, sample_out)
from harness.results import Result, settle
from harness.target import Target, parse_json_out, tool_run


def _json_consumer(want):
    def check(path, gt):
        with open(path, "rb") as f:
            data = f.read()
        doc, e = parse_json_out(data)
        if e:
            return [e]
        errs = want(doc)
        if gt["hot"]["function"].encode() not in data:
            errs.append("%s not named anywhere in it" % gt["hot"]["function"])
        return errs
    return check


def _script_consumer(script, *extra):
    def check(path, gt):
        exe = os.path.join(REPO, "tests", script)
        if not os.path.isfile(exe):
            return ["tests/%s is not there (the consumer check for this format)" % script]
        argv = [sys.executable, exe, path, "--expect", gt["hot"]["function"]] + list(extra)
        rc, out, err, secs = run(argv, 180)
        vlog("%s -> %s in %.1fs" % (" ".join(argv), rc, secs))
        if rc != 0:
            return ["%s exited %s: %s" % (" ".join(argv), rc, short(out + err, 1500))]
        return []
    return check


# format -> (options, output file suffix (None: stdout), check(path, gt) -> errors)
SAMPLE_FORMATS = {
    "table": (["-f", "table"], None, None),
    "collapsed": ([], None, None),               # stdout is a pipe: collapsed
    "json": ([], ".json", _json_consumer(
        lambda d: [] if d.get("format") == PROFILE_FORMAT else
        ["format %r, expected %r" % (d.get("format"), PROFILE_FORMAT)])),
    "speedscope": ([], ".speedscope.json", _json_consumer(
        lambda d: [] if "speedscope" in str(d.get("$schema")) else
        ["$schema %r does not name speedscope" % (d.get("$schema"),)])),
    "gecko": ([], ".gecko.json", _json_consumer(
        lambda d: [] if isinstance(d.get("meta"), dict) and isinstance(d.get("threads"), list)
        else ["no meta object / threads list (Firefox Profiler's processed format)"])),
    "pprof": ([], ".pb.gz", _script_consumer("check_pprof.py")),
    "flamegraph": ([], ".html", _script_consumer("check_flamegraph.py", "--screenshot",
                                                 FLAMEGRAPH_SCREENSHOT)),
}


def sample_formats(interp, tool, tg, gt, names):
    """Each format once, checked by a consumer that is not ours; the output
    file's extension picks the format."""
    res = []
    for n in names:
        fmt = n.split(":", 1)[1]
        opts_, suffix, check = SAMPLE_FORMATS[fmt]
        path = sample_out("fmt", suffix) if suffix else None
        try:
            argv, rc, out, err, took = tool_run(
                tool, ["sample", "-r", str(SAMPLE_RATE), "-n", str(SAMPLE_FORMAT_TICKS)] + opts_
                + (["-o", path] if path else []) + [str(tg.pid)], timeout=SAMPLE_TIMEOUT)
            cmd = " ".join(argv)
            if rc != 0:
                res.append(result(n, ["%s: exited %s; stderr: %s" % (cmd, rc, short(err))]))
                continue
            text = out.decode("utf-8", "replace")
            if fmt == "table":
                errs = [] if all(f["function"] in text for f in (gt["hot"], gt["cold"])) else \
                    ["%s: the table does not name %s and %s: %s"
                     % (cmd, gt["hot"]["function"], gt["cold"]["function"], short(out, 1500))]
            elif fmt == "collapsed":
                e, _ = collapsed_errors(text, gt, True, SAMPLE_FORMAT_TICKS)
                errs = ["%s: %s" % (cmd, x) for x in e]
            elif not os.path.isfile(path):
                errs = ["%s: exited 0 but wrote no %s" % (cmd, path)]
            else:
                errs = ["%s: %s" % (cmd, x) for x in check(path, gt)]
            info = ("screenshot " + FLAMEGRAPH_SCREENSHOT) if fmt == "flamegraph" and not errs \
                else ("%d bytes" % os.path.getsize(path) if path and os.path.isfile(path) else "")
            res.append(result(n, errs, info=info))
        finally:
            if path:
                remove(path)
    return res


FORMATS = ["table", "collapsed", "json", "speedscope", "gecko", "pprof", "flamegraph"]


def formats_job(interp, tool):
    with Target(interp, "sample_split") as tg:
        gt = tg.wait_ground_truth()
        sanity = base_gt_sanity(gt, interp)
        names = ["sample-format:" + f for f in FORMATS]
        if sanity:
            return [Result(n, "FAIL", "ground truth: " + "; ".join(sanity)) for n in names]
        return sample_formats(interp, tool, tg, gt, names)


@pytest.mark.job("sample-formats")
@pytest.mark.parametrize("fmt", FORMATS)
def test_sample_format(newest, fmt, tool, jobs, request):
    """Each output format, read by a consumer that is not ours (on one
    interpreter: sid's 3.15, else the newest there is)."""
    settle(jobs.result("sample-format:" + fmt, formats_job, newest, tool), request.node)
