"""What `pystack-dump sample` says about the samples it does not show:
its errors (explained in the summary when there are some, and in
--help), on a target whose threads come and go (targets/thread_storm.py)
and on one that stands still (targets/threads.py); its missed ticks
(what they can do to the shares, in the summary past a tenth of them,
and in --help), with the sampler stopped for a third of its run; the
idle threads the table leaves out (said in its header), on
targets/threads.py, whose threads all block."""

import os
import signal
import subprocess
import time

import pytest

from harness.dumps import gt_sanity
from harness.procs import kill, short, spawn
from harness.profiles import summary_ticks
from harness.results import Result, settle
from harness.target import Target, tool_run

# The summary's explanation of its errors (cli/sample.c, errors_summary).
ERRORS_SAID = "an error is a round in which a thread's stack could not be read"
# 1 s runs on the thread storm until one has errors to explain: with the
# other core busy, one on the free-threaded build made 14 rounds (500
# threads each) and tore none.
STORM_RUNS = 5


def summary_errors(tool, pid, rate):
    """`sample -r RATE -d 1` on pid: (errors counted, stderr, problems)."""
    argv, rc, so, se, took = tool_run(tool, ["sample", "-r", rate, "-d", "1", "-f", "json",
                                             "-o", "/dev/null", str(pid)], timeout=60)
    text = se.decode("utf-8", "replace")
    counted = [line for line in text.splitlines() if " errors (" in line]
    if rc != 0 or not counted:
        return None, text, ["%s: exit %s: %s" % (" ".join(argv), rc, short(se))]
    return int(counted[0].split(" errors (")[0].rsplit(" ", 1)[1]), text, []


def folded_help(tool):
    """sample --help with its line breaks and runs of spaces folded, so a
    phrase is found however the paragraph is wrapped."""
    return " ".join(tool_run(tool, ["sample", "--help"])[2].decode().split())


def errors_said(n, text):
    if n and ERRORS_SAID not in text:
        return ["%d errors, not explained:\n%s" % (n, text)]
    if not n and ERRORS_SAID in text:
        return ["no error, yet an explanation of errors:\n%s" % text]
    return []


def test_sample_errors_explained(interp, tool, request):
    """Threads started and ended a thousand a second tear some reads: the
    summary says what its errors are; none on a still target, and then no
    word of them; --help explains them."""
    errs = []
    with Target(interp, "thread_storm") as tg:
        tg.wait_ground_truth()
        for _ in range(STORM_RUNS):
            n, text, errs = summary_errors(tool, tg.pid, "max")
            if errs or n:
                break
        if n == 0:
            errs.append("no error provoked by the thread storm:\n" + text)
        elif n:
            errs += errors_said(n, text)
    with Target(interp, "threads") as tg:
        tg.settled_truth(gt_sanity)
        n, text, more = summary_errors(tool, tg.pid, "1000")
        errs += more or errors_said(n, text)
    if "An error is a round in which a thread's stack could not" not in folded_help(tool):
        errs.append("sample --help does not explain errors")
    settle(Result("errors explained", "FAIL" if errs else "PASS", "\n".join(errs)),
           request.node)


# The summary's word on missed ticks (cli/sample.c, missed_summary), said
# past MISSED_SAID_PCT percent of them.
MISSED_SAID = "of the ticks were missed: the machine did not run the sampler"
MISSED_SAID_PCT = 10.0
# The stopped run: -d MISSED_RUN_S, stopped MISSED_STOP_S after
# MISSED_STOP_AT (past the start-up of the sanitizer build on a loaded
# machine) for MISSED_STOP_S: a third of its ticks missed.
MISSED_RUN_S, MISSED_STOP_AT, MISSED_STOP_S = 3, 1.0, 1.0


def missed_errors(err, stopped):
    """The summary on stderr says what missed ticks do exactly when more
    than MISSED_SAID_PCT of them were, with their share; a stopped run
    missed more than that."""
    text = err.decode("utf-8", "replace")
    ticks = summary_ticks(err)
    if ticks is None:
        return ["no tick counts in the summary:\n" + text]
    pct = 100.0 * ticks[1] / max(1, sum(ticks))
    said = [line for line in text.splitlines() if MISSED_SAID in line]
    if stopped and pct <= MISSED_SAID_PCT:
        return ["stopped for %.1f s of %d, yet only %d of %d ticks missed:\n%s"
                % (MISSED_STOP_S, MISSED_RUN_S, ticks[1], sum(ticks), text)]
    if pct > MISSED_SAID_PCT and not said:
        return ["%.0f%% of the ticks missed, not explained:\n%s" % (pct, text)]
    if pct <= MISSED_SAID_PCT and said:
        return ["%.1f%% of the ticks missed, yet a word on them:\n%s" % (pct, text)]
    want = "%.0f%% of the ticks were missed" % pct
    if said and not (said[0].startswith("pystack-dump sample: " + want)
                     and "off by up to %.0f points" % pct in said[0]):
        return ["%d of %d ticks missed: the summary should say %r and as many points:\n%s"
                % (ticks[1], sum(ticks), want, text)]
    return []


@pytest.mark.interps(lambda i: i.label in ("pyenv-3.12", "sid-3.15", "ft-3.15t"))
def test_sample_missed_said(interp, tool, request):
    """The sampler stopped (SIGSTOP) for a third of its run: the summary
    gives the share of ticks missed and says a share can be off by as many
    points; a run left alone on a still target misses few and says nothing
    of them unless it missed more than a tenth; --help explains them."""
    with Target(interp, "threads") as tg:
        tg.settled_truth(gt_sanity)
        p = spawn(tool.cmd + ["sample", "-r", "1000", "-d", str(MISSED_RUN_S), "-f", "json",
                              "-o", "/dev/null", str(tg.pid)],
                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            time.sleep(MISSED_STOP_AT)
            os.kill(p.pid, signal.SIGSTOP)
            time.sleep(MISSED_STOP_S)
            os.kill(p.pid, signal.SIGCONT)
            _, err = p.communicate(timeout=60)
        finally:
            kill(p)
        errs = [] if p.returncode == 0 else ["the stopped sampler exited %s: %s"
                                              % (p.returncode, short(err))]
        errs += missed_errors(err, True)
        argv, rc, _, err, _ = tool_run(tool, ["sample", "-r", "1000", "-d", "1", "-f", "json",
                                              "-o", "/dev/null", str(tg.pid)], timeout=60)
        errs += missed_errors(err, False) if rc == 0 else [
            "%s: exit %s: %s" % (" ".join(argv), rc, short(err))]
    if "A missed tick is one the machine did not run the sampler in time for" \
            not in folded_help(tool):
        errs.append("sample --help does not explain missed ticks")
    settle(Result("missed said", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)


def header(text):
    """The first lines of a table, up to its column titles."""
    return text.split("\n\n")[0] if "\n\n" in text else text


def idle_errors(tool, tg, gt, extra):
    """`sample -f table` on a target whose threads all block: the header
    says its idle threads were left out, with their samples, and how to
    see them; with --idle the table has them and says nothing left out."""
    errs = []
    # 100 rounds (a tenth of a second): every thread blocks throughout, so
    # the header's count and its idle threads are the same in any number.
    base = ["sample", "-n", "100", "-q", "-f", "table"] + extra
    argv, rc, so, se, _ = tool_run(tool, base + [str(tg.pid)], timeout=60)
    head = header(so.decode("utf-8", "replace"))
    want = "Left out: %d idle threads (never seen on a CPU), " % len(gt["threads"])
    said = [line for line in head.splitlines() if line.startswith(want)]
    count = said[0][len(want):].split()[0] if said else ""
    if rc != 0 or "; --idle shows them" not in "".join(said) or not count.isdigit() \
            or not int(count):
        errs.append("%s: exit %s, the header does not say the %d idle threads and their "
                    "samples:\n%s" % (" ".join(argv), rc, len(gt["threads"]), head))
    argv, rc, so, se, _ = tool_run(tool, base + ["--idle", str(tg.pid)], timeout=60)
    head = header(so.decode("utf-8", "replace"))
    if rc != 0 or "Left out" in head or " 0 samples in " in head:
        errs.append("%s: exit %s, the idle threads not in the table:\n%s"
                    % (" ".join(argv), rc, head))
    return errs


def test_sample_idle_said(interp, tool, request):
    """Wall mode on a process whose threads all block (targets/threads.py):
    the table leaves them out by default, and says so in its header (it
    said "0 samples ... 0 threads", as if nothing had been sampled); with
    and without --subprocesses (one table per process)."""
    with Target(interp, "threads") as tg:
        gt = tg.settled_truth(gt_sanity)
        errs = idle_errors(tool, tg, gt, []) + idle_errors(tool, tg, gt, ["--subprocesses"])
    settle(Result("idle said", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)
