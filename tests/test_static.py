"""The static pystack-dump (-Dstatic=true, tools/build-static.sh) where
nothing else is, run as one copying the file into a box would run it:
chrooted, in a mount namespace of its own, into

  empty     a directory holding only the binary and a mounted /proc; bound
            in, this worker's scratch directory (sample's output, cores)
            and, for the core checks alone, the host's / at /host (the
            binaries a core's reader is given with --sysroot)
  bullseye  the Debian bullseye chroot (glibc 2.31, tests/setup-bullseye.sh),
            the binary copied into it, the scratch directory bound in

Targets run outside the root (pyenv 3.12; sid 3.14 in its own chroot) and
inside bullseye (its python3.9).  Each check is its feature's own, with the
static binary as the tool: the dump (threads, generators), --locals,
--tasks, sample (wall-split as JSON, collapsed) and a gcore core; and on
one target, snapshots, --native, every profile format, report, diff and
--debugger-setup."""

import os
import shutil
import struct
import subprocess
import tempfile

import pytest

from harness.cores import GCORE, GCORE_TARGET_ENV, gcore_slot, read_core_facts, run_gcore, \
    unreadable_stacks
from harness.dumps import base_gt_sanity, compare, core_doc_checks, gt_sanity
from harness.interps import bullseye_dir, chroot_ready
from harness.locals import check_locals_doc
from harness.procs import crashed, host_tmp, session_id, short
from harness.results import Result, settle
from harness.target import Target, Tool, parse_json_out, tool_file_run
from harness.tasks import TASKS_TARGET, compare_tasks
from test_dump import dump_job
from test_locals import dump as locals_dump, text_errors
from test_sample import sample_collapsed, sample_split
from test_snapshots import snapshot_roundtrip
from test_tasks import live_graph, tasks_names


STATIC_LABELS = ["pyenv-3.12", "sid-3.14", "bullseye-3.9"]
ROOTS = ["empty", "bullseye"]
PT_DYNAMIC, PT_INTERP = 2, 3
HOST_IN_ROOT = "/host"                  # the empty root's bind of the host's /

# ROOT SCRATCH [HOST]: pystack-dump chrooted into ROOT, in a mount namespace
# of its own (nothing mounted outlives it), with /proc and SCRATCH mounted
# in it, and the host's / at ROOT/host if HOST is given.  exec all the way:
# the tool keeps the wrapper's pid, so signals reach it.
WRAPPER = """#!/bin/sh
exec unshare -m sh -c '
r=$1 d=$2 h=$3; shift 3
mount -t proc proc "$r/proc" && mkdir -p "$r$d" && mount --bind "$d" "$r$d" || exit 125
if [ -n "$h" ]; then mkdir -p "$r$h" && mount --bind / "$r$h" || exit 125; fi
exec chroot "$r" "$@"' sh %s %s '%s' %s "$@"
"""


def static_binary(config):
    """Where the static build is: $PYD_STATIC_BUILD, else the --build
    directory's name with -static (build -> build-static)."""
    d = os.environ.get("PYD_STATIC_BUILD",
                       os.path.abspath(config.getoption("build")) + "-static")
    return os.path.join(d, "cli", "pystack-dump")


def segments(path):
    """The program header types of an x86-64 ELF executable."""
    with open(path, "rb") as f:
        eh = f.read(64)
        phoff, = struct.unpack_from("<Q", eh, 32)
        phentsize, phnum = struct.unpack_from("<HH", eh, 54)
        f.seek(phoff)
        ph = f.read(phentsize * phnum)
    return [struct.unpack_from("<I", ph, i * phentsize)[0] for i in range(phnum)]


@pytest.fixture(scope="session")
def static_exe(request):
    path = static_binary(request.config)
    if not os.access(path, os.X_OK):
        pytest.skip("no static pystack-dump at %s (tools/build-static.sh builds it)" % path)
    return path


def make_root(kind, exe):
    """(root, the binary's path in it, what to remove after)."""
    if kind == "empty":
        root = tempfile.mkdtemp(prefix="pyd-static-root-")
        os.mkdir(os.path.join(root, "proc"))
        shutil.copy2(exe, os.path.join(root, "pystack-dump"))
        return root, "/pystack-dump", [root]
    root = bullseye_dir()
    if chroot_ready(root):
        pytest.skip("no bullseye chroot: %s" % chroot_ready(root))
    inside = "/tmp/pyd-static-%s-%d" % (session_id(), os.getpid())
    os.makedirs(root + inside)
    shutil.copy2(exe, root + inside + "/pystack-dump")
    # the scratch directory's mount point: empty outside the namespaces
    # (ROOT/host stays: another worker's namespace may have it mounted)
    return root, inside + "/pystack-dump", [root + inside, root + host_tmp()]


@pytest.fixture(scope="session")
def roots(static_exe):
    """kind -> (root, Tool, Tool with the host's / bound in), made when
    first asked for, removed at the end (the mounts died with their
    namespaces: only directories are left)."""
    made, trash = {}, []

    def get(kind):
        if kind not in made:
            root, inside, rm = make_root(kind, static_exe)
            trash.extend(rm)
            tools = []
            for host in ("", HOST_IN_ROOT):
                fd, path = tempfile.mkstemp(prefix="pyd-static-%s-" % kind, dir=host_tmp())
                with os.fdopen(fd, "w") as f:
                    f.write(WRAPPER % (root, host_tmp(), host, inside))
                os.chmod(path, 0o755)
                tools.append(Tool(path))
            made[kind] = (root, tools[0], tools[1])
        return made[kind]
    yield get
    for d in trash:
        if d.endswith(host_tmp()):
            os.rmdir(d)
        else:
            shutil.rmtree(d)


def result(name, errs, info=""):
    return Result(name, "FAIL" if errs else "PASS", "\n".join(errs), info=info)


def test_static_binary(static_exe):
    """No interpreter, no dynamic section: nothing is loaded at run time;
    `file` says so too."""
    types = segments(static_exe)
    assert PT_INTERP not in types and PT_DYNAMIC not in types, \
        "%s has a dynamic section or an interpreter (segments %s)" % (static_exe, types)
    if shutil.which("file"):
        out = subprocess.run(["file", "-b", static_exe], capture_output=True, text=True).stdout
        assert "statically linked" in out, out


def test_static_no_serve(static_exe):
    """serve is not in the static binary (libmicrohttpd cannot be linked
    statically): it says so, with the fix, and exits 6 (unsupported)."""
    p = subprocess.run([static_exe, "serve", "1"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 6 and "serve is not in this build" in p.stderr \
        and "dynamic build" in p.stderr, (p.returncode, p.stderr)


def test_static_push_refused(static_exe):
    """sample --push is left out of the static binary (libcurl's
    dependencies have no static archives): exit 6, saying so and what to
    do instead, before anything is read."""
    argv, rc, out, err = tool_file_run(Tool(static_exe),
                                       ["sample", "--push", "http://127.0.0.1:9", "1"])
    assert rc == 6 and b"--push is not available" in err, \
        "%s exited %s: %s" % (" ".join(argv), rc, short(err))


@pytest.mark.parametrize("root", ROOTS)
def test_static_version(root, roots):
    """It starts in the root: --version and --help."""
    for args in (["--version"], ["--help"]):
        argv, rc, out, err = tool_file_run(roots(root)[1], args)
        assert rc == 0 and out, "%s exited %s: %s" % (" ".join(argv), rc, short(err))


@pytest.mark.interps(lambda i: i.label in STATIC_LABELS)
@pytest.mark.parametrize("target", ["threads", "generators"])
@pytest.mark.parametrize("root", ROOTS)
def test_static_dump(interp, root, target, roots, request):
    """--json PID of a live target equals its ground truth."""
    settle(dump_job(interp, target, roots(root)[1])[0], request.node)


def locals_results(interp, tool):
    with Target(interp, "locals") as tg:
        gt = tg.settled_truth(gt_sanity)
        doc, e = locals_dump(tool, [str(tg.pid)])
        errs = [e] if e else check_locals_doc(gt, doc, interp, tg.pid)
        return result("locals", errs + text_errors(tool, tg.pid, gt))


@pytest.mark.interps(lambda i: i.label in STATIC_LABELS)
@pytest.mark.parametrize("root", ROOTS)
def test_static_locals(interp, root, roots, request):
    """--locals, as JSON and text: every argument and local as the target's
    own repr()."""
    settle(locals_results(interp, roots(root)[1]), request.node)


def tasks_result(interp, tool):
    names = tasks_names(interp)
    with Target(interp, TASKS_TARGET) as tg:
        early, gt, argv, doc, e, _ = live_graph(interp, tool, tg, names)
        if early:
            return early[0]
        errs = [e] if e else compare_tasks(gt, doc, interp)
        return result("tasks", (["command: " + " ".join(argv)] if errs else []) + errs)


@pytest.mark.interps(lambda i: i.label in STATIC_LABELS)
@pytest.mark.parametrize("root", ROOTS)
def test_static_tasks(interp, root, roots, request):
    """--tasks --json of asyncio_graph equals its ground truth."""
    settle(tasks_result(interp, roots(root)[1]), request.node)


def sample_results(interp, tool):
    with Target(interp, "sample_split") as tg:
        gt = tg.wait_ground_truth()
        sanity = base_gt_sanity(gt, interp)
        if sanity:
            return [result("sample", ["ground truth: " + "; ".join(sanity)])]
        return [sample_split(interp, tool, tg, gt, "wall-split"),
                sample_collapsed(interp, tool, tg, gt, "collapsed")]


@pytest.mark.interps(lambda i: i.label in STATIC_LABELS)
@pytest.mark.parametrize("root", ROOTS)
def test_static_sample(interp, root, roots, request):
    """sample: the wall-mode split within tolerance of the target's own
    measure (JSON profile), and the collapsed format."""
    res = sample_results(interp, roots(root)[1])
    bad = [r for r in res if r.status != "PASS"]
    settle(bad[0] if bad else res[0], request.node)


def core_result(interp, tool):
    """gcore of the threads target (taken outside the root), read with
    --core in it, the host's / as --sysroot: gdb names the files mapped by
    their host paths, a chroot's too (through /proc/PID/root).  Threads
    whose C stack gcore could not read may be cut short, as test_cores.py
    allows."""
    with Target(interp, "threads", env_extra=GCORE_TARGET_ENV) as tg:
        gt = tg.settled_truth(gt_sanity)
        with gcore_slot():
            core, warned, err = run_gcore(tg.pid, os.path.join(host_tmp(), "gcore-" + tg.run_id))
            if err:
                return result("core", [err])
            try:
                facts = read_core_facts(core)
                argv, rc, out, err = tool_file_run(
                    tool, ["--core", core, "--json", "--sysroot", HOST_IN_ROOT])
            finally:
                os.unlink(core)
    cmd = " ".join(argv)
    if crashed(rc) or rc not in (0, 9):
        return result("core", ["%s exited %s; stderr: %s" % (cmd, rc, short(err))])
    doc, e = parse_json_out(out)
    if e:
        return result("core", ["%s: %s" % (cmd, e)])
    errs = core_doc_checks(doc) + compare(gt, doc, interp, tg.pid,
                                          partial=unreadable_stacks(facts, warned))
    return result("core", (["command: " + cmd] if errs else []) + errs)


@pytest.mark.interps(lambda i: i.label in STATIC_LABELS)
@pytest.mark.parametrize("root", ROOTS)
def test_static_core(interp, root, roots, request):
    """A gcore core read in the root: the dump equals the ground truth."""
    if not shutil.which(GCORE):
        pytest.skip("gcore (package gdb) not installed")
    settle(core_result(interp, roots(root)[2]), request.node)


def formats(tool):
    """Every profile format sample writes, as --list-formats names them."""
    out = tool_file_run(tool, ["sample", "--list-formats"])[2]
    return [line.split(b"\t")[0].decode() for line in out.splitlines() if line.strip()]


def more_results(interp, tool):
    """The rest of what the binary does, on one live target: a snapshot
    saved and read back, --native, every profile format, a recording
    replayed (report) and compared (diff), and --debugger-setup."""
    errs = []
    with Target(interp, "threads") as tg:
        gt = tg.settled_truth(gt_sanity)
        r = snapshot_roundtrip(interp, "threads", tool, tg, gt)
        if r.status != "PASS":
            errs.append("snapshot: " + r.detail)
        argv, rc, out, err = tool_file_run(tool, ["--native", "--json", str(tg.pid)])
        doc, e = parse_json_out(out) if rc == 0 else (None, "exit %s: %s" % (rc, short(err)))
        if e:
            errs.append("%s: %s" % (" ".join(argv), e))
        elif not any(f.get("kind") == "native" for t in doc["threads"] for f in t["frames"]):
            errs.append("%s: no native frame" % " ".join(argv))
        scratch = tempfile.mkdtemp(prefix="pyd-static-fmt-", dir=host_tmp())
        try:
            for fmt in formats(tool):
                path = os.path.join(scratch, "p." + fmt)
                argv, rc, out, err = tool_file_run(
                    tool, ["sample", "-n", "50", "-q", "-f", fmt, "-o", path, str(tg.pid)])
                if rc != 0 or not os.path.getsize(path):
                    errs.append("%s: exit %s, %s; %s" % (" ".join(argv), rc,
                                "empty" if rc == 0 else "", short(err)))
            raw = os.path.join(scratch, "p.raw")
            argv, rc, out, err = tool_file_run(tool, ["report", "-f", "json", raw])
            doc, e = parse_json_out(out) if rc == 0 else (None, "exit %s: %s" % (rc, short(err)))
            if e or not doc.get("samples"):
                errs.append("%s: %s" % (" ".join(argv), e or "no samples"))
            argv, rc, out, err = tool_file_run(tool, ["diff", raw, raw])
            if rc != 0 or not out:
                errs.append("%s: exit %s: %s" % (" ".join(argv), rc, short(err)))
        finally:
            shutil.rmtree(scratch)
    argv, rc, out, err = tool_file_run(tool, ["--debugger-setup"])
    if rc != 0 or b"a static pystack-dump has no debugger plugins" not in out:
        errs.append("%s: exit %s, %s" % (" ".join(argv), rc, short(out + err)))
    return result("more", errs)


@pytest.mark.interps(lambda i: i.label == "pyenv-3.12")
@pytest.mark.parametrize("root", ROOTS)
def test_static_more(interp, root, roots, request):
    """Snapshots, --native, every profile format, report, diff and
    --debugger-setup from the static binary in the root."""
    settle(more_results(interp, roots(root)[1]), request.node)
