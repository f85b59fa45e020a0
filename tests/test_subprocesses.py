"""pystack-dump --subprocesses: a process and every descendant
(multiprocessing fork, spawn and forkserver workers, a Pool(2)'s workers,
a pre-fork master and its os.fork() workers, a subprocess Python child, a
child that is not Python), as text and JSON, with the command lines of
children started with a multi-line -c exact in JSON and on one line in
text; and `sample --subprocesses`, on that family in every output format
and on children that start and exit while it samples."""

import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from conftest import usable
from harness.dumps import compare, gt_sanity
from harness.procs import (TOOL_TIMEOUT, host_tmp, kill, parent_pid, run, short, spawn,
                           task_states)
from harness.profiles import check_profile
from harness.results import Result, settle
from harness.target import Target, parse_json_out, tool_run


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


def one_line(cmdline):
    """A command line as text shows it: Python's repr() of it, without
    the quotes (it has none, so repr() escapes no quote)."""
    assert "'" not in cmdline and '"' not in cmdline
    return repr(cmdline)[1:-1]


def cmdline_errors(fam, got, text, pid):
    """The children's multi-line command lines: exact in the JSON (got:
    {pid: process document}); in the text, each child's header one line,
    its command line escaped."""
    errs = []
    for key in ("python_child", "other_child"):
        want = fam[key + "_cmdline"]
        if got.get(fam[key], {}).get("cmdline") != want:
            errs.append("%s %d: JSON cmdline %r, expected %r"
                        % (key, fam[key], got.get(fam[key], {}).get("cmdline"), want))
    lines = text.splitlines()
    head = "Process %d (%s; parent %d): " % (fam["python_child"],
                                           one_line(fam["python_child_cmdline"]), pid)
    if not any(line.startswith(head + "Python ") for line in lines):
        errs.append("text: no line starts %r" % (head + "Python "))
    head = "Process %d (%s; parent %d): skipped, not a Python process" % (
        fam["other_child"], one_line(fam["other_child_cmdline"]), pid)
    if head not in lines:
        errs.append("text: no line %r" % head)
    return errs


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
    errs += tree_errors(fam, got, want)
    p = got.get(fam["python_child"], {})
    if not p.get("threads"):
        errs.append("python child %d not dumped: %r" % (fam["python_child"], p)[:300])
    p = got.get(fam["other_child"], {})
    if p.get("skipped") != "not a Python process":
        errs.append("sleep child %d: %r, expected skipped as not Python"
                    % (fam["other_child"], p))
    return errs


def functions(proc):
    return [f["function"] for t in proc.get("threads", []) for f in t["frames"]]


def tree_errors(fam, got, want):
    """The Pool's workers in pool_task(), the pre-fork master in arbiter()
    and its workers, its children, in accept_loop()."""
    errs = []
    if len(fam["pool_workers"]) != 2 or len(fam["prefork_workers"]) != 2 or not fam["master"]:
        return ["the target did not start its pool and pre-fork tree: %r" % (fam,)]
    for pids, func in ((fam["pool_workers"], "pool_task"), ([fam["master"]], "arbiter"),
                       (fam["prefork_workers"], "accept_loop")):
        for pid in pids:
            if func not in functions(got.get(pid, {})):
                errs.append("process %d: no %s() frame (%s)"
                            % (pid, func, got.get(pid, {}).get("skipped")
                               or functions(got.get(pid, {}))[:8]))
    for pid in fam["prefork_workers"]:
        if want.get(pid) != fam["master"]:
            errs.append("pre-fork worker %d: parent %r, not the master %d"
                        % (pid, want.get(pid), fam["master"]))
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
        if rc != 0 or len(heads) < 1 + len(fam["workers"]) + 7:
            errs.append("text: exit %s, %d process headers:\n%s" % (rc, len(heads), text[-1500:]))
        if "; parent %d): " % tg.pid not in text or "skipped, not a Python process" not in text:
            errs.append("text lacks a parent line or the skipped child:\n" + text[-1500:])
        if doc:
            errs += cmdline_errors(fam, dict((p.get("pid"), p) for p in doc["processes"]),
                                   text, tg.pid)
    settle(Result("subprocesses", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)


def shell_parent_errors(tool, pid, child):
    """--subprocesses on pid, a shell whose child is Python: JSON that
    parses, the shell listed first as skipped, the child dumped, exit 0
    (the Python ones were); the text without an empty block."""
    argv = [tool.path, "--subprocesses", "--json", str(pid)]
    rc, out, err, secs = run(argv, TOOL_TIMEOUT)
    doc, e = parse_json_out(out)
    if e:
        return ["%s: exit %s, %s:\n%s" % (" ".join(argv), rc, e, short(out, 600))]
    procs = doc.get("processes") or [{}]
    errs = [] if rc == 0 else ["%s: exit %s, expected 0 (its Python child was dumped): %s"
                               % (" ".join(argv), rc, short(err))]
    if procs[0].get("pid") != pid or procs[0].get("skipped") != "not a Python process":
        errs.append("the shell is not listed first as skipped: %r" % procs[0])
    dumped = [p for p in procs if p.get("pid") == child and p.get("threads")]
    if not dumped:
        errs.append("the Python child %d is not dumped: %s" % (child, short(out, 600)))
    rc, out, err, secs = run([tool.path, "--subprocesses", "--no-source", str(pid)],
                             TOOL_TIMEOUT)
    text = out.decode("utf-8", "replace")
    first = text.splitlines()[0] if text else ""
    if not first.startswith("Process %d (" % pid) or "; parent " not in first \
            or "skipped, not a Python process" not in first:
        errs.append("text: the shell's line does not come first:\n" + text[:800])
    return errs


# A Python child of a shell: prints "ready" once it runs.
READY_CHILD = "import time; print('ready', flush=True); time.sleep(1e6)"


def test_subprocesses_shell_parent(interp, tool, request):
    """A PID that is not Python (bash -c "python ...; true") with a Python
    child: listed as skipped in its place, in JSON as in text."""
    usable(interp)
    shell = spawn(["bash", "-c", '"$@"; true', "bash"] + interp.argv(["-c", READY_CHILD]),
                  stdout=subprocess.PIPE)
    try:
        line = shell.stdout.readline()
        kids = [c for c, pp in descendants(shell.pid).items() if pp == shell.pid]
        if line.strip() != b"ready" or len(kids) != 1:
            errs = ["the Python child did not start: %r, children %s" % (line, kids)]
        else:
            errs = (shell_parent_errors(tool, shell.pid, kids[0])
                    + shell_sample_errors(tool, shell.pid, kids[0])
                    + shell_hint_errors(tool, shell.pid, kids[0]))
    finally:
        kill(shell)
    settle(Result("shell parent", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)


def shell_sample_errors(tool, pid, child):
    """sample --subprocesses on the shell: exit 0, the child's samples, the
    shell named as skipped in the summary."""
    argv = [tool.path, "sample", "--subprocesses", "-n", "200", "-f", "collapsed", str(pid)]
    rc, out, err, secs = run(argv, TOOL_TIMEOUT)
    err = err.decode("utf-8", "replace")
    errs = [] if rc == 0 else ["%s: exit %s, expected 0: %s" % (" ".join(argv), rc, short(err))]
    if b"process %d " % child not in out:
        errs.append("%s: no samples of the Python child %d: %s" % (" ".join(argv), child,
                                                                   short(out, 300)))
    if "skipped pid %d (" % pid not in err:
        errs.append("%s: the shell is not named as skipped: %s" % (" ".join(argv), err))
    return errs


def shell_hint_errors(tool, pid, child):
    """The shell's pid without --subprocesses: exit 5, and a hint naming the
    Python child and the option."""
    argv = [tool.path, str(pid)]
    rc, out, err, secs = run(argv, TOOL_TIMEOUT)
    err = err.decode("utf-8", "replace")
    if rc == 5 and "process %d" % child in err and "--subprocesses" in err:
        return []
    return ["%s: exit %s, expected 5 with a hint naming child %d and --subprocesses: %s"
            % (" ".join(argv), rc, child, err)]


def running(pids):
    """Those of pids still running (a zombie is not: it only awaits its
    parent's wait)."""
    return [c for c in pids if task_states(c).get(c, "Z") != "Z"]


def test_subprocesses_launched_shell(interp, tool, request):
    """sample --subprocesses -- bash -c 'python ...; true': the shell is
    skipped, its Python child sampled; a stop (SIGINT to sample alone)
    ends the child too, and a shell that starts no Python exits 5, ended
    with what it started: no process is left behind."""
    usable(interp)
    errs = []
    out = os.path.join(host_tmp(), "launched-%d.collapsed" % os.getpid())
    argv = [tool.path, "sample", "--subprocesses", "-d", "60", "-f", "collapsed", "-o", out,
            "--", "bash", "-c", '"$@"; true', "bash"] + interp.argv(["-c", READY_CHILD])
    p = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = p.stdout.readline()
        left = descendants(p.pid)
        time.sleep(0.5)
        os.kill(p.pid, signal.SIGINT)
        so, se = p.communicate(timeout=TOOL_TIMEOUT)
        gone = running(left)
        if line.strip() != b"ready":
            errs.append("the Python grandchild did not start: %r; %s" % (line, short(se)))
        if p.returncode not in (0, 130) or not os.path.exists(out):
            errs.append("%s: exit %s, %s: %s" % (" ".join(argv), p.returncode,
                                                 "output" if os.path.exists(out) else "no output",
                                                 short(se)))
        elif b"<module>" not in open(out, "rb").read():
            errs.append("no samples of the Python grandchild in %s" % out)
        if gone:
            errs.append("left running after sample ended: %s" % gone)
    finally:
        kill(p)
        if os.path.exists(out):
            os.unlink(out)
    argv = [tool.path, "sample", "--subprocesses", "-d", "0.5", "--", "bash", "-c",
            "sleep 600; true"]
    p = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(0.3)
        left = descendants(p.pid)
        so, se = p.communicate(timeout=TOOL_TIMEOUT)
        time.sleep(0.2)
        gone = running(left)
        if p.returncode != 5 or b"no process of the family ran Python" not in se:
            errs.append("%s: exit %s, expected 5 saying no process ran Python: %s"
                        % (" ".join(argv), p.returncode, short(se)))
        if gone:
            errs.append("%s left running: %s" % (" ".join(argv), gone))
    finally:
        kill(p)
    settle(Result("launched shell", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)


# A container's processes: Python as the init of a pid namespace, with two
# Python children; it prints "ready" once they run.
NAMESPACE_INIT = """
import subprocess, sys, time
kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1e6)"])
        for _ in range(2)]
time.sleep(0.5)
print("ready", flush=True)
time.sleep(1e6)
"""


def test_subprocesses_pid_namespace(interp, tool, request):
    """A family in a pid namespace of its own (a container's): its init
    and both children found from outside through /proc and dumped."""
    usable(interp)
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare (util-linux)")
    ns = spawn(["unshare", "--pid", "--fork", "--kill-child"]
               + interp.argv(["-c", NAMESPACE_INIT]), stdout=subprocess.PIPE)
    errs = []
    try:
        line = ns.stdout.readline()
        init = [c for c, pp in descendants(ns.pid).items() if pp == ns.pid]
        if line.strip() != b"ready" or len(init) != 1:
            errs.append("the namespace's init did not start: %r, children %s" % (line, init))
        else:
            argv = [tool.path, "--subprocesses", "--json", str(init[0])]
            rc, out, err, secs = run(argv, TOOL_TIMEOUT)
            doc, e = parse_json_out(out) if rc == 0 else (None, "exit %s: %s" % (rc, short(err)))
            procs = doc["processes"] if doc else []
            dumped = [p for p in procs if "skipped" not in p and any(
                f.get("function") == "<module>" for t in p.get("threads", [])
                for f in t.get("frames", []))]
            if e or len(dumped) != 3:
                errs.append("%s: %s" % (" ".join(argv), e or "%d of 3 processes dumped: %s"
                                        % (len(dumped), short(out, 800))))
    finally:
        kill(ns)
    settle(Result("pid namespace", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)


SAMPLE_SECS = 3.0      # long enough for the churn target's children to come and go
SAMPLE_RATE = 200
SEEN_MIN_SHARE = 0.6   # of the children that lived inside the window


def sample_json(tool, pid, secs, out):
    """`sample --subprocesses -f json`: (doc, stderr text, errors, t0, t1)."""
    args = ["sample", "--subprocesses", "-r", str(SAMPLE_RATE), "-d", str(secs),
            "-f", "json", "-o", out, str(pid)]
    t0 = time.monotonic()
    argv, rc, so, se, took = tool_run(tool, args, timeout=secs + 60)
    t1 = time.monotonic()
    text = se.decode("utf-8", "replace")
    if rc != 0:
        return None, text, ["%s exited %s: %s" % (" ".join(argv), rc, short(se))], t0, t1
    try:
        with open(out) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        return None, text, ["%s: no JSON profile: %s" % (" ".join(argv), e)], t0, t1
    return doc, text, [], t0, t1


def stacks_by_pid(doc):
    """{pid: [frame function names of each sampled stack]} of a profile."""
    pid_of = dict((t["node"], t["pid"]) for t in doc["threads"])
    nodes, frames = doc["nodes"], doc["frames"]
    out = {}
    for i, nd in enumerate(nodes):
        if not nd["self"] or nd["frame"] is None:
            continue
        chain, j = [], i
        while nodes[j]["frame"] is not None:
            chain.append(frames[nodes[j]["frame"]]["function"])
            j = nodes[j]["parent"]
        out.setdefault(pid_of.get(j), []).append(chain)
    return out


def list_formats(tool):
    """The format names `sample --list-formats` prints, one a line."""
    argv, rc, so, se, _ = tool_run(tool, ["sample", "--list-formats"])
    return [line.split()[0] for line in so.decode().splitlines() if line.strip()]


def process_marks(text, pid):
    """How a format names process pid: the label (collapsed, table,
    flamegraph, speedscope, gecko, pprof's label), or a "pid" field."""
    return ("process %d" % pid in text or '"pid": %d' % pid in text
            or '"pid":%d' % pid in text)


def formats_errors(tool, tg, pids):
    """sample --subprocesses -f F for every format: each process of pids
    named apart in the output (but the heat map's, by source line)."""
    errs = []
    for fmt in list_formats(tool):
        if fmt == "heatmap":  # samples per source line, summed over processes
            continue
        out = os.path.join(tg.out_host, "family." + fmt)
        argv, rc, so, se, _ = tool_run(tool, ["sample", "--subprocesses", "-n", "30", "-q",
                                              "-f", fmt, "-o", out, str(tg.pid)])
        if rc != 0:
            errs.append("%s exited %s: %s" % (" ".join(argv), rc, short(se)))
            continue
        with open(out, "rb") as f:
            data = f.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        if fmt == "raw":  # a recording: its processes, as report reads them
            data = tool_run(tool, ["report", "-f", "json", out])[2]
        text = data.decode("utf-8", "replace")
        missing = [p for p in pids if not process_marks(text, p)]
        if missing:
            errs.append("-f %s: processes %s not named apart" % (fmt, missing))
    return errs


def test_sample_subprocesses(interp, tool, request):
    """sample --subprocesses on the family: every Python descendant sampled
    apart (the workers in worker()), the sleep child skipped and said so;
    the collapsed format roots each stack at its process, and every format
    (sample --list-formats; but the heat map) names each process apart."""
    with Target(interp, "family", extra=["family.json"]) as tg:
        gt = tg.settled_truth(gt_sanity)
        with open(tg.host_extra(0)) as f:
            fam = json.load(f)
        out = os.path.join(tg.out_host, "family-profile.json")
        doc, stderr, errs, _, _ = sample_json(tool, tg.pid, 1.0, out)
        if doc is not None:
            errs += check_profile(doc, tg.pid, gt["python_version"], "wall")
            procs = dict((p["pid"], p) for p in doc.get("processes", []))
            want = descendants(tg.pid)
            by_pid = stacks_by_pid(doc)
            for pid in [tg.pid] + fam["workers"] + [fam["python_child"]]:
                p = procs.get(pid)
                if p is None:
                    errs.append("process %d not in the profile's processes %s"
                                % (pid, sorted(procs)))
                    continue
                if pid != tg.pid and p["ppid"] != want.get(pid):
                    errs.append("process %d: ppid %r, expected %r" % (pid, p["ppid"], want.get(pid)))
                if p["python_version"] != gt["python_version"] or p["exited"] or not p["cmdline"]:
                    errs.append("process %d: %r" % (pid, p))
                if not by_pid.get(pid):
                    errs.append("process %d: no samples" % pid)
            for w in fam["workers"]:
                if not any("worker" in chain for chain in by_pid.get(w, [])):
                    errs.append("worker %d: no sample in worker() (%s)"
                                % (w, by_pid.get(w, [])[:2]))
            if fam["other_child"] in procs:
                errs.append("the sleep child %d was sampled" % fam["other_child"])
            skipped = "skipped pid %d (%s; parent %d): not a Python process" % (
                fam["other_child"], one_line(fam["other_child_cmdline"]), tg.pid)
            if skipped not in stderr:
                errs.append("the summary lacks %r:\n%s" % (skipped, stderr))
        col = os.path.join(tg.out_host, "family.collapsed")
        argv, rc, so, se, _ = tool_run(tool, ["sample", "--subprocesses", "-n", "50", "-q",
                                              "-o", col, str(tg.pid)])
        lines = open(col).read().splitlines() if rc == 0 else []
        broken = [line for line in lines if not re.match(r"process \d+[ ;].* \d+$", line)]
        if broken:
            errs.append("collapsed: lines not STACK COUNT: %s" % broken[:3])
        roots = set(line.split(";", 1)[0] for line in lines)
        want_roots = set("process %d" % p
                         for p in [tg.pid] + fam["workers"] + [fam["python_child"]])
        got_roots = set(r.split(" (")[0] for r in roots)
        if rc != 0 or not want_roots <= got_roots:
            errs.append("%s: exit %s, roots %s, expected at least %s; %s"
                        % (" ".join(argv), rc, sorted(got_roots), sorted(want_roots), short(se)))
        errs += formats_errors(tool, tg, [tg.pid] + fam["workers"] + fam["pool_workers"]
                               + fam["prefork_workers"])
    settle(Result("sample subprocesses", "FAIL" if errs else "PASS", "\n".join(errs)),
           request.node)


def test_sample_children_come_and_go(interp, tool, request):
    """sample --subprocesses follows children that start and exit while it
    samples: each one that lived inside the window is found, its job()
    samples kept under its own pid, and it is marked exited."""
    with Target(interp, "churn") as tg:
        gt = tg.wait_ground_truth()
        out = os.path.join(tg.out_host, "churn-profile.json")
        doc, stderr, errs, t0, t1 = sample_json(tool, tg.pid, SAMPLE_SECS, out)
        os.kill(tg.pid, signal.SIGUSR1)
        children = wait_json(tg.gt_host + ".children")["children"]
        if doc is not None:
            errs += check_profile(doc, tg.pid, gt["python_version"], "wall")
            procs = dict((p["pid"], p) for p in doc["processes"])
            by_pid = stacks_by_pid(doc)
            # Exited inside the sampling itself (it ends duration_s after it
            # began, before the tool writes and exits at t1), with a scan
            # (100 ms) to notice the exit.
            end = min(t1, t0 + doc["duration_s"]) - 0.2
            inside = [c for c in children if c[2] is not None and c[1] > t0 + 0.2 and c[2] < end]
            seen = [c for c in inside if c[0] in procs]
            if len(inside) < 3 or len(seen) < SEEN_MIN_SHARE * len(inside):
                errs.append("%d of the %d children that lived inside the %.1fs window were "
                            "sampled (%s)" % (len(seen), len(inside), t1 - t0,
                                              [c[0] for c in inside]))
            for pid, _, _ in seen:
                if not procs[pid]["exited"]:
                    errs.append("child %d exited but is not marked so" % pid)
                if not any(gt["job"]["function"] in chain for chain in by_pid.get(pid, [])):
                    errs.append("child %d: no sample in %s (%s)"
                                % (pid, gt["job"]["function"], by_pid.get(pid, [])[:2]))
            if "%d processes" % len(procs) not in stderr:
                errs.append("the summary does not count the processes:\n" + stderr)
    settle(Result("children come and go", "FAIL" if errs else "PASS", "\n".join(errs)),
           request.node)


def wait_json(path, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path):
            with open(path) as f:
                return json.load(f)
        time.sleep(0.05)
    return {"children": []}


def test_tasks_subprocesses(interp, tool, request):
    """--tasks --subprocesses --json: the asyncio child's task graph
    (family_task awaited by family_main) in its own process's document,
    every other Python descendant listed with its (empty) graph, the sleep
    child skipped."""
    if interp.minor < (3, 7):
        settle(Result("tasks subprocesses", "SKIP", "asyncio task graphs start at 3.7"),
               request.node)
        return
    with Target(interp, "family", extra=["family.json"]) as tg:
        tg.settled_truth(gt_sanity)
        with open(tg.host_extra(0)) as f:
            fam = json.load(f)
        argv = [tool.path, "--tasks", "--subprocesses", "--json", str(tg.pid)]
        rc, out, err, secs = run(argv, TOOL_TIMEOUT)
    doc, e = parse_json_out(out) if rc == 0 else (None, "exit %s: %s" % (rc, short(err)))
    errs = [e] if e else []
    procs = dict((p.get("pid"), p) for p in (doc or {}).get("processes", []))
    child = procs.get(fam["asyncio_child"])
    if doc is not None:
        if child is None:
            errs.append("the asyncio child %r is not listed: %s"
                        % (fam["asyncio_child"], sorted(procs)))
        elif "family_task" not in json.dumps(child) or "family_main" not in json.dumps(child):
            errs.append("the asyncio child's graph lacks family_task/family_main: %s"
                        % json.dumps(child)[:800])
        if procs.get(fam["other_child"], {}).get("skipped") != "not a Python process":
            errs.append("sleep child: %r" % procs.get(fam["other_child"]))
        missing = sorted(set([tg.pid] + fam["workers"] + [fam["python_child"]]) - set(procs))
        if missing:
            errs.append("processes missing: %s" % missing)
    if errs:
        errs.insert(0, "command: " + " ".join(argv))
    settle(Result("tasks subprocesses", "FAIL" if errs else "PASS", "\n".join(errs)),
           request.node)


# Launched by sample: starts Python children one after another (each one
# caught by a scan between its fork and its exec or not), for a second.
SPAWNER = """
import subprocess, sys, time
end = time.monotonic() + 1.0
while time.monotonic() < end:
    subprocess.call([sys.executable, "-c", "import time; time.sleep(0.03)"])
"""
LAUNCHES = 5
# Children seen in all the launches together.  A child is caught only by
# a scan (every 100 ms) that finds it already running Python, before it
# exits 30 ms later: 1 to 10 a launch (1 seen once in 23 quiet launches,
# and in one of CI's sanitizer runs), 23-48 in all (19 interpreters, both
# builds).
CHILDREN_MIN = 2 * LAUNCHES


def twice_errors(argv, doc):
    """The launched process listed once; a child twice only as the two
    programs it was: the fork of its parent (its command line) sampled
    before it ran exec, then the program it ran."""
    procs = doc["processes"]
    pids = [p["pid"] for p in procs]
    errs = []
    if pids.count(doc["pid"]) != 1:
        errs.append("%s: processes %s, the launched one %d" % (" ".join(argv), pids, doc["pid"]))
    for i, p in enumerate(procs):
        later = [q for q in procs[i + 1:] if q["pid"] == p["pid"]]
        if later and (p["pid"] == doc["pid"] or not p["exited"]
                      or p["cmdline"] != procs[0]["cmdline"]
                      or later[0]["cmdline"] == p["cmdline"]):
            errs.append("process %d listed twice: %r, then %r" % (p["pid"], p, later[0]))
    return errs


def test_sample_launch_each_pid_once(interp, tool, request):
    """sample --subprocesses -- PROGRAM, PROGRAM starting Python children:
    the launched process in the profile once, with samples (opened as it
    ran exec, it was listed twice: under the command line of before, with
    no samples, then the real one); several launches, the race being one,
    with CHILDREN_MIN children seen in all."""
    usable(interp)
    errs, children = [], 0
    out = "/tmp/pyd-launch-once-%d.json" % os.getpid()
    try:
        for _ in range(LAUNCHES):
            argv, rc, so, se, took = tool_run(
                tool, ["sample", "--subprocesses", "-r", str(SAMPLE_RATE), "-q", "-f", "json",
                       "-o", out, "--"] + interp.argv(["-c", SPAWNER]), timeout=60)
            try:
                with open(out) as f:
                    doc = json.load(f)
            except (OSError, ValueError) as e:
                errs.append("%s: exit %s, no profile (%s): %s" % (" ".join(argv), rc, e, short(se)))
                break
            errs += twice_errors(argv, doc)
            children += sum(p["pid"] != doc["pid"] for p in doc["processes"])
            if not stacks_by_pid(doc).get(doc["pid"]):
                errs.append("the launched process %d has no samples" % doc["pid"])
    finally:
        if os.path.exists(out):
            os.remove(out)
    if not errs and children < CHILDREN_MIN:
        errs.append("%d children seen in %d launches (at least %d expected)"
                    % (children, LAUNCHES, CHILDREN_MIN))
    settle(Result("launch each pid once", "FAIL" if errs else "PASS", "\n".join(errs),
                  info="%d children seen in %d launches" % (children, LAUNCHES)),
           request.node)
