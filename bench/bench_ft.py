#!/usr/bin/env python3
"""What sampling a free-threaded CPython costs, next to the default (GIL)
build of the same source (3.15.0a0, both built by tests/setup-ft.sh),
under the same load: bench/ft_target.py's four threads spinning in pure
Python, each in its own chain of 6 to 9 functions under threading's
bootstrap (one of them calling a small function in a loop, so its
innermost frame changes all the time), and the main thread waiting.  On
the default build one spinning thread runs at a time; on the
free-threaded one as many as there are cores, each changing its stack
while the sampler reads it, with no GIL to serialize them.

Interleaved rounds (the order of the two interpreters swapped every
round, the target not measured stopped with SIGSTOP so that only one
loads the machine at a time) of `sample --rate max --threads -f
collapsed`, each followed by its share of one-shot dumps (`--json`).
Reported per interpreter, medians over rounds: samples per second (every
thread of a round is a sample: five per round here), rounds per second,
reads per round, the share of rounds that rejected a torn stack (the
summary's errors / rounds: the stack is dropped, not recorded short);
and in all: "wrong" samples, i.e. a thread's sample that is not its
whole known chain of functions from threading's bootstrap (or the main
script) down to its spinning function (or, for delta, its leaf), cut
short or holding another thread's function; dumps marked torn (exit 8:
a thread's error says its stack kept changing, which is allowed), dumps
with a stack short without such a mark, and dumps that failed otherwise.
Then the ratios free-threaded / default of samples/s and rounds/s.
Also, to tell the cost of a round from the CPU the sampler could get:
the CPU seconds the sampler used (rounds per sampler CPU second) and the
cores the target kept busy meanwhile (on 2 cores the free-threaded
target's four spinning threads take what they can of both, the default
one's at most one, the GIL's).  Prints markdown tables: figures, not
judgements.

Usage: bench/bench_ft.py [--build build] [--rounds 3] [--secs 3]
           [--dumps 100] [--json FILE] [--skip-setup]
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from common import HERE, ROOT, record, start_ready, stop, tool_path

FT_DIR = os.environ.get("PYD_FT_DIR", "/var/cache/pystack-dump/ft")
FT_MARKER = ".pyd-ft-ready"            # written by tests/setup-ft.sh once a build works
# (label, build directory under FT_DIR, executable, whether the GIL is off)
INTERPS = [("default", "default", "python3.15", False),
           ("free-threaded", "ft", "python3.15t", True)]
TARGET = os.path.join(HERE, "ft_target.py")
# "pystack-dump sample: duration reached after 3.00 s (from ...). 409335 samples in
# 81867 rounds (40842 rounds/s), 0 errors (0.00%), 0 missed ticks, 1.74
# reads per round."  (bench_races.py's SUMMARY, with the samples and the
# duration in front.)
SUMMARY = re.compile(r"([\d,]+) samples in ([\d,]+) rounds \(([\d,.]+) rounds/s\), "
                     r"([\d,]+) errors .* ([\d.]+) reads per round")
AFTER = re.compile(r"after ([\d.]+) s")
SETTLE = 0.3                           # seconds a resumed target runs before it is read


def num(s):
    return float(s.replace(",", ""))


# --- the interpreters ---------------------------------------------------------

def setup_ft():
    """Build or check both interpreters (tests/setup-ft.sh, as the benches
    call setup-sid.sh).  Not fatal: an interpreter still missing after it
    is skipped, with the reason, by find_interps()."""
    if subprocess.call([os.path.join(ROOT, "tests", "setup-ft.sh")]) != 0:
        print("note: tests/setup-ft.sh failed (see its messages above); whatever "
              "interpreter is missing is skipped", file=sys.stderr)


def find_interps():
    """[(label, python or None, why skipped or None, free-threaded)]: an
    interpreter counts only if setup-ft.sh marked it ready and it is the
    kind of build it should be (sys._is_gil_enabled())."""
    out = []
    for label, kind, exe, ft in INTERPS:
        d = os.path.join(FT_DIR, kind)
        python = os.path.join(d, "bin", exe)
        why = None
        if not os.path.isfile(os.path.join(d, FT_MARKER)):
            why = "no %s build at %s (tests/setup-ft.sh)" % (kind, d)
        elif not os.access(python, os.X_OK):
            why = "%s missing" % python
        else:
            res = subprocess.run([python, "-B", "-E", "-s", "-c",
                                  "import sys; print(sys._is_gil_enabled())"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            got = res.stdout.decode(errors="replace").strip()
            if res.returncode != 0 or got != str(not ft):
                why = "%s does not run as a %s build (said %r)" % (
                    python, "free-threaded" if ft else "GIL", got[-200:])
        out.append((label, None if why else python, why, ft))
    return out


# --- the target ----------------------------------------------------------------

class Target(object):
    """bench/ft_target.py under one interpreter, paused (SIGSTOP) while it
    is not measured; truth is its ground truth (ft_target.py's JSON)."""

    def __init__(self, python):
        self.tmp = tempfile.mkdtemp(prefix="pyd-bench-ft-")
        gt = os.path.join(self.tmp, "gt.json")
        # -B: no __pycache__ in bench/
        self.proc = start_ready([python, "-B", TARGET, gt])
        with open(gt) as f:
            self.truth = json.load(f)
        self.pid = self.proc.pid
        # tid -> (name, chain of qualnames outermost first, allowed leaves)
        self.threads = dict((t["tid"], (t["name"], t["chain"], t["leaves"]))
                            for t in self.truth["threads"])
        # every function that belongs to one thread only (not threading's):
        # a sample of another thread holding it is a mix-up
        self.owner = {}
        for tid, (name, chain, leaves) in self.threads.items():
            for f in chain + leaves:
                if not f.startswith("Thread."):
                    self.owner[f] = tid
        self.pause()

    def pause(self):
        os.kill(self.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.pid, signal.SIGCONT)
        time.sleep(SETTLE)

    def cpu(self):
        """CPU seconds (user + system) the target has used so far."""
        with open("/proc/%d/stat" % self.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))

    def close(self):
        stop(self.proc)                 # SIGKILL ends a stopped process too
        shutil.rmtree(self.tmp, ignore_errors=True)

    def check(self, tid, chain):
        """None if chain (qualnames outermost first, <GC> removed) is the
        thread's whole known chain (and at most one allowed leaf on it);
        else why not: "short" (missing frames), "mixed" (holds another
        thread's function), "unknown thread" or "other"."""
        known = self.threads.get(tid)
        if known is None:
            return "unknown thread"
        _, want, leaves = known
        if chain == want or (len(chain) == len(want) + 1 and chain[:-1] == want
                             and chain[-1] in leaves):
            return None
        if any(self.owner.get(f, tid) != tid for f in chain):
            return "mixed"
        if len(chain) < len(want):
            return "short"
        return "other"


# --- one round of sampling -------------------------------------------------------

def function_of(label):
    # collapsed labels are "qualname (file:line)" (a qualname has no
    # space, a file may); "<GC>" may have no file
    return label.split(" (", 1)[0]


def sample(tool, target, secs):
    """One `sample --rate max` run: the summary's figures, the samples
    counted in the collapsed output, and the wrong ones by kind."""
    fd, path = tempfile.mkstemp(suffix=".collapsed", prefix="pyd-bench-ft-")
    os.close(fd)
    try:
        ru_before, target_before = resource.getrusage(resource.RUSAGE_CHILDREN), target.cpu()
        t0 = time.monotonic()
        res = subprocess.run([tool, "sample", "--rate", "max", "-d", str(secs), "--threads",
                              "-f", "collapsed", "-o", path, str(target.pid)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wall = time.monotonic() - t0
        ru_after, target_after = resource.getrusage(resource.RUSAGE_CHILDREN), target.cpu()
        # the CPU the sampler used, and the target's (in cores busy): on 2
        # cores the free-threaded target's spinning threads take both, the
        # default one's at most one (the GIL), and the sampler gets the rest
        cpu = ((ru_after.ru_utime - ru_before.ru_utime)
               + (ru_after.ru_stime - ru_before.ru_stime))
        err = res.stderr.decode(errors="replace")
        m = SUMMARY.search(err)
        if res.returncode != 0 or not m:
            return {"failed": "exit %d: %s" % (res.returncode, " ".join(err.split())[-300:])}
        samples, rounds, rate, errors, reads = (num(g) for g in m.groups())
        m = AFTER.search(err)
        duration = float(m.group(1)) if m else secs
        counted, gc = 0, 0
        per_thread, wrong, wrong_stacks = {}, {}, {}
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                stack, _, n = line.rstrip("\n").rpartition(" ")
                if not stack:
                    continue
                n = int(n)
                labels = stack.split(";")
                t = re.match(r"Thread (\d+)", labels[0])
                tid = int(t.group(1)) if t else -1
                chain = [function_of(lab) for lab in labels[1:]]
                if chain and chain[-1] == "<GC>":
                    gc += n
                    chain = chain[:-1]
                counted += n
                name = target.threads.get(tid, ("tid %d" % tid,))[0]
                per_thread[name] = per_thread.get(name, 0) + n
                why = target.check(tid, chain)
                if why:
                    wrong[why] = wrong.get(why, 0) + n
                    key = "%s: %s" % (name, ";".join(chain))
                    wrong_stacks[key] = wrong_stacks.get(key, 0) + n
    finally:
        os.unlink(path)
    return {"samples": int(samples), "rounds": int(rounds), "rounds_per_s": rate,
            # at the tool's own rate (its duration is printed to 1/100 s only)
            "samples_per_s": samples / max(rounds, 1) * rate, "duration_s": duration,
            "sampler_cpu_s": cpu, "rounds_per_cpu_s": rounds / max(cpu, 1e-9),
            "target_cores": (target_after - target_before) / wall,
            "errors": int(errors), "reads_per_round": reads,
            "rejected_pct": 100.0 * errors / max(rounds, 1),
            # each round reads every thread: the samples a round did not record
            "dropped_samples": int(rounds) * len(target.threads) - int(samples),
            "counted": counted, "gc_samples": gc, "per_thread": per_thread,
            "wrong": sum(wrong.values()), "wrong_by_kind": wrong,
            "wrong_stacks": wrong_stacks}


# --- one-shot dumps ----------------------------------------------------------------

def dumps(tool, target, n):
    """n dumps (--json): {dumps, ok, torn, short, failed, examples}.  torn:
    exit 8 (a thread's stack kept changing: its error says so), every
    thread without an error whole; short: a thread without an error whose
    stack is not whole (or missing); failed: any other exit status or
    output that is not JSON."""
    out = {"dumps": 0, "ok": 0, "torn": 0, "short": 0, "failed": 0, "examples": []}
    for _ in range(n):
        res = subprocess.run([tool, "--json", str(target.pid)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        out["dumps"] += 1
        try:
            doc = json.loads(res.stdout)
        except ValueError:
            doc = None
        if res.returncode not in (0, 8) or doc is None:
            out["failed"] += 1
            if len(out["examples"]) < 5:
                out["examples"].append("exit %d: %s" % (res.returncode, " ".join(
                    res.stderr.decode(errors="replace").split())[-200:]))
            continue
        seen = dict((t["tid"], t) for t in doc.get("threads", []))
        short, marked = [], False
        for tid, (name, _, _) in sorted(target.threads.items()):
            t = seen.get(tid)
            if t is None:
                short.append("%s: missing" % name)
            elif t.get("error"):
                marked = True
            else:
                chain = [f.get("qualname") or f["function"] for f in reversed(t["frames"])]
                if chain and chain[-1] == "<GC>":
                    chain = chain[:-1]
                if target.check(tid, chain):
                    short.append("%s: %s" % (name, ";".join(chain)))
        if short:
            out["short"] += 1
            if len(out["examples"]) < 5:
                out["examples"].append("exit %d, short: %s" % (res.returncode, " | ".join(short)))
        elif res.returncode == 8 or marked:
            out["torn"] += 1
        else:
            out["ok"] += 1
    return out


# --- the report ------------------------------------------------------------------

def fmt(x, spec="{:,.0f}"):
    return "-" if x is None else spec.format(x)


def median_of(runs, key):
    vals = [r[key] for r in runs if "failed" not in r]
    return statistics.median(vals) if vals else None


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--secs", type=float, default=3)
    ap.add_argument("--dumps", type=int, default=100, help="one-shot dumps per interpreter, "
                    "spread over the rounds")
    ap.add_argument("--json", metavar="FILE", help="also write the results there")
    ap.add_argument("--skip-setup", action="store_true",
                    help="do not run tests/setup-ft.sh (use what is installed)")
    a = ap.parse_args()
    tool = tool_path(a.build)
    if not os.access(tool, os.X_OK):
        sys.exit("no %s: build it first (ninja -C %s)" % (tool, a.build))
    if not a.skip_setup:
        setup_ft()
    interps = find_interps()
    for label, python, why, _ in interps:
        if why:
            print("skipping %s: %s" % (label, why), file=sys.stderr)

    # start every target present, each paused until its turn
    targets = {}
    try:
        for label, python, why, _ in interps:
            if python:
                targets[label] = Target(python)
        labels = [label for label, _, _, _ in interps if label in targets]
        runs = dict((label, []) for label in labels)
        dumped = dict((label, []) for label in labels)
        for i in range(a.rounds):
            # the dumps spread over the rounds, the first rounds taking the rest
            n_dumps = a.dumps // a.rounds + (1 if i < a.dumps % a.rounds else 0)
            order = labels if i % 2 == 0 else labels[::-1]
            for label in order:
                t = targets[label]
                t.resume()
                try:
                    r = sample(tool, t, a.secs)
                    r["round"] = i + 1
                    runs[label].append(r)
                    dumped[label].append(dumps(tool, t, n_dumps))
                finally:
                    t.pause()
    finally:
        for t in targets.values():
            t.close()

    # --- print ---
    print("## `sample --rate max` and dumps: 4 threads spinning in pure Python + the main "
          "thread waiting, %d interleaved rounds of %g s, %d dumps per interpreter\n"
          % (a.rounds, a.secs, a.dumps))
    print("Machine: %d CPUs, load average %.2f %.2f %.2f at the end; tool %s\n"
          % ((os.cpu_count() or 0,) + os.getloadavg() + (tool,)))
    for label, python, why, _ in interps:
        if python:
            print("- %s: %s, %s" % (label, python, " ".join(targets[label].truth["version"].split())))
        else:
            print("- %s: skipped (%s)" % (label, why))
    print()
    print("Per round:\n")
    print("| round | interpreter | samples | rounds | samples/s | rounds/s | reads/round "
          "| errors | rejected % | wrong samples | <GC> samples | sampler CPU s "
          "| target's cores busy | dumps (ok / torn / short / failed) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for i in range(a.rounds):
        for label in labels:
            r, d = runs[label][i], dumped[label][i]
            dtxt = "%d / %d / %d / %d" % (d["ok"], d["torn"], d["short"], d["failed"])
            if "failed" in r:
                print("| %d | %s | sample failed: %s |||||||||||| %s |"
                      % (i + 1, label, r["failed"].replace("|", "/"), dtxt))
                continue
            print("| %d | %s | %s | %s | %s | %s | %.2f | %d | %.3f | %d | %d | %.2f | %.2f | %s |"
                  % (i + 1, label, fmt(r["samples"]), fmt(r["rounds"]), fmt(r["samples_per_s"]),
                     fmt(r["rounds_per_s"]), r["reads_per_round"], r["errors"],
                     r["rejected_pct"], r["wrong"], r["gc_samples"], r["sampler_cpu_s"],
                     r["target_cores"], dtxt))
            if r["counted"] != r["samples"]:
                print("| | | (the collapsed output holds %s samples, the summary says %s) "
                      "||||||||||||" % (fmt(r["counted"]), fmt(r["samples"])))
    print()
    print("Medians over rounds (wrong samples and dumps: totals):\n")
    print("| interpreter | samples/s | rounds/s | reads/round | rejected % | wrong samples "
          "| dumps | marked torn | short | failed | sample runs failed "
          "| rounds per sampler CPU s | target's cores busy |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    figures = []                        # for record(): the medians' table, then the ratios
    result = {"settings": {"rounds": a.rounds, "secs": a.secs, "dumps": a.dumps,
                           "tool": tool, "cpus": os.cpu_count()},
              "interpreters": {}}
    for label, python, why, ft in interps:
        if not python:
            print("| %s | (skipped: %s) ||||||||||||" % (label, why))
            result["interpreters"][label] = {"skipped": why, "free_threaded": ft}
            continue
        rs, ds = runs[label], dumped[label]
        ok = [r for r in rs if "failed" not in r]
        med = dict((k, median_of(rs, k)) for k in ("samples_per_s", "rounds_per_s",
                                                   "reads_per_round", "rejected_pct",
                                                   "rounds_per_cpu_s", "target_cores"))
        tot = dict((k, sum(d[k] for d in ds)) for k in ("dumps", "ok", "torn", "short", "failed"))
        wrong = sum(r["wrong"] for r in ok)
        print("| %s | %s | %s | %s | %s | %d | %d | %d | %d | %d | %d | %s | %s |"
              % (label, fmt(med["samples_per_s"]), fmt(med["rounds_per_s"]),
                 fmt(med["reads_per_round"], "{:.2f}"), fmt(med["rejected_pct"], "{:.3f}"),
                 wrong, tot["dumps"], tot["torn"], tot["short"], tot["failed"],
                 len(rs) - len(ok), fmt(med["rounds_per_cpu_s"]),
                 fmt(med["target_cores"], "{:.2f}")))
        result["interpreters"][label] = {
            "python": python, "version": targets[label].truth["version"],
            "free_threaded": ft, "median": med, "wrong_samples": wrong,
            "dumps": tot, "rounds": rs, "dump_rounds": ds}
        figures.append(dict(med, id=label, wrong_samples=wrong, sample_runs_failed=len(rs) - len(ok),
                            **dict(("dumps_" + k, v) for k, v in tot.items())))
    ratio = {}
    if len(labels) == 2 and all(result["interpreters"][l]["median"]["samples_per_s"]
                                for l in labels):
        base, ft = (result["interpreters"][l]["median"] for l in ("default", "free-threaded"))
        for k in ("samples_per_s", "rounds_per_s", "rounds_per_cpu_s"):
            ratio[k] = ft[k] / base[k]
        # the same, round by round (each round measured both back to back)
        paired = [f["rounds_per_s"] / d["rounds_per_s"]
                  for d, f in zip(runs["default"], runs["free-threaded"])
                  if "failed" not in d and "failed" not in f]
        ratio["rounds_per_s_per_round"] = paired
        print("| free-threaded / default | **%.2fx** | **%.2fx** |||||||||| %.2fx ||"
              % (ratio["samples_per_s"], ratio["rounds_per_s"], ratio["rounds_per_cpu_s"]))
        print()
        print("Per-round ratios of rounds/s (free-threaded / default): %s"
              % ", ".join("%.2fx" % p for p in paired))
    else:
        print()
        print("No ratio: both interpreters must be measured.")
    result["ratio_ft_over_default"] = ratio
    if ratio:
        figures.append(dict(ratio, id="free-threaded / default"))
    record("bench_ft", figures, tool=tool,
           interpreters=["%s: %s, %s" % (label, python, " ".join(targets[label].truth["version"]
                                                                 .split()))
                         for label, python, _, _ in interps if python])

    # what went wrong, if anything: the distinct wrong stacks and dumps
    for label in labels:
        stacks = {}
        for r in runs[label]:
            for k, n in r.get("wrong_stacks", {}).items():
                stacks[k] = stacks.get(k, 0) + n
        examples = [e for d in dumped[label] for e in d["examples"]]
        if stacks or examples:
            print()
            print("%s, wrong samples and dumps (first few):" % label)
            for k, n in sorted(stacks.items(), key=lambda kv: -kv[1])[:10]:
                print("- %d x %s" % (n, k))
            for e in examples[:10]:
                print("- dump %s" % e)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
        print("\nwrote %s" % a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
