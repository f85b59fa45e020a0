"""sample -f heatmap (a page of source lines and their samples) and
pystack-dump diff (two profiles compared), on sample_split: a loop that
spends a known share of its time in spend_hot and in spend_cold."""

import json
import os
import shutil
import sys

import pytest

from harness.interps import REPO
from harness.procs import run, short
from harness.profiles import SAMPLE_RATE, SAMPLE_TIMEOUT
from harness.results import Result, settle
from harness.target import Target, tool_run

INTERPS = ("pyenv-3.12", "sid-3.15", "ft-3.15t")
SECS = 2                   # -d of each profile
EXIT_PROFILE = 16          # PYD_E_PROFILE: a profile or recording diff or report cannot read
HEATMAP_SCREENSHOT = "/tmp/pyd-heatmap.png"   # kept after the run (docs/heatmap.png)
DIFF_SCREENSHOT = "/tmp/pyd-diff-flamegraph.png"
# The two splits compared: hot/cold ms of a round (75/25, then 25/75).
SPLITS = (("hot-ms=30", "cold-ms=10"), ("hot-ms=10", "cold-ms=30"))

pytestmark = pytest.mark.interps(lambda i: i.label in INTERPS)


class CopiedTarget(Target):
    """sample_split run from copies of its files in a directory of its own,
    which the test may delete while it runs."""

    def command(self):
        script = self.interp.script(self.name)
        self.src_in = self.out_in + "-src"
        src_host = self.interp.host_path(self.src_in)
        os.makedirs(src_host, exist_ok=True)
        for f in (self.name + ".py", "_pyd_common.py"):
            shutil.copy(os.path.join(self.interp.host_path(os.path.dirname(script)), f),
                        src_host)
        argv = super().command()
        return [os.path.join(self.src_in, self.name + ".py") if a == script else a
                for a in argv]

    def __exit__(self, *exc):
        super().__exit__(*exc)
        shutil.rmtree(self.interp.host_path(self.src_in), ignore_errors=True)


def sample(tool, tg, args, name):
    """sample -d SECS ARGS -o NAME in the target's directory: (path, errors)."""
    path = os.path.join(tg.out_host, name)
    argv, rc, out, err, _ = tool_run(
        tool, ["sample", "-q", "-r", str(SAMPLE_RATE), "-d", str(SECS)] + args
        + ["-o", path, str(tg.pid)], timeout=SAMPLE_TIMEOUT)
    if rc != 0 or not os.path.isfile(path):
        return path, ["%s exited %s: %s" % (" ".join(argv), rc, short(err))]
    return path, []


def check_page(script, path, *args):
    """tests/SCRIPT PATH ARGS: (stdout, errors)."""
    argv = [sys.executable, os.path.join(REPO, "tests", script), path] + list(args)
    rc, out, err, _ = run(argv, 180)
    if rc != 0:
        return out, ["%s exited %s: %s" % (" ".join(argv), rc, short(out + err, 1500))]
    return out, []


def in_function(line, info, end):
    """line lies in the function info (code_info) that ends before end."""
    return info["firstline"] <= line < end


def heatmap_errors(shown, gt, readable):
    """The target's file is listed; its hottest line by own samples is in
    spend_hot, with its text when the file could be read and none when not."""
    hot, cold = gt["hot"], gt["cold"]
    files = [f[0] for f in shown["files"]]
    if hot["file"] not in files:
        return ["%s not among the page's files: %s" % (hot["file"], files[:10])]
    i = files.index(hot["file"])
    line, own, total, text = shown["hottest"][i]
    errs = []
    if shown["files"][i][3] != readable:
        errs.append("%s shown as %sreadable" % (hot["file"], "" if shown["files"][i][3] else "not "))
    if not in_function(line, hot, cold["firstline"]) or not own:
        errs.append("the hottest line is %d (%d own samples), not in %s (lines %d-%d)"
                    % (line, own, hot["function"], hot["firstline"], cold["firstline"] - 1))
    if readable:
        with open(gt["_host_file"], encoding="utf-8") as f:
            want = f.read().splitlines()[line - 1]
        if text != want:
            errs.append("line %d's text is %r, not %r" % (line, text, want))
    elif text is not None:
        errs.append("text %r for a file that is gone" % text)
    return errs


def test_heatmap(interp, tool, request):
    """-f heatmap: the page loads with no console error or network request,
    lists sample_split.py first-ish, its hottest line in spend_hot with the
    file's text."""
    with Target(interp, "sample_split") as tg:
        gt = tg.wait_ground_truth()
        gt["_host_file"] = interp.host_path(gt["hot"]["file"])
        path, errs = sample(tool, tg, ["-f", "heatmap"], "heat.html")
        if not errs:
            out, errs = check_page("check_heatmap.py", path, "--screenshot", HEATMAP_SCREENSHOT)
        if not errs:
            errs = heatmap_errors(json.loads(out.decode()), gt, True)
    settle(Result("heatmap", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)


def test_heatmap_source_gone(interp, tool, request):
    """A target whose source file was deleted: the page still lists its
    lines with their counts, without text."""
    with CopiedTarget(interp, "sample_split") as tg:
        gt = tg.wait_ground_truth()
        os.remove(interp.host_path(gt["hot"]["file"]))
        path, errs = sample(tool, tg, ["-f", "heatmap"], "heat.html")
        if not errs:
            out, errs = check_page("check_heatmap.py", path)
        if not errs:
            errs = heatmap_errors(json.loads(out.decode()), gt, False)
    settle(Result("heatmap-source-gone", "FAIL" if errs else "PASS", "\n".join(errs)),
           request.node)


def profile_of(interp, tool, split, fmt, out_dir):
    """A profile of sample_split with split, written as fmt into out_dir:
    (path, ground truth, errors)."""
    with Target(interp, "sample_split", args=split) as tg:
        gt = tg.wait_ground_truth()
        path, errs = sample(tool, tg, ["-f", fmt], "profile." + fmt)
        keep = os.path.join(out_dir, "%s.%s" % (split[0], fmt))
        if not errs:
            shutil.copy(path, keep)
        return keep, gt, errs


def diff(tool, *args):
    argv, rc, out, err, _ = tool_run(tool, ["diff"] + list(args))
    return " ".join(argv), rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def grew_errors(table, cmd, grew, shrank):
    """The table's first "grew" row is grew, its first "shrank" row shrank."""
    parts = table.split("\nShrank most")
    if len(parts) != 2:
        return ["%s: no Shrank section: %s" % (cmd, short(table.encode()))]
    first = lambda sec: next((l for l in sec.splitlines() if "%" in l and "(" in l), "")
    errs = []
    for name, sec, what in ((grew, parts[0], "grew"), (shrank, parts[1], "shrank")):
        row = first(sec.split("function (file)", 1)[-1])
        if " %s (" % name not in row:
            errs.append("%s: first row that %s is %r, not %s" % (cmd, what, row, name))
    return errs


def test_diff(interp, tool, tmp_path, request):
    """Profiles of two splits (75/25 as JSON, 25/75 as collapsed): the
    table shows spend_cold grown and spend_hot shrunk, the differential
    flame graph loads cleanly, the collapsed diff has a change column."""
    base, gt, errs = profile_of(interp, tool, SPLITS[0], "json", str(tmp_path))
    if not errs:
        now, _, errs = profile_of(interp, tool, SPLITS[1], "collapsed", str(tmp_path))
    if not errs:
        cmd, rc, out, err = diff(tool, "--limit", "5", base, now)
        errs = ["%s exited %s: %s" % (cmd, rc, err)] if rc != 0 else \
            grew_errors(out, cmd, gt["cold"]["qualname"] or gt["cold"]["function"],
                        gt["hot"]["qualname"] or gt["hot"]["function"])
    if not errs:
        page = str(tmp_path / "diff.html")
        cmd, rc, out, err = diff(tool, "-o", page, base, now)
        errs = ["%s exited %s: %s" % (cmd, rc, err)] if rc != 0 else \
            check_page("check_flamegraph.py", page, "--expect", gt["cold"]["function"],
                       "--screenshot", DIFF_SCREENSHOT)[1]
    if not errs:
        cmd, rc, out, err = diff(tool, "-f", "collapsed", base, now)
        cold = [l for l in out.splitlines() if l.rsplit(" ", 3)[0].split(";")[-1]
                .startswith(gt["cold"]["function"] + " (")]
        # Lines a stack was seen at once or twice may go either way: the
        # function's stacks together must have grown.
        if rc != 0 or not cold or sum(float(l.split()[-1]) for l in cold) <= 0:
            errs.append("%s: exit %s, spend_cold's stacks %s, want them grown in all"
                        % (cmd, rc, cold))
    settle(Result("diff", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)


def test_diff_identical(interp, tool, tmp_path, request):
    """A profile against itself (as JSON and as collapsed): no change."""
    j, _, errs = profile_of(interp, tool, SPLITS[0], "json", str(tmp_path))
    if not errs:
        cmd, rc, out, err = diff(tool, j, j)
        if rc != 0 or out.count("(none)") != 2:
            errs.append("%s: exit %s, want no row in either table: %s" % (cmd, rc, out[:1500]))
        cmd, rc, out, err = diff(tool, "-f", "collapsed", j, j)
        changes = {l.split()[-1] for l in out.splitlines()}
        if rc != 0 or changes != {"+0.00"}:
            errs.append("%s: exit %s, changes %s" % (cmd, rc, sorted(changes)[:10]))
    settle(Result("diff-identical", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)


BAD_INPUTS = {
    "empty": b"",
    "garbage": b"not a profile\n",
    "binary": b"\x00\x01\x02",
    "other-json": b'{"format": "speedscope"}',
    "broken-json": b'{"format": "pystack-dump-profile", "version": 1, "nodes": [',
    "bad-node": b'{"format": "pystack-dump-profile", "version": 1, "frames": [], '
                b'"threads": [], "processes": [], "nodes": [{"parent": -1, "frame": null, '
                b'"self": 0, "self_await": 0, "total": 0}, {"parent": 5, "frame": 0, '
                b'"self": 1, "self_await": 0, "total": 1}]}',
}


def test_diff_bad_input(tool, tmp_path):
    """Files diff cannot read: exit 16 and a message naming the file; a
    bad format or argument count: exit 2."""
    good = tmp_path / "good.collapsed"
    good.write_bytes(b"main (/a.py:1);f (/a.py:5) 3\n")
    missing = str(tmp_path / "missing.json")
    for name, data in list(BAD_INPUTS.items()) + [("missing", None)]:
        path = missing if data is None else str(tmp_path / name)
        if data is not None:
            with open(path, "wb") as f:
                f.write(data)
        cmd, rc, out, err = diff(tool, str(good), path)
        assert rc == EXIT_PROFILE and path in err and "as a profile" in err, \
            "%s: exit %s, stderr %r" % (cmd, rc, err)
    for args in (["-f", "bogus", str(good), str(good)], [str(good)]):
        cmd, rc, out, err = diff(tool, *args)
        assert rc == 2 and "pystack-dump diff:" in err, "%s: exit %s, %r" % (cmd, rc, err)
    cmd, rc, out, err = diff(tool, str(good), str(good))
    assert rc == 0 and out.count("(none)") == 2, "%s: exit %s: %s" % (cmd, rc, out)
