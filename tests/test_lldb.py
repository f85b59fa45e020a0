#!/usr/bin/env python3
"""The lldb plugin, end to end (stdlib only, Python 3.9+).

    python3 tests/test_lldb.py [--build build-lldb] [--only VERSIONS] [-j N] [-v]

For every interpreter tests/run_tests.py finds (pyenv 3.6-3.13, Debian
3.11 release/debug, sid 3.13-3.15 release/debug in the chroot), with lldb
driving the plugin (`lldb-16 -b -o 'plugin load ...'`):
  * py-bt and py-bt all on tests/targets/threads.py, attached with -p, must
    print exactly what `pystack-dump PID` prints (py-bt: the selected
    thread's part of it);
  * the same on a gcore core of it (`lldb-16 -b -c CORE EXE`) against
    `pystack-dump --core CORE`;
  * py-tasks and py-tasks -t on tests/targets/asyncio_graph.py (and
    py-tasks on a gcore core of it) against
    `pystack-dump --tasks [--table] PID` (SKIP where pystack-dump has no
    task graph for the version);
  * py-bt -n: the same Python frames, under an evaluation-loop frame;
  * py-sample 1000 on tests/targets/busy.py returns within 1 s + 1 s of
    slack, finds the busy function, and leaves the process stopped under
    lldb and alive (and readable) once lldb detaches; py-sample -o FILE
    writes collapsed stacks.
py-bt all through lldb-server on loopback (`gdb-remote PORT`) once.
Then the bad cases: no process, a non-Python process, Python 2.7, py-sample
on a core, and the plugin loaded twice (also from a second copy).

Targets, interpreters and process bookkeeping are tests/run_tests.py's.
The last line is `lldb: N passed, N failed, N skipped`; the exit status is
0 only if nothing failed.
"""

import argparse
import concurrent.futures
import filecmp
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_tests as rt  # noqa: E402

LLDB = "lldb-16"
LLDB_TIMEOUT = 60.0
SAMPLE_BUDGET = 1.0 + 1.0           # py-sample 1000 at 1000/s, plus slack

_lock = threading.Lock()
_counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}


def report(status, label, what, detail=""):
    with _lock:
        _counts[status] += 1
        line = "%s %s %s" % (status, label, what)
        if detail:
            line += ": " + detail.strip().replace("\n", "\n    ")
        print(line, flush=True)


def lldb(plugin, commands, target=(), timeout=LLDB_TIMEOUT):
    """Run lldb in batch mode; (rc, stdout, stderr) as text."""
    argv = [LLDB, "-b", "-o", "plugin load " + plugin]
    for c in commands:
        argv += ["-o", c]
    rc, out, err, _ = rt.run(argv + list(target), timeout)
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


def cli(build, args):
    rc, out, err, _ = rt.run([os.path.join(build, "cli", "pystack-dump")] + args,
                             rt.TOOL_TIMEOUT)
    return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def selected_part(text, tid):
    """pystack-dump's report cut to one thread, as py-bt prints it."""
    blocks = text.split("\n\n")
    keep = [b for b in blocks[1:] if b.startswith("Thread %d " % tid)]
    return "\n\n".join([blocks[0]] + keep) + ("\n" if keep else "")


def diff(expected, got):
    e, g = expected.splitlines(), got.splitlines()
    for i in range(max(len(e), len(g))):
        a = e[i] if i < len(e) else "<end>"
        b = g[i] if i < len(g) else "<end>"
        if a != b:
            return "line %d: expected %r, got %r" % (i + 1, a, b)
    return "identical"


def check_same(label, what, expected, got):
    if expected == got:
        report("PASS", label, what)
    else:
        report("FAIL", label, what, diff(expected, got))


def check_native(interp, want, got):
    """py-bt -n: the same Python frames, under an evaluation-loop frame.
    In a chroot lldb loads the host's libc in place of the chroot's, so it
    cannot unwind past it: there only the Python frames are checked."""
    label = interp.label
    native = [l for l in got.splitlines() if re.match(r"  #\d+ +0x[0-9a-f]+ in ", l)]
    python = "".join(l for l in got.splitlines(True) if l not in
                     [n + "\n" for n in native] + ["  (no evaluation-loop frame shown for:)\n"])
    if not interp.chroot and not any(
            re.search(r" in (_PyEval_EvalFrameDefault|PyEval_EvalFrameEx)\b", l)
            for l in native):
        report("FAIL", label, "py-bt -n (live)", "no evaluation-loop frame:\n" + got[-800:])
    else:
        check_same(label, "py-bt -n (live)", want, python)


def exe_of(interp):
    return interp.host_path(interp.exe)


def gcore(t, core, label, what):
    """Write a core of target t to CORE with gdb's gcore; CORE, or None
    with WHAT failed."""
    r = subprocess.run(["gdb", "-batch", "-nx", "-p", str(t.pid), "-ex", "gcore " + core],
                       capture_output=True, timeout=120)
    if r.returncode or not os.path.exists(core):
        report("FAIL", label, what, "gcore failed")
        return None
    return core


def test_bt(interp, build, plugin, scratch):
    label = interp.label
    with rt.Target(interp, "threads", env_extra=rt.GCORE_TARGET_ENV) as t:
        t.wait_ground_truth()
        t.wait_settled()
        rc, want, err = cli(build, [str(t.pid)])
        if rc != 0:
            report("FAIL", label, "py-bt (live)", "pystack-dump: " + err)
            return
        rc, out, err = lldb(plugin, ["py-bt", "py-bt all", "py-bt -n"],
                            ["-p", str(t.pid)])
        got = sections(out)
        check_same(label, "py-bt all (live)", want, got.get("py-bt all", err))
        check_same(label, "py-bt (live, selected thread)",
                   selected_part(want, t.pid), got.get("py-bt", err))
        check_native(interp, selected_part(want, t.pid), got.get("py-bt -n", err))
        if not rt.alive(t.pid) or rt.tracer_pid(t.pid):
            report("FAIL", label, "detach", "target gone or still traced")
        core = gcore(t, os.path.join(scratch, "core.%s" % label), label, "py-bt (core)")
        if not core:
            return
    try:
        # 9: gcore could not read some thread stacks (gdb 13 on sid: guard
        # pages in thread stack mappings); those are marked incomplete.
        rc, want, err = cli(build, ["--core", core])
        if rc not in (0, 9):
            report("FAIL", label, "py-bt all (core)", "pystack-dump: " + err)
            return
        rc, out, err = lldb(plugin, ["py-bt all"], ["-c", core, exe_of(interp)])
        check_same(label, "py-bt all (core)", want,
                   sections(out).get("py-bt all", err))
    finally:
        os.unlink(core)


def test_tasks(interp, build, plugin, scratch):
    label = interp.label
    if interp.minor < (3, 7):
        report("SKIP", label, "py-tasks", "the asyncio target needs asyncio.run (3.7+)")
        return
    with rt.Target(interp, "asyncio_graph") as t:
        t.wait_ground_truth()
        rc, tree, err = cli(build, ["--tasks", str(t.pid)])
        if rc != 0:
            report("SKIP", label, "py-tasks", "pystack-dump --tasks: " +
                   (err.strip().splitlines() or ["rc %s" % rc])[-1])
            return
        rc, table, err = cli(build, ["--tasks", "--table", str(t.pid)])
        rc, out, err = lldb(plugin, ["py-tasks", "py-tasks -t"], ["-p", str(t.pid)])
        got = sections(out)
        check_same(label, "py-tasks", tree, got.get("py-tasks", err))
        check_same(label, "py-tasks -t", table, got.get("py-tasks -t", err))
        core = gcore(t, os.path.join(scratch, "core-tasks.%s" % label), label,
                     "py-tasks (core)")
        if not core:
            return
    try:
        rc, want, err = cli(build, ["--tasks", "--core", core])
        rc, out, err2 = lldb(plugin, ["py-tasks"], ["-c", core, exe_of(interp)])
        check_same(label, "py-tasks (core)", want, sections(out).get("py-tasks", err2))
    finally:
        os.unlink(core)


STAMP = "platform shell date +%s.%N"


def test_sample(interp, build, plugin):
    label = interp.label
    with rt.Target(interp, "busy") as t:
        t.wait_ground_truth()
        folded = os.path.join(t.out_host, "profile.txt")
        rc, out, err = lldb(plugin, [STAMP, "py-sample 1000", STAMP, "process status",
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
        if not rt.alive(t.pid):
            problems.append("target gone after detach (exit status %s); lldb said:\n%s%s"
                            % (t.proc.poll(), out[-500:], err[-500:]))
        elif cli(build, [str(t.pid)])[0] != 0:
            problems.append("target not readable after detach")
        if problems:
            report("FAIL", label, "py-sample 1000", "; ".join(problems))
        else:
            report("PASS", label, "py-sample 1000",
                   "%.2f s" % (float(stamps[1]) - float(stamps[0])))


def test_interp(interp, build, plugin, scratch):
    for test in (lambda: test_bt(interp, build, plugin, scratch),
                 lambda: test_tasks(interp, build, plugin, scratch),
                 lambda: test_sample(interp, build, plugin)):
        try:
            test()
        except (rt.TargetError, subprocess.SubprocessError, OSError) as e:
            report("FAIL", interp.label, "target", str(e))


def expect_error(what, plugin, commands, target, pattern):
    rc, out, err = lldb(plugin, commands, target)
    if re.search(pattern, out + err, re.M):
        report("PASS", "bad-case", what)
    else:
        report("FAIL", "bad-case", what, "expected /%s/, got:\n%s%s"
               % (pattern, out[-400:], err[-400:]))


def test_bad_cases(build, plugin, scratch, interps):
    expect_error("no process", plugin, ["py-bt"], [],
                 r"^error: py-bt: no process or core; attach, launch or load a core first")
    sleeper = rt.spawn(["/bin/sleep", "600"])
    try:
        expect_error("non-Python process", plugin, ["py-bt"], ["-p", str(sleeper.pid)],
                     r"^error: py-bt: the program is not running CPython")
        expect_error("py-sample on a non-Python process", plugin, ["py-sample 10"],
                     ["-p", str(sleeper.pid)], r"^error: py-sample: the program is not "
                     "running CPython")
    finally:
        rt.kill(sleeper)
    py27 = os.path.join(rt.pyenv_root(), "versions", "2.7.18", "bin", "python2.7")
    if os.access(py27, os.X_OK):
        p = rt.spawn([py27, "-c", "import time; time.sleep(600)"])
        try:
            time.sleep(1.0)
            expect_error("unsupported Python (2.7)", plugin, ["py-bt"], ["-p", str(p.pid)],
                         r"^error: py-bt: .*Supported: CPython 3\.6 to 3\.15")
        finally:
            rt.kill(p)
    else:
        report("SKIP", "bad-case", "unsupported Python", "no pyenv 2.7.18")
    copy = os.path.join(scratch, "second-copy.so")
    shutil.copy(plugin, copy)
    live = [i for i in interps if not i.chroot]
    if not live:
        report("SKIP", "bad-case", "plugin loaded twice", "no host interpreter")
        return
    with rt.Target(live[0], "threads") as t:
        t.wait_ground_truth()
        rc, out, err = lldb(plugin, ["plugin load " + plugin, "plugin load " + copy,
                                     "py-bt", "help"], ["-p", str(t.pid)])
        got = sections(out)
        listed = re.findall(r"^\s+py-bt\s+--", got.get("help", ""), re.M)
        if (rc == 0 and "already loaded" in err and len(listed) == 1
                and got.get("py-bt", "").startswith("Process %d:" % t.pid)):
            report("PASS", "bad-case", "plugin loaded twice")
        else:
            report("FAIL", "bad-case", "plugin loaded twice",
                   "rc=%s, %d py-bt in help, stderr: %s, py-bt: %s"
                   % (rc, len(listed), err[-300:], got.get("py-bt", "")[:200]))
        core = os.path.join(scratch, "core.sample")
        subprocess.run(["gdb", "-batch", "-nx", "-p", str(t.pid), "-ex", "gcore " + core],
                       capture_output=True, timeout=120)
    try:
        expect_error("py-sample on a core", plugin, ["py-sample 10"],
                     ["-c", core, exe_of(live[0])], r"^error: py-sample needs a live process")
    finally:
        if os.path.exists(core):
            os.unlink(core)


def free_port():
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


def test_remote(build, plugin, interp):
    """lldb-server on loopback, `gdb-remote PORT`: py-bt reads through it.
    (gdb's gdbserver gives lldb no list of shared libraries: use
    lldb-server.)"""
    server = shutil.which("lldb-server-16") or shutil.which("lldb-server")
    if not server:
        report("SKIP", interp.label, "py-bt (lldb-server)", "no lldb-server")
        return
    with rt.Target(interp, "threads") as t:
        t.wait_ground_truth()
        t.wait_settled()
        rc, want, err = cli(build, [str(t.pid)])
        port = free_port()
        srv = rt.spawn([server, "g", "127.0.0.1:%d" % port, "--attach", str(t.pid)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(1.0)
            rc, out, err = lldb(plugin, ["gdb-remote 127.0.0.1:%d" % port, "py-bt all"],
                                [exe_of(interp)])
        finally:
            rt.kill(srv)
        check_same(interp.label, "py-bt all (lldb-server)", want,
                   sections(out).get("py-bt all", err))


def sync_chroot_targets(sid_dir):
    """Copy the targets into the chroot where they differ.  Unlike
    run_tests.prepare_chroot this never removes anything: the main harness
    may be running there at the same time."""
    dst = os.path.join(sid_dir, rt.CHROOT_TARGETS.lstrip("/"))
    os.makedirs(dst, exist_ok=True)
    os.makedirs(os.path.join(sid_dir, rt.CHROOT_OUT.lstrip("/")), exist_ok=True)
    for name in os.listdir(rt.TARGETS_DIR):
        src = os.path.join(rt.TARGETS_DIR, name)
        to = os.path.join(dst, name)
        if os.path.isfile(src) and not (os.path.exists(to) and
                                        filecmp.cmp(src, to, shallow=False)):
            tmp = to + ".tmp-lldb"
            shutil.copyfile(src, tmp)
            os.replace(tmp, to)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(rt.REPO, "build"))
    ap.add_argument("--only", default="", help="comma-separated labels or versions")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    rt.VERBOSE = a.v
    build = os.path.abspath(a.build)
    plugin = os.path.join(build, "lldb-plugin", "pystack-dump-lldb.so")
    if not shutil.which(LLDB) or not os.path.exists(plugin):
        report("SKIP", "lldb", "everything", "no %s or no %s" % (LLDB, plugin))
    else:
        interps = rt.discover(rt.SID_DIR_DEFAULT)
        only = [x for x in a.only.split(",") if x]
        if only:
            interps = [i for i in interps if any(i.matches(o) for o in only)]
        for i in interps:
            if i.missing:
                report("SKIP", i.label, "all", i.missing)
        interps = [i for i in interps if not i.missing]
        if any(i.chroot for i in interps):
            sync_chroot_targets(rt.SID_DIR_DEFAULT)
        scratch = tempfile.mkdtemp(prefix="pyd-lldb-")
        try:
            with concurrent.futures.ThreadPoolExecutor(max(1, a.j)) as ex:
                jobs = [ex.submit(test_interp, i, build, plugin, scratch) for i in interps]
                jobs.append(ex.submit(test_bad_cases, build, plugin, scratch, interps))
                host = [i for i in interps if not i.chroot]
                if host:
                    jobs.append(ex.submit(test_remote, build, plugin, host[-1]))
                for j in jobs:
                    j.result()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    print("lldb: %d passed, %d failed, %d skipped"
          % (_counts["PASS"], _counts["FAIL"], _counts["SKIP"]), flush=True)
    return 1 if _counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
