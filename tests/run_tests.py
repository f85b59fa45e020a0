#!/usr/bin/env python3
"""End-to-end tests for pystack-dump (stdlib only, Python 3.9+).

    python3 tests/run_tests.py [--build build] [--only VERSIONS] [-j N] [-v]
                               [--gt-only]

For every interpreter found (pyenv 3.6-3.13, Debian 3.11 release/debug,
Debian sid 3.13-3.15 release/debug inside a chroot made by
tests/setup-sid.sh), every target in tests/targets is started; it records its
own ground truth (sys._current_frames) and blocks; then
`pystack-dump --json PID` is run and every thread and frame is compared.
The same comparison is made for a snapshot of the live target
(--save-snapshot / --snapshot), a gcore core and a kernel-written core
(--core, and on 3.13+ with the binaries hidden), and a target in its own
mount namespace; the asyncio task graph of tests/targets/asyncio_graph.py
(--tasks: JSON, tree, table, --locked, snapshot, gcore, 1,000 tasks, and
`python3.X -m asyncio ps` on 3.14+; SKIP where pystack-dump does not
support task graphs yet); the sampling profiler (`pystack-dump sample`: a
75/25 wall-time split within 5 points, cpu, gil and async modes, SIGINT,
a target that exits, launch mode, and each output format read by a consumer
that is not ours); snapshot fixtures in tests/fixtures are decoded on every
machine; bad cores and snapshots must be refused with their exit status.
See tests/README.md.

    python3 tests/run_tests.py --regen-fixtures    # re-record tests/fixtures

The last line is always `tests: N passed, N failed, N skipped`; the exit
status is 0 only if nothing failed.
"""

import argparse
import atexit
import concurrent.futures
import glob
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import types
import uuid
import zlib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS_DIR = os.path.join(REPO, "tests", "targets")
SID_DIR_DEFAULT = "/var/cache/pystack-dump/sid"
SID_MARKER = ".pyd-sid-ready"          # written by tests/setup-sid.sh on success
CHROOT_TARGETS = "/tmp/pyd-targets"    # in-chroot path of the copied targets
CHROOT_OUT = "/tmp/pyd-out"            # in-chroot dir for ground-truth files

DUMP_TARGETS = ["threads", "recursion", "generators", "names", "busy"]
ORACLE_TARGETS = ["threads", "recursion", "generators", "names"]
ORACLE_MIN_MINOR = 15                  # python -m profiling.sampling dump

TARGET_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LC_ALL": "C.UTF-8",
    "LANG": "C.UTF-8",
    "HOME": "/",
}
PY_FLAGS = ["-B", "-E", "-s"]          # no .pyc in the tree, no PYTHON* env, no user site

GT_TIMEOUT = 90.0
TOOL_TIMEOUT = 60.0
LOCK_PAUSE_MS = 2000

VERBOSE = False
STOP = threading.Event()
_live_lock = threading.Lock()
_live = {}                              # pid -> Popen (own process group)
_print_lock = threading.Lock()
_host_tmp = []                          # per-run scratch dir for host targets


# --------------------------------------------------------------------------
# process bookkeeping: everything we start runs in its own process group and
# is SIGKILLed on every exit path.

def _have_pdeathsig():
    try:
        out = subprocess.run(["setpriv", "--help"], capture_output=True, text=True,
                             timeout=10).stdout
        return "--pdeathsig" in out
    except Exception:
        return False


HAVE_PDEATHSIG = _have_pdeathsig()


def spawn(argv, **kw):
    """Popen in a new session; the child also dies with its spawning thread
    (PR_SET_PDEATHSIG via setpriv) should this harness be SIGKILLed."""
    if STOP.is_set():
        raise KeyboardInterrupt
    if HAVE_PDEATHSIG:
        argv = ["setpriv", "--pdeathsig", "KILL", "--"] + list(argv)
    kw.setdefault("stdin", subprocess.DEVNULL)
    p = subprocess.Popen(argv, start_new_session=True, **kw)
    with _live_lock:
        _live[p.pid] = p
    return p


def kill(p):
    if p is None:
        return
    if p.poll() is None:        # never signal a reaped (possibly reused) pid
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        p.wait(timeout=10)
    except Exception:
        pass
    with _live_lock:
        _live.pop(p.pid, None)


def kill_all():
    with _live_lock:
        procs = list(_live.values())
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    for p in procs:
        try:
            p.wait(timeout=5)
        except Exception:
            pass
    with _live_lock:
        for p in procs:
            _live.pop(p.pid, None)


def _at_exit():
    kill_all()
    for d in _host_tmp:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(_at_exit)


def _on_signal(signum, frame):
    STOP.set()
    kill_all()
    raise KeyboardInterrupt


def run(argv, timeout, env=None, cwd=None):
    """Run to completion (killed on timeout). Returns (rc, out, err, secs);
    rc is None on timeout."""
    t0 = time.time()
    p = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        kill(p)
        out, err = p.communicate()
        rc = None
    finally:
        kill(p)
    return rc, out, err, time.time() - t0


def vlog(msg):
    if VERBOSE:
        with _print_lock:
            print("  [v] " + msg, flush=True)


# --------------------------------------------------------------------------
# interpreters

class Interp:
    def __init__(self, label, source, minor, debug, exe, chroot=None, missing=None):
        self.label = label          # e.g. pyenv-3.12, deb-3.11d, sid-3.15d
        self.source = source        # pyenv | deb | sid
        self.minor = minor          # (3, 12)
        self.debug = debug
        self.exe = exe              # path as seen by the process (in-chroot for sid)
        self.chroot = chroot
        self.missing = missing      # None if usable, else the reason

    @property
    def minor_str(self):
        return "%d.%d" % self.minor

    def host_path(self, path):
        return os.path.join(self.chroot, path.lstrip("/")) if self.chroot else path

    def script(self, name):
        base = CHROOT_TARGETS if self.chroot else TARGETS_DIR
        return os.path.join(base, name + ".py")

    def argv(self, args):
        cmd = [self.exe] + PY_FLAGS + list(args)
        if self.chroot:
            cmd = ["chroot", self.chroot] + cmd
        return cmd

    def matches(self, tok):
        return tok in (self.label, self.source, self.minor_str,
                       self.minor_str + ("d" if self.debug else ""),
                       "debug" if self.debug else "release")


def pyenv_root():
    try:
        r = subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=20)
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return os.path.expanduser("~/.pyenv")


def discover(sid_dir):
    found = []
    root = pyenv_root()
    for m in range(6, 14):
        minor = "3.%d" % m
        best = None
        for d in glob.glob(os.path.join(root, "versions", minor + ".*")):
            mo = re.match(r"^3\.%d\.(\d+)$" % m, os.path.basename(d))
            exe = os.path.join(d, "bin", "python" + minor)
            if mo and os.access(exe, os.X_OK):
                if best is None or int(mo.group(1)) > best[0]:
                    best = (int(mo.group(1)), exe)
        found.append(Interp("pyenv-" + minor, "pyenv", (3, m), False,
                            best[1] if best else None,
                            missing=None if best else "no %s/versions/%s.*" % (root, minor)))
    for suffix, debug in (("", False), ("d", True)):
        exe = "/usr/bin/python3.11" + suffix
        ok = os.access(exe, os.X_OK)
        found.append(Interp("deb-3.11" + suffix, "deb", (3, 11), debug, exe,
                            missing=None if ok else "%s not installed" % exe))
    marker = os.path.isfile(os.path.join(sid_dir, SID_MARKER))
    for m in (13, 14, 15):
        for suffix, debug in (("", False), ("d", True)):
            exe = "/usr/bin/python3.%d%s" % (m, suffix)
            if not marker:
                why = "no sid chroot at %s (run tests/setup-sid.sh)" % sid_dir
            elif not os.access(os.path.join(sid_dir, exe.lstrip("/")), os.X_OK):
                why = "%s missing in the sid chroot" % exe
            else:
                why = None
            found.append(Interp("sid-3.%d%s" % (m, suffix), "sid", (3, m), debug, exe,
                                chroot=sid_dir, missing=why))
    return found


def prepare_chroot(sid_dir):
    """Copy the targets into the chroot and make sure /proc is mounted there
    (profiling.sampling needs it). Returns an error string or None."""
    dst = os.path.join(sid_dir, CHROOT_TARGETS.lstrip("/"))
    if os.path.isdir(dst):
        shutil.rmtree(dst)
    shutil.copytree(TARGETS_DIR, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = os.path.join(sid_dir, CHROOT_OUT.lstrip("/"))
    shutil.rmtree(out, ignore_errors=True)          # leftovers of a killed run
    os.makedirs(out)
    proc = os.path.join(sid_dir, "proc")
    if subprocess.run(["mountpoint", "-q", proc]).returncode != 0:
        r = subprocess.run(["mount", "-t", "proc", "proc", proc], capture_output=True, text=True)
        if r.returncode != 0:
            return "cannot mount proc in %s: %s" % (proc, r.stderr.strip())
        vlog("mounted proc at %s" % proc)
    return None


# --------------------------------------------------------------------------
# /proc helpers

def task_states(pid):
    """{tid: state letter} for every task of pid ({} if gone)."""
    out = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for t in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, t), "rb") as f:
                s = f.read()            # bytes: comm may be cut mid UTF-8 sequence
            out[int(t)] = chr(s[s.rindex(b")") + 2])
        except (OSError, ValueError, IndexError):
            pass
    return out


def tracer_pid(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("TracerPid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def parent_pid(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("PPid:"):
                    return int(line.split()[1])
    except (OSError, TypeError, ValueError):
        pass
    return None


def comm(pid, tid):
    try:
        with open("/proc/%d/task/%d/comm" % (pid, tid), "rb") as f:
            return f.read().rstrip(b"\n").decode("utf-8", "replace")
    except OSError:
        return None


def alive(pid):
    st = task_states(pid).get(pid)
    return st is not None and st not in "ZX"


# --------------------------------------------------------------------------
# targets

def host_tmp():
    """Per-run scratch directory for host targets (removed at exit)."""
    with _live_lock:
        if not _host_tmp:
            d = tempfile.mkdtemp(prefix="pyd-run-")
            _host_tmp.append(d)
        return _host_tmp[0]


class TargetError(Exception):
    pass


# A "container": a new mount namespace whose root is the sid chroot
# (pivot_root, as container runtimes do, not a plain chroot), so that
# /proc/PID/maps shows in-container paths (/usr/bin/python3.15) which
# exist only under /proc/PID/root.  unshare --fork makes the interpreter a
# child of unshare; --kill-child kills it should unshare die.
CONTAINER_SH = ('set -e; mount --make-rprivate /; mount --rbind "$1" "$1"; cd "$1"; '
                'pivot_root . .; umount -l .; cd /; shift; exec "$@"')


class Target:
    """A running target process; use as a context manager (always killed).

    wrap: argv prefix (e.g. prlimit); env_extra: added to TARGET_ENV;
    container: run in its own mount namespace rooted at the sid chroot."""

    def __init__(self, interp, name, extra=(), wrap=(), env_extra=None, container=False,
                 args=()):
        self.interp, self.name = interp, name
        self.args = list(args)      # passed verbatim after the ground-truth path and extra
        self.wrap, self.env_extra, self.container = list(wrap), env_extra or {}, container
        self._pid = None
        self.run_id = "%s-%s-%s" % (interp.label, name, uuid.uuid4().hex[:8])
        if interp.chroot:
            self.out_in = os.path.join(CHROOT_OUT, self.run_id)
            self.out_host = interp.host_path(self.out_in)
        else:
            self.out_host = self.out_in = os.path.join(host_tmp(), self.run_id)
        self.gt_in = os.path.join(self.out_in, "ground_truth.json")
        self.gt_host = os.path.join(self.out_host, "ground_truth.json")
        self.extra = [os.path.join(self.out_in, e) for e in extra]
        self.log = os.path.join(self.out_host, "target.log")
        self.proc = None
        self.gt = None

    def __enter__(self):
        if STOP.is_set():
            raise KeyboardInterrupt
        argv = self.command()
        vlog("start %s" % " ".join(argv))
        os.makedirs(self.out_host)
        try:
            with open(self.log, "wb") as log:
                self.proc = spawn(argv, stdout=log, stderr=subprocess.STDOUT,
                                  env=dict(TARGET_ENV, **self.env_extra), cwd="/")
        except BaseException:
            shutil.rmtree(self.out_host, ignore_errors=True)
            raise
        return self

    def command(self):
        """The target's command line."""
        args = [self.interp.script(self.name), self.gt_in] + self.extra + self.args
        if self.container:
            argv = (["unshare", "--mount", "--fork", "--kill-child=KILL", "--",
                     "sh", "-c", CONTAINER_SH, "sh", self.interp.chroot, self.interp.exe]
                    + PY_FLAGS + args)
        else:
            argv = self.interp.argv(args)
        return self.wrap + argv

    def __exit__(self, *exc):
        kill(self.proc)
        shutil.rmtree(self.out_host, ignore_errors=True)

    @property
    def pid(self):
        """The interpreter's pid (in a container: the child of unshare)."""
        return self._pid if self._pid is not None else self.proc.pid

    def host_extra(self, i):
        return self.interp.host_path(self.extra[i])

    def log_tail(self, n=1500):
        try:
            with open(self.log, "rb") as f:
                return f.read().decode("utf-8", "replace")[-n:]
        except OSError:
            return ""

    def wait_ground_truth(self, timeout=GT_TIMEOUT):
        deadline = time.time() + timeout
        err = self.gt_host + ".error"
        while time.time() < deadline and not STOP.is_set():
            if os.path.exists(self.gt_host):
                with open(self.gt_host, encoding="utf-8") as f:
                    self.gt = json.load(f)
                if self.container:
                    if parent_pid(self.gt.get("pid")) != self.proc.pid:
                        raise TargetError("ground truth pid %s is not a child of unshare "
                                          "(pid %d)" % (self.gt.get("pid"), self.proc.pid))
                    self._pid = self.gt["pid"]
                elif self.gt.get("pid") != self.pid:
                    raise TargetError("ground truth pid %s != process pid %d (is the "
                                      "interpreter a wrapper that forks?)"
                                      % (self.gt.get("pid"), self.pid))
                return self.gt
            if os.path.exists(err):
                with open(err, encoding="utf-8", errors="replace") as f:
                    raise TargetError("target reported: " + f.read())
            if self.proc.poll() is not None:
                raise TargetError("target exited with %s before writing ground truth:\n%s"
                                  % (self.proc.returncode, self.log_tail()))
            time.sleep(0.05)
        raise TargetError("no ground truth after %.0fs:\n%s" % (timeout, self.log_tail()))

    def wait_settled(self, timeout=15.0):
        """Wait until every non-busy thread sleeps in the kernel (twice, 50 ms
        apart), i.e. the main thread has returned from checkpoint() into its
        blocking call."""
        tids = [t["tid"] for t in self.gt["threads"] if not t["busy"]]
        deadline = time.time() + timeout
        streak = 0
        while time.time() < deadline:
            st = task_states(self.pid)
            if not st:
                raise TargetError("target died:\n" + self.log_tail())
            if all(st.get(t) in ("S", "D") for t in tids):
                streak += 1
                if streak >= 2:
                    return
            else:
                streak = 0
            time.sleep(0.05)
        raise TargetError("threads never settled: %s" % task_states(self.pid))


# --------------------------------------------------------------------------
# running the tool

class Tool:
    def __init__(self, path):
        self.path = path

    def dump(self, pid, locked=False, env_extra=None, timeout=TOOL_TIMEOUT):
        argv = [self.path] + (["--locked"] if locked else []) + ["--json", str(pid)]
        env = dict(os.environ)
        env.pop("PYD_TEST_LOCKED_PAUSE_MS", None)
        env.update(env_extra or {})
        rc, out, err, secs = run(argv, timeout, env=env)
        vlog("%s -> rc=%s in %.2fs" % (" ".join(argv), rc, secs))
        return rc, out, err, secs


def short(b, n=800):
    s = b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b)
    s = s.strip()
    return s if len(s) <= n else s[:n] + "...(%d more chars)" % (len(s) - n)


def parse_dump(rc, out, err, secs):
    """Returns (doc, error string)."""
    if rc is None:
        return None, "pystack-dump timed out after %.0fs; stderr: %s" % (secs, short(err))
    if rc != 0:
        return None, "pystack-dump exited %d; stderr: %s" % (rc, short(err))
    try:
        return json.loads(out.decode("utf-8")), None
    except UnicodeDecodeError as e:
        return None, "output is not valid UTF-8 (%s): %r" % (e, out[max(0, e.start - 60):e.start + 60])
    except ValueError as e:
        return None, "output is not valid JSON (%s): %s" % (e, short(out))


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check_schema(doc):
    errs = []
    if not isinstance(doc, dict):
        return ["top level is %s, not an object" % type(doc).__name__]
    if not _is_int(doc.get("pid")):
        errs.append("pid missing or not an int: %r" % (doc.get("pid"),))
    if not isinstance(doc.get("python_version"), str):
        errs.append("python_version missing or not a string: %r" % (doc.get("python_version"),))
    if doc.get("source") not in ("process", "core", "snapshot"):
        errs.append("source missing or invalid: %r" % (doc.get("source"),))
    threads = doc.get("threads")
    if not isinstance(threads, list):
        return errs + ["threads missing or not a list"]
    for i, t in enumerate(threads):
        w = "threads[%d]" % i
        if not isinstance(t, dict):
            errs.append("%s is not an object" % w)
            continue
        if not _is_int(t.get("tid")):
            errs.append("%s.tid not an int: %r" % (w, t.get("tid")))
        if "name" not in t or not (t["name"] is None or isinstance(t["name"], str)):
            errs.append("%s.name missing or not str|null" % w)
        if not isinstance(t.get("holds_gil"), bool):
            errs.append("%s.holds_gil missing or not a bool" % w)
        if t.get("state") not in ("running", "idle", "unknown"):
            errs.append("%s.state invalid: %r" % (w, t.get("state")))
        if "error" not in t or not (t["error"] is None or isinstance(t["error"], str)):
            errs.append("%s.error missing or not str|null" % w)
        frames = t.get("frames")
        if not isinstance(frames, list):
            errs.append("%s.frames missing or not a list" % w)
            continue
        for j, fr in enumerate(frames):
            errs += frame_schema_errors("%s.frames[%d]" % (w, j), fr)
        if len(errs) > 20:
            return errs[:20] + ["..."]
    return errs


def frame_schema_errors(fw, fr):
    """What is wrong with fr as a {function, qualname, file, line} frame
    (of the dump and the task graph JSON alike), fw naming it."""
    if not isinstance(fr, dict):
        return ["%s not an object" % fw]
    errs = []
    if not isinstance(fr.get("function"), str):
        errs.append("%s.function not a string" % fw)
    if not (fr.get("qualname") is None or isinstance(fr.get("qualname"), str)):
        errs.append("%s.qualname not str|null" % fw)
    if not isinstance(fr.get("file"), str):
        errs.append("%s.file not a string" % fw)
    if not _is_int(fr.get("line")):
        errs.append("%s.line not an int" % fw)
    return errs


def ffmt(fr, qual):
    if fr is None:
        return "(none)"
    s = "%s %s:%s" % (fr.get("function"), fr.get("file"), fr.get("line"))
    if qual:
        s += " qualname=%s" % (fr.get("qualname"),)
    return s


def frame_key(fr, qual):
    k = (fr.get("function"), fr.get("file"), fr.get("line"))
    return k + (fr.get("qualname"),) if qual else k


def diff_frames(exp, got, qual, what):
    """exp/got innermost first. Returns list of error strings."""
    ek = [frame_key(f, qual) for f in exp]
    gk = [frame_key(f, qual) for f in got]
    if ek == gk:
        return []
    errs = ["%s: frames differ (expected %d frames, got %d)" % (what, len(exp), len(got))]
    bad = [i for i in range(max(len(ek), len(gk)))
           if i >= len(ek) or i >= len(gk) or ek[i] != gk[i]]
    for i in bad[:4]:
        errs.append("    frame[%d] (innermost = 0): expected %s" %
                    (i, ffmt(exp[i] if i < len(exp) else None, qual)))
        errs.append("    frame[%d]                  got      %s" %
                    (i, ffmt(got[i] if i < len(got) else None, qual)))
    if len(bad) > 4:
        errs.append("    ... %d differing positions in all" % len(bad))
    return errs


def thread_name_ok(name, py_name, os_name):
    """A reported thread name may be the Python name, the OS name (comm),
    or a prefix of the Python name (comm is cut at 15 bytes, possibly inside
    a UTF-8 sequence: trailing U+FFFD from such a cut are ignored)."""
    stem = name.rstrip("\ufffd")
    return name == py_name or name == os_name or bool(stem and py_name.startswith(stem))


def compare(gt, doc, interp, pid, partial=(), comm_of=None, stats=None):
    """Compare a pystack-dump document with the target's ground truth.

    partial: tids whose stacks may legitimately be cut short (their memory
    is missing from a core); such a thread either matches exactly with
    "error" null, or has "error" set and frames that are the innermost
    frames of the ground truth (a non-empty prefix, unless "partial" is
    the string "any", which also allows no frames at all).
    comm_of(tid): the OS thread name to accept (default: /proc of pid).
    stats: if a dict, counts "exact" and "partial" threads."""
    errs = check_schema(doc)
    if errs:
        return ["schema: " + e for e in errs]
    qual = interp.minor >= (3, 11)
    if doc["pid"] != gt["pid"]:
        errs.append("pid: expected %d, got %d" % (gt["pid"], doc["pid"]))
    if doc["python_version"] != gt["python_version"]:
        errs.append("python_version: expected %r (sys.version %r), got %r"
                    % (gt["python_version"], gt["sys_version"].split()[0], doc["python_version"]))
    got = {}
    for t in doc["threads"]:
        if t["tid"] in got:
            errs.append("tid %d reported twice" % t["tid"])
        got[t["tid"]] = t
    exp = dict((t["tid"], t) for t in gt["threads"])
    missing = sorted(set(exp) - set(got))
    extra = sorted(set(got) - set(exp))
    for tid in missing:
        errs.append("thread tid=%d (%s) missing from the dump" % (tid, exp[tid]["name"]))
    for tid in extra:
        errs.append("unexpected thread tid=%d in the dump (%d frames, innermost %s)"
                    % (tid, len(got[tid]["frames"]),
                       ffmt(got[tid]["frames"][0], False) if got[tid]["frames"] else "-"))
    gil_holders = [tid for tid, t in got.items() if t["holds_gil"]]
    if len(gil_holders) > 1:
        errs.append("holds_gil true for %d threads: %s" % (len(gil_holders), gil_holders))
    for tid in sorted(set(exp) & set(got)):
        e, g = exp[tid], got[tid]
        what = "thread tid=%d name=%r%s" % (tid, e["name"], " (main)" if e["main"] else "")
        gf = g["frames"]
        if not qual:
            withq = [i for i, f in enumerate(gf) if f.get("qualname") is not None]
            if withq:
                errs.append("%s: qualname must be null/absent before 3.11, frame[%d] has %r"
                            % (what, withq[0], gf[withq[0]]["qualname"]))
        if g["name"] is not None:
            c = comm_of(tid) if comm_of else comm(pid, tid)
            if not thread_name_ok(g["name"], e["name"], c):
                errs.append("%s: name %r is neither the Python thread name %r nor the "
                            "OS thread name %r" % (what, g["name"], e["name"], c))
        if e["busy"]:
            outer = list(reversed(e["stable_outer"]))          # outermost first
            gout = list(reversed(gf))
            head = gout[:len(outer)]
            errs += diff_frames(list(reversed(outer)), list(reversed(head)), qual,
                                what + " [busy; stable outer frames]")
            inner = gout[len(outer):]
            if not inner:
                errs.append("%s [busy]: no frames inside %s" % (what, e["allowed_inner"]))
            for f in inner:
                if f["function"] not in e["allowed_inner"]:
                    errs.append("%s [busy]: frame %s is not one of %s"
                                % (what, ffmt(f, qual), e["allowed_inner"]))
                    break
        else:
            if (partial == "any" or tid in partial) and g.get("error") is not None:
                n = len(gf)
                if n == 0 and partial != "any":
                    errs.append("%s: error %r and no frames (expected the innermost "
                                "frames of %d)" % (what, g["error"], len(e["frames"])))
                elif n > len(e["frames"]):
                    errs.append("%s: error %r but %d frames, more than the %d expected"
                                % (what, g["error"], n, len(e["frames"])))
                else:
                    errs += diff_frames(e["frames"][:n], gf, qual,
                                        what + " [incomplete: innermost %d of %d frames]"
                                        % (n, len(e["frames"])))
                if stats is not None:
                    stats["partial"] = stats.get("partial", 0) + 1
            else:
                errs += diff_frames(e["frames"], gf, qual, what)
                if g.get("error") is not None:
                    errs.append("%s: error %r on a stack that must be complete"
                                % (what, g["error"]))
                if stats is not None:
                    stats["exact"] = stats.get("exact", 0) + 1
            if g["holds_gil"]:
                errs.append("%s: blocked thread reported holds_gil=true" % what)
            if g["state"] == "running":
                errs.append("%s: blocked thread reported state=running" % what)
    return errs


def check_not_stopped(pid):
    """Errors if the target is left stopped or traced after a --locked run."""
    errs = []
    deadline = time.time() + 1.0
    while True:
        st = task_states(pid)
        tp = tracer_pid(pid)
        stopped = dict((t, s) for t, s in st.items() if s in "tT")
        if not stopped and tp == 0 and alive(pid):
            return []
        if time.time() > deadline:
            break
        time.sleep(0.05)
    if not alive(pid):
        errs.append("target is gone (state %s)" % st)
    if stopped:
        errs.append("target left stopped: task states %s" % stopped)
    if tp:
        errs.append("target still traced by pid %s" % tp)
    return errs


# --------------------------------------------------------------------------
# the oracle: python3.15 -m profiling.sampling dump -a PID (in the chroot)

_HDR = re.compile(r"^Stack dump(?: for PID \d+)?, thread (\d+) \((.*)\):$")
_FRAME = re.compile(r'^  File "(.*)", line (\d+), in (.*)$')
_FRAME_NOLINE = re.compile(r'^  File "(.*)", in (.*)$')


def parse_oracle(text):
    """{tid: [ {name, file, line} innermost first ]}.  The oracle prints
    threads with 'most recent call last', file names relative to its cwd
    (chroot's /), then the source line indented by 4."""
    threads, cur = {}, None
    for line in text.splitlines():
        m = _HDR.match(line)
        if m:
            cur = threads.setdefault(int(m.group(1)), [])
            continue
        if cur is None or not line.startswith("  ") or line.startswith("    "):
            continue
        m = _FRAME.match(line)
        if m:
            f, ln, name = m.group(1), int(m.group(2)), m.group(3)
        else:
            m = _FRAME_NOLINE.match(line)
            if m:
                f, ln, name = m.group(1), 0, m.group(2)
            else:
                f, ln, name = "~", 0, line.strip()
        if f == "~":
            continue                    # synthetic <GC>/<native> frames
        if not f.startswith("/") and not f.startswith("<"):
            f = "/" + f
        cur.append({"name": name, "file": f, "line": ln})
    for tid in threads:
        threads[tid].reverse()
    return threads


def oracle_vs(frames_by_tid, oracle, what, busy_tids):
    """Compare {tid: frames (function/qualname/file/line)} with the oracle."""
    errs = []
    for tid in sorted(set(oracle) - set(frames_by_tid)):
        errs.append("%s: oracle has thread %d that is not in %s" % (what, tid, what))
    for tid in sorted(set(frames_by_tid) - set(oracle)):
        errs.append("%s: thread %d not in the oracle output" % (what, tid))
    for tid in sorted(set(oracle) & set(frames_by_tid)):
        if tid in busy_tids:
            continue
        o, f = oracle[tid], frames_by_tid[tid]
        bad = []
        for i in range(max(len(o), len(f))):
            if i >= len(o) or i >= len(f):
                bad.append(i)
                continue
            names = (f[i].get("qualname"), f[i].get("function"))
            if (o[i]["line"] != f[i]["line"] or o[i]["file"] != f[i]["file"]
                    or o[i]["name"] not in names):
                bad.append(i)
        if bad:
            errs.append("%s vs oracle, thread %d: %d vs %d frames, %d differ"
                        % (what, tid, len(f), len(o), len(bad)))
            for i in bad[:3]:
                errs.append("    frame[%d] oracle %s" % (i, ("%(name)s %(file)s:%(line)s" % o[i])
                                                         if i < len(o) else "(none)"))
                errs.append("    frame[%d] %-6s %s" % (i, what[:6], ffmt(f[i], True)
                                                      if i < len(f) else "(none)"))
    return errs


def run_oracle(interp, pid):
    argv = ["chroot", interp.chroot, interp.exe, "-m", "profiling.sampling", "dump", "-a", str(pid)]
    env = dict(TARGET_ENV, NO_COLOR="1", TERM="dumb")
    rc, out, err, secs = run(argv, TOOL_TIMEOUT, env=env)
    vlog("oracle %s -> rc=%s in %.2fs" % (" ".join(argv), rc, secs))
    if rc != 0:
        return None, "oracle failed (rc=%s): %s" % (rc, short(err or out))
    return parse_oracle(out.decode("utf-8", "replace")), None


# --------------------------------------------------------------------------
# jobs: each starts one target process and yields one or more test results

class Result:
    def __init__(self, group, test, status, detail="", info=""):
        self.group, self.test, self.status, self.detail = group, test, status, detail
        self.info = info            # a short fact shown on the result line (sizes, counts)


def base_gt_sanity(gt, interp):
    """The ground truth comes from the interpreter we meant to run."""
    errs = []
    if not gt["python_version"].startswith(interp.minor_str + "."):
        errs.append("interpreter reports %s, expected %s.x" % (gt["python_version"],
                                                               interp.minor_str))
    if gt["debug_build"] != interp.debug:
        errs.append("debug build is %s, expected %s" % (gt["debug_build"], interp.debug))
    return errs


def gt_sanity(gt, interp):
    errs = base_gt_sanity(gt, interp)
    if not any(t["main"] for t in gt["threads"]):
        errs.append("no main thread in ground truth")
    return errs


def job_tests(interp, kind, target, opts):
    if kind in SAMPLE_JOBS:
        return SAMPLE_JOBS[kind][1]
    if kind.startswith("tasks"):
        return tasks_tests(interp, kind, opts)
    if kind == "heartbeat":
        return ["locked-kill"]
    if kind == "gcore":
        return ["gcore:" + target]
    if kind == "kcore":
        return ["kcore:" + target] + (["kcore-nobin:" + target]
                                      if interp.minor >= NOBIN_MIN else [])
    if kind == "container":
        return ["container:" + target]
    tests = [target]
    if target == "busy" and not opts.gt_only:
        tests.append("busy --locked")
    if target in ORACLE_TARGETS and interp.minor >= (3, ORACLE_MIN_MINOR):
        tests.append("oracle:" + target)
    if not opts.gt_only:
        tests.append("snapshot:" + target)
    return tests


def interp_jobs(interp, opts):
    """(kind, target) of every job for one interpreter, in output order."""
    jobs = [("dump", t) for t in DUMP_TARGETS] + [("heartbeat", "heartbeat")]
    jobs += [("tasks", TASKS_TARGET), ("tasks-many", TASKS_TARGET)]
    jobs += [("tasks-variant:" + v, TASKS_TARGET) for v in TASKS_VARIANTS]
    if not opts.gt_only:
        jobs += [("gcore", t) for t in CORE_TARGETS] + [("tasks-gcore", TASKS_TARGET)]
        jobs += [("kcore", t) for t in CORE_TARGETS]
        if interp.label in CONTAINER_LABELS:
            jobs += [("container", t) for t in CONTAINER_TARGETS]
    return jobs + sample_interp_jobs(interp, opts)


def run_job(interp, kind, target, tool, opts):
    names = job_tests(interp, kind, target, opts)
    if interp.missing:
        return [Result(interp.label, n, "SKIP", "interpreter missing: " + interp.missing)
                for n in names]
    if kind in ("gcore", "tasks-gcore") and not GCORE:
        return [Result(interp.label, n, "SKIP", "gcore not installed (Debian package gdb)")
                for n in names]
    if kind == "container" and not (shutil.which("unshare") and shutil.which("pivot_root")):
        return [Result(interp.label, n, "SKIP", "unshare/pivot_root (util-linux) not installed")
                for n in names]
    try:
        if kind == "heartbeat":
            return [locked_kill(interp, tool, opts)]
        if kind == "gcore":
            return gcore_job(interp, target, tool, opts)
        if kind == "kcore":
            return kcore_job(interp, target, tool, opts, names)
        if kind == "container":
            return container_job(interp, target, tool, opts)
        if kind == "tasks":
            return tasks_job(interp, tool, opts, names)
        if kind == "tasks-many":
            return tasks_many_job(interp, tool, opts, names)
        if kind == "tasks-gcore":
            return tasks_gcore_job(interp, tool, opts, names)
        if kind.startswith("tasks-variant:"):
            return tasks_variant_job(interp, kind.split(":", 1)[1], tool, opts, names)
        if kind in SAMPLE_JOBS:
            return sample_job(interp, kind, tool, opts, names)
        return dump_job(interp, target, tool, opts, names)
    except KeyboardInterrupt:
        raise
    except TargetError as e:
        return [Result(interp.label, n, "FAIL", "target: %s" % e) for n in names]
    except Exception as e:
        import traceback
        return [Result(interp.label, n, "FAIL", "harness error: %s\n%s"
                       % (e, traceback.format_exc())) for n in names]


def dump_job(interp, target, tool, opts, names):
    results = []
    with Target(interp, target) as tg:
        gt = tg.wait_ground_truth()
        tg.wait_settled()
        sanity = gt_sanity(gt, interp)
        if sanity:
            return [Result(interp.label, n, "FAIL", "ground truth: " + "; ".join(sanity))
                    for n in names]
        doc = None
        if opts.gt_only:
            results.append(Result(interp.label, target, "PASS",
                                  "ground truth only: %d threads, %d frames"
                                  % (len(gt["threads"]),
                                     sum(len(t["frames"]) for t in gt["threads"]))))
        else:
            doc, err = parse_dump(*tool.dump(tg.pid))
            errs = [err] if err else compare(gt, doc, interp, tg.pid)
            results.append(Result(interp.label, target, "FAIL" if errs else "PASS",
                                  "\n".join(errs)))
            # before --locked, whose ptrace stop/resume leaves blocked threads
            # runnable for a moment (state "running")
            if "snapshot:" + target in names:
                results.append(snapshot_roundtrip(interp, target, tool, tg, gt))
            if "busy --locked" in names:
                ldoc, err = parse_dump(*tool.dump(tg.pid, locked=True))
                errs = [err] if err else compare(gt, ldoc, interp, tg.pid)
                errs += check_not_stopped(tg.pid)
                results.append(Result(interp.label, "busy --locked", "FAIL" if errs else "PASS",
                                      "\n".join(errs)))
        oname = "oracle:" + target
        if oname in names:
            oracle, err = run_oracle(interp, tg.pid)
            if err:
                results.append(Result(interp.label, oname, "FAIL", err))
            else:
                busy = set(t["tid"] for t in gt["threads"] if t["busy"])
                gt_frames = dict((t["tid"], t["frames"]) for t in gt["threads"])
                gt_errs = oracle_vs(gt_frames, oracle, "ground truth", busy)
                if opts.gt_only:
                    errs = gt_errs
                elif doc is None:
                    errs = ["no pystack-dump output to compare (see the %r test)" % target]
                    if gt_errs:
                        errs.append("NOTE: the oracle also disagrees with the ground truth:")
                        errs += ["  " + e for e in gt_errs]
                    else:
                        errs.append("NOTE: the oracle agrees with the ground truth")
                else:
                    tool_frames = dict((t["tid"], t["frames"]) for t in doc["threads"])
                    errs = oracle_vs(tool_frames, oracle, "pystack-dump", busy)
                    if errs and gt_errs:
                        errs.append("NOTE: the oracle also disagrees with the ground truth:")
                        errs += ["  " + e for e in gt_errs]
                    elif errs:
                        errs.append("NOTE: the oracle agrees with the ground truth, "
                                    "so pystack-dump is wrong here")
                results.append(Result(interp.label, oname, "FAIL" if errs else "PASS",
                                      "\n".join(errs)))
    return results


def file_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return -1


def growing(path, secs=0.4):
    a = file_size(path)
    time.sleep(secs)
    return file_size(path) > a >= 0


def locked_kill(interp, tool, opts):
    """SIGKILL `pystack-dump --locked` while it holds the target paused; the
    target must carry on running (not stopped, not traced, heartbeat
    growing) and be dumpable again."""
    name = "locked-kill"
    with Target(interp, "heartbeat", extra=["heartbeat.txt"]) as tg:
        gt = tg.wait_ground_truth()
        tg.wait_settled()
        hb = tg.host_extra(0)
        if not growing(hb):
            return Result(interp.label, name, "FAIL", "heartbeat not growing before the test")
        if opts.gt_only:
            return Result(interp.label, name, "PASS", "ground truth only: heartbeat grows")
        argv = [tool.path, "--locked", "--json", str(tg.pid)]
        env = dict(os.environ, PYD_TEST_LOCKED_PAUSE_MS=str(LOCK_PAUSE_MS))
        errs = []
        tp = spawn(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        paused = None
        try:
            deadline = time.time() + LOCK_PAUSE_MS / 1000.0 * 0.8
            while time.time() < deadline and tp.poll() is None:
                st = task_states(tg.pid)
                if any(s in "tT" for s in st.values()) or tracer_pid(tg.pid) == tp.pid:
                    paused = st
                    vlog("target %d paused (task states %s, TracerPid %s)"
                         % (tg.pid, "".join(sorted(st.values())), tracer_pid(tg.pid)))
                    break
                time.sleep(0.01)
            if paused is not None:
                # The tool seizes threads one by one: the pause is complete
                # only once every thread is in a ptrace stop (under load the
                # first and the last can be milliseconds apart).
                while time.time() < deadline and tp.poll() is None:
                    st = task_states(tg.pid)
                    if st and all(v in "tT" for v in st.values()):
                        break
                    time.sleep(0.005)
                # make sure it really is paused: the heartbeat must stand still
                a = file_size(hb)
                time.sleep(0.15)
                if tp.poll() is None and file_size(hb) != a:
                    errs.append("target observed stopped/traced but heartbeat kept "
                                "growing (not all threads paused?)")
            if tp.poll() is not None:
                errs.append("pystack-dump --locked exited (rc=%s) before it could be killed; "
                            "is PYD_TEST_LOCKED_PAUSE_MS=%d implemented? stderr: %s"
                            % (tp.returncode, LOCK_PAUSE_MS, short(tp.stderr.read())))
            elif paused is None:
                errs.append("never saw the target paused (no task in t/T state, TracerPid "
                            "!= tool) within %.1fs of starting --locked"
                            % (LOCK_PAUSE_MS / 1000.0 * 0.8))
        finally:
            kill(tp)                                        # SIGKILL the tracer
            if tp.stderr:
                tp.stderr.close()
        time.sleep(0.2)
        errs += check_not_stopped(tg.pid)
        if not errs and not growing(hb, 0.5):
            errs.append("heartbeat stopped after the tracer was killed; task states %s"
                        % task_states(tg.pid))
        if not errs:
            doc, err = parse_dump(*tool.dump(tg.pid))
            errs = [("dump after the kill: " + err)] if err else \
                ["dump after the kill: " + e for e in compare(gt, doc, interp, tg.pid)]
        return Result(interp.label, name, "FAIL" if errs else "PASS", "\n".join(errs))


# --------------------------------------------------------------------------
# core files (gcore and kernel-written), snapshots, containers

CORE_TARGETS = ["threads", "names", "generators"]   # gcore and kernel cores, every interpreter
NOBIN_MIN = (3, 13)                     # cores decoded with no binaries at all (cookie scan)
CONTAINER_LABELS = ["sid-3.13", "sid-3.14", "sid-3.15"]
CONTAINER_TARGETS = ["threads", "names"]
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
_gcore_sem = threading.BoundedSemaphore(GCORE_PARALLEL)
FIXTURES_DIR = os.path.join(REPO, "tests", "fixtures")
# What tests/fixtures holds: (interpreter labels, target, kind); a "dump"
# fixture is LABEL-TARGET.{snap,ground_truth.json,dump.json} (pystack-dump
# --json), a "tasks" one LABEL-TARGET.{snap,ground_truth.json,tasks.json}
# (--tasks --json).  Together they decode every supported version from a
# snapshot, on any machine.
_SID = ["sid-3.13", "sid-3.14", "sid-3.15"]
FIXTURE_SETS = [
    (_SID, "threads", "dump"),
    (_SID, "names", "dump"),
    (["pyenv-3.6", "pyenv-3.7", "pyenv-3.8", "pyenv-3.9", "pyenv-3.10", "pyenv-3.11",
      "deb-3.11d", "pyenv-3.12"], "threads", "dump"),
    (["pyenv-3.7", "pyenv-3.8", "pyenv-3.9", "pyenv-3.10", "pyenv-3.11", "pyenv-3.12",
      "pyenv-3.13", "sid-3.14", "sid-3.15"], "asyncio_graph", "tasks"),
]
FIXTURE_MAX_BYTES = 100 * 1024
SNAP_SIZES = {}                         # label -> bytes of the recursion target's snapshot
_kcores_made = set()                    # host paths of kernel cores we expect (deleted at exit)


class CorePattern:
    """kernel.core_pattern is set to KCORE_PATTERN while kernel-core tests
    run (first use) and put back by restore() (main's finally, atexit, and
    signals through KeyboardInterrupt). The old value is also written to
    CORE_PATTERN_SAVED, so that a run killed with SIGKILL is repaired by the
    next run that takes kernel cores (repair())."""

    def __init__(self):
        self.lock = threading.Lock()
        self.old = None
        self.error = None

    def ensure(self):
        """None once the pattern is set, else why it cannot be.  Only runs
        that take kernel cores touch the pattern (and repair it first): a
        fixtures-only run (meson test) beside a full one must not."""
        with self.lock:
            if self.old is not None or self.error:
                return self.error
            CorePattern.repair()
            try:
                with open(CORE_PATTERN_FILE) as f:
                    old = f.read().rstrip("\n")
                with open(CORE_PATTERN_SAVED + ".tmp", "w") as f:
                    f.write(old)
                os.replace(CORE_PATTERN_SAVED + ".tmp", CORE_PATTERN_SAVED)
                with open(CORE_PATTERN_FILE, "w") as f:
                    f.write(KCORE_PATTERN)
            except OSError as e:
                self.error = "cannot set kernel.core_pattern (%s): %s" % (CORE_PATTERN_FILE, e)
                return self.error
            self.old = old
            vlog("core_pattern %r -> %r" % (old, KCORE_PATTERN))
            return None

    def restore(self):
        with self.lock:
            if self.old is None:
                return
            try:
                with open(CORE_PATTERN_FILE, "w") as f:
                    f.write(self.old)
                os.unlink(CORE_PATTERN_SAVED)
                vlog("core_pattern restored to %r" % self.old)
            except OSError as e:
                print("WARNING: could not restore kernel.core_pattern to %r: %s"
                      % (self.old, e), flush=True)
            self.old = None

    @staticmethod
    def repair():
        """A previous run died before restoring core_pattern: restore it."""
        try:
            with open(CORE_PATTERN_SAVED) as f:
                saved = f.read()
            with open(CORE_PATTERN_FILE) as f:
                cur = f.read().rstrip("\n")
        except OSError:
            return
        try:
            if cur == KCORE_PATTERN:
                with open(CORE_PATTERN_FILE, "w") as f:
                    f.write(saved)
                print("note: restored kernel.core_pattern to %r (left changed by an "
                      "interrupted run)" % saved, flush=True)
            os.unlink(CORE_PATTERN_SAVED)
        except OSError as e:
            print("WARNING: could not repair kernel.core_pattern: %s" % e, flush=True)


CORE_PATTERN = CorePattern()


def core_cleanup(sid_dir):
    """Delete our kernel cores; report (not delete) any other core found in
    the core directories: e.g. a crashed pystack-dump."""
    for path in list(_kcores_made):
        try:
            os.unlink(path)
        except OSError:
            pass
    for d in (KCORE_DIR, os.path.join(sid_dir, KCORE_DIR.lstrip("/"))):
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


def crashed(rc):
    """The tool timed out or died from a signal (ASan aborts included)."""
    return rc is None or rc < 0 or rc >= 128


def tool_run(tool, args, timeout=TOOL_TIMEOUT, env=None):
    """pystack-dump ARGS: (argv, rc, stdout, stderr, seconds); rc None on
    timeout."""
    argv = [tool.path] + list(args)
    rc, out, err, secs = run(argv, timeout, env=env)
    vlog("%s -> rc=%s in %.2fs" % (" ".join(argv), rc, secs))
    return argv, rc, out or b"", err or b"", secs


def tool_file_run(tool, args, timeout=TOOL_TIMEOUT):
    return tool_run(tool, args, timeout)[:4]


def parse_json_out(out):
    try:
        return json.loads(out.decode("utf-8")), None
    except (UnicodeDecodeError, ValueError) as e:
        return None, "output is not valid JSON (%s): %s" % (e, short(out))


def first_difference(a, b, path="$", added_ok=False):
    """A readable description of where two JSON values first differ.
    added_ok: object keys present only in b are ignored (b may come from a
    newer pystack-dump that reports more)."""
    if type(a) is not type(b):
        return "%s: %r vs %r" % (path, a, b)
    if isinstance(a, dict):
        for k in sorted(set(a) | (set() if added_ok else set(b))):
            if k not in a or k not in b:
                return "%s.%s: present in only one (%r vs %r)" % (path, k, a.get(k), b.get(k))
            d = first_difference(a[k], b[k], "%s.%s" % (path, k), added_ok)
            if d:
                return d
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, "%s[%d]" % (path, i), added_ok)
            if d:
                return d
        if len(a) != len(b):
            return "%s: %d vs %d entries" % (path, len(a), len(b))
        return None
    return None if a == b else "%s: %r vs %r" % (path, a, b)


def without_source(doc):
    d = dict(doc)
    d.pop("source", None)
    return d


def core_doc_checks(doc):
    """What every dump of a core must say: source core and no run state (a
    core has none).  Thread names are not in a core's notes; the tool may
    still read the Python names from memory (3.7-3.13), which compare()
    checks against the ground truth like a live dump's."""
    errs = []
    if doc.get("source") != "core":
        errs.append("source is %r, expected 'core'" % (doc.get("source"),))
    for t in doc.get("threads", []):
        if t.get("state") != "unknown":
            errs.append("thread %s: state %r, expected 'unknown' in a core"
                        % (t.get("tid"), t.get("state")))
            break
    return errs


def roundtrip_errors(live, rep, what):
    """A live document and its snapshot's decode: each says where it came
    from, and otherwise they are the same."""
    errs = []
    if live.get("source") != "process":
        errs.append("live dump: source %r, expected 'process'" % (live.get("source"),))
    if rep.get("source") != "snapshot":
        errs.append("snapshot dump: source %r, expected 'snapshot'" % (rep.get("source"),))
    d = first_difference(without_source(live), without_source(rep))
    if d:
        errs.append("the snapshot decodes differently from the live %s it recorded "
                    "(first difference, live vs snapshot: %s)" % (what, d))
    return errs


def snapshot_roundtrip(interp, target, tool, tg, gt):
    """--json --save-snapshot on the live target, then --snapshot --json:
    the same document but for "source", and equal to the ground truth."""
    name = "snapshot:" + target
    snap = os.path.join(host_tmp(), "snap-" + tg.run_id)
    try:
        argv = [tool.path, "--json", "--save-snapshot", snap, str(tg.pid)]
        rc, out, err, secs = run(argv, TOOL_TIMEOUT)
        vlog("%s -> rc=%s in %.2fs" % (" ".join(argv), rc, secs))
        live, e = parse_dump(rc, out, err, secs)
        if e:
            return Result(interp.label, name, "FAIL", "%s: %s" % (" ".join(argv), e))
        if not os.path.isfile(snap):
            return Result(interp.label, name, "FAIL", "%s exited 0 but wrote no %s"
                          % (" ".join(argv), snap))
        size = os.path.getsize(snap)
        argv2 = [tool.path, "--snapshot", snap, "--json"]
        rep, e = parse_dump(*run(argv2, TOOL_TIMEOUT))
        if e:
            return Result(interp.label, name, "FAIL", "%s: %s" % (" ".join(argv2), e))
        errs = roundtrip_errors(live, rep, "dump")
        errs += ["live dump with --save-snapshot: " + x for x in compare(gt, live, interp, tg.pid)]
        if target == "recursion":
            SNAP_SIZES[interp.label] = size
        return Result(interp.label, name, "FAIL" if errs else "PASS", "\n".join(errs),
                      info="%d bytes" % size)
    finally:
        if os.path.exists(snap):
            os.unlink(snap)


def gcore_job(interp, target, tool, opts):
    """gcore of a live target, decoded with --core and compared with the
    ground truth. Threads whose C stack gcore could not read (gdb 13 on sid:
    guard pages inside thread stack mappings) must say so (error) and hold
    the innermost frames; every other thread must match exactly."""
    name = "gcore:" + target
    with Target(interp, target, env_extra=GCORE_TARGET_ENV) as tg:
        gt = tg.wait_ground_truth()
        tg.wait_settled()
        sanity = gt_sanity(gt, interp)
        if sanity:
            return [Result(interp.label, name, "FAIL", "ground truth: " + "; ".join(sanity))]
        prefix = os.path.join(host_tmp(), "gcore-" + tg.run_id)
        with _gcore_sem:                    # at most GCORE_PARALLEL cores on disk
            core, warned, err = run_gcore(tg.pid, prefix)
            if err:
                return [Result(interp.label, name, "FAIL", err)]
            try:
                size = os.path.getsize(core)
                facts = read_core_facts(core)
                argv, rc, out, err = tool_file_run(tool, ["--core", core, "--json"])
            finally:
                os.unlink(core)
    unreadable = unreadable_stacks(facts, warned)
    cmd = " ".join(argv)
    if crashed(rc):
        return [Result(interp.label, name, "FAIL", "%s: crashed or timed out (status %s); "
                       "stderr: %s" % (cmd, rc, short(err)))]
    if rc not in (0, 9):
        return [Result(interp.label, name, "FAIL", "%s exited %d; stderr: %s"
                       % (cmd, rc, short(err)))]
    doc, e = parse_json_out(out)
    if e:
        return [Result(interp.label, name, "FAIL", "%s: %s" % (cmd, e))]
    stats = {}
    errs = core_doc_checks(doc)
    errs += compare(gt, doc, interp, tg.pid, partial=unreadable, stats=stats)
    nerr = sum(1 for t in doc.get("threads", []) if t.get("error") is not None)
    if rc == 9 and not nerr:
        errs.append("exit 9 but no thread has an error")
    if rc == 0 and nerr:
        errs.append("exit 0 but %d thread(s) have an error" % nerr)
    if rc == 9 and "could not be read" not in err.decode("utf-8", "replace"):
        errs.append("exit 9 without saying which stacks could not be read: %s" % short(err))
    info = ("%d thread(s) exact, %d with C stack unreadable in the core: error set + "
            "innermost frames; gcore: %d unreadable region(s), %d MB"
            % (stats.get("exact", 0), stats.get("partial", 0), len(warned), size >> 20))
    if errs:
        errs.insert(0, "command: %s (core deleted; C stack unreadable for tids %s)"
                    % (cmd, sorted(unreadable) or "none"))
    return [Result(interp.label, name, "FAIL" if errs else "PASS", "\n".join(errs), info=info)]


def kcore_job(interp, target, tool, opts, names):
    """A kernel-written core (SIGABRT, RLIMIT_CORE unlimited) of the target:
    --core (with --sysroot for the chroot, like a core copied off a
    container) must match the ground truth exactly; on 3.13+ also with the
    binaries hidden (--exe /nonexistent --sysroot EMPTY)."""
    err = CORE_PATTERN.ensure()
    if err:
        return [Result(interp.label, n, "SKIP", err) for n in names]
    with Target(interp, target, wrap=["prlimit", "--core=unlimited", "--"]) as tg:
        gt = tg.wait_ground_truth()
        tg.wait_settled()
        sanity = gt_sanity(gt, interp)
        if sanity:
            return [Result(interp.label, n, "FAIL", "ground truth: " + "; ".join(sanity))
                    for n in names]
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
                if crashed(rc) or rc != 0:
                    errs.append("%s exited %s (expected 0); stderr: %s" % (cmd, rc, short(err)))
                else:
                    doc, e = parse_json_out(out)
                    if e:
                        errs.append("%s: %s" % (cmd, e))
                    else:
                        errs += core_doc_checks(doc)
                        errs += compare(gt, doc, interp, tg.pid)
                    if n.startswith("kcore:") and b"build-id" in err:
                        errs.append("%s warned about build-ids (a wrong library?): %s"
                                    % (cmd, short(err)))
                    if errs:
                        errs.insert(0, "command: %s (core deleted)" % cmd)
                results.append(Result(interp.label, n, "FAIL" if errs else "PASS",
                                      "\n".join(errs),
                                      info="core %d MB, %d MB on disk"
                                      % (size >> 20, (os.stat(core).st_blocks * 512) >> 20)))
            return results
        finally:
            remove(core)


def container_job(interp, target, tool, opts):
    """The target in its own mount namespace rooted at the sid chroot: its
    maps show in-container paths, so binaries must be opened through
    /proc/PID/root. The live dump must match exactly."""
    name = "container:" + target
    with Target(interp, target, container=True) as tg:
        gt = tg.wait_ground_truth()
        tg.wait_settled()
        sanity = gt_sanity(gt, interp)
        if sanity:
            return [Result(interp.label, name, "FAIL", "ground truth: " + "; ".join(sanity))]
        try:
            with open("/proc/%d/maps" % tg.pid) as f:
                paths = set(l.split(None, 5)[5].strip() for l in f if len(l.split(None, 5)) == 6)
        except OSError as e:
            return [Result(interp.label, name, "FAIL", "cannot read maps: %s" % e)]
        if interp.exe not in paths or interp.host_path(interp.exe) in paths:
            return [Result(interp.label, name, "FAIL",
                           "setup: /proc/%d/maps does not name %s by its in-container path "
                           "(paths: %s)" % (tg.pid, interp.exe, sorted(paths)[:6]))]
        doc, err = parse_dump(*tool.dump(tg.pid))
        errs = [err] if err else compare(gt, doc, interp, tg.pid)
        if errs:
            errs.insert(0, "command: %s --json %d" % (tool.path, tg.pid))
        return [Result(interp.label, name, "FAIL" if errs else "PASS", "\n".join(errs))]


# --------------------------------------------------------------------------
# asyncio task graphs: pystack-dump --tasks (docs/tasks-json.md) against the
# ground truth of tests/targets/asyncio_graph.py

TASKS_TARGET = "asyncio_graph"
TASKS_MANY = 1000                       # the many=N variant: N more tasks
TASKS_MANY_MAX_SECS = 20.0              # generous wall time for --tasks --json on it
TASKS_DOCUMENTED_MIN = (3, 14)          # docs/tasks-json.md: supported from here on
TASKS_ORACLE_MIN = (3, 14)              # python3.X -m asyncio ps (in the chroot)
TASKS_UNSUPPORTED = "task graphs not supported for this version yet"
_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception))(: .*)?$")
# the target dying of one of these before its ground truth means this Python
# lacks something it uses (SKIP, naming it); anything else is a FAIL
_MISSING_FEATURE = re.compile(
    r"^(SyntaxError|ImportError|ModuleNotFoundError|NameError"
    r"|AttributeError: (module|type object) '[^']*' has no attribute"
    r"|TypeError: .*(unexpected keyword argument|positional argument)"
    r"|RuntimeError: (There is no current event loop|.*attached to a different loop))")


class TargetCannotRun(Exception):
    pass


def wait_tasks_truth(tg, timeout=GT_TIMEOUT):
    """Like Target.wait_ground_truth, but an uncaught exception in the log
    (a thread dying does not end the process) ends the wait after 2 s, and a
    failure that names a feature this Python lacks raises TargetCannotRun."""
    deadline = time.time() + timeout
    err = tg.gt_host + ".error"
    tb_seen = None
    while not STOP.is_set():
        if os.path.exists(tg.gt_host):
            return tg.wait_ground_truth(5)
        log = tg.log_tail(20000)
        if tb_seen is None and "Traceback (most recent call last)" in log:
            tb_seen = time.time()
        ended = tg.proc.poll() is not None or os.path.exists(err)
        if ended or (tb_seen and time.time() - tb_seen > 2) or time.time() > deadline:
            exc = [l for l in log.splitlines() if _EXC_LINE.match(l)]
            if exc and _MISSING_FEATURE.match(exc[-1]):
                raise TargetCannotRun(exc[-1].strip())
            if ended:
                return tg.wait_ground_truth(1)          # raises, with the details
            if tb_seen:
                raise TargetError("the target raised before writing its ground truth:\n"
                                  + tg.log_tail())
            raise TargetError("no ground truth after %.0fs:\n%s" % (timeout, tg.log_tail()))
        time.sleep(0.05)
    raise KeyboardInterrupt


def wait_all_sleeping(pid, timeout=15.0):
    """Every thread of pid sleeps in the kernel, twice 50 ms apart."""
    deadline = time.time() + timeout
    streak, st = 0, {}
    while time.time() < deadline:
        st = task_states(pid)
        if not st:
            raise TargetError("target died")
        streak = streak + 1 if all(s in "SD" for s in st.values()) else 0
        if streak >= 2:
            return
        time.sleep(0.05)
    raise TargetError("threads never settled: %s" % st)


def tasks_gt_sanity(gt, interp):
    errs = base_gt_sanity(gt, interp)
    if not gt.get("tasks"):
        errs.append("no tasks in the ground truth")
    return errs


def tasks_run(tool, args, timeout=TOOL_TIMEOUT):
    return tool_run(tool, ["--tasks"] + list(args), timeout)


def tasks_unsupported(rc, err):
    return rc == 6 and b"not supported yet" in err


def unsupported_result(interp, names, argv, err):
    """Exit 6 'not supported yet': SKIP, except where docs/tasks-json.md says
    the version is supported."""
    if interp.minor >= TASKS_DOCUMENTED_MIN:
        return [Result(interp.label, n, "FAIL", "%s exited 6 (%s), but docs/tasks-json.md "
                       "says CPython %d.%d+ is supported" % (" ".join(argv), short(err, 300),
                                                           *TASKS_DOCUMENTED_MIN))
                for n in names]
    return [Result(interp.label, n, "SKIP", TASKS_UNSUPPORTED) for n in names]


def parse_tasks(argv, rc, out, err, secs, ok=(0,)):
    """Returns (doc, error string). With a wrong exit status the error is
    set, and doc is still the JSON printed if any (to show how it differs)."""
    cmd = " ".join(argv)
    if rc is None:
        return None, "%s: timed out after %.0fs; stderr: %s" % (cmd, secs, short(err))
    doc, e = parse_json_out(out)
    if rc not in ok:
        return (None if e else doc), "%s: exited %d (expected %s); stderr: %s" % (
            cmd, rc, "/".join(map(str, ok)), short(err))
    return doc, (None if e is None else "%s: %s" % (cmd, e))


def with_graph_diff(e, doc, gt, interp):
    """[e] plus, if a document came with the error, how it differs."""
    if doc is None:
        return [e]
    diff = compare_tasks(gt, doc, interp)
    return [e, "the JSON it printed, against the ground truth: "
            + ("no difference" if not diff else "")] + ["  " + x for x in diff]


def check_tasks_schema(doc):
    errs = []
    if not isinstance(doc, dict):
        return ["top level is %s, not an object" % type(doc).__name__]
    for k, ok in (("pid", _is_int), ("python_version", lambda v: isinstance(v, str)),
                  ("binary", lambda v: isinstance(v, str)),
                  ("asyncio_loaded", lambda v: isinstance(v, bool)),
                  ("truncated", lambda v: isinstance(v, bool)),
                  ("error", lambda v: v is None or isinstance(v, str)),
                  ("source", lambda v: v in ("process", "core", "snapshot"))):
        if k not in doc or not ok(doc[k]):
            errs.append("%s missing or invalid: %r" % (k, doc.get(k)))
    cyc = doc.get("cycles")
    if not (isinstance(cyc, list) and all(isinstance(c, list) and all(_is_int(i) for i in c)
                                          for c in cyc)):
        errs.append("cycles missing or not a list of lists of ids")
    tasks = doc.get("tasks")
    if not isinstance(tasks, list):
        return errs + ["tasks missing or not a list"]
    for i, t in enumerate(tasks):
        w = "tasks[%d]" % i
        if not isinstance(t, dict):
            errs.append("%s is not an object" % w)
            continue
        if not _is_int(t.get("id")):
            errs.append("%s.id not an int: %r" % (w, t.get("id")))
        if not isinstance(t.get("name"), str):
            errs.append("%s.name not a string: %r" % (w, t.get("name")))
        if t.get("state") not in ("pending", "done", "cancelled", "unknown"):
            errs.append("%s.state invalid: %r" % (w, t.get("state")))
        if "thread" not in t or not (t["thread"] is None or _is_int(t["thread"])):
            errs.append("%s.thread missing or not int|null" % w)
        if not isinstance(t.get("running"), bool):
            errs.append("%s.running missing or not a bool" % w)
        if "error" not in t or not (t["error"] is None or isinstance(t["error"], str)):
            errs.append("%s.error missing or not str|null" % w)
        for k in ("awaits", "awaited_by"):
            if not (isinstance(t.get(k), list) and all(_is_int(x) for x in t[k])):
                errs.append("%s.%s missing or not a list of ids" % (w, k))
        frames = t.get("coroutine_stack")
        if not isinstance(frames, list):
            errs.append("%s.coroutine_stack missing or not a list" % w)
            continue
        for j, fr in enumerate(frames):
            errs += frame_schema_errors("%s.coroutine_stack[%d]" % (w, j), fr)
        if len(errs) > 20:
            return errs[:20] + ["..."]
    return errs


def compare_tasks(gt, doc, interp):
    """Compare a --tasks --json document with asyncio_graph's ground truth:
    the same tasks (by id(task) if recorded, else by name), and for each its
    name, state, thread, running, coroutine_stack (function, file, line;
    qualname on 3.11+) and every awaits/awaited_by edge; the cycles."""
    errs = check_tasks_schema(doc)
    if errs:
        return ["schema: " + e for e in errs]
    qual = interp.minor >= (3, 11)
    if doc["pid"] != gt["pid"]:
        errs.append("pid: expected %d, got %d" % (gt["pid"], doc["pid"]))
    if doc["python_version"] != gt["python_version"]:
        errs.append("python_version: expected %r, got %r" % (gt["python_version"],
                                                              doc["python_version"]))
    if doc["asyncio_loaded"] is not True:
        errs.append("asyncio_loaded is %r, expected true" % doc["asyncio_loaded"])
    if doc["truncated"]:
        errs.append("truncated is true (%d tasks)" % len(doc["tasks"]))
    if doc["error"] is not None:
        errs.append("error %r: the task lists were not read to their end" % doc["error"])
    by_id = all("id" in t for t in gt["tasks"])
    key = "id" if by_id else "name"
    gname = dict((t["id"], t["name"]) for t in doc["tasks"])
    if by_id:
        gname.update((t["id"], t["name"]) for t in gt["tasks"])

    def lab(i):
        return "%r (0x%x)" % (gname.get(i, "?"), i) if _is_int(i) else repr(i)

    def edge_keys(ids, own):
        """Edges as match keys: ids, or names when matching by name."""
        return sorted(ids) if by_id else sorted(own.get(i, "0x%x" % i) for i in ids)

    got = {}
    for t in doc["tasks"]:
        if t[key] in got:
            errs.append("task %s listed twice" % lab(t["id"]))
        got[t[key]] = t
    exp = dict((t[key], t) for t in gt["tasks"])
    for k in sorted(set(exp) - set(got), key=str):
        errs.append("task %s missing from the dump" % (lab(k) if by_id else repr(k)))
    for k in sorted(set(got) - set(exp), key=str):
        g = got[k]
        errs.append("unexpected task %s in the dump (%d frames, innermost %s)"
                    % (lab(g["id"]), len(g["coroutine_stack"]),
                       ffmt(g["coroutine_stack"][0], qual) if g["coroutine_stack"] else "-"))
    for k in sorted(set(exp) & set(got), key=str):
        e, g = exp[k], got[k]
        what = "task %s" % lab(g["id"])
        if g["name"] != e["name"]:
            errs.append("%s: name %r, expected %r" % (what, g["name"], e["name"]))
        for fld in ("state", "thread", "running"):
            if fld in e and g[fld] != e[fld]:
                errs.append("%s: %s %r, expected %r" % (what, fld, g[fld], e[fld]))
        if g["error"] is not None:
            errs.append("%s: error %r on a stack that must be complete" % (what, g["error"]))
        if not qual:
            withq = [i for i, f in enumerate(g["coroutine_stack"]) if f.get("qualname") is not None]
            if withq:
                errs.append("%s: qualname must be null before 3.11, coroutine_stack[%d] has %r"
                            % (what, withq[0], g["coroutine_stack"][withq[0]]["qualname"]))
        errs += diff_frames(e["coroutine_stack"], g["coroutine_stack"], qual,
                            what + " coroutine_stack")
        for fld in ("awaits", "awaited_by"):
            ev = sorted(e[fld]) if by_id else sorted(e[fld], key=str)
            gv = edge_keys(g[fld], gname)
            if ev != gv:
                errs.append("%s: %s [%s], expected [%s]"
                            % (what, fld, ", ".join(lab(i) if by_id else repr(i) for i in gv),
                               ", ".join(lab(i) if by_id else repr(i) for i in ev)))
    # the document's own consistency: both ends of every edge, ids listed
    ids = set(t["id"] for t in doc["tasks"])
    aw = set((t["id"], b) for t in doc["tasks"] for b in t["awaits"])
    ab = set((a, t["id"]) for t in doc["tasks"] for a in t["awaited_by"])
    for a, b in sorted(aw ^ ab)[:5]:
        errs.append("edge %s -> %s is in only one of awaits/awaited_by" % (lab(a), lab(b)))
    for a, b in sorted(aw | ab):
        if a not in ids or b not in ids:
            errs.append("edge %s -> %s names a task not in tasks" % (lab(a), lab(b)))
            break
    if by_id and "cycles" in gt:
        ec = sorted(tuple(sorted(c)) for c in gt["cycles"])
        gc_ = sorted(tuple(sorted(set(c))) for c in doc["cycles"])
        if ec != gc_:
            errs.append("cycles %s, expected %s"
                        % ([[lab(i) for i in c] for c in gc_], [[lab(i) for i in c] for c in ec]))
    if len(errs) > 60:
        errs = errs[:60] + ["... %d more" % (len(errs) - 60)]
    return errs


def tasks_info(doc):
    return "%d tasks, %d edges" % (len(doc["tasks"]), sum(len(t["awaits"]) for t in doc["tasks"]))


def mentions(text, name):
    return re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(name), text) is not None


# -- python3.X -m asyncio ps PID (3.14+, in the chroot)

_PS_ROW = re.compile(r"^(\d+)( +)(0x[0-9a-fA-F]+) ")


def parse_asyncio_ps(text):
    """Rows of `python -m asyncio ps`, printed as
    f"{tid:<10} {task_id:<20} {name:<20} {stack:<50} {chain:<50} {awaiter_name:<15}
    {awaiter_id:<15}": one row per (task, awaiter), awaiter id 0x0 for none.
    Returns [(tid, task id, name, awaiter id or None)]."""
    rows = []
    for line in text.splitlines():
        m = _PS_ROW.match(line)
        if not m:
            continue
        tid, tidw, tidf = int(m.group(1)), max(10, len(m.group(1))), m.group(3)
        start = tidw + 1 + max(20, len(tidf)) + 1
        if line[start + 20:start + 21] == " ":
            name = line[start:start + 20].rstrip()
        else:                            # longer than its column (no spaces in our names)
            name = line[start:].split(" ", 1)[0]
        aw = int(line.split()[-1], 16)
        rows.append((tid, int(tidf, 16), name, aw or None))
    return rows


def run_asyncio_ps(interp, pid):
    argv = ["chroot", interp.chroot, interp.exe, "-m", "asyncio", "ps", str(pid)]
    env = dict(TARGET_ENV, NO_COLOR="1", TERM="dumb")
    rc, out, err, secs = run(argv, TOOL_TIMEOUT, env=env)
    vlog("%s -> rc=%s in %.2fs" % (" ".join(argv), rc, secs))
    if rc != 0:
        return None, "%s failed (rc=%s): %s" % (" ".join(argv), rc, short(err or out))
    rows = parse_asyncio_ps(out.decode("utf-8", "replace"))
    if not rows:
        return None, "%s printed no task rows: %s" % (" ".join(argv), short(out))
    return rows, None


def asyncio_ps_vs(doc, rows, main_tid, minor, what):
    """Compare what `asyncio ps` can show with a --tasks document (or the
    ground truth): the task set, names, threads, (task, awaiter) pairs.
    3.14's ps lists only the main thread's tasks and thread-less ones, and
    prints non-ASCII names blank. Returns (errors, facts)."""
    main_only = minor < (3, 15)
    shown = [t for t in doc["tasks"]
             if not main_only or t.get("thread") in (main_tid, None)]
    ids = set(t["id"] for t in shown)
    byid = dict((t["id"], t) for t in doc["tasks"])
    errs = []
    ps_ids = set(r[1] for r in rows)
    for i in sorted(ids - ps_ids):
        errs.append("%s: task %r (0x%x, thread %s) not in asyncio ps"
                    % (what, byid[i]["name"], i, byid[i].get("thread")))
    for i in sorted(ps_ids - ids):
        r = next(r for r in rows if r[1] == i)
        errs.append("%s: asyncio ps shows task %r (0x%x, tid %d) that is not in %s"
                    % (what, r[2], i, r[0], what))
    skipped_names = 0
    for tid, i, name, aw in rows:
        t = byid.get(i)
        if t is None or i not in ids:
            continue
        if main_only and not all(ord(c) < 128 for c in t["name"]):
            skipped_names += 1
        elif name != t["name"]:
            errs.append("%s: task 0x%x is named %r, asyncio ps says %r" % (what, i, t["name"], name))
        if tid != (t.get("thread") or 0):
            errs.append("%s: task %r thread %s, asyncio ps says tid %d"
                        % (what, t["name"], t.get("thread"), tid))
    want = set((t["id"], a) for t in shown for a in t["awaited_by"])
    have = set((i, aw) for _tid, i, _n, aw in rows if aw is not None)
    for i, a in sorted(want - have):
        errs.append("%s: %r awaited by %r, not in asyncio ps"
                    % (what, byid[i]["name"], byid.get(a, {}).get("name", hex(a))))
    for i, a in sorted(have - want):
        errs.append("%s: asyncio ps: 0x%x awaited by 0x%x, not in %s" % (what, i, a, what))
    facts = ("%d tasks, %d awaited-by pairs compared (names, tids, pairs)"
             % (len(ids & ps_ids), len(want & have)))
    if main_only:
        facts += ("; 3.14's asyncio ps shows only main-thread and thread-less tasks and "
                  "blanks non-ASCII names: %d task(s) of other threads and %d name(s) "
                  "not compared" % (len(doc["tasks"]) - len(shown), len(set(
                      i for _t, i, _n, _a in rows if i in ids and not all(
                          ord(c) < 128 for c in byid[i]["name"])))))
    return errs, facts


def tasks_tests(interp, kind, opts):
    if kind == "tasks-many":
        return ["tasks-many:%d" % TASKS_MANY]
    if kind == "tasks-gcore":
        return ["tasks-gcore"]
    if kind.startswith("tasks-variant:"):
        return [kind]
    names = ["tasks:" + TASKS_TARGET]
    if not opts.gt_only:
        names += ["tasks-tree", "tasks-table", "tasks-snapshot"]
        if interp.chroot and interp.minor >= TASKS_ORACLE_MIN:
            names.append("tasks-oracle:asyncio ps")
        names.append("tasks --locked")
    return names


def _start_tasks_target(interp, names, tg):
    """Ground truth, settled, sane: (gt, None) or (None, [results])."""
    try:
        gt = wait_tasks_truth(tg)
    except TargetCannotRun as e:
        if interp.minor >= TASKS_DOCUMENTED_MIN:    # made for these: a real failure
            return None, [Result(interp.label, n, "FAIL", "target %s cannot run on %s, a "
                                 "version pystack-dump supports task graphs for: %s\n%s"
                                 % (TASKS_TARGET, interp.minor_str, e, tg.log_tail()))
                          for n in names]
        return None, [Result(interp.label, n, "SKIP", "target %s cannot run on %s: %s"
                             % (TASKS_TARGET, interp.minor_str, e)) for n in names]
    wait_all_sleeping(tg.pid)
    sanity = tasks_gt_sanity(gt, interp)
    if sanity:
        return None, [Result(interp.label, n, "FAIL", "ground truth: " + "; ".join(sanity))
                      for n in names]
    return gt, None


def tasks_job(interp, tool, opts, names):
    """The task graph of a live asyncio_graph target: --tasks --json against
    the ground truth; the tree and the table; a snapshot round trip; on
    3.14+ `python -m asyncio ps`; --locked."""
    res = []
    with Target(interp, TASKS_TARGET) as tg:
        gt, early = _start_tasks_target(interp, names, tg)
        if early:
            return early
        if opts.gt_only:
            return [Result(interp.label, names[0], "PASS", "ground truth only",
                           info="%d tasks" % len(gt["tasks"]))]
        pid = str(tg.pid)
        argv, rc, out, err, secs = tasks_run(tool, ["--json", pid])
        if tasks_unsupported(rc, err):
            return unsupported_result(interp, names, argv, err)
        doc, e = parse_tasks(argv, rc, out, err, secs)
        errs = with_graph_diff(e, doc, gt, interp) if e else compare_tasks(gt, doc, interp)
        if errs and not e:
            errs.insert(0, "command: " + " ".join(argv))
        res.append(Result(interp.label, names[0], "FAIL" if errs else "PASS", "\n".join(errs),
                          info=tasks_info(doc) if doc else ""))
        if e:
            doc = None
        for n, args in (("tasks-tree", []), ("tasks-table", ["--table"])):
            argv, rc, out, err, secs = tasks_run(tool, args + [pid])
            cmd = " ".join(argv)
            if rc != 0:
                errs = ["%s exited %s (expected 0); stderr: %s" % (cmd, rc, short(err))]
            else:
                text = out.decode("utf-8", "replace")
                miss = [t["name"] for t in gt["tasks"] if not mentions(text, t["name"])]
                errs = ["%s does not mention task(s) %s; stdout: %s"
                        % (cmd, ", ".join(map(repr, miss)), short(out, 1500))] if miss else []
            res.append(Result(interp.label, n, "FAIL" if errs else "PASS", "\n".join(errs)))
        res.append(tasks_snapshot_roundtrip(interp, tool, tg, gt))
        if "tasks-oracle:asyncio ps" in names:
            res.append(tasks_oracle(interp, gt, doc, tg.pid))
        argv, rc, out, err, secs = tasks_run(tool, ["--locked", "--json", pid])
        ldoc, e = parse_tasks(argv, rc, out, err, secs)
        errs = with_graph_diff(e, ldoc, gt, interp) if e else compare_tasks(gt, ldoc, interp)
        errs += check_not_stopped(tg.pid)
        if errs and not e:
            errs.insert(0, "command: " + " ".join(argv))
        res.append(Result(interp.label, "tasks --locked", "FAIL" if errs else "PASS",
                          "\n".join(errs)))
    return res


def tasks_oracle(interp, gt, doc, pid):
    n = "tasks-oracle:asyncio ps"
    rows, err = run_asyncio_ps(interp, pid)
    if err:
        return Result(interp.label, n, "FAIL", err)
    gt_errs, facts = asyncio_ps_vs(gt, rows, gt["main_tid"], interp.minor, "ground truth")
    if doc is None:
        errs = ["no pystack-dump --tasks --json output to compare (see the tasks:%s test)"
                % TASKS_TARGET]
        errs += (["NOTE: asyncio ps also disagrees with the ground truth:"]
                 + ["  " + x for x in gt_errs]) if gt_errs else \
            ["NOTE: asyncio ps agrees with the ground truth"]
    else:
        errs, facts = asyncio_ps_vs(doc, rows, gt["main_tid"], interp.minor, "pystack-dump")
        if errs and gt_errs:
            errs += ["NOTE: asyncio ps also disagrees with the ground truth:"] + \
                ["  " + x for x in gt_errs]
        elif errs:
            errs.append("NOTE: asyncio ps agrees with the ground truth, so pystack-dump "
                        "is wrong here")
    if errs:
        errs.insert(0, "command: chroot %s %s -m asyncio ps %d" % (interp.chroot, interp.exe, pid))
    return Result(interp.label, n, "FAIL" if errs else "PASS", "\n".join(errs), info=facts)


def tasks_snapshot_roundtrip(interp, tool, tg, gt):
    """--tasks --json --save-snapshot on the live target, then --snapshot
    --tasks --json: the same document but for "source", and equal to the
    ground truth."""
    n = "tasks-snapshot"
    snap = os.path.join(host_tmp(), "tasks-snap-" + tg.run_id)
    try:
        argv, rc, out, err, secs = tasks_run(tool, ["--json", "--save-snapshot", snap,
                                                    str(tg.pid)])
        live, e = parse_tasks(argv, rc, out, err, secs)
        if e:
            return Result(interp.label, n, "FAIL", e)
        if not os.path.isfile(snap):
            return Result(interp.label, n, "FAIL", "%s exited 0 but wrote no %s"
                          % (" ".join(argv), snap))
        size = os.path.getsize(snap)
        argv2 = [tool.path, "--snapshot", snap, "--tasks", "--json"]
        rc, out, err, secs = run(argv2, TOOL_TIMEOUT)
        rep, e = parse_tasks(argv2, rc, out or b"", err or b"", secs)
        if e:
            return Result(interp.label, n, "FAIL", "after %s:\n%s" % (" ".join(argv), e))
        errs = roundtrip_errors(live, rep, "graph")
        errs += ["live graph with --save-snapshot: " + x for x in compare_tasks(gt, live, interp)]
        if errs:
            errs.insert(0, "commands: %s; %s" % (" ".join(argv), " ".join(argv2)))
        return Result(interp.label, n, "FAIL" if errs else "PASS", "\n".join(errs),
                      info="%d bytes" % size)
    finally:
        if os.path.exists(snap):
            os.unlink(snap)


def tasks_gcore_job(interp, tool, opts, names):
    """gcore of a live asyncio_graph target (MALLOC_ARENA_MAX=1, see
    GCORE_TARGET_ENV), then --core CORE --tasks --json: the same graph as the
    ground truth and as the live --tasks --json."""
    n = names[0]
    with Target(interp, TASKS_TARGET, env_extra=GCORE_TARGET_ENV) as tg:
        gt, early = _start_tasks_target(interp, names, tg)
        if early:
            return early
        argv, rc, out, err, secs = tasks_run(tool, ["--json", str(tg.pid)])
        if tasks_unsupported(rc, err):
            return unsupported_result(interp, names, argv, err)
        live, live_err = parse_tasks(argv, rc, out, err, secs)
        prefix = os.path.join(host_tmp(), "gcore-" + tg.run_id)
        with _gcore_sem:
            core, warned, err = run_gcore(tg.pid, prefix)
            if err:
                return [Result(interp.label, n, "FAIL", err)]
            try:
                size = os.path.getsize(core)
                argv, rc, out, err = tool_file_run(tool, ["--core", core, "--tasks", "--json"])
            finally:
                os.unlink(core)
    cmd = " ".join(argv)
    doc, e = parse_tasks(argv, rc, out, err, 0)
    if e:
        errs = with_graph_diff(e + " (core deleted)", doc, gt, interp)
    else:
        errs = []
        if doc.get("source") != "core":
            errs.append("source %r, expected 'core'" % (doc.get("source"),))
        errs += compare_tasks(gt, doc, interp)
        if live_err:
            errs.append("no live graph to compare with: " + live_err)
        else:
            d = first_difference(without_source(live), without_source(doc))
            if d:
                errs.append("the core decodes differently from the live graph (first "
                            "difference, live vs core: %s)" % d)
        if errs:
            errs.insert(0, "command: %s (core deleted; gcore: %d unreadable region(s))"
                        % (cmd, len(warned)))
    return [Result(interp.label, n, "FAIL" if errs else "PASS", "\n".join(errs),
                   info="gcore %d MB, %d unreadable region(s)" % (size >> 20, len(warned)))]


# Target options run as task graphs of their own: (first version, why
# earlier ones are skipped, version from which it is skipped or None, why).
TASKS_VARIANTS = {
    # every task a pure-Python asyncio.tasks._PyTask
    "pytasks": ((3, 7), "asyncio task graphs start at 3.7", None, ""),
    # the main loop's tasks created by asyncio.eager_task_factory
    "eager": ((3, 12), "eager tasks exist from 3.12", None, ""),
}


def tasks_variant_job(interp, variant, tool, opts, names):
    """asyncio_graph with a target option: --tasks --json against its ground
    truth, every task, frame and edge, like tasks:asyncio_graph."""
    low, why_low, high, why_high = TASKS_VARIANTS[variant]
    if interp.minor < low:
        return [Result(interp.label, names[0], "SKIP", why_low)]
    if high and interp.minor >= high:
        return [Result(interp.label, names[0], "SKIP", why_high)]
    with Target(interp, TASKS_TARGET, args=[variant]) as tg:
        gt, early = _start_tasks_target(interp, names, tg)
        if early:
            return early
        if opts.gt_only:
            return [Result(interp.label, names[0], "PASS", "ground truth only")]
        argv, rc, out, err, secs = tasks_run(tool, ["--json", str(tg.pid)])
        if tasks_unsupported(rc, err):
            return unsupported_result(interp, names, argv, err)
        doc, e = parse_tasks(argv, rc, out, err, secs)
        errs = with_graph_diff(e, doc, gt, interp) if e else compare_tasks(gt, doc, interp)
        if errs and not e:
            errs.insert(0, "command: " + " ".join(argv))
        return [Result(interp.label, names[0], "FAIL" if errs else "PASS", "\n".join(errs),
                       info=tasks_info(doc) if doc and not e else "")]


def tasks_many_job(interp, tool, opts, names):
    """asyncio_graph with many=TASKS_MANY and an await cycle: every task
    listed (count and ids), the whole graph as in tasks:asyncio_graph (the
    cycle included), within TASKS_MANY_MAX_SECS."""
    n = names[0]
    with Target(interp, TASKS_TARGET, args=["many=%d" % TASKS_MANY, "cycle"]) as tg:
        gt, early = _start_tasks_target(interp, names, tg)
        if early:
            return early
        if interp.minor >= (3, 8):
            nmany = sum(1 for t in gt["tasks"] if t["name"].startswith("many-"))
        else:
            # Tasks have no names before 3.8: recognise the many-* tasks by
            # their own coroutine (the last frame), leaf(); a few other
            # tasks run leaf() too, hence "at least".
            nmany = sum(1 for t in gt["tasks"] if t["coroutine_stack"]
                        and t["coroutine_stack"][-1]["function"] == "leaf")
            nmany = TASKS_MANY if nmany >= TASKS_MANY else nmany
        if nmany != TASKS_MANY:
            return [Result(interp.label, n, "FAIL", "ground truth has %d many-* tasks, "
                           "expected %d" % (nmany, TASKS_MANY))]
        if opts.gt_only:
            return [Result(interp.label, n, "PASS", "ground truth only",
                           info="%d tasks" % len(gt["tasks"]))]
        argv, rc, out, err, secs = tasks_run(tool, ["--json", str(tg.pid)],
                                             timeout=max(TOOL_TIMEOUT, 3 * TASKS_MANY_MAX_SECS))
        if tasks_unsupported(rc, err):
            return unsupported_result(interp, names, argv, err)
        doc, e = parse_tasks(argv, rc, out, err, secs)
        errs = [e] if e else []
        if doc is not None and e:
            errs = with_graph_diff(e, doc, gt, interp)
        elif doc is not None:
            errs += ["schema: " + x for x in check_tasks_schema(doc)]
            if not errs:
                if len(doc["tasks"]) != len(gt["tasks"]):
                    errs.append("%d tasks, expected %d" % (len(doc["tasks"]), len(gt["tasks"])))
                exp, got = set(t["id"] for t in gt["tasks"]), set(t["id"] for t in doc["tasks"])
                if exp != got:
                    errs.append("task ids differ: %d missing, %d unexpected"
                                % (len(exp - got), len(got - exp)))
                if not gt.get("cycles"):
                    errs.append("ground truth has no await cycle (target option 'cycle')")
                errs += compare_tasks(gt, doc, interp)
        if secs > TASKS_MANY_MAX_SECS:
            errs.append("took %.1fs, more than %.0fs" % (secs, TASKS_MANY_MAX_SECS))
        if errs and not e:
            errs.insert(0, "command: " + " ".join(argv))
        return [Result(interp.label, n, "FAIL" if errs else "PASS", "\n".join(errs),
                       info="%d tasks, %d await cycle(s), in %.2fs"
                       % (len(gt["tasks"]), len(gt.get("cycles") or ()), secs))]


# --------------------------------------------------------------------------
# the sampling profiler: pystack-dump sample (wall, cpu, gil and async
# modes against targets that know what they do; exits; launch; formats)

SAMPLE_SECS = 2                         # -d of each accuracy run
SAMPLE_RATE = 1000                      # -r of every run
SAMPLE_TIMEOUT = 40.0
SAMPLE_MIN_TICK_SHARE = 0.5             # ticks >= this share of rate x duration
SAMPLE_MAX_ERROR_SHARE = 0.10           # errors <= this share of ticks
SPLIT_TOLERANCE = 5.0                   # points: wall-mode split vs the target's own
CPU_BUSY_MIN = 0.90                     # cpu mode: the busy thread's share of samples
IDLE_MAX = 0.05                         # cpu mode: a sleeping thread's share of samples
GIL_HOLDER_MIN = 0.50                   # gil mode: the holder's share of samples
GIL_IN_HOLD_MIN = 0.80                  # gil mode: of the holder's samples, in hold_gil()
# gil mode: a sleeping thread's share.  Not 0: the GIL's "locked" flag is
# set before "last_holder" changes, so a read in between can name a thread
# that no longer holds it (seen once: 1 of 1,922 samples for the sleeping
# main thread, sid 3.14d on a loaded machine).
GIL_IDLE_MAX = 0.01
ASYNC_AWAIT_MIN = 0.5                   # async mode: the sleeper's await samples / ticks
# async mode decodes the whole task graph every round (60-100 reads a
# task): 800-950 rounds a second for the target's tasks on a quiet machine,
# so at -r 1000 it must keep at least this share of the ticks.
ASYNC_MIN_TICK_SHARE = 0.3
ASYNC_BURN_MIN = 0.3                    # async mode: the burner's CPU samples / ticks
SAMPLE_ASYNC_MIN = (3, 7)               # asyncio.run, the async target
SAMPLE_NO_ASYNC = "asyncio target needs CPython 3.7+ (asyncio.run)"
SAMPLE_EXIT_AFTER = 1.0                 # exit-after= of the targets that exit mid-run
SAMPLE_STOP_AFTER = 1.0                 # SIGINT this long after the start
SAMPLE_FORMAT_TICKS = 300               # -n of each format run
MAX_TICKS = 20000                       # -n of the -r max run
MAX_READS = 2.0                         # reads a sample at -r max (DESIGN: one or two)
MAX_MIN_RATE = 5000                     # ticks/s at -r max, a floor (the goal: bench/)
PROFILE_FORMAT = "pystack-dump-profile"
SUMMARY_WORDS = ("samples", "errors", "missed", "reads per")   # the summary on stderr
FLAMEGRAPH_SCREENSHOT = "/tmp/pyd-sample-flamegraph.png"   # kept after the run

# job kind -> (target, tests)
SAMPLE_JOBS = {
    "sample-split": ("sample_split", ["sample:wall 75/25", "sample:collapsed", "sample:rate max",
                                      "sample:sigint"]),
    "sample-cpu": ("sample_cpu", ["sample:cpu"]),
    "sample-gil": ("sample_gil", ["sample:gil"]),
    "sample-async": ("sample_async", ["sample:async", "sample:async rate", "sample:async sigint"]),
    "sample-exit": ("sample_split", ["sample:target exits"]),
    "sample-async-exit": ("sample_async", ["sample:async, target exits"]),
    "sample-launch": ("sample_split", ["sample:launch"]),
    "sample-formats": ("sample_split", ["sample-format:" + f for f in (
        "table", "collapsed", "json", "speedscope", "gecko", "pprof", "flamegraph")]),
}


def sample_formats_label(interps):
    """The one interpreter the format consumers run on: sid-3.15, else the
    newest present (release builds first)."""
    present = [i for i in interps if not i.missing]
    for i in present:
        if i.label == "sid-3.15":
            return i.label
    present.sort(key=lambda i: (i.minor, not i.debug))
    return present[-1].label if present else None


def sample_interp_jobs(interp, opts):
    kinds = [k for k in SAMPLE_JOBS if k != "sample-formats"]
    if interp.label == getattr(opts, "sample_formats_label", None):
        kinds.append("sample-formats")
    return [(k, SAMPLE_JOBS[k][0]) for k in kinds]


def sample_out(tag, ext=".json"):
    return os.path.join(host_tmp(), "sample-%s-%s%s" % (tag, uuid.uuid4().hex[:8], ext))


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_profile(doc, pid, version, mode):
    """The json format's contract: fields, types, and a consistent tree
    (totals add up, every sample counted once)."""
    errs = []
    if not isinstance(doc, dict):
        return ["top level is %s, not an object" % type(doc).__name__]
    if doc.get("format") != PROFILE_FORMAT or doc.get("version") != 1:
        errs.append("format/version %r/%r, expected %r/1"
                    % (doc.get("format"), doc.get("version"), PROFILE_FORMAT))
    for k in ("pid", "ticks", "samples", "errors", "missed", "reads", "cpu_samples",
              "await_samples"):
        if not (_is_int(doc.get(k)) and doc[k] >= 0):
            errs.append("%s missing or not a count: %r" % (k, doc.get(k)))
    for k in ("rate_hz", "duration_s", "interval_s"):
        if not _num(doc.get(k)):
            errs.append("%s missing or not a number: %r" % (k, doc.get(k)))
    for k in ("lines", "truncated"):
        if not isinstance(doc.get(k), bool):
            errs.append("%s missing or not a bool: %r" % (k, doc.get(k)))
    if doc.get("pid") != pid:
        errs.append("pid %r, expected %d" % (doc.get("pid"), pid))
    if version is not None and doc.get("python_version") != version:
        errs.append("python_version %r, expected %r" % (doc.get("python_version"), version))
    if doc.get("mode") != mode:
        errs.append("mode %r, expected %r" % (doc.get("mode"), mode))
    if doc.get("truncated"):
        errs.append("truncated is true on a small profile")
    frames, threads, nodes = doc.get("frames"), doc.get("threads"), doc.get("nodes")
    if not (isinstance(frames, list) and isinstance(threads, list) and isinstance(nodes, list)):
        return errs + ["frames/threads/nodes missing or not lists"]
    for i, f in enumerate(frames):
        if not (isinstance(f, dict) and isinstance(f.get("function"), str)
                and f.get("kind") in ("python", "task")
                and (f.get("qualname") is None or isinstance(f.get("qualname"), str))):
            errs.append("frames[%d] malformed: %r" % (i, f))
        elif f["kind"] == "python" and not (isinstance(f.get("file"), str)
                                            and _is_int(f.get("line"))):
            errs.append("frames[%d]: a Python frame needs file and line: %r" % (i, f))
    n = len(nodes)
    for i, nd in enumerate(nodes):
        if not (isinstance(nd, dict) and _is_int(nd.get("parent"))
                and all(_is_int(nd.get(k)) and nd[k] >= 0 for k in ("self", "self_await", "total"))
                and (nd.get("frame") is None or _is_int(nd.get("frame")))):
            errs.append("nodes[%d] malformed: %r" % (i, nd))
            return errs
        if i == 0:
            if nd["parent"] != -1 or nd["frame"] is not None:
                errs.append("nodes[0] is not a root (parent -1, frame null): %r" % nd)
        elif not (0 <= nd["parent"] < n and nd["parent"] != i):
            errs.append("nodes[%d].parent %r out of range" % (i, nd["parent"]))
            return errs
        elif (nd["frame"] is None) != (nd["parent"] == 0):
            errs.append("nodes[%d]: frame must be null exactly for thread nodes: %r" % (i, nd))
        elif nd["frame"] is not None and not 0 <= nd["frame"] < len(frames):
            errs.append("nodes[%d].frame %r out of range" % (i, nd["frame"]))
        if nd["self_await"] > nd["self"]:
            errs.append("nodes[%d]: self_await %d > self %d" % (i, nd["self_await"], nd["self"]))
    if errs:
        return errs
    below = [0] * n
    for i in range(1, n):
        below[nodes[i]["parent"]] += nodes[i]["total"]
    bad = [i for i in range(n) if nodes[i]["total"] != nodes[i]["self"] + below[i]]
    if bad:
        errs.append("%d node(s) whose total is not self + children's totals, first "
                    "nodes[%d]: %r (children %d)" % (len(bad), bad[0], nodes[bad[0]], below[bad[0]]))
    for i, t in enumerate(threads):
        if not (isinstance(t, dict) and _is_int(t.get("tid")) and _is_int(t.get("node"))
                and (t.get("name") is None or isinstance(t.get("name"), str))):
            errs.append("threads[%d] malformed: %r" % (i, t))
        elif not (0 < t["node"] < n and nodes[t["node"]]["parent"] == 0):
            errs.append("threads[%d].node %r is not a child of the root" % (i, t["node"]))
    selfs = sum(nd["self"] for nd in nodes)
    if _is_int(doc.get("samples")) and (selfs != doc["samples"] or nodes[0]["total"] != selfs):
        errs.append("samples %d, but the nodes' self counts add up to %d (root total %d)"
                    % (doc["samples"], selfs, nodes[0]["total"]))
    awaits = sum(nd["self_await"] for nd in nodes)
    if mode != "async" and awaits:
        errs.append("%d self_await samples outside async mode" % awaits)
    if mode == "async" and awaits != doc.get("await_samples"):
        errs.append("await_samples %r, but the nodes' self_await add up to %d"
                    % (doc.get("await_samples"), awaits))
    if _is_int(doc.get("samples")) and _is_int(doc.get("ticks")) and doc["samples"] == 0:
        errs.append("no samples at all (%d ticks)" % doc["ticks"])
    return errs[:20]


def profile_stacks(doc):
    """One entry per node with samples of its own: {tid, thread, frames
    (outermost first), self, self_await}."""
    nodes, frames = doc["nodes"], doc["frames"]
    thread_of = dict((t["node"], t) for t in doc["threads"])
    out = []
    for i, nd in enumerate(nodes):
        if not nd["self"]:
            continue
        chain, j, steps = [], i, 0
        while j > 0 and nodes[j]["frame"] is not None and steps <= len(nodes):
            chain.append(frames[nodes[j]["frame"]])
            j, steps = nodes[j]["parent"], steps + 1
        t = thread_of.get(j, {})
        out.append({"tid": t.get("tid"), "thread": t.get("name"), "frames": chain[::-1],
                    "self": nd["self"], "self_await": nd["self_await"]})
    return out


def flabel(f):
    if f.get("kind") == "task":
        return "<task %s>" % f["function"]
    return "%s (%s:%s)" % (f.get("qualname") or f["function"], f.get("file"), f.get("line"))


def top_stacks(stacks, n=6):
    rows = sorted(stacks, key=lambda s: -s["self"])[:n]
    return ["  %6d (await %d) tid %s: %s" % (s["self"], s["self_await"], s["tid"],
                                             ";".join(flabel(f) for f in s["frames"]))
            for s in rows]


def explain(argv, errs, stacks=None, n=6):
    """A failing check's errors, after the command and before the top
    stacks of its profile."""
    if not errs:
        return errs
    return (["command: " + " ".join(argv)] + errs
            + (["top stacks:"] + top_stacks(stacks, n) if stacks else []))


def is_fn(f, info):
    """A Python frame of the function code_info() describes."""
    return (f.get("kind") == "python" and f["function"] == info["function"]
            and f.get("file") == info["file"])


def samples_in(stacks, info):
    return sum(s["self"] for s in stacks if any(is_fn(f, info) for f in s["frames"]))


def sample_profile(tool, pid, gt, mode, args, secs=SAMPLE_SECS, tag="run", rate_check=True):
    """`pystack-dump sample -m MODE -r RATE -d SECS -f json -o F ARGS PID`.
    Returns (argv, doc, errors, stderr, t0, t1): t0/t1 the monotonic times
    around the run; rate_check: the errors include sample_rate_errors()."""
    path = sample_out(tag)
    try:
        t0 = time.monotonic()
        argv, rc, out, err, took = tool_run(tool, ["sample", "-m", mode, "-r", str(SAMPLE_RATE)]
                                            + (["-d", str(secs)] if secs else [])
                                            + ["-f", "json", "-o", path] + list(args)
                                            + [str(pid)], timeout=SAMPLE_TIMEOUT)
        t1 = time.monotonic()
        doc, errs = read_profile(argv, rc, err, took, path, pid, gt, mode)
        if doc is not None and secs and rate_check:
            errs += sample_rate_errors(doc, secs)
        return argv, doc, errs, err, t0, t1
    finally:
        remove(path)


def read_profile(argv, rc, err, secs, path, pid, gt, mode):
    """(doc, errors) of a finished `sample -f json -o path` run."""
    cmd = " ".join(argv)
    if rc is None:
        return None, ["%s: timed out after %.0fs; stderr: %s" % (cmd, secs, short(err))]
    if rc != 0:
        return None, ["%s: exited %d (expected 0); stderr: %s" % (cmd, rc, short(err))]
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return None, ["%s: exited 0 but no output file: %s; stderr: %s" % (cmd, e, short(err))]
    doc, e = parse_json_out(data)
    if e:
        return None, ["%s: %s" % (cmd, e)]
    errs = ["%s: %s" % (cmd, x) for x in check_profile(doc, pid, gt.get("python_version"), mode)]
    return (None if errs else doc), errs


def sample_rate_errors(doc, secs, min_share=SAMPLE_MIN_TICK_SHARE):
    errs = []
    want = SAMPLE_RATE * secs
    if doc["ticks"] < min_share * want:
        errs.append("only %d ticks in %.2fs at -r %d (%d expected; %d missed)"
                    % (doc["ticks"], doc["duration_s"], SAMPLE_RATE, want, doc["missed"]))
    if doc["errors"] > SAMPLE_MAX_ERROR_SHARE * max(1, doc["ticks"]):
        errs.append("%d errors in %d ticks (more than %d%%)"
                    % (doc["errors"], doc["ticks"], SAMPLE_MAX_ERROR_SHARE * 100))
    if not secs * 0.9 <= doc["duration_s"] <= secs + 1.5:
        errs.append("duration_s %.2f for -d %s" % (doc["duration_s"], secs))
    return errs


def profile_info(doc):
    return "%d ticks, %d samples, %.0f ticks/s, %d errors, %d missed, %.2f reads/sample" % (
        doc["ticks"], doc["samples"], doc["ticks"] / max(doc["duration_s"], 1e-9),
        doc["errors"], doc["missed"], doc["reads"] / max(doc["samples"], 1))


def result(interp, name, errs, info="", detail_ok=""):
    return Result(interp.label, name, "FAIL" if errs else "PASS",
                  "\n".join(errs) if errs else detail_ok, info=info)


def sample_job(interp, kind, tool, opts, names):
    target = SAMPLE_JOBS[kind][0]
    if target == "sample_async" and interp.minor < SAMPLE_ASYNC_MIN:
        skip = [Result(interp.label, n, "SKIP", SAMPLE_NO_ASYNC) for n in names]
        if kind == "sample-async" and not interp.missing:
            return [async_refused(interp, tool, opts, names[0])] + skip[1:]
        return skip
    if kind == "sample-launch":
        return [sample_launch(interp, tool, opts, names[0])]
    exits = kind.endswith("-exit")
    with Target(interp, target, args=["exit-after=%g" % SAMPLE_EXIT_AFTER] if exits else []) as tg:
        gt = tg.wait_ground_truth()
        sanity = base_gt_sanity(gt, interp)
        if sanity:
            return [Result(interp.label, n, "FAIL", "ground truth: " + "; ".join(sanity))
                    for n in names]
        if opts.gt_only:
            return [Result(interp.label, n, "PASS", "ground truth only") for n in names]
        if exits:
            return [sample_target_exits(interp, tool, tg, gt, names[0],
                                        "async" if target == "sample_async" else "wall")]
        if kind == "sample-split":
            return [sample_split(interp, tool, tg, gt, names[0]),
                    sample_collapsed(interp, tool, tg, gt, names[1]),
                    sample_max(interp, tool, tg, gt, names[2]),
                    sample_sigint(interp, tool, tg, gt, names[3], "wall")]
        if kind == "sample-cpu":
            return [sample_cpu(interp, tool, tg, gt, names[0])]
        if kind == "sample-gil":
            return [sample_gil(interp, tool, tg, gt, names[0])]
        if kind == "sample-async":
            return sample_async(interp, tool, tg, gt, names[:2]) + [
                sample_sigint(interp, tool, tg, gt, names[2], "async")]
        return sample_formats(interp, tool, tg, gt, names)


def async_refused(interp, tool, opts, name):
    """Before 3.7 (no task graphs: `--tasks` exits 6), `-m async` must be
    refused the same way before sampling starts, not sample nothing."""
    with Target(interp, "sample_split") as tg:
        gt = tg.wait_ground_truth()
        if opts.gt_only:
            return Result(interp.label, name, "PASS", "ground truth only")
        argv, rc, out, err, secs = tool_run(tool, ["sample", "-m", "async", "-n", "100", "-f",
                                                   "json", str(tg.pid)], timeout=SAMPLE_TIMEOUT)
        errs = []
        if rc != 6 or b"not supported" not in err:
            errs.append("%s: exit %s, expected 6 saying task graphs are not supported (as "
                        "--tasks does on %s); stderr: %s" % (" ".join(argv), rc,
                                                            interp.minor_str, short(err)))
        return result(interp, name, errs, info="refused" if not errs else "")


def target_report(tg, suffix):
    """SIGUSR1 makes a sample_* target write GT.SUFFIX (its own measures):
    that document."""
    path = tg.gt_host + suffix
    remove(path)
    os.kill(tg.pid, signal.SIGUSR1)
    deadline = time.time() + 10
    while not os.path.exists(path):
        if time.time() > deadline or tg.proc.poll() is not None:
            raise TargetError("no %s after SIGUSR1:\n%s" % (path, tg.log_tail()))
        time.sleep(0.02)
    with open(path) as f:
        return json.load(f)


def split_truth(tg, t0, t1):
    """The target's own hot share (percent) over [t0, t1], from the rounds
    it writes on SIGUSR1."""
    rounds = target_report(tg, ".split")["rounds"]
    inside = [r for r in rounds if t0 <= r[0] <= t1]
    if len(inside) < 10:
        raise TargetError("only %d rounds of the target inside the sampled window" % len(inside))
    hot, cold = inside[-1][1] - inside[0][1], inside[-1][2] - inside[0][2]
    return 100.0 * hot / (hot + cold)


def sample_split(interp, tool, tg, gt, name):
    """Wall mode: spend_hot's share of the samples in the two functions
    within SPLIT_TOLERANCE points of the share the target measured."""
    argv, doc, errs, err, t0, t1 = sample_profile(tool, tg.pid, gt, "wall", [], tag="split")
    if doc is None:
        return result(interp, name, errs)
    want = split_truth(tg, t0, t1)
    stacks = profile_stacks(doc)
    hot, cold = samples_in(stacks, gt["hot"]), samples_in(stacks, gt["cold"])
    got = 100.0 * hot / max(1, hot + cold)
    if hot + cold < 0.9 * doc["samples"]:
        errs.append("only %d of %d samples in %s or %s" % (hot + cold, doc["samples"],
                                                           gt["hot"]["function"],
                                                           gt["cold"]["function"]))
    if abs(got - want) > SPLIT_TOLERANCE:
        errs.append("%s: %.1f%% of the samples, the target measured %.1f%% (tolerance %g "
                    "points)" % (gt["hot"]["function"], got, want, SPLIT_TOLERANCE))
    summary = err.decode("utf-8", "replace")
    missing = [w for w in SUMMARY_WORDS if w not in summary]
    if missing:
        errs.append("the summary on stderr does not mention %s: %s"
                    % (", ".join(missing), short(err, 500)))
    errs = explain(argv, errs, stacks)
    return result(interp, name, errs, info="hot %.1f%% (target %.1f%%); %s"
                  % (got, want, profile_info(doc)))


def sample_max(interp, tool, tg, gt, name):
    """-r max -n MAX_TICKS: the steady state costs at most MAX_READS reads a
    sample, and runs well above any fixed rate (the speed goal itself is
    bench/bench_sample.py's: the suite runs jobs side by side)."""
    path = sample_out("max")
    try:
        argv, rc, out, err, secs = tool_run(tool, ["sample", "-r", "max", "-n", str(MAX_TICKS),
                                                   "-f", "json", "-o", path, str(tg.pid)],
                                            timeout=SAMPLE_TIMEOUT)
        doc, errs = read_profile(argv, rc, err, secs, path, tg.pid, gt, "wall")
        if doc is None:
            return result(interp, name, errs)
        rate = doc["ticks"] / max(doc["duration_s"], 1e-9)
        reads = doc["reads"] / max(1, doc["samples"])
        if doc["ticks"] != MAX_TICKS:
            errs.append("%d ticks for -n %d" % (doc["ticks"], MAX_TICKS))
        if reads > MAX_READS:
            errs.append("%.2f reads a sample (at most %g in the steady state)" % (reads, MAX_READS))
        if rate < MAX_MIN_RATE:
            errs.append("only %.0f ticks/s at -r max" % rate)
        if doc["errors"] > SAMPLE_MAX_ERROR_SHARE * doc["ticks"]:
            errs.append("%d errors in %d ticks" % (doc["errors"], doc["ticks"]))
        # MAX_TICKS at this rate span about 0.1 s, 2-3 of the target's
        # hot/cold rounds; a loaded machine can leave the target off the
        # CPU, its stack still in one of them, for all of it.
        errs += stopped_run_errors(doc, gt, need_all=False)
        return result(interp, name, explain(argv, errs), info=profile_info(doc))
    finally:
        remove(path)


_COLLAPSED = re.compile(r"^(.+) (\d+)$")


def parse_collapsed(text):
    """[(labels outermost first, count)], or raises ValueError."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _COLLAPSED.match(line)
        if not m:
            raise ValueError("line %d is not 'STACK COUNT': %r" % (n, line[:200]))
        out.append((m.group(1).split(";"), int(m.group(2))))
    return out


def collapsed_label(info, line):
    """How a collapsed stack names a frame of the function code_info()
    describes: `qualname (file:line)`, `qualname (file)` without lines; the
    plain function name before 3.11."""
    name = info["qualname"] or info["function"]
    return "%s (%s)" % (name, info["file"] if line is None else "%s:%d" % (info["file"], line))


def collapsed_errors(text, gt, lines, ticks, threads=False):
    """Every line well formed; the hot function's label as the spec says;
    the counts add up to no more than the ticks (one thread) and most of
    them."""
    try:
        rows = parse_collapsed(text)
    except ValueError as e:
        return [str(e)], 0
    errs = []
    total = sum(c for _, c in rows)
    if not ticks * (1 - SAMPLE_MAX_ERROR_SHARE) <= total <= ticks:
        errs.append("counts add up to %d for -n %d on one thread" % (total, ticks))
    info = gt["hot"]
    if lines:
        # the lines of spend_hot's loop: its first line + 2 (while) and + 3
        want = set(collapsed_label(info, info["firstline"] + k) for k in (2, 3))
    else:
        want = set([collapsed_label(info, None)])
    hot = [(s, c) for s, c in rows if s[-1] in want]
    if not hot:
        errs.append("no stack ends in %s; innermost labels seen: %s"
                    % (" or ".join(sorted(want)), sorted(set(s[-1] for s, _ in rows))[:8]))
    if threads:
        bad = [s[0] for s, _ in rows if not re.match(r"^Thread %d \(.*\)$" % gt["pid"], s[0])]
        if bad:
            errs.append("with --threads every stack must start with 'Thread %d (NAME)' (the "
                        "main thread), got %r" % (gt["pid"], bad[0]))
    return errs, total


def sample_collapsed(interp, tool, tg, gt, name):
    """-f collapsed with lines, --no-lines and --threads: well formed, the
    labels as documented (qualname before 3.11 is the plain name)."""
    errs, info = [], []
    for extra, lines, threads in (([], True, False), (["--no-lines", "-q"], False, False),
                                  (["--threads"], True, True)):
        argv, rc, out, err, secs = tool_run(tool, ["sample", "-r", str(SAMPLE_RATE), "-n",
                                                   str(SAMPLE_FORMAT_TICKS), "-f", "collapsed"]
                                            + extra + [str(tg.pid)], timeout=SAMPLE_TIMEOUT)
        cmd = " ".join(argv)
        if rc != 0:
            errs.append("%s: exited %s; stderr: %s" % (cmd, rc, short(err)))
            continue
        e, total = collapsed_errors(out.decode("utf-8", "replace"), gt, lines,
                                    SAMPLE_FORMAT_TICKS, threads)
        if "-q" in extra and err.strip():
            e.append("-q, yet stderr says: %s" % short(err, 300))
        errs += ["%s: %s" % (cmd, x) for x in e]
        if e:
            errs.append("  output: " + short(out, 1200))
        info.append("%d" % total)
    return result(interp, name, errs, info="samples %s (lines, --no-lines -q, --threads)"
                  % "/".join(info))


def thread_shares(doc, gt):
    """{worker name: samples} over the ground truth's threads (by tid),
    plus "?" for samples of threads the target does not know."""
    by_tid = dict((tid, n) for n, tid in gt["threads"].items())
    out = dict((n, 0) for n in gt["threads"])
    for t in doc["threads"]:
        n = by_tid.get(t["tid"], "?")
        out[n] = out.get(n, 0) + doc["nodes"][t["node"]]["total"]
    return out


def shares_info(shares, total):
    return ", ".join("%s %.1f%%" % (n, 100.0 * c / max(1, total))
                     for n, c in sorted(shares.items(), key=lambda x: -x[1]))


def threads_profile(tool, tg, gt, mode):
    """A --threads profile of MODE and each thread's samples: (argv, doc,
    errors, {worker name: samples}, stacks, (start, end) of the sampled
    window in time.time() seconds); doc None if it failed."""
    w0 = time.time()
    argv, doc, errs, err, t0, t1 = sample_profile(tool, tg.pid, gt, mode, ["--threads"],
                                                  tag=mode)
    w1 = time.time()
    if doc is None:
        return argv, None, errs, {}, [], None
    if _is_int(doc.get("start_unix_us")):       # the tool's own account of the window
        w0 = doc["start_unix_us"] / 1e6
        w1 = w0 + doc["duration_s"]
    shares = thread_shares(doc, gt)
    if shares.get("?"):
        errs.append("%d samples of threads the target does not have" % shares["?"])
    names = dict((tid, "MainThread" if n == "main" else n) for n, tid in gt["threads"].items())
    for t in doc["threads"]:
        if t["tid"] in names and t["name"] is not None and not thread_name_ok(
                t["name"], names[t["tid"]], comm(tg.pid, t["tid"])):
            errs.append("thread %d is named %r: neither its Python name %r nor its OS name %r"
                        % (t["tid"], t["name"], names[t["tid"]], comm(tg.pid, t["tid"])))
    return argv, doc, errs, shares, profile_stacks(doc), (w0, w1)


def overlap(spans, w0, w1):
    return sum(max(0.0, min(e, w1) - max(s, w0)) for s, e in spans)


def sample_cpu(interp, tool, tg, gt, name):
    """cpu mode: the burner has nearly every sample, the sleeping threads
    next to none."""
    argv, doc, errs, shares, stacks, _ = threads_profile(tool, tg, gt, "cpu")
    if doc is None:
        return result(interp, name, errs)
    total = doc["samples"]
    for n in gt["busy"]:
        if shares[n] < CPU_BUSY_MIN * total:
            errs.append("busy thread %r: %d of %d samples (less than %d%%)"
                        % (n, shares[n], total, CPU_BUSY_MIN * 100))
        if shares[n] < SAMPLE_MIN_TICK_SHARE * doc["ticks"]:
            errs.append("busy thread %r: %d samples in %d ticks" % (n, shares[n], doc["ticks"]))
    for n in gt["idle"]:
        if shares[n] > IDLE_MAX * total:
            errs.append("sleeping thread %r: %d of %d samples (more than %d%%)"
                        % (n, shares[n], total, IDLE_MAX * 100))
    burn = samples_in(stacks, gt["functions"]["burn_forever"])
    if burn < shares["burner"]:
        errs.append("%d of the burner's %d samples outside burn_forever()"
                    % (shares["burner"] - burn, shares["burner"]))
    return result(interp, name, explain(argv, errs, stacks),
                  info="%s; %s" % (shares_info(shares, total), profile_info(doc)))


def sample_gil(interp, tool, tg, gt, name):
    """gil mode: at most one sample a tick, never a sleeping thread, the
    holder nearly always."""
    argv, doc, errs, shares, stacks, (w0, w1) = threads_profile(tool, tg, gt, "gil")
    if doc is None:
        return result(interp, name, errs)
    spans = target_report(tg, ".gil")["spans"]
    total, ticks = doc["samples"], doc["ticks"]
    held = 100.0 * sum(overlap(spans[n], w0, w1) for n in gt["contenders"]) / (w1 - w0)
    seen = 100.0 * sum(shares[n] for n in gt["contenders"]) / max(1, ticks)
    # What the contenders measure is a lower bound: a run that the OS
    # preempted while it held the GIL is not counted.
    if seen < 0.5 * held - 1:
        errs.append("the contenders held the GIL at least %.1f%% of the sampled window (they "
                    "measured it), but have only %.1f%% of the ticks (less than half that, "
                    "less 1 point)" % (held, seen))
    if total > ticks:
        errs.append("%d samples in %d ticks: more than one GIL holder a tick" % (total, ticks))
    if total < SAMPLE_MIN_TICK_SHARE * ticks:
        errs.append("only %d samples in %d ticks, but some thread always holds the GIL"
                    % (total, ticks))
    for n in gt["idle"]:
        if shares[n] > GIL_IDLE_MAX * max(1, total):
            errs.append("thread %r, asleep without the GIL, has %d of %d samples"
                        % (n, shares[n], total))
    h = gt["holder"]
    if shares[h] < GIL_HOLDER_MIN * total:
        errs.append("holder %r: %d of %d samples (less than %d%%), but it holds the GIL "
                    "%gs at a time" % (h, shares[h], total, GIL_HOLDER_MIN * 100, gt["hold_s"]))
    inside = sum(s["self"] for s in stacks if s["tid"] == gt["threads"][h]
                 and s["frames"] and is_fn(s["frames"][-1], gt["functions"]["hold_gil"]))
    if inside < GIL_IN_HOLD_MIN * shares[h]:
        errs.append("only %d of the holder's %d samples end in hold_gil() (its sum())"
                    % (inside, shares[h]))
    return result(interp, name, explain(argv, errs, stacks),
                  info="%s; contenders measured %.1f%%; %s"
                  % (shares_info(shares, total), held, profile_info(doc)))


def chain_matches(frames, chain):
    """frames (outermost first) end with the recorded chain (function,
    file, line)."""
    if len(frames) < len(chain):
        return False
    tail = frames[len(frames) - len(chain):]
    return all(f.get("kind") == "python" and f["function"] == c["function"]
               and f.get("file") == c["file"] and f.get("line") == c["line"]
               for f, c in zip(tail, chain))


def task_label(frames, i):
    """The name of the task boundary right outside frames[i], or None."""
    if i < 1 or frames[i - 1].get("kind") != "task":
        return None
    return frames[i - 1]["function"]


def label_errors(what, labels, want):
    """labels: {task label right outside `what`: samples}. With names
    (3.8+) all must be `want`; without, all must be one label."""
    total = sum(labels.values())
    wrong = dict((k, v) for k, v in labels.items() if k is None or (want is not None and k != want))
    if want is None and len(labels) > 1:
        wrong = labels
    if not wrong:
        return []
    return ["%s: %d of its %d samples are not directly under %s; task labels seen there: %s"
            % (what, sum(wrong.values()), total,
               "<task %s>" % want if want else "one and the same task boundary",
               ", ".join("%s %d" % ("<task %s>" % k if k else "(no task boundary)", v)
                         for k, v in sorted(labels.items(), key=lambda kv: -kv[1])))]


def sample_async(interp, tool, tg, gt, names):
    """async mode: the sleeper's chain, ending at the exact await line,
    under its task, with await samples about every tick; the burner's CPU
    samples in burn_cpu() under its task.  Then (names[1]) whether the run
    kept up with the rate asked."""
    name = names[0]
    argv, doc, errs, err, t0, t1 = sample_profile(tool, tg.pid, gt, "async", [], tag="async",
                                                  rate_check=False)
    if doc is None:
        if errs and "exited 6" in errs[0] and interp.minor < TASKS_DOCUMENTED_MIN:
            return [Result(interp.label, n, "SKIP", TASKS_UNSUPPORTED) for n in names]
        return [result(interp, n, errs) for n in names]
    rate = result(interp, names[1],
                  explain(argv, sample_rate_errors(doc, SAMPLE_SECS, ASYNC_MIN_TICK_SHARE)),
                  info=profile_info(doc))
    stacks = profile_stacks(doc)
    sl, bu = gt["sleeper"], gt["burner"]
    chain = sl["chain"]
    at = [s for s in stacks if chain_matches(s["frames"], chain)]
    waited = sum(s["self_await"] for s in at)
    if waited < ASYNC_AWAIT_MIN * doc["ticks"]:
        errs.append("%d await samples end in the sleeper's chain %s (await line %d), "
                    "expected about one a tick (%d ticks)"
                    % (waited, " -> ".join(flabel(dict(c, kind="python")) for c in chain),
                       sl["await_line"], doc["ticks"]))
    sl_labels = {}
    for s in at:
        k = task_label(s["frames"], len(s["frames"]) - len(chain))
        sl_labels[k] = sl_labels.get(k, 0) + s["self"]
    errs += label_errors("the sleeper's chain", sl_labels, sl["task"])
    burning = [s for s in stacks if s["frames"] and is_fn(s["frames"][-1], bu["function"])]
    cpu = sum(s["self"] - s["self_await"] for s in burning)
    if cpu < ASYNC_BURN_MIN * doc["ticks"]:
        errs.append("%d CPU samples end in %s(), expected most ticks (%d)"
                    % (cpu, bu["function"]["function"], doc["ticks"]))
    bu_labels = {}
    for s in burning:
        k = [i for i, f in enumerate(s["frames"]) if is_fn(f, bu["coroutine"])]
        lab = task_label(s["frames"], k[-1]) if k else "(burner() not in the stack)"
        bu_labels[lab] = bu_labels.get(lab, 0) + s["self"]
    errs += label_errors("burner() (running burn_cpu())", bu_labels, bu["task"])
    if set(sl_labels) & set(bu_labels) - set([None]):
        errs.append("the sleeper and the burner appear under the same task label(s) %s"
                    % sorted(set(sl_labels) & set(bu_labels) - set([None])))
    if not doc["cpu_samples"] or not doc["await_samples"]:
        errs.append("cpu_samples %d, await_samples %d: both must be counted"
                    % (doc["cpu_samples"], doc["await_samples"]))
    errs = explain(argv, errs, stacks, 10)
    return [result(interp, name, errs, info="await at line %d: %d, burn_cpu: %d; %s"
                   % (sl["await_line"], waited, cpu, profile_info(doc))), rate]


def stopped_run_errors(doc, gt, need_all=True):
    """What a run that ended early must still have written: samples in the
    target's own functions (need_all: in each of them, else in one)."""
    stacks = profile_stacks(doc)
    want = [gt["hot"], gt["cold"]] if "hot" in gt else [gt["burner"]["function"]]
    missing = ["no samples in %s()" % f["function"] for f in want if not samples_in(stacks, f)]
    return missing if need_all or len(missing) == len(want) else []


def sample_sigint(interp, tool, tg, gt, name, mode):
    """SIGINT after SAMPLE_STOP_AFTER seconds (no -d): exit 0, everything
    written, a note on stderr, the target untouched."""
    path = sample_out("sigint")
    argv = [tool.path, "sample", "-m", mode, "-r", str(SAMPLE_RATE), "-f", "json", "-o", path,
            str(tg.pid)]
    p = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(SAMPLE_STOP_AFTER)
        if p.poll() is not None:
            out, err = p.communicate()
            return result(interp, name, ["%s exited %s before the SIGINT; stderr: %s"
                                         % (" ".join(argv), p.returncode, short(err))])
        os.kill(p.pid, signal.SIGINT)
        try:
            out, err = p.communicate(timeout=15)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            kill(p)
            out, err = p.communicate()
            rc = None
        doc, errs = read_profile(argv, rc, err, 15, path, tg.pid, gt, mode)
        if doc is not None:
            errs += stopped_run_errors(doc, gt)
            if b"interrupt" not in err:
                errs.append("stderr does not say sampling was interrupted: %s" % short(err, 300))
        if not alive(tg.pid):
            errs.append("the target died:\n" + tg.log_tail())
        if doc is not None:
            errs = explain(argv, errs)
        return result(interp, name, errs, info=profile_info(doc) if doc else "")
    finally:
        kill(p)
        remove(path)


def sample_target_exits(interp, tool, tg, gt, name, mode):
    """The target exits SAMPLE_EXIT_AFTER seconds into a long -d: exit 0
    soon after, everything written."""
    secs = 30
    path = sample_out("exit")
    try:
        argv, rc, out, err, took = tool_run(tool, ["sample", "-m", mode, "-r", str(SAMPLE_RATE),
                                                   "-d", str(secs), "-f", "json", "-o", path,
                                                   str(tg.pid)], timeout=SAMPLE_TIMEOUT)
        doc, errs = read_profile(argv, rc, err, took, path, tg.pid, gt, mode)
        try:
            tg.proc.wait(timeout=10)    # it may still be on its way out
        except subprocess.TimeoutExpired:
            errs.append("the target did not exit by itself (exit-after=%g)" % SAMPLE_EXIT_AFTER)
        if tg.proc.returncode not in (None, 0):
            errs.append("the target exited %s:\n%s" % (tg.proc.returncode, tg.log_tail()))
        if rc is not None and took > SAMPLE_EXIT_AFTER + 10:
            errs.append("took %.1fs: did not notice the target exit %gs into -d %d"
                        % (took, SAMPLE_EXIT_AFTER, secs))
        if doc is not None:
            errs += stopped_run_errors(doc, gt)
            if b"exited" not in err:
                errs.append("stderr does not say the target exited: %s" % short(err, 300))
        if doc is not None:
            errs = explain(argv, errs)
        return result(interp, name, errs, info=("%s; %.1fs" % (profile_info(doc), took))
                      if doc else "")
    finally:
        remove(path)


def sample_launch(interp, tool, opts, name):
    """`pystack-dump sample -- PYTHON sample_split.py GT exit-after=...`:
    the program it launched is the one profiled (its ground truth's pid)."""
    tg = Target(interp, "sample_split", args=["exit-after=%g" % SAMPLE_EXIT_AFTER])
    os.makedirs(tg.out_host)
    path = sample_out("launch")
    try:
        if opts.gt_only:
            argv = tg.command()
            rc, out, err, took = run(argv, GT_TIMEOUT, env=TARGET_ENV, cwd="/")
            ok = rc == 0 and os.path.exists(tg.gt_host)
            return Result(interp.label, name, "PASS" if ok else "FAIL", "ground truth only"
                          if ok else "%s: exit %s, %s" % (" ".join(argv), rc, short(out + err)))
        argv, rc, out, err, took = tool_run(tool, ["sample", "-r", str(SAMPLE_RATE), "-d", "30",
                                                   "-f", "json", "-o", path, "--"]
                                            + tg.command(), timeout=SAMPLE_TIMEOUT,
                                            env=TARGET_ENV)
        try:
            with open(tg.gt_host) as f:
                gt = json.load(f)
        except (OSError, ValueError) as e:
            return result(interp, name, ["%s: the launched target wrote no ground truth (%s); "
                                         "rc %s; stderr: %s" % (" ".join(argv), e, rc,
                                                                short(err))])
        doc, errs = read_profile(argv, rc, err, took, path, gt["pid"], gt, "wall")
        errs += base_gt_sanity(gt, interp)
        if doc is not None:
            errs += stopped_run_errors(doc, gt)
        if rc is not None and took > SAMPLE_EXIT_AFTER + 15:
            errs.append("took %.1fs for a program that runs %gs" % (took, SAMPLE_EXIT_AFTER))
        if doc is not None:
            errs = explain(argv, errs)
        return result(interp, name, errs, info=profile_info(doc) if doc else "")
    finally:
        remove(path)
        shutil.rmtree(tg.out_host, ignore_errors=True)


def _json_consumer(want):
    def check(path, gt):
        with open(path, "rb") as f:
            data = f.read()
        doc, e = parse_json_out(data)
        if e:
            return [e]
        errs = want(doc)
        if gt["hot"]["function"].encode() not in data:
            errs.append("%s not named anywhere in it" % gt["hot"]["function"])
        return errs
    return check


def _script_consumer(script, *extra):
    def check(path, gt):
        exe = os.path.join(REPO, "tests", script)
        if not os.path.isfile(exe):
            return ["tests/%s is not there (the consumer check for this format)" % script]
        argv = [sys.executable, exe, path, "--expect", gt["hot"]["function"]] + list(extra)
        rc, out, err, secs = run(argv, 180)
        vlog("%s -> %s in %.1fs" % (" ".join(argv), rc, secs))
        if rc != 0:
            return ["%s exited %s: %s" % (" ".join(argv), rc, short(out + err, 1500))]
        return []
    return check


# format -> (options, output file suffix (None: stdout), check(path, gt) -> errors)
SAMPLE_FORMATS = {
    "table": (["-f", "table"], None, None),
    "collapsed": ([], None, None),               # stdout is a pipe: collapsed
    "json": ([], ".json", _json_consumer(
        lambda d: [] if d.get("format") == PROFILE_FORMAT else
        ["format %r, expected %r" % (d.get("format"), PROFILE_FORMAT)])),
    "speedscope": ([], ".speedscope.json", _json_consumer(
        lambda d: [] if "speedscope" in str(d.get("$schema")) else
        ["$schema %r does not name speedscope" % (d.get("$schema"),)])),
    "gecko": ([], ".gecko.json", _json_consumer(
        lambda d: [] if isinstance(d.get("meta"), dict) and isinstance(d.get("threads"), list)
        else ["no meta object / threads list (Firefox Profiler's processed format)"])),
    "pprof": ([], ".pb.gz", _script_consumer("check_pprof.py")),
    "flamegraph": ([], ".html", _script_consumer("check_flamegraph.py", "--screenshot",
                                                 FLAMEGRAPH_SCREENSHOT)),
}


def sample_formats(interp, tool, tg, gt, names):
    """Each format once, checked by a consumer that is not ours; the output
    file's extension picks the format."""
    res = []
    for n in names:
        fmt = n.split(":", 1)[1]
        opts_, suffix, check = SAMPLE_FORMATS[fmt]
        path = sample_out("fmt", suffix) if suffix else None
        try:
            argv, rc, out, err, took = tool_run(
                tool, ["sample", "-r", str(SAMPLE_RATE), "-n", str(SAMPLE_FORMAT_TICKS)] + opts_
                + (["-o", path] if path else []) + [str(tg.pid)], timeout=SAMPLE_TIMEOUT)
            cmd = " ".join(argv)
            if rc != 0:
                res.append(result(interp, n, ["%s: exited %s; stderr: %s" % (cmd, rc, short(err))]))
                continue
            text = out.decode("utf-8", "replace")
            if fmt == "table":
                errs = [] if all(f["function"] in text for f in (gt["hot"], gt["cold"])) else \
                    ["%s: the table does not name %s and %s: %s"
                     % (cmd, gt["hot"]["function"], gt["cold"]["function"], short(out, 1500))]
            elif fmt == "collapsed":
                e, _ = collapsed_errors(text, gt, True, SAMPLE_FORMAT_TICKS)
                errs = ["%s: %s" % (cmd, x) for x in e]
            elif not os.path.isfile(path):
                errs = ["%s: exited 0 but wrote no %s" % (cmd, path)]
            else:
                errs = ["%s: %s" % (cmd, x) for x in check(path, gt)]
            info = ("screenshot " + FLAMEGRAPH_SCREENSHOT) if fmt == "flamegraph" and not errs \
                else ("%d bytes" % os.path.getsize(path) if path and os.path.isfile(path) else "")
            res.append(result(interp, n, errs, info=info))
        finally:
            if path:
                remove(path)
    return res


# --------------------------------------------------------------------------
# snapshot fixtures: decoded on every machine, made with --regen-fixtures

def fixture_paths():
    return sorted(glob.glob(os.path.join(FIXTURES_DIR, "*.snap")))


def _fixture_dump_errors(tool, snap, stem, gt, expected):
    argv = [tool.path, "--snapshot", snap, "--json"]
    doc, e = parse_dump(*run(argv, TOOL_TIMEOUT))
    if e:
        return ["%s: %s" % (" ".join(argv), e)]
    minor = tuple(int(x) for x in gt["python_version"].split(".")[:2])
    os_names = dict((t["tid"], t["name"]) for t in expected["threads"])
    errs = compare(gt, doc, types.SimpleNamespace(minor=minor), gt["pid"],
                   comm_of=os_names.get)
    if doc.get("source") != "snapshot":
        errs.append("source %r, expected 'snapshot'" % (doc.get("source"),))
    # JSON fields added to pystack-dump since the recording are ignored
    d = first_difference(without_source(expected), without_source(doc), added_ok=True)
    if d:
        errs.append("differs from the recorded live dump %s.dump.json (first "
                    "difference, recorded vs now: %s)" % (stem, d))
    argv = [tool.path, "--snapshot", snap]
    rc, out, err, secs = run(argv, TOOL_TIMEOUT)
    if rc != 0 or not out.startswith(b"Snapshot "):
        errs.append("%s (text) exited %s; stdout: %s; stderr: %s"
                    % (" ".join(argv), rc, short(out, 200), short(err, 300)))
    return errs


def _fixture_tasks_errors(tool, snap, stem, gt, expected):
    argv = [tool.path, "--snapshot", snap, "--tasks", "--json"]
    rc, out, err, secs = run(argv, TOOL_TIMEOUT)
    doc, e = parse_tasks(argv, rc, out or b"", err or b"", secs)
    if e:
        return [e]
    minor = tuple(int(x) for x in gt["python_version"].split(".")[:2])
    errs = compare_tasks(gt, doc, types.SimpleNamespace(minor=minor))
    d = first_difference(without_source(expected), without_source(doc), added_ok=True)
    if d:
        errs.append("differs from the recorded live graph %s.tasks.json (first "
                    "difference, recorded vs now: %s)" % (stem, d))
    for extra in (["--table"], []):
        argv = [tool.path, "--snapshot", snap, "--tasks"] + extra
        rc, out, err, secs = run(argv, TOOL_TIMEOUT)
        if rc != 0 or not out:
            errs.append("%s exited %s; stderr: %s" % (" ".join(argv), rc, short(err, 300)))
    return errs


def fixture_tests(tool):
    res = []
    snaps = fixture_paths()
    if not snaps:
        return [Result("fixtures", "snapshot fixtures", "FAIL", "no *.snap in %s (make them "
                       "with python3 tests/run_tests.py --regen-fixtures)" % FIXTURES_DIR)]
    for snap in snaps:
        stem = os.path.basename(snap)[:-len(".snap")]
        name = "fixture:" + stem
        base = snap[:-len(".snap")]
        tasks = os.path.exists(base + ".tasks.json")
        try:
            with open(base + ".ground_truth.json", encoding="utf-8") as f:
                gt = json.load(f)
            with open(base + (".tasks.json" if tasks else ".dump.json"),
                      encoding="utf-8") as f:
                expected = json.load(f)
        except (OSError, ValueError) as e:
            res.append(Result("fixtures", name, "FAIL", "fixture incomplete: %s" % e))
            continue
        check = _fixture_tasks_errors if tasks else _fixture_dump_errors
        errs = check(tool, snap, stem, gt, expected)
        if errs:
            errs.insert(0, "command: %s --snapshot %s %s--json"
                        % (tool.path, snap, "--tasks " if tasks else ""))
        res.append(Result("fixtures", name, "FAIL" if errs else "PASS", "\n".join(errs),
                          info="%d bytes" % os.path.getsize(snap)))
    return res


def _record_dump(interp, target, tool, snap):
    """(gt bytes, live --json bytes, errors) from a live target."""
    with Target(interp, target) as tg:
        gt = tg.wait_ground_truth()
        tg.wait_settled()
        argv = [tool.path, "--json", "--save-snapshot", snap, str(tg.pid)]
        rc, out, err, secs = run(argv, TOOL_TIMEOUT)
        live, e = parse_dump(rc, out, err, secs)
        errs = [e] if e else compare(gt, live, interp, tg.pid)
        with open(tg.gt_host, "rb") as f:
            gt_bytes = f.read()
    if not errs:
        rep, e = parse_dump(*run([tool.path, "--snapshot", snap, "--json"], TOOL_TIMEOUT))
        d = e or first_difference(without_source(live), without_source(rep))
        if d:
            errs.append("snapshot does not decode like the live dump: %s" % d)
    return gt_bytes, out, errs


def _record_tasks(interp, target, tool, snap):
    """The same with --tasks --json, taken --locked (a consistent graph)."""
    with Target(interp, target) as tg:
        gt = wait_tasks_truth(tg)
        wait_all_sleeping(tg.pid)
        argv, rc, out, err, secs = tasks_run(tool, ["--json", "--locked", "--save-snapshot",
                                                    snap, str(tg.pid)])
        live, e = parse_tasks(argv, rc, out, err, secs)
        errs = [e] if e else compare_tasks(gt, live, interp)
        with open(tg.gt_host, "rb") as f:
            gt_bytes = f.read()
    if not errs:
        argv = [tool.path, "--snapshot", snap, "--tasks", "--json"]
        rc, rout, rerr, secs = run(argv, TOOL_TIMEOUT)
        rep, e = parse_tasks(argv, rc, rout or b"", rerr or b"", secs)
        errs += [e] if e else roundtrip_errors(live, rep, "graph")
    return gt_bytes, out, errs


def regen_fixtures(tool, sid_dir, only=()):
    """Record the fixtures FIXTURE_SETS names (those of the interpreters
    in only, if given) from live targets into tests/fixtures."""
    interps = dict((i.label, i) for i in discover(sid_dir))
    err = prepare_chroot(sid_dir)
    if err:
        print("FAIL: " + err)
        return 1
    os.makedirs(FIXTURES_DIR, exist_ok=True)
    failed = 0
    for labels, target, kind in FIXTURE_SETS:
        for label in labels:
            interp = interps[label]
            if only and not any(interp.matches(t) for t in only):
                continue
            stem = "%s-%s" % (label, target)
            if interp.missing:
                print("FAIL %s: interpreter missing: %s" % (stem, interp.missing))
                failed += 1
                continue
            snap = os.path.join(host_tmp(), stem + ".snap")
            record = _record_tasks if kind == "tasks" else _record_dump
            gt_bytes, out, errs = record(interp, target, tool, snap)
            size = os.path.getsize(snap) if os.path.exists(snap) else 0
            if size > FIXTURE_MAX_BYTES:
                errs.append("snapshot is %d bytes, more than %d: use a smaller target"
                            % (size, FIXTURE_MAX_BYTES))
            if errs:
                print("FAIL %s: %s" % (stem, "\n    ".join(errs)))
                failed += 1
                continue
            shutil.copyfile(snap, os.path.join(FIXTURES_DIR, stem + ".snap"))
            with open(os.path.join(FIXTURES_DIR, stem + ".ground_truth.json"), "wb") as f:
                f.write(gt_bytes)
            with open(os.path.join(FIXTURES_DIR, "%s.%s.json" % (stem, kind)), "wb") as f:
                f.write(out)
            os.unlink(snap)
            print("wrote %s/%s.{snap,ground_truth.json,%s.json} (snapshot %d bytes)"
                  % (os.path.relpath(FIXTURES_DIR, REPO), stem, kind, size))
    return 1 if failed else 0


# --------------------------------------------------------------------------
# general (version independent) error cases, and the C unit tests

def free_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    pid = p.pid
    for cand in [pid] + list(range(4194000, 4194300)):
        try:
            os.kill(cand, 0)
        except ProcessLookupError:
            return cand
        except PermissionError:
            pass
    return pid


def general_tests(tool, sid_dir):
    g = "general"
    res = []

    def expect(test, argv, want, env=None, pre=None):
        rc, out, err, secs = run(argv, TOOL_TIMEOUT, env=env)
        vlog("%s -> %s" % (" ".join(argv), rc))
        if rc in want:
            res.append(Result(g, test, "PASS"))
        else:
            res.append(Result(g, test, "FAIL", "%s: expected exit %s, got %s; stdout: %s; stderr: %s"
                              % (" ".join(argv), "/".join(map(str, want)), rc,
                                 short(out, 300), short(err, 300))))

    expect("usage: no arguments", [tool.path], (2,))
    expect("usage: bad pid", [tool.path, "--json", "not-a-pid"], (2,))
    expect("usage: unknown option", [tool.path, "--no-such-option", "1"], (2,))
    expect("no such process", [tool.path, "--json", str(free_pid())], (3,))
    expect("sample: usage, no pid", [tool.path, "sample"], (2,))
    expect("sample: usage, bad rate", [tool.path, "sample", "-r", "fast", "1"], (2,))
    expect("sample: usage, bad mode", [tool.path, "sample", "-m", "nope", "1"], (2,))
    expect("sample: no such process", [tool.path, "sample", "-d", "1", str(free_pid())], (3,))
    sleeper = spawn(["sleep", "1000"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.1)
        expect("not a Python process", [tool.path, "--json", str(sleeper.pid)], (5,))
        expect("sample: not a Python process", [tool.path, "sample", "-d", "1",
                                                str(sleeper.pid)], (5,))
    finally:
        kill(sleeper)
    # permission denied: an unprivileged user may not read a root process
    py = spawn([sys.executable, "-c", "import time; time.sleep(1000)"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        for test, args in (("permission denied", ["--json"]),
                           ("sample: permission denied", ["sample", "-d", "1"])):
            if os.geteuid() != 0:
                res.append(Result(g, test, "SKIP", "needs root to switch user"))
                continue
            argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                    tool.path] + args + [str(py.pid)]
            rc, out, err, secs = run(argv, TOOL_TIMEOUT)
            if rc == 4:
                res.append(Result(g, test, "PASS"))
            elif rc in (126, 127):
                res.append(Result(g, test, "FAIL",
                                  "user nobody cannot execute %s (rc %d); stderr: %s"
                                  % (tool.path, rc, short(err))))
            else:
                res.append(Result(g, test, "FAIL",
                                  "%s: expected exit 4, got %s; stderr: %s"
                                  % (" ".join(argv), rc, short(err, 300))))
    finally:
        kill(py)
    res += unsupported_version_tests(tool)
    res.append(exited_mid_read_test(tool))
    try:
        res += bad_input_tests(tool, sid_dir)
    except KeyboardInterrupt:
        raise
    except Exception as e:
        import traceback
        res.append(Result(g, "bad input (cores, snapshots)", "FAIL", "harness error: %s\n%s"
                          % (e, traceback.format_exc())))
    return res


def sleep_core_file(scratch):
    """A core of `sleep 1000`: gcore, else a kernel core. Returns (path,
    why skipped, error)."""
    why = None if GCORE else CORE_PATTERN.ensure()
    if why:
        return None, "no gcore (gdb) and " + why, None
    sleeper = spawn(["prlimit", "--core=unlimited", "--", "sleep", "1000"],
                    stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.2)
        if GCORE:
            path, _w, err = run_gcore(sleeper.pid, os.path.join(scratch, "sleep"))
            return path, None, err
        return kernel_core(sleeper, sleeper.pid), None, None
    except TargetError as e:
        return None, None, str(e)
    finally:
        kill(sleeper)


def bad_input_tests(tool, sid_dir):
    """Cores and snapshots that must be refused (or decoded in part) with
    the documented exit status, a message naming the cause, and no crash."""
    g = "general"
    res = []
    scratch = tempfile.mkdtemp(prefix="bad-", dir=host_tmp())

    def check(test, args, want, needles, more=None):
        argv, rc, out, err = tool_file_run(tool, args)
        cmd = " ".join(argv)
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
            errs.insert(0, "command: " + cmd)
            if out and not more:
                errs.append("stdout: " + short(out, 300))
        r = Result(g, test, "FAIL" if errs else "PASS", "\n".join(errs))
        res.append(r)
        return r

    # -- files that are not cores
    txt = os.path.join(scratch, "notes.txt")
    with open(txt, "w") as f:
        f.write("this is not a core file\n" * 10)
    check("core: not an ELF file -> 11", ["--core", txt, "--json"], 11, ["not an ELF"])
    check("core: ELF but not a core (/bin/true) -> 11",
          ["--core", os.path.realpath("/bin/true"), "--json"], 11, ["not a core"])

    # -- a core of a program that is not Python (and the same core, foreign)
    name5 = "core: non-Python program (sleep) -> 5"
    name12 = "core: another architecture (e_machine 183) -> 12"
    sleep_core, why, err = sleep_core_file(scratch)
    for n in (name5, name12):
        if why:
            res.append(Result(g, n, "SKIP", why))
        elif err:
            res.append(Result(g, n, "FAIL", "could not make a core of sleep: %s" % err))
    if sleep_core:
        check(name5, ["--core", sleep_core, "--json"], 5, ["not a core of CPython"])
        foreign = os.path.join(scratch, "aarch64.core")
        with open(sleep_core, "rb") as f:
            b = bytearray(f.read())
        struct.pack_into("<H", b, 18, 183)                  # e_machine = EM_AARCH64
        with open(foreign, "wb") as f:
            f.write(b)
        remove(sleep_core)
        check(name12, ["--core", foreign, "--json"], 12, ["another architecture"])
        os.unlink(foreign)

    # -- a real Python core: --exe of another build, then cut short
    res.extend(python_core_tests(tool, check, sid_dir))

    # -- snapshots: a fixture with a newer format version, and corrupted
    snaps = fixture_paths()
    nv, nc = "snapshot: newer format version (99) -> 14", "snapshot: corrupted byte -> 14"
    if not snaps:
        for n in (nv, nc):
            res.append(Result(g, n, "FAIL", "no snapshot fixture in %s to start from"
                              % FIXTURES_DIR))
    else:
        src = next((s for s in snaps if s.endswith("sid-3.15-threads.snap")), snaps[0])
        with open(src, "rb") as f:
            orig = f.read()
        b = bytearray(orig)
        struct.pack_into("<I", b, 8, 99)                    # version
        hsize = struct.unpack_from("<I", b, 12)[0]
        h = bytearray(b[:hsize])
        h[24:28] = bytes(4)                                 # CRC over the header, CRC field as 0
        struct.pack_into("<I", b, 24, zlib.crc32(bytes(h)))
        newer = os.path.join(scratch, "newer.snap")
        with open(newer, "wb") as f:
            f.write(b)
        check(nv, ["--snapshot", newer, "--json"], 14, ["newer"])
        b = bytearray(orig)
        b[len(b) // 2] ^= 0xFF
        bad = os.path.join(scratch, "corrupt.snap")
        with open(bad, "wb") as f:
            f.write(b)
        check(nc, ["--snapshot", bad, "--json"], 14, ["corrupt"])
    shutil.rmtree(scratch, ignore_errors=True)
    return res


def python_core_tests(tool, check, sid_dir):
    """Kernel core of the threads target under pyenv 3.12 (else the first
    host interpreter found): --exe of pyenv 3.11 (15), then the core cut
    inside its last segment and cut in half (13, partial JSON)."""
    g = "general"
    n15 = "core: --exe of another build (pyenv 3.11 for a 3.12 core) -> 15"
    ntail = "core: truncated inside its last segment -> 13"
    nhalf = "core: truncated in half -> 13"
    interps = [i for i in discover(sid_dir) if not i.missing and not i.chroot]
    interp = next((i for i in interps if i.label == "pyenv-3.12"), interps[0] if interps else None)
    if interp is None:
        return [Result(g, n, "SKIP", "interpreter missing: no host interpreter for a Python core")
                for n in (n15, ntail, nhalf)]
    err = CORE_PATTERN.ensure()
    if err:
        return [Result(g, n, "SKIP", err) for n in (n15, ntail, nhalf)]
    res = []
    try:
        with Target(interp, "threads", wrap=["prlimit", "--core=unlimited", "--"]) as tg:
            gt = tg.wait_ground_truth()
            tg.wait_settled()
            core = kernel_core(tg.proc, tg.pid)
    except TargetError as e:
        return [Result(g, n, "FAIL", "%s threads target: %s" % (interp.label, e))
                for n in (n15, ntail, nhalf)]
    try:
        py311 = next((i.exe for i in discover(sid_dir) if i.label == "pyenv-3.11" and not i.missing),
                     None)
        if interp.label != "pyenv-3.12" or not py311:
            res.append(Result(g, n15, "SKIP", "interpreter missing: needs pyenv 3.12 and 3.11"))
        else:
            check(n15, ["--core", core, "--exe", py311, "--json"], 15, ["build-id"])

        def partial_dump(allow_missing_threads):
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
                errs += compare(g2, doc, interp, gt["pid"], partial="any")
                return errs
            return more

        facts = read_core_facts(core)
        full = os.path.getsize(core)
        last = max((l for l in facts["loads"] if l[3] > 0), key=lambda l: l[2])
        cut = last[2] + last[3] // 2
        os.truncate(core, cut)
        r1 = check(ntail, ["--core", core, "--json"], 13, ["truncated"], partial_dump(False))
        os.truncate(core, full // 2)
        r2 = check(nhalf, ["--core", core, "--json"], 13, ["truncated"], partial_dump(True))
        r1.info = "%s core of %d bytes cut at %d" % (interp.label, full, cut)
        r2.info = "%s core of %d bytes cut at %d" % (interp.label, full, full // 2)
    finally:
        remove(core)
    return res


def unsupported_version_tests(tool):
    """Python 2.7 is found (it has _PyThreadState_Current) but must be
    named as unsupported, exit 6, by the dump and by sample."""
    tests = (("unsupported version (Python 2.7)", []),
             ("sample: unsupported version (Python 2.7)", ["sample", "-d", "1"]))
    root = pyenv_root()
    py2 = sorted(glob.glob(os.path.join(root, "versions", "2.7*", "bin", "python2.7"))) if root else []
    if not py2:
        return [Result("general", name, "SKIP", "interpreter missing: no pyenv python2.7")
                for name, _ in tests]
    res = []
    p = spawn([py2[0], "-c", "import time; time.sleep(1000)"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        for name, args in tests:
            rc, out, err, secs = run([tool.path] + args + [str(p.pid)], TOOL_TIMEOUT)
            msg = err.decode("utf-8", "replace")
            if rc == 6 and "unsupported Python 2.7" in msg:
                res.append(Result("general", name, "PASS"))
            else:
                res.append(Result("general", name, "FAIL", "expected exit 6 naming Python 2.7, "
                                  "got %s: %s" % (rc, short(err, 300))))
    finally:
        kill(p)
    return res


def exited_mid_read_test(tool):
    """The target dies while --locked holds it paused: exit 7, no hang."""
    name = "process exited during the read"
    p = spawn([sys.executable, "-c", "import time; time.sleep(1000)"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        env = dict(os.environ, PYD_TEST_LOCKED_PAUSE_MS="1500")
        dumper = spawn([tool.path, "--locked", str(p.pid)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env)
        deadline = time.time() + 5
        while tracer_pid(p.pid) != dumper.pid and time.time() < deadline:
            time.sleep(0.02)
        os.kill(p.pid, signal.SIGKILL)
        try:
            out, err = dumper.communicate(timeout=TOOL_TIMEOUT)
        except subprocess.TimeoutExpired:
            kill(dumper)
            return Result("general", name, "FAIL", "pystack-dump hung after the target died")
    finally:
        kill(p)
    if dumper.returncode == 7 and b"exited" in err:
        return Result("general", name, "PASS")
    return Result("general", name, "FAIL", "expected exit 7, got %s: %s"
                  % (dumper.returncode, short(err, 300)))


def unit_tests(build):
    res = []
    for path in sorted(glob.glob(os.path.join(build, "tests", "**", "test_*"), recursive=True)):
        name = os.path.relpath(path, build)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            continue
        if any(part.endswith(".p") for part in name.split(os.sep)[:-1]) \
                or os.path.splitext(path)[1] in (".o", ".a", ".so", ".d", ".c", ".h", ".py"):
            continue                    # meson object dirs, build products, sources
        rc, out, err, secs = run([path], 300, cwd=REPO)
        vlog("%s -> %s in %.1fs" % (name, rc, secs))
        if rc == 0:
            res.append(Result("unit", name, "PASS"))
        else:
            res.append(Result("unit", name, "FAIL", "exit %s; output tail:\n%s"
                              % ("timeout" if rc is None else rc,
                                 short((out or b"") + (err or b""), 1500))))
    return res


# --------------------------------------------------------------------------

def emit(r):
    with _print_lock:
        tail = "   (%s)" % r.detail if r.status == "SKIP" and r.detail else ""
        if r.info and r.status != "SKIP":
            tail += "   [%s]" % r.info
        print("%-4s %-10s %s%s" % (r.status, r.group, r.test, tail), flush=True)
        if r.detail and (r.status == "FAIL" or (VERBOSE and r.status == "PASS")):
            for line in r.detail.rstrip().splitlines():
                print("       " + line, flush=True)


def main():
    global VERBOSE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"),
                    help="build directory (default: %(default)s)")
    ap.add_argument("--only", action="append", default=[],
                    help="run only these (comma separated; repeatable): a label such as "
                         "pyenv-3.12, sid-3.15d, deb-3.11d; a minor version such as 3.11 "
                         "(all its builds) or 3.11d (its debug builds); a source "
                         "pyenv/deb/sid; debug/release; general; fixtures; unit")
    ap.add_argument("--kind", action="append", default=[],
                    help="run only the per-interpreter jobs of these kinds (comma separated, "
                         "repeatable; a prefix: sample, tasks, dump, gcore, kcore, ...)")
    ap.add_argument("-j", "--jobs", type=int, default=3, help="targets run in parallel (default 3)")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--gt-only", action="store_true",
                    help="only check that every target produces ground truth (no pystack-dump); "
                         "on 3.15 also checks the ground truth against profiling.sampling")
    ap.add_argument("--regen-fixtures", action="store_true",
                    help="record the snapshot fixtures in tests/fixtures (FIXTURE_SETS: "
                         "dumps of every version, task graphs of 3.7+) from live targets "
                         "(with --only: of those interpreters), then exit")
    args = ap.parse_args()
    VERBOSE = args.verbose
    try:
        sys.stdout.reconfigure(encoding="utf-8", errors="backslashreplace")
    except AttributeError:
        pass
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)
    atexit.register(CORE_PATTERN.restore)

    t0 = time.time()
    build = os.path.abspath(args.build)
    tool = Tool(os.path.join(build, "cli", "pystack-dump"))
    only = [t for o in args.only for t in re.split(r"[,\s]+", o) if t]
    sid_dir = os.environ.get("PYD_SID_DIR", SID_DIR_DEFAULT)
    if args.regen_fixtures:
        if not (os.path.isfile(tool.path) and os.access(tool.path, os.X_OK)):
            ap.error("%s not found: build it first" % tool.path)
        try:
            return regen_fixtures(tool, sid_dir,
                                  [t for o in args.only for t in re.split(r"[,\s]+", o) if t])
        finally:
            kill_all()
    interps = discover(sid_dir)
    if only:
        interps = [i for i in interps if any(i.matches(t) for t in only)]
        known = set(["general", "unit", "fixtures"])
        for i in discover(sid_dir):
            known.update([i.label, i.source, i.minor_str, i.minor_str + "d", "debug", "release"])
        bad = [t for t in only if t not in known]
        if bad:
            ap.error("--only: unknown %s (known: %s)" % (", ".join(bad), ", ".join(sorted(known))))
    want_general = not only or "general" in only
    want_unit = not only or "unit" in only
    want_fixtures = (not only or "fixtures" in only) and not args.gt_only

    results = []
    missing_tool = not (os.path.isfile(tool.path) and os.access(tool.path, os.X_OK))
    try:
        if missing_tool and not args.gt_only:
            r = Result("general", "pystack-dump binary", "FAIL",
                       "%s not found or not executable: build it first (or run with "
                       "--gt-only to check only the targets)" % tool.path)
            emit(r)
            results.append(r)
            interps = []
            want_general = False
        if want_unit:
            for r in unit_tests(build):
                emit(r)
                results.append(r)
        if want_fixtures and not missing_tool:
            for r in fixture_tests(tool):
                emit(r)
                results.append(r)
        if want_general and not args.gt_only:
            for r in general_tests(tool, sid_dir):
                emit(r)
                results.append(r)

        if any(i.chroot and not i.missing for i in interps):
            err = prepare_chroot(sid_dir)
            if err:
                for i in interps:
                    if i.chroot:
                        i.missing = err
        args.sample_formats_label = sample_formats_label(interps)
        kinds = [k for o in args.kind for k in re.split(r"[,\s]+", o) if k]
        jobs = [(i, k, t) for i in interps for k, t in interp_jobs(i, args)
                if not kinds or any(k.startswith(p) for p in kinds)]
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            futs = [ex.submit(run_job, i, k, t, tool, args) for i, k, t in jobs]
            for f in futs:                       # in submission order
                for r in f.result():
                    emit(r)
                    results.append(r)
    except KeyboardInterrupt:
        STOP.set()
        kill_all()
        print("interrupted", flush=True)
        results.append(Result("general", "interrupted", "FAIL", "interrupted"))
    finally:
        kill_all()
        CORE_PATTERN.restore()
        core_cleanup(sid_dir)

    # summary table
    groups = []
    for r in results:
        if r.group not in groups:
            groups.append(r.group)
    print()
    print("%-12s %7s %7s %8s" % ("version", "passed", "failed", "skipped"))
    for g in groups:
        rs = [r for r in results if r.group == g]
        why = []
        for needle, short_why in (("interpreter missing", "interpreter missing"),
                                  (TASKS_UNSUPPORTED, "tasks: not supported yet"),
                                  ("cannot run on", "tasks: target cannot run"),
                                  (SAMPLE_NO_ASYNC, "sample async: 3.7+")):
            if any(r.status == "SKIP" and needle in r.detail for r in rs):
                why.append(short_why)
        skip_why = "  (%s)" % "; ".join(why) if why else ""
        print("%-12s %7d %7d %8d%s" % (g, sum(r.status == "PASS" for r in rs),
                                       sum(r.status == "FAIL" for r in rs),
                                       sum(r.status == "SKIP" for r in rs), skip_why))
    if SNAP_SIZES:
        print()
        print("snapshot size, recursion target (main thread 1,500 frames deep, a worker 1,000):")
        for i in discover(sid_dir):
            if i.label in SNAP_SIZES:
                print("  %-12s %8d bytes" % (i.label, SNAP_SIZES[i.label]))
    npass = sum(r.status == "PASS" for r in results)
    nfail = sum(r.status == "FAIL" for r in results)
    nskip = sum(r.status == "SKIP" for r in results)
    print("(%.0fs%s)" % (time.time() - t0, ", ground truth only" if args.gt_only else ""))
    print("tests: %d passed, %d failed, %d skipped" % (npass, nfail, nskip), flush=True)
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
