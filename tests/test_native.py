"""pystack-dump --native: each thread's native stack merged with its
Python stack, live (which pauses the target) and from a kernel core: the
Python frames exactly as the target saw them, native frames between them
(ctypes -> qsort -> a Python callback), the innermost frames native, a
thread that runs no Python, and --native-all keeping the interpreter's
own frames."""

import pytest

from harness.cores import CORE_PATTERN, kernel_core, remove
from harness.dumps import check_not_stopped, compare, core_doc_checks, gt_sanity
from harness.procs import TOOL_TIMEOUT, crashed, run, short
from harness.results import Result, settle
from harness.target import Target, parse_json_out, tool_file_run

EVAL_LOOP = "_PyEval_EvalFrameDefault"


def python_only(doc):
    """The document with each thread's Python frames only (and threads
    that have some), as a dump without --native would print them."""
    d = dict(doc)
    d["threads"] = []
    for t in doc["threads"]:
        py = [dict((k, v) for k, v in f.items() if k != "kind")
              for f in t["frames"] if f.get("kind") == "python"]
        if py:
            d["threads"].append(dict(t, frames=py))
    return d


def native_errors(gt, doc, all_frames):
    """What is wrong with a --native (or --native-all) document."""
    errs = []
    for t in doc["threads"]:
        for f in t["frames"]:
            if f.get("kind") not in ("python", "native"):
                errs.append("thread %s: a frame of kind %r" % (t["tid"], f.get("kind")))
                return errs
            if f["kind"] == "native" and not isinstance(f.get("address"), int):
                errs.append("thread %s: native frame without an address: %r" % (t["tid"], f))
                return errs
    names = dict((t["tid"], t["name"]) for t in gt["threads"])
    loops = 0
    for t in doc["threads"]:
        fr = t["frames"]
        loops += sum(1 for f in fr if f["kind"] == "native" and f["function"]
                     and f["function"].startswith(EVAL_LOOP))
        if t["tid"] not in names:
            # A thread that runs no Python: pthread_create(sleep).
            if not fr or any(f["kind"] == "python" for f in fr):
                errs.append("thread %s (no Python) has frames %r" % (t["tid"], fr[:3]))
            elif not any("sleep" in (f["function"] or "") for f in fr):
                errs.append("thread %s (no Python): no sleep among %s"
                            % (t["tid"], [f["function"] for f in fr]))
            continue
        if fr and fr[0]["kind"] != "native":
            errs.append("thread %r: innermost frame %r is not native" % (names[t["tid"]], fr[0]))
        if names[t["tid"]] == "callback":
            py = [i for i, f in enumerate(fr) if f["kind"] == "python"]
            inner = [i for i in py if fr[i]["function"] == "compare"]
            outer = [i for i in py if fr[i]["function"] == "sort_with_callback"]
            between = fr[inner[0] + 1:outer[0]] if inner and outer else []
            if not any("qsort" in (f["function"] or "") for f in between):
                errs.append("callback thread: no qsort between compare() and "
                            "sort_with_callback(): %s" % [f.get("function") for f in between])
    if not any(t["tid"] not in names for t in doc["threads"]):
        errs.append("the thread that runs no Python is missing")
    if all_frames and not loops:
        errs.append("--native-all shows no %s frame" % EVAL_LOOP)
    if not all_frames and loops:
        errs.append("--native shows %d %s frames (only --native-all should)" % (loops, EVAL_LOOP))
    return errs


def native_job(interp, tool):
    """native.py: --native and --native-all live, then from a kernel core."""
    res = []
    with Target(interp, "native", wrap=["prlimit", "--core=unlimited", "--"]) as tg:
        gt = tg.settled_truth(gt_sanity)
        for name, flag in (("live", "--native"), ("live --native-all", "--native-all")):
            argv = [tool.path, flag, "--json", str(tg.pid)]
            rc, out, err, secs = run(argv, TOOL_TIMEOUT)
            doc, e = parse_json_out(out) if rc == 0 else (None, "exit %s: %s" % (rc, short(err)))
            errs = [e] if e else (compare(gt, python_only(doc), interp, tg.pid)
                                  + native_errors(gt, doc, flag == "--native-all"))
            errs += check_not_stopped(tg.pid)
            res.append(Result(name, "FAIL" if errs else "PASS", "\n".join(errs)))
            tg.wait_settled()  # resumed threads restart their sleeps: runnable for a moment
        argv = [tool.path, "--native", "--no-source", str(tg.pid)]
        rc, out, err, secs = run(argv, TOOL_TIMEOUT)
        text = out.decode("utf-8", "replace")
        ok = rc == 0 and "  File " in text and "  #0 " in text and "qsort" in text
        res.append(Result("text", "PASS" if ok else "FAIL",
                          "" if ok else "exit %s:\n%s" % (rc, text[-1500:])))
        cerr = CORE_PATTERN.ensure()
        if cerr:
            res.append(Result("core", "SKIP", cerr))
            return res
        core = kernel_core(tg.proc, tg.pid, interp.chroot)
        try:
            args = ["--core", core] + (["--sysroot", interp.chroot] if interp.chroot else [])
            argv, rc, out, err = tool_file_run(tool, args + ["--native", "--json"])
            if crashed(rc) or rc != 0:
                errs = ["%s exited %s: %s" % (" ".join(argv), rc, short(err))]
            else:
                doc, e = parse_json_out(out)
                errs = [e] if e else (core_doc_checks(doc)
                                      + compare(gt, python_only(doc), interp, tg.pid)
                                      + native_errors(gt, doc, False))
            res.append(Result("core", "FAIL" if errs else "PASS", "\n".join(errs)))
        finally:
            remove(core)
    return res


@pytest.mark.job("native")
@pytest.mark.parametrize("kind", ["live", "live --native-all", "text", "core"])
def test_native(interp, kind, tool, jobs, request):
    """The merged native and Python stacks of native.py."""
    settle(jobs.result(kind, native_job, interp, tool), request.node)
