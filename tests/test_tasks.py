"""pystack-dump --tasks: asyncio task graphs (3.7+) of
tests/targets/asyncio_graph.py, every task, frame and edge compared with
its own ground truth."""

import os

import pytest

from harness.cores import GCORE, GCORE_TARGET_ENV, gcore_slot, run_gcore
from harness.dumps import (check_not_stopped, first_difference, gt_sanity, roundtrip_errors,
                           without_source)
from harness.procs import TOOL_TIMEOUT, host_tmp, run, short
from harness.results import Result, settle
from harness.target import Target, parse_json_out, tool_file_run
from harness.tasks import (TASKS_MANY, TASKS_MANY_MAX_SECS, TASKS_ORACLE_MIN, TASKS_TARGET,
                           _start_tasks_target, asyncio_ps_vs, check_tasks_schema, compare_tasks,
                           mentions, parse_tasks, run_asyncio_ps, tasks_info, tasks_run,
                           tasks_unsupported, unsupported_result, with_graph_diff)


def tasks_names(interp):
    """The checks tasks_job makes, by name."""
    names = ["tasks:" + TASKS_TARGET, "tasks-tree", "tasks-table", "tasks-snapshot"]
    if interp.chroot and interp.minor >= TASKS_ORACLE_MIN:
        names.append("tasks-oracle:asyncio ps")
    return names + ["tasks --locked"]


def live_graph(interp, tool, tg, names, timeout=TOOL_TIMEOUT):
    """A started target's ground truth and its `--tasks --json`: (None, gt,
    argv, doc, error, seconds), or (results, ...) when there is nothing to
    compare (no sane ground truth, task graphs not supported)."""
    gt, early = _start_tasks_target(interp, names, tg)
    if early:
        return early, None, None, None, None, None
    argv, rc, out, err, secs = tasks_run(tool, ["--json", str(tg.pid)], timeout)
    if tasks_unsupported(rc, err):
        return unsupported_result(interp, names, argv, err), gt, argv, None, None, secs
    doc, e = parse_tasks(argv, rc, out, err, secs)
    return None, gt, argv, doc, e, secs


def tasks_job(interp, tool):
    """The task graph of a live asyncio_graph target: --tasks --json against
    the ground truth; the tree and the table; a snapshot round trip; on
    3.14+ `python -m asyncio ps`; --locked."""
    res, names = [], tasks_names(interp)
    with Target(interp, TASKS_TARGET) as tg:
        early, gt, argv, doc, e, _ = live_graph(interp, tool, tg, names)
        if early:
            return early
        pid = str(tg.pid)
        errs = with_graph_diff(e, doc, gt, interp) if e else compare_tasks(gt, doc, interp)
        if errs and not e:
            errs.insert(0, "command: " + " ".join(argv))
        res.append(Result(names[0], "FAIL" if errs else "PASS", "\n".join(errs),
                          info=tasks_info(doc) if doc else ""))
        if e:
            doc = None
        for n, args in (("tasks-tree", []), ("tasks-table", ["--table"])):
            argv, rc, out, err, secs = tasks_run(tool, args + [pid])
            cmd = " ".join(argv)
            if rc != 0:
                errs = ["%s exited %s (expected 0); stderr: %s" % (cmd, rc, short(err))]
            else:
                text = out.decode("utf-8", "replace")
                miss = [t["name"] for t in gt["tasks"] if not mentions(text, t["name"])]
                errs = ["%s does not mention task(s) %s; stdout: %s"
                        % (cmd, ", ".join(map(repr, miss)), short(out, 1500))] if miss else []
            res.append(Result(n, "FAIL" if errs else "PASS", "\n".join(errs)))
        res.append(tasks_snapshot_roundtrip(interp, tool, tg, gt))
        if "tasks-oracle:asyncio ps" in names:
            res.append(tasks_oracle(interp, gt, doc, tg.pid))
        argv, rc, out, err, secs = tasks_run(tool, ["--locked", "--json", pid])
        ldoc, e = parse_tasks(argv, rc, out, err, secs)
        errs = with_graph_diff(e, ldoc, gt, interp) if e else compare_tasks(gt, ldoc, interp)
        errs += check_not_stopped(tg.pid)
        if errs and not e:
            errs.insert(0, "command: " + " ".join(argv))
        res.append(Result("tasks --locked", "FAIL" if errs else "PASS",
                          "\n".join(errs)))
    return res


def tasks_oracle(interp, gt, doc, pid):
    n = "tasks-oracle:asyncio ps"
    rows, err = run_asyncio_ps(interp, pid)
    if err:
        return Result(n, "FAIL", err)
    gt_errs, facts = asyncio_ps_vs(gt, rows, gt["main_tid"], interp.minor, "ground truth")
    if doc is None:
        errs = ["no pystack-dump --tasks --json output to compare (see the tasks:%s test)"
                % TASKS_TARGET]
        errs += (["NOTE: asyncio ps also disagrees with the ground truth:"]
                 + ["  " + x for x in gt_errs]) if gt_errs else \
            ["NOTE: asyncio ps agrees with the ground truth"]
    else:
        errs, facts = asyncio_ps_vs(doc, rows, gt["main_tid"], interp.minor, "pystack-dump")
        if errs and gt_errs:
            errs += ["NOTE: asyncio ps also disagrees with the ground truth:"] + \
                ["  " + x for x in gt_errs]
        elif errs:
            errs.append("NOTE: asyncio ps agrees with the ground truth, so pystack-dump "
                        "is wrong here")
    if errs:
        errs.insert(0, "command: chroot %s %s -m asyncio ps %d" % (interp.chroot, interp.exe, pid))
    return Result(n, "FAIL" if errs else "PASS", "\n".join(errs), info=facts)


def tasks_snapshot_roundtrip(interp, tool, tg, gt):
    """--tasks --json --save-snapshot on the live target, then --snapshot
    --tasks --json: the same document but for "source", and equal to the
    ground truth."""
    n = "tasks-snapshot"
    snap = os.path.join(host_tmp(), "tasks-snap-" + tg.run_id)
    try:
        argv, rc, out, err, secs = tasks_run(tool, ["--json", "--save-snapshot", snap,
                                                    str(tg.pid)])
        live, e = parse_tasks(argv, rc, out, err, secs)
        if e:
            return Result(n, "FAIL", e)
        if not os.path.isfile(snap):
            return Result(n, "FAIL", "%s exited 0 but wrote no %s"
                          % (" ".join(argv), snap))
        size = os.path.getsize(snap)
        argv2 = [tool.path, "--snapshot", snap, "--tasks", "--json"]
        rc, out, err, secs = run(argv2, TOOL_TIMEOUT)
        rep, e = parse_tasks(argv2, rc, out or b"", err or b"", secs)
        if e:
            return Result(n, "FAIL", "after %s:\n%s" % (" ".join(argv), e))
        errs = roundtrip_errors(live, rep, "graph")
        errs += ["live graph with --save-snapshot: " + x for x in compare_tasks(gt, live, interp)]
        if errs:
            errs.insert(0, "commands: %s; %s" % (" ".join(argv), " ".join(argv2)))
        return Result(n, "FAIL" if errs else "PASS", "\n".join(errs),
                      info="%d bytes" % size)
    finally:
        if os.path.exists(snap):
            os.unlink(snap)


def tasks_gcore_job(interp, tool, names):
    """gcore of a live asyncio_graph target (MALLOC_ARENA_MAX=1, see
    GCORE_TARGET_ENV), then --core CORE --tasks --json: the same graph as the
    ground truth and as the live --tasks --json."""
    n = names[0]
    with Target(interp, TASKS_TARGET, env_extra=GCORE_TARGET_ENV) as tg:
        early, gt, argv, live, live_err, _ = live_graph(interp, tool, tg, names)
        if early:
            return early
        prefix = os.path.join(host_tmp(), "gcore-" + tg.run_id)
        with gcore_slot():
            core, warned, err = run_gcore(tg.pid, prefix)
            if err:
                return [Result(n, "FAIL", err)]
            try:
                size = os.path.getsize(core)
                argv, rc, out, err = tool_file_run(tool, ["--core", core, "--tasks", "--json"])
            finally:
                os.unlink(core)
    cmd = " ".join(argv)
    doc, e = parse_tasks(argv, rc, out, err, 0)
    if e:
        errs = with_graph_diff(e + " (core deleted)", doc, gt, interp)
    else:
        errs = []
        if doc.get("source") != "core":
            errs.append("source %r, expected 'core'" % (doc.get("source"),))
        errs += compare_tasks(gt, doc, interp)
        if live_err:
            errs.append("no live graph to compare with: " + live_err)
        else:
            d = first_difference(without_source(live), without_source(doc))
            if d:
                errs.append("the core decodes differently from the live graph (first "
                            "difference, live vs core: %s)" % d)
        if errs:
            errs.insert(0, "command: %s (core deleted; gcore: %d unreadable region(s))"
                        % (cmd, len(warned)))
    return [Result(n, "FAIL" if errs else "PASS", "\n".join(errs),
                   info="gcore %d MB, %d unreadable region(s)" % (size >> 20, len(warned)))]


# Target options run as task graphs of their own: (first version, why
# earlier ones are skipped, version from which it is skipped or None, why).
TASKS_VARIANTS = {
    # every task a pure-Python asyncio.tasks._PyTask
    "pytasks": ((3, 7), "asyncio task graphs start at 3.7", None, ""),
    # the main loop's tasks created by asyncio.eager_task_factory
    "eager": ((3, 12), "eager tasks exist from 3.12", None, ""),
}


def tasks_variant_job(interp, variant, tool, names):
    """asyncio_graph with a target option: --tasks --json against its ground
    truth, every task, frame and edge, like tasks:asyncio_graph."""
    low, why_low, high, why_high = TASKS_VARIANTS[variant]
    if interp.minor < low:
        return [Result(names[0], "SKIP", why_low)]
    if high and interp.minor >= high:
        return [Result(names[0], "SKIP", why_high)]
    with Target(interp, TASKS_TARGET, args=[variant]) as tg:
        early, gt, argv, doc, e, _ = live_graph(interp, tool, tg, names)
        if early:
            return early
        errs = with_graph_diff(e, doc, gt, interp) if e else compare_tasks(gt, doc, interp)
        if errs and not e:
            errs.insert(0, "command: " + " ".join(argv))
        return [Result(names[0], "FAIL" if errs else "PASS", "\n".join(errs),
                       info=tasks_info(doc) if doc and not e else "")]


def tasks_many_job(interp, tool, names):
    """asyncio_graph with many=TASKS_MANY and an await cycle: every task
    listed (count and ids), the whole graph as in tasks:asyncio_graph (the
    cycle included), within TASKS_MANY_MAX_SECS."""
    n = names[0]
    with Target(interp, TASKS_TARGET, args=["many=%d" % TASKS_MANY, "cycle"]) as tg:
        early, gt, argv, doc, e, secs = live_graph(
            interp, tool, tg, names, timeout=max(TOOL_TIMEOUT, 3 * TASKS_MANY_MAX_SECS))
        if early:
            return early
        if interp.minor >= (3, 8):
            nmany = sum(1 for t in gt["tasks"] if t["name"].startswith("many-"))
        else:
            # Tasks have no names before 3.8: recognise the many-* tasks by
            # their own coroutine (the last frame), leaf(); a few other
            # tasks run leaf() too, hence "at least".
            nmany = sum(1 for t in gt["tasks"] if t["coroutine_stack"]
                        and t["coroutine_stack"][-1]["function"] == "leaf")
            nmany = TASKS_MANY if nmany >= TASKS_MANY else nmany
        if nmany != TASKS_MANY:
            return [Result(n, "FAIL", "ground truth has %d many-* tasks, "
                           "expected %d" % (nmany, TASKS_MANY))]
        errs = [e] if e else []
        if doc is not None and e:
            errs = with_graph_diff(e, doc, gt, interp)
        elif doc is not None:
            errs += ["schema: " + x for x in check_tasks_schema(doc)]
            if not errs:
                if len(doc["tasks"]) != len(gt["tasks"]):
                    errs.append("%d tasks, expected %d" % (len(doc["tasks"]), len(gt["tasks"])))
                exp, got = set(t["id"] for t in gt["tasks"]), set(t["id"] for t in doc["tasks"])
                if exp != got:
                    errs.append("task ids differ: %d missing, %d unexpected"
                                % (len(exp - got), len(got - exp)))
                if not gt.get("cycles"):
                    errs.append("ground truth has no await cycle (target option 'cycle')")
                errs += compare_tasks(gt, doc, interp)
        if secs > TASKS_MANY_MAX_SECS:
            errs.append("took %.1fs, more than %.0fs" % (secs, TASKS_MANY_MAX_SECS))
        if errs and not e:
            errs.insert(0, "command: " + " ".join(argv))
        return [Result(n, "FAIL" if errs else "PASS", "\n".join(errs),
                       info="%d tasks, %d await cycle(s), in %.2fs"
                       % (len(gt["tasks"]), len(gt.get("cycles") or ()), secs))]





def one(fn, interp, *args):
    """The single Result of a one-check job (its name is the first of names)."""
    return fn(interp, *args)[0]


@pytest.mark.job("tasks")
def test_tasks_json(interp, tool, jobs, request):
    """--tasks --json: every task, name, state, thread, coroutine frame and
    await edge of the live target, as its own asyncio saw them."""
    settle(jobs.result("tasks:" + TASKS_TARGET, tasks_job, interp, tool), request.node)


@pytest.mark.job("tasks")
def test_tasks_tree(interp, tool, jobs, request):
    """--tasks (the tree) names every task."""
    settle(jobs.result("tasks-tree", tasks_job, interp, tool), request.node)


@pytest.mark.job("tasks")
def test_tasks_table(interp, tool, jobs, request):
    """--tasks --table names every task."""
    settle(jobs.result("tasks-table", tasks_job, interp, tool), request.node)


@pytest.mark.job("tasks")
def test_tasks_snapshot(interp, tool, jobs, request):
    """A snapshot taken with --tasks decodes to the same graph."""
    settle(jobs.result("tasks-snapshot", tasks_job, interp, tool), request.node)


@pytest.mark.job("tasks")
@pytest.mark.interps(lambda i: i.chroot and i.minor >= TASKS_ORACLE_MIN)
def test_tasks_asyncio_ps(interp, tool, jobs, request):
    """`python3.X -m asyncio ps` (3.14+, sid's builds) agrees with the graph."""
    settle(jobs.result("tasks-oracle:asyncio ps", tasks_job, interp, tool), request.node)


@pytest.mark.job("tasks")
def test_tasks_locked(interp, tool, jobs, request):
    """--tasks --locked: the same graph, the target left running."""
    settle(jobs.result("tasks --locked", tasks_job, interp, tool), request.node)


def test_tasks_gcore(interp, tool, request):
    """The graph from a gcore core equals the live one and the ground truth."""
    if not GCORE:
        pytest.skip("gcore not installed (Debian package gdb)")
    settle(one(tasks_gcore_job, interp, tool, ["tasks-gcore"]), request.node)


@pytest.mark.parametrize("variant", sorted(TASKS_VARIANTS))
def test_tasks_variant(interp, variant, tool, request):
    """All tasks pure-Python (_PyTask), or eager: the same comparison."""
    settle(one(tasks_variant_job, interp, variant, tool, ["tasks-variant:" + variant]),
           request.node)


def test_tasks_many(interp, tool, request):
    """1,000 more tasks and an await cycle: all listed, quickly."""
    settle(one(tasks_many_job, interp, tool, ["tasks-many:%d" % TASKS_MANY]), request.node)


def test_tasks_fake_asend(interp, tool, request):
    """A user class named async_generator_asend is not CPython's asend
    type: the task awaiting one ends its chain there, and the coroutine
    in the object's first slot (where the real type keeps its async
    generator) is not shown as awaited."""
    if interp.minor < (3, 7):
        settle(Result("fake-asend", "SKIP", "asyncio target needs CPython 3.7+ (asyncio.run)"),
               request.node)
        return
    with Target(interp, "fake_asend") as tg:
        tg.settled_truth(gt_sanity)
        argv, rc, out, err, secs = tasks_run(tool, ["--json", str(tg.pid)])
        doc, e = parse_tasks(argv, rc, out, err, secs)
    errs = [e] if e else []
    if doc:
        chains = [[f["function"] for f in t["coroutine_stack"]] for t in doc["tasks"]]
        waiting = [c for c in chains if c and c[-1] == "waiter"]
        if waiting != [["waiter"]]:
            errs.append("the chain of the task in waiter() is %r, expected [['waiter']] "
                        "(all chains: %r)" % (waiting, chains))
    settle(Result("fake-asend", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)


def test_tasks_other_loop(interp, tool, request):
    """A process that runs trio, not asyncio: --tasks exits 0 saying it
    runs trio and what shows its tasks instead (text; "other_loop" in the
    JSON), and sample -m async, finding no task, says why."""
    rc, _, err, _ = run(interp.argv(["-c", "import trio"]), TOOL_TIMEOUT)
    if rc != 0:
        settle(Result("other loop", "SKIP", "trio is not installed for this interpreter "
                      "(Debian's python3-trio is for the host's 3.11)"), request.node)
        return
    errs = []
    with Target(interp, "trio_nursery") as tg:
        gt = tg.wait_ground_truth()
        argv, rc, out, err, secs = tasks_run(tool, [str(tg.pid)])
        text = out.decode("utf-8", "replace")
        if rc != 0 or "It runs trio" not in text or "without --tasks" not in text:
            errs.append("%s: exit %s, no word of trio: %s" % (" ".join(argv), rc, short(out)))
        argv, rc, out, err, secs = tasks_run(tool, ["--json", str(tg.pid)])
        doc, e = parse_json_out(out) if rc == 0 else (None, "exit %s" % rc)
        if e or doc.get("other_loop") != gt["loop"] or doc.get("asyncio_loaded") is not False:
            errs.append("%s: %s" % (" ".join(argv), e or "other_loop %r, asyncio_loaded %r"
                                    % (doc.get("other_loop"), doc.get("asyncio_loaded"))))
        argv = [tool.path, "sample", "-m", "async", "-n", "200", "-o", os.devnull, str(tg.pid)]
        rc, out, err, secs = run(argv, TOOL_TIMEOUT)
        if rc != 0 or b"found no asyncio task" not in err:
            errs.append("%s: exit %s, no word of why no task was sampled: %s"
                        % (" ".join(argv), rc, short(err)))
    settle(Result("other loop", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)
