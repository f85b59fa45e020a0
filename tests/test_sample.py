"""pystack-dump sample: wall, cpu, gil and async modes against targets
that know what they do; SIGINT, a target that exits, launch mode."""

import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from harness.cores import remove
from harness.deep import SAMPLE as DEEP_SAMPLE, very_deep_job
from harness.dumps import base_gt_sanity
from harness.procs import TARGET_ENV, alive, finish, kill, run, short, spawn
from harness.profiles import (ASYNC_AWAIT_MIN, ASYNC_BURN_MIN, ASYNC_MAX_READS,
                              ASYNC_MIN_TICK_SHARE, CPU_BUSY_MIN, GIL_HOLDER_MIN, GIL_IDLE_MAX, GIL_IN_HOLD_MIN, IDLE_MAX,
                              MAX_MIN_RATE, MAX_READS, MAX_TICKS, SAMPLE_ARM_AFTER, SAMPLE_ASYNC_MIN,
                              SAMPLE_EXIT_AFTER, SAMPLE_FORMAT_TICKS, SAMPLE_MAX_ERROR_SHARE,
                              SAMPLE_MIN_TICK_SHARE, SAMPLE_NO_ASYNC, SAMPLE_RATE, SAMPLE_SECS,
                              SAMPLE_STOP_AFTER, SAMPLE_TIMEOUT, SUMMARY_WORDS,
                              chain_matches, collapsed_errors, explain, flabel,
                              is_fn, label_errors, overlap, profile_info, profile_stacks,
                              read_profile, result, sample_out, sample_profile,
                              sample_rate_errors, sampled_window, samples_in, shares_info, split_error,
                              split_truth,
                              stopped_run_errors, target_report, task_label, threads_profile)
from harness.results import Result, settle
from harness.target import Target, tool_run
from harness.tasks import TASKS_DOCUMENTED_MIN, TASKS_UNSUPPORTED


# job kind -> (target, the checks it makes by name):
#   wall-split    wall mode: a 75/25 split of two functions, within 5 points
#                 of the target's own measure
#   collapsed     the collapsed format (lines, --no-lines -q, --threads)
#   rate-max      -r max: thousands of samples a second, one or two reads each
#   sigint        SIGINT ends sampling: exit 0, everything written, the
#                 target untouched (async-sigint: the same in async mode)
#   cpu, gil      cpu mode: the busy thread's samples, not the sleeping
#                 one's; gil mode: the thread holding the GIL, where it does
#   async         each coroutine chain under its task, awaits counted apart
#                 (3.7+; 3.6 must refuse -m async); async-rate: keeping up
#   target-exits  the target exits mid-run: exit 0 soon after, everything
#                 written (async-target-exits: in async mode)
#   launch        `sample -- PROGRAM`: the program launched is the one profiled
SAMPLE_JOBS = {
    "sample-split": ("sample_split", ["wall-split", "collapsed", "rate-max", "sigint"]),
    "sample-cpu": ("sample_cpu", ["cpu"]),
    "sample-gil": ("sample_gil", ["gil"]),
    "sample-async": ("sample_async", ["async", "async-rate", "async-sigint"]),
    "sample-exit": ("sample_split", ["target-exits"]),
    "sample-async-exit": ("sample_async", ["async-target-exits"]),
    "sample-launch": ("sample_split", ["launch"]),
}
SAMPLE_CHECKS = [(kind, check) for kind, (_, checks) in SAMPLE_JOBS.items() for check in checks]


def sample_job(interp, kind, tool):
    target, names = SAMPLE_JOBS[kind]
    if target == "sample_async" and interp.minor < SAMPLE_ASYNC_MIN:
        skip = [Result(n, "SKIP", SAMPLE_NO_ASYNC) for n in names]
        if kind == "sample-async" and not interp.missing:
            return [async_refused(interp, tool, names[0])] + skip[1:]
        return skip
    if kind == "sample-launch":
        return [sample_launch(interp, tool, names[0])]
    exits = kind.endswith("-exit")
    args = ["exit-after=%g" % SAMPLE_EXIT_AFTER, "exit-on=usr2"] if exits else []
    with Target(interp, target, args=args) as tg:
        gt = tg.wait_ground_truth()
        sanity = base_gt_sanity(gt, interp)
        if sanity:
            return [Result(n, "FAIL", "ground truth: " + "; ".join(sanity))
                    for n in names]
        if exits:
            return [sample_target_exits(interp, tool, tg, gt, names[0],
                                        "async" if target == "sample_async" else "wall")]
        if kind == "sample-split":
            return [sample_split(interp, tool, tg, gt, names[0]),
                    sample_collapsed(interp, tool, tg, gt, names[1]),
                    sample_max(interp, tool, tg, gt, names[2]),
                    sample_sigint(interp, tool, tg, gt, names[3], "wall")]
        if kind == "sample-cpu":
            return [sample_cpu(interp, tool, tg, gt, names[0])]
        if kind == "sample-gil":
            if interp.ft:
                return [gil_refused(tool, tg, names[0])]
            return [sample_gil(interp, tool, tg, gt, names[0])]
        return sample_async(interp, tool, tg, gt, names[:2]) + [
            sample_sigint(interp, tool, tg, gt, names[2], "async")]


def async_refused(interp, tool, name):
    """Before 3.7 (no task graphs: `--tasks` exits 6), `-m async` must be
    refused the same way before sampling starts, not sample nothing."""
    with Target(interp, "sample_split") as tg:
        tg.wait_ground_truth()
        argv, rc, out, err, secs = tool_run(tool, ["sample", "-m", "async", "-n", "100", "-f",
                                                   "json", str(tg.pid)], timeout=SAMPLE_TIMEOUT)
        errs = []
        if rc != 6 or b"not supported" not in err:
            errs.append("%s: exit %s, expected 6 saying task graphs are not supported (as "
                        "--tasks does on %s); stderr: %s" % (" ".join(argv), rc,
                                                            interp.minor_str, short(err)))
        return result(name, errs, info="refused" if not errs else "")


def sample_split(interp, tool, tg, gt, name):
    """Wall mode: spend_hot's share of the samples in the two functions
    within split_tolerance() of the share the target measured."""
    argv, doc, errs, err, t0, t1 = sample_profile(tool, tg.pid, gt, "wall", [], tag="split")
    if doc is None:
        return result(name, errs)
    want = split_truth(tg, *sampled_window(doc, t0, t1))
    stacks = profile_stacks(doc)
    hot, cold = samples_in(stacks, gt["hot"]), samples_in(stacks, gt["cold"])
    got = 100.0 * hot / max(1, hot + cold)
    if hot + cold < 0.9 * doc["samples"]:
        errs.append("only %d of %d samples in %s or %s" % (hot + cold, doc["samples"],
                                                           gt["hot"]["function"],
                                                           gt["cold"]["function"]))
    e = split_error("%s: %.1f%% of the samples" % (gt["hot"]["function"], got), got, want,
                    doc["ticks"], doc["missed"])
    errs += [e] if e else []
    summary = err.decode("utf-8", "replace")
    missing = [w for w in SUMMARY_WORDS if w not in summary]
    if missing:
        errs.append("the summary on stderr does not mention %s: %s"
                    % (", ".join(missing), short(err, 500)))
    errs = explain(argv, errs, stacks)
    return result(name, errs, info="hot %.1f%% (target %.1f%%); %s"
                  % (got, want, profile_info(doc)))


def sample_max(interp, tool, tg, gt, name):
    """-r max -n MAX_TICKS: the steady state costs at most MAX_READS reads a
    sample, and runs well above any fixed rate (the speed goal itself is
    bench/bench_sample.py's: the suite runs jobs side by side)."""
    path = sample_out("max")
    try:
        argv, rc, out, err, secs = tool_run(tool, ["sample", "-r", "max", "-n", str(MAX_TICKS),
                                                   "-f", "json", "-o", path, str(tg.pid)],
                                            timeout=SAMPLE_TIMEOUT)
        doc, errs = read_profile(argv, rc, err, secs, path, tg.pid, gt, "wall")
        if doc is None:
            return result(name, errs)
        rate = doc["ticks"] / max(doc["duration_s"], 1e-9)
        reads = doc["reads"] / max(1, doc["samples"])
        if doc["ticks"] != MAX_TICKS:
            errs.append("%d ticks for -n %d" % (doc["ticks"], MAX_TICKS))
        if reads > MAX_READS:
            errs.append("%.2f reads a sample (at most %g in the steady state)" % (reads, MAX_READS))
        if rate < MAX_MIN_RATE:
            errs.append("only %.0f ticks/s at -r max" % rate)
        if doc["errors"] > SAMPLE_MAX_ERROR_SHARE * doc["ticks"]:
            errs.append("%d errors in %d ticks" % (doc["errors"], doc["ticks"]))
        # MAX_TICKS at this rate span about 0.1 s, 2-3 of the target's
        # hot/cold rounds; a loaded machine can leave the target off the
        # CPU, its stack still in one of them, for all of it.
        errs += stopped_run_errors(doc, gt, need_all=False)
        return result(name, explain(argv, errs), info=profile_info(doc))
    finally:
        remove(path)



def sample_collapsed(interp, tool, tg, gt, name):
    """-f collapsed with lines, --no-lines and --threads: well formed, the
    labels as documented (qualname before 3.11 is the plain name)."""
    errs, info = [], []
    for extra, lines, threads in (([], True, False), (["--no-lines", "-q"], False, False),
                                  (["--threads"], True, True)):
        argv, rc, out, err, secs = tool_run(tool, ["sample", "-r", str(SAMPLE_RATE), "-n",
                                                   str(SAMPLE_FORMAT_TICKS), "-f", "collapsed"]
                                            + extra + [str(tg.pid)], timeout=SAMPLE_TIMEOUT)
        cmd = " ".join(argv)
        if rc != 0:
            errs.append("%s: exited %s; stderr: %s" % (cmd, rc, short(err)))
            continue
        e, total = collapsed_errors(out.decode("utf-8", "replace"), gt, lines,
                                    SAMPLE_FORMAT_TICKS, threads)
        if "-q" in extra and err.strip():
            e.append("-q, yet stderr says: %s" % short(err, 300))
        errs += ["%s: %s" % (cmd, x) for x in e]
        if e:
            errs.append("  output: " + short(out, 1200))
        info.append("%d" % total)
    return result(name, errs, info="samples %s (lines, --no-lines -q, --threads)"
                  % "/".join(info))



def sample_cpu(interp, tool, tg, gt, name):
    """cpu mode: the burner has nearly every sample, the sleeping threads
    next to none."""
    argv, doc, errs, shares, stacks, _ = threads_profile(tool, tg, gt, "cpu")
    if doc is None:
        return result(name, errs)
    total = doc["samples"]
    for n in gt["busy"]:
        if shares[n] < CPU_BUSY_MIN * total:
            errs.append("busy thread %r: %d of %d samples (less than %d%%)"
                        % (n, shares[n], total, CPU_BUSY_MIN * 100))
        if shares[n] < SAMPLE_MIN_TICK_SHARE * doc["ticks"]:
            errs.append("busy thread %r: %d samples in %d ticks" % (n, shares[n], doc["ticks"]))
    for n in gt["idle"]:
        if shares[n] > IDLE_MAX * total:
            errs.append("sleeping thread %r: %d of %d samples (more than %d%%)"
                        % (n, shares[n], total, IDLE_MAX * 100))
    burn = samples_in(stacks, gt["functions"]["burn_forever"])
    if burn < shares["burner"]:
        errs.append("%d of the burner's %d samples outside burn_forever()"
                    % (shares["burner"] - burn, shares["burner"]))
    return result(name, explain(argv, errs, stacks),
                  info="%s; %s" % (shares_info(shares, total), profile_info(doc)))


def gil_refused(tool, tg, name):
    """A free-threading build has no GIL: `-m gil` is refused (exit 6,
    saying why) before sampling starts."""
    argv, rc, out, err, secs = tool_run(tool, ["sample", "-m", "gil", "-n", "100", "-f",
                                               "json", str(tg.pid)], timeout=SAMPLE_TIMEOUT)
    errs = []
    if rc != 6 or b"free-threading build: it has no GIL" not in err or out:
        errs.append("%s: exit %s, expected 6 saying a free-threading build has no GIL, "
                    "and no profile; stderr: %s" % (" ".join(argv), rc, short(err)))
    return result(name, errs)


def sample_gil(interp, tool, tg, gt, name):
    """gil mode: at most one sample a tick, never a sleeping thread, the
    holder nearly always."""
    argv, doc, errs, shares, stacks, window = threads_profile(tool, tg, gt, "gil")
    if doc is None:
        return result(name, errs)
    w0, w1 = window
    spans = target_report(tg, ".gil")["spans"]
    total, ticks = doc["samples"], doc["ticks"]
    held = 100.0 * sum(overlap(spans[n], w0, w1) for n in gt["contenders"]) / (w1 - w0)
    seen = 100.0 * sum(shares[n] for n in gt["contenders"]) / max(1, ticks)
    # What the contenders measure is a lower bound: a run that the OS
    # preempted while it held the GIL is not counted.
    if seen < 0.5 * held - 1:
        errs.append("the contenders held the GIL at least %.1f%% of the sampled window (they "
                    "measured it), but have only %.1f%% of the ticks (less than half that, "
                    "less 1 point)" % (held, seen))
    if total > ticks:
        errs.append("%d samples in %d ticks: more than one GIL holder a tick" % (total, ticks))
    if total < SAMPLE_MIN_TICK_SHARE * ticks:
        errs.append("only %d samples in %d ticks, but some thread always holds the GIL"
                    % (total, ticks))
    for n in gt["idle"]:
        if shares[n] > GIL_IDLE_MAX * max(1, total):
            errs.append("thread %r, asleep without the GIL, has %d of %d samples"
                        % (n, shares[n], total))
    h = gt["holder"]
    if shares[h] < GIL_HOLDER_MIN * total:
        errs.append("holder %r: %d of %d samples (less than %d%%), but it holds the GIL "
                    "%gs at a time" % (h, shares[h], total, GIL_HOLDER_MIN * 100, gt["hold_s"]))
    inside = sum(s["self"] for s in stacks if s["tid"] == gt["threads"][h]
                 and s["frames"] and is_fn(s["frames"][-1], gt["functions"]["hold_gil"]))
    if inside < GIL_IN_HOLD_MIN * shares[h]:
        errs.append("only %d of the holder's %d samples end in hold_gil() (its sum())"
                    % (inside, shares[h]))
    return result(name, explain(argv, errs, stacks),
                  info="%s; contenders measured %.1f%%; %s"
                  % (shares_info(shares, total), held, profile_info(doc)))



def sample_async(interp, tool, tg, gt, names):
    """async mode: the sleeper's chain, ending at the exact await line,
    under its task, with await samples about every tick; the burner's CPU
    samples in burn_cpu() under its task.  Then (names[1]) whether the run
    kept up with the rate asked."""
    name = names[0]
    argv, doc, errs, err, t0, t1 = sample_profile(tool, tg.pid, gt, "async", [], tag="async",
                                                  rate_check=False)
    if doc is None:
        if errs and "exited 6" in errs[0] and interp.minor < TASKS_DOCUMENTED_MIN:
            return [Result(n, "SKIP", TASKS_UNSUPPORTED) for n in names]
        return [result(n, errs) for n in names]
    # A round reads again in one batch what the last one read: reads per
    # task sampled stay far under ASYNC_MAX_READS.
    per_task = doc["reads"] / max(1, doc["samples"])
    rate_errs = sample_rate_errors(doc, SAMPLE_SECS, ASYNC_MIN_TICK_SHARE)
    if per_task > ASYNC_MAX_READS:
        rate_errs.append("%.2f reads a task sampled (at most %g)" % (per_task, ASYNC_MAX_READS))
    rate = result(names[1], explain(argv, rate_errs),
                  info="%s, %.2f reads a task" % (profile_info(doc), per_task))
    stacks = profile_stacks(doc)
    sl, bu = gt["sleeper"], gt["burner"]
    chain = sl["chain"]
    at = [s for s in stacks if chain_matches(s["frames"], chain)]
    waited = sum(s["self_await"] for s in at)
    if waited < ASYNC_AWAIT_MIN * doc["ticks"]:
        errs.append("%d await samples end in the sleeper's chain %s (await line %d), "
                    "expected about one a tick (%d ticks)"
                    % (waited, " -> ".join(flabel(dict(c, kind="python")) for c in chain),
                       sl["await_line"], doc["ticks"]))
    sl_labels = {}
    for s in at:
        k = task_label(s["frames"], len(s["frames"]) - len(chain))
        sl_labels[k] = sl_labels.get(k, 0) + s["self"]
    errs += label_errors("the sleeper's chain", sl_labels, sl["task"])
    burning = [s for s in stacks if s["frames"] and is_fn(s["frames"][-1], bu["function"])]
    cpu = sum(s["self"] - s["self_await"] for s in burning)
    if cpu < ASYNC_BURN_MIN * doc["ticks"]:
        errs.append("%d CPU samples end in %s(), expected most ticks (%d)"
                    % (cpu, bu["function"]["function"], doc["ticks"]))
    bu_labels = {}
    for s in burning:
        k = [i for i, f in enumerate(s["frames"]) if is_fn(f, bu["coroutine"])]
        lab = task_label(s["frames"], k[-1]) if k else "(burner() not in the stack)"
        bu_labels[lab] = bu_labels.get(lab, 0) + s["self"]
    errs += label_errors("burner() (running burn_cpu())", bu_labels, bu["task"])
    if set(sl_labels) & set(bu_labels) - set([None]):
        errs.append("the sleeper and the burner appear under the same task label(s) %s"
                    % sorted(set(sl_labels) & set(bu_labels) - set([None])))
    if not doc["cpu_samples"] or not doc["await_samples"]:
        errs.append("cpu_samples %d, await_samples %d: both must be counted"
                    % (doc["cpu_samples"], doc["await_samples"]))
    errs = explain(argv, errs, stacks, 10)
    return [result(name, errs, info="await at line %d: %d, burn_cpu: %d; %s"
                   % (sl["await_line"], waited, cpu, profile_info(doc))), rate]



def sample_sigint(interp, tool, tg, gt, name, mode):
    """SIGINT after SAMPLE_STOP_AFTER seconds (no -d): exit 0, everything
    written, a note on stderr, the target untouched."""
    path = sample_out("sigint")
    argv = [tool.path, "sample", "-m", mode, "-r", str(SAMPLE_RATE), "-f", "json", "-o", path,
            str(tg.pid)]
    p = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(SAMPLE_STOP_AFTER)
        if p.poll() is not None:
            out, err = p.communicate()
            return result(name, ["%s exited %s before the SIGINT; stderr: %s"
                                         % (" ".join(argv), p.returncode, short(err))])
        os.kill(p.pid, signal.SIGINT)
        rc, out, err = finish(p, 15)
        doc, errs = read_profile(argv, rc, err, 15, path, tg.pid, gt, mode)
        if doc is not None:
            errs += stopped_run_errors(doc, gt)
            if b"interrupt" not in err:
                errs.append("stderr does not say sampling was interrupted: %s" % short(err, 300))
        if not alive(tg.pid):
            errs.append("the target died:\n" + tg.log_tail())
        if doc is not None:
            errs = explain(argv, errs)
        return result(name, errs, info=profile_info(doc) if doc else "")
    finally:
        kill(p)
        remove(path)


def sample_target_exits(interp, tool, tg, gt, name, mode):
    """The target exits SAMPLE_EXIT_AFTER seconds into a long -d: exit 0
    soon after, everything written.  Its clock starts (SIGUSR2) once the
    sampler has had SAMPLE_ARM_AFTER to start, not when the target did: on
    a loaded machine the harness alone can take longer than the whole
    window between the ground truth and the exit."""
    secs = 30
    path = sample_out("exit")
    argv = tool.cmd + ["sample", "-m", mode, "-r", str(SAMPLE_RATE), "-d", str(secs), "-f",
                       "json", "-o", path, str(tg.pid)]
    t0 = time.time()
    p = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(SAMPLE_ARM_AFTER)
        os.kill(tg.pid, signal.SIGUSR2)
        rc, out, err = finish(p, SAMPLE_TIMEOUT)
        took = time.time() - t0
        doc, errs = read_profile(argv, rc, err, took, path, tg.pid, gt, mode)
        try:
            tg.proc.wait(timeout=10)    # it may still be on its way out
        except subprocess.TimeoutExpired:
            errs.append("the target did not exit by itself (exit-after=%g)" % SAMPLE_EXIT_AFTER)
        if tg.proc.returncode not in (None, 0):
            errs.append("the target exited %s:\n%s" % (tg.proc.returncode, tg.log_tail()))
        if rc is not None and took > SAMPLE_ARM_AFTER + SAMPLE_EXIT_AFTER + 10:
            errs.append("took %.1fs: did not notice the target exit %gs into -d %d"
                        % (took, SAMPLE_ARM_AFTER + SAMPLE_EXIT_AFTER, secs))
        if doc is not None:
            errs += stopped_run_errors(doc, gt)
            if b"exited" not in err:
                errs.append("stderr does not say the target exited: %s" % short(err, 300))
        if doc is not None:
            errs = explain(argv, errs)
        return result(name, errs, info=("%s; %.1fs" % (profile_info(doc), took))
                      if doc else "")
    finally:
        kill(p)
        remove(path)


def sample_launch(interp, tool, name):
    """`pystack-dump sample -- PYTHON sample_split.py GT exit-after=...`:
    the program it launched is the one profiled (its ground truth's pid)."""
    tg = Target(interp, "sample_split", args=["exit-after=%g" % SAMPLE_EXIT_AFTER])
    os.makedirs(tg.out_host)
    path = sample_out("launch")
    try:
        argv, rc, out, err, took = tool_run(tool, ["sample", "-r", str(SAMPLE_RATE), "-d", "30",
                                                   "-f", "json", "-o", path, "--"]
                                            + tg.command(), timeout=SAMPLE_TIMEOUT,
                                            env=TARGET_ENV)
        try:
            with open(tg.gt_host) as f:
                gt = json.load(f)
        except (OSError, ValueError) as e:
            return result(name, ["%s: the launched target wrote no ground truth (%s); "
                                         "rc %s; stderr: %s" % (" ".join(argv), e, rc,
                                                                short(err))])
        doc, errs = read_profile(argv, rc, err, took, path, gt["pid"], gt, "wall")
        errs += base_gt_sanity(gt, interp)
        if doc is not None:
            errs += stopped_run_errors(doc, gt)
        if rc is not None and took > SAMPLE_EXIT_AFTER + 15:
            errs.append("took %.1fs for a program that runs %gs" % (took, SAMPLE_EXIT_AFTER))
        if doc is not None:
            errs = explain(argv, errs)
        return result(name, errs, info=profile_info(doc) if doc else "")
    finally:
        remove(path)
        shutil.rmtree(tg.out_host, ignore_errors=True)



@pytest.mark.job("sample")
@pytest.mark.parametrize("kind,check", SAMPLE_CHECKS, ids=[c for _, c in SAMPLE_CHECKS])
def test_sample(interp, kind, check, tool, jobs, request):
    """One check of `pystack-dump sample` (SAMPLE_JOBS says which)."""
    settle(jobs.result(check, sample_job, interp, kind, tool), request.node)


@pytest.mark.job("very-deep")
def test_sample_very_deep(interp, tool, jobs, request):
    """A 150,000-frame stack is sampled whole: its samples are kept, with
    every frame, not dropped as a stack that kept changing
    (harness/deep.py)."""
    settle(jobs.result(DEEP_SAMPLE, very_deep_job, interp, tool), request.node)


CUT_DEPTH = 1000050                    # dive() calls, 50 past PYD_MAX_FRAMES
CUT_MIN = (3, 11)                      # older versions recurse in C: too slow, too big
MAX_FRAMES = 1000000                   # PYD_MAX_FRAMES
CUT_RSS_MAX_KB = 1 << 20               # 1 GiB: 160 MB measured (ASan build 400 MB)


def _cut_dump_errors(tool, pid, out_dir):
    """The dump of the deep thread: its innermost MAX_FRAMES, "truncated",
    in bounded memory (peak RSS under CUT_RSS_MAX_KB, by /usr/bin/time)."""
    rss_file = os.path.join(out_dir, "cut.rss")
    argv = ["/usr/bin/time", "-f", "%M", "-o", rss_file, tool.path, "--json", str(pid)]
    rc, so, se, secs = run(argv, 60)
    if rc != 0:
        return ["%s exited %s: %s" % (" ".join(argv), rc, short(se))]
    with open(rss_file) as f:
        rss = int(f.read().split()[-1])
    if rss > CUT_RSS_MAX_KB:
        return ["%s: peak RSS %d KB, more than %d KB" % (" ".join(argv), rss, CUT_RSS_MAX_KB)]
    threads = json.loads(so)["threads"]
    deep = [t for t in threads if t["name"] == "very_deep"]
    if not deep or len(deep[0]["frames"]) != MAX_FRAMES or deep[0]["truncated"] is not True:
        return ["deep thread: %s frames, truncated %s; want %d, true"
                % (len(deep[0]["frames"]) if deep else None,
                   deep[0].get("truncated") if deep else None, MAX_FRAMES)]
    if any(t["truncated"] is not False for t in threads if t is not deep[0]):
        return ["a shallow thread says truncated"]
    return []


def _cut_sample_errors(tool, tg, interp):
    """Samples of the deep thread are kept, cut under one marker frame."""
    out = os.path.join(tg.out_host, "cut.collapsed")
    argv, rc, so, se, secs = tool_run(tool, ["sample", "-n", "3", "-q", "-f", "collapsed",
                                             "-o", out, str(tg.pid)], timeout=120)
    if rc != 0:
        return ["%s exited %s: %s" % (" ".join(argv), rc, short(se))]
    with open(out) as f:
        stacks = [line.rsplit(" ", 1)[0].split(";") for line in f if line.strip()]
    deep = [s for s in stacks if len(s) > MAX_FRAMES]
    if not deep:
        return ["no sample of the deep thread; deepest %s"
                % max((len(s) for s in stacks), default=None)]
    # the marker, then the innermost MAX_FRAMES frames; it counts the
    # frames left out: dive()'s and threading's 4 below them
    want = ("<truncated %d frames>" % (CUT_DEPTH + 1 - MAX_FRAMES + 4)
            if interp.minor >= (3, 12) else "<truncated frames>")
    if deep[0][0] != want or len(deep[0]) != MAX_FRAMES + 1:
        return ["deep sample: %d frames, the outermost %r; want %d, %r"
                % (len(deep[0]), deep[0][0], MAX_FRAMES + 1, want)]
    return []


def test_deeper_than_cap(interp, tool, request):
    """A stack deeper than PYD_MAX_FRAMES: the dump shows its innermost
    frames and says "truncated"; sample keeps its samples, cut under one
    outermost <truncated N frames> frame (N from the 3.12+ recursion
    counter)."""
    if interp.minor < CUT_MIN:
        settle(Result("deeper than the cap", "SKIP", "a million frames recurse in C "
                      "before 3.11: the target alone would take minutes"), request.node)
    with Target(interp, "very_deep", args=[str(CUT_DEPTH)]) as tg:
        tg.settled_truth(lambda gt, interp: [])
        errs = (_cut_dump_errors(tool, tg.pid, tg.out_host)
                + _cut_sample_errors(tool, tg, interp))
    settle(Result("deeper than the cap", "FAIL" if errs else "PASS", "\n".join(errs)),
           request.node)
