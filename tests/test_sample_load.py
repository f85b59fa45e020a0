"""The sampler under load: `sample -r max` against a target that starts
and ends about 1,000 threads a second and keeps 500 alive
(tests/targets/thread_storm.py), until the target has started
STORM_THREADS threads (or SECONDS have passed, on a slow build).  Thread
states are freed and reused under every read: no crash, exit 0, complete
output with the workers' frames, memory that stays flat (between the
third of those threads and the last, no more than a little growth), and
open files that stay below twice the living threads'."""

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

# The run ends once the target has started this many threads: a leak
# grows with the threads the sampler saw come and go, not with seconds.
# About 15 s of a release build's 1,000 a second; SECONDS bounds it where
# threads start slower (the free-threaded build under the ASan sampler
# started 130 a second), and is the sampler's -d.
STORM_THREADS = 15000
SECONDS = 30
POLL_S = 0.5
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


def started_threads(tg):
    """How many threads the target has started (it writes the count,
    atomically, on SIGUSR1); None if it has not answered in 2 s."""
    path = tg.gt_host + ".started"
    remove(path)
    os.kill(tg.pid, signal.SIGUSR1)
    deadline = time.time() + 2
    while time.time() < deadline:
        try:
            with open(path) as f:
                return json.load(f)["started"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.02)
    return None


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
        rss = []            # (seconds, threads started, kB, open files)
        started = None
        try:
            t0 = time.time()
            while p.poll() is None and time.time() - t0 < SECONDS + 60:
                n = started_threads(tg)
                started = n if n is not None else started
                rss.append((time.time() - t0, n, rss_kb(p.pid), open_fds(p.pid)))
                if started is not None and started >= STORM_THREADS:
                    os.kill(p.pid, signal.SIGINT)
                    break
                time.sleep(POLL_S)
            if p.poll() is None and time.time() - t0 >= SECONDS + 60:
                kill(p)
                errs.append("still running %d s after its %d s" % (60, SECONDS))
            stdout, stderr = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                kill(p)
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
        fds = [(t, v) for t, _, _, v in rss if v]
        peak_t, peak_fds = max(fds, key=lambda tv: tv[1]) if fds else (0, None)
        if peak_fds is not None and peak_fds > FDS_MAX:
            errs.append("%d open files at %d s, more than the %d living threads' "
                        "twice over: one kept per thread that ever was? %s"
                        % (peak_fds, peak_t, ALIVE, fds))
        # early: the first two seconds once a third of the threads (or of
        # the time) have gone by; late: the last three seconds
        third = [t for t, n, _, _ in rss if (n or 0) >= STORM_THREADS / 3 or t >= SECONDS / 3]
        kb = [(t, v) for t, _, v, _ in rss if v]
        early = [v for t, v in kb if third and third[0] <= t < third[0] + 2]
        end = kb[-1][0] if kb else 0
        late = [v for t, v in kb if t >= end - 3 and third and t >= third[0] + 2]
        if early and late and max(late) > max(early) + RSS_SLACK_KB:
            errs.append("resident size grew from %d kB (at %d s) to %d kB: %s"
                        % (max(early), third[0], max(late), kb))
        # With fewer, a file kept per thread that ever was might stay
        # below FDS_MAX.  (The free-threaded build, read by the ASan
        # sampler on a loaded 2-core machine, started 130 a second.)
        if started is not None and started < FDS_MAX + ALIVE:
            errs.append("the target started only %d threads" % started)
        info = "%s threads started in %.0f s; RSS %s -> %s kB; at most %s open files" % (
            started, end, max(early) if early else "?", max(late) if late else "?",
            "?" if peak_fds is None else peak_fds)
    settle(Result("thread-storm", "FAIL" if errs else "PASS", "\n".join(errs), info=info),
           request.node)
