"""What the benchmarks share: where things are, the sid chroot, starting a
target that says "ready", timing a command and its peak RSS, and writing
what a bench measured to bench/results/BENCH.json (record)."""
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SID = os.environ.get("PYD_SID_DIR", "/var/cache/pystack-dump/sid")
RESULTS = os.path.join(HERE, "results")


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


def interleaved(cmds, runs):
    """{label: [wall seconds]} of the commands {label: argv}, run in `runs`
    rounds of one run each, after a run of each to warm the page cache.
    The order turns by one every round: a command always run right after
    another would pay for that one every time (measured: a dump run right
    after CPython's anchor, which leaves the caches cold, took 2.3 ms
    where the same dump two runs later took 1.9)."""
    labels = list(cmds)
    for label in labels:
        run_measured(cmds[label])
    walls = {label: [] for label in labels}
    for r in range(runs):
        turn = r % len(labels)
        for label in labels[turn:] + labels[:turn]:
            walls[label].append(run_measured(cmds[label])[0])
    return walls


def gnu_time(cmd, field):
    """One figure GNU time reports of a run of a command (its -f field)."""
    if not os.path.exists("/usr/bin/time"):
        sys.exit("bench needs GNU time: apt-get install time")
    res = subprocess.run(["/usr/bin/time", "-f", field] + cmd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, check=True)
    return int(res.stderr.split()[-1])


def from_disk(*paths):
    """Drop the files' pages from the page cache (written back first), so
    that each is mapped as a binary read from disk is.  A binary the linker
    has just written sits there in large folios, which a page fault maps
    whole (fault-around): the static build's --version peaked at 1.65 MB
    right after a link, 1.01 MB once read back.  Files that are not there
    are left to the bench's own check."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def peak_rss_kib(cmd):
    """Peak RSS of a command, as GNU time reports it.  (wait4's ru_maxrss of
    a child we fork would include this Python process's pages from before
    the exec.)"""
    return gnu_time(cmd, "%M")


def count_page_faults(cmd):
    """Page faults one run of a command takes (GNU time's %R, minor ones:
    memory first touched, or mapped from the page cache), noise-free where
    wall time is not, and what a run pays most for on a machine whose
    faults are dear (one measured 10 us each)."""
    return gnu_time(cmd, "%R")


def strace_calls(path):
    """{syscall: calls} from an `strace -c` summary."""
    calls = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            # % time, seconds, usecs/call, calls, [errors], syscall
            if len(p) >= 5 and re.match(r"^[\d.]+$", p[0]) and p[-1] != "total":
                try:
                    calls[p[-1]] = int(p[3])
                except ValueError:
                    pass
    return calls


def count_syscalls(cmd):
    """System calls one run of a command makes (`strace -c -f`), noise-free
    where wall time is not; None without strace."""
    if not shutil.which("strace"):
        return None
    with tempfile.TemporaryDirectory(prefix="pyd-bench-") as d:
        out = os.path.join(d, "strace")
        subprocess.run(["strace", "-c", "-f", "-o", out] + cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        return sum(strace_calls(out).values())


def count_instructions(cmd):
    """Instructions one run of a command executes, from its exec to its
    exit, the dynamic loader's included (callgrind's Ir; children not
    followed); None without valgrind."""
    if not shutil.which("valgrind"):
        return None
    with tempfile.TemporaryDirectory(prefix="pyd-bench-") as d:
        res = subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=no",
                              "--callgrind-out-file=" + os.path.join(d, "cg")] + cmd,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        m = re.search(r"Collected : (\d+)", res.stderr)
        return int(m.group(1)) if res.returncode == 0 and m else None


def _first_line(cmd):
    try:
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        return out.stdout.strip().splitlines()[0] if out.stdout.strip() else None
    except OSError:
        return None


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "Model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def _shown(path):
    """PATH relative to the checkout when it is in it."""
    rel = os.path.relpath(os.path.abspath(path), ROOT)
    return path if rel.startswith("..") else rel


def record(bench, rows, tool=None, interpreters=()):
    """Write bench/results/BENCH.json: when, where, what was measured (the
    pystack-dump build TOOL, the interpreters), the command, and ROWS, the
    figures the bench printed (floats kept to 4 decimals), each a dict
    with a unique "id" (what the README's figures are tied to, see
    bench/README.md).  Keys sorted, one
    line per top-level key and per row.  Returns the path."""
    rows = [dict((k, round(v, 4) if isinstance(v, float) else v) for k, v in r.items())
            for r in rows]
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids), "row ids must be unique: %s" % ids
    doc = {
        "bench": bench,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {"cpus": os.cpu_count(), "model": _cpu_model(),
                    "kernel": platform.release(),
                    "load": [round(x, 2) for x in os.getloadavg()]},
        "tool": tool and {"path": _shown(tool), "version": _first_line([tool, "--version"])},
        "git": _first_line(["git", "-C", ROOT, "describe", "--always", "--dirty"]),
        "interpreters": list(interpreters),
        "command": [os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:],
    }
    lines = [" %s: %s" % (json.dumps(k), json.dumps(v, sort_keys=True))
             for k, v in sorted(doc.items())]
    lines.append(' "rows": [\n' + ",\n".join("  " + json.dumps(r, sort_keys=True)
                                            for r in rows) + "\n ]")
    lines.sort()
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, bench + ".json")
    with open(path + ".tmp", "w") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")
    os.replace(path + ".tmp", path)
    print("figures written to %s" % os.path.relpath(path, ROOT))
    return path

