"""pystack-dump --json PID: every thread and frame of a live target, as
its own sys._current_frames() saw them; --locked; the 3.15 oracle."""

import os
import subprocess
import time

import pytest

from harness.deep import DUMP as DEEP_DUMP, very_deep_job
from harness.dumps import check_not_stopped, compare, gt_sanity, oracle_vs, parse_dump, run_oracle
from harness.procs import kill, short, spawn, task_states, tracer_pid, vlog
from harness.results import Result, settle
from harness.target import Target


DUMP_TARGETS = ["threads", "recursion", "generators", "names", "busy", "crowd"]
ORACLE_TARGETS = ["threads", "recursion", "generators", "names"]
ORACLE_MIN = (3, 15)                   # python -m profiling.sampling dump


def has_oracle(interp):
    """sid's 3.15 has profiling.sampling; 3.15.0a0 (ft-) predates it."""
    return interp.source == "sid" and interp.minor >= ORACLE_MIN

LOCK_PAUSE_MS = 2000                   # how long --locked holds the target in test_locked_kill

def dump_job(interp, target, tool):
    """One target, dumped live (pystack-dump --json), then with --locked
    (busy only) and by the oracle (3.15)."""
    results = []
    with Target(interp, target) as tg:
        gt = tg.settled_truth(gt_sanity)
        doc, err = parse_dump(*tool.dump(tg.pid))
        errs = [err] if err else compare(gt, doc, interp, tg.pid)
        results.append(Result("dump", "FAIL" if errs else "PASS", "\n".join(errs)))
        if target == "crowd":
            errs = [err] if err else run_states(gt, doc, "")
            results.append(Result("states", "FAIL" if errs else "PASS", "\n".join(errs)))
        if target == "busy":
            errs = run_states(gt, doc, "")
            ldoc, err = parse_dump(*tool.dump(tg.pid, locked=True))
            errs += [err] if err else (compare(gt, ldoc, interp, tg.pid)
                                       + run_states(gt, ldoc, "--locked"))
            errs += check_not_stopped(tg.pid)
            # The detach restarted the blocked threads' system calls.
            tg.wait_settled()
            ndoc, err = parse_dump(*tool.dump(tg.pid, native=True))
            errs += [err] if err else run_states(gt, ndoc, "--native")
            results.append(Result("busy --locked", "FAIL" if errs else "PASS",
                                  "\n".join(errs)))
        if target in ORACLE_TARGETS and has_oracle(interp):
            results.append(oracle_result(interp, target, tg.pid, gt, doc))
    return results


def run_states(gt, doc, how):
    """The thread spinning in pure Python is running, the blocked ones
    idle, as the OS had them before a dump paused them."""
    errs = []
    busy = set(t["tid"] for t in gt["threads"] if t["busy"])
    for t in doc["threads"]:
        want = "running" if t["tid"] in busy else "idle"
        if t["state"] != want:
            errs.append("dump %s: thread %r is %r, not %r"
                        % (how, t["name"], t["state"], want))
    return errs


def oracle_result(interp, target, pid, gt, doc):
    """CPython's own `python3.15 -m profiling.sampling dump` against the
    dump (and, when they disagree, against the ground truth: which one is
    wrong?)."""
    oracle, err = run_oracle(interp, pid)
    if err:
        return Result("oracle", "FAIL", err)
    busy = set(t["tid"] for t in gt["threads"] if t["busy"])
    gt_frames = dict((t["tid"], t["frames"]) for t in gt["threads"])
    gt_errs = oracle_vs(gt_frames, oracle, "ground truth", busy)
    if doc is None:
        errs = ["no pystack-dump output to compare (see test_dump[%s])" % target]
        if gt_errs:
            errs.append("NOTE: the oracle also disagrees with the ground truth:")
            errs += ["  " + e for e in gt_errs]
        else:
            errs.append("NOTE: the oracle agrees with the ground truth")
    else:
        tool_frames = dict((t["tid"], t["frames"]) for t in doc["threads"])
        errs = oracle_vs(tool_frames, oracle, "pystack-dump", busy)
        if errs and gt_errs:
            errs.append("NOTE: the oracle also disagrees with the ground truth:")
            errs += ["  " + e for e in gt_errs]
        elif errs:
            errs.append("NOTE: the oracle agrees with the ground truth, "
                        "so pystack-dump is wrong here")
    return Result("oracle", "FAIL" if errs else "PASS", "\n".join(errs))


@pytest.mark.job("dump")
@pytest.mark.parametrize("target", DUMP_TARGETS)
def test_dump(interp, target, tool, jobs, request):
    """Every thread and frame of the live target, as its own
    sys._current_frames() saw them."""
    settle(jobs.result("dump", dump_job, interp, target, tool), request.node)


@pytest.mark.job("dump")
@pytest.mark.parametrize("target", ["busy"])
def test_busy_locked(interp, target, tool, jobs, request):
    """--locked on a target whose thread burns CPU: the same frames, and the
    target left running (not stopped, not traced)."""
    settle(jobs.result("busy --locked", dump_job, interp, target, tool), request.node)


@pytest.mark.job("dump")
@pytest.mark.parametrize("target", ["crowd"])
def test_crowd_states(interp, target, tool, jobs, request):
    """41 threads, listed and read ahead in batches: each one's run state
    as the OS had it."""
    settle(jobs.result("states", dump_job, interp, target, tool), request.node)


@pytest.mark.job("dump")
@pytest.mark.interps(lambda i: has_oracle(i))
@pytest.mark.parametrize("target", ORACLE_TARGETS)
def test_oracle(interp, target, tool, jobs, request):
    """CPython 3.15's own profiling.sampling dump agrees with ours."""
    settle(jobs.result("oracle", dump_job, interp, target, tool), request.node)


def file_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return -1


def growing(path, secs=0.4):
    a = file_size(path)
    time.sleep(secs)
    return file_size(path) > a >= 0


def locked_kill(interp, tool, option):
    """SIGKILL `pystack-dump OPTION` (--locked, or --native, which pauses
    a live target to unwind it) while it holds the target paused; the
    target must carry on running (not stopped, not traced, heartbeat
    growing) and be dumpable again."""
    name = "locked-kill " + option
    with Target(interp, "heartbeat", extra=["heartbeat.txt"]) as tg:
        gt = tg.wait_ground_truth()
        tg.wait_settled()
        hb = tg.host_extra(0)
        if not growing(hb):
            return Result(name, "FAIL", "heartbeat not growing before the test")
        argv = [tool.path, option, "--json", str(tg.pid)]
        env = dict(os.environ, PYD_TEST_LOCKED_PAUSE_MS=str(LOCK_PAUSE_MS))
        errs = []
        tp = spawn(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        paused = None
        try:
            deadline = time.time() + LOCK_PAUSE_MS / 1000.0 * 0.8
            while time.time() < deadline and tp.poll() is None:
                st = task_states(tg.pid)
                if any(s in "tT" for s in st.values()) or tracer_pid(tg.pid) == tp.pid:
                    paused = st
                    vlog("target %d paused (task states %s, TracerPid %s)"
                         % (tg.pid, "".join(sorted(st.values())), tracer_pid(tg.pid)))
                    break
                time.sleep(0.01)
            if paused is not None:
                # The tool seizes threads one by one: the pause is complete
                # only once every thread is in a ptrace stop (under load the
                # first and the last can be milliseconds apart).
                while time.time() < deadline and tp.poll() is None:
                    st = task_states(tg.pid)
                    if st and all(v in "tT" for v in st.values()):
                        break
                    time.sleep(0.005)
                # make sure it really is paused: the heartbeat must stand still
                a = file_size(hb)
                time.sleep(0.15)
                if tp.poll() is None and file_size(hb) != a:
                    errs.append("target observed stopped/traced but heartbeat kept "
                                "growing (not all threads paused?)")
            if tp.poll() is not None:
                errs.append("pystack-dump %s exited (rc=%s) before it could be killed; "
                            "is PYD_TEST_LOCKED_PAUSE_MS=%d implemented? stderr: %s"
                            % (option, tp.returncode, LOCK_PAUSE_MS, short(tp.stderr.read())))
            elif paused is None:
                errs.append("never saw the target paused (no task in t/T state, TracerPid "
                            "!= tool) within %.1fs of starting %s"
                            % (LOCK_PAUSE_MS / 1000.0 * 0.8, option))
        finally:
            kill(tp)                                        # SIGKILL the tracer
            if tp.stderr:
                tp.stderr.close()
        time.sleep(0.2)
        errs += check_not_stopped(tg.pid)
        if not errs and not growing(hb, 0.5):
            errs.append("heartbeat stopped after the tracer was killed; task states %s"
                        % task_states(tg.pid))
        if not errs:
            doc, err = parse_dump(*tool.dump(tg.pid))
            errs = [("dump after the kill: " + err)] if err else \
                ["dump after the kill: " + e for e in compare(gt, doc, interp, tg.pid)]
        return Result(name, "FAIL" if errs else "PASS", "\n".join(errs))


@pytest.mark.parametrize("option", ["--locked", "--native"])
def test_locked_kill(interp, tool, option, request):
    """SIGKILL pystack-dump --locked (or --native) mid-pause: the target
    runs on."""
    settle(locked_kill(interp, tool, option), request.node)


@pytest.mark.job("very-deep")
def test_very_deep(interp, tool, jobs, request):
    """A 150,000-frame stack (a raised recursion limit) is dumped whole,
    exactly, with no "stack kept changing" (harness/deep.py)."""
    settle(jobs.result(DEEP_DUMP, very_deep_job, interp, tool), request.node)
