"""--coredump PID|PROGRAM: the core systemd-coredump kept of a crash,
found the way one looks it up.  The real systemd-coredump stores it
(Debian's, unpacked by tests/setup-coredump.sh) and the real journald and
coredumpctl say where it is and what crashed; the test stands in only for
what systemd itself would do, which this machine may not run: it starts
journald and, as the socket unit systemd-coredump.socket does, listens on
/run/systemd/coredump and starts systemd-coredump on each connection.
The crash is a gcore core of a live target (the kernel's handler gets the
kernel's core the same way, on its standard input, while the process is
still there to be described), stored zstd-compressed with the attributes
systemd-coredump gives it.  Then:

- `--coredump PID --json` gives the target's ground truth, and says what
  the journal says of the crash (executable, signal, time, found by
  coredumpctl); the text header names the stored file, its compression and
  the same facts;
- `--coredump EXE` (the executable's path) finds the same core;
- without coredumpctl on PATH, the storage directory's names and extended
  attributes find it (found by the directory);
- a core kept inside the journal (Storage=journal, set for the test in a
  drop-in of coredump.conf) is written out by coredumpctl and read the
  same way, its temporary copy removed after;
- a pid no core is kept of: exit 18, saying where it looked and what to
  check."""

import contextlib
import glob
import os
import signal
import socket
import subprocess
import time

import pytest

from harness.cores import GCORE, GCORE_TARGET_ENV, gcore_slot, remove, run_gcore
from harness.dumps import compare, core_doc_checks, gt_sanity
from harness.procs import host_tmp, short
from harness.results import Result, settle
from harness.target import Target, parse_json_out, tool_run

pytestmark = pytest.mark.xdist_group("coredump")

UNPACKED = os.environ.get("PYD_COREDUMP_DIR", "/var/cache/pystack-dump/systemd-coredump")
HANDLER = os.path.join(UNPACKED, "lib/systemd/systemd-coredump")
CTL_DIR = os.path.join(UNPACKED, "usr/bin")
JOURNALD = "/lib/systemd/systemd-journald"
JOURNAL_SOCKET = "/run/systemd/journal/socket"
COREDUMP_SOCKET = "/run/systemd/coredump"
STORAGE = "/var/lib/systemd/coredump"
DROP_IN = "/etc/systemd/coredump.conf.d/pystack-dump-test.conf"
# A host interpreter and a chroot's (--sysroot), as for the other
# compressed cores: finding the core is the same code whatever the Python.
INTERPS = ("pyenv-3.12", "sid-3.15")
# The signal the records give: the target is stopped, not killed, while
# its core is taken; SIGABRT is what a crashed interpreter usually dies of.
SIGNAL = signal.SIGABRT
NO_SUCH_PID = 4194303   # pid_max's largest: no process ever had it here


def alive(path):
    """Does something listen on the Unix socket at path?"""
    for kind in (socket.SOCK_DGRAM, socket.SOCK_SEQPACKET, socket.SOCK_STREAM):
        s = socket.socket(socket.AF_UNIX, kind)
        try:
            s.connect(path)
            return True
        except OSError:
            pass
        finally:
            s.close()
    return False


class Systemd:
    """journald and systemd-coredump's socket, as systemd would run them
    (each only if the machine does not already)."""

    def __init__(self):
        self.journald = None
        self.listener = None

    def start(self):
        if not alive(JOURNAL_SOCKET):
            self.journald = subprocess.Popen([JOURNALD], stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL)
            deadline = time.time() + 10
            while not alive(JOURNAL_SOCKET):
                if time.time() > deadline or self.journald.poll() is not None:
                    raise RuntimeError("systemd-journald did not start")
                time.sleep(0.05)
        if not alive(COREDUMP_SOCKET):
            remove(COREDUMP_SOCKET)
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            self.listener.bind(COREDUMP_SOCKET)
            self.listener.listen(4)

    @contextlib.contextmanager
    def in_journal(self):
        """Cores kept inside the journal while in the block (only with the
        test's own socket: a machine's systemd-coredump is left as it is
        configured)."""
        if not self.listener:
            pytest.skip("this machine runs its own systemd-coredump")
        os.makedirs(os.path.dirname(DROP_IN), exist_ok=True)
        with open(DROP_IN, "w") as f:
            f.write("[Coredump]\nStorage=journal\n")
        try:
            yield
        finally:
            remove(DROP_IN)
            try:
                os.rmdir(os.path.dirname(DROP_IN))
            except OSError:
                pass

    def store(self, pid, core):
        """Hand the core of (stopped) process pid to systemd-coredump as
        the kernel does: its kernel-side half reads /proc/PID and the core
        from its standard input and passes both to the socket, whose
        service half stores and journals them.  (exit statuses, stderr)"""
        argv = [HANDLER, str(pid), str(os.getuid()), str(os.getgid()), str(int(SIGNAL)),
                str(int(time.time())), "18446744073709551615", socket.gethostname()]
        with open(core, "rb") as f:
            kernel_side = subprocess.Popen(argv, stdin=f, stderr=subprocess.PIPE)
        st = []
        err = b""
        if self.listener:
            self.listener.settimeout(60)
            conn, _ = self.listener.accept()
            with conn:
                # systemd-coredump@.service: the connection on stdin (and
                # as the one socket passed, fd 3)
                fd = conn.fileno()
                service = subprocess.Popen(
                    ["/bin/sh", "-c", "LISTEN_FDS=1 LISTEN_PID=$$ exec %s" % HANDLER],
                    stdin=fd, preexec_fn=lambda: os.dup2(fd, 3), close_fds=False,
                    stderr=subprocess.PIPE)
                err += service.communicate(timeout=120)[1]
                st.append(service.returncode)
        err += kernel_side.communicate(timeout=120)[1]
        st.insert(0, kernel_side.returncode)
        return st, err

    def stop(self):
        if self.listener:
            self.listener.close()
            remove(COREDUMP_SOCKET)
        if self.journald:
            self.journald.terminate()
            self.journald.wait(timeout=10)


@pytest.fixture(scope="module")
def systemd():
    if os.geteuid() != 0:
        pytest.skip("systemd-coredump stores cores as root")
    for path, why in ((HANDLER, "tests/setup-coredump.sh has not unpacked systemd-coredump"),
                      (JOURNALD, "no systemd-journald (package systemd)"),
                      (GCORE, "no gcore (package gdb)")):
        if not path or not os.path.exists(path):
            pytest.skip(why)
    s = Systemd()
    try:
        s.start()
        yield s
    finally:
        s.stop()


def stored_of(pid):
    return [os.path.join(STORAGE, n) for n in os.listdir(STORAGE)
            if n.startswith("core.") and n.split(".")[4:5] == [str(pid)]]


def env_with(ctl):
    env = dict(os.environ)
    path = [d for d in env.get("PATH", "").split(":") if d and
            not os.path.exists(os.path.join(d, "coredumpctl"))]
    env["PATH"] = ":".join(([CTL_DIR] if ctl else []) + path)
    return env


def check_found(tool, args, sysroot, gt, interp, pid, exe, found_by, env,
                in_journal=False):
    """--coredump ARGS as JSON and as text: the ground truth, the
    records' facts, the header (naming the stored file, zstd-compressed,
    or the copy written out of the journal)."""
    errs = []
    argv, rc, out, err, _ = tool_run(tool, ["--coredump"] + args + sysroot + ["--json"],
                                     env=env)
    cmd = " ".join(argv)
    doc, e = parse_json_out(out) if rc == 0 else (None, "exit %s: %s" % (rc, short(err)))
    if e:
        return ["%s: %s" % (cmd, e)]
    errs += core_doc_checks(doc) + compare(gt, doc, interp, pid)
    want = {"exe": exe, "signal": int(SIGNAL), "signal_name": "SIGABRT",
            "found_by": found_by}
    crash = doc.get("crash") or {}
    for k, v in want.items():
        if crash.get(k) != v:
            errs.append("%s: crash.%s is %r, want %r" % (cmd, k, crash.get(k), v))
    if not crash.get("time"):
        errs.append("%s: no crash.time" % cmd)
    argv, rc, out, err, _ = tool_run(tool, ["--coredump"] + args + sysroot, env=env)
    head = out.split(b"\n", 1)[0].decode("utf-8", "replace")
    prefix = ("Core file %s/pystack-dump-core." % os.environ.get("TMPDIR", "/tmp")
              if in_journal else "Core file %s/core." % STORAGE)
    facts = "%s (process %d: %s, SIGABRT, %s, from %s)" % (
        "" if in_journal else ", zstd-compressed", pid, exe, crash.get("time"), found_by)
    if rc != 0 or not head.startswith(prefix) or facts not in head:
        errs.append("%s: exit %s, header %r, want %r ... %r" % (" ".join(argv), rc, head,
                                                             prefix, facts))
    return errs


def take_core(tg, systemd):
    """gcore of the target, handed to systemd-coredump while the target is
    stopped; (systemd-coredump's exit statuses, its stderr) or an error."""
    prefix = os.path.join(host_tmp(), "coredump-" + tg.run_id)
    with gcore_slot():
        core, _, err = run_gcore(tg.pid, prefix)
        if err:
            return None, err
        os.kill(tg.pid, signal.SIGSTOP)
        try:
            return systemd.store(tg.pid, core)
        finally:
            remove(core)
            os.kill(tg.pid, signal.SIGCONT)


def journaled(pid, timeout=60):
    """Wait until the journal has the crash of pid (journald writes what
    systemd-coredump sent it after systemd-coredump ends: a core kept in
    the journal takes it a while); False if it never came."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if subprocess.run([os.path.join(CTL_DIR, "coredumpctl"), "--no-pager", "-q", "list",
                           str(pid)], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0:
            return True
        time.sleep(0.1)
    return False


def temp_copies():
    return set(glob.glob(os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                      "pystack-dump-core.*")))


@pytest.mark.interps(lambda i: i.label in INTERPS)
def test_coredump(interp, tool, systemd, request):
    errs = []
    sysroot = ["--sysroot", interp.chroot] if interp.chroot else []
    with Target(interp, "threads", env_extra=GCORE_TARGET_ENV) as tg:
        gt = tg.settled_truth(gt_sanity)
        exe = os.readlink("/proc/%d/exe" % tg.pid)
        st, err = take_core(tg, systemd)
        if not journaled(tg.pid):
            errs.append("the journal never had the crash of %d" % tg.pid)
        stored = stored_of(tg.pid)
        size = os.path.getsize(stored[0]) >> 10 if stored else 0
        try:
            if not stored or not stored[0].endswith(".zst"):
                errs.append("systemd-coredump (exit %s) stored %s: %s" % (st, stored, short(err)))
            else:
                ctl = env_with(True)
                errs += check_found(tool, [str(tg.pid)], sysroot, gt, interp, tg.pid, exe,
                                    "coredumpctl", ctl)
                errs += check_found(tool, [exe], sysroot, gt, interp, tg.pid, exe,
                                    "coredumpctl", ctl)
                errs += check_found(tool, [str(tg.pid)], sysroot, gt, interp, tg.pid, exe,
                                    STORAGE, env_with(False))
            for env in (env_with(True), env_with(False)):
                argv, rc, out, err, _ = tool_run(tool, ["--coredump", str(NO_SUCH_PID)],
                                                 env=env)
                text = err.decode("utf-8", "replace")
                if rc != 18 or "no core of %d kept by systemd-coredump" % NO_SUCH_PID \
                        not in text or STORAGE not in text or "core_pattern" not in text:
                    errs.append("%s: exit %s (want 18), stderr %s" % (" ".join(argv), rc,
                                                                      short(err)))
        finally:
            for path in stored:
                remove(path)
    settle(Result("coredump", "FAIL" if errs else "PASS", "\n".join(errs),
                  info="%s, %d KB" % (os.path.basename(stored[0]) if stored else "-", size)),
           request.node)


@pytest.mark.interps(lambda i: i.label in INTERPS[:1])
def test_coredump_in_journal(interp, tool, systemd, request):
    errs = []
    with Target(interp, "threads", env_extra=GCORE_TARGET_ENV) as tg:
        gt = tg.settled_truth(gt_sanity)
        exe = os.readlink("/proc/%d/exe" % tg.pid)
        with systemd.in_journal():
            st, err = take_core(tg, systemd)
        if not journaled(tg.pid):
            errs.append("the journal never had the crash of %d (systemd-coredump exited %s: "
                        "%s)" % (tg.pid, st, short(err)))
        stored = stored_of(tg.pid)
        if stored:
            errs.append("with Storage=journal, systemd-coredump stored a file: %s" % stored)
        before = temp_copies()
        errs += check_found(tool, [str(tg.pid)], [], gt, interp, tg.pid, exe, "coredumpctl",
                            env_with(True), in_journal=True)
        left = temp_copies() - before
        if left:
            errs.append("temporary copies left behind: %s" % sorted(left))
        for path in stored + sorted(left):
            remove(path)
    settle(Result("coredump-in-journal", "FAIL" if errs else "PASS", "\n".join(errs)),
           request.node)
