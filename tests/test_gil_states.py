"""Which thread holds the GIL, which wait for it, which are idle: on
sample_gil.py (a holder that keeps the GIL 0.3 s at a time in a C loop,
two pure-Python contenders that want it, a sleeper and the main thread
asleep; its switch interval 1 s, so that those waiting sleep on the GIL
rather than wake every 5 ms), dumps taken one after another must show, in
one of them at least, one of the three holding the GIL and the other two
waiting for it -- not idle -- (a dump is not one moment, each thread's
state is read in turn), and never a sleeper as waiting or holding it.  How each version is told: tests/README.md and the
README's "Thread states"."""

import json
import os
import tempfile
import time

from harness.procs import TOOL_TIMEOUT, run, short, task_states
from harness.results import Result, settle
from harness.target import Target, parse_json_out

DUMPS = 10          # dumps at most, until one shows one rival holding, two waiting
PAUSE_S = 0.05      # between them
GIL_STATES_MIN = (3, 7)   # 3.6 keeps its GIL in static variables: not located
SWITCH_S = 1.0            # sys.setswitchinterval of the target


# clock_nanosleep, nanosleep, select, pselect6 on x86-64 (time.sleep uses select
# before 3.11): /proc/TID/syscall's first field
SLEEP_CALLS = ("230", "35", "23", "270")


def in_sleep(pid, tid):
    """Is thread tid of pid blocked in a sleep system call now?"""
    try:
        with open("/proc/%d/task/%d/syscall" % (pid, tid)) as f:
            return f.read().split(" ", 1)[0] in SLEEP_CALLS
    except OSError:
        return False


def test_gil_waiters(interp, tool, request):
    if interp.minor < GIL_STATES_MIN:
        settle(Result("gil waiters", "SKIP", "3.6 keeps its GIL in static variables of "
                      "ceval.c, which a stripped build does not name"), request.node)
        return
    errs, seen = [], []
    # contenders asleep on the GIL a second at a time: on a loaded
    # machine the default 5 ms leaves them runnable, waiting for a CPU
    with Target(interp, "sample_gil", args=["switch=%g" % SWITCH_S]) as tg:
        gt = tg.wait_ground_truth()
        tids = gt["threads"]
        idle = [tids[n] for n in gt["idle"] if n in tids] + [gt["main_tid"]]
        # the sleepers in their sleep, as the kernel tells (the main
        # thread wrote the ground truth a moment before its own)
        deadline = time.time() + 10
        while time.time() < deadline and not all(in_sleep(tg.pid, t) for t in idle):
            time.sleep(0.02)
        # the three that want the GIL: one holds it, the others wait
        rivals = [tids[n] for n in [gt["holder"]] + gt["contenders"]]
        for _ in range(DUMPS):
            argv = [tool.path, "--json", str(tg.pid)]
            rc, out, err, secs = run(argv, TOOL_TIMEOUT)
            doc, e = parse_json_out(out) if rc == 0 else (None, "exit %s: %s" % (rc, short(err)))
            if e:
                errs.append("%s: %s" % (" ".join(argv), e))
                break
            by_tid = dict((t["tid"], t) for t in doc["threads"])
            for tid in idle:
                t = by_tid.get(tid, {})
                if t.get("waits_for_gil") or t.get("holds_gil"):
                    errs.append("thread %d (%s) sleeps, yet holds_gil %s, waits_for_gil %s"
                                % (tid, t.get("name"), t.get("holds_gil"),
                                   t.get("waits_for_gil")))
            states = [(by_tid.get(tid, {}).get("holds_gil"),
                       by_tid.get(tid, {}).get("waits_for_gil"),
                       by_tid.get(tid, {}).get("state")) for tid in rivals]
            seen.append(states)
            if any(h and w for h, w, _ in states):
                errs.append("a thread both holds and waits for the GIL: %s" % states)
            if interp.ft:
                if any(w for _, w, _ in states):
                    errs.append("a free-threading build has no GIL to wait for: %s" % states)
                break
            if sum(1 for h, _, _ in states if h) == 1 and \
                    all(h or w for h, w, _ in states):
                break
            time.sleep(PAUSE_S)
        if not interp.ft and not errs and not any(
                sum(1 for h, _, _ in st if h) == 1 and all(h or w for h, w, _ in st)
                for st in seen):
            errs.append("in %d dumps, never one of the holder and the contenders holding the "
                        "GIL and the others waiting for it (holds_gil, waits_for_gil, state): %s"
                        % (len(seen), seen))
        heads = []
        for _ in range(0 if interp.ft or errs else DUMPS):
            rc, out, err, secs = run([tool.path, "--no-source", str(tg.pid)], TOOL_TIMEOUT)
            heads = [l for l in out.decode("utf-8", "replace").splitlines()
                     if l.startswith("Thread ")]
            if any(l.endswith("(waiting for the GIL)") for l in heads):
                break
            time.sleep(PAUSE_S)
        else:
            if not interp.ft and not errs:
                errs.append("in %d text dumps, no header says 'waiting for the GIL'; the "
                            "last: %s" % (DUMPS, heads))
    settle(Result("gil waiters", "FAIL" if errs else "PASS", "\n".join(errs),
                  info="%d dumps" % len(seen)), request.node)


# Looks at the GIL's waiters the sampler makes: one every 0.1 s.
LOOK_S = 0.1
CONTENDED_MIN = 0.5     # on sample_gil.py: someone of three rivals always waits
UNCONTENDED_MAX = 0.1   # on threads.py: every thread asleep in a call, none on the GIL


def contention(tool, pid, secs):
    """sample -m gil for secs: (the profile's gil_* fields, stderr, error)."""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        argv = [tool.path, "sample", "-m", "gil", "-d", str(secs), "-f", "json", "-o", path,
                str(pid)]
        rc, out, err, _ = run(argv, TOOL_TIMEOUT)
        if rc != 0:
            return None, err, "%s: exit %s: %s" % (" ".join(argv), rc, short(err))
        with open(path) as f:
            doc = json.load(f)
        return dict((k, doc.get(k)) for k in ("gil_looks", "gil_contended", "gil_waiters",
                                               "gil_waiters_max")), err, None
    finally:
        os.unlink(path)


def test_gil_contention_sampled(interp, tool, request):
    """sample -m gil says how contended the GIL was: on sample_gil.py (a
    holder and two contenders, switch interval 1 s) threads waited in at
    least half the looks; on threads.py (every thread asleep in a blocking
    call) in almost none; the summary on stderr says it, the JSON profile
    counts it."""
    if interp.minor < GIL_STATES_MIN or interp.ft:
        settle(Result("gil contention", "SKIP", "no GIL to wait for" if interp.ft else
                      "3.6's GIL is not located"), request.node)
        return
    errs, info = [], []
    for target, args, lo, hi in (("sample_gil", ["switch=%g" % SWITCH_S], CONTENDED_MIN, 1.0),
                                 ("threads", [], 0.0, UNCONTENDED_MAX)):
        with Target(interp, target, args=args) as tg:
            if target == "threads":      # its threads asleep in their calls
                tg.settled_truth(lambda gt, interp: [])
            else:
                tg.wait_ground_truth()
            got, err, e = contention(tool, tg.pid, 1)
        if e:
            errs.append(e)
            continue
        looks = got["gil_looks"] or 0
        share = (got["gil_contended"] or 0) / looks if looks else 0
        info.append("%s: contended in %d of %d looks" % (target, got["gil_contended"] or 0,
                                                          looks))
        if looks < 0.5 / LOOK_S:
            errs.append("%s: %d looks in 1 s, want one every %g s: %s" % (target, looks, LOOK_S,
                                                                          got))
        elif not lo <= share <= hi:
            errs.append("%s: the GIL contended in %.0f%% of the looks, want %.0f-%.0f%%: %s"
                        % (target, 100 * share, 100 * lo, 100 * hi, got))
        if b"GIL contention: threads were waiting for the GIL in" not in err:
            errs.append("%s: the summary does not say the GIL's contention: %s"
                        % (target, short(err)))
    settle(Result("gil contention", "FAIL" if errs else "PASS", "\n".join(errs),
                  info="; ".join(info)), request.node)


def test_exception_state(interp, tool, request):
    """A thread raising or handling an exception says so, as CPython 3.15's
    own dump does: on exc_states.py, "in_exception" in the JSON and
    ", handling an exception" in the text header for exactly the threads
    whose sys.exc_info() said so (an except block, a generator's, a nested
    one), not for those past their handler or in none."""
    errs = []
    with Target(interp, "exc_states") as tg:
        gt = tg.wait_ground_truth()
        deadline = time.time() + 10     # every thread asleep, main too
        while time.time() < deadline and not all(
                task_states(tg.pid).get(t) == "S" for t in gt["tids"].values()):
            time.sleep(0.02)
        argv = [tool.path, "--json", str(tg.pid)]
        rc, out, err, _ = run(argv, TOOL_TIMEOUT)
        doc, e = parse_json_out(out) if rc == 0 else (None, "exit %s: %s" % (rc, short(err)))
        argv2 = [tool.path, "--no-source", str(tg.pid)]
        rc2, text, err2, _ = run(argv2, TOOL_TIMEOUT)
    if e:
        errs.append("%s: %s" % (" ".join(argv), e))
    else:
        by_tid = dict((t["tid"], t) for t in doc["threads"])
        heads = dict((int(l.split()[1]), l) for l in text.decode("utf-8", "replace").splitlines()
                     if l.startswith("Thread "))
        for name, tid in sorted(gt["tids"].items()):
            want = gt["handling"][name]
            got = by_tid.get(tid, {}).get("in_exception")
            if got is not want:
                errs.append("thread %s (%d): in_exception %r, its own sys.exc_info() said %r"
                            % (name, tid, got, want))
            head = heads.get(tid, "")
            if head.endswith(", handling an exception)") is not want:
                errs.append("thread %s: text header %r, handling an exception: %r"
                            % (name, head, want))
    settle(Result("exception state", "FAIL" if errs else "PASS", "\n".join(errs),
                  info="handling: %s" % sorted(n for n, v in gt["handling"].items() if v)),
           request.node)
