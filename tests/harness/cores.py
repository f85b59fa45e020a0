"""Core files: gcore's, the kernel's (kernel.core_pattern, shared by the
workers of one session), and the facts the tests read from them."""

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import time

from .procs import run, session_id, short, vlog
from .target import TargetError


KCORE_DIR = "/tmp/pyd-kcores"           # kernel cores land here (inside the chroot for sid)
KCORE_PATTERN = KCORE_DIR + "/core.%p"
CORE_PATTERN_FILE = "/proc/sys/kernel/core_pattern"
CORE_PATTERN_SAVED = "/tmp/pyd-core-pattern.saved"   # lets a later run repair a SIGKILLed one
GCORE = shutil.which("gcore")
GCORE_PARALLEL = 2                      # gcore cores are written in full: at most 2 at a time
GCORE_TIMEOUT = 180.0
# glibc gives each thread a 64 MB malloc arena reservation (PROT_NONE) that
# gcore writes out as zeros: ~690 MB per core instead of ~85 MB. One arena
# keeps gcore cores small; the kernel cores (realistic crash case) use the
# default environment.
GCORE_TARGET_ENV = {"MALLOC_ARENA_MAX": "1"}
_GCORE_WARN = re.compile(r"Memory read failed for corefile section, (\d+) bytes at (0x[0-9a-fA-F]+)")
GCORE_SLOTS = "/tmp/pyd-gcore-slot.%d"   # flock()ed: one a core being written
_kcores_made = set()                    # host paths of kernel cores we expect (deleted at exit)


@contextlib.contextmanager
def gcore_slot():
    """At most GCORE_PARALLEL gcore cores on disk, across the worker
    processes of a test session."""
    while True:
        for i in range(GCORE_PARALLEL):
            f = open(GCORE_SLOTS % i, "w")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.close()
                continue
            try:
                yield
            finally:
                f.close()                       # closing drops the lock
            return
        time.sleep(0.1)


class CorePattern:
    """kernel.core_pattern is set to KCORE_PATTERN by the first kernel-core
    test of a session, in whichever worker, and put back by restore() when
    the session ends (conftest, in the process that started it).  The old
    value is kept in CORE_PATTERN_SAVED with the session's id, so that the
    workers of one session share it and a session killed with SIGKILL is
    repaired by the next one that takes kernel cores."""

    def __init__(self):
        self.error = None
        self.done = False

    def ensure(self):
        """None once the pattern is set, else why it cannot be.  Only
        sessions that take kernel cores touch the pattern: a fixtures-only
        run (meson test) beside a full one must not."""
        if self.done or self.error:
            return self.error
        try:
            with _locked():
                saved = _read_saved()
                with open(CORE_PATTERN_FILE) as f:
                    cur = f.read().rstrip("\n")
                if saved and saved["session"] == session_id():
                    pass                        # a sibling worker set it
                elif saved and cur == KCORE_PATTERN and _alive(saved["session"]):
                    pass                        # another session's, still running
                else:
                    old = saved["old"] if saved and cur == KCORE_PATTERN else cur
                    _write_saved({"session": session_id(), "old": old})
                    with open(CORE_PATTERN_FILE, "w") as f:
                        f.write(KCORE_PATTERN)
                    vlog("core_pattern %r -> %r" % (old, KCORE_PATTERN))
        except OSError as e:
            self.error = "cannot set kernel.core_pattern (%s): %s" % (CORE_PATTERN_FILE, e)
            return self.error
        self.done = True
        return None

    @staticmethod
    def restore():
        """Put the pattern back if this session set it."""
        try:
            with _locked():
                saved = _read_saved()
                if not saved or saved["session"] != session_id():
                    return
                with open(CORE_PATTERN_FILE) as f:
                    cur = f.read().rstrip("\n")
                if cur == KCORE_PATTERN:
                    with open(CORE_PATTERN_FILE, "w") as f:
                        f.write(saved["old"])
                os.unlink(CORE_PATTERN_SAVED)
        except OSError as e:
            print("WARNING: could not restore kernel.core_pattern: %s" % e, flush=True)


@contextlib.contextmanager
def _locked():
    with open(CORE_PATTERN_SAVED + ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _read_saved():
    try:
        with open(CORE_PATTERN_SAVED) as f:
            text = f.read()
    except OSError:
        return None
    try:
        saved = json.loads(text)
    except ValueError:
        saved = None
    if isinstance(saved, dict) and "old" in saved and "session" in saved:
        return saved
    return {"session": "0-unknown", "old": text.rstrip("\n")}   # an older harness's


def _write_saved(saved):
    with open(CORE_PATTERN_SAVED + ".tmp", "w") as f:
        json.dump(saved, f)
    os.replace(CORE_PATTERN_SAVED + ".tmp", CORE_PATTERN_SAVED)


def _alive(session):
    try:
        pid = int(session.split("-")[0])
        if pid > 0:
            os.kill(pid, 0)
        return pid > 0
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True


CORE_PATTERN = CorePattern()


def delete_kcores():
    """Delete the kernel cores this process made and still holds."""
    for path in list(_kcores_made):
        remove(path)


def core_cleanup(chroots):
    """Report (not delete) any core found in the core directories (the
    host's and those of the chroots) that no test took: e.g. a crashed
    pystack-dump."""
    for d in [KCORE_DIR] + [os.path.join(c, KCORE_DIR.lstrip("/")) for c in chroots]:
        try:
            left = os.listdir(d)
        except OSError:
            continue
        if left:
            print("note: %s holds core files this run did not expect: %s"
                  % (d, ", ".join(sorted(left)[:10])), flush=True)
        else:
            try:
                os.rmdir(d)
            except OSError:
                pass


# cores decoded with no binaries at all (the runtime found by its cookie)
NOBIN_MIN = (3, 13)


def nobin_partial(gt, interp):
    """Threads a core read without the interpreter's binary may show only
    in part: 3.13+ enters a specialized __init__ call through a trampoline
    whose code object is the binary's read-only data, which a kernel core
    leaves out (tests/targets/threads.py's in_init)."""
    return set(t["tid"] for t in gt["threads"]
               if interp.minor >= (3, 13) and t["name"] == "in_init")


def program_headers(b):
    """(offset of the program header table, entry size, count) of ELF b."""
    phoff, shoff = struct.unpack_from("<QQ", b, 32)
    phentsize, phnum = struct.unpack_from("<HH", b, 54)
    if phnum == 0xFFFF:                                  # PN_XNUM: in section 0
        phnum = struct.unpack_from("<I", b, shoff + 44)[0]
    return phoff, phentsize, phnum


NT_FILE = 0x46494C45
PAGE = 4096


def file_mappings(maps_text, loads, strip=""):
    """NT_FILE's entries [(start, end, offset, path)] from a /proc/PID/maps
    text: the file-backed lines inside the core's PT_LOAD segments
    [(vaddr, memsz, ...)] (an emulator's own mappings are not the guest's),
    strip taken off the front of each path (the guest's view of files
    unpacked under a sysroot)."""
    files = []
    for line in maps_text.splitlines():
        f = line.split(None, 5)
        if len(f) < 6 or not f[5].startswith("/"):
            continue
        start, end = (int(x, 16) for x in f[0].split("-"))
        if not any(v <= start < v + m for v, m, *_ in loads):
            continue
        path = f[5][len(strip):] if strip and f[5].startswith(strip + "/") else f[5]
        files.append((start, end, int(f[2], 16), path))
    return files


def with_nt_file(core, out, files):
    """A copy of core at out with an NT_FILE note listing files, as the
    kernel and gdb's gcore write it: the note segment, grown by the note,
    moved to the end of the file; all else unchanged."""
    with open(core, "rb") as f:
        b = bytearray(f.read())
    desc = struct.pack("<QQ", len(files), PAGE)
    desc += b"".join(struct.pack("<QQQ", s, e, o // PAGE) for s, e, o, _ in files)
    desc += b"".join(p.encode() + b"\0" for *_, p in files)
    desc += b"\0" * (-len(desc) % 4)
    note = struct.pack("<III", 5, len(desc), NT_FILE) + b"CORE\0\0\0\0" + desc
    phoff, phentsize, phnum = program_headers(b)
    for i in range(phnum):
        ph = phoff + i * phentsize
        if struct.unpack_from("<I", b, ph)[0] != 4:          # PT_NOTE
            continue
        off, filesz = struct.unpack_from("<Q", b, ph + 8)[0], struct.unpack_from("<Q", b, ph + 32)[0]
        notes = bytes(b[off:off + filesz]) + note
        b += b"\0" * (-len(b) % 8)
        struct.pack_into("<Q", b, ph + 8, len(b))
        struct.pack_into("<Q", b, ph + 32, len(notes))
        b += notes
        break
    else:
        raise ValueError("%s has no note segment" % core)
    with open(out, "wb") as f:
        f.write(b)


def read_core_facts(path):
    """The parts of an x86-64 ELF core the tests need: threads [(tid, rsp)]
    from NT_PRSTATUS and PT_LOAD segments [(vaddr, memsz, offset, filesz)]."""
    with open(path, "rb") as f:
        eh = f.read(64)
        if len(eh) < 64 or eh[:4] != b"\x7fELF" or eh[4] != 2 or eh[5] != 1:
            raise ValueError("%s is not a 64-bit little-endian ELF file" % path)
        phoff, shoff = struct.unpack_from("<QQ", eh, 32)
        phentsize, phnum = struct.unpack_from("<HH", eh, 54)
        if phnum == 0xFFFF:                                  # PN_XNUM
            f.seek(shoff)
            phnum = struct.unpack_from("<I", f.read(64), 44)[0]
        f.seek(phoff)
        ph = f.read(phentsize * phnum)
        loads, notes = [], []
        for i in range(phnum):
            (ptype, _flags, off, vaddr, _paddr, filesz,
             memsz, _align) = struct.unpack_from("<IIQQQQQQ", ph, i * phentsize)
            if ptype == 1:
                loads.append((vaddr, memsz, off, filesz))
            elif ptype == 4:
                notes.append((off, filesz))
        threads = []
        for off, size in notes:
            f.seek(off)
            n = f.read(size)
            pos = 0
            while pos + 12 <= len(n):
                namesz, descsz, ntype = struct.unpack_from("<III", n, pos)
                name = n[pos + 12:pos + 12 + namesz]
                dpos = pos + 12 + ((namesz + 3) & ~3)
                desc = n[dpos:dpos + descsz]
                pos = dpos + ((descsz + 3) & ~3)
                if ntype == 1 and name.rstrip(b"\0") == b"CORE" and len(desc) >= 336:
                    tid = struct.unpack_from("<i", desc, 32)[0]       # pr_pid
                    rsp = struct.unpack_from("<Q", desc, 112 + 19 * 8)[0]  # pr_reg.rsp
                    threads.append((tid, rsp))
    return {"threads": threads, "loads": loads}


def run_gcore(pid, prefix):
    """gcore -o PREFIX PID. Returns (core path or None, [(addr, size)] of the
    regions gcore could not read and left as zeros, error)."""
    rc, out, err, secs = run([GCORE, "-o", prefix, str(pid)], GCORE_TIMEOUT)
    path = "%s.%d" % (prefix, pid)
    text = (out or b"").decode("utf-8", "replace") + (err or b"").decode("utf-8", "replace")
    warned = [(int(a, 16), int(n)) for n, a in _GCORE_WARN.findall(text)]
    vlog("gcore %d -> rc=%s in %.2fs, %d unreadable regions" % (pid, rc, secs, len(warned)))
    if rc != 0 or not os.path.isfile(path):
        if os.path.exists(path):
            os.unlink(path)
        return None, warned, "gcore exited %s: %s" % (rc, short(err or out))
    return path, warned, None


def unreadable_stacks(facts, warned):
    """tids whose C stack lies in a core segment gcore reported unreadable:
    gcore warns 'Memory read failed for corefile section, N bytes at A' and
    leaves the section zero from A on."""
    bad = set()
    for tid, rsp in facts["threads"]:
        for vaddr, memsz, _off, _fsz in facts["loads"]:
            if vaddr <= rsp < vaddr + memsz:
                if any(vaddr <= a < vaddr + memsz for a, _n in warned):
                    bad.add(tid)
                break
    return bad


def kernel_core(proc, pid, root=None, timeout=60.0):
    """SIGABRT a process started with RLIMIT_CORE unlimited (prlimit) and
    return the host path of the core the kernel wrote (in KCORE_DIR as
    seen from the process's root)."""
    err = CORE_PATTERN.ensure()
    if err:
        raise TargetError(err)
    d = os.path.join(root, KCORE_DIR.lstrip("/")) if root else KCORE_DIR
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "core.%d" % pid)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    _kcores_made.add(path)
    os.kill(pid, signal.SIGABRT)
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TargetError("process %d did not die within %.0fs of SIGABRT" % (pid, timeout))
    if rc != -signal.SIGABRT:
        raise TargetError("process %d ended with status %s after SIGABRT, not killed by it"
                          % (pid, rc))
    if not os.path.isfile(path):
        raise TargetError("no core at %s after SIGABRT (core_pattern %r; RLIMIT_CORE "
                          "should be unlimited)" % (path, KCORE_PATTERN))
    vlog("kernel core %s: %d bytes (%d allocated)"
         % (path, os.path.getsize(path), os.stat(path).st_blocks * 512))
    return path


def remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass
    _kcores_made.discard(path)
