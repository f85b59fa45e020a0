"""arm64 (aarch64) Linux under qemu user-mode emulation: Debian's arm64
CPython 3.11, 3.13, 3.14 and 3.15 (tests/setup-arm64.sh) run the targets,
and both the arm64 build (tools/build-arm64.sh, itself run under qemu)
and this machine's x86-64 build read them live: stacks, thread names,
locals, task graphs, the sampler in every mode, and the core files qemu
writes (aarch64, without NT_FILE; and with the NT_FILE the kernel or gdb
would write added), read as on another machine; the arm64 static binary
(tools/build-static.sh --arm64) runs the dumps, task graphs and cores
under qemu with no sysroot.  Under qemu, guest
addresses are the host's and process_vm_readv is ENOSYS (the /proc/PID/mem
fallback reads); ptrace is not implemented, so --locked and --native must
refuse, saying why, instead of being tested."""

import glob
import os
import shutil
import signal
import sys
import tempfile

import pytest

from harness.cores import NOBIN_MIN, file_mappings, nobin_partial, read_core_facts, with_nt_file
from harness.dumps import compare, gt_sanity, parse_dump
from harness.interps import arm64_dir, discover_arm64
from harness.locals import check_locals_doc
from harness.procs import TOOL_TIMEOUT, host_tmp, short
from harness.results import Result, settle
from harness.target import Target, Tool, tool_run
from harness.tasks import TASKS_TARGET, compare_tasks, tasks_info, with_graph_diff
from test_greenlets import SUPPORTED_MINORS as GREENLET_MINORS, compare_greenlets, has_greenlet
from test_gdb import gdb
from test_lldb import LLDB, lldb, same, sections
from test_lldb import cli as lldb_cli
from test_sample import sample_async, sample_cpu, sample_gil, sample_split
from test_tasks import live_graph, tasks_names

# The builds that read the arm64 targets: "arm64" under qemu, and this
# machine's own ("x86-64"), as one reads an emulated process from outside.
TOOLS = ["arm64", "x86-64"]
# ... and the arm64 static binary (tools/build-static.sh --arm64, in
# ARM64_BUILD-static), under qemu with no sysroot at all, for dumps and cores
STATIC = "arm64-static"
WITH_STATIC = TOOLS + [STATIC]
DUMP_TARGETS = ["threads", "generators", "names"]
# sample mode -> (target, its check in test_sample.py)
SAMPLE_MODES = {"wall": ("sample_split", sample_split), "cpu": ("sample_cpu", sample_cpu),
                "gil": ("sample_gil", sample_gil), "async": ("sample_async", sample_async)}
# What an arm64 pystack-dump under qemu says instead of pausing threads.
NO_PTRACE = b"ptrace is not implemented here"
# qemu writes the guest's core (qemu_PROG_DATE-TIME_PID.core) into the
# working directory on a core-dumping signal it delivers; SIGQUIT, since a
# SIGABRT sent from outside kills qemu itself (a kernel core of the host
# process, not the guest's).
CORE_SIGNAL = signal.SIGQUIT
CORE_WAIT = 60.0
# The debuggers test_arm64_debuggers runs the plugins in
DEBUGGERS = ["lldb", "arm64 lldb", "gdb-multiarch"]
# gdb 13 reads a segment qemu's core lists without contents (the text
# and read-only data) as bytes that are not the file's: py-bt before 3.13
# reads the version there (3.13+ finds it in the core's own data)
GDB_QEMU_TEXT = ("gdb-multiarch 13 reads the read-only segment of qemu's core wrong "
                 "(Py_Version as 0xffffffff), so py-bt cannot tell the version before 3.13")
# lldb itself under qemu: about 15 s for one core
LLDB_QEMU_TIMEOUT = 180.0


def pytest_generate_tests(metafunc):
    if "a64" in metafunc.fixturenames:
        interps = discover_arm64()
        metafunc.parametrize("a64", interps, ids=[i.label for i in interps])


@pytest.fixture
def a64(request):
    if request.param.missing:
        pytest.skip("interpreter missing: " + request.param.missing)
    return request.param


@pytest.fixture(scope="session")
def tools(request, tool):
    """Both builds: the arm64 one (--arm64-build) run under qemu with its
    build sysroot's libraries, and the x86-64 one."""
    path = os.path.join(os.path.abspath(request.config.getoption("arm64_build")),
                        "cli", "pystack-dump")
    static = os.path.join(os.path.abspath(request.config.getoption("arm64_build")) + "-static",
                          "cli", "pystack-dump")
    qemu = discover_arm64()[0].wrap[0]
    found = {"x86-64": tool}
    if os.access(path, os.X_OK) and os.access(qemu, os.X_OK):
        found["arm64"] = Tool(path, wrap=[qemu, "-L", os.path.join(arm64_dir(), "build")])
    if os.access(static, os.X_OK) and os.access(qemu, os.X_OK):
        found[STATIC] = Tool(static, wrap=[qemu])
    return found


MISSING = {"arm64": "no arm64 build (tools/build-arm64.sh build-arm64)",
           STATIC: "no arm64 static build (tools/build-static.sh --arm64)"}


def each_tool(tools, fn, *args, names=TOOLS):
    """fn(tool, *args) -> errors for each build, as Results named by build."""
    res = []
    for name in names:
        if name not in tools:
            res.append(Result(name, "SKIP", MISSING[name]))
            continue
        errs, info = fn(tools[name], *args)
        res.append(Result(name, "FAIL" if errs else "PASS", "\n".join(errs), info=info))
    return res


def dump_errors(tool, tg, gt, flags, check):
    argv, rc, out, err, secs = tool_run(tool, flags + ["--json", str(tg.pid)])
    doc, e = parse_dump(rc, out, err, secs)
    if e:
        return ["%s: %s" % (" ".join(argv), e)], ""
    errs = check(gt, doc, tg.interp, tg.pid)
    if err:
        errs.append("%s said on stderr: %s" % (" ".join(argv), short(err)))
    return errs, "%.2fs" % secs


def dump_job(a64, target, tools):
    with Target(a64, target) as tg:
        gt = tg.settled_truth(gt_sanity)
        return each_tool(tools, dump_errors, tg, gt, [], compare, names=WITH_STATIC)


def locals_job(a64, tools):
    with Target(a64, "locals") as tg:
        gt = tg.settled_truth(gt_sanity)
        return each_tool(tools, dump_errors, tg, gt, ["--locals"], check_locals_doc)


def tasks_errors(tool, tg, a64):
    early, gt, argv, doc, e, secs = live_graph(a64, tool, tg, tasks_names(a64))
    if early:
        return [r.detail for r in early if r.status == "FAIL"], ""
    errs = with_graph_diff(e, doc, gt, a64) if e else compare_tasks(gt, doc, a64)
    return (["command: " + " ".join(argv)] + errs if errs else []), tasks_info(doc) if doc else ""


def tasks_job(a64, tools):
    with Target(a64, TASKS_TARGET) as tg:
        return each_tool(tools, tasks_errors, tg, a64, names=WITH_STATIC)


def sample_job(a64, mode, tools):
    target, check = SAMPLE_MODES[mode]
    with Target(a64, target) as tg:
        gt = tg.wait_ground_truth()

        def run(tool):
            r = check(a64, tool, tg, gt, mode)
            if isinstance(r, list):             # async: the run, then its rate
                r = r[0]
            return ([r.detail] if r.status == "FAIL" else []), r.info
        return each_tool(tools, run)


def qemu_core(a64, target, workdir):
    """The ground truth, the qemu core of target killed by CORE_SIGNAL and
    the process's /proc/PID/maps just before."""
    # SIGQUIT's default action restored: a test run started in the
    # background of a shell without job control inherits it ignored
    # (POSIX), and no shell may reset what it was started ignoring.
    wrap = ["prlimit", "--core=unlimited", "--", sys.executable, "-c",
            "import os, signal, sys; signal.signal(signal.SIGQUIT, signal.SIG_DFL); "
            "os.chdir(sys.argv[1]); os.execv(sys.argv[2], sys.argv[2:])", workdir]
    with Target(a64, target, wrap=wrap) as tg:
        gt = tg.settled_truth(gt_sanity)
        with open("/proc/%d/maps" % tg.pid) as f:
            maps = f.read()
        os.kill(tg.pid, CORE_SIGNAL)
        tg.proc.wait(timeout=CORE_WAIT)
    cores = glob.glob(os.path.join(workdir, "qemu_*.core"))
    return gt, (cores[0] if cores else None), maps


def nt_file_core(a64, core, maps, workdir):
    """(the interpreter's sysroot, a copy of qemu's core in workdir with the
    NT_FILE note the kernel or gdb writes, its files named as the guest
    sees them: without the sysroot in front)."""
    root = a64.wrap[a64.wrap.index("-L") + 1]
    nt = os.path.join(workdir, "nt-file.core")
    with_nt_file(core, nt, file_mappings(maps, read_core_facts(core)["loads"], strip=root))
    return root, nt


def core_reads(a64, core, maps, workdir):
    """[(name, core, flags, partial tids)]: the ways a core from another
    machine is read.  qemu's own core (no NT_FILE): as it is, the files
    placed from its memory; with --native --sysroot; with the interpreter
    elsewhere (--exe, --sysroot empty); 3.13+ with no binary at all (the
    runtime found by its cookie).  And the same core with the NT_FILE note
    gdb's gcore or the kernel writes on arm64, naming the files as the guest
    sees them, read with --sysroot (as a core copied off an arm64 host)."""
    root, nt = nt_file_core(a64, core, maps, workdir)
    empty = os.path.join(workdir, "empty")
    elsewhere = os.path.join(workdir, "elsewhere", os.path.basename(a64.exe))
    os.makedirs(empty)
    os.makedirs(os.path.dirname(elsewhere))
    shutil.copy(a64.exe, elsewhere)
    reads = [("qemu", core, [], ()),
             ("qemu --native", core, ["--native", "--sysroot", root], ()),
             ("qemu --exe elsewhere", core, ["--exe", elsewhere, "--sysroot", empty], ()),
             ("NT_FILE", nt, ["--sysroot", root], ()),
             ("NT_FILE --native", nt, ["--native", "--sysroot", root], ())]
    if a64.minor >= NOBIN_MIN:
        reads.append(("qemu, no binaries", core, ["--exe", "/nonexistent", "--sysroot", empty],
                      "nobin"))
    return reads


def core_errors(tool, reads, gt, a64):
    """Each read exact (partial tids aside); --native also shows native
    frames of libc among the Python ones."""
    errs, secs = [], 0.0
    for name, core, flags, partial in reads:
        partial = nobin_partial(gt, a64) if partial == "nobin" else set()
        argv, rc, out, err, secs = tool_run(tool, ["--core", core, "--json"] + flags)
        doc, e = parse_dump(rc, out, err, secs, ok=(0, 9) if partial else (0,))
        if e:
            errs.append("%s: %s: %s" % (name, " ".join(argv), e))
            continue
        if "--native" in flags:
            doc = dict(doc, threads=[dict(t, frames=[f for f in t["frames"]
                                                     if f.get("kind", "python") == "python"])
                                     for t in doc["threads"]])
            if b"libc.so.6" not in out:
                errs.append("%s: %s: no native frame in libc.so.6" % (name, " ".join(argv)))
        errs += ["%s: %s: %s" % (name, " ".join(argv), x)
                 for x in compare(gt, doc, a64, gt["pid"], partial=partial)]
    return errs, "%d reads, last %.2fs" % (len(reads), secs)


def core_job(a64, tools):
    workdir = tempfile.mkdtemp(prefix="arm64-core-", dir=host_tmp())
    try:
        gt, core, maps = qemu_core(a64, "threads", workdir)
        if not core:
            return [Result(n, "FAIL", "qemu wrote no core into %s" % workdir)
                    for n in WITH_STATIC]
        return each_tool(tools, core_errors, core_reads(a64, core, maps, workdir), gt, a64,
                         names=WITH_STATIC)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def greenlets_errors(tool, tg, gt):
    argv, rc, out, err, secs = tool_run(tool, ["--greenlets", "--json", str(tg.pid)])
    doc, e = parse_dump(rc, out, err, secs)
    if e:
        return ["%s: %s" % (" ".join(argv), e)], ""
    errs = compare_greenlets(gt, doc)
    if doc.get("greenlet_version") != gt["greenlet_version"] or not doc.get("layout_recognised"):
        errs.append("greenlet %r, layout recognised %r; expected greenlet %s, recognised"
                    % (doc.get("greenlet_version"), doc.get("layout_recognised"),
                       gt["greenlet_version"]))
    return (["command: " + " ".join(argv)] + errs if errs else []), \
        "greenlet %s, %d greenlets" % (gt["greenlet_version"], len(gt["greenlets"]))


def greenlets_job(a64, tools):
    why = has_greenlet(a64)
    if why:
        return [Result(n, "SKIP", why) for n in TOOLS]
    with Target(a64, "greenlets") as tg:
        gt = tg.wait_ground_truth()
        return each_tool(tools, greenlets_errors, tg, gt)


def debuggers_job(a64, tools, plugins):
    """py-bt all in the debuggers on a qemu core, each printing what
    pystack-dump --core prints (test_arm64_core checks that against the
    ground truth): this machine's lldb with this build's plugin, arm64's
    lldb 16 (from the build sysroot) with the arm64 build's plugin under
    qemu, and gdb-multiarch with this build's plugin on the core with
    NT_FILE added and `set sysroot` (gdb places no files in a core
    without NT_FILE)."""
    workdir = tempfile.mkdtemp(prefix="arm64-debuggers-", dir=host_tmp())
    try:
        _gt, core, maps = qemu_core(a64, "threads", workdir)
        if not core:
            return [Result(n, "FAIL", "qemu wrote no core into %s" % workdir) for n in DEBUGGERS]
        root, nt = nt_file_core(a64, core, maps, workdir)
        res = []
        for name in DEBUGGERS:
            if name not in plugins:
                res.append(Result(name, "SKIP", "no %s, or no plugin built for it" % name))
                continue
            plugin, program = plugins[name]
            if name.startswith("gdb") and a64.minor < NOBIN_MIN:
                res.append(Result(name, "SKIP", GDB_QEMU_TEXT))
                continue
            if name.startswith("gdb"):
                rc, want, err = lldb_cli(tools["x86-64"], ["--core", nt, "--sysroot", root])
                _rc, parts, raw = gdb(plugin, [a64.exe, nt], ["set sysroot " + root, "py-bt all"],
                                      program=program)
                got = parts.get(1, raw)
            else:
                rc, want, err = lldb_cli(tools["x86-64"], ["--core", core])
                _rc, out, err = lldb(plugin[0], ["py-bt all"], ["-c", core, a64.exe],
                                     timeout=LLDB_QEMU_TIMEOUT, program=program)
                got = sections(out).get("py-bt all", err)
            res.append(same(name, want, got) if rc == 0 else
                       Result(name, "FAIL", "pystack-dump --core: " + err))
        return res
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def no_ptrace_job(a64, tools):
    """The arm64 build under qemu: --locked and --native exit 9 at once,
    saying ptrace is missing; the target is left running."""
    res = []
    with Target(a64, "threads") as tg:
        tg.settled_truth(gt_sanity)
        for flag in ("--locked", "--native"):
            if "arm64" not in tools:
                res.append(Result(flag, "SKIP", "no arm64 build"))
                continue
            argv, rc, out, err, secs = tool_run(tools["arm64"], [flag, str(tg.pid)],
                                                timeout=TOOL_TIMEOUT)
            errs = []
            if rc != 9 or NO_PTRACE not in err or secs > 20:
                errs.append("%s: exit %s in %.1fs, expected 9 at once saying ptrace is "
                            "missing; stderr: %s" % (" ".join(argv), rc, secs, short(err)))
            res.append(Result(flag, "FAIL" if errs else "PASS", "\n".join(errs)))
    return res


@pytest.mark.job("arm64-dump")
@pytest.mark.parametrize("target", DUMP_TARGETS)
@pytest.mark.parametrize("which", WITH_STATIC)
def test_arm64_dump(a64, target, which, tools, jobs, request):
    """--json of a live arm64 target: every thread, name and frame as the
    target recorded them."""
    settle(jobs.result(which, dump_job, a64, target, tools), request.node)


@pytest.mark.job("arm64-locals")
@pytest.mark.parametrize("which", TOOLS)
def test_arm64_locals(a64, which, tools, jobs, request):
    """--locals: every argument and local equal to the target's repr()."""
    settle(jobs.result(which, locals_job, a64, tools), request.node)


@pytest.mark.job("arm64-tasks")
@pytest.mark.parametrize("which", WITH_STATIC)
def test_arm64_tasks(a64, which, tools, jobs, request):
    """--tasks --json: the asyncio task graph against its ground truth."""
    settle(jobs.result(which, tasks_job, a64, tools), request.node)


@pytest.mark.job("arm64-sample")
@pytest.mark.parametrize("mode", sorted(SAMPLE_MODES))
@pytest.mark.parametrize("which", TOOLS)
def test_arm64_sample(a64, mode, which, tools, jobs, request):
    """sample in each mode, checked as test_sample.py checks it."""
    settle(jobs.result(which, sample_job, a64, mode, tools), request.node)


@pytest.mark.job("arm64-core")
@pytest.mark.parametrize("which", WITH_STATIC)
def test_arm64_core(a64, which, tools, jobs, request):
    """A core qemu wrote (aarch64, no NT_FILE), and the same with NT_FILE,
    read by each build as on another machine (core_reads)."""
    settle(jobs.result(which, core_job, a64, tools), request.node)


@pytest.mark.job("arm64-greenlets")
@pytest.mark.parametrize("which", TOOLS)
def test_arm64_greenlets(a64, which, tools, jobs, request):
    """--greenlets --json (3.14+; greenlet where Debian packages it for
    arm64): every greenlet's state, parent, wait and frames."""
    if a64.minor not in GREENLET_MINORS:
        pytest.skip("--greenlets reads CPython 3.14 and 3.15")
    settle(jobs.result(which, greenlets_job, a64, tools), request.node)


@pytest.fixture(scope="session")
def debugger_plugins(request, build):
    """{debugger: ((plugin files), the debugger's argv)}: this machine's lldb
    and gdb-multiarch with this build's plugins, and the arm64 build's lldb
    plugin in arm64's lldb under qemu."""
    found = {}
    so = os.path.join(build, "lldb-plugin", "pystack-dump-lldb.so")
    if shutil.which(LLDB) and os.path.exists(so):
        found["lldb"] = ((so,), (LLDB,))
    sysroot = os.path.join(arm64_dir(), "build")
    so = os.path.join(os.path.abspath(request.config.getoption("arm64_build")),
                      "lldb-plugin", "pystack-dump-lldb.so")
    exe = os.path.join(sysroot, "usr", "lib", "llvm-16", "bin", "lldb")
    qemu = discover_arm64()[0].wrap[0]
    if os.path.exists(so) and os.access(exe, os.X_OK) and os.access(qemu, os.X_OK):
        found["arm64 lldb"] = ((so,), (qemu, "-L", sysroot, exe))
    cmds = os.path.join(build, "gdb-plugin", "pystack-dump.gdb")
    if shutil.which("gdb-multiarch") and os.path.exists(cmds):
        found["gdb-multiarch"] = ((cmds,), "gdb-multiarch")
    return found


@pytest.mark.job("arm64-debuggers")
@pytest.mark.parametrize("which", DEBUGGERS)
def test_arm64_debuggers(a64, which, tools, debugger_plugins, jobs, request):
    """The plugins in the debuggers on an arm64 core: lldb (here and
    arm64's under qemu) and gdb-multiarch; Debian's gdb has no aarch64."""
    settle(jobs.result(which, debuggers_job, a64, tools, debugger_plugins), request.node)


@pytest.mark.job("arm64-no-ptrace")
@pytest.mark.parametrize("flag", ["--locked", "--native"])
def test_arm64_no_ptrace(a64, flag, tools, jobs, request):
    """What qemu cannot do is refused, not hung on (README: arm64)."""
    settle(jobs.result(flag, no_ptrace_job, a64, tools), request.node)
