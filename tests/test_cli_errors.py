"""Bad invocations and processes that cannot be read: each has its exit
status and a message naming the cause."""

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

import pytest

from harness.dumps import gt_sanity
from harness.procs import TOOL_TIMEOUT, kill, run, short, spawn, task_states, tracer_pid
from harness.results import Result, settle
from harness.target import Target, parse_json_out, tool_run


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
    ("sample: usage, --every without -o", ["sample", "--every", "1", "1"], 2),
    ("sample: usage, --every with a stream", ["sample", "--every", "1", "-o", "x.pydrec", "1"], 2),
    ("sample: usage, --every with -n", ["sample", "--every", "1", "-n", "5", "-o", "x.json", "1"],
     2),
    ("report: usage, no file", ["report"], 2),
    ("report: usage, --from after --to", ["report", "--from", "5", "--to", "2", "x"], 2),
    ("report: usage, bad --from", ["report", "--from", "-1", "x"], 2),
    ("report: no such file", ["report", "/nonexistent/x.pydrec"], 16),
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


@pytest.fixture
def zombie():
    """A child of this test that has exited and is not waited for."""
    p = subprocess.Popen(["true"])
    deadline = time.time() + 5
    while time.time() < deadline and task_states(p.pid).get(p.pid) != "Z":
        time.sleep(0.02)
    yield p.pid
    p.wait()


@pytest.mark.parametrize("args", [["--json"], ["sample", "-d", "1"]], ids=["dump", "sample"])
def test_zombie(tool, args, zombie):
    """A zombie is named as one (exit 3), with no permission advice."""
    rc, out, err, secs = run([tool.path] + args + [str(zombie)], TOOL_TIMEOUT)
    text = err.decode("utf-8", "replace")
    assert rc == 3 and "a zombie" in text and "permission" not in text, \
        "expected exit 3 naming a zombie, got %s: %s" % (rc, short(err, 300))


def kernel_thread():
    """The pid of a kernel thread (kthreadd is 2 outside a pid namespace)."""
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % pid) as f:
                flags = int(f.read().rsplit(")", 1)[1].split()[6])
        except (OSError, ValueError, IndexError):
            continue
        if flags & 0x00200000:
            return int(pid)
    return None


@pytest.mark.parametrize("args", [["--json"], ["sample", "-d", "1"]], ids=["dump", "sample"])
def test_kernel_thread(tool, args):
    """A kernel thread is named as one (exit 5), with no permission advice."""
    pid = kernel_thread()
    if pid is None:
        pytest.skip("no kernel thread visible (a pid namespace)")
    rc, out, err, secs = run([tool.path] + args + [str(pid)], TOOL_TIMEOUT)
    text = err.decode("utf-8", "replace")
    assert rc == 5 and "kernel thread" in text and "permission" not in text, \
        "expected exit 5 naming a kernel thread, got %s: %s" % (rc, short(err, 300))


def test_root_advice(tool):
    """Whatever pid 1 is, root is never told to run as root: a process
    root cannot read is said to be protected."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    rc, out, err, secs = run([tool.path, "1"], TOOL_TIMEOUT)
    text = err.decode("utf-8", "replace")
    assert "sudo pystack-dump" not in text, "root told to run as root: %s" % short(err, 400)
    assert rc in (0, 4, 5, 9), "unexpected exit %s: %s" % (rc, short(err, 300))
    if rc == 4:
        assert "even as root" in text, short(err, 400)


def test_pid1_not_python(tool):
    """Inside a pid namespace whose pid 1 is a shell (a container's init
    that is not Python), `pystack-dump 1` says it is not a Python process
    (exit 5), with no permission advice."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare (util-linux)")
    argv = ["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c",
            "sleep 30 & exec 2>&1; %s 1; echo rc=$?" % shlex.quote(tool.path)]
    rc, out, err, secs = run(argv, TOOL_TIMEOUT)
    text = out.decode("utf-8", "replace")
    assert "rc=5" in text and "is not running CPython" in text, short(out + err, 400)
    assert "root" not in text and "permission" not in text.lower(), short(out, 400)


def after_pid_errors(tool, tg, interp):
    """sample PID -n 30 -f collapsed -q -o FILE and PID --tasks --json:
    the options after the PID are taken."""
    out = os.path.join(tg.out_host, "after.collapsed")
    argv, rc, so, se, _ = tool_run(tool, ["sample", str(tg.pid), "-n", "30", "-f",
                                          "collapsed", "-q", "-o", out])
    errs = []
    lines = open(out).read().splitlines() if rc == 0 and os.path.exists(out) else []
    if rc != 0 or not lines or sum(int(line.rsplit(" ", 1)[1]) for line in lines) < 30:
        errs.append("%s: exit %s, %d collapsed lines: %s"
                    % (" ".join(argv), rc, len(lines), short(se)))
    argv, rc, so, se, _ = tool_run(tool, [str(tg.pid), "--tasks", "--json"])
    doc, e = parse_json_out(so) if rc == 0 else (None, "exit %s: %s" % (rc, short(se)))
    if interp.minor >= (3, 7) and (e or "tasks" not in doc):
        errs.append("%s: %s" % (" ".join(argv), e or "no tasks in %s" % short(so)))
    if interp.minor < (3, 7) and rc == 2:
        errs.append("%s: a usage error: %s" % (" ".join(argv), short(se)))
    return errs


def test_options_after_pid_python(interp, tool, request):
    """`sample` and `--tasks` take their options after the PID too."""
    with Target(interp, "threads") as tg:
        tg.settled_truth(gt_sanity)
        errs = after_pid_errors(tool, tg, interp)
    settle(Result("options after the PID", "FAIL" if errs else "PASS", "\n".join(errs)),
           request.node)


def test_options_after_pid(tool):
    """Options may follow the PID (GNU order); "--" ends them."""
    sleeper = spawn(["sleep", "1000"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.1)
        expect(tool, [str(sleeper.pid), "--json"], 5)          # parsed: not Python
        expect(tool, ["--", str(sleeper.pid), "--json"], 2)    # "--json" is a 2nd PID
    finally:
        kill(sleeper)


def test_unwritable_output(tool, tmp_path):
    """An output that cannot be written exits 17 naming the file and why,
    before any sampling (not after the whole run), and never says it
    wrote; the check leaves no file behind where the run fails."""
    p = spawn([sys.executable, "-c", "import time; time.sleep(1000)"], stdout=subprocess.DEVNULL)
    sleeper = spawn(["sleep", "1000"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        pid = str(p.pid)
        rec, prof = str(tmp_path / "r.pydrec"), str(tmp_path / "a.json")
        for out in (rec, prof):
            rc, _, err, _ = run([tool.path, "sample", "-d", "0.3", "-o", out, pid], TOOL_TIMEOUT)
            assert rc == 0, "sample -o %s: exit %s: %s" % (out, rc, short(err, 300))
        missing = "/nonexistent/dir/"
        cases = [
            ["sample", "-d", "5", "-o", missing + "x.html", pid],
            ["sample", "-d", "5", "-o", str(tmp_path), pid],            # a directory
            ["sample", "-d", "5", "-f", "jsonl", "-o", missing + "x.jsonl", pid],
            ["sample", "-d", "5", "--every", "1", "-o", missing + "%S.json", pid],
            ["--save-snapshot", missing + "x.snap", pid],
            ["report", "-o", missing + "r.html", rec],
            ["diff", "-o", missing + "d.html", prof, prof],
        ]
        for args in cases:
            argv = [tool.path] + args
            rc, out, err, secs = run(argv, TOOL_TIMEOUT)
            err = err.decode("utf-8", "replace")
            what = " ".join(argv)
            assert rc == 17, "%s: expected exit 17, got %s: %s" % (what, rc, short(err, 300))
            assert "cannot write" in err and ("/nonexistent/" in err or str(tmp_path) in err), \
                "%s: the message names neither the file nor why: %s" % (what, err)
            assert "wrote" not in err, "%s: says it wrote: %s" % (what, err)
            assert secs < 3, "%s: took %.1f s: the output was not checked first" % (what, secs)
            assert not out.strip(), "%s: printed a dump before failing: %s" % (what, short(out))
        fresh = str(tmp_path / "never.json")
        rc, _, err, _ = run([tool.path, "sample", "-d", "1", "-o", fresh, str(sleeper.pid)],
                            TOOL_TIMEOUT)
        assert rc == 5 and not os.path.exists(fresh), \
            "not Python (exit %s): the output check left %s behind" % (rc, fresh)
    finally:
        kill(p)
        kill(sleeper)


@pytest.mark.parametrize("opt", ["--locked", "--native"])
def test_traced_already(tool, opt):
    """A target another tracer holds (strace here): even as root --locked
    and --native cannot attach, and the message says who traces it and
    that a process has one tracer at most, not "run as root"."""
    p = spawn(["strace", "-o", "/dev/null", sys.executable, "-c", "import time; time.sleep(1000)"],
              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        child = None
        while time.time() < deadline and child is None:
            kids = [int(k) for k in open("/proc/%d/task/%d/children" % (p.pid, p.pid))
                    .read().split()]
            # past its exec, in the sleep: strace's child before that
            # is strace's own image
            child = next((k for k in kids if tracer_pid(k) == p.pid
                          and b"sleep(1000)" in open("/proc/%d/cmdline" % k, "rb").read()
                          and task_states(k).get(k) == "S"), None)
            time.sleep(0.05)
        assert child, "strace started no traced child"
        rc, out, err, _ = run([tool.path, opt, str(child)], TOOL_TIMEOUT)
        err = err.decode("utf-8", "replace")
        assert rc == 4, "%s: expected exit 4, got %s: %s" % (opt, rc, short(err, 300))
        assert ("process %d (strace) traces it already" % p.pid) in err and \
            "one tracer" in err and "sudo" not in err, \
            "%s: the message does not name the tracer: %s" % (opt, err)
    finally:
        kill(p)


def test_thread_id_names_its_process(tool):
    """A thread's id (top -H shows them) reads the process it belongs to:
    the header and the JSON name the process, not the thread, and a note
    says which thread of which process was given."""
    code = ("import threading, time\n"
            "t = threading.Thread(target=time.sleep, args=(1000,), name='w')\n"
            "t.start(); print(t.native_id, flush=True); time.sleep(1000)\n")
    p = spawn([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        tid = int(p.stdout.readline())
        rc, out, err, _ = run([tool.path, str(tid)], TOOL_TIMEOUT)
        text, err = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
        assert rc == 0 and text.startswith("Process %d: " % p.pid), \
            "dump of thread %d: exit %s, header %r" % (tid, rc, text[:120])
        assert "%d is a thread of process %d" % (tid, p.pid) in err, err
        rc, out, err, _ = run([tool.path, "--json", str(tid)], TOOL_TIMEOUT)
        doc, e = parse_json_out(out)
        assert not e and doc["pid"] == p.pid, "JSON of thread %d: %s %r" % (
            tid, e, doc and doc.get("pid"))
    finally:
        kill(p)
