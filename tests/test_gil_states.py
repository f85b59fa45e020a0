"""Which thread holds the GIL, which wait for it, which are idle: on
sample_gil.py (a holder that keeps the GIL 0.3 s at a time in a C loop,
two pure-Python contenders that want it, a sleeper and the main thread
asleep; its switch interval 1 s, so that those waiting sleep on the GIL
rather than wake every 5 ms), dumps taken one after another must show, in
one of them at least, one of the three holding the GIL and the other two
waiting for it -- not idle -- (a dump is not one moment, each thread's
state is read in turn), and never a sleeper as waiting or holding it.  How each version is told: tests/README.md and the
README's "Thread states"."""

import time

from harness.procs import TOOL_TIMEOUT, run, short
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
