"""The lldb plugin (lldb-plugin/, `plugin load`) against pystack-dump: the
same text, live, on cores, through lldb-server; and the bad cases."""

import os
import re
import shutil
import subprocess
import time

import pytest

from harness.cores import GCORE_TARGET_ENV, run_gcore
from harness.debuggers import LLDB, lldb_argv
from harness.locals import (DEBUGGER_CHECKS, FRAME_COMMANDS, UP, core_host_file,
                            frame_expectations, frame_results)
from harness.procs import (TOOL_TIMEOUT, alive, free_port, host_tmp, kill, run, spawn,
                           tracer_pid)
from harness.results import Result, settle
from harness.target import Target, TargetError


NO_BINARY_MIN = (3, 13)                 # _Py_DebugOffsets: found with no binary at all
LLDB_TIMEOUT = 60.0
SAMPLE_BUDGET = 1.0 + 1.0           # py-sample 1000 at 1000/s, plus slack
STAMP = "platform shell date +%s.%N"


@pytest.fixture(scope="session")
def lldb_plugin(build):
    """The plugin's shared object in the build, or a skip."""
    so = os.path.join(build, "lldb-plugin", "pystack-dump-lldb.so")
    if not shutil.which(LLDB) or not os.path.exists(so):
        pytest.skip("no %s or no %s (build with -Dlldb=enabled)" % (LLDB, so))
    return so


def lldb(plugin, commands, target=(), timeout=LLDB_TIMEOUT, program=(LLDB,)):
    """Run lldb (program: its argv, e.g. under qemu) in batch mode;
    (rc, stdout, stderr) as text."""
    argv = lldb_argv(program) + ["-o", "plugin load " + plugin]
    for c in commands:
        argv += ["-o", c]
    rc, out, err, _ = run(argv + list(target), timeout)
    return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def sections(out):
    """{command: its output} from lldb's echo of each command."""
    got, cmd = {}, None
    for line in out.splitlines(True):
        if line.startswith("(lldb) "):
            cmd = line[len("(lldb) "):].rstrip("\n")
            got.setdefault(cmd, "")
        elif cmd is not None:
            got[cmd] += line
    return got


def cli(tool, args):
    rc, out, err, _ = run([tool.path] + args, TOOL_TIMEOUT)
    return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def select_main(pid):
    """The lldb command that selects the main thread (whose id is the
    pid): the frame checks read its frames, and lldb selects, on attach or
    on a core, whichever thread it lists first, another once the pid
    wrapped (the main thread's id then is the larger).  lldb 16 has no
    `thread select` by thread id; its script interpreter does it."""
    return "script lldb.process.SetSelectedThreadByID(%d)" % pid


def selected_part(text, tid):
    """pystack-dump's report cut to one thread, as py-bt prints it."""
    blocks = text.split("\n\n")
    keep = [b for b in blocks[1:] if b.startswith("Thread %d " % tid)]
    return "\n\n".join([blocks[0]] + keep) + ("\n" if keep else "")


def selected_tid(thread_info, pid):
    """The thread lldb selected on attach, from `thread info`: lldb-server
    picks one in hash order, not the main thread (a target whose main thread
    has the larger id, after the pid wrapped, gets another)."""
    m = re.search(r"tid = (\d+)", thread_info)
    return int(m.group(1)) if m else pid


def diff(expected, got):
    e, g = expected.splitlines(), got.splitlines()
    for i in range(max(len(e), len(g))):
        a = e[i] if i < len(e) else "<end>"
        b = g[i] if i < len(g) else "<end>"
        if a != b:
            return "line %d: expected %r, got %r" % (i + 1, a, b)
    return "identical"


def same(what, expected, got):
    if expected == got:
        return Result(what, "PASS")
    return Result(what, "FAIL", diff(expected, got))


def native_result(interp, what, want, got, want_native):
    """py-bt -n (-N): the selected thread as pystack-dump --native
    (--native-all) prints it (the same frames, names, libraries and
    lines).  In a chroot lldb loads the host's libc in place of the
    chroot's, so it cannot unwind past it: there the same Python
    frames."""
    if not interp.chroot:
        return same(what, want_native, got)
    native = [l for l in got.splitlines() if re.match(r"  #\d+ +0x[0-9a-f]+ in ", l)]
    python = "".join(l for l in got.splitlines(True) if l not in
                     [n + "\n" for n in native] + ["  (no evaluation-loop frame shown for:)\n"])
    return same(what, want, python)


def exe_of(interp):
    return interp.host_path(interp.exe)


def gcore(t, name):
    """A core of target t, written by gdb's gcore."""
    core, _warned, err = run_gcore(t.pid, os.path.join(host_tmp(), "lldb-%s-%s" % (name, t.run_id)))
    if core is None:
        raise TargetError(err)
    return core


def bt_job(interp, tool, plugin):
    """threads.py: py-bt, py-bt all and py-bt -n attached with -p, then
    py-bt all on a gcore core of it."""
    res = []
    with Target(interp, "threads", env_extra=GCORE_TARGET_ENV) as t:
        t.wait_ground_truth()
        t.wait_settled()
        rc, want, err = cli(tool, [str(t.pid)])
        if rc != 0:
            raise TargetError("pystack-dump: " + err)
        rc, out, err = lldb(plugin, ["thread info", "py-bt", "py-bt all", "py-bt -n", "py-bt -N"],
                            ["-p", str(t.pid)])
        got = sections(out)
        tid = selected_tid(got.get("thread info", ""), t.pid)
        res.append(same("py-bt all (live)", want, got.get("py-bt all", err)))
        res.append(same("py-bt (live)", selected_part(want, tid), got.get("py-bt", err)))
        for cmd, flag in (("py-bt -n", "--native"), ("py-bt -N", "--native-all")):
            t.wait_settled()
            rc, want_native, err2 = cli(tool, [flag, str(t.pid)])
            res.append(native_result(interp, cmd + " (live)", selected_part(want, tid),
                                     got.get(cmd, err), selected_part(want_native, tid)))
        ok = alive(t.pid) and not tracer_pid(t.pid)
        res.append(Result("detach", "PASS" if ok else "FAIL",
                          "" if ok else "target gone or still traced"))
        core = gcore(t, "core")
    try:
        # 9: gcore could not read some thread stacks (gdb 13 on sid: guard
        # pages in thread stack mappings); those are marked incomplete.
        rc, want, err = cli(tool, ["--core", core])
        if rc not in (0, 9):
            res.append(Result("py-bt all (core)", "FAIL", "pystack-dump: " + err))
        else:
            rc, out, err = lldb(plugin, ["py-bt all"], ["-c", core, exe_of(interp)])
            res.append(same("py-bt all (core)", want, sections(out).get("py-bt all", err)))
    finally:
        os.unlink(core)
    return res


# py-print of a module (a global of locals.py): one line, the module's
# __dict__ not expanded (py-print shows attributes of plain instances
# only), far under 1 KB.
MODULE_PRINTS = ["py-print time", "py-print sys"]
MODULE_CHECKS = ["%s (%s)" % (c, w) for w in ("live", "core") for c in MODULE_PRINTS]


def module_results(got, what, err):
    out = []
    for cmd in MODULE_PRINTS:
        have = got.get(cmd, err)
        name = cmd.split()[1]
        ok = (re.match(r"global %s = <module object at 0x[0-9a-f]+>\n\Z" % name, have)
              is not None and len(have) < 1024)
        out.append(Result("%s (%s)" % (cmd, what), "PASS" if ok else "FAIL",
                          "" if ok else "expected 'global %s = <module object at 0x...>', "
                          "got %d bytes:\n%s" % (name, len(have), have[:600])))
    return out


def locals_job(interp, tool, plugin):
    """locals.py: py-bt -l and py-bt all -l equal pystack-dump --locals;
    py-frame, py-up, py-down, py-list, py-locals, py-print on the main
    thread, and the native frame py-up selects; py-print of a module; the
    same on a core."""
    res = []
    with Target(interp, "locals", env_extra=GCORE_TARGET_ENV) as t:
        t.wait_ground_truth()
        t.wait_settled()
        pid = str(t.pid)
        want = cli(tool, ["--locals", pid])[1]
        cmds = ([select_main(t.pid), "py-bt -l", "py-bt full", "py-bt all -l"]
                + FRAME_COMMANDS[:UP] + ["frame info"] + FRAME_COMMANDS[UP:] + MODULE_PRINTS)
        rc, out, err = lldb(plugin, cmds, ["-p", pid])
        got = sections(out)
        res.append(same("py-bt -l (live)", selected_part(want, t.pid), got.get("py-bt -l", err)))
        res.append(same("py-bt full (live)", selected_part(want, t.pid),
                        got.get("py-bt full", err)))
        res.append(same("py-bt all -l (live)", want, got.get("py-bt all -l", err)))
        res += frame_results(frame_expectations(t.gt, interp.host_path), got, "live", Result)
        res += module_results(got, "live", err)
        ok = "_PyEval_EvalFrameDefault" in got.get("frame info", "")
        if interp.chroot:
            res.append(Result("py-up selects the eval loop (live)", "SKIP",
                              "lldb loads the host's libraries for a chroot's process: "
                              "its native frames are unreliable (README)"))
        else:
            res.append(Result("py-up selects the eval loop (live)", "PASS" if ok else "FAIL",
                              "" if ok else got.get("frame info", err)))
        core = gcore(t, "core-locals")
    try:
        rc, want, err = cli(tool, ["--core", core, "--locals"])
        cmds = [select_main(t.pid), "py-bt all -l"] + FRAME_COMMANDS + MODULE_PRINTS
        rc, out, err = lldb(plugin, cmds, ["-c", core, exe_of(interp)])
        got = sections(out)
        res.append(same("py-bt all -l (core)", want, got.get("py-bt all -l", err)))
        res += frame_results(frame_expectations(t.gt, core_host_file), got, "core", Result)
        res += module_results(got, "core", err)
    finally:
        os.unlink(core)
    return res


def tasks_job(interp, tool, plugin):
    """asyncio_graph.py: py-tasks and py-tasks -t live, py-tasks on a gcore
    core, against pystack-dump --tasks [--table]."""
    res = []
    with Target(interp, "asyncio_graph") as t:
        t.wait_ground_truth()
        rc, tree, err = cli(tool, ["--tasks", str(t.pid)])
        if rc != 0:
            why = "pystack-dump --tasks: " + (err.strip().splitlines() or ["rc %s" % rc])[-1]
            return [Result(n, "SKIP", why) for n in ("py-tasks", "py-tasks -t", "py-tasks (core)")]
        rc, table, err = cli(tool, ["--tasks", "--table", str(t.pid)])
        rc, out, err = lldb(plugin, ["py-tasks", "py-tasks -t"], ["-p", str(t.pid)])
        got = sections(out)
        res.append(same("py-tasks", tree, got.get("py-tasks", err)))
        res.append(same("py-tasks -t", table, got.get("py-tasks -t", err)))
        core = gcore(t, "core-tasks")
    if interp.chroot and interp.minor < NO_BINARY_MIN:
        # bullseye-3.9: lldb looks for a core's shared objects at the
        # host's paths, and bullseye's _asyncio module, whose types tell
        # 3.9's tasks apart, is not there (pystack-dump --core finds it)
        os.unlink(core)
        return res + [Result("py-tasks (core)", "SKIP", "lldb finds no _asyncio module "
                             "for a chroot's 3.9 core: its tasks cannot be told apart")]
    try:
        rc, want, err = cli(tool, ["--tasks", "--core", core])
        rc, out, err2 = lldb(plugin, ["py-tasks"], ["-c", core, exe_of(interp)])
        res.append(same("py-tasks (core)", want, sections(out).get("py-tasks", err2)))
    finally:
        os.unlink(core)
    return res


@pytest.mark.job("lldb-bt")
@pytest.mark.parametrize("check", ["py-bt (live)", "py-bt all (live)", "py-bt -n (live)",
                                   "py-bt -N (live)",
                                   "detach", "py-bt all (core)"])
def test_lldb_bt(interp, check, tool, lldb_plugin, jobs, request):
    """py-bt in lldb prints what pystack-dump prints, live and on a core."""
    settle(jobs.result(check, bt_job, interp, tool, lldb_plugin), request.node)


@pytest.mark.job("lldb-locals")
@pytest.mark.parametrize("check", DEBUGGER_CHECKS + MODULE_CHECKS)
def test_lldb_locals(interp, check, tool, lldb_plugin, jobs, request):
    """py-bt -l, py-up, py-down, py-frame, py-list, py-locals and py-print
    in lldb, live and on a core, against the target's own repr()."""
    settle(jobs.result(check, locals_job, interp, tool, lldb_plugin), request.node)


@pytest.mark.job("lldb-tasks")
@pytest.mark.interps(lambda i: i.minor >= (3, 7))
@pytest.mark.parametrize("check", ["py-tasks", "py-tasks -t", "py-tasks (core)"])
def test_lldb_tasks(interp, check, tool, lldb_plugin, jobs, request):
    """py-tasks in lldb prints what pystack-dump --tasks prints (3.7+)."""
    settle(jobs.result(check, tasks_job, interp, tool, lldb_plugin), request.node)


def test_lldb_sample(interp, tool, lldb_plugin, request):
    """py-sample 1000 on busy.py returns within 1 s + 1 s of slack, finds
    the busy function, leaves the process stopped under lldb and alive (and
    readable) once lldb detaches; py-sample -o FILE writes collapsed
    stacks."""
    with Target(interp, "busy") as t:
        t.wait_ground_truth()
        folded = os.path.join(t.out_host, "profile.txt")
        rc, out, err = lldb(lldb_plugin, [STAMP, "py-sample 1000", STAMP, "process status",
                                          "py-sample 200 --rate max -o " + folded],
                            ["-p", str(t.pid)])
        got = sections(out)
        stamps = re.findall(r"^(\d+\.\d+)$", got.get(STAMP, ""), re.M)
        table = got.get("py-sample 1000", "")
        status = got.get("process status", "")
        problems = []
        if len(stamps) != 2:
            problems.append("no timing (stderr: %s)" % err.strip()[-300:])
        elif float(stamps[1]) - float(stamps[0]) > SAMPLE_BUDGET:
            problems.append("took %.2f s" % (float(stamps[1]) - float(stamps[0])))
        else:
            request.node.user_properties.append(
                ("info", "%.2f s" % (float(stamps[1]) - float(stamps[0]))))
        if "spin_step" not in table and "busy_loop" not in table:
            problems.append("busy function not in the table:\n" + table[-600:])
        if not re.search(r"^Process %d stopped" % t.pid, status, re.M):
            problems.append("not stopped afterwards: " + status[:200])
        try:
            with open(folded, encoding="utf-8") as f:
                collapsed = f.read()
            if not re.search(r"^\S.*(spin_step|busy_loop).* \d+$", collapsed, re.M):
                problems.append("-o %s: no busy stack in it" % folded)
        except OSError as e:
            problems.append("-o: %s; stderr: %s" % (e, err.strip()[-300:]))
        if not alive(t.pid):
            problems.append("target gone after detach (exit status %s); lldb said:\n%s%s"
                            % (t.proc.poll(), out[-500:], err[-500:]))
        elif cli(tool, [str(t.pid)])[0] != 0:
            problems.append("target not readable after detach")
    assert not problems, "; ".join(problems)


def test_lldb_remote(interps, tool, lldb_plugin):
    """lldb-server on loopback, `gdb-remote PORT`: py-bt reads through it.
    (gdb's gdbserver gives lldb no list of shared libraries: use
    lldb-server.)"""
    server = shutil.which("lldb-server-16") or shutil.which("lldb-server")
    if not server:
        pytest.skip("no lldb-server")
    host = [i for i in interps if not i.chroot and not i.missing]
    if not host:
        pytest.skip("interpreter missing: no host interpreter")
    with Target(host[-1], "threads") as t:
        t.wait_ground_truth()
        t.wait_settled()
        rc, want, err = cli(tool, [str(t.pid)])
        port = free_port()
        srv = spawn([server, "g", "127.0.0.1:%d" % port, "--attach", str(t.pid)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(1.0)
            rc, out, err = lldb(lldb_plugin, ["gdb-remote 127.0.0.1:%d" % port, "py-bt all"],
                                [exe_of(host[-1])])
        finally:
            kill(srv)
    r = same("py-bt all (lldb-server)", want, sections(out).get("py-bt all", err))
    assert r.status == "PASS", r.detail


def expect_error(plugin, commands, target, pattern):
    rc, out, err = lldb(plugin, commands, target)
    assert re.search(pattern, out + err, re.M), "expected /%s/, got:\n%s%s" % (
        pattern, out[-400:], err[-400:])


def test_lldb_no_process(lldb_plugin):
    expect_error(lldb_plugin, ["py-bt"], [],
                 r"^error: py-bt: no process or core; run, attach or load a core first")


@pytest.mark.parametrize("command", ["py-bt", "py-sample 10"])
def test_lldb_not_python(lldb_plugin, command):
    sleeper = spawn(["/bin/sleep", "600"])
    try:
        expect_error(lldb_plugin, [command], ["-p", str(sleeper.pid)],
                     r"^error: %s: the program is not running CPython" % command.split()[0])
    finally:
        kill(sleeper)


# Each command's syntax and the first line of its help.
HELP_HEADS = {
    "py-bt": ("py-bt [all] [-n|-N] [-l] [-j]", "the Python stack of the selected thread."),
    "py-up": ("py-up [N]", "select the Python frame N levels outward (default 1)."),
    "py-down": ("py-down [N]", "select the Python frame N levels inward (default 1)."),
    "py-frame": ("py-frame", "show the selected Python frame."),
    "py-list": ("py-list", "the source around the selected Python frame's line."),
    "py-locals": ("py-locals", "the arguments and locals of the selected Python frame."),
    "py-print": ("py-print NAME", "one variable, as the selected Python frame sees it."),
}


def test_lldb_help(lldb_plugin):
    """help py-... prints each command's documentation: lldb's brief line
    and Syntax line, then the whole text, which starts with both."""
    cmds = ["help " + c for c in HELP_HEADS]
    rc, out, err = lldb(lldb_plugin, cmds)
    got = sections(out)
    bad = []
    for c, (syntax, brief) in HELP_HEADS.items():
        have = got.get("help " + c, "")
        lines = have.splitlines()
        head = "%s: %s" % (syntax, brief)
        if (not lines or lines[0] != brief or "Syntax: %s" % syntax not in lines
                or head not in lines or len(lines) - lines.index(head) < 3):
            bad.append("help %s printed:\n%s" % (c, have))
    assert rc == 0 and not bad, "\n".join(bad) or err[-600:]


def test_lldb_unsupported_version(lldb_plugin, python27):
    expect_error(lldb_plugin, ["py-bt"], ["-p", str(python27.pid)],
                 r"^error: py-bt: .*Supported: CPython 3\.6 to 3\.15")


@pytest.fixture(scope="module")
def host_target(interps):
    """threads.py under the first interpreter outside the chroot."""
    live = [i for i in interps if not i.chroot and not i.missing]
    if not live:
        pytest.skip("interpreter missing: no host interpreter")
    with Target(live[0], "threads") as t:
        t.wait_ground_truth()
        yield t


def test_lldb_loaded_twice(lldb_plugin, host_target):
    """The plugin loaded again, and from a second copy: lldb's message, one
    py-bt in help, py-bt still answers."""
    t = host_target
    copy = os.path.join(host_tmp(), "second-copy-%s.so" % t.run_id)
    shutil.copy(lldb_plugin, copy)
    try:
        rc, out, err = lldb(lldb_plugin, ["plugin load " + lldb_plugin, "plugin load " + copy,
                                          "py-bt", "help"], ["-p", str(t.pid)])
    finally:
        os.unlink(copy)
    got = sections(out)
    listed = re.findall(r"^\s+py-bt\s+--", got.get("help", ""), re.M)
    assert (rc == 0 and "already loaded" in err and len(listed) == 1
            and got.get("py-bt", "").startswith("Process %d:" % t.pid)), \
        "rc=%s, %d py-bt in help, stderr: %s, py-bt: %s" % (rc, len(listed), err[-300:],
                                                            got.get("py-bt", "")[:200])


def test_lldb_sample_core(lldb_plugin, host_target):
    core = gcore(host_target, "core-sample")
    try:
        expect_error(lldb_plugin, ["py-sample 10"], ["-c", core, exe_of(host_target.interp)],
                     r"^error: py-sample needs a live process")
    finally:
        os.unlink(core)
