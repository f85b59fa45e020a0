"""Bad invocations and processes that cannot be read: each has its exit
status and a message naming the cause."""

import os
import signal
import subprocess
import sys
import time

import pytest

from harness.procs import TOOL_TIMEOUT, kill, run, short, spawn, tracer_pid


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


# (name, arguments, exit status): refused before any process is read
USAGE = [
    ("usage: no arguments", [], 2),
    ("usage: bad pid", ["--json", "not-a-pid"], 2),
    ("usage: unknown option", ["--no-such-option", "1"], 2),
    ("sample: usage, no pid", ["sample"], 2),
    ("sample: usage, bad rate", ["sample", "-r", "fast", "1"], 2),
    ("sample: usage, bad mode", ["sample", "-m", "nope", "1"], 2),
]


def expect(tool, args, want):
    argv = [tool.path] + args
    rc, out, err, secs = run(argv, TOOL_TIMEOUT)
    assert rc == want, "%s: expected exit %s, got %s; stdout: %s; stderr: %s" % (
        " ".join(argv), want, rc, short(out, 300), short(err, 300))


@pytest.mark.parametrize("args,want", [u[1:] for u in USAGE], ids=[u[0] for u in USAGE])
def test_usage(tool, args, want):
    expect(tool, args, want)


@pytest.mark.parametrize("args", [["--json"], ["sample", "-d", "1"]], ids=["dump", "sample"])
def test_no_such_process(tool, args):
    expect(tool, args + [str(free_pid())], 3)


@pytest.mark.parametrize("args", [["--json"], ["sample", "-d", "1"]], ids=["dump", "sample"])
def test_not_python(tool, args):
    sleeper = spawn(["sleep", "1000"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.1)
        expect(tool, args + [str(sleeper.pid)], 5)
    finally:
        kill(sleeper)


@pytest.mark.parametrize("args", [["--json"], ["sample", "-d", "1"]], ids=["dump", "sample"])
def test_permission_denied(tool, args):
    """An unprivileged user may not read a root process: exit 4."""
    if os.geteuid() != 0:
        pytest.skip("needs root to switch user")
    py = spawn([sys.executable, "-c", "import time; time.sleep(1000)"],
               stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                tool.path] + args + [str(py.pid)]
        rc, out, err, secs = run(argv, TOOL_TIMEOUT)
    finally:
        kill(py)
    assert rc not in (126, 127), "user nobody cannot execute %s (rc %d); stderr: %s" % (
        tool.path, rc, short(err))
    assert rc == 4, "%s: expected exit 4, got %s; stderr: %s" % (" ".join(argv), rc,
                                                                  short(err, 300))


@pytest.mark.parametrize("args", [[], ["sample", "-d", "1"]], ids=["dump", "sample"])
def test_unsupported_version(tool, args, python27):
    """Python 2.7 is found (it has _PyThreadState_Current) but must be
    named as unsupported, exit 6, by the dump and by sample."""
    rc, out, err, secs = run([tool.path] + args + [str(python27.pid)], TOOL_TIMEOUT)
    assert rc == 6 and "unsupported Python 2.7" in err.decode("utf-8", "replace"), \
        "expected exit 6 naming Python 2.7, got %s: %s" % (rc, short(err, 300))


def test_exited_mid_read(tool):
    """The target dies while --locked holds it paused: exit 7, no hang."""
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
            pytest.fail("pystack-dump hung after the target died", pytrace=False)
    finally:
        kill(p)
    assert dumper.returncode == 7 and b"exited" in err, "expected exit 7, got %s: %s" % (
        dumper.returncode, short(err, 300))
