"""Processes: everything a test starts runs in its own process group and
is SIGKILLed on every exit path; /proc readings of a target."""

import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time


TARGET_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LC_ALL": "C.UTF-8",
    "LANG": "C.UTF-8",
    "HOME": "/",
}
PY_FLAGS = ["-B", "-E", "-s"]          # no .pyc in the tree, no PYTHON* env, no user site

GT_TIMEOUT = 90.0
TOOL_TIMEOUT = 60.0

STOP = threading.Event()
_live_lock = threading.Lock()
_live = {}                              # pid -> Popen (own process group)
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


def _log_cpu(p):
    """With PYD_CPU_LOG set, append the process's CPU seconds (its own and
    its waited children's) and command line: where the suite's CPU goes."""
    path = os.environ.get("PYD_CPU_LOG")
    if not path:
        return
    try:
        with open("/proc/%d/stat" % p.pid) as f:
            ticks = sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:15])
    except (OSError, ValueError):
        return
    with open(path, "a") as f:
        f.write("%.2f\t%s\n" % (ticks / os.sysconf("SC_CLK_TCK"), " ".join(map(str, p.args))))


def kill(p):
    if p is None:
        return
    if p.poll() is None:        # never signal a reaped (possibly reused) pid
        _log_cpu(p)
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


def finish(p, timeout):
    """Wait for p, spawned with pipes (killed on timeout): (rc, out, err);
    rc is None on timeout."""
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        kill(p)
        out, err = p.communicate()
        return None, out, err


def run(argv, timeout, env=None, cwd=None):
    """Run to completion (killed on timeout). Returns (rc, out, err, secs);
    rc is None on timeout."""
    t0 = time.time()
    p = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)
    try:
        rc, out, err = finish(p, timeout)
    finally:
        kill(p)
    return rc, out, err, time.time() - t0


def vlog(msg):
    """A step of a test, for its captured output (pytest shows it when the
    test fails)."""
    print("  [v] " + msg, flush=True)


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


def status_field(pid, field):
    """An integer field of /proc/PID/status ("TracerPid", "PPid"), or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, TypeError, ValueError):
        pass
    return None


def tracer_pid(pid):
    return status_field(pid, "TracerPid")


def parent_pid(pid):
    return status_field(pid, "PPid")


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


def short(b, n=800):
    s = b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b)
    s = s.strip()
    return s if len(s) <= n else s[:n] + "...(%d more chars)" % (len(s) - n)


def crashed(rc):
    """The tool timed out or died from a signal (ASan aborts included)."""
    return rc is None or rc < 0 or rc >= 128


def session_id():
    """Who runs the tests: "PID-RANDOM" of the process that started them
    (set by conftest before the workers start, inherited by them)."""
    return os.environ.get("PYD_TEST_SESSION") or "%d-solo" % os.getpid()


# --------------------------------------------------------------------------
# a process's resources, for tests that keep them flat

def open_fds(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return None


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def rss_env(tool):
    """The environment to run the tool in where its memory use is
    measured: in the sanitizer build, with AddressSanitizer's quarantine
    of freed memory off, which grows the resident size by design (leaks
    are LeakSanitizer's to find, at exit)."""
    if not tool.sanitized:
        return None
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"),
                                                 "quarantine_size_mb=0"]))
    return env


def free_port():
    """A loopback port nothing listens on (a server under test binds it)."""
    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]
