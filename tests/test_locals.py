"""pystack-dump --locals: every argument and local of every frame, equal
to Python's own repr() within the limits, live, --locked, through a
snapshot and from a kernel core; as text; with limits of one's own; and a
frame whose local points at freed memory."""

import ast
import importlib.util
import os
import re

import pytest

from harness.cores import (CORE_PATTERN, GCORE_TARGET_ENV, gcore_slot, kernel_core, remove,
                           run_gcore)
from harness.dumps import compare, core_doc_checks, gt_sanity, parse_dump, roundtrip_errors
from harness.interps import TARGETS_DIR
from harness.locals import check_locals_doc
from harness.procs import TOOL_TIMEOUT, crashed, host_tmp, run, short, vlog
from harness.results import Result, settle
from harness.target import Target, parse_json_out, tool_file_run


def dump(tool, args, flag="--locals"):
    """(doc, error) of pystack-dump --locals --json ARGS (or -L: flag)."""
    argv = [tool.path, flag, "--json"] + args
    rc, out, err, secs = run(argv, TOOL_TIMEOUT)
    vlog("%s -> rc=%s in %.2fs" % (" ".join(argv), rc, secs))
    doc, e = parse_dump(rc, out, err, secs)
    return doc, ("%s: %s" % (" ".join(argv), e) if e else None)


def result(name, errs, info=None):
    return Result(name, "FAIL" if errs else "PASS", "\n".join(errs), info=info)


def text_errors(tool, pid, gt):
    """The text form: under each frame, "Arguments:" then "Locals:", one
    "name = repr" a line, as the ground truth has them."""
    argv = [tool.path, "--locals", "--no-source", str(pid)]
    rc, out, err, _ = run(argv, TOOL_TIMEOUT)
    if rc != 0:
        return ["%s exited %s: %s" % (" ".join(argv), rc, short(err))]
    text = out.decode("utf-8")
    errs = []
    for t in gt["threads"]:
        for fr in t["frames"]:
            if not fr["arguments"] and not fr["locals"]:
                continue
            block = ['  File "%s", line %d, in %s' % (fr["file"], fr["line"],
                                                      fr["qualname"] or fr["function"])]
            for head, k in (("Arguments", "arguments"), ("Locals", "locals")):
                if fr[k]:
                    block.append("    %s:" % head)
                    block += ["      %s = %s" % (n, r) for n, r in fr[k]]
            if "\n".join(block) + "\n" not in text:
                errs.append("text output lacks, for thread %r:\n%s" % (t["name"], "\n".join(block)))
    return errs


def locals_job(interp, tool):
    """The locals target: live, --locked, --save-snapshot then --snapshot,
    as text, and (last: it kills the target) from a kernel core."""
    results = []
    with Target(interp, "locals", wrap=["prlimit", "--core=unlimited", "--"]) as tg:
        gt = tg.settled_truth(gt_sanity)
        live, e = dump(tool, [str(tg.pid)])
        results.append(result("live", [e] if e else check_locals_doc(gt, live, interp, tg.pid)))
        doc, e = dump(tool, [str(tg.pid)], flag="-L")
        results.append(result("-L", [e] if e else check_locals_doc(gt, doc, interp, tg.pid)))
        doc, e = dump(tool, ["--locked", str(tg.pid)])
        results.append(result("locked", [e] if e else check_locals_doc(gt, doc, interp, tg.pid)))
        tg.wait_settled()  # resumed threads restart their sleeps: runnable for a moment
        results.append(result("text", text_errors(tool, tg.pid, gt)))
        results.append(snapshot_result(tool, tg, gt, interp))
        results.append(no_vars_result(tool, tg))
        results.append(core_result(tool, tg, gt, interp))
    return results


def snapshot_result(tool, tg, gt, interp):
    """A snapshot holds the bytes the locals needed: --snapshot --locals
    gives the live document back."""
    snap = os.path.join(host_tmp(), "snap-locals-" + tg.run_id)
    try:
        live, e = dump(tool, ["--save-snapshot", snap, str(tg.pid)])
        if e:
            return result("snapshot", [e])
        rep, e = dump(tool, ["--snapshot", snap])
        if e:
            return result("snapshot", [e])
        errs = roundtrip_errors(live, rep, "dump with --locals")
        errs += check_locals_doc(gt, rep, interp, tg.pid)
        return result("snapshot", errs, info="%d bytes" % os.path.getsize(snap))
    finally:
        remove(snap)


def no_vars_result(tool, tg):
    """--locals of a snapshot saved without it: exit 0, the stacks, no
    frame's variables called unreadable, and a note that the snapshot
    holds none and how to save one that does."""
    snap = os.path.join(host_tmp(), "snap-novars-" + tg.run_id)
    try:
        argv = [tool.path, "--save-snapshot", snap, str(tg.pid)]
        rc, out, err, _ = run(argv, TOOL_TIMEOUT)
        if rc != 0:
            return result("snapshot without variables",
                          ["%s exited %s: %s" % (" ".join(argv), rc, short(err))])
        argv = [tool.path, "--locals", "--snapshot", snap]
        rc, out, err, _ = run(argv, TOOL_TIMEOUT)
        out, err = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
        errs = []
        if rc != 0 or "Traceback" not in out:
            errs.append("%s exited %s: %s" % (" ".join(argv), rc, short(err)))
        if "unreadable" in out:
            errs.append("%s calls variables unreadable that the snapshot never held:\n%s"
                        % (" ".join(argv), short(out.encode())))
        if "holds no variables" not in err or "--locals --save-snapshot" not in err:
            errs.append("%s: no note that the snapshot holds no variables: %s"
                        % (" ".join(argv), short(err.encode())))
        return result("snapshot without variables", errs)
    finally:
        remove(snap)


def core_result(tool, tg, gt, interp):
    err = CORE_PATTERN.ensure()
    if err:
        return Result("core", "SKIP", err)
    core = kernel_core(tg.proc, tg.pid, interp.chroot)
    try:
        args = ["--core", core] + (["--sysroot", interp.chroot] if interp.chroot else [])
        argv, rc, out, err = tool_file_run(tool, args + ["--locals", "--json"])
        if crashed(rc) or rc != 0:
            return result("core", ["%s exited %s; stderr: %s" % (" ".join(argv), rc, short(err))])
        doc, e = parse_json_out(out)
        if e:
            return result("core", ["%s: %s" % (" ".join(argv), e)])
        return result("core", core_doc_checks(doc) + check_locals_doc(gt, doc, interp, tg.pid))
    finally:
        remove(core)


@pytest.mark.job("locals")
@pytest.mark.parametrize("kind", ["live", "-L", "locked", "text", "snapshot",
                                  "snapshot without variables", "core"])
def test_locals(interp, kind, tool, jobs, request):
    """Arguments and locals of every frame equal the target's own repr()."""
    settle(jobs.result(kind, locals_job, interp, tool), request.node)


def dangling_doc(tool, tg, interp, source):
    """(doc, error) of --locals --json on the target live, on a snapshot of
    it, or on a gcore core of it."""
    if source == "live":
        return dump(tool, [str(tg.pid)])
    if source == "snapshot":
        path = os.path.join(tg.out_host, "dangling.snap")
        doc, e = dump(tool, ["--save-snapshot", path, str(tg.pid)])
        return (None, e) if e else dump(tool, ["--snapshot", path])
    prefix = os.path.join(host_tmp(), "gcore-dangling-" + tg.run_id)
    with gcore_slot():
        core, warned, err = run_gcore(tg.pid, prefix)
        if not core:
            return None, err
        try:
            return dump(tool, ["--core", core]
                        + (["--sysroot", interp.chroot] if interp.chroot else []))
        finally:
            os.unlink(core)


@pytest.mark.parametrize("source", ["live", "snapshot", "core"])
def test_locals_dangling(interp, tool, source, request):
    """A local whose object was freed (its memory unmapped): that value
    shows as <unreadable at 0xADDR>, the rest of the dump is complete and
    the exit status 0; live, from a snapshot (which cannot hold what could
    not be read) and from a gcore core (which leaves the unmapped page
    out)."""
    with Target(interp, "locals_dangling", extra=["addr.txt"],
                env_extra=GCORE_TARGET_ENV if source == "core" else None) as tg:
        gt = tg.settled_truth(gt_sanity)
        with open(tg.host_extra(0)) as f:
            addr = int(f.read())
        doc, e = dangling_doc(tool, tg, interp, source)
        errs = [e] if e else []
        if doc:
            errs += compare(gt, doc, interp, tg.pid)
            frames = [fr for t in doc["threads"] for fr in t["frames"]
                      if fr.get("function") == "dangling"]
            want = {"blob": "<unreadable at 0x%x>" % addr, "other": "'ok'"}
            if len(frames) != 1:
                errs.append("expected one frame of dangling(), got %d" % len(frames))
            elif frames[0]["locals"] != want:
                errs.append("dangling() locals %r, expected %r" % (frames[0]["locals"], want))
    settle(result("dangling", errs), request.node)


BUDGET_SECONDS = 10.0


def test_locals_budget(interp, tool, request):
    """Locals that cost more than the budget: the dump stops reading them
    there (locals_budget_spent, <not read: budget spent>), prints every
    frame, exits 0, quickly and within the text budget."""
    with Target(interp, "locals_budget") as tg:
        gt = tg.settled_truth(gt_sanity)
        argv = [tool.path, "--locals", "--json", str(tg.pid)]
        rc, out, err, secs = run(argv, TOOL_TIMEOUT)
        doc, e = parse_dump(rc, out, err, secs)
        errs = [e] if e else compare(gt, doc, interp, tg.pid)
        if doc:
            if doc.get("locals_budget_spent") is not True:
                errs.append("locals_budget_spent is %r, expected true"
                            % (doc.get("locals_budget_spent"),))
            if b"<not read: budget spent>" not in out:
                errs.append("no value says <not read: budget spent>")
        if secs > BUDGET_SECONDS:
            errs.append("took %.1fs (more than %.0fs)" % (secs, BUDGET_SECONDS))
        if len(out) > (80 << 20):
            errs.append("printed %d MB" % (len(out) >> 20))
    settle(result("budget", errs, info="%.2fs, %d MB" % (secs, len(out) >> 20)), request.node)


# Limits of one's own (--locals-string, --locals-items, --locals-depth),
# all tighter than the defaults the ground truth was rendered with.
LIMITS = {"A": (5, 2, 1), "B": (3, 3, 0)}

# Values of locals.py the ground truth cannot be re-rendered from (cut at
# the defaults already, or holding inf and nan), as the limits render them.
LIMITED = {
    ("scalars", "long_str"): {"A": "'xxxxx'...", "B": "'xxx'..."},
    ("scalars", "exact"): {"A": "'eeeee'...", "B": "'eee'..."},
    ("scalars", "floats"): {"A": "(1.5e-07, 1e+16, ...)", "B": "(...)"},
    ("scalars", "by"): {"A": "(b'', b\"'\", ...)", "B": "(...)"},
    ("containers", "lists"): {"A": "[[], [...], ...]", "B": "[...]"},
    ("containers", "big_d"): {"A": "{0: '0', 1: '1', ...}", "B": "{...}"},
    ("containers", "rec"): {"A": "[1, [...]]", "B": "[...]"},
    ("containers", "rec_d"): {"A": "{'k': 1, 'self': {...}}", "B": "{...}"},
    ("containers", "ring"): {"A": "[0, {...}]", "B": "[...]"},
    ("containers", "rec_t"): {"A": "([...],)", "B": "(...)"},
    ("main", "ring"): {"A": "[{...}, (...)]", "B": "[...]"},
    ("containers", "mixed"): {"B": "(...)"},
}

# Reprs no limit of these changes: other objects, ints cut by digits
# (there is no option for those), infinities and nan.
UNLIMITED = re.compile(r"<[^<>]* object at 0x[0-9a-f]+>|-?\d+\.\.\. \(\d+ digits\)|-?inf|nan")


def vars_renderer():
    """A copy of the ground truth's renderer (tests/targets/_pyd_vars.py)
    whose limits (its STRING, ITEMS, DEPTH) this test sets."""
    spec = importlib.util.spec_from_file_location(
        "_pyd_vars_limits", os.path.join(TARGETS_DIR, "_pyd_vars.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def relimit(pv, default, limits):
    """The repr under limits of a value whose repr at the defaults is
    default: the value rebuilt from it (when the defaults cut nothing and
    it is a literal) and rendered again; None if it cannot be."""
    if UNLIMITED.fullmatch(default):
        return default
    try:
        value = ast.literal_eval(default)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    pv.STRING, pv.ITEMS, pv.DEPTH = 80, 10, 2
    if pv.brepr(value) != default:      # not rebuilt as it was (an Ellipsis ...)
        return None
    pv.STRING, pv.ITEMS, pv.DEPTH = limits
    return pv.brepr(value)


def limits_errors(gt, doc, key, pv):
    """Each variable of doc against the ground truth under LIMITS[key];
    (errors, how many were compared)."""
    errs, seen, compared = [], set(), 0
    got = dict((t["tid"], t) for t in doc.get("threads", []))
    for t in gt["threads"]:
        g = got.get(t["tid"])
        for j, (ef, gf) in enumerate(zip(t["frames"], g["frames"] if g else [])):
            for k in ("arguments", "locals"):
                have = gf.get(k) or {}
                for name, default in ef[k]:
                    hand = LIMITED.get((ef["function"], name), {})
                    want = hand.get(key) or relimit(pv, default, LIMITS[key])
                    if hand:
                        seen.add((ef["function"], name))
                    if want is None:
                        continue
                    compared += 1
                    if have.get(name) != want:
                        errs.append("%s: thread %r frame %d (%s): %s = %s, expected %s"
                                    % (key, t["name"], j, ef["function"], name,
                                       have.get(name), want))
    errs += ["%s: no %s in %s()" % (key, n, f) for f, n in sorted(set(LIMITED) - seen)]
    return errs, compared


def test_locals_limits(interp, tool, request):
    """--locals-string, --locals-items and --locals-depth: each value of
    the locals target as the ground truth's renderer gives it under those
    limits (a str cut to N characters and "...", N items then "...",
    containers past the depth as [...])."""
    pv = vars_renderer()
    errs, info = [], []
    with Target(interp, "locals") as tg:
        gt = tg.settled_truth(gt_sanity)
        for key, (string, items, depth) in sorted(LIMITS.items()):
            doc, e = dump(tool, ["--locals-string", str(string), "--locals-items", str(items),
                                 "--locals-depth", str(depth), str(tg.pid)])
            if e:
                errs.append(e)
                continue
            errs += compare(gt, doc, interp, tg.pid)
            more, n = limits_errors(gt, doc, key, pv)
            errs += more
            info.append("%s: %d values" % (key, n))
    settle(result("limits", errs, info=", ".join(info)), request.node)
