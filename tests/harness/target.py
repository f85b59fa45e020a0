"""A target: a script of tests/targets under one interpreter, which
records its own ground truth and blocks; and the tool run against it."""

import json
import os
import shutil
import subprocess
import time
import uuid

from .interps import chroot_out
from .procs import (GT_TIMEOUT, PY_FLAGS, STOP, TARGET_ENV, TOOL_TIMEOUT, host_tmp, kill,
                    parent_pid, run, short, spawn, task_states, vlog)


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
            self.out_in = os.path.join(chroot_out(), self.run_id)
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

    def settled_truth(self, sanity):
        """The ground truth, once every blocked thread sleeps in the kernel;
        TargetError if sanity(gt, interp) finds anything wrong with it."""
        gt = self.wait_ground_truth()
        self.wait_settled()
        errs = sanity(gt, self.interp)
        if errs:
            raise TargetError("ground truth: " + "; ".join(errs))
        return gt

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
    """The built pystack-dump; wrap runs it where it cannot run alone
    (an arm64 build: qemu -L SYSROOT)."""

    def __init__(self, path, wrap=()):
        self.path = path
        self.cmd = list(wrap) + [path]
        self._sanitized = None

    @property
    def sanitized(self):
        """Built with AddressSanitizer (CI's second run): each run of it
        is several times slower."""
        if self._sanitized is None:
            with open(self.path, "rb") as f:
                self._sanitized = b"__asan_init" in f.read()
        return self._sanitized

    def dump(self, pid, locked=False, native=False, env_extra=None, timeout=TOOL_TIMEOUT):
        argv = (self.cmd + (["--locked"] if locked else []) + (["--native"] if native else [])
                + ["--json", str(pid)])
        env = dict(os.environ)
        env.pop("PYD_TEST_LOCKED_PAUSE_MS", None)
        env.update(env_extra or {})
        rc, out, err, secs = run(argv, timeout, env=env)
        vlog("%s -> rc=%s in %.2fs" % (" ".join(argv), rc, secs))
        return rc, out, err, secs


def tool_run(tool, args, timeout=TOOL_TIMEOUT, env=None):
    """pystack-dump ARGS: (argv, rc, stdout, stderr, seconds); rc None on
    timeout."""
    argv = tool.cmd + list(args)
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
