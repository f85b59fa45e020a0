"""Checks of a profile (pystack-dump sample -f json, docs/profile-formats.md)
against what the sample_* targets know they do."""

import calendar
import json
import os
import re
import signal
import time
import uuid

from .cores import remove
from .dumps import _is_int, thread_name_ok
from .procs import comm, host_tmp, short
from .results import Result
from .target import TargetError, parse_json_out, tool_run


SAMPLE_SECS = 2                         # -d of each accuracy run
SAMPLE_RATE = 1000                      # -r of every run
SAMPLE_TIMEOUT = 40.0
SAMPLE_MIN_TICK_SHARE = 0.5             # ticks >= this share of rate x duration
SAMPLE_MAX_ERROR_SHARE = 0.10           # errors <= this share of ticks
SPLIT_TOLERANCE = 5.0                   # points: wall-mode split vs the target's own
CPU_BUSY_MIN = 0.90                     # cpu mode: the busy thread's share of samples
IDLE_MAX = 0.05                         # cpu mode: a sleeping thread's share of samples
GIL_HOLDER_MIN = 0.50                   # gil mode: the holder's share of samples
GIL_IN_HOLD_MIN = 0.80                  # gil mode: of the holder's samples, in hold_gil()
# gil mode: a sleeping thread's share.  Not 0: the GIL's "locked" flag is
# set before "last_holder" changes, so a read in between can name a thread
# that no longer holds it (seen once: 1 of 1,922 samples for the sleeping
# main thread, sid 3.14d on a loaded machine).
GIL_IDLE_MAX = 0.01
ASYNC_AWAIT_MIN = 0.5                   # async mode: the sleeper's await samples / ticks
# async mode decodes the whole task graph every round, reading again in
# one batch what the last round read: at -r 1000 it must keep at least this
# share of the ticks (machines running the suite are loaded), and read at
# most ASYNC_MAX_READS a task sampled (the first round reads every object
# on its own, ~25 a task; later rounds about one batch in all).
ASYNC_MIN_TICK_SHARE = 0.3
ASYNC_MAX_READS = 10
ASYNC_BURN_MIN = 0.3                    # async mode: the burner's CPU samples / ticks
SAMPLE_ASYNC_MIN = (3, 7)               # asyncio.run, the async target
SAMPLE_NO_ASYNC = "asyncio target needs CPython 3.7+ (asyncio.run)"
SAMPLE_EXIT_AFTER = 1.0                 # exit-after= of the targets that exit mid-run
SAMPLE_ARM_AFTER = 0.3                  # ... counted from a SIGUSR2 this long after the sampler's start
SAMPLE_STOP_AFTER = 1.0                 # SIGINT this long after the start
SAMPLE_FORMAT_TICKS = 300               # -n of each format run
MAX_TICKS = 20000                       # -n of the -r max run
MAX_READS = 2.0                         # reads a sample at -r max (DESIGN: one or two)
MAX_MIN_RATE = 5000                     # ticks/s at -r max, a floor (the goal: bench/)
PROFILE_FORMAT = "pystack-dump-profile"
SUMMARY_WORDS = ("samples", "errors", "missed", "reads per")   # the summary on stderr
FLAMEGRAPH_SCREENSHOT = "/tmp/pyd-sample-flamegraph.png"   # kept after the run

# job kind -> (target, tests)

def sample_out(tag, ext=".json"):
    return os.path.join(host_tmp(), "sample-%s-%s%s" % (tag, uuid.uuid4().hex[:8], ext))


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_profile(doc, pid, version, mode):
    """The json format's contract: fields, types, and a consistent tree
    (totals add up, every sample counted once)."""
    errs = []
    if not isinstance(doc, dict):
        return ["top level is %s, not an object" % type(doc).__name__]
    if doc.get("format") != PROFILE_FORMAT or doc.get("version") != 1:
        errs.append("format/version %r/%r, expected %r/1"
                    % (doc.get("format"), doc.get("version"), PROFILE_FORMAT))
    for k in ("pid", "ticks", "samples", "errors", "missed", "reads", "cpu_samples",
              "await_samples"):
        if not (_is_int(doc.get(k)) and doc[k] >= 0):
            errs.append("%s missing or not a count: %r" % (k, doc.get(k)))
    for k in ("rate_hz", "duration_s", "interval_s"):
        if not _num(doc.get(k)):
            errs.append("%s missing or not a number: %r" % (k, doc.get(k)))
    for k in ("lines", "truncated"):
        if not isinstance(doc.get(k), bool):
            errs.append("%s missing or not a bool: %r" % (k, doc.get(k)))
    if doc.get("pid") != pid:
        errs.append("pid %r, expected %d" % (doc.get("pid"), pid))
    if version is not None and doc.get("python_version") != version:
        errs.append("python_version %r, expected %r" % (doc.get("python_version"), version))
    if doc.get("mode") != mode:
        errs.append("mode %r, expected %r" % (doc.get("mode"), mode))
    if doc.get("truncated"):
        errs.append("truncated is true on a small profile")
    frames, threads, nodes = doc.get("frames"), doc.get("threads"), doc.get("nodes")
    if not (isinstance(frames, list) and isinstance(threads, list) and isinstance(nodes, list)):
        return errs + ["frames/threads/nodes missing or not lists"]
    for i, f in enumerate(frames):
        if not (isinstance(f, dict) and isinstance(f.get("function"), str)
                and f.get("kind") in ("python", "task", "truncated", "gc")
                and (f.get("qualname") is None or isinstance(f.get("qualname"), str))):
            errs.append("frames[%d] malformed: %r" % (i, f))
        elif f["kind"] == "python" and not (isinstance(f.get("file"), str)
                                            and _is_int(f.get("line"))):
            errs.append("frames[%d]: a Python frame needs file and line: %r" % (i, f))
    n = len(nodes)
    for i, nd in enumerate(nodes):
        if not (isinstance(nd, dict) and _is_int(nd.get("parent"))
                and all(_is_int(nd.get(k)) and nd[k] >= 0 for k in ("self", "self_await", "total"))
                and (nd.get("frame") is None or _is_int(nd.get("frame")))):
            errs.append("nodes[%d] malformed: %r" % (i, nd))
            return errs
        if i == 0:
            if nd["parent"] != -1 or nd["frame"] is not None:
                errs.append("nodes[0] is not a root (parent -1, frame null): %r" % nd)
        elif not (0 <= nd["parent"] < n and nd["parent"] != i):
            errs.append("nodes[%d].parent %r out of range" % (i, nd["parent"]))
            return errs
        elif (nd["frame"] is None) != (nd["parent"] == 0):
            errs.append("nodes[%d]: frame must be null exactly for thread nodes: %r" % (i, nd))
        elif nd["frame"] is not None and not 0 <= nd["frame"] < len(frames):
            errs.append("nodes[%d].frame %r out of range" % (i, nd["frame"]))
        if nd["self_await"] > nd["self"]:
            errs.append("nodes[%d]: self_await %d > self %d" % (i, nd["self_await"], nd["self"]))
    if errs:
        return errs
    below = [0] * n
    for i in range(1, n):
        below[nodes[i]["parent"]] += nodes[i]["total"]
    bad = [i for i in range(n) if nodes[i]["total"] != nodes[i]["self"] + below[i]]
    if bad:
        errs.append("%d node(s) whose total is not self + children's totals, first "
                    "nodes[%d]: %r (children %d)" % (len(bad), bad[0], nodes[bad[0]], below[bad[0]]))
    for i, t in enumerate(threads):
        if not (isinstance(t, dict) and _is_int(t.get("tid")) and _is_int(t.get("node"))
                and (t.get("name") is None or isinstance(t.get("name"), str))):
            errs.append("threads[%d] malformed: %r" % (i, t))
        elif not (0 < t["node"] < n and nodes[t["node"]]["parent"] == 0):
            errs.append("threads[%d].node %r is not a child of the root" % (i, t["node"]))
    selfs = sum(nd["self"] for nd in nodes)
    if _is_int(doc.get("samples")) and (selfs != doc["samples"] or nodes[0]["total"] != selfs):
        errs.append("samples %d, but the nodes' self counts add up to %d (root total %d)"
                    % (doc["samples"], selfs, nodes[0]["total"]))
    awaits = sum(nd["self_await"] for nd in nodes)
    if mode != "async" and awaits:
        errs.append("%d self_await samples outside async mode" % awaits)
    if mode == "async" and awaits != doc.get("await_samples"):
        errs.append("await_samples %r, but the nodes' self_await add up to %d"
                    % (doc.get("await_samples"), awaits))
    if _is_int(doc.get("samples")) and _is_int(doc.get("ticks")) and doc["samples"] == 0:
        errs.append("no samples at all (%d ticks)" % doc["ticks"])
    return errs[:20]


def profile_stacks(doc):
    """One entry per node with samples of its own: {tid, thread, frames
    (outermost first), self, self_await}."""
    nodes, frames = doc["nodes"], doc["frames"]
    thread_of = dict((t["node"], t) for t in doc["threads"])
    out = []
    for i, nd in enumerate(nodes):
        if not nd["self"]:
            continue
        chain, j, steps = [], i, 0
        while j > 0 and nodes[j]["frame"] is not None and steps <= len(nodes):
            chain.append(frames[nodes[j]["frame"]])
            j, steps = nodes[j]["parent"], steps + 1
        t = thread_of.get(j, {})
        out.append({"tid": t.get("tid"), "thread": t.get("name"), "frames": chain[::-1],
                    "self": nd["self"], "self_await": nd["self_await"]})
    return out


def flabel(f):
    if f.get("kind") == "task":
        return "<task %s>" % f["function"]
    return "%s (%s:%s)" % (f.get("qualname") or f["function"], f.get("file"), f.get("line"))


def top_stacks(stacks, n=6):
    rows = sorted(stacks, key=lambda s: -s["self"])[:n]
    return ["  %6d (await %d) tid %s: %s" % (s["self"], s["self_await"], s["tid"],
                                             ";".join(flabel(f) for f in s["frames"]))
            for s in rows]


def explain(argv, errs, stacks=None, n=6):
    """A failing check's errors, after the command and before the top
    stacks of its profile."""
    if not errs:
        return errs
    return (["command: " + " ".join(argv)] + errs
            + (["top stacks:"] + top_stacks(stacks, n) if stacks else []))


def is_fn(f, info):
    """A Python frame of the function code_info() describes."""
    return (f.get("kind") == "python" and f["function"] == info["function"]
            and f.get("file") == info["file"])


def samples_in(stacks, info):
    return sum(s["self"] for s in stacks if any(is_fn(f, info) for f in s["frames"]))


def sample_profile(tool, pid, gt, mode, args, secs=SAMPLE_SECS, tag="run", rate_check=True):
    """`pystack-dump sample -m MODE -r RATE -d SECS -f json -o F ARGS PID`.
    Returns (argv, doc, errors, stderr, t0, t1): t0/t1 the monotonic times
    around the run; rate_check: the errors include sample_rate_errors()."""
    path = sample_out(tag)
    try:
        t0 = time.monotonic()
        argv, rc, out, err, took = tool_run(tool, ["sample", "-m", mode, "-r", str(SAMPLE_RATE)]
                                            + (["-d", str(secs)] if secs else [])
                                            + ["-f", "json", "-o", path] + list(args)
                                            + [str(pid)], timeout=SAMPLE_TIMEOUT)
        t1 = time.monotonic()
        doc, errs = read_profile(argv, rc, err, took, path, pid, gt, mode)
        if doc is not None and secs and rate_check:
            errs += sample_rate_errors(doc, secs)
        return argv, doc, errs, err, t0, t1
    finally:
        remove(path)


def read_profile(argv, rc, err, secs, path, pid, gt, mode):
    """(doc, errors) of a finished `sample -f json -o path` run."""
    cmd = " ".join(argv)
    if rc is None:
        return None, ["%s: timed out after %.0fs; stderr: %s" % (cmd, secs, short(err))]
    if rc != 0:
        return None, ["%s: exited %d (expected 0); stderr: %s" % (cmd, rc, short(err))]
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return None, ["%s: exited 0 but no output file: %s; stderr: %s" % (cmd, e, short(err))]
    doc, e = parse_json_out(data)
    if e:
        return None, ["%s: %s" % (cmd, e)]
    errs = ["%s: %s" % (cmd, x) for x in check_profile(doc, pid, gt.get("python_version"), mode)]
    return (None if errs else doc), errs


def sample_rate_errors(doc, secs, min_share=SAMPLE_MIN_TICK_SHARE):
    errs = []
    want = SAMPLE_RATE * secs
    if doc["ticks"] < min_share * want:
        errs.append("only %d ticks in %.2fs at -r %d (%d expected; %d missed)"
                    % (doc["ticks"], doc["duration_s"], SAMPLE_RATE, want, doc["missed"]))
    if doc["errors"] > SAMPLE_MAX_ERROR_SHARE * max(1, doc["ticks"]):
        errs.append("%d errors in %d ticks (more than %d%%)"
                    % (doc["errors"], doc["ticks"], SAMPLE_MAX_ERROR_SHARE * 100))
    if not secs * 0.9 <= doc["duration_s"] <= secs + 1.5:
        errs.append("duration_s %.2f for -d %s" % (doc["duration_s"], secs))
    return errs


def profile_info(doc):
    return "%d ticks, %d samples, %.0f ticks/s, %d errors, %d missed, %.2f reads/sample" % (
        doc["ticks"], doc["samples"], doc["ticks"] / max(doc["duration_s"], 1e-9),
        doc["errors"], doc["missed"], doc["reads"] / max(doc["samples"], 1))


def result(name, errs, info="", detail_ok=""):
    return Result(name, "FAIL" if errs else "PASS",
                  "\n".join(errs) if errs else detail_ok, info=info)



_COLLAPSED = re.compile(r"^(.+) (\d+)$")


def parse_collapsed(text):
    """[(labels outermost first, count)], or raises ValueError."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _COLLAPSED.match(line)
        if not m:
            raise ValueError("line %d is not 'STACK COUNT': %r" % (n, line[:200]))
        out.append((m.group(1).split(";"), int(m.group(2))))
    return out


def collapsed_run(tool, pid, secs, path):
    """`pystack-dump sample -d SECS -q -f collapsed -o PATH PID`: (its
    stacks as parse_collapsed gives them, errors); no stacks if it failed."""
    argv, rc, so, se, _ = tool_run(tool, ["sample", "-d", str(secs), "-q", "-f", "collapsed",
                                          "-o", path, str(pid)], timeout=60)
    if rc != 0:
        return [], ["%s exited %s: %s" % (" ".join(argv), rc, short(se))]
    with open(path) as f:
        try:
            return parse_collapsed(f.read()), []
        except ValueError as e:
            return [], ["%s: %s" % (" ".join(argv), e)]


def collapsed_label(info, line):
    """How a collapsed stack names a frame of the function code_info()
    describes: `qualname (file:line)`, `qualname (file)` without lines; the
    plain function name before 3.11."""
    name = info["qualname"] or info["function"]
    return "%s (%s)" % (name, info["file"] if line is None else "%s:%d" % (info["file"], line))


def collapsed_errors(text, gt, lines, ticks, threads=False):
    """Every line well formed; the hot function's label as the spec says;
    the counts add up to no more than the ticks (one thread) and most of
    them."""
    try:
        rows = parse_collapsed(text)
    except ValueError as e:
        return [str(e)], 0
    errs = []
    total = sum(c for _, c in rows)
    if not ticks * (1 - SAMPLE_MAX_ERROR_SHARE) <= total <= ticks:
        errs.append("counts add up to %d for -n %d on one thread" % (total, ticks))
    info = gt["hot"]
    if lines:
        # the lines of spend_hot's loop: its first line + 2 (while) and + 3
        want = set(collapsed_label(info, info["firstline"] + k) for k in (2, 3))
    else:
        want = set([collapsed_label(info, None)])
    hot = [(s, c) for s, c in rows if s[-1] in want]
    if not hot:
        errs.append("no stack ends in %s; innermost labels seen: %s"
                    % (" or ".join(sorted(want)), sorted(set(s[-1] for s, _ in rows))[:8]))
    if threads:
        bad = [s[0] for s, _ in rows if not re.match(r"^Thread %d \(.*\)$" % gt["pid"], s[0])]
        if bad:
            errs.append("with --threads every stack must start with 'Thread %d (NAME)' (the "
                        "main thread), got %r" % (gt["pid"], bad[0]))
    return errs, total



def thread_shares(doc, gt):
    """{worker name: samples} over the ground truth's threads (by tid),
    plus "?" for samples of threads the target does not know."""
    by_tid = dict((tid, n) for n, tid in gt["threads"].items())
    out = dict((n, 0) for n in gt["threads"])
    for t in doc["threads"]:
        n = by_tid.get(t["tid"], "?")
        out[n] = out.get(n, 0) + doc["nodes"][t["node"]]["total"]
    return out


def shares_info(shares, total):
    return ", ".join("%s %.1f%%" % (n, 100.0 * c / max(1, total))
                     for n, c in sorted(shares.items(), key=lambda x: -x[1]))


def threads_profile(tool, tg, gt, mode):
    """A --threads profile of MODE and each thread's samples: (argv, doc,
    errors, {worker name: samples}, stacks, (start, end) of the sampled
    window in time.time() seconds); doc None if it failed."""
    w0 = time.time()
    argv, doc, errs, err, t0, t1 = sample_profile(tool, tg.pid, gt, mode, ["--threads"],
                                                  tag=mode)
    w1 = time.time()
    if doc is None:
        return argv, None, errs, {}, [], None
    if _is_int(doc.get("start_unix_us")):       # the tool's own account of the window
        w0 = doc["start_unix_us"] / 1e6
        w1 = w0 + doc["duration_s"]
    shares = thread_shares(doc, gt)
    if shares.get("?"):
        errs.append("%d samples of threads the target does not have" % shares["?"])
    names = dict((tid, "MainThread" if n == "main" else n) for n, tid in gt["threads"].items())
    for t in doc["threads"]:
        if t["tid"] in names and t["name"] is not None and not thread_name_ok(
                t["name"], names[t["tid"]], comm(tg.pid, t["tid"])):
            errs.append("thread %d is named %r: neither its Python name %r nor its OS name %r"
                        % (t["tid"], t["name"], names[t["tid"]], comm(tg.pid, t["tid"])))
    return argv, doc, errs, shares, profile_stacks(doc), (w0, w1)


def overlap(spans, w0, w1):
    return sum(max(0.0, min(e, w1) - max(s, w0)) for s, e in spans)



def chain_matches(frames, chain):
    """frames (outermost first) end with the recorded chain (function,
    file, line)."""
    if len(frames) < len(chain):
        return False
    tail = frames[len(frames) - len(chain):]
    return all(f.get("kind") == "python" and f["function"] == c["function"]
               and f.get("file") == c["file"] and f.get("line") == c["line"]
               for f, c in zip(tail, chain))


def task_label(frames, i):
    """The name of the task boundary right outside frames[i], or None."""
    if i < 1 or frames[i - 1].get("kind") != "task":
        return None
    return frames[i - 1]["function"]


def label_errors(what, labels, want):
    """labels: {task label right outside `what`: samples}. With names
    (3.8+) all must be `want`; without, all must be one label."""
    total = sum(labels.values())
    wrong = dict((k, v) for k, v in labels.items() if k is None or (want is not None and k != want))
    if want is None and len(labels) > 1:
        wrong = labels
    if not wrong:
        return []
    return ["%s: %d of its %d samples are not directly under %s; task labels seen there: %s"
            % (what, sum(wrong.values()), total,
               "<task %s>" % want if want else "one and the same task boundary",
               ", ".join("%s %d" % ("<task %s>" % k if k else "(no task boundary)", v)
                         for k, v in sorted(labels.items(), key=lambda kv: -kv[1])))]



def stopped_run_errors(doc, gt, need_all=True):
    """What a run that ended early must still have written: samples in the
    target's own functions (need_all: in each of them, else in one)."""
    stacks = profile_stacks(doc)
    want = [gt["hot"], gt["cold"]] if "hot" in gt else [gt["burner"]["function"]]
    missing = ["no samples in %s()" % f["function"] for f in want if not samples_in(stacks, f)]
    return missing if need_all or len(missing) == len(want) else []


def target_report(tg, suffix):
    """SIGUSR1 makes a sample_* target write GT.SUFFIX (its own measures):
    that document."""
    path = tg.gt_host + suffix
    remove(path)
    os.kill(tg.pid, signal.SIGUSR1)
    deadline = time.time() + 10
    while not os.path.exists(path):
        if time.time() > deadline or tg.proc.poll() is not None:
            raise TargetError("no %s after SIGUSR1:\n%s" % (path, tg.log_tail()))
        time.sleep(0.02)
    with open(path) as f:
        return json.load(f)


def sampled_window(doc, t0, t1):
    """The window the tool says it sampled (start_unix_us, duration_s), in
    time.monotonic() seconds; [t0, t1] (around the whole run) if it does
    not say.  Under load the run's start-up and exit take a good part of a
    second, and the target's split drifts with the load."""
    if not isinstance(doc.get("start_unix_us"), int):
        return t0, t1
    return monotonic_window(doc["start_unix_us"] / 1e6, doc["duration_s"])


def monotonic_window(start, secs):
    """[start, start + secs] of a start in Unix seconds, in time.monotonic()
    seconds (the clock of the targets' rounds)."""
    start += time.monotonic() - time.time()
    return start, start + secs


def summary_window(err):
    """The window the summary on stderr says was sampled ("after 2.00 s
    (from 2026-11-29T01:01:18.566Z)"), in time.monotonic() seconds, as
    sampled_window() for a format that carries no times (pstats); None if
    it does not say."""
    m = re.search(r"after ([\d.]+) s \(from (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{3})Z\)",
                  err.decode("utf-8", "replace"))
    if not m:
        return None
    wall = calendar.timegm(time.strptime(m.group(2), "%Y-%m-%dT%H:%M:%S")) + int(m.group(3)) / 1e3
    return monotonic_window(wall, float(m.group(1)))


def split_tolerance(ticks, missed):
    """Points by which a wall-mode share may differ from the target's own
    measure over the window: SPLIT_TOLERANCE, plus the share of the
    window's ticks the sampler missed.  A missed tick is time the machine
    did not run the sampler; on a loaded machine it is often time the
    target did not run either, stuck in whichever slice it was in, which
    its own clock counts and no sample saw (CI once: 477 of 2,000 ticks
    missed, the samples 68.2% hot, the target 62.6%).  The split of time
    no sample saw can be anything, so it moves the share by up to its
    share of the window."""
    return SPLIT_TOLERANCE + 100.0 * missed / max(1, ticks + missed)


def split_error(what, got, want, ticks, missed):
    """None if got (percent) is within split_tolerance() of want, the
    target's own share; else why not."""
    tol = split_tolerance(ticks, missed)
    if abs(got - want) <= tol:
        return None
    return ("%s, the target measured %.1f%% (tolerance %.1f points: %g, plus the %d of %d "
            "ticks missed)" % (what, want, tol, SPLIT_TOLERANCE, missed, ticks + missed))


def summary_ticks(err):
    """(rounds, missed ticks) the summary on stderr counts ("1523 samples
    in 1523 rounds ... 477 missed ticks"), for a format that carries no
    counts of its own (pstats); None if it does not say."""
    text = err.decode("utf-8", "replace")
    rounds = re.search(r"in (\d+) rounds", text)
    missed = re.search(r"(\d+) missed ticks", text)
    if not rounds or not missed:
        return None
    return int(rounds.group(1)), int(missed.group(1))


def split_truth(tg, t0, t1):
    """The target's own hot share (percent) over [t0, t1] (time.monotonic()
    seconds), from the rounds it writes on SIGUSR1."""
    rounds = target_report(tg, ".split")["rounds"]
    inside = [r for r in rounds if t0 <= r[0] <= t1]
    if len(inside) < 10:
        raise TargetError("only %d rounds of the target inside the sampled window" % len(inside))
    hot, cold = inside[-1][1] - inside[0][1], inside[-1][2] - inside[0][2]
    return 100.0 * hot / (hot + cold)
