"""pystack-dump --locals: every argument and local of every frame, equal
to Python's own repr() within the limits, live, --locked, through a
snapshot and from a kernel core; as text; and a frame whose local points
at freed memory."""

import os

import pytest

from harness.cores import CORE_PATTERN, kernel_core, remove
from harness.dumps import compare, core_doc_checks, gt_sanity, parse_dump, roundtrip_errors
from harness.locals import check_locals_doc
from harness.procs import TOOL_TIMEOUT, crashed, host_tmp, run, short, vlog
from harness.results import Result, settle
from harness.target import Target, parse_json_out, tool_file_run


def dump(tool, args):
    """(doc, error) of pystack-dump --locals --json ARGS."""
    argv = [tool.path, "--locals", "--json"] + args
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
        doc, e = dump(tool, ["--locked", str(tg.pid)])
        results.append(result("locked", [e] if e else check_locals_doc(gt, doc, interp, tg.pid)))
        tg.wait_settled()  # resumed threads restart their sleeps: runnable for a moment
        results.append(result("text", text_errors(tool, tg.pid, gt)))
        results.append(snapshot_result(tool, tg, gt, interp))
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
@pytest.mark.parametrize("kind", ["live", "locked", "text", "snapshot", "core"])
def test_locals(interp, kind, tool, jobs, request):
    """Arguments and locals of every frame equal the target's own repr()."""
    settle(jobs.result(kind, locals_job, interp, tool), request.node)


def test_locals_dangling(interp, tool, request):
    """A local whose object was freed (its memory unmapped): that value
    shows as <unreadable at 0xADDR>, the rest of the dump is complete and
    the exit status 0."""
    with Target(interp, "locals_dangling", extra=["addr.txt"]) as tg:
        gt = tg.settled_truth(gt_sanity)
        with open(tg.host_extra(0)) as f:
            addr = int(f.read())
        doc, e = dump(tool, [str(tg.pid)])
        errs = [e] if e else []
        if doc:
            errs += compare(gt, doc, interp, tg.pid)
            frames = [fr for t in doc["threads"] for fr in t["frames"]
                      if fr["function"] == "dangling"]
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
