"""The Python API (python/, the pystack_dump package): dump() and tasks()
return the documents pystack-dump --json prints, errors are its exit
statuses and messages, the Sampler profiles a busy target, and dump()
called in a loop keeps its memory flat."""

import json
import os
import re
import subprocess
import sys
import time

import pytest

from harness.cores import GCORE, GCORE_TARGET_ENV, gcore_slot, run_gcore
from harness.interps import REPO
from harness.dumps import first_difference, gt_sanity
from harness.procs import host_tmp, kill, spawn
from harness.tasks import TASKS_TARGET, wait_tasks_truth
from harness.target import Target, tool_run

# A few interpreters, old to new, each layout family once.
FEW = {(3, 6), (3, 9), (3, 11), (3, 12), (3, 13), (3, 14), (3, 15)}
few = pytest.mark.interps(lambda i: i.minor in FEW and not i.debug)


@pytest.fixture(scope="session")
def python_api(build):
    """The pystack_dump package as built (BUILD/python), imported and
    running this build's pystack-dump (PYSTACK_DUMP, which the loop's
    child process inherits); a skip if it was not built."""
    where = os.path.join(build, "python")
    if not os.path.isfile(os.path.join(where, "pystack_dump", "__init__.py")):
        pytest.skip("the Python API was not built (meson -Dpython=disabled, or no "
                    "Python found): no %s/pystack_dump" % where)
    os.environ["PYSTACK_DUMP"] = os.path.join(build, "cli", "pystack-dump")
    sys.path.insert(0, where)
    import pystack_dump
    return pystack_dump


def cli_json(tool, args):
    argv, rc, out, err, _ = tool_run(tool, args)
    assert rc == 0, "%s exited %s: %s" % (" ".join(argv), rc, err[-600:])
    return json.loads(out)


def same_as_cli(api_call, tool, args, tries=3):
    """api_call() against pystack-dump ARGS: equal, or the first difference
    (a live target's idle state can flip between two reads: a few tries)."""
    for _ in range(tries):
        doc, cli = api_call(), cli_json(tool, args)
        diff = first_difference(cli, doc)
        if not diff:
            return None
    return "%s: %s" % (" ".join(args), diff)


@few
def test_api_dump_equals_cli(interp, tool, python_api):
    """dump(pid) is the document pystack-dump --json prints."""
    with Target(interp, "threads") as tg:
        tg.settled_truth(gt_sanity)
        diff = same_as_cli(lambda: python_api.dump(tg.pid), tool, ["--json", str(tg.pid)])
    assert not diff, diff


@few
def test_api_tasks_equals_cli(interp, tool, python_api):
    """tasks(pid) is pystack-dump --tasks --json's document; before 3.7
    both refuse with the same exit status."""
    with Target(interp, TASKS_TARGET) as tg:
        try:
            wait_tasks_truth(tg)
        except Exception as e:                  # noqa: BLE001 (the target's own reason)
            pytest.skip("target %s cannot run on %s: %s" % (TASKS_TARGET, interp.label, e))
        args = ["--tasks", "--json", str(tg.pid)]
        if interp.minor < (3, 7):
            _, rc, _, err, _ = tool_run(tool, args)
            with pytest.raises(python_api.UnsupportedVersion) as e:
                python_api.tasks(tg.pid)
            assert e.value.code == rc == 6
            return
        diff = same_as_cli(lambda: python_api.tasks(tg.pid), tool, args)
    assert not diff, diff


@pytest.mark.skipif(GCORE is None, reason="gcore not installed")
def test_api_dump_core(newest, tool, python_api):
    """dump(core=...) of a gcore core is pystack-dump --core --json's."""
    with Target(newest, "threads", env_extra=GCORE_TARGET_ENV) as tg:
        tg.settled_truth(gt_sanity)
        with gcore_slot():
            core, _warned, err = run_gcore(tg.pid, os.path.join(host_tmp(), "api-" + tg.run_id))
            assert not err, err
            try:
                doc = python_api.dump(core=core)
                cli = cli_json(tool, ["--core", core, "--json"])
            finally:
                os.unlink(core)
    assert doc["source"] == "core"
    diff = first_difference(cli, doc)
    assert not diff, diff


def cli_error(tool, args):
    """pystack-dump ARGS's exit status and message, as the API words it."""
    _, rc, _, err, _ = tool_run(tool, args)
    text = err.decode("utf-8", "replace").rstrip("\n")
    return rc, text.replace("pystack-dump:", "pystack_dump:", 1)


def expect_error(python_api, tool, cls, args, **kw):
    rc, msg = cli_error(tool, args)
    with pytest.raises(cls) as e:
        python_api.dump(**kw)
    assert isinstance(e.value, python_api.Error)
    assert e.value.code == rc, "code %s, the CLI exits %s" % (e.value.code, rc)
    assert e.value.message == str(e.value) == msg


def test_api_errors(tool, python_api, tmp_path):
    """Each failure is its class with the CLI's exit status and message."""
    p = subprocess.Popen(["true"])
    p.wait()                                    # a pid nobody has (for now)
    expect_error(python_api, tool, python_api.ProcessNotFound, [str(p.pid)], pid=p.pid)
    sleeper = spawn(["sleep", "60"])
    try:
        time.sleep(0.2)
        expect_error(python_api, tool, python_api.NotPython, [str(sleeper.pid)],
                     pid=sleeper.pid)
    finally:
        kill(sleeper)
    bad = tmp_path / "bad"
    bad.write_bytes(b"not a core, not a snapshot\n" * 10)
    expect_error(python_api, tool, python_api.NotACore, ["--core", str(bad)], core=bad)
    expect_error(python_api, tool, python_api.BadSnapshot, ["--snapshot", str(bad)],
                 snapshot=str(bad))
    assert issubclass(python_api.NotACore, python_api.BadFile)
    for kw in ({}, {"pid": 1, "core": str(bad)}, {"pid": -5}, {"pid": "12"},
               {"core": str(bad), "locked": True}):
        with pytest.raises(python_api.UsageError) as e:
            python_api.dump(**kw)
        assert e.value.code == 2
    with pytest.raises(python_api.UsageError, match="unknown mode 'nope'"):
        python_api.Sampler(os.getpid(), mode="nope")


def test_api_error_names(python_api):
    """ERRORS holds the command's short names (core/error.c's pyd_strerror)
    of exit statuses 2-18, and each class says its status."""
    with open(os.path.join(REPO, "core", "error.c")) as f:
        said = set(re.findall(r'return "([^"]+)";', f.read())) - {"success", "unknown error"}
    assert sorted(python_api.ERRORS) == list(range(2, 19))
    assert set(python_api.ERRORS.values()) == said
    for code, cls in python_api._CLASSES.items():
        assert issubclass(cls, python_api.Error) and re.search(r"\b%d\)" % code, cls.__doc__)


def test_api_no_command(python_api, monkeypatch):
    """A pystack-dump that is not there: an Error naming where it looked."""
    monkeypatch.setenv("PYSTACK_DUMP", "/nonexistent/pystack-dump")
    with pytest.raises(python_api.Error, match="/nonexistent/pystack-dump") as e:
        python_api.dump(1)
    assert e.value.code == 127


def test_api_dump_self(python_api):
    """The calling process reads itself through the live source: its own
    stack shows this test; locked and native are refused."""
    doc = python_api.dump(os.getpid())
    me = [t for t in doc["threads"] if t["holds_gil"]]
    assert len(me) == 1, doc["threads"]
    assert "test_api_dump_self" in [f["function"] for f in me[0]["frames"]]
    with pytest.raises(python_api.UsageError):
        python_api.dump(os.getpid(), locked=True)


def functions_of(profile):
    return {f["function"] for f in profile["frames"]}


def test_api_sampler(newest, python_api, tmp_path):
    """A Sampler in a with block finds the busy function; it writes two
    formats; it samples once (start again is refused, stop again does
    nothing); a streamed format is refused."""
    with Target(newest, "busy") as tg:
        tg.wait_ground_truth()
        with python_api.Sampler(tg.pid, rate=200) as s:
            assert s.running
            with pytest.raises(python_api.UsageError, match="still sampling"):
                s.profile()
            time.sleep(1.5)
        assert not s.running
    prof = s.profile()
    assert prof["samples"] > 50 and prof["pid"] == tg.pid, {k: prof[k] for k in
                                                             ("samples", "pid", "errors")}
    assert "spin_step" in functions_of(prof) and "busy_loop" in functions_of(prof)
    s.write(tmp_path / "p.collapsed", "collapsed")
    assert "busy_loop" in (tmp_path / "p.collapsed").read_text()
    s.write(tmp_path / "p.html")                # flamegraph, by the suffix
    html = (tmp_path / "p.html").read_text()
    assert html.lstrip().lower().startswith("<!doctype html") and "spin_step" in html
    s.stop()
    with pytest.raises(python_api.UsageError, match="already started"):
        s.start()
    with pytest.raises(python_api.UsageError, match="keep_samples=True"):
        s.write(tmp_path / "p.pydrec")


def test_api_sampler_keep_samples(newest, tool, python_api, tmp_path):
    """keep_samples=True: write() makes the streamed formats too; the raw
    recording replays (pystack-dump report) into the profile the Sampler
    aggregated, and jsonl has a line per sample."""
    with Target(newest, "busy") as tg:
        tg.wait_ground_truth()
        with python_api.Sampler(tg.pid, rate=200, keep_samples=True) as s:
            time.sleep(1.0)
    prof = s.profile()
    s.write(tmp_path / "run.pydrec")
    s.write(tmp_path / "run.jsonl")
    s.write(tmp_path / "p.collapsed", "collapsed")
    argv, rc, out, err, _ = tool_run(tool, ["report", str(tmp_path / "run.pydrec"),
                                            "-f", "collapsed"])
    assert rc == 0, err[-600:]
    assert sorted(out.decode().splitlines()) == sorted(
        (tmp_path / "p.collapsed").read_text().splitlines())
    lines = (tmp_path / "run.jsonl").read_text().splitlines()
    samples = [json.loads(l) for l in lines if '"frames"' in l]
    assert len(samples) == prof["samples"], (len(samples), prof["samples"])


LOOP = r"""
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[1])
import pystack_dump
pid, n = int(sys.argv[2]), int(sys.argv[3])

def rss_kb():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))

for _ in range(50):                     # warm up: imports, the allocator's arenas
    pystack_dump.dump(pid)
before, t0 = rss_kb(), time.perf_counter()
for _ in range(n):
    pystack_dump.dump(pid)
secs = time.perf_counter() - t0
print(json.dumps({"before_kb": before, "after_kb": rss_kb(), "per_call_ms": secs * 1e3 / n}))
"""


def test_api_dump_loop_memory(newest, build, python_api, request):
    """dump() 1,000 times on a live target: resident memory stays flat
    (at most 1 MiB more); the time per call is printed (--facts)."""
    with Target(newest, "threads") as tg:
        tg.settled_truth(gt_sanity)
        out = subprocess.run([sys.executable, "-c", LOOP, os.path.join(build, "python"),
                              str(tg.pid), "1000"], capture_output=True, timeout=300)
    assert out.returncode == 0, out.stderr.decode()[-2000:]
    m = json.loads(out.stdout)
    info = ("dump() x1000 on %s: %.3f ms per call, VmRSS %d -> %d KiB"
            % (newest.label, m["per_call_ms"], m["before_kb"], m["after_kb"]))
    request.node.user_properties.append(("info", info))
    print(info)
    assert m["after_kb"] - m["before_kb"] <= 1024, info
