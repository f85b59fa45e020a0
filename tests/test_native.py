"""pystack-dump --native: each thread's native stack merged with its
Python stack, live (which pauses the target) and from a kernel core: the
Python frames exactly as the target saw them, native frames between them
(ctypes -> qsort -> a Python callback; ctypes -> C++ functions -> a
Python callback, named as c++filt names their symbols), the innermost
frames native, a thread that runs no Python, and --native-all keeping the
interpreter's own frames; and py-bt -n and -N in gdb and lldb printing
what --native and --native-all do; a gcore core of a chroot's process
with --sysroot."""

import difflib
import os
import re
import shutil
import time

import pytest

from harness.cores import CORE_PATTERN, kernel_core, remove, run_gcore
from harness.debuggers import LLDB, gdb_argv, lldb_argv
from harness.dumps import check_not_stopped, compare, core_doc_checks, gt_sanity
from harness.interps import TARGETS_DIR, chroot_out
from harness.procs import TOOL_TIMEOUT, crashed, host_tmp, run, short, task_states
from harness.results import Result, settle
from harness.target import Target, parse_json_out, tool_file_run

EVAL_LOOP = "_PyEval_EvalFrameDefault"
NO_BINARY_MIN = (3, 13)                 # _Py_DebugOffsets: found with no binary at all
DEBUGGER_TIMEOUT = 180


CPP_LIB = "libpyd_cpp.so"
# native_cpp.cpp's functions on the cpp thread's stack, innermost first:
# the two C++ ones by their symbols (the Itanium ABI's mangling, which
# every g++ spells alike), then the extern "C" entry.
CPP_SYMBOLS = ("_ZN3pyd5relayEPFiiEi", "_ZN3pyd5OuterIiE7throughEPFiiEi")
CPP_ENTRY = "pyd_cpp_call"
_cpp = {}


def build_cpp():
    """native_cpp.cpp built by g++ into this worker's scratch directory,
    once; its path.  Fails if the library lacks CPP_SYMBOLS."""
    if "lib" not in _cpp:
        out = os.path.join(host_tmp(), "cpp")
        os.makedirs(out, exist_ok=True)
        lib = os.path.join(out, CPP_LIB)
        rc, _, err, _ = run(["g++", "-shared", "-fPIC", "-O0", "-g", "-o", lib,
                             os.path.join(TARGETS_DIR, "native_cpp.cpp")], TOOL_TIMEOUT)
        assert rc == 0, "g++ exited %s: %s" % (rc, short(err))
        rc, syms, err, _ = run(["nm", "--defined-only", lib], TOOL_TIMEOUT)
        missing = [m for m in CPP_SYMBOLS if (" %s\n" % m).encode() not in syms]
        assert rc == 0 and not missing, "%s lacks %s: %s" % (lib, missing, short(err))
        _cpp["lib"] = lib
    return _cpp["lib"]


def cpp_library(interp):
    """The C++ library's path as interp's process sees it (a copy in the
    chroot for a chroot's interpreter)."""
    lib = build_cpp()
    if not interp.chroot:
        return lib
    inside = os.path.join(chroot_out(), "cpp-%d" % os.getpid(), CPP_LIB)
    if not os.path.exists(interp.host_path(inside)):
        os.makedirs(os.path.dirname(interp.host_path(inside)), exist_ok=True)
        shutil.copy(lib, interp.host_path(inside))
    return inside


def cpp_names():
    """The cpp thread's functions in the C++ library, innermost first: its
    symbols as c++filt prints them, then the entry."""
    if "names" not in _cpp:
        rc, out, err, _ = run(["c++filt"] + list(CPP_SYMBOLS), TOOL_TIMEOUT)
        names = out.decode("utf-8").splitlines()
        assert rc == 0 and len(names) == len(CPP_SYMBOLS), "c++filt: %s" % short(err)
        _cpp["names"] = names + [CPP_ENTRY]
    return _cpp["names"]


def cpp_errors(fr):
    """The cpp thread's frames: its C++ library's between the Python
    callback and the Python caller, named as cpp_names()."""
    py = dict((f["function"], i) for i, f in enumerate(fr) if f["kind"] == "python")
    if "cpp_callback" not in py or "call_cpp" not in py:
        return ["cpp thread: no cpp_callback() or call_cpp() among %s" % sorted(py)]
    got = [f["function"] for f in fr[py["cpp_callback"] + 1:py["call_cpp"]]
           if f["kind"] == "native" and f["library"] == CPP_LIB]
    if got != cpp_names():
        return ["cpp thread: frames of %s %s, expected (c++filt) %s"
                % (CPP_LIB, got, cpp_names())]
    return []


def python_only(doc):
    """The document with each thread's Python frames only (and threads
    that have some), as a dump without --native would print them."""
    d = dict(doc)
    d["threads"] = []
    for t in doc["threads"]:
        py = [dict((k, v) for k, v in f.items() if k != "kind")
              for f in t["frames"] if f.get("kind") == "python"]
        if py:
            d["threads"].append(dict(t, frames=py))
    return d


def native_errors(gt, doc, all_frames):
    """What is wrong with a --native (or --native-all) document."""
    errs = []
    for t in doc["threads"]:
        for f in t["frames"]:
            if f.get("kind") not in ("python", "native"):
                errs.append("thread %s: a frame of kind %r" % (t["tid"], f.get("kind")))
                return errs
            if f["kind"] == "native" and not isinstance(f.get("address"), int):
                errs.append("thread %s: native frame without an address: %r" % (t["tid"], f))
                return errs
    names = dict((t["tid"], t["name"]) for t in gt["threads"])
    loops = 0
    for t in doc["threads"]:
        fr = t["frames"]
        loops += sum(1 for f in fr if f["kind"] == "native" and f["function"]
                     and f["function"].startswith(EVAL_LOOP))
        mangled = [f["function"] for f in fr
                   if f["kind"] == "native" and (f["function"] or "").startswith("_Z")]
        if mangled:
            errs.append("thread %s: mangled names %s" % (t["tid"], mangled))
        if t["tid"] not in names:
            # A thread that runs no Python: pthread_create(sleep).
            if not fr or any(f["kind"] == "python" for f in fr):
                errs.append("thread %s (no Python) has frames %r" % (t["tid"], fr[:3]))
            elif not any("sleep" in (f["function"] or "") for f in fr):
                errs.append("thread %s (no Python): no sleep among %s"
                            % (t["tid"], [f["function"] for f in fr]))
            continue
        if fr and fr[0]["kind"] != "native":
            errs.append("thread %r: innermost frame %r is not native" % (names[t["tid"]], fr[0]))
        if names[t["tid"]] == "cpp":
            errs += cpp_errors(fr)
        if names[t["tid"]] == "callback":
            py = [i for i, f in enumerate(fr) if f["kind"] == "python"]
            inner = [i for i in py if fr[i]["function"] == "compare"]
            outer = [i for i in py if fr[i]["function"] == "sort_with_callback"]
            between = fr[inner[0] + 1:outer[0]] if inner and outer else []
            if not any("qsort" in (f["function"] or "") for f in between):
                errs.append("callback thread: no qsort between compare() and "
                            "sort_with_callback(): %s" % [f.get("function") for f in between])
    if not any(t["tid"] not in names for t in doc["threads"]):
        errs.append("the thread that runs no Python is missing")
    if all_frames and not loops:
        errs.append("--native-all shows no %s frame" % EVAL_LOOP)
    if not all_frames and loops:
        errs.append("--native shows %d %s frames (only --native-all should)" % (loops, EVAL_LOOP))
    return errs


def native_job(interp, tool):
    """native.py: --native and --native-all live, then from a kernel core."""
    res = []
    with Target(interp, "native", wrap=["prlimit", "--core=unlimited", "--"],
                args=[cpp_library(interp)]) as tg:
        gt = tg.settled_truth(gt_sanity)
        for name, flag in (("live", "--native"), ("live --native-all", "--native-all")):
            argv = [tool.path, flag, "--json", str(tg.pid)]
            rc, out, err, secs = run(argv, TOOL_TIMEOUT)
            doc, e = parse_json_out(out) if rc == 0 else (None, "exit %s: %s" % (rc, short(err)))
            errs = [e] if e else (compare(gt, python_only(doc), interp, tg.pid)
                                  + native_errors(gt, doc, flag == "--native-all"))
            errs += check_not_stopped(tg.pid)
            res.append(Result(name, "FAIL" if errs else "PASS", "\n".join(errs)))
            tg.wait_settled()  # resumed threads restart their sleeps: runnable for a moment
        argv = [tool.path, "--native", "--no-source", str(tg.pid)]
        rc, out, err, secs = run(argv, TOOL_TIMEOUT)
        text = out.decode("utf-8", "replace")
        ok = (rc == 0 and "  File " in text and "  #0 " in text and "qsort" in text
              and " in %s (%s)" % (cpp_names()[0], CPP_LIB) in text)
        res.append(Result("text", "PASS" if ok else "FAIL",
                          "" if ok else "exit %s:\n%s" % (rc, text[-1500:])))
        res += gcore_results(interp, tool, tg, gt)
        cerr = CORE_PATTERN.ensure()
        if cerr:
            res.append(Result("core", "SKIP", cerr))
            return res
        core = kernel_core(tg.proc, tg.pid, interp.chroot)
        try:
            args = ["--core", core] + (["--sysroot", interp.chroot] if interp.chroot else [])
            argv, rc, out, err = tool_file_run(tool, args + ["--native", "--json"])
            if crashed(rc) or rc != 0:
                errs = ["%s exited %s: %s" % (" ".join(argv), rc, short(err))]
            else:
                doc, e = parse_json_out(out)
                errs = [e] if e else (core_doc_checks(doc)
                                      + compare(gt, python_only(doc), interp, tg.pid)
                                      + native_errors(gt, doc, False))
            res.append(Result("core", "FAIL" if errs else "PASS", "\n".join(errs)))
        finally:
            remove(core)
    return res


NO_UNWIND = "could not be unwound"


def gcore_sysroot_errors(interp, tool, core, gt, pid, sysroot, found):
    """--native --core CORE --sysroot DIR on a gcore core of a chroot's
    process (gdb writes the host's paths): native frames where the
    libraries are found (found), else each thread's native_error and a
    note on stderr; the Python frames either way."""
    argv, rc, out, err = tool_file_run(tool, ["--core", core, "--sysroot", sysroot,
                                              "--native", "--json"])
    if rc != 0:
        return ["%s exited %s: %s" % (" ".join(argv), rc, short(err))]
    doc, e = parse_json_out(out)
    if e:
        return [e]
    errs = compare(gt, python_only(doc), interp, pid)
    said = NO_UNWIND in err.decode("utf-8", "replace")
    for t in doc["threads"]:
        native = [f for f in t["frames"] if f["kind"] == "native"]
        if found and (t["native_error"] or not native):
            errs.append("thread %s: no native frames (native_error %r)"
                        % (t["tid"], t["native_error"]))
        if not found and (native or not t["native_error"]):
            errs.append("thread %s: %d native frames, native_error %r without its "
                        "libraries" % (t["tid"], len(native), t["native_error"]))
    main = [t for t in doc["threads"] if t["tid"] == pid]
    if found and not any("sleep" in (f.get("function") or "")
                         for t in main for f in t["frames"] if f["kind"] == "native"):
        errs.append("main thread: no sleep among its native frames")
    if said != (not found):
        errs.append("stderr %s the note %r: %s" % ("has" if said else "lacks", NO_UNWIND,
                                                   short(err)))
    return errs


def gcore_results(interp, tool, tg, gt):
    """The gcore cases of native_job (chroot interpreters only)."""
    names = ("gcore --sysroot", "gcore --sysroot, no libraries")
    if not interp.chroot:
        return [Result(n, "SKIP", "a gcore core of a host process needs no --sysroot")
                for n in names]
    if interp.minor < NO_BINARY_MIN:
        # bullseye-3.9: without binaries no _PyRuntime; with them (gdb
        # names them by their host path) the main thread's sleep is
        # missing from its native frames: not worked out yet
        return [Result(n, "SKIP", "a chroot target before 3.13 has no debug offsets to "
                       "read without its binaries") for n in names]
    core = gcore(tg.pid, os.path.join(host_tmp(), "native-%s.core" % tg.run_id))
    if core is None:
        return [Result(n, "FAIL", "gcore wrote no core") for n in names]
    try:
        res = []
        for name, sysroot, found in zip(names, (interp.chroot, "/nonexistent"), (True, False)):
            errs = gcore_sysroot_errors(interp, tool, core, gt, tg.pid, sysroot, found)
            res.append(Result(name, "FAIL" if errs else "PASS", "\n".join(errs)))
        return res
    finally:
        remove(core)


# 3.12+: python -X perf's trampolines (sys.activate_stack_trampoline)
PERF_MIN = (3, 12)


def perf_errors(doc):
    """Under perf trampolines each thread's native stack goes on past them
    to where the thread began (its outermost frame native: _start,
    clone3), and --native-all shows them."""
    errs = []
    for t in doc["threads"]:
        fr = t["frames"]
        if any(f["kind"] == "python" for f in fr) and fr[-1]["kind"] != "native":
            errs.append("thread %s: the native stack ends inside it (outermost frame %r)"
                        % (t["tid"], fr[-1].get("function")))
    return errs


@pytest.mark.interps(lambda i: i.minor >= PERF_MIN and not i.ft)
def test_native_perf_trampolines(interp, tool, request):
    """native.py with every Python call through a perf trampoline (as
    python -X perf): the merged stacks as without, and native frames out
    to each thread's start; --native-all names the trampolines."""
    errs = []
    with Target(interp, "native", args=[cpp_library(interp), "perf"]) as tg:
        gt = tg.settled_truth(gt_sanity)
        for flag in ("--native", "--native-all"):
            argv = [tool.path, flag, "--json", str(tg.pid)]
            rc, out, err, secs = run(argv, TOOL_TIMEOUT)
            doc, e = parse_json_out(out) if rc == 0 else (None, "exit %s: %s" % (rc, short(err)))
            if e:
                errs.append("%s: %s" % (" ".join(argv), e))
                continue
            errs += ["%s: %s" % (flag, x) for x in
                     compare(gt, python_only(doc), interp, tg.pid)
                     + native_errors(gt, doc, flag == "--native-all") + perf_errors(doc)]
            named = sum(1 for t in doc["threads"] for f in t["frames"]
                        if f.get("function") == "_Py_trampoline_func_start")
            if (flag == "--native-all") != bool(named):
                errs.append("%s shows %d trampoline frames" % (flag, named))
            tg.wait_settled()
    settle(Result("perf trampolines", "FAIL" if errs else "PASS", "\n".join(errs)),
           request.node)


@pytest.mark.job("native")
@pytest.mark.parametrize("kind", ["live", "live --native-all", "text", "core",
                                  "gcore --sysroot", "gcore --sysroot, no libraries"])
def test_native(interp, kind, tool, jobs, request):
    """The merged native and Python stacks of native.py."""
    settle(jobs.result(kind, native_job, interp, tool), request.node)


def thread_blocks(text):
    """{tid: the lines of pystack-dump's paragraph for that thread} of a
    report, or of a debugger's session that printed such paragraphs."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r'Thread (\d+)( "| \((?!Thread))', line)
        if m:
            cur = int(m.group(1))
            out[cur] = [line]
        elif cur is not None and (line.startswith(" ") or line.startswith("Traceback")):
            out[cur].append(line)
        else:
            cur = None
    return out


VIEW_MARK = "@@pyd-view %s@@"      # gdb: printed before each view's py-bt
LLDB_PYBT = re.compile(r"^\(lldb\) py-bt (-\w)$")


def debugger_native(debugger, build, target, ntasks, flags):
    """({flag: text of py-bt FLAG on every thread}, or None; why not), from
    one session that prints every view of the same stopped target; target:
    the debugger's arguments for a pid or a core."""
    if debugger == "gdb":
        cmds = os.path.join(build, "gdb-plugin", "pystack-dump.gdb")
        if not shutil.which("gdb") or not os.path.exists(cmds):
            return None, "no gdb or no gdb plugin in the build"
        argv = gdb_argv() + target + ["-x", cmds]
        for flag in flags:
            argv += ["-ex", "echo %s\\n" % (VIEW_MARK % flag),
                     "-ex", "thread apply all py-bt " + flag]
    else:
        so = os.path.join(build, "lldb-plugin", "pystack-dump-lldb.so")
        if not shutil.which(LLDB) or not os.path.exists(so):
            return None, "no %s or no lldb plugin in the build" % LLDB
        argv = lldb_argv() + ["-o", "plugin load " + so] + target
        for flag in flags:
            for i in range(1, ntasks + 1):
                argv += ["-o", "thread select %d" % i, "-o", "py-bt " + flag]
    rc, out, err, _ = run(argv, DEBUGGER_TIMEOUT)
    return split_views(debugger, out.decode("utf-8", "replace"), flags), \
        "exit %s: %s" % (rc, short(err))


def split_views(debugger, text, flags):
    """{flag: the lines of the session that flag's py-bt printed}: gdb's
    after each view's mark, lldb's after each echoed `py-bt FLAG`."""
    views, cur = dict((f, []) for f in flags), None
    for line in text.splitlines():
        m = LLDB_PYBT.match(line) if debugger == "lldb" else None
        mark = [f for f in flags if line == VIEW_MARK % f]
        if m or mark:
            cur = m.group(1) if m else mark[0]
        if cur in views:
            views[cur].append(line)
    return dict((f, "\n".join(lines)) for f, lines in views.items())


def same_threads(want_text, got_text, debugger):
    """Errors where the debugger's threads differ from pystack-dump's."""
    want, got = thread_blocks(want_text), thread_blocks(got_text)
    errs = [] if len(want) >= 5 else ["pystack-dump showed %d threads" % len(want)]
    for tid in sorted(want):
        if got.get(tid) != want[tid]:
            diff = "\n".join(list(difflib.unified_diff(want[tid], got.get(tid, []),
                                                       "pystack-dump", debugger,
                                                       lineterm=""))[:40])
            errs.append("thread %d differs:\n%s" % (tid, diff))
    if not errs and set(got) != set(want):
        errs.append("threads: %s printed %s, pystack-dump %s"
                    % (debugger, sorted(got), sorted(want)))
    return errs


def gcore(pid, path):
    """A core of pid written by gdb's gcore; None if it could not."""
    return run_gcore(pid, path)[0]


# py-bt's flag for each of pystack-dump's views
VIEWS = (("-n", "--native"), ("-N", "--native-all"))


def views_differ(debugger, build, tool, target, cli_target, where, settled):
    """Errors where py-bt -n (-N) in the debugger differs from
    pystack-dump --native (--native-all), every thread; None, why if the
    debugger cannot run.  settled() waits for a live target's threads to
    sleep again after pystack-dump paused them.  The debugger visits as
    many threads as --native-all lists."""
    # Each reads every thread's state as the OS had it before it stopped
    # the target: the last one's detach restarted the blocked threads'
    # system calls.  The debugger prints both views in one session.
    want = {}
    for flag, view in VIEWS:
        settled()
        rc, out, err, _ = run([tool.path, view] + cli_target, TOOL_TIMEOUT)
        want[flag] = out.decode("utf-8", "replace")
    settled()
    ntasks = len(thread_blocks(want["-N"]))
    got, why = debugger_native(debugger, build, target, ntasks, [f for f, _ in VIEWS])
    if got is None:
        return None, why
    errs = []
    for flag, view in VIEWS:
        errs += ["%s py-bt %s vs %s: %s" % (where, flag, view, e)
                 for e in same_threads(want[flag], got[flag], debugger)]
    if errs:
        errs.append("%s said: %s" % (debugger, why))
    return errs, None


@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
def test_native_debuggers(interp, debugger, tool, build, request):
    """py-bt -n and py-bt -N in gdb and lldb print every thread of
    native.py (the ctypes callback, the thread that runs no Python, those
    blocked in sleep, a lock and select) as pystack-dump --native and
    --native-all do: the same frames, names, libraries and lines; live,
    then on a gcore core."""
    name = "py-bt -n/-N = --native/--native-all"
    if interp.chroot:
        settle(Result(name, "SKIP",
                      "%s loads the host's libraries for a chroot's process: its native "
                      "frames are unreliable (README)" % debugger), request.node)
        return
    with Target(interp, "native", args=[cpp_library(interp)]) as tg:
        tg.settled_truth(gt_sanity)
        errs, why = views_differ(debugger, build, tool, ["-p", str(tg.pid)], [str(tg.pid)],
                                 "live", tg.wait_settled)
        if errs is None:
            settle(Result(name, "SKIP", why), request.node)
            return
        core = gcore(tg.pid, os.path.join(host_tmp(), "native-%s.core" % tg.run_id))
    if core is None:
        errs.append("gcore wrote no core")
    else:
        try:
            exe = os.path.realpath(interp.host_path(interp.exe))
            target = ["-c", core, exe] if debugger == "gdb" else [exe, "-c", core]
            errs += views_differ(debugger, build, tool, target, ["--core", core], "core",
                                 lambda: None)[0] or []
        finally:
            remove(core)
    settle(Result(name, "FAIL" if errs else "PASS", "\n".join(errs)), request.node)


SUBINTERP_MIN = (3, 14)    # concurrent.interpreters


def asleep(name):
    """time.sleep's native frames: clock_nanosleep, or select before 3.11."""
    return "sleep" in name or "select" in name


def subinterp_errors(gt, doc, pid, caller="_call", calls=("interp_call", "_run_in_interpreter"),
                     script=()):
    """The main thread's two thread states, each with its own native
    frames: interpreter 1's napper over the sleep, interpreter 0's caller
    (Interpreter._call; outer, before 3.14) over the native calls into
    it."""
    mine = [t for t in doc["threads"] if t["tid"] == pid]
    by_interp = dict((t["interpreter"], t) for t in mine)
    if sorted(by_interp) != [0, 1]:
        return ["the main thread should be in interpreters 0 and 1, is in %s"
                % sorted(by_interp)]
    errs = []
    names = dict((i, [(f["kind"], f.get("function") or "") for f in t["frames"]])
                 for i, t in by_interp.items())
    inner = names[1]
    want = gt["napper"]
    py1 = [f for f in by_interp[1]["frames"] if f["kind"] == "python"]
    got = [(f["function"], f["line"]) for f in py1]
    if got[:1] != [(want["function"], want["line"])] or \
            [n for n, _ in got[1:]] != list(script):
        errs.append("interpreter 1: Python frames %s, expected napper at line %d%s"
                    % (got, want["line"], " under %s" % "/".join(script) if script else ""))
    if not inner or inner[0][0] != "native" or \
            not any(asleep(n) for k, n in inner if k == "native"):
        errs.append("interpreter 1: no native sleep inside napper: %s" % inner)
    outer = names[0]
    if any(asleep(n) for k, n in outer if k == "native"):
        errs.append("interpreter 0 shows interpreter 1's sleep: %s" % outer)
    call = [i for i, (k, n) in enumerate(outer) if k == "python" and n == caller]
    native_call = [i for i, (k, n) in enumerate(outer)
                   if k == "native" and any(c in n for c in calls)]
    if not call or not native_call or max(native_call) > call[0]:
        errs.append("interpreter 0: the call into interpreter 1 (%s) is not inside %s "
                    "(innermost first): %s" % ("/".join(calls), caller, outer))
    return errs


# (target, caller, native calls into interpreter 1) by how the thread
# enters it: Interpreter.call (3.14+), _xxsubinterpreters.run_string
# (3.8-3.12; _interpreters.run_string, 3.13)
# and interpreter 1's Python frames outside napper (run_string's script)
SUBINTERP_WAYS = {"subinterp": ("_call", ("interp_call", "_run_in_interpreter"), ()),
                  "subinterp_old": ("outer", ("interp_run_string", "_run_script"),
                                    ("<module>",))}


def subinterp_target(interp):
    if interp.minor >= SUBINTERP_MIN:
        return "subinterp", "from concurrent import interpreters"
    return "subinterp_old", "import _xxsubinterpreters" if interp.minor < (3, 13) else "import _interpreters"


@pytest.mark.interps(lambda i: i.minor >= (3, 8) and not i.ft)
def test_native_subinterpreters(interp, tool, request):
    """One OS thread in two interpreters (Interpreter.call; run_string
    before 3.13, where the runs are told apart by their _PyCFrame chain,
    3.10-3.11, or by the interpreters' order, 3.8-3.9): --native gives
    each thread state the native frames of its own runs, in JSON and
    text."""
    target, probe = subinterp_target(interp)
    rc, _, err, _ = run(interp.argv(["-c", probe]), TOOL_TIMEOUT)
    if rc != 0:
        settle(Result("sub-interpreters", "SKIP", "this %s cannot: %s" % (interp.label, probe)),
               request.node)
        return
    caller, calls, script = SUBINTERP_WAYS[target]
    errs = []
    with Target(interp, target) as tg:
        gt = tg.wait_ground_truth()
        # napper wrote it on the line before its sleep: asleep by now?
        deadline = time.time() + 10
        while time.time() < deadline and task_states(tg.pid).get(tg.pid) != "S":
            time.sleep(0.05)
        time.sleep(0.05)
        argv = [tool.path, "--native", "--json", str(tg.pid)]
        rc, out, err, secs = run(argv, TOOL_TIMEOUT)
        doc, e = parse_json_out(out) if rc == 0 else (None, "exit %s: %s" % (rc, short(err)))
        errs += ["%s: %s" % (" ".join(argv), e)] if e else \
            subinterp_errors(gt, doc, tg.pid, caller, calls, script)
        argv = [tool.path, "--native", "--no-source", str(tg.pid)]
        rc, out, err, secs = run(argv, TOOL_TIMEOUT)
        text = out.decode("utf-8", "replace")
        block = text.split("in interpreter 1", 1)[-1]
        if rc != 0 or "napper" not in block or "sleep" not in block and "select" not in block:
            errs.append("text: interpreter 1's block lacks napper or its sleep:\n%s" % text)
    settle(Result("sub-interpreters", "FAIL" if errs else "PASS", "\n".join(errs)),
           request.node)


def pool_errors(gt, doc):
    """The pool worker's two thread states: the sub-interpreter's with
    work -> builtin_sum -> gen -> the sleep, innermost first; interpreter
    0's with neither builtin_sum nor the sleep."""
    mine = [t for t in doc["threads"] if t["tid"] == gt["tid"]]
    by_interp = dict((t["interpreter"], t) for t in mine)
    if len(by_interp) != 2 or 0 not in by_interp:
        return ["the pool's worker %d should be in interpreter 0 and one other, is in %s"
                % (gt["tid"], sorted(by_interp))]
    sub = [i for i in by_interp if i != 0][0]
    errs = []
    frames = dict((i, [(f["kind"], f.get("function") or "", f.get("line"))
                       for f in t["frames"]]) for i, t in by_interp.items())
    inner = frames[sub]
    py = [(n, line) for k, n, line in inner if k == "python"]
    want = [(gt["gen"]["function"], gt["gen"]["line"]), (gt["work"]["function"],
                                                         gt["work"]["line"])]
    if py[:2] != want:
        errs.append("interpreter %d: Python frames %s, expected %s innermost" % (sub, py, want))
    where = dict((n, i) for i, (k, n, _) in reversed(list(enumerate(inner))))
    order = [where.get(n) for n in ("gen", "builtin_sum", "work")]
    summed = [i for i, (k, n, _) in enumerate(inner) if k == "native" and
              n.startswith("builtin_sum")]
    if not summed or None in (order[0], order[2]) or not order[0] < summed[0] < order[2]:
        errs.append("interpreter %d: builtin_sum is not between gen and work: %s"
                    % (sub, inner))
    if not any(k == "native" and "sleep" in n for k, n, _ in inner[:where.get("gen", 0)]):
        errs.append("interpreter %d: no native sleep inside gen: %s" % (sub, inner))
    outer = frames[0]
    for k, n, _ in outer:
        if k == "native" and (n.startswith("builtin_sum") or "sleep" in n):
            errs.append("interpreter 0 shows the sub-interpreter's %s: %s" % (n, outer))
    return errs


@pytest.mark.interps(lambda i: i.minor >= SUBINTERP_MIN and not i.ft)
def test_native_interpreter_pool(interp, tool, request):
    """An InterpreterPoolExecutor's worker: --native-all puts the C call
    between the sub-interpreter's Python frames (builtin_sum between work
    and gen) in its listing, none of it under interpreter 0's."""
    # Early 3.15 alphas cannot call a function of __main__ there (the
    # sub-interpreter's __main__ is not the script's).
    probe = ("from concurrent.futures import InterpreterPoolExecutor\n"
             "def f():\n    return 1\n"
             "with InterpreterPoolExecutor(1) as ex:\n    ex.submit(f).result()\n")
    rc, _, err, _ = run(interp.argv(["-c", probe]), TOOL_TIMEOUT)
    if rc != 0:
        settle(Result("interpreter-pool", "SKIP", "this %s's InterpreterPoolExecutor cannot "
                      "run a function of __main__: %s" % (interp.label, short(err, 200))),
               request.node)
        return
    errs = []
    with Target(interp, "subinterp_pool") as tg:
        gt = tg.wait_ground_truth()
        deadline = time.time() + 10
        while time.time() < deadline and task_states(tg.pid).get(gt["tid"]) != "S":
            time.sleep(0.05)
        time.sleep(0.05)
        argv = [tool.path, "--native-all", "--json", str(tg.pid)]
        rc, out, err, secs = run(argv, TOOL_TIMEOUT)
        doc, e = parse_json_out(out) if rc == 0 else (None, "exit %s: %s" % (rc, short(err)))
        errs += ["%s: %s" % (" ".join(argv), e)] if e else pool_errors(gt, doc)
    settle(Result("interpreter-pool", "FAIL" if errs else "PASS", "\n".join(errs)),
           request.node)
