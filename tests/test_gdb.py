"""The gdb plugin (gdb-plugin/: py-bt, py-tasks, py-sample without gdb's
Python) against pystack-dump: the same text, live, on cores, through
gdbserver; and the bad cases."""

import difflib
import os
import re
import shutil
import socket
import subprocess
import time

import pytest

from harness.debuggers import gdb_argv
from harness.locals import (DEBUGGER_CHECKS, FRAME_COMMANDS, UP, core_host_file,
                            frame_expectations, frame_results)
from harness.procs import free_port, host_tmp, kill, run, spawn, task_states
from harness.results import Result, settle
from harness.target import Target, TargetError


GDB_TIMEOUT = 120
# py-sample's budget: SAMPLES at RATE, plus SLACK for gdb's attach and a
# loaded machine (1.16-1.24 s alone; 2.52 s once with a second test run
# on the same two cores).  Its speed is bench/bench_gdb.py's to measure.
SAMPLES, RATE, SLACK = 1000, 1000.0, 3.0


@pytest.fixture(scope="session")
def gdb_plugin(build):
    """(command file, JIT reader) of the build, or a skip."""
    cmds = os.path.join(build, "gdb-plugin", "pystack-dump.gdb")
    reader = os.path.join(build, "gdb-plugin", "pystack-dump-gdb.so")
    if not os.path.exists(cmds) or shutil.which("gdb") is None:
        pytest.skip("no gdb or no %s (build with -Dgdb=enabled)" % cmds)
    return cmds, reader


def text(b):
    return b.decode("utf-8", "replace")


def gdb(plugin, args, cmds, timeout=GDB_TIMEOUT, program="gdb"):
    """Run gdb (or program: gdb-multiarch) in batch mode with the command
    file and each of cmds (each preceded by an "@@N" marker); returns
    (rc, {N: output of cmd N}, all)."""
    argv = gdb_argv(program) + args
    argv += ["-x", plugin[0]]
    for i, c in enumerate(cmds):
        argv += ["-ex", "echo @@%d\\n" % i, "-ex", c]
    argv += ["-ex", "echo @@end\\n"]
    rc, out, err, _ = run(argv, timeout)
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


def cli(tool, args):
    rc, out, err, _ = run([tool.path] + args, 60)
    return rc, text(out), text(err)


def thread_block(report, tid):
    """pystack-dump's text for one thread: the header line and the thread's
    paragraph."""
    paras = report.split("\n\n")
    for p in paras[1:]:
        if p.startswith("Thread %d " % tid):
            return paras[0] + "\n\n" + p.rstrip("\n") + "\n"
    return None


def verdict(check, ok, why=""):
    """ok True: PASS, None: SKIP (why), else FAIL (why)."""
    if ok is True:
        return Result(check, "PASS")
    return Result(check, "SKIP" if ok is None else "FAIL", why)


def same(check, got, want):
    if got == want:
        return verdict(check, True)
    diff = "".join(list(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                             "pystack-dump", "gdb"))[:40])
    return verdict(check, False, "output differs:\n" + diff)


def native_verdict(interp, check, got, main, main_native, all_frames):
    """py-bt -n (-N): the main thread as pystack-dump --native
    (--native-all) prints it (the same frames, names, libraries and
    lines); in a chroot, where gdb unwinds with the host's libraries, the
    main thread's Python frames in the same order, with -N each run of
    them right under an evaluation-loop frame."""
    if not interp.chroot:
        return same(check, got, main_native or "(no main thread)")
    frames = [line for line in main.splitlines() if line.startswith("  File ")]
    lines = got.splitlines()
    if [line for line in lines if line.startswith("  File ")] != frames:
        return verdict(check, False, "Python frames differ:\n" + got)
    for i, line in enumerate(lines):
        if line.startswith("  File ") and i and not lines[i - 1].startswith(("  ", "Traceback")):
            return verdict(check, False, "frame outside a traceback:\n" + got)
    if not all_frames:
        return verdict(check, True)
    # gdb's own backtrace may stop short (a binary it cannot unwind):
    # the Python frames it showed no loop frame for come first, under a
    # note saying so.
    for i, line in enumerate(lines):
        prev = [x for x in lines[:i] if x.startswith("  #") or x.startswith("  (no ")]
        if line.startswith("  File ") and (not prev or not (
                "EvalFrame" in prev[-1] or "no evaluation-loop frame" in prev[-1])):
            return verdict(check, False, "Python frame not under an eval-loop frame:\n" + got)
    return verdict(check, True)


def gcore(interp, t, what):
    """A gcore core of target t and the interpreter's executable."""
    prefix = os.path.join(host_tmp(), "gdb-%s-%s" % (what, t.run_id))
    rc, out, err, _ = run(["gcore", "-o", prefix, str(t.pid)], 120)
    core = "%s.%d" % (prefix, t.pid)
    if rc != 0 or not os.path.exists(core):
        raise TargetError("gcore failed: " + text(err)[-300:])
    return core, os.path.realpath(interp.host_path(interp.exe))


def gdbserver_output(plugin, pid):
    """py-bt all through gdbserver --attach on loopback."""
    port = free_port()
    server = spawn(["gdbserver", "--attach", "127.0.0.1:%d" % port, str(pid)],
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
        rc, parts, raw = gdb(plugin, ["-ex", "set sysroot /",
                                      "-ex", "target remote 127.0.0.1:%d" % port],
                             ["py-bt all"])
        return parts.get(0, "")
    finally:
        kill(server)


def bt_job(interp, tool, plugin):
    """threads.py: py-bt, py-bt all and py-bt -n live; py-bt all on a gcore
    core (py-sample refuses a core); py-bt all through gdbserver."""
    res = []
    with Target(interp, "threads") as t:
        t.wait_ground_truth()
        t.wait_settled()
        rc, parts, raw = gdb(plugin, ["-p", str(t.pid)],
                             ["py-bt", "py-bt all", "py-bt -n", "py-bt -N"])
        # gdb's detach restarts the threads' system calls: until they
        # block again they run, and pystack-dump would say so.
        t.wait_settled()
        rc2, want, err = cli(tool, [str(t.pid)])
        if not want:
            raise TargetError("pystack-dump failed: " + err)
        res.append(same("py-bt all (live)", parts.get(1, ""), want))
        main = thread_block(want, t.gt["main_tid"])
        res.append(same("py-bt (live)", parts.get(0, ""), main or "(no main thread)"))
        for i, flag in ((2, "--native"), (3, "--native-all")):
            t.wait_settled()
            native = thread_block(cli(tool, [flag, str(t.pid)])[1], t.gt["main_tid"])
            res.append(native_verdict(interp, "py-bt %s (live)" % ("-n", "-N")[i - 2],
                                      parts.get(i, ""), main or "", native, i == 3))
        core, exe = gcore(interp, t, "core")
        try:
            rc, parts, raw = gdb(plugin, ["-c", core, exe], ["py-bt all", "py-sample 10"])
            # A partial report (some stacks incomplete) must match too.
            rc2, want_core, err = cli(tool, ["--core", core])
            res.append(same("py-bt all (core)", parts.get(0, ""), want_core)
                       if want_core else verdict("py-bt all (core)", False,
                                                 "pystack-dump failed: " + err))
            res.append(verdict("py-sample (core)",
                               "py-sample needs a live process" in parts.get(1, ""),
                               "got: " + parts.get(1, "")[:300]))
        finally:
            os.unlink(core)
        got = gdbserver_output(plugin, t.pid)
        t.wait_settled()
        res.append(same("py-bt all (gdbserver)", got, cli(tool, [str(t.pid)])[1]))
    return res


# py-print of a module (a global of locals.py): one line, the module's
# __dict__ not expanded (py-print shows attributes of plain instances
# only), far under 1 KB.
MODULE_PRINTS = ["py-print time", "py-print sys"]
MODULE_CHECKS = ["%s (%s)" % (c, w) for w in ("live", "core") for c in MODULE_PRINTS]


def module_results(got, what):
    out = []
    for cmd in MODULE_PRINTS:
        have = got.get(cmd, "")
        name = cmd.split()[1]
        ok = (re.match(r"global %s = <module object at 0x[0-9a-f]+>\n\Z" % name, have)
              is not None and len(have) < 1024)
        out.append(verdict("%s (%s)" % (cmd, what), ok,
                           "expected 'global %s = <module object at 0x...>', got %d bytes:\n%s"
                           % (name, len(have), have[:600])))
    return out


def locals_job(interp, tool, plugin):
    """locals.py: py-bt -l and py-bt all -l equal pystack-dump --locals;
    py-frame, py-up, py-down, py-list, py-locals, py-print on the main
    thread, and the native frame py-up selects; py-print of a module; the
    same on a core."""
    res = []
    with Target(interp, "locals") as t:
        t.wait_ground_truth()
        t.wait_settled()
        pid = str(t.pid)
        cmds = (["py-bt -l", "py-bt full", "py-bt all -l"] + FRAME_COMMANDS[:UP] + ["frame"]
                + FRAME_COMMANDS[UP:] + MODULE_PRINTS)
        rc, parts, raw = gdb(plugin, ["-p", pid], cmds)
        got = dict((c, parts.get(i, "")) for i, c in enumerate(cmds))
        t.wait_settled()
        want = cli(tool, ["--locals", pid])[1]
        res.append(same("py-bt -l (live)", got["py-bt -l"],
                        thread_block(want, t.gt["main_tid"]) or "(no main thread)"))
        res.append(same("py-bt full (live)", got["py-bt full"],
                        thread_block(want, t.gt["main_tid"]) or "(no main thread)"))
        res.append(same("py-bt all -l (live)", got["py-bt all -l"], want))
        res += frame_results(frame_expectations(t.gt, interp.host_path), got, "live", Result)
        res += module_results(got, "live")
        res.append(verdict("py-up selects the eval loop (live)",
                           None if interp.chroot else
                           "_PyEval_EvalFrameDefault" in got["frame"],
                           "gdb loads the host's libraries for a chroot's process "
                           "(their in-chroot names): its native frames are unreliable "
                           "(README)" if interp.chroot else got["frame"]))
        core, exe = gcore(interp, t, "core-locals")
        try:
            cmds = ["py-bt all -l"] + FRAME_COMMANDS + MODULE_PRINTS
            rc, parts, raw = gdb(plugin, ["-c", core, exe], cmds)
            got = dict((c, parts.get(i, "")) for i, c in enumerate(cmds))
            want = cli(tool, ["--core", core, "--locals"])[1]
            res.append(same("py-bt all -l (core)", got["py-bt all -l"], want))
            res += frame_results(frame_expectations(t.gt, core_host_file), got, "core", Result)
            res += module_results(got, "core")
        finally:
            os.unlink(core)
    return res


def sample_job(interp, plugin):
    """busy.py: py-sample 1000 returns within its budget (1 s at 1000 Hz,
    plus SLACK), leaves the inferior stopped with all its threads (info
    threads), and SIGINT never reaches it (running after gdb detaches)."""
    res = []
    with Target(interp, "busy") as t:
        t.wait_ground_truth()
        pid = t.pid
        stat = "shell sed 's/.*) //; s/ .*//' /proc/%d/stat" % pid
        rc, parts, raw = gdb(plugin, ["-p", str(pid)], [
            "shell date +%s.%N", "py-sample %d" % SAMPLES, "shell date +%s.%N",
            stat, "info threads"])
        try:
            secs = float(parts[2]) - float(parts[0])
        except (KeyError, ValueError):
            raise TargetError("no timing:\n" + raw[-1500:])
        table = parts.get(1, "")
        budget = SAMPLES / RATE + SLACK
        res.append(verdict("py-sample", "direct" in table and "busy_loop" in table
                           and secs <= budget,
                           "%.2fs (budget %.2fs):\n%s" % (secs, budget, table[-800:])))
        nthreads = len([x for x in parts.get(4, "").splitlines() if re.match(r"^[* ] +\d+ ", x)])
        res.append(verdict("py-sample: stopped after",
                           parts.get(3, "").strip() == "t" and nthreads == len(t.gt["threads"]),
                           "state %r, %d threads in info threads"
                           % (parts.get(3, "").strip(), nthreads)))
        time.sleep(0.5)
        state = task_states(pid).get(pid)
        res.append(verdict("py-sample: running after detach", state in ("R", "S"),
                           "after detach the target is %r (a SIGINT delivered?)\n%s"
                           % (state, t.log_tail())))
    res[0].info = "%.2fs" % secs
    return res


def tasks_job(interp, tool, plugin):
    """asyncio_graph.py: py-tasks and py-tasks -t live, py-tasks on a gcore
    core, each equal to pystack-dump --tasks [--table]."""
    res = []
    with Target(interp, "asyncio_graph") as t:
        t.wait_ground_truth()
        time.sleep(0.3)
        rc, parts, raw = gdb(plugin, ["-p", str(t.pid)], ["py-tasks", "py-tasks -t"])
        res.append(same("py-tasks", parts.get(0, ""), cli(tool, ["--tasks", str(t.pid)])[1]))
        res.append(same("py-tasks -t", parts.get(1, ""),
                        cli(tool, ["--tasks", "--table", str(t.pid)])[1]))
        core, exe = gcore(interp, t, "core-tasks")
        try:
            rc, parts, raw = gdb(plugin, ["-c", core, exe], ["py-tasks"])
            rc2, want, err = cli(tool, ["--tasks", "--core", core])
            res.append(same("py-tasks (core)", parts.get(0, ""), want) if want else
                       verdict("py-tasks (core)", False, "pystack-dump failed: " + err))
        finally:
            os.unlink(core)
    return res


@pytest.mark.job("gdb-bt")
@pytest.mark.parametrize("check", ["py-bt (live)", "py-bt all (live)", "py-bt -n (live)",
                                   "py-bt -N (live)", "py-bt all (core)", "py-sample (core)",
                                   "py-bt all (gdbserver)"])
def test_gdb_bt(interp, check, tool, gdb_plugin, jobs, request):
    """py-bt in gdb prints what pystack-dump prints: live, on a core, through
    gdbserver; py-bt -n puts the Python frames under the eval loop's."""
    settle(jobs.result(check, bt_job, interp, tool, gdb_plugin), request.node)


@pytest.mark.job("gdb-locals")
@pytest.mark.parametrize("check", DEBUGGER_CHECKS + MODULE_CHECKS)
def test_gdb_locals(interp, check, tool, gdb_plugin, jobs, request):
    """py-bt -l, py-up, py-down, py-frame, py-list, py-locals and py-print
    in gdb, live and on a core, against the target's own repr()."""
    settle(jobs.result(check, locals_job, interp, tool, gdb_plugin), request.node)


@pytest.mark.job("gdb-sample")
@pytest.mark.parametrize("check", ["py-sample", "py-sample: stopped after",
                                   "py-sample: running after detach"])
def test_gdb_sample(interp, check, gdb_plugin, jobs, request):
    """py-sample 1000 in gdb: on time, the inferior stopped again after."""
    settle(jobs.result(check, sample_job, interp, gdb_plugin), request.node)


@pytest.mark.job("gdb-tasks")
@pytest.mark.interps(lambda i: i.minor >= (3, 7))
@pytest.mark.parametrize("check", ["py-tasks", "py-tasks -t", "py-tasks (core)"])
def test_gdb_tasks(interp, check, tool, gdb_plugin, jobs, request):
    """py-tasks in gdb prints what pystack-dump --tasks prints (3.7+)."""
    settle(jobs.result(check, tasks_job, interp, tool, gdb_plugin), request.node)


def test_gdb_no_inferior(gdb_plugin):
    rc, parts, raw = gdb(gdb_plugin, [], ["py-bt", "py-tasks", "py-sample 10"])
    assert all("no process or core; run, attach or load a core first" in parts.get(i, "")
               for i in range(3)), raw[-600:]


@pytest.fixture
def sleeper():
    p = spawn(["sleep", "60"])
    time.sleep(0.2)
    yield p
    kill(p)


def test_gdb_not_python(gdb_plugin, sleeper):
    rc, parts, raw = gdb(gdb_plugin, ["-p", str(sleeper.pid)], ["py-bt", "py-sample 10"])
    assert all("not running CPython" in parts.get(i, "") for i in range(2)), raw[-600:]


def test_gdb_loaded_twice(gdb_plugin, sleeper):
    """The command file twice, then the reader by hand: gdb's own message,
    and py-bt still answers once."""
    cmds, reader = gdb_plugin
    rc, parts, raw = gdb(gdb_plugin, ["-p", str(sleeper.pid), "-x", cmds],
                         ["py-bt", "jit-reader-load " + reader, "py-bt", "help py-bt"])
    assert (rc == 0 and "already loaded" in raw
            and all(parts.get(i, "").count("not running CPython") == 1 for i in (0, 2))
            and parts.get(3, "").startswith("py-bt [all] [-n|-N] [-l] [-j]")), raw[-800:]


# The first line of each command's help: its syntax and what it does.
HELP_HEADS = {
    "py-bt": "py-bt [all] [-n|-N] [-l] [-j]: the Python stack of the selected thread.",
    "py-up": "py-up [N]: select the Python frame N levels outward (default 1).",
    "py-down": "py-down [N]: select the Python frame N levels inward (default 1).",
    "py-frame": "py-frame: show the selected Python frame.",
    "py-list": "py-list: the source around the selected Python frame's line.",
    "py-locals": "py-locals: the arguments and locals of the selected Python frame.",
    "py-print": "py-print NAME: one variable, as the selected Python frame sees it.",
}


def test_gdb_help(gdb_plugin):
    """help py-... prints each command's documentation: its syntax line,
    then more."""
    cmds = ["help " + c for c in HELP_HEADS]
    rc, parts, raw = gdb(gdb_plugin, [], cmds)
    bad = []
    for i, (c, head) in enumerate(HELP_HEADS.items()):
        lines = parts.get(i, "").splitlines()
        if not lines or lines[0] != head or len(lines) < 3:
            bad.append("help %s printed:\n%s" % (c, parts.get(i, "")))
    assert rc == 0 and not bad, "\n".join(bad) or raw[-600:]


def test_gdb_bad_arguments(gdb_plugin, sleeper):
    rc, parts, raw = gdb(gdb_plugin, ["-p", str(sleeper.pid)], ["py-bt bogus", "py-sample"])
    assert ("unexpected argument 'bogus'" in parts.get(0, "")
            and "how many samples" in parts.get(1, "")), raw[-600:]


def test_gdb_unsupported_version(gdb_plugin, python27):
    rc, parts, raw = gdb(gdb_plugin, ["-p", str(python27.pid)], ["py-bt"])
    assert "Supported: CPython 3.6 to 3.15" in parts.get(0, ""), raw[-600:]
