#!/usr/bin/env python3
"""End-to-end tests for pystack-dump (stdlib only, Python 3.9+).

    python3 tests/run_tests.py [--build build] [--only VERSIONS] [-j N] [-v]
                               [--gt-only] [--keep-going]

For every interpreter found (pyenv 3.6-3.13, Debian 3.11 release/debug,
Debian sid 3.13-3.15 release/debug inside a chroot made by
tests/setup-sid.sh), every target in tests/targets is started; it records its
own ground truth (sys._current_frames) and blocks; then
`pystack-dump --json PID` is run and every thread and frame is compared.
See tests/README.md.

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
import subprocess
import sys
import tempfile
import threading
import time
import uuid

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


class Target:
    """A running target process; use as a context manager (always killed)."""

    def __init__(self, interp, name, extra=()):
        self.interp, self.name = interp, name
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
        argv = self.interp.argv([self.interp.script(self.name), self.gt_in] + self.extra)
        vlog("start %s" % " ".join(argv))
        os.makedirs(self.out_host)
        try:
            with open(self.log, "wb") as log:
                self.proc = spawn(argv, stdout=log, stderr=subprocess.STDOUT,
                                  env=TARGET_ENV, cwd="/")
        except BaseException:
            shutil.rmtree(self.out_host, ignore_errors=True)
            raise
        return self

    def __exit__(self, *exc):
        kill(self.proc)
        shutil.rmtree(self.out_host, ignore_errors=True)

    @property
    def pid(self):
        return self.proc.pid

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
                if self.gt.get("pid") != self.pid:
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
        frames = t.get("frames")
        if not isinstance(frames, list):
            errs.append("%s.frames missing or not a list" % w)
            continue
        for j, fr in enumerate(frames):
            fw = "%s.frames[%d]" % (w, j)
            if not isinstance(fr, dict):
                errs.append("%s not an object" % fw)
                continue
            if not isinstance(fr.get("function"), str):
                errs.append("%s.function not a string" % fw)
            if not (fr.get("qualname") is None or isinstance(fr.get("qualname"), str)):
                errs.append("%s.qualname not str|null" % fw)
            if not isinstance(fr.get("file"), str):
                errs.append("%s.file not a string" % fw)
            if not _is_int(fr.get("line")):
                errs.append("%s.line not an int" % fw)
        if len(errs) > 20:
            return errs[:20] + ["..."]
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


def compare(gt, doc, interp, pid):
    """Compare a pystack-dump document with the target's ground truth."""
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
            # accepted: the Python name, the OS name (comm), or a prefix of the
            # Python name (comm is cut at 15 bytes, possibly inside a UTF-8
            # sequence: trailing U+FFFD from such a cut are ignored)
            c = comm(pid, tid)
            stem = g["name"].rstrip("\ufffd")
            if not (g["name"] == e["name"] or g["name"] == c
                    or (stem and e["name"].startswith(stem))):
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
            errs += diff_frames(e["frames"], gf, qual, what)
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
    def __init__(self, group, test, status, detail=""):
        self.group, self.test, self.status, self.detail = group, test, status, detail


def gt_sanity(gt, interp):
    errs = []
    want = interp.minor_str
    if not gt["python_version"].startswith(want + "."):
        errs.append("interpreter reports %s, expected %s.x" % (gt["python_version"], want))
    if gt["debug_build"] != interp.debug:
        errs.append("debug build is %s, expected %s" % (gt["debug_build"], interp.debug))
    if not any(t["main"] for t in gt["threads"]):
        errs.append("no main thread in ground truth")
    return errs


def job_tests(interp, target, opts):
    if target == "heartbeat":
        return ["locked-kill"]
    tests = [target]
    if target == "busy" and not opts.gt_only:
        tests.append("busy --locked")
    if target in ORACLE_TARGETS and interp.minor >= (3, ORACLE_MIN_MINOR):
        tests.append("oracle:" + target)
    return tests


def run_job(interp, target, tool, opts):
    names = job_tests(interp, target, opts)
    if interp.missing:
        return [Result(interp.label, n, "SKIP", "interpreter missing: " + interp.missing)
                for n in names]
    try:
        if target == "heartbeat":
            return [locked_kill(interp, tool, opts)]
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


def general_tests(tool):
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
    sleeper = spawn(["sleep", "1000"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.1)
        expect("not a Python process", [tool.path, "--json", str(sleeper.pid)], (5,))
    finally:
        kill(sleeper)
    # permission denied: an unprivileged user may not read a root process
    py = spawn([sys.executable, "-c", "import time; time.sleep(1000)"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        if os.geteuid() != 0:
            res.append(Result(g, "permission denied", "SKIP", "needs root to switch user"))
        else:
            argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                    tool.path, "--json", str(py.pid)]
            rc, out, err, secs = run(argv, TOOL_TIMEOUT)
            if rc == 4:
                res.append(Result(g, "permission denied", "PASS"))
            elif rc in (126, 127):
                res.append(Result(g, "permission denied", "FAIL",
                                  "user nobody cannot execute %s (rc %d); stderr: %s"
                                  % (tool.path, rc, short(err))))
            else:
                res.append(Result(g, "permission denied", "FAIL",
                                  "%s: expected exit 4, got %s; stderr: %s"
                                  % (" ".join(argv), rc, short(err, 300))))
    finally:
        kill(py)
    res.append(unsupported_version_test(tool))
    res.append(exited_mid_read_test(tool))
    return res


def unsupported_version_test(tool):
    """Python 2.7 is found (it has _PyThreadState_Current) but must be
    named as unsupported, exit 6."""
    name = "unsupported version (Python 2.7)"
    root = pyenv_root()
    py2 = sorted(glob.glob(os.path.join(root, "versions", "2.7*", "bin", "python2.7"))) if root else []
    if not py2:
        return Result("general", name, "SKIP", "interpreter missing: no pyenv python2.7")
    p = spawn([py2[0], "-c", "import time; time.sleep(1000)"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        rc, out, err, secs = run([tool.path, str(p.pid)], TOOL_TIMEOUT)
    finally:
        kill(p)
    msg = err.decode("utf-8", "replace")
    if rc == 6 and "unsupported Python 2.7" in msg:
        return Result("general", name, "PASS")
    return Result("general", name, "FAIL", "expected exit 6 naming Python 2.7, got %s: %s"
                  % (rc, short(err, 300)))


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
                         "pyenv/deb/sid; debug/release; general; unit")
    ap.add_argument("-j", "--jobs", type=int, default=3, help="targets run in parallel (default 3)")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--gt-only", action="store_true",
                    help="only check that every target produces ground truth (no pystack-dump); "
                         "on 3.15 also checks the ground truth against profiling.sampling")
    args = ap.parse_args()
    VERBOSE = args.verbose
    try:
        sys.stdout.reconfigure(encoding="utf-8", errors="backslashreplace")
    except AttributeError:
        pass
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)

    t0 = time.time()
    build = os.path.abspath(args.build)
    tool = Tool(os.path.join(build, "cli", "pystack-dump"))
    only = [t for o in args.only for t in re.split(r"[,\s]+", o) if t]
    sid_dir = os.environ.get("PYD_SID_DIR", SID_DIR_DEFAULT)
    interps = discover(sid_dir)
    if only:
        interps = [i for i in interps if any(i.matches(t) for t in only)]
        known = set(["general", "unit"])
        for i in discover(sid_dir):
            known.update([i.label, i.source, i.minor_str, i.minor_str + "d", "debug", "release"])
        bad = [t for t in only if t not in known]
        if bad:
            ap.error("--only: unknown %s (known: %s)" % (", ".join(bad), ", ".join(sorted(known))))
    want_general = not only or "general" in only
    want_unit = not only or "unit" in only

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
        if want_general and not args.gt_only:
            for r in general_tests(tool):
                emit(r)
                results.append(r)

        if any(i.chroot and not i.missing for i in interps):
            err = prepare_chroot(sid_dir)
            if err:
                for i in interps:
                    if i.chroot:
                        i.missing = err
        jobs = [(i, t) for i in interps for t in DUMP_TARGETS + ["heartbeat"]]
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            futs = [ex.submit(run_job, i, t, tool, args) for i, t in jobs]
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

    # summary table
    groups = []
    for r in results:
        if r.group not in groups:
            groups.append(r.group)
    print()
    print("%-12s %7s %7s %8s" % ("version", "passed", "failed", "skipped"))
    for g in groups:
        rs = [r for r in results if r.group == g]
        skip_why = ""
        if any(r.status == "SKIP" for r in rs):
            skip_why = "  (interpreter missing)" if any("interpreter missing" in r.detail
                                                        for r in rs) else ""
        print("%-12s %7d %7d %8d%s" % (g, sum(r.status == "PASS" for r in rs),
                                       sum(r.status == "FAIL" for r in rs),
                                       sum(r.status == "SKIP" for r in rs), skip_why))
    npass = sum(r.status == "PASS" for r in results)
    nfail = sum(r.status == "FAIL" for r in results)
    nskip = sum(r.status == "SKIP" for r in results)
    print("(%.0fs%s)" % (time.time() - t0, ", ground truth only" if args.gt_only else ""))
    print("tests: %d passed, %d failed, %d skipped" % (npass, nfail, nskip), flush=True)
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
