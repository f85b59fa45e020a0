"""The sampler under load: `sample -r max` for 30 s against a target that
starts and ends about 1,000 threads a second and keeps 500 alive
(tests/targets/thread_storm.py).  Thread states are freed and reused
under every read: no crash, exit 0, complete output with the workers'
frames, memory that stays flat (in the last third of the run no more
than a little above what it was a third in), and open files that stay
below twice the living threads'."""

import json
import os
import signal
import subprocess
import time

import pytest

from harness.cores import remove
from harness.procs import kill, open_fds, rss_env, rss_kb, short, spawn
from harness.results import Result, settle
from harness.target import Target

SECONDS = 30
# Growth of the resident size allowed between a third and the end of the
# run: the call tree fills in as new paths appear, a leak grows on.
RSS_SLACK_KB = 8192
# ... and of its open files: a thread's /proc stat file is kept open while
# the thread lives, and those of exited ones until the open files have
# doubled since the last sweep (live.c), so the count swings between the
# living threads' and twice that, whenever in the run it is looked at.
# The target keeps ALIVE threads (tests/targets/thread_storm.py); one file
# kept for every thread that ever was would pass FDS_MAX within seconds.
ALIVE = 500
FDS_SLACK = 256
FDS_MAX = 2 * ALIVE + FDS_SLACK
# Versions of each thread-list and frame model: frame objects (3.6,
# 3.10), interpreter frames (3.12), debug offsets (3.15).
LOAD_VERSIONS = {(3, 6), (3, 10), (3, 12), (3, 15)}


@pytest.mark.interps(lambda i: i.minor in LOAD_VERSIONS and not i.debug
                     and (i.source != "ft" or i.ft))
def test_sample_thread_storm(interp, tool, request):
    errs, info = [], ""
    with Target(interp, "thread_storm") as tg:
        tg.wait_ground_truth()
        out = os.path.join(tg.out_host, "storm.json")
        argv = [tool.path, "sample", "-r", "max", "-d", str(SECONDS), "-q", "-f", "json",
                "-o", out, str(tg.pid)]
        p = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=rss_env(tool))
        rss = []
        try:
            t0 = time.time()
            while p.poll() is None and time.time() - t0 < SECONDS + 60:
                rss.append((time.time() - t0, rss_kb(p.pid), open_fds(p.pid)))
                time.sleep(1)
            if p.poll() is None:
                kill(p)
                errs.append("still running %d s after its %d s" % (60, SECONDS))
            stdout, stderr = p.communicate()
        finally:
            if p.poll() is None:
                kill(p)
        os.kill(tg.pid, signal.SIGUSR1)
        time.sleep(0.5)
        started = None
        try:
            with open(tg.gt_host + ".started") as f:
                started = json.load(f)["started"]
        except (OSError, ValueError):
            pass
        if p.returncode != 0:
            errs.append("%s exited %s; stderr: %s" % (" ".join(argv), p.returncode, short(stderr)))
        try:
            with open(out) as f:
                doc = json.load(f)
            text = json.dumps(doc)
            if "worker" not in text:
                errs.append("no sample of worker() in %s" % short(text.encode()))
        except (OSError, ValueError) as e:
            errs.append("output %s unreadable: %s" % (out, e))
        finally:
            remove(out)
        fds = [(t, v) for t, _, v in rss if v]
        peak_t, peak_fds = max(fds, key=lambda tv: tv[1]) if fds else (0, None)
        if peak_fds is not None and peak_fds > FDS_MAX:
            errs.append("%d open files at %d s, more than the %d living threads' "
                        "twice over: one kept per thread that ever was? %s"
                        % (peak_fds, peak_t, ALIVE, fds))
        kb = [(t, v) for t, v, _ in rss if v]
        early = [v for t, v in kb if SECONDS / 3 <= t < SECONDS / 3 + 2]
        late = [v for t, v in kb if t >= SECONDS - 3]
        if early and late and max(late) > max(early) + RSS_SLACK_KB:
            errs.append("resident size grew from %d kB (at %d s) to %d kB: %s"
                        % (max(early), SECONDS // 3, max(late), kb))
        # With fewer, a file kept per thread that ever was might stay
        # below FDS_MAX.  (The free-threaded build, read by the ASan
        # sampler on a loaded 2-core machine, started 130 a second.)
        if started is not None and started < FDS_MAX + ALIVE:
            errs.append("the target started only %d threads" % started)
        info = "%s threads started; RSS %s -> %s kB; at most %s open files" % (
            started, max(early) if early else "?", max(late) if late else "?",
            "?" if peak_fds is None else peak_fds)
    settle(Result("thread-storm", "FAIL" if errs else "PASS", "\n".join(errs), info=info),
           request.node)
