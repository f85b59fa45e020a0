"""Cores and snapshots that must be refused (or decoded in part) with the
documented exit status, a message naming the cause, and no crash."""

import os
import shutil
import struct
import subprocess
import tempfile
import time
import zlib

import pytest

from harness.cores import (CORE_PATTERN, GCORE, kernel_core, program_headers, read_core_facts,
                           remove, run_gcore)
from harness.dumps import compare
from harness.interps import FIXTURES_DIR, fixture_paths
from harness.procs import crashed, host_tmp, kill, short, spawn
from harness.target import Target, parse_json_out, tool_file_run


# The module's tests share the cores they make: one worker runs them all.
pytestmark = pytest.mark.xdist_group("bad-input")


def refused(tool, args, want, needles, more=None):
    """Errors unless pystack-dump ARGS exits `want` without crashing, its
    stderr names each of needles, and more(stdout) finds nothing wrong."""
    argv, rc, out, err = tool_file_run(tool, args)
    msg = err.decode("utf-8", "replace")
    errs = []
    if crashed(rc):
        errs.append("crashed or timed out (status %s)" % rc)
    elif rc != want:
        errs.append("expected exit %d, got %d" % (want, rc))
    missing = [n for n in needles if n.lower() not in msg.lower()]
    if missing:
        errs.append("stderr does not name the cause (expected %s): %s"
                    % (" and ".join(repr(n) for n in missing), short(err, 400)))
    if more and not crashed(rc):
        errs += more(out)
    if errs:
        errs.insert(0, "command: " + " ".join(argv))
        if out and not more:
            errs.append("stdout: " + short(out, 300))
    return errs


@pytest.fixture(scope="module")
def scratch():
    d = tempfile.mkdtemp(prefix="bad-", dir=host_tmp())
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def sleep_core(scratch):
    """A core of `sleep 1000`: gcore, else a kernel core."""
    why = None if GCORE else CORE_PATTERN.ensure()
    if why:
        pytest.skip("no gcore (gdb) and " + why)
    sleeper = spawn(["prlimit", "--core=unlimited", "--", "sleep", "1000"],
                    stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.2)
        if GCORE:
            path, _w, err = run_gcore(sleeper.pid, os.path.join(scratch, "sleep"))
            assert not err, "could not make a core of sleep: %s" % err
        else:
            path = kernel_core(sleeper, sleeper.pid)
    finally:
        kill(sleeper)
    yield path
    remove(path)


@pytest.fixture(scope="module")
def python_core(interps):
    """A kernel core of the threads target under pyenv 3.12 (else the first
    host interpreter found), its ground truth and interpreter."""
    host = [i for i in interps if not i.missing and not i.chroot]
    interp = next((i for i in host if i.label == "pyenv-3.12"), host[0] if host else None)
    if interp is None:
        pytest.skip("interpreter missing: no host interpreter for a Python core")
    err = CORE_PATTERN.ensure()
    if err:
        pytest.skip(err)
    with Target(interp, "threads", wrap=["prlimit", "--core=unlimited", "--"]) as tg:
        gt = tg.wait_ground_truth()
        tg.wait_settled()
        core = kernel_core(tg.proc, tg.pid)
    yield core, gt, interp
    remove(core)


def cut_copy(src, size, dst):
    """The first size bytes of src, as dst: a core cut short."""
    with open(src, "rb") as f, open(dst, "wb") as o:
        o.write(f.read(size))
    return dst


@pytest.mark.rootfree
def test_core_not_elf(tool, scratch):
    txt = os.path.join(scratch, "notes.txt")
    with open(txt, "w") as f:
        f.write("this is not a core file\n" * 10)
    assert not refused(tool, ["--core", txt, "--json"], 11, ["not an ELF"])


@pytest.mark.rootfree
def test_core_not_a_core(tool):
    """An ELF file that is not a core (/bin/true): exit 11."""
    assert not refused(tool, ["--core", os.path.realpath("/bin/true"), "--json"], 11,
                       ["not a core"])


def test_core_not_python(tool, sleep_core):
    """A core of a program that is not Python (sleep): exit 5."""
    assert not refused(tool, ["--core", sleep_core, "--json"], 5, ["not a core of CPython"])


def test_core_foreign_arch(tool, sleep_core, scratch):
    """The same core, its e_machine made 243 (RISC-V; x86-64 and arm64 are
    read): exit 12."""
    with open(sleep_core, "rb") as f:
        b = bytearray(f.read())
    struct.pack_into("<H", b, 18, 243)
    foreign = os.path.join(scratch, "riscv.core")
    with open(foreign, "wb") as f:
        f.write(b)
    try:
        assert not refused(tool, ["--core", foreign, "--json"], 12, ["another architecture"])
    finally:
        os.unlink(foreign)


def test_core_wrong_exe(tool, python_core, interps):
    """--exe of another build (pyenv 3.11 for a 3.12 core): exit 15."""
    core, gt, interp = python_core
    py311 = next((i.exe for i in interps if i.label == "pyenv-3.11" and not i.missing), None)
    if interp.label != "pyenv-3.12" or not py311:
        pytest.skip("interpreter missing: needs pyenv 3.12 and 3.11")
    assert not refused(tool, ["--core", core, "--exe", py311, "--json"], 15, ["build-id"])


def partial_dump(gt, interp, allow_missing_threads):
    """Checks of the JSON a truncated core still prints: the header, and
    each thread's innermost frames as far as they were read."""
    def more(out):
        doc, e = parse_json_out(out)
        if e:
            return ["stdout must still be the JSON dump: " + e]
        errs = []
        if doc.get("pid") != gt["pid"] or doc.get("python_version") != gt["python_version"]:
            errs.append("header: pid %r python_version %r, expected %r %r"
                        % (doc.get("pid"), doc.get("python_version"), gt["pid"],
                           gt["python_version"]))
        g2 = gt
        if allow_missing_threads:
            have = set(t.get("tid") for t in doc.get("threads") or [])
            g2 = dict(gt, threads=[t for t in gt["threads"] if t["tid"] in have])
        return errs + compare(g2, doc, interp, gt["pid"], partial="any")
    return more


def test_core_truncated_tail(tool, python_core, scratch, request):
    """The core cut inside its last segment: exit 13, and what was read."""
    core, gt, interp = python_core
    last = max((l for l in read_core_facts(core)["loads"] if l[3] > 0), key=lambda l: l[2])
    cut = last[2] + last[3] // 2
    path = cut_copy(core, cut, os.path.join(scratch, "tail.core"))
    request.node.user_properties.append(("info", "%s core of %d bytes cut at %d"
                                         % (interp.label, os.path.getsize(core), cut)))
    try:
        assert not refused(tool, ["--core", path, "--json"], 13, ["truncated"],
                           partial_dump(gt, interp, False))
    finally:
        os.unlink(path)


def test_core_truncated_half(tool, python_core, scratch, request):
    """The core cut in half: exit 13, the threads it still has."""
    core, gt, interp = python_core
    cut = os.path.getsize(core) // 2
    path = cut_copy(core, cut, os.path.join(scratch, "half.core"))
    request.node.user_properties.append(("info", "%s core of %d bytes cut at %d"
                                         % (interp.label, 2 * cut, cut)))
    try:
        assert not refused(tool, ["--core", path, "--json"], 13, ["truncated"],
                           partial_dump(gt, interp, True))
    finally:
        os.unlink(path)


@pytest.fixture(scope="module")
def snapshot_bytes():
    """A snapshot fixture to spoil (sid 3.15's threads, else the first)."""
    snaps = fixture_paths()
    assert snaps, "no snapshot fixture in %s to start from" % FIXTURES_DIR
    src = next((s for s in snaps if s.endswith("sid-3.15-threads.snap")), snaps[0])
    with open(src, "rb") as f:
        return f.read()


@pytest.mark.rootfree
def test_snapshot_newer(tool, snapshot_bytes, scratch):
    """A snapshot of format version 99 (its header CRC right): exit 14."""
    b = bytearray(snapshot_bytes)
    struct.pack_into("<I", b, 8, 99)
    hsize = struct.unpack_from("<I", b, 12)[0]
    h = bytearray(b[:hsize])
    h[24:28] = bytes(4)                 # the CRC is over the header with its own field 0
    struct.pack_into("<I", b, 24, zlib.crc32(bytes(h)))
    newer = os.path.join(scratch, "newer.snap")
    with open(newer, "wb") as f:
        f.write(b)
    assert not refused(tool, ["--snapshot", newer, "--json"], 14, ["newer"])


@pytest.mark.rootfree
def test_snapshot_corrupt(tool, snapshot_bytes, scratch):
    """One byte flipped in the middle: exit 14."""
    b = bytearray(snapshot_bytes)
    b[len(b) // 2] ^= 0xFF
    bad = os.path.join(scratch, "corrupt.snap")
    with open(bad, "wb") as f:
        f.write(b)
    assert not refused(tool, ["--snapshot", bad, "--json"], 14, ["corrupt"])


@pytest.mark.rootfree
def test_not_regular_files(tool, scratch):
    """A FIFO, a device and a directory given as --core or --snapshot are
    refused at once (opening a FIFO for reading would wait for a writer
    forever): exit 11 or 14, naming the cause."""
    fifo = os.path.join(scratch, "pipe")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    errs = []
    for path in (fifo, "/dev/zero", scratch):
        errs += refused(tool, ["--core", path], 11, ["not a regular file"
                                                    if path != scratch else "directory"])
        errs += refused(tool, ["--snapshot", path], 14, ["not a regular file"])
    assert not errs, "\n".join(errs)


def core_files(path):
    """The file names a core's NT_FILE note lists."""
    with open(path, "rb") as f:
        data = f.read()
    phoff = struct.unpack_from("<Q", data, 32)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    names = []
    for i in range(phnum):
        ptype, _fl, off, _va, _pa, filesz = struct.unpack_from("<IIQQQQ", data,
                                                               phoff + i * phentsize)
        pos, end = off, off + filesz
        while ptype == 4 and pos + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
            desc = pos + 12 + ((namesz + 3) & ~3)
            if ntype == 0x46494C45:                      # NT_FILE
                count = struct.unpack_from("<Q", data, desc)[0]
                blob = data[desc + 16 + 24 * count:desc + descsz]
                names += [n.decode("utf-8", "replace") for n in blob.split(b"\0") if n]
            pos = desc + ((descsz + 3) & ~3)
    return sorted(set(names))


def test_core_names_fifos(tool, python_core, scratch):
    """A core whose files, under --sysroot, are FIFOs: pystack-dump never
    blocks opening them; it ends (whatever it can say) in bounded time."""
    core, _gt, _interp = python_core
    root = os.path.join(scratch, "fifo-root")
    names = core_files(core)
    assert names, "the core names no files"
    for n in names:
        p = root + n
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if not os.path.exists(p):
            os.mkfifo(p)
    t0 = time.monotonic()
    argv, rc, out, err = tool_file_run(tool, ["--core", core, "--sysroot", root, "--json"])
    took = time.monotonic() - t0
    assert not crashed(rc) and took < 30, "%s: status %s after %.1fs: %s" % (
        " ".join(argv), rc, took, short(err))


@pytest.mark.rootfree
def test_snapshot_huge_non_snapshot(tool, scratch):
    """A 4 GiB file that is no snapshot is refused from its header, without
    reading it: exit 14, little time and memory."""
    big = os.path.join(scratch, "huge.bin")
    with open(big, "wb") as f:
        f.write(b"\x7fELF this is not a snapshot")
        f.truncate(4 << 30)
    try:
        t0 = time.monotonic()
        argv = ["/usr/bin/time", "-f", "%M", tool.path, "--snapshot", big]
        r = subprocess.run(argv, capture_output=True, timeout=60)
        took = time.monotonic() - t0
        msg = r.stderr.decode("utf-8", "replace")
        kib = int(msg.strip().splitlines()[-1])
        assert r.returncode == 14 and "not a pystack-dump snapshot" in msg, msg
        assert took < 5 and kib < 64 * 1024, "took %.1fs, peak RSS %d KiB" % (took, kib)
    finally:
        os.unlink(big)


def test_core_mapping_wraps(tool, python_core, scratch):
    """A core whose file mapping (and its segment) ends at 2^64 - 1: the
    scan for the runtime's cookie (binaries hidden) must not wrap around
    to address 0 and run forever."""
    core, _gt, _interp = python_core
    with open(core, "rb") as f:
        b = bytearray(f.read())
    top = 2 ** 64 - (2 << 16)
    phoff, phentsize, phnum = program_headers(b)
    loads = [i for i in range(phnum)
             if struct.unpack_from("<I", b, phoff + i * phentsize)[0] == 1]
    last = phoff + loads[-1] * phentsize
    struct.pack_into("<IIQQ", b, last, 1, 6, struct.unpack_from("<Q", b, last + 8)[0], top)
    patched = False
    for i in range(phnum):
        ptype, _fl, off, _va, _pa, filesz = struct.unpack_from("<IIQQQQ", b,
                                                               phoff + i * phentsize)
        pos = off
        while ptype == 4 and not patched and pos + 12 <= off + filesz:
            namesz, descsz, ntype = struct.unpack_from("<III", b, pos)
            desc = pos + 12 + ((namesz + 3) & ~3)
            if ntype == 0x46494C45:                      # NT_FILE: entry 0
                struct.pack_into("<QQ", b, desc + 16, top, 2 ** 64 - 1)
                patched = True
            pos = desc + ((descsz + 3) & ~3)
    assert patched, "the core has no NT_FILE note"
    wrap = os.path.join(scratch, "wrap.core")
    empty = os.path.join(scratch, "empty-root")
    os.makedirs(empty, exist_ok=True)
    with open(wrap, "wb") as f:
        f.write(b)
    try:
        t0 = time.monotonic()
        argv, rc, out, err = tool_file_run(tool, ["--core", wrap, "--exe", "/nonexistent",
                                                  "--sysroot", empty, "--json"])
        took = time.monotonic() - t0
        assert not crashed(rc) and took < 30, "%s: status %s after %.1fs: %s" % (
            " ".join(argv), rc, took, short(err))
    finally:
        os.unlink(wrap)
