#!/usr/bin/env python3
"""gdb's py-bt, py-tasks and py-sample (gdb-plugin/) against pystack-dump.

For every interpreter tests/run_tests.py finds, on tests/targets/threads.py:
  * live:      gdb -p PID: `py-bt` equals pystack-dump's text for the
               selected (main) thread, `py-bt all` equals it whole;
               `py-bt -n` shows the same Python frames, under evaluation-
               loop native frames;
  * core:      gcore, then gdb -c CORE EXE: `py-bt all` equals
               pystack-dump --core CORE; py-sample says it needs a process;
  * gdbserver: gdbserver --attach on loopback, target remote: `py-bt all`
               equals pystack-dump's text;
  * sample:    on busy.py, `py-sample 1000` returns within its budget
               (1 s at 1000 Hz, plus 1.5 s), leaves the inferior stopped
               with all its threads (info threads), and SIGINT never
               reaches it (it is alive and running after gdb detaches);
  * tasks:     3.7+, asyncio_graph.py: `py-tasks` and `py-tasks -t` (and
               `py-tasks` on a gcore core of it) equal
               pystack-dump --tasks [--table].
Then the bad cases: no inferior, a non-Python inferior, an unsupported
Python (2.7 if pyenv has it), the command file and the reader loaded twice.

usage: tests/test_gdb.py [--build DIR] [-j N] [-v] [FILTER...]
FILTER as for run_tests.py (3.12, sid, debug, pyenv-3.8, ...).  The build
must have the gdb plugin (tools/build.sh DIR -Dgdb=enabled).
Prints one line per check and ends with "gdb: N passed, N failed, N skipped".
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_tests as R  # noqa: E402

# Our own copies in the sid chroot: run_tests.py may be running there too.
R.CHROOT_TARGETS = "/tmp/pyd-gdb-targets"
R.CHROOT_OUT = "/tmp/pyd-gdb-out"

GDB_TIMEOUT = 120
SAMPLES, RATE, SLACK = 1000, 1000.0, 1.5


class Ctx:
    def __init__(self, build):
        self.cli = os.path.join(build, "cli", "pystack-dump")
        self.cmds = os.path.join(build, "gdb-plugin", "pystack-dump.gdb")
        self.reader = os.path.join(build, "gdb-plugin", "pystack-dump-gdb.so")
        self.tmp = tempfile.mkdtemp(prefix="pyd-gdb-test-")


def text(b):
    return b.decode("utf-8", "replace")


def gdb(ctx, args, cmds, timeout=GDB_TIMEOUT):
    """Run gdb in batch mode with the command file and each of cmds (each
    preceded by an "@@N" marker); returns (rc, {N: output of cmd N}, all)."""
    argv = ["gdb", "-batch", "-nx", "-iex", "set auto-load off"] + args
    argv += ["-x", ctx.cmds]
    for i, c in enumerate(cmds):
        argv += ["-ex", "echo @@%d\\n" % i, "-ex", c]
    argv += ["-ex", "echo @@end\\n"]
    rc, out, err, _ = R.run(argv, timeout)
    out = text(out)
    parts, cur = {}, None
    for line in out.splitlines(True):
        m = re.match(r"^@@(\d+|end)$", line.rstrip("\n"))
        if m:
            cur = int(m.group(1)) if m.group(1) != "end" else None
            parts.setdefault(cur, "")
        elif cur is not None:
            parts[cur] += line
    return rc, parts, out + text(err)


def cli(ctx, args):
    rc, out, err, _ = R.run([ctx.cli] + args, 60)
    return rc, text(out), text(err)


def thread_block(report, tid):
    """pystack-dump's text for one thread: the header line and the thread's
    paragraph."""
    paras = report.split("\n\n")
    for p in paras[1:]:
        if p.startswith("Thread %d " % tid):
            return paras[0] + "\n\n" + p.rstrip("\n") + "\n"
    return None


class Results:
    def __init__(self):
        self.rows = []

    def add(self, label, check, ok, why=""):
        status = "PASS" if ok is True else ("SKIP" if ok is None else "FAIL")
        self.rows.append((label, check, status, why))
        with R._print_lock:
            print("%-12s %-12s %s%s" % (label, check, status,
                                        (": " + why) if why and status != "PASS" else ""))
            sys.stdout.flush()


def same(res, label, check, got, want):
    if got == want:
        res.add(label, check, True)
    else:
        import difflib
        diff = "".join(list(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                                 "pystack-dump", "gdb"))[:40])
        res.add(label, check, False, "output differs:\n" + diff)


def check_live(ctx, res, interp, t):
    pid = t.pid
    rc, parts, raw = gdb(ctx, ["-p", str(pid)], ["py-bt", "py-bt all", "py-bt -n"])
    rc2, want, err = cli(ctx, [str(pid)])
    if not want:
        return res.add(interp.label, "live", False, "pystack-dump failed: " + err)
    same(res, interp.label, "live-all", parts.get(1, ""), want)
    main = thread_block(want, t.gt["main_tid"])
    same(res, interp.label, "live-bt", parts.get(0, ""), main or "(no main thread)")
    check_native(res, interp, parts.get(2, ""), main or "")


def check_native(res, interp, got, main):
    """py-bt -n: the main thread's Python frames in the same order, each
    run of them right under an evaluation-loop frame."""
    frames = [line for line in main.splitlines() if line.startswith("  File ")]
    lines = got.splitlines()
    got_frames = [line for line in lines if line.startswith("  File ")]
    if got_frames != frames:
        return res.add(interp.label, "live-n", False, "Python frames differ:\n" + got)
    for i, line in enumerate(lines):
        if line.startswith("  File ") and i and not lines[i - 1].startswith("  "):
            return res.add(interp.label, "live-n", False, "frame outside a traceback")
    # gdb's own backtrace may stop short (a binary it cannot unwind):
    # the Python frames it showed no loop frame for come first, under a
    # note saying so.
    for i, line in enumerate(lines):
        prev = [x for x in lines[:i] if x.startswith("  #") or x.startswith("  (no ")]
        if line.startswith("  File ") and (not prev or not (
                "EvalFrame" in prev[-1] or "no evaluation-loop frame" in prev[-1])):
            return res.add(interp.label, "live-n", False,
                           "Python frame not under an eval-loop frame:\n" + got)
    res.add(interp.label, "live-n", True)


def gcore(ctx, res, interp, t, check):
    """A gcore core of target t and the interpreter's executable, or
    (None, None) with CHECK failed."""
    prefix = os.path.join(ctx.tmp, "%s-%s" % (check, interp.label))
    rc, out, err, _ = R.run(["gcore", "-o", prefix, str(t.pid)], 120)
    core = "%s.%d" % (prefix, t.pid)
    if rc != 0 or not os.path.exists(core):
        res.add(interp.label, check, False, "gcore failed: " + text(err)[-300:])
        return None, None
    return core, os.path.realpath(interp.host_path(interp.exe))


def check_core(ctx, res, interp, t):
    core, exe = gcore(ctx, res, interp, t, "core")
    if not core:
        return
    try:
        rc, parts, raw = gdb(ctx, ["-c", core, exe], ["py-bt all", "py-sample 10"])
        rc2, want, err = cli(ctx, ["--core", core])
        # A partial report (some stacks incomplete) must match too.
        if not want:
            return res.add(interp.label, "core", False, "pystack-dump failed: " + err)
        same(res, interp.label, "core-all", parts.get(0, ""), want)
        ok = "py-sample needs a live process" in parts.get(1, "")
        res.add(interp.label, "core-sample", ok, "got: " + parts.get(1, "")[:300])
    finally:
        os.unlink(core)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def check_gdbserver(ctx, res, interp, t):
    port = free_port()
    server = R.spawn(["gdbserver", "--attach", "127.0.0.1:%d" % port, str(t.pid)],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        # The files are on this machine: no copying them over the wire.
        rc, parts, raw = gdb(ctx, ["-ex", "set sysroot /",
                                   "-ex", "target remote 127.0.0.1:%d" % port],
                             ["py-bt all"])
        rc2, want, err = cli(ctx, [str(t.pid)])
        same(res, interp.label, "gdbserver", parts.get(0, ""), want)
    finally:
        R.kill(server)


def task_state(pid):
    return R.task_states(pid).get(pid)


def check_sample(ctx, res, interp):
    with R.Target(interp, "busy") as t:
        t.wait_ground_truth()
        pid = t.pid
        stat = "shell sed 's/.*) //; s/ .*//' /proc/%d/stat" % pid
        rc, parts, raw = gdb(ctx, ["-p", str(pid)], [
            "shell date +%s.%N", "py-sample %d" % SAMPLES, "shell date +%s.%N",
            stat, "info threads"])
        try:
            secs = float(parts[2]) - float(parts[0])
        except (KeyError, ValueError):
            return res.add(interp.label, "sample", False, "no timing:\n" + raw[-1500:])
        table = parts.get(1, "")
        budget = SAMPLES / RATE + SLACK
        ok = "direct" in table and "busy_loop" in table and secs <= budget
        res.add(interp.label, "sample", ok, "%.2fs (budget %.2fs):\n%s" % (secs, budget, table[-800:]))
        nthreads = len([x for x in parts.get(4, "").splitlines() if re.match(r"^[* ] +\d+ ", x)])
        ok = parts.get(3, "").strip() == "t" and nthreads == len(t.gt["threads"])
        res.add(interp.label, "sample-stop", ok,
                "state %r, %d threads in info threads" % (parts.get(3, "").strip(), nthreads))
        time.sleep(0.5)
        state = task_state(pid)
        res.add(interp.label, "sample-after", state in ("R", "S"),
                "after detach the target is %r (a SIGINT delivered?)\n%s" % (state, t.log_tail()))


def check_tasks(ctx, res, interp):
    if interp.minor < (3, 7):
        res.add(interp.label, "tasks", None, "the asyncio target needs asyncio.run (3.7+)")
        return
    with R.Target(interp, "asyncio_graph") as t:
        t.wait_ground_truth()
        time.sleep(0.3)
        rc, parts, raw = gdb(ctx, ["-p", str(t.pid)], ["py-tasks", "py-tasks -t"])
        rc2, tree, _ = cli(ctx, ["--tasks", str(t.pid)])
        rc3, table, _ = cli(ctx, ["--tasks", "--table", str(t.pid)])
        same(res, interp.label, "tasks", parts.get(0, ""), tree)
        same(res, interp.label, "tasks-t", parts.get(1, ""), table)
        check_core_tasks(ctx, res, interp, t)


def check_core_tasks(ctx, res, interp, t):
    """py-tasks on a gcore core of the asyncio target equals
    pystack-dump --tasks --core on the same core."""
    core, exe = gcore(ctx, res, interp, t, "core-tasks")
    if not core:
        return
    try:
        rc, parts, raw = gdb(ctx, ["-c", core, exe], ["py-tasks"])
        rc2, want, err = cli(ctx, ["--tasks", "--core", core])
        if not want:
            return res.add(interp.label, "core-tasks", False, "pystack-dump failed: " + err)
        same(res, interp.label, "core-tasks", parts.get(0, ""), want)
    finally:
        os.unlink(core)


def run_interp(ctx, res, interp):
    if interp.missing:
        return res.add(interp.label, "all", None, interp.missing)
    try:
        with R.Target(interp, "threads") as t:
            t.wait_ground_truth()
            t.wait_settled()
            check_live(ctx, res, interp, t)
            check_core(ctx, res, interp, t)
            check_gdbserver(ctx, res, interp, t)
        check_sample(ctx, res, interp)
        check_tasks(ctx, res, interp)
    except R.TargetError as e:
        res.add(interp.label, "target", False, str(e)[:800])


def bad_cases(ctx, res):
    rc, parts, raw = gdb(ctx, [], ["py-bt", "py-tasks", "py-sample 10"])
    ok = all("no process or core; run, attach or load a core first" in parts.get(i, "")
             for i in range(3))
    res.add("bad", "no-inferior", ok, raw[-600:])
    sleeper = R.spawn(["sleep", "60"])
    try:
        time.sleep(0.2)
        rc, parts, raw = gdb(ctx, ["-p", str(sleeper.pid)], ["py-bt", "py-sample 10"])
        ok = all("not running CPython" in parts.get(i, "") for i in range(2))
        res.add("bad", "not-python", ok, raw[-600:])
        # The command file twice, then the reader by hand: gdb's own
        # message, and py-bt still answers once.
        rc, parts, raw = gdb(ctx, ["-p", str(sleeper.pid), "-x", ctx.cmds],
                             ["py-bt", "jit-reader-load " + ctx.reader, "py-bt", "help py-bt"])
        ok = (rc == 0 and "already loaded" in raw
              and all(parts.get(i, "").count("not running CPython") == 1 for i in (0, 2))
              and parts.get(3, "").startswith("py-bt [all] [-n] [-j]"))
        res.add("bad", "twice", ok, raw[-800:])
        rc, parts, raw = gdb(ctx, ["-p", str(sleeper.pid)], ["py-bt bogus", "py-sample"])
        ok = ("unexpected argument 'bogus'" in parts.get(0, "")
              and "how many samples" in parts.get(1, ""))
        res.add("bad", "arguments", ok, raw[-600:])
    finally:
        R.kill(sleeper)
    py2 = sorted(os.path.join(d, "bin", "python2.7")
                 for d in [os.path.join(R.pyenv_root(), "versions", v)
                           for v in os.listdir(os.path.join(R.pyenv_root(), "versions"))
                           if v.startswith("2.7")])
    if not py2 or not os.access(py2[-1], os.X_OK):
        return res.add("bad", "unsupported", None, "no pyenv 2.7")
    old = R.spawn([py2[-1], "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.5)
        rc, parts, raw = gdb(ctx, ["-p", str(old.pid)], ["py-bt"])
        ok = "Supported: CPython 3.6 to 3.15" in parts.get(0, "")
        res.add("bad", "unsupported", ok, raw[-600:])
    finally:
        R.kill(old)


def prepare_sid(interps):
    sid = [i for i in interps if i.chroot and not i.missing]
    if not sid:
        return
    chroot = sid[0].chroot
    dst = os.path.join(chroot, R.CHROOT_TARGETS.lstrip("/"))
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(R.TARGETS_DIR, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = os.path.join(chroot, R.CHROOT_OUT.lstrip("/"))
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(R.REPO, "build"))
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("-v", action="store_true")
    ap.add_argument("filters", nargs="*")
    a = ap.parse_args()
    R.VERBOSE = a.v
    ctx = Ctx(os.path.abspath(a.build))
    res = Results()
    if not os.path.exists(ctx.cmds) or shutil.which("gdb") is None:
        res.add("gdb", "all", None, "no gdb or no %s (build with -Dgdb=enabled)" % ctx.cmds)
    else:
        interps = [i for i in R.discover(R.SID_DIR_DEFAULT)
                   if not a.filters or any(i.matches(f) for f in a.filters)]
        prepare_sid(interps)
        t0 = time.time()
        try:
            with concurrent.futures.ThreadPoolExecutor(a.j) as pool:
                jobs = [pool.submit(run_interp, ctx, res, i) for i in interps]
                jobs.append(pool.submit(bad_cases, ctx, res))
                for j in jobs:
                    j.result()
        finally:
            R.kill_all()
            shutil.rmtree(ctx.tmp, ignore_errors=True)
        print("(%.0fs)" % (time.time() - t0))
    counts = [sum(1 for r in res.rows if r[2] == s) for s in ("PASS", "FAIL", "SKIP")]
    print("gdb: %d passed, %d failed, %d skipped" % tuple(counts))
    return 1 if counts[1] else 0


if __name__ == "__main__":
    sys.exit(main())
