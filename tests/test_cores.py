"""--core: cores written by gcore and by the kernel (also with no binaries
at hand on 3.13+), against the ground truth of the target they were taken
of."""

import fcntl
import os
import subprocess

import pytest

from harness.cores import (CORE_PATTERN, GCORE, GCORE_TARGET_ENV, NOBIN_MIN, gcore_slot,
                           kernel_core, nobin_partial, read_core_facts, remove, run_gcore,
                           unreadable_stacks)
from harness.dumps import compare, core_doc_checks, gt_sanity
from harness.procs import crashed, host_tmp, short
from harness.results import Result, settle
from harness.target import Target, parse_json_out, tool_file_run


CORE_TARGETS = ["threads", "names", "generators"]   # gcore and kernel cores, every interpreter

RECOVER_MIN = (3, 12)


def gcore_job(interp, target, tool):
    """gcore of a live target, decoded with --core and compared with the
    ground truth. Threads whose C stack gcore could not read (gdb 13 on sid:
    guard pages inside thread stack mappings) are read back from their data
    stack and marked recovered (3.12+), or say so (error) and hold the
    innermost frames; every other thread must match exactly."""
    name = "gcore:" + target
    with Target(interp, target, env_extra=GCORE_TARGET_ENV) as tg:
        gt = tg.settled_truth(gt_sanity)
        prefix = os.path.join(host_tmp(), "gcore-" + tg.run_id)
        with gcore_slot():                    # at most GCORE_PARALLEL cores on disk
            core, warned, err = run_gcore(tg.pid, prefix)
            if err:
                return [Result(name, "FAIL", err)]
            try:
                size = os.path.getsize(core)
                facts = read_core_facts(core)
                argv, rc, out, err = tool_file_run(tool, ["--core", core, "--json"])
            finally:
                os.unlink(core)
    unreadable = unreadable_stacks(facts, warned)
    cmd = " ".join(argv)
    if crashed(rc):
        return [Result(name, "FAIL", "%s: crashed or timed out (status %s); "
                       "stderr: %s" % (cmd, rc, short(err)))]
    if rc not in (0, 9):
        return [Result(name, "FAIL", "%s exited %d; stderr: %s"
                       % (cmd, rc, short(err)))]
    doc, e = parse_json_out(out)
    if e:
        return [Result(name, "FAIL", "%s: %s" % (cmd, e))]
    stats = {}
    errs = core_doc_checks(doc)
    # 3.12+ keeps the Python frames on the thread's data stack: a thread
    # whose C stack the core lacks is read back whole (exactly: compare()
    # wants a stack with no error to match) and says so -- unless a
    # generator run from C is among the lost frames (its frame is in the
    # generator, and the recursion counter says one is missing): then it
    # keeps its error and its innermost frames.  Every thread of
    # threads.py reads back.
    errs += compare(gt, doc, interp, tg.pid, partial=unreadable, stats=stats)
    if interp.minor >= RECOVER_MIN:
        for t in doc.get("threads", []):
            # generators.py: the walks of these stop at a generator's or a
            # coroutine's frame run from C; the counter proves them whole.
            whole = target == "threads" or (target == "generators" and t.get("name") in
                                             ("generator", "coroutine", "genexpr", "asyncio"))
            if (t["tid"] in unreadable and whole
                    and t.get("recovered") is not True):
                errs.append("thread %d: C stack not in the core, yet not read back "
                            "from its data stack" % t["tid"])
            if t["tid"] not in unreadable and t.get("recovered"):
                errs.append("thread %d: marked recovered, but its C stack is in the core"
                            % t["tid"])
    nerr = sum(1 for t in doc.get("threads", []) if t.get("error") is not None)
    if rc == 9 and not nerr:
        errs.append("exit 9 but no thread has an error")
    if rc == 0 and nerr:
        errs.append("exit 0 but %d thread(s) have an error" % nerr)
    if rc == 9 and "could not be read" not in err.decode("utf-8", "replace"):
        errs.append("exit 9 without saying which stacks could not be read: %s" % short(err))
    info = ("%d thread(s) exact (%d read back from the data stack), %d with C stack "
            "unreadable in the core: error set + innermost frames; gcore: %d unreadable "
            "region(s), %d MB"
            % (stats.get("exact", 0),
               sum(1 for t in doc.get("threads", []) if t.get("recovered")),
               stats.get("partial", 0), len(warned), size >> 20))
    if errs:
        errs.insert(0, "command: %s (core deleted; C stack unreadable for tids %s)"
                    % (cmd, sorted(unreadable) or "none"))
    return [Result(name, "FAIL" if errs else "PASS", "\n".join(errs), info=info)]


# How the cores of a crash are kept: systemd-coredump compresses them with
# zstd (lz4 or xz on older systems); people gzip them to move them.  The
# command that makes each, and the file's suffix.
PACKERS = {"zstd": (["zstd", "-q", "-1", "-c"], ".zst"), "lz4": (["lz4", "-q", "-1", "-c"], ".lz4"),
           "xz": (["xz", "-0", "-T2", "-c"], ".xz"), "gzip": (["gzip", "-1", "-c"], ".gz")}
PACKED_TARGET = "threads"
# Decompressing is the same code whatever the Python: a host interpreter
# and a chroot's (--sysroot) check it; the other kernel-core checks run on
# all (compressing and reading back four copies of each of 19 cores cost
# some 230 worker-seconds a suite).
PACKED_INTERPS = ("pyenv-3.12", "sid-3.15")


def packed_results(gt, interp, tg, core, tool):
    """The kernel core compressed each way: --core of the compressed file
    gives the ground truth, and its header says how it was compressed; a
    zstd file cut short is refused (exit 11) saying so."""
    results = []
    sysroot = ["--sysroot", interp.chroot] if interp.chroot else []
    for fmt, (cmd, suffix) in sorted(PACKERS.items()):
        name = "kcore-%s:%s" % (fmt, PACKED_TARGET)
        # beside the others' files, not among the kernel's cores
        packed = os.path.join(host_tmp(), os.path.basename(core) + suffix)
        try:
            with open(core, "rb") as src, open(packed, "wb") as dst:
                rc = subprocess.run(cmd, stdin=src, stdout=dst).returncode
            if rc != 0:
                results.append(Result(name, "FAIL", "%s exited %s" % (" ".join(cmd), rc)))
                continue
            argv, rc, out, err = tool_file_run(tool, ["--core", packed] + sysroot + ["--json"])
            doc, e = parse_json_out(out) if rc == 0 else (None, "exit %s: %s" % (rc, short(err)))
            errs = ["%s: %s" % (" ".join(argv), e)] if e else (
                core_doc_checks(doc) + compare(gt, doc, interp, tg.pid))
            argv, rc, out, err = tool_file_run(tool, ["--core", packed] + sysroot)
            if not out.startswith(b"Core file %s, %s-compressed (" % (packed.encode(),
                                                                       fmt.encode())):
                errs.append("%s: the header does not say %s: %s" % (" ".join(argv), fmt,
                                                                    short(out, 200)))
            if fmt == "zstd":
                with open(packed, "rb") as f:
                    head = f.read(os.path.getsize(packed) // 2)
                with open(packed, "wb") as f:
                    f.write(head)
                argv, rc, out, err = tool_file_run(tool, ["--core", packed] + sysroot)
                if rc != 11 or b"cut short" not in err:
                    errs.append("%s (half the file): exit %s, expected 11 saying it is cut "
                                "short: %s" % (" ".join(argv), rc, short(err)))
            results.append(Result(name, "FAIL" if errs else "PASS", "\n".join(errs),
                                  info="%d MB compressed to %d KB"
                                  % (os.path.getsize(core) >> 20,
                                     os.path.getsize(packed) >> 10)))
        finally:
            remove(packed)
    return results


def kcore_job(interp, target, tool):
    """A kernel-written core (SIGABRT, RLIMIT_CORE unlimited) of the target:
    --core (with --sysroot for the chroot, like a core copied off a
    container) must match the ground truth exactly; on 3.13+ also with the
    binaries hidden (--exe /nonexistent --sysroot EMPTY)."""
    names = ["kcore:" + target] + (["kcore-nobin:" + target] if interp.minor >= NOBIN_MIN
                                   else [])
    packed = (["kcore-%s:%s" % (f, target) for f in sorted(PACKERS)]
              if target == PACKED_TARGET and interp.label in PACKED_INTERPS else [])
    err = CORE_PATTERN.ensure()
    if err:
        return [Result(n, "SKIP", err) for n in names + packed]
    with Target(interp, target, wrap=["prlimit", "--core=unlimited", "--"]) as tg:
        gt = tg.settled_truth(gt_sanity)
        core = kernel_core(tg.proc, tg.pid, interp.chroot)
        try:
            size = os.path.getsize(core)
            results = []
            empty = os.path.join(host_tmp(), "empty-sysroot")
            os.makedirs(empty, exist_ok=True)
            for n in names:
                if n.startswith("kcore-nobin:"):
                    args = ["--core", core, "--exe", "/nonexistent", "--sysroot", empty, "--json"]
                else:
                    args = ["--core", core] + (["--sysroot", interp.chroot] if interp.chroot
                                               else []) + ["--json"]
                argv, rc, out, err = tool_file_run(tool, args)
                cmd = " ".join(argv)
                errs = []
                partial = (nobin_partial(gt, interp) if n.startswith("kcore-nobin:")
                           else set())
                if crashed(rc) or rc not in ((0, 9) if partial else (0,)):
                    errs.append("%s exited %s (expected 0); stderr: %s" % (cmd, rc, short(err)))
                else:
                    doc, e = parse_json_out(out)
                    if e:
                        errs.append("%s: %s" % (cmd, e))
                    else:
                        errs += core_doc_checks(doc)
                        errs += compare(gt, doc, interp, tg.pid, partial=partial)
                    if n.startswith("kcore:") and b"build-id" in err:
                        errs.append("%s warned about build-ids (a wrong library?): %s"
                                    % (cmd, short(err)))
                    if errs:
                        errs.insert(0, "command: %s (core deleted)" % cmd)
                results.append(Result(n, "FAIL" if errs else "PASS",
                                      "\n".join(errs),
                                      info="core %d MB, %d MB on disk"
                                      % (size >> 20, (os.stat(core).st_blocks * 512) >> 20)))
            if packed:
                results += packed_results(gt, interp, tg, core, tool)
            return results
        finally:
            remove(core)


@pytest.mark.parametrize("target", CORE_TARGETS)
def test_gcore(interp, target, tool, request):
    """gdb's gcore of the live target: --core gives its ground truth."""
    if not GCORE:
        pytest.skip("gcore not installed (Debian package gdb)")
    settle(gcore_job(interp, target, tool)[0], request.node)


@pytest.mark.job("kcore")
@pytest.mark.parametrize("target", CORE_TARGETS)
def test_kcore(interp, target, tool, jobs, request):
    """A core the kernel wrote (SIGABRT): --core gives its ground truth."""
    settle(jobs.result("kcore:" + target, kcore_job, interp, target, tool), request.node)


@pytest.mark.job("kcore")
@pytest.mark.interps(lambda i: i.minor >= NOBIN_MIN)
@pytest.mark.parametrize("target", CORE_TARGETS)
def test_kcore_nobin(interp, target, tool, jobs, request):
    """The same kernel core with no binary at hand (3.13+: the debug
    offsets are found by their cookie)."""
    settle(jobs.result("kcore-nobin:" + target, kcore_job, interp, target, tool),
           request.node)


@pytest.mark.job("kcore")
@pytest.mark.interps(lambda i: i.label in PACKED_INTERPS)
@pytest.mark.parametrize("fmt", sorted(PACKERS))
def test_kcore_compressed(interp, fmt, tool, jobs, request):
    """The kernel core of threads.py compressed as systemd-coredump keeps
    it (zstd; lz4, xz) or as people move it (gzip): --core reads it
    directly, to its ground truth."""
    settle(jobs.result("kcore-%s:%s" % (fmt, PACKED_TARGET), kcore_job, interp,
                       PACKED_TARGET, tool), request.node)


DECOY = "DECOY LINE %d: this machine's file, not the core's"


def with_decoy(path, tool, args):
    """tool_file_run(tool, args) with a file of other contents at path on
    this machine, removed after."""
    if os.path.exists(os.path.dirname(path)):
        pytest.skip("%s exists on this machine: no room for the decoy" % path)
    os.makedirs(os.path.dirname(path))
    try:
        with open(path, "w") as f:
            f.write("".join(DECOY % n + "\n" for n in range(1, 5000)))
        return tool_file_run(tool, args)
    finally:
        os.unlink(path)
        os.rmdir(os.path.dirname(path))


@pytest.mark.job("kcore")
# sid's: 3.13+ is found from its debug offsets with no binary at all
@pytest.mark.interps(lambda i: i.source == "sid")
def test_kcore_other_root(interp, tool):
    """A kernel core of a target in the sid chroot, read without --sysroot:
    the core's mappings name files this machine lacks or has in another
    build, so the process had another root.  A file of other contents
    stands here at the path of the target's script (a decoy, removed
    after): none of its lines may be shown; one warning on stderr names
    the cause and the fixes (--sysroot, --no-source).  With --sysroot the
    chroot's own lines are shown, and no such warning."""
    err = CORE_PATTERN.ensure()
    if err:
        pytest.skip(err)
    # generators.py: threads.py's thread in a specialized __init__ call
    # needs the interpreter binary this read has no path to (nobin_partial)
    script = interp.script("generators")       # the path inside the chroot
    with Target(interp, "generators", wrap=["prlimit", "--core=unlimited", "--"]) as tg:
        gt = tg.settled_truth(gt_sanity)
        core = kernel_core(tg.proc, tg.pid, interp.chroot)
    try:
        # one decoy at a time: the session's workers share the path
        with open(os.path.join(host_tmp(), "decoy.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            argv, rc, out, err = with_decoy(script, tool, ["--core", core])
        sargv, src, sout, serr = tool_file_run(tool, ["--core", core, "--sysroot",
                                                      interp.chroot])
    finally:
        remove(core)
    text, msg = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    assert rc == 0, "%s exited %s: %s" % (" ".join(argv), rc, short(err))
    assert "Thread %d" % gt["main_tid"] in text, text
    assert "DECOY LINE" not in text, "%s showed this machine's file:\n%s" % (" ".join(argv), text)
    assert msg.count("another root") == 1 and "--sysroot" in msg and "--no-source" in msg, \
        "%s: stderr %r" % (" ".join(argv), msg)
    stext, smsg = sout.decode("utf-8", "replace"), serr.decode("utf-8", "replace")
    assert src == 0, "%s exited %s: %s" % (" ".join(sargv), src, short(serr))
    assert "another root" not in smsg, smsg
    with open(interp.host_path(script)) as f:
        lines = f.read().splitlines()
    shown = 0
    for t in gt["threads"]:
        for fr in t["frames"]:
            if fr["file"] == script:
                want = 'line %d, in %s\n    %s\n' % (fr["line"], fr["qualname"] or fr["function"],
                                                     lines[fr["line"] - 1].strip())
                assert want in stext, "%s: %r missing:\n%s" % (" ".join(sargv), want, stext)
                shown += 1
    assert shown, gt
