"""What the benchmarks share: where things are, the sid chroot, starting a
target that says "ready", timing a command and its peak RSS."""
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SID = os.environ.get("PYD_SID_DIR", "/var/cache/pystack-dump/sid")


def tool_path(build):
    return os.path.join(build, "cli", "pystack-dump")


def setup_sid():
    """Make sure the sid chroot is there (tests/setup-sid.sh), or exit."""
    if subprocess.call([os.path.join(ROOT, "tests", "setup-sid.sh")]) != 0:
        sys.exit("the sid chroot could not be set up (tests/setup-sid.sh)")


def copy_to_sid(name, dest):
    """Copy bench/NAME into the chroot as /tmp/DEST; returns the in-chroot path."""
    shutil.copy(os.path.join(HERE, name), os.path.join(SID, "tmp", dest))
    return "/tmp/" + dest


def start_ready(cmd):
    """Start a target that prints "ready" once set up; exit if it does not."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    if proc.stdout.readline().strip() != b"ready":
        proc.kill()
        proc.wait()
        sys.exit("target did not start: %s" % " ".join(cmd))
    return proc


def start_target(kind, n, python="/usr/bin/python3.15"):
    """bench/targets.py KIND N under sid's python (in the chroot)."""
    script = copy_to_sid("targets.py", "pyd-bench-targets.py")
    return start_ready(["chroot", SID, python, script, kind, str(n)])


def stop(proc):
    proc.kill()
    proc.wait()


def run_measured(cmd):
    """(wall seconds, stdout) of one command, which must succeed."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit("benchmark command failed: %s\n%s" % (" ".join(cmd), err.decode()))
    return wall, out


def peak_rss_kib(cmd):
    """Peak RSS of a command, as GNU time reports it.  (wait4's ru_maxrss of
    a child we fork would include this Python process's pages from before
    the exec.)"""
    if not os.path.exists("/usr/bin/time"):
        sys.exit("bench needs GNU time: apt-get install time")
    res = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, check=True)
    return int(res.stderr.split()[-1])
