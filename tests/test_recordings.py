"""Recordings and streams: `sample -f raw` recordings turned into profiles
by `pystack-dump report` (whole, sliced, cut short, killed mid-run,
corrupt or foreign), `-f jsonl`, and `sample --every` (one file an
interval, memory flat).  docs/recording-format.md is the format."""

import json
import os
import subprocess
import time

import pytest

from harness.cores import remove
from harness.dumps import base_gt_sanity
from harness.procs import rss_env, rss_kb, short
from harness.profiles import (SAMPLE_TIMEOUT, parse_collapsed,
                              profile_stacks, sample_out, sampled_window, samples_in,
                              split_error, split_truth)
from harness.results import Result, settle
from harness.target import Target, tool_run

# A representative set: the oldest, a middle one, the newest.
REC_LABELS = ["pyenv-3.6", "pyenv-3.12", "sid-3.15", "ft-3.15t"]
only_rec = pytest.mark.interps(lambda i: i.label in REC_LABELS)

REC_SECS = 3
REC_RATE = 500
EXIT_PROFILE = 16           # PYD_E_PROFILE: bad or unsupported profile or recording
EVERY_INTERVALS = 10        # the RSS run: intervals of 1 s
RSS_GROWTH_KB = 1024        # at most this much more after the 3rd interval


def report(tool, path, args):
    """pystack-dump report PATH ARGS: (argv, rc, stdout, stderr)."""
    argv, rc, out, err, _ = tool_run(tool, ["report", path] + list(args), timeout=SAMPLE_TIMEOUT)
    return argv, rc, out, err


def report_json(tool, path, args=()):
    """The json profile report writes of PATH: (doc or None, errors, stderr)."""
    argv, rc, out, err = report(tool, path, ["-f", "json"] + list(args))
    if rc != 0:
        return None, ["%s exited %s: %s" % (" ".join(argv), rc, short(err))], err
    try:
        return json.loads(out.decode()), [], err
    except ValueError as e:
        return None, ["%s: not JSON (%s)" % (" ".join(argv), e)], err


def record(tool, tg, path, secs=REC_SECS, fmt="raw"):
    argv, rc, out, err, _ = tool_run(tool, ["sample", "-q", "-r", str(REC_RATE), "-d", str(secs),
                                            "-f", fmt, "-o", path, str(tg.pid)],
                                     timeout=SAMPLE_TIMEOUT)
    return [] if rc == 0 and os.path.isfile(path) else \
        ["%s exited %s: %s" % (" ".join(argv), rc, short(err))]


def split_errors(doc, gt, want):
    """The samples of sample_split: spend_hot about 75% of the two, within
    split_tolerance() of want, the share the target measured."""
    stacks = profile_stacks(doc)
    hot, cold = samples_in(stacks, gt["hot"]), samples_in(stacks, gt["cold"])
    share = 100.0 * hot / max(1, hot + cold)
    errs = []
    if hot + cold < 0.9 * doc["samples"]:
        errs.append("only %d of %d samples in spend_hot or spend_cold" % (hot + cold,
                                                                           doc["samples"]))
    e = split_error("spend_hot has %.1f%% of the samples" % share, share, want,
                    doc["ticks"], doc["missed"])
    errs += [e] if e else []
    return errs, share


def with_target(interp, fn, *args):
    with Target(interp, "sample_split") as tg:
        gt = tg.wait_ground_truth()
        sanity = base_gt_sanity(gt, interp)
        if sanity:
            return Result("recording", "FAIL", "ground truth: " + "; ".join(sanity))
        return fn(tg, gt, *args)


def collapsed_counts(text):
    return dict((";".join(labels), n) for labels, n in parse_collapsed(text))


def replay_errors(tool, tg, gt):
    """A recording reported as json has the target's split and as many
    samples as it holds; collapsed from the recording counts the same;
    a slice has fewer; jsonl lines all parse and name the functions."""
    path = sample_out("rec", ".pydrec")
    try:
        t0 = time.monotonic()
        errs = record(tool, tg, path)
        t1 = time.monotonic()
        if errs:
            return errs, ""
        doc, errs, err = report_json(tool, path)
        if doc is None:
            return errs, ""
        errs, share = split_errors(doc, gt, split_truth(tg, *sampled_window(doc, t0, t1)))
        size = os.path.getsize(path)
        n = doc["samples"]
        if "ends mid-record" in err.decode():
            errs.append("a whole recording said to be cut: %s" % short(err))
        argv, rc, out, err = report(tool, path, ["-f", "collapsed"])
        counts = collapsed_counts(out.decode()) if rc == 0 else {}
        if sum(counts.values()) != n - sum(s["self"] for s in profile_stacks(doc)
                                           if not s["frames"]):
            errs.append("collapsed counts %d samples, json %d" % (sum(counts.values()), n))
        sl, e, _ = report_json(tool, path, ["--from", "1", "--to", "2"])
        errs += e
        if sl is not None and not 0 < sl["samples"] < n:
            errs.append("--from 1 --to 2: %d samples of %d" % (sl["samples"], n))
        errs += jsonl_errors(report(tool, path, ["-f", "jsonl"])[2], gt, n)
        errs += diff_errors(tool, path, sum(counts.values()))
        return errs, "%d samples, %d bytes (%.0f bytes/10k samples), hot %.1f%%" % (
            n, size, size * 1e4 / max(1, n), share)
    finally:
        remove(path)


def diff_errors(tool, path, n):
    """diff reads a recording as a profile (pyd_profile_read): against
    itself, every stack's samples the same in both, n in all."""
    argv, rc, out, err, _ = tool_run(tool, ["diff", "-f", "collapsed", path, path],
                                     timeout=SAMPLE_TIMEOUT)
    if rc != 0:
        return ["%s exited %s: %s" % (" ".join(argv), rc, short(err))]
    rows = [line.rsplit(" ", 3) for line in out.decode().splitlines() if line.strip()]
    if any(len(r) != 4 or r[1] != r[2] or float(r[3]) != 0 for r in rows):
        return ["diff of a recording with itself: a stack changed: %r" % out[:300]]
    if sum(int(r[1]) for r in rows) != n:
        return ["diff of a recording with itself: %d samples, report %d"
                % (sum(int(r[1]) for r in rows), n)]
    return []


def jsonl_errors(out, gt, n=None):
    errs, seen, lines = [], set(), out.decode().splitlines()
    if n is not None and len(lines) != n:
        errs.append("%d JSON lines for %d samples" % (len(lines), n))
    last = -1.0
    for i, line in enumerate(lines):
        try:
            d = json.loads(line)
        except ValueError as e:
            return errs + ["line %d is not JSON (%s): %r" % (i + 1, e, line[:200])]
        if not {"t", "pid", "tid", "thread", "frames"} <= set(d):
            return errs + ["line %d lacks a key: %r" % (i + 1, line[:200])]
        if d["t"] < last:
            errs.append("line %d: time goes back" % (i + 1))
        last = d["t"]
        for f in d["frames"][:1]:
            seen.add((f["function"], f["file"]))
    for which in ("hot", "cold"):
        info = gt[which]
        if (info["function"], info["file"]) not in seen:
            errs.append("no line has %s innermost (saw %s)" % (info["function"],
                                                               sorted(seen)[:6]))
    return errs


@only_rec
def test_record_report(interp, tool, request):
    """sample -f raw, then report: json with the known split, collapsed
    with the same counts, a --from/--to slice with fewer, jsonl parsed."""
    def run(tg, gt):
        errs, info = replay_errors(tool, tg, gt)
        return Result("record-report", "FAIL" if errs else "PASS", "\n".join(errs), info=info)
    settle(with_target(interp, run), request.node)


@only_rec
def test_sample_jsonl(interp, tool, request):
    """sample -f jsonl to a pipe: a JSON line per sample, as taken."""
    def run(tg, gt):
        argv, rc, out, err, _ = tool_run(tool, ["sample", "-q", "-r", str(REC_RATE), "-d", "1",
                                                "-f", "jsonl", str(tg.pid)],
                                         timeout=SAMPLE_TIMEOUT)
        errs = ["%s exited %s: %s" % (" ".join(argv), rc, short(err))] if rc else \
            jsonl_errors(out, gt)
        return Result("sample-jsonl", "FAIL" if errs else "PASS", "\n".join(errs),
                      info="%d lines" % len(out.splitlines()))
    settle(with_target(interp, run), request.node)


def cut_errors(tool, tg, gt):
    """Truncated at several offsets: exit 0, said to be cut, fewer samples
    the earlier the cut; a sampler killed mid-run leaves a readable file;
    a byte flipped mid-file: exit 16, the samples before still written."""
    path, cut = sample_out("rec", ".pydrec"), sample_out("cut", ".pydrec")
    try:
        errs = record(tool, tg, path)
        if errs:
            return errs
        with open(path, "rb") as f:
            data = f.read()
        full, errs, _ = report_json(tool, path)
        if full is None:
            return errs
        last = full["samples"]
        for frac in (0.9, 0.6, 0.3):
            off = int(len(data) * frac)
            with open(cut, "wb") as f:
                f.write(data[:off])
            doc, e, err = report_json(tool, cut)
            if doc is None:
                errs += ["cut at %d of %d bytes: %s" % (off, len(data), x) for x in e]
                continue
            if "ends mid-record" not in err.decode():
                errs.append("cut at %d: no word of the cut: %s" % (off, short(err)))
            if not 0 < doc["samples"] <= last:
                errs.append("cut at %d: %d samples (then %d)" % (off, doc["samples"], last))
            last = doc["samples"]
        flipped = bytearray(data)
        flipped[len(data) // 2] ^= 0xff
        with open(cut, "wb") as f:
            f.write(flipped)
        argv, rc, out, err = report(tool, cut, ["-f", "collapsed"])
        if rc != EXIT_PROFILE or b"corrupt" not in err:
            errs.append("a byte flipped mid-file: exit %s (want %d): %s"
                        % (rc, EXIT_PROFILE, short(err)))
        elif not out.strip():
            errs.append("a byte flipped mid-file: nothing written of the samples before")
        return errs + killed_errors(tool, tg, cut)
    finally:
        remove(path)
        remove(cut)


def killed_errors(tool, tg, path):
    """SIGKILL mid-run: what was flushed before (every second) reports."""
    p = subprocess.Popen([tool.path, "sample", "-q", "-r", str(REC_RATE), "-f", "raw",
                          "-o", path, str(tg.pid)], stderr=subprocess.PIPE)
    time.sleep(2.5)
    p.kill()
    p.communicate()
    doc, errs, err = report_json(tool, path)
    if doc is None:
        return ["killed after 2.5 s: " + e for e in errs]
    if doc["samples"] < REC_RATE:
        errs.append("killed after 2.5 s: only %d samples" % doc["samples"])
    return errs


@only_rec
def test_record_cut(interp, tool, request):
    """A recording cut short or killed mid-write still reports."""
    def run(tg, gt):
        errs = cut_errors(tool, tg, gt)
        return Result("record-cut", "FAIL" if errs else "PASS", "\n".join(errs))
    settle(with_target(interp, run), request.node)


@pytest.mark.parametrize("content", [b"", b"not a recording\n", b"\x28\xb5\x2f\xfd garbage"],
                         ids=["empty", "text", "zstd-magic"])
def test_report_foreign(tool, content):
    """A file that is no recording: exit 16 and a message naming it."""
    path = sample_out("foreign", ".pydrec")
    try:
        with open(path, "wb") as f:
            f.write(content)
        argv, rc, out, err = report(tool, path, [])
        assert rc == EXIT_PROFILE, "%s: exit %s: %s" % (" ".join(argv), rc, short(err))
        assert path.encode() in err and b"recording" in err, short(err)
        assert not out
        # diff reads profiles and recordings alike: the same exit status
        argv, rc, out, err, _ = tool_run(tool, ["diff", path, path])
        assert rc == EXIT_PROFILE and b"as a profile" in err, \
            "%s: exit %s: %s" % (" ".join(argv), rc, short(err))
    finally:
        remove(path)


def every_errors(tool, tg, gt):
    """--every 1 -d 3: three json files, each a profile with the split."""
    pattern = sample_out("every", "-%H%M%S.json")
    t0 = time.monotonic()
    argv, rc, out, err, _ = tool_run(tool, ["sample", "-q", "-r", str(REC_RATE), "--every", "1",
                                            "-d", "3", "-o", pattern, str(tg.pid)],
                                     timeout=SAMPLE_TIMEOUT)
    t1 = time.monotonic()
    d, base = os.path.split(pattern)
    prefix = base.split("-%")[0]
    files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.startswith(prefix + "-"))
    try:
        errs = ["%s exited %s: %s" % (" ".join(argv), rc, short(err))] if rc else []
        if len(files) != 3:
            errs.append("%d files for 3 intervals: %s" % (len(files), files))
        # The split is checked over the three intervals together, against
        # the target's own measure over the run: one second of a loaded
        # machine (CI's sanitizer run) saw 57% once.
        hot = cold = ticks = missed = 0
        for path in files:
            with open(path) as f:
                doc = json.load(f)
            stacks = profile_stacks(doc)
            h, c = samples_in(stacks, gt["hot"]), samples_in(stacks, gt["cold"])
            hot, cold = hot + h, cold + c
            ticks, missed = ticks + doc["ticks"], missed + doc["missed"]
            if h + c < 0.9 * doc["samples"]:
                errs.append("%s: only %d of %d samples in spend_hot or spend_cold"
                            % (path, h + c, doc["samples"]))
            if not 0.8 <= doc["duration_s"] <= 1.2:
                errs.append("%s: %.2f s long" % (path, doc["duration_s"]))
        share = 100.0 * hot / max(1, hot + cold)
        want = split_truth(tg, t0, t1) if files else share
        e = split_error("spend_hot has %.1f%% of the intervals' samples" % share, share,
                        want, ticks, missed)
        errs += [e] if e else []
        return errs
    finally:
        for path in files:
            remove(path)


@only_rec
def test_sample_every(interp, tool, request):
    """sample --every: one profile a file an interval."""
    def run(tg, gt):
        errs = every_errors(tool, tg, gt)
        return Result("sample-every", "FAIL" if errs else "PASS", "\n".join(errs))
    settle(with_target(interp, run), request.node)


def rss_errors(tool, tg):
    """--every 1 over EVERY_INTERVALS intervals: the sampler's RSS after
    the 3rd interval grows by at most RSS_GROWTH_KB."""
    pattern = sample_out("rss", "-%H%M%S.pb.gz")
    p = subprocess.Popen([tool.path, "sample", "-q", "-r", "max", "--every", "1",
                          "-d", str(EVERY_INTERVALS + 0.5), "-o", pattern, str(tg.pid)],
                         stderr=subprocess.PIPE, env=rss_env(tool))
    rss = []
    for _ in range(EVERY_INTERVALS):
        time.sleep(1)
        kb = rss_kb(p.pid) if p.poll() is None else None
        if kb:
            rss.append(kb)
    err = p.communicate()[1]
    d, base = os.path.split(pattern)
    prefix = base.split("-%")[0]
    for f in os.listdir(d):
        if f.startswith(prefix + "-"):
            remove(os.path.join(d, f))
    if p.returncode:
        return ["exit %s: %s" % (p.returncode, short(err))], rss
    if len(rss) < EVERY_INTERVALS - 1:
        return ["only %d RSS readings" % len(rss)], rss
    growth = max(rss[3:]) - rss[2]
    return (["RSS grew by %d KB after the 3rd interval: %s" % (growth, rss)]
            if growth > RSS_GROWTH_KB else []), rss


@pytest.mark.interps(lambda i: i.label == "pyenv-3.12")
def test_every_memory_flat(interp, tool, request):
    """--every at -r max for 10 intervals: memory stays flat."""
    def run(tg, gt):
        errs, rss = rss_errors(tool, tg)
        return Result("every-rss", "FAIL" if errs else "PASS", "\n".join(errs),
                      info="VmRSS KB each second: %s" % rss)
    settle(with_target(interp, run), request.node)
