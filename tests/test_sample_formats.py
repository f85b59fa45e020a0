"""pystack-dump sample's output formats, each read by a consumer that is
not ours."""

import json
import os
import subprocess
import sys

import pytest

from harness.cores import remove
from harness.dumps import base_gt_sanity
from harness.interps import REPO
from harness.procs import run, short, vlog
from harness.profiles import (FLAMEGRAPH_SCREENSHOT, PROFILE_FORMAT, SAMPLE_FORMAT_TICKS,
                              SAMPLE_RATE, SAMPLE_TIMEOUT, collapsed_errors, result,
                              sample_out, split_error, split_truth, summary_ticks,
                              summary_window)
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


def _heatmap_consumer(path, gt):
    """tests/check_heatmap.py: the page loads cleanly and lists the
    target's file."""
    argv = [sys.executable, os.path.join(REPO, "tests", "check_heatmap.py"), path]
    rc, out, err, secs = run(argv, 180)
    if rc != 0:
        return ["%s exited %s: %s" % (" ".join(argv), rc, short(out + err, 1500))]
    files = [f[0] for f in json.loads(out.decode())["files"]]
    return [] if gt["hot"]["file"] in files else \
        ["%s not among the page's files: %s" % (gt["hot"]["file"], files[:10])]


# python -m pstats, driven as a user would: what it prints for the top ten.
PSTATS_BROWSE = "sort cumtime\nstats 10\nquit\n"


def _pstats_browser(path, gt):
    """`python3 -m pstats FILE`, sorted by cumulative time: the two busy
    functions are among the first ten."""
    argv = [sys.executable, "-m", "pstats", path]
    try:
        p = subprocess.run(argv, input=PSTATS_BROWSE.encode(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
    except subprocess.TimeoutExpired:
        return ["%s timed out" % " ".join(argv)]
    out = p.stdout.decode("utf-8", "replace")
    want = ["%s:%d(%s)" % (os.path.basename(f["file"]), f["firstline"], f["function"])
            for f in (gt["hot"], gt["cold"])]
    missing = [w for w in want if w not in out]
    if p.returncode != 0 or missing:
        return ["%s (stdin %r) exited %s, %s missing: %s"
                % (" ".join(argv), PSTATS_BROWSE, p.returncode, missing, short(out, 1500))]
    return []


def _table_check(text, gt, cmd):
    if all(f["function"] in text for f in (gt["hot"], gt["cold"])):
        return []
    return ["%s: the table does not name %s and %s: %s"
            % (cmd, gt["hot"]["function"], gt["cold"]["function"], short(text, 1500))]


def _collapsed_check(text, gt, cmd):
    e, _ = collapsed_errors(text, gt, True, SAMPLE_FORMAT_TICKS)
    return ["%s: %s" % (cmd, x) for x in e]


def _jsonl_check(path, gt):
    """Python's json module reads every line; the hot function is named."""
    with open(path, "rb") as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        doc, e = parse_json_out(line)
        if e:
            return ["line %d: %s" % (i + 1, e)]
    if not lines or not any(gt["hot"]["function"].encode() in line for line in lines):
        return ["%d lines, none naming %s" % (len(lines), gt["hot"]["function"])]
    return []


def _raw_check(path, gt):
    """The zstd tool decompresses the recording whole; it starts with
    its magic and holds the hot function's name (docs/recording-format.md)."""
    argv = ["zstd", "-dcq", path]
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    except FileNotFoundError:
        return ["the zstd tool is not installed (tools/install-deps.sh)"]
    if p.returncode != 0 or not p.stdout.startswith(b"PYDREC"):
        return ["%s exited %s, output starts %r: %s"
                % (" ".join(argv), p.returncode, p.stdout[:8], short(p.stderr))]
    if gt["hot"]["function"].encode() not in p.stdout:
        return ["%s not in the decompressed recording" % gt["hot"]["function"]]
    return []


# What each format must hold.  A format on stdout (no -o suffix) is checked
# on its text, check(text, gt, cmd); one written to a file, by a consumer
# that is not ours, check(path, gt).  Which formats there are and their
# suffixes come from the tool (formats()).
CHECKS = {
    "table": _table_check,
    "collapsed": _collapsed_check,
    "jsonl": _jsonl_check,
    "raw": _raw_check,
    "json": _json_consumer(
        lambda d: [] if d.get("format") == PROFILE_FORMAT else
        ["format %r, expected %r" % (d.get("format"), PROFILE_FORMAT)]),
    "speedscope": _json_consumer(
        lambda d: [] if "speedscope" in str(d.get("$schema")) else
        ["$schema %r does not name speedscope" % (d.get("$schema"),)]),
    "gecko": _json_consumer(
        lambda d: [] if isinstance(d.get("meta"), dict) and isinstance(d.get("threads"), list)
        else ["no meta object / threads list (Firefox Profiler's processed format)"]),
    "pprof": _script_consumer("check_pprof.py"),
    "pstats": _pstats_browser,
    "flamegraph": _script_consumer("check_flamegraph.py", "--screenshot",
                                   FLAMEGRAPH_SCREENSHOT),
    "heatmap": _heatmap_consumer,
}

PIPE_DEFAULT = "collapsed"  # what sample writes to a pipe without -f


def formats(tool_path):
    """{name: its -o suffixes}, from pystack-dump sample --list-formats
    (name TAB suffixes TAB summary, a line each)."""
    out = subprocess.run([tool_path, "sample", "--list-formats"], check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    return {name: suffixes.split() for name, suffixes, _ in
            (line.split("\t", 2) for line in out.splitlines())}


def _options(fmt, suffixes):
    """The options that pick fmt and the output file (None: stdout): its
    first suffix if it has one, else -f (nothing for the pipe's default)."""
    if suffixes:
        return [], sample_out("fmt", suffixes[0])
    return ([] if fmt == PIPE_DEFAULT else ["-f", fmt]), None


def sample_formats(interp, tool, tg, gt, names):
    """Each format once, checked by a consumer that is not ours; the output
    file's extension picks the format."""
    suffixes = formats(tool.path)
    res = []
    for n in names:
        fmt = n.split(":", 1)[1]
        opts_, path = _options(fmt, suffixes[fmt])
        try:
            argv, rc, out, err, took = tool_run(
                tool, ["sample", "-r", str(SAMPLE_RATE), "-n", str(SAMPLE_FORMAT_TICKS)] + opts_
                + (["-o", path] if path else []) + [str(tg.pid)], timeout=SAMPLE_TIMEOUT)
            cmd = " ".join(argv)
            if fmt not in CHECKS:
                errs = ["no check for the format %s: add one to CHECKS" % fmt]
            elif rc != 0:
                errs = ["%s: exited %s; stderr: %s" % (cmd, rc, short(err))]
            elif not path:
                errs = CHECKS[fmt](out.decode("utf-8", "replace"), gt, cmd)
            elif not os.path.isfile(path):
                errs = ["%s: exited 0 but wrote no %s" % (cmd, path)]
            else:
                errs = ["%s: %s" % (cmd, x) for x in CHECKS[fmt](path, gt)]
            info = ("screenshot " + FLAMEGRAPH_SCREENSHOT) if fmt == "flamegraph" and not errs \
                else ("%d bytes" % os.path.getsize(path) if path and os.path.isfile(path) else "")
            res.append(result(n, errs, info=info))
        finally:
            if path:
                remove(path)
    return res


def pytest_generate_tests(metafunc):
    if "fmt" in metafunc.fixturenames:
        tool = os.path.join(os.path.abspath(metafunc.config.getoption("build")), "cli",
                            "pystack-dump")
        metafunc.parametrize("fmt", list(formats(tool)))


def formats_job(interp, tool):
    with Target(interp, "sample_split") as tg:
        gt = tg.wait_ground_truth()
        sanity = base_gt_sanity(gt, interp)
        names = ["sample-format:" + f for f in formats(tool.path)]
        if sanity:
            return [Result(n, "FAIL", "ground truth: " + "; ".join(sanity)) for n in names]
        return sample_formats(interp, tool, tg, gt, names)


@pytest.mark.job("sample-formats")
def test_sample_format(newest, fmt, tool, jobs, request):
    """Each output format, read by a consumer that is not ours (on one
    interpreter: sid's 3.15, else the newest there is)."""
    settle(jobs.result("sample-format:" + fmt, formats_job, newest, tool), request.node)


# Run by the target's own interpreter (3.6+, so no newer syntax) on the
# file it was profiled into: what pstats.Stats makes of it, as JSON.
PSTATS_READ = r"""
import json, pstats, sys
s = pstats.Stats(sys.argv[1]).sort_stats("cumulative")
top = [list(f) + list(s.stats[f][:4]) for f in s.fcn_list[:6]]
callers = dict((f, [list(c) + list(v) for c, v in s.stats[f][4].items()])
               for f in s.fcn_list[:6])
print(json.dumps({"total_tt": s.total_tt, "top": top,
                  "callers": [[list(f), v] for f, v in callers.items()]}))
"""
PSTATS_SECS = 2                # -d of the run
# Sum of tottime (one thread) / the run: at least this share of -d, at
# most this share of the sampler's whole run (tottime is samples times
# the interval the loop measured, and a loop a loaded machine makes end
# late measured more than -d: 2.113 s for -d 2, CI).
PSTATS_TT_SHARE = (0.85, 1.05)


def _pstats_errors(stats, gt, took, hot_share, ticks):
    """The loop of sample_split: <module> and main() on every sample, then
    spend_hot (about 75% of the two: within split_tolerance() of
    hot_share, the target's own measure over the sampled window),
    spend_cold; spend_hot called by main.  took: the sampler's whole run,
    in seconds; ticks: (rounds, missed ticks) from its summary."""
    hot, cold = gt["hot"], gt["cold"]
    key = lambda f: [f["file"], f["firstline"], f["qualname"] or f["function"]]
    top, total = stats["top"], stats["total_tt"]
    errs = []
    lo, hi = PSTATS_TT_SHARE
    if not lo * PSTATS_SECS <= total <= hi * max(PSTATS_SECS, took):
        errs.append("tottime sums to %.3fs for a %ds run of one thread (the sampler ran %.2fs)"
                    % (total, PSTATS_SECS, took))
    names = [t[2] for t in top]
    if len(top) < 4 or set(names[:2]) != {"<module>", "main"} or \
            [t[:3] for t in top[2:4]] != [key(hot), key(cold)]:
        errs.append("by cumulative time: %s; want <module>, main, %s, %s"
                    % (top, key(hot), key(cold)))
        return errs
    main = top[names.index("main")]
    if main[6] < 0.95 * total:
        errs.append("main's cumtime %.3fs, not about all of %.3fs" % (main[6], total))
    # The target measures its share over the two functions alone: time
    # between its slices, which a loaded machine stretches, is in neither.
    both = top[2][6] + top[3][6]
    got = 100.0 * top[2][6] / max(both, 1e-9)
    e = split_error("%s's cumtime %.3fs of %.3fs in the two (%.1f%%)"
                    % (hot["function"], top[2][6], both, got), got, hot_share, *ticks)
    errs += [e] if e else []
    callers = dict((tuple(f), v) for f, v in stats["callers"])
    of_hot = [c for c in callers.get(tuple(key(hot)), []) if c[:3] == main[:3]]
    if not of_hot or of_hot[0][3] != top[2][4]:
        errs.append("callers of %s: %s; want main with all its %s samples"
                    % (hot["function"], callers.get(tuple(key(hot))), top[2][4]))
    return errs


def test_sample_pstats(interp, tool, request):
    """-o NAME.prof writes pstats that the target's own interpreter loads:
    the busy functions first by cumulative time, tottime adding up to the
    time sampled, the hot function's caller."""
    with Target(interp, "sample_split") as tg:
        gt = tg.wait_ground_truth()
        errs = ["ground truth: " + e for e in base_gt_sanity(gt, interp)]
        name = "profile.prof"
        argv, rc, out, err, secs = tool_run(
            tool, ["sample", "-r", str(SAMPLE_RATE), "-d", str(PSTATS_SECS),
                   "-o", os.path.join(tg.out_host, name), str(tg.pid)], timeout=SAMPLE_TIMEOUT)
        if not errs and rc != 0:
            errs.append("%s exited %s: %s" % (" ".join(argv), rc, short(err)))
        # A pstats file does not say when it was sampled: the summary does.
        # Start-up and exit take a fair part of a second under ASan, while
        # the target's split drifts with the machine's load.
        window, ticks = summary_window(err), summary_ticks(err)
        if not errs and (window is None or ticks is None):
            errs.append("no start time or tick counts in the summary: %s" % short(err))
        if not errs:
            rd = interp.argv(["-c", PSTATS_READ, os.path.join(tg.out_in, name)])
            rrc, rout, rerr, _ = run(rd, 60)
            if rrc != 0:
                errs.append("pstats.Stats under %s: exit %s: %s"
                            % (interp.label, rrc, short(rout + rerr, 1500)))
            else:
                want = split_truth(tg, *window)
                errs = _pstats_errors(json.loads(rout.decode()), gt, secs, want, ticks)
                errs += ["the run's summary: " + short(err)] if errs else []
    settle(Result("pstats", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)
