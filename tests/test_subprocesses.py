"""pystack-dump --subprocesses: a process and every descendant
(multiprocessing fork, spawn and forkserver workers, a subprocess Python
child, a child that is not Python), as text and JSON."""

import json
import os

from harness.dumps import compare, gt_sanity
from harness.procs import TOOL_TIMEOUT, parent_pid, run, short
from harness.results import Result, settle
from harness.target import Target, parse_json_out


def descendants(pid):
    """{pid: ppid} of pid's descendants, from /proc (independently of the
    tool)."""
    parent = {}
    for p in os.listdir("/proc"):
        ppid = parent_pid(int(p)) if p.isdigit() else None
        if ppid is not None:
            parent[int(p)] = ppid
    out, todo = {}, [pid]
    while todo:
        q = todo.pop()
        for c, pp in parent.items():
            if pp == q and c not in out:
                out[c] = pp
                todo.append(c)
    return out


def family_errors(gt, doc, fam, interp, pid):
    errs = []
    procs = doc.get("processes")
    if not isinstance(procs, list) or not procs:
        return ["no processes list: %r" % (doc,)[:300]]
    if procs[0].get("pid") != pid:
        errs.append("the first process is %r, not the target %d" % (procs[0].get("pid"), pid))
    else:
        errs += ["target: " + e for e in compare(gt, dict(procs[0]), interp, pid)]
    want = descendants(pid)
    got = dict((p.get("pid"), p) for p in procs[1:])
    missing = sorted(set(want) - set(got))
    if missing:
        errs.append("descendants missing: %s" % missing)
    for c, p in got.items():
        if want.get(c) != p.get("ppid"):
            errs.append("process %s: ppid %r, expected %r" % (c, p.get("ppid"), want.get(c)))
        if not isinstance(p.get("cmdline"), str) or not p["cmdline"]:
            errs.append("process %s: no cmdline" % c)
    for w in fam["workers"]:
        p = got.get(w, {})
        funcs = [f["function"] for t in p.get("threads", []) for f in t["frames"]]
        if "worker" not in funcs:
            errs.append("pool worker %d: no worker() frame (%s)" % (w, p.get("skipped") or funcs[:8]))
    p = got.get(fam["python_child"], {})
    if not p.get("threads"):
        errs.append("python child %d not dumped: %r" % (fam["python_child"], p)[:300])
    p = got.get(fam["other_child"], {})
    if p.get("skipped") != "not a Python process":
        errs.append("sleep child %d: %r, expected skipped as not Python"
                    % (fam["other_child"], p))
    return errs


def test_subprocesses(interp, tool, request):
    """--subprocesses --json, and its text: every descendant, the Python
    ones dumped, the others skipped."""
    with Target(interp, "family", extra=["family.json"]) as tg:
        gt = tg.settled_truth(gt_sanity)
        with open(tg.host_extra(0)) as f:
            fam = json.load(f)
        argv = [tool.path, "--subprocesses", "--json", str(tg.pid)]
        rc, out, err, secs = run(argv, TOOL_TIMEOUT)
        doc, e = parse_json_out(out) if rc == 0 else (None, "exit %s: %s" % (rc, short(err)))
        errs = [e] if e else family_errors(gt, doc, fam, interp, tg.pid)
        rc, out, err, secs = run([tool.path, "--subprocesses", "--no-source", str(tg.pid)],
                                 TOOL_TIMEOUT)
        text = out.decode("utf-8", "replace")
        heads = [line for line in text.splitlines() if line.startswith("Process ")]
        if rc != 0 or len(heads) < 1 + len(fam["workers"]) + 2:
            errs.append("text: exit %s, %d process headers:\n%s" % (rc, len(heads), text[-1500:]))
        if "(parent %d: " % tg.pid not in text or "skipped, not a Python process" not in text:
            errs.append("text lacks a parent line or the skipped child:\n" + text[-1500:])
    settle(Result("subprocesses", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)
