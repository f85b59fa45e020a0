"""pystack-dump --greenlets: every greenlet of tests/targets/greenlets.py
(gevent greenlets blocked in a sleep, an Event (also with a keyword
argument), a socket read, a Queue and a Lock, where gevent is installed;
plain greenlets switched out several levels deep, one with a keyword
argument; an unstarted and a dead one), each compared with the target's
own ground truth: state, parent, main, the function an unstarted one runs,
the call a suspended one waits in (receiver, arguments, keyword arguments
as name=value), and its frames, frame
by frame, and the thread it belongs to (the target has greenlets in two
threads); live, stopped (--locked), from a gcore core and from a
snapshot; with --locals, every frame's arguments and locals.
Interpreters without greenlet are skipped; with greenlet but
not gevent (sid's 3.15) the target has plain greenlets only."""

import fcntl
import glob
import json
import os
import shutil
import subprocess

import pytest

from conftest import usable
from harness.cores import GCORE_TARGET_ENV, gcore_slot, run_gcore
from harness.procs import host_tmp, run, short
from harness.profiles import profile_stacks
from harness.target import Target, parse_json_out, tool_file_run, tool_run

FRAME_KEYS = ("function", "qualname", "file", "line")
# The interpreters --greenlets reads (CPython 3.14 and 3.15, release and
# debug builds).
SUPPORTED_MINORS = ((3, 14), (3, 15))


def has_greenlet(interp):
    """None, or why interp cannot run the target."""
    rc, out, err, _ = run(interp.argv(["-c", "import greenlet"]), 60)
    if rc != 0:
        last = (err or b"").decode("utf-8", "replace").strip().splitlines()[-1:]
        return "greenlet not importable by %s (tests/setup-sid.sh installs it with " \
               "gevent): %s" % (interp.label, "".join(last))
    return None


def frames(stack):
    return [tuple(f.get(k) for k in FRAME_KEYS) for f in stack]


def compare_greenlets(gt, doc):
    """The differences between the ground truth and the JSON document."""
    errs = []
    want = dict((g["id"], g) for g in gt["greenlets"])
    got = dict((g["id"], g) for g in doc["greenlets"])
    if len(got) != len(doc["greenlets"]):
        errs.append("a greenlet is listed twice")
    for gid in sorted(set(want) - set(got)):
        errs.append("greenlet 0x%x (%s) missing" % (gid, want[gid]["state"]))
    for gid in sorted(set(got) - set(want)):
        errs.append("greenlet 0x%x is no greenlet of the target" % gid)
    for gid in sorted(set(want) & set(got)):
        w, g = want[gid], got[gid]
        for key in ("thread", "state", "main", "parent"):
            if w[key] != g[key]:
                errs.append("greenlet 0x%x: %s %r, expected %r" % (gid, key, g[key], w[key]))
        want_wait = w["waiting"] and dict(w["waiting"], more_args=False)
        if want_wait != g["waiting"]:
            errs.append("greenlet 0x%x: waiting %r, expected %r"
                        % (gid, g["waiting"], want_wait))
        if w["spawned"] != g["spawned"]:
            errs.append("greenlet 0x%x: spawned %r, expected %r"
                        % (gid, g["spawned"], w["spawned"]))
        if g["error"]:
            errs.append("greenlet 0x%x: error %s" % (gid, g["error"]))
        fw, fg = frames(w["frames"]), frames(g["frames"])
        if fw != fg:
            errs.append("greenlet 0x%x (%s): frames\n  got      %s\n  expected %s"
                        % (gid, w["state"], fg, fw))
    return errs


def start(interp, env_extra=None):
    usable(interp)
    why = has_greenlet(interp)
    if why:
        pytest.skip(why)
    return Target(interp, "greenlets", env_extra=env_extra)


def check_doc(gt, argv, doc, source="table"):
    assert doc["greenlet_version"] == gt["greenlet_version"]
    assert doc["layout_recognised"] is True
    assert doc["layout_source"] == source, doc["layout_source"]
    states = sorted(set(g["state"] for g in gt["greenlets"]))
    assert states == ["dead", "running", "suspended", "unstarted"], states
    errs = compare_greenlets(gt, doc)
    assert not errs, "command: %s\n%s" % (" ".join(argv), "\n".join(errs))


@pytest.mark.interps(lambda i: i.minor in SUPPORTED_MINORS)
def test_greenlets_json(interp, tool):
    """--greenlets --json lists every greenlet with its exact stack."""
    with start(interp) as tg:
        gt = tg.wait_ground_truth()
        argv, rc, out, err, _ = tool_run(tool, ["--greenlets", "--json", str(tg.pid)])
        assert rc == 0, "%s exited %s: %s" % (" ".join(argv), rc, short(err))
        doc, e = parse_json_out(out)
        assert not e, e
        check_doc(gt, argv, doc)


def saved_doc(tool, tg, interp, source):
    """(argv, rc, stdout, stderr) of --greenlets --json on the target
    stopped (--locked), on a gcore core of it, or on a snapshot of it."""
    if source == "locked":
        return tool_run(tool, ["--greenlets", "--json", "--locked", str(tg.pid)])[:4]
    if source == "snapshot":
        path = os.path.join(tg.out_host, "greenlets.snap")
        argv, rc, out, err, _ = tool_run(tool, ["--greenlets", "--json", "--save-snapshot",
                                                path, str(tg.pid)])
        assert rc == 0, "%s exited %s: %s" % (" ".join(argv), rc, short(err))
        return tool_file_run(tool, ["--greenlets", "--json", "--snapshot", path])
    prefix = os.path.join(host_tmp(), "gcore-greenlets-" + tg.run_id)
    with gcore_slot():
        core, warned, err = run_gcore(tg.pid, prefix)
        assert core, err
        try:
            return tool_file_run(tool, ["--greenlets", "--json", "--core", core]
                                 + (["--sysroot", interp.chroot] if interp.chroot else []))
        finally:
            os.unlink(core)


@pytest.mark.interps(lambda i: i.minor in SUPPORTED_MINORS)
@pytest.mark.parametrize("source", ["locked", "core", "snapshot"])
def test_greenlets_saved(interp, tool, source):
    """The same document with the target stopped, from a core of it, and
    from a snapshot of it, against the same ground truth."""
    with start(interp, GCORE_TARGET_ENV if source == "core" else None) as tg:
        gt = tg.wait_ground_truth()
        argv, rc, out, err = saved_doc(tool, tg, interp, source)
        assert rc == 0, "%s exited %s: %s" % (" ".join(argv), rc, short(err))
        doc, e = parse_json_out(out)
        assert not e, e
        assert doc["source"] == {"locked": "process"}.get(source, source), doc["source"]
        check_doc(gt, argv, doc)


@pytest.mark.interps(lambda i: i.minor in SUPPORTED_MINORS)
def test_greenlets_text(interp, tool):
    """The text dump: the threads, then a "Greenlets" section naming each
    greenlet, with the innermost frame of each suspended one and the call
    it waits in (keyword arguments as name=value)."""
    with start(interp) as tg:
        gt = tg.wait_ground_truth()
        argv, rc, out, err, _ = tool_run(tool, ["--greenlets", str(tg.pid)])
        text = out.decode("utf-8", "replace")
        assert rc == 0, "%s exited %s: %s" % (" ".join(argv), rc, short(err))
        head, sep, tail = text.partition("\nGreenlets (greenlet %s):\n" % gt["greenlet_version"])
        assert sep and "Thread " in head, short(out, 2000)
        for g in gt["greenlets"]:
            assert "Greenlet 0x%x" % g["id"] in tail, "0x%x missing: %s" % (g["id"], tail)
            assert "thread %d" % g["thread"] in tail, "thread %d missing: %s" % (g["thread"], tail)
            if g["frames"]:
                f = g["frames"][0]
                line = 'File "%s", line %d, in %s' % (f["file"], f["line"],
                                                      f["qualname"] or f["function"])
                assert line in tail, "%s missing: %s" % (line, tail)
            if g["waiting"]:
                w = g["waiting"]
                line = "Waiting in %s(%s)\n" % (w["function"], ", ".join(w["args"]))
                assert line in tail, "%s missing: %s" % (line, tail)


def compare_greenlet_vars(gt, doc):
    """Each suspended greenlet's frames' arguments and locals, in order,
    as the target rendered them."""
    errs = []
    got = dict((g["id"], g) for g in doc["greenlets"])
    for w in gt["greenlets"]:
        g = got.get(w["id"])
        if g is None:
            continue                    # compare_greenlets reports it
        for j, (ef, gf) in enumerate(zip(w["frames"], g["frames"])):
            for k in ("arguments", "locals"):
                want = [tuple(x) for x in ef[k]]
                have = list((gf.get(k) or {}).items())
                if have != want:
                    errs.append("greenlet 0x%x frame %d (%s): %s %s, expected %s"
                                % (w["id"], j, ef["function"], k, have, want))
    return errs


@pytest.mark.interps(lambda i: i.minor in SUPPORTED_MINORS)
@pytest.mark.parametrize("source", ["live", "snapshot"])
def test_greenlets_locals(interp, tool, source):
    """--greenlets --locals: every frame of every suspended greenlet with
    its arguments and locals, as the target's own f_locals renders them,
    live and from a snapshot; in text, under each frame line."""
    with start(interp) as tg:
        gt = tg.wait_ground_truth()
        args = ["--greenlets", "--locals", "--json"]
        if source == "snapshot":
            path = os.path.join(tg.out_host, "greenlets-locals.snap")
            argv, rc, out, err, _ = tool_run(tool, args + ["--save-snapshot", path,
                                                           str(tg.pid)])
            assert rc == 0, "%s exited %s: %s" % (" ".join(argv), rc, short(err))
            argv, rc, out, err = tool_file_run(tool, args + ["--snapshot", path])
        else:
            argv, rc, out, err, _ = tool_run(tool, args + [str(tg.pid)])
            targv, trc, text, terr, _ = tool_run(tool, ["--greenlets", "--locals",
                                                        str(tg.pid)])
            assert trc == 0, "%s exited %s: %s" % (" ".join(targv), trc, short(terr))
        assert rc == 0, "%s exited %s: %s" % (" ".join(argv), rc, short(err))
        doc, e = parse_json_out(out)
        assert not e, e
    check_doc(gt, argv, doc)
    errs = compare_greenlet_vars(gt, doc)
    assert not errs, "command: %s\n%s" % (" ".join(argv), "\n".join(errs))
    if source == "live":
        tail = text.decode("utf-8", "replace").partition("\nGreenlets (")[2]
        for w in gt["greenlets"]:
            for f in w["frames"]:
                for name, rep in f["arguments"] + f["locals"]:
                    line = "      %s = %s\n" % (name, rep)
                    assert line in tail, "%r missing: %s" % (line, tail)


@pytest.mark.interps(lambda i: i.minor not in SUPPORTED_MINORS)
def test_greenlets_refused(interp, tool):
    """Where greenlets cannot be read, --greenlets says why on stderr and
    still dumps the threads (exit 0)."""
    with start(interp) as tg:
        tg.wait_ground_truth()
        argv, rc, out, err, _ = tool_run(tool, ["--greenlets", str(tg.pid)])
        assert rc == 0, "%s exited %s: %s" % (" ".join(argv), rc, short(err))
        assert b"Thread " in out, short(out)
        msg = err.decode("utf-8", "replace")
        assert "cannot be listed yet" in msg or "layout not recognised" in msg, msg


@pytest.mark.interps(lambda i: i.minor in SUPPORTED_MINORS)
def test_greenlets_unknown_release(interp, tool):
    """A greenlet release without a layout row (the target's
    greenlet.__version__ says 9.9.0): "layout not recognised" on stderr,
    the threads dumped as usual, no greenlet read as garbage, exit 0."""
    with start(interp, {"PYD_GREENLET_VERSION": "9.9.0"}) as tg:
        gt = tg.wait_ground_truth()
        argv, rc, out, err, _ = tool_run(tool, ["--greenlets", str(tg.pid)])
        jargv, jrc, jout, jerr, _ = tool_run(tool, ["--greenlets", "--json", str(tg.pid)])
    assert gt["greenlet_version"] == "9.9.0"
    msg = err.decode("utf-8", "replace")
    assert rc == 0 and "greenlet 9.9.0: layout not recognised" in msg, \
        "%s: exit %s: %s" % (" ".join(argv), rc, msg)
    text = out.decode("utf-8", "replace")
    assert "Thread %d" % gt["main_tid"] in text and "Greenlet 0x" not in text, text
    assert "greenlet 9.9.0: layout not recognised" in text, text
    assert jrc == 0, "%s: exit %s: %s" % (" ".join(jargv), jrc, short(jerr))
    doc, e = parse_json_out(jout)
    assert not e, e
    assert (doc["greenlet_version"], doc["layout_recognised"], doc["greenlets"]) == \
        ("9.9.0", False, []), doc


DEBUG_GREENLET = "/tmp/pyd-greenlet-g"   # in the chroot: a greenlet with debug info


def debug_greenlet(interp):
    """The directory (as the chroot sees it) holding a copy of sid's greenlet
    package whose _greenlet module is built again here, with -g, from the
    C++ sources Debian ships in it (the host's g++, the chroot's Python
    headers): a module with DWARF, which Debian's, stripped, lacks.  Built
    once per version; skips the test if it cannot be."""
    if not interp.chroot or not shutil.which("g++"):
        pytest.skip("needs sid's chroot and g++ to build greenlet with debug info")
    tag = "%d%d" % interp.minor
    src = interp.host_path("/usr/lib/python3/dist-packages/greenlet")
    inc = interp.host_path("/usr/include/python3.%d" % interp.minor[1])
    multiarch = interp.host_path("/usr/include/x86_64-linux-gnu/python3.%d" % interp.minor[1])
    if not os.path.isfile(os.path.join(src, "greenlet.cpp")) or \
            not os.path.isfile(os.path.join(inc, "Python.h")):
        pytest.skip("greenlet's sources or Python 3.%d's headers missing in the chroot "
                    "(tests/setup-sid.sh installs them)" % interp.minor[1])
    top = interp.host_path(DEBUG_GREENLET)
    done = os.path.join(top, tag)
    os.makedirs(top, exist_ok=True)
    with open(os.path.join(top, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.isdir(done):
            work = os.path.join(top, tag + ".new")
            shutil.rmtree(work, ignore_errors=True)
            pkg = os.path.join(work, "greenlet")
            shutil.copytree(src, pkg, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
            # pyconfig.h includes <x86_64-linux-gnu/python3.X/pyconfig.h>:
            # the chroot's, not the host's
            os.makedirs(os.path.join(work, "inc", "x86_64-linux-gnu"))
            os.symlink(multiarch, os.path.join(work, "inc", "x86_64-linux-gnu",
                                               "python3.%d" % interp.minor[1]))
            so = os.path.join(pkg, "_greenlet.cpython-%s-x86_64-linux-gnu.so" % tag)
            cmd = ["g++", "-std=gnu++17", "-shared", "-fPIC", "-g", "-O2",
                   "-fno-strict-aliasing", "-I" + inc, "-I" + os.path.join(work, "inc"),
                   os.path.join(pkg, "greenlet.cpp"), "-o", so]
            r = subprocess.run(cmd, capture_output=True, timeout=300)
            if r.returncode != 0:
                pytest.fail("building greenlet with debug info failed: %s\n%s"
                            % (" ".join(cmd), r.stderr.decode("utf-8", "replace")[-2000:]))
            os.rename(work, done)
    return os.path.join(DEBUG_GREENLET, tag)


@pytest.mark.interps(lambda i: i.minor in SUPPORTED_MINORS)
@pytest.mark.parametrize("source", ["live", "core"])
def test_greenlets_debug_info(interp, tool, source):
    """A greenlet module with debug information is read through it, in
    any release: sid's greenlet built again with -g and made to say it is
    9.9.0 (no row of ours) lists every greenlet exactly as the ground
    truth has it, live and from a core (its file found through
    --sysroot), with "layout_source": "debug info"."""
    path = debug_greenlet(interp)
    env = {"PYD_GREENLET_PATH": path, "PYD_GREENLET_VERSION": "9.9.0"}
    if source == "core":
        env.update(GCORE_TARGET_ENV)
    with start(interp, env) as tg:
        gt = tg.wait_ground_truth()
        if source == "core":
            argv, rc, out, err = saved_doc(tool, tg, interp, "core")
        else:
            argv, rc, out, err, _ = tool_run(tool, ["--greenlets", "--json", str(tg.pid)])
    assert rc == 0, "%s exited %s: %s" % (" ".join(argv), rc, short(err))
    doc, e = parse_json_out(out)
    assert not e, e
    assert gt["greenlet_version"] == "9.9.0"
    assert glob.glob(interp.host_path(os.path.join(path, "greenlet", "_greenlet*.so")))
    check_doc(gt, argv, doc, source="debug info")


SAMPLE_TICKS = 200
SAMPLE_SHARE = 0.8     # of the rounds in which each greenlet's stack must be


def label(g):
    """The boundary frame greenlet mode puts outside g's stack."""
    if g["spawned"]:
        return "<greenlet %s>" % g["spawned"]
    return "<greenlet main>" if g["main"] else "<greenlet 0x%x>" % g["id"]


def greenlet_profile(tool, tg):
    """`sample -m greenlet --threads -n SAMPLE_TICKS -f json` of tg: the
    profile's JSON."""
    out = os.path.join(tg.out_host, "greenlets.json")
    argv, rc, _, err, _ = tool_run(tool, ["sample", "-m", "greenlet", "--threads", "-n",
                                          str(SAMPLE_TICKS), "-f", "json", "-o", out,
                                          str(tg.pid)])
    assert rc == 0, "%s exited %s: %s" % (" ".join(argv), rc, short(err))
    with open(out) as f:
        return json.load(f)


@pytest.mark.interps(lambda i: i.minor in SUPPORTED_MINORS)
def test_sample_greenlet(interp, tool):
    """sample -m greenlet --threads: every round, each switched-out
    greenlet's stack (its frames as the ground truth has them, under
    <greenlet NAME>) counted as waiting on its thread, and each thread's
    stack under the greenlet it runs."""
    with start(interp) as tg:
        gt = tg.wait_ground_truth()
        doc = greenlet_profile(tool, tg)
    assert doc["mode"] == "greenlet", doc["mode"]
    rounds = doc["ticks"] - doc["missed"]
    stacks = profile_stacks(doc)
    errs = []
    for g in gt["greenlets"]:
        if g["state"] == "suspended" and g["frames"]:
            want = [label(g)] + ["%s:%d" % (f["function"], f["line"])
                                 for f in reversed(g["frames"])]
            waiting = True
        elif g["state"] == "running" and g["main"]:
            want, waiting = [label(g)], False    # its thread's stack follows
        else:
            continue
        hits = [s for s in stacks if s["tid"] == g["thread"] and
                [f["function"] if f.get("kind") == "task" else
                 "%s:%d" % (f["function"], f["line"]) for f in s["frames"]][:len(want)] == want]
        got = sum(s["self_await" if waiting else "self"] for s in hits)
        if got < SAMPLE_SHARE * rounds:
            errs.append("greenlet 0x%x (%s, thread %s): %d samples of %s in %d rounds"
                        % (g["id"], g["state"], g["thread"], got, " > ".join(want), rounds))
    assert not errs, "sample -m greenlet --threads -n %d:\n%s" % (SAMPLE_TICKS, "\n".join(errs))


def test_sample_greenlet_refused(interp, tool):
    """-m greenlet on a process without greenlet: refused before sampling
    (exit 6, naming what it needs), as -m async is where it cannot be."""
    usable(interp)
    with Target(interp, "sample_split") as tg:
        tg.wait_ground_truth()
        argv, rc, out, err, _ = tool_run(tool, ["sample", "-m", "greenlet", "-n", "10",
                                                "-f", "json", str(tg.pid)])
    msg = err.decode("utf-8", "replace")
    assert rc == 6 and "-m greenlet is not supported" in msg, \
        "%s: exit %s: %s" % (" ".join(argv), rc, short(err))


def start_patched(interp):
    """tests/targets/gevent_patched.py, where gevent imports."""
    usable(interp)
    rc, _, err, _ = run(interp.argv(["-c", "from gevent import monkey; monkey.patch_all()"]), 60)
    if rc != 0:
        last = (err or b"").decode("utf-8", "replace").strip().splitlines()[-1:]
        pytest.skip("gevent not importable by %s: %s" % (interp.label, "".join(last)))
    return Target(interp, "gevent_patched")


def name_errors(gt, names, what):
    """Each OS thread named as threading.current_thread() named it in that
    thread; no thread given a name threading.enumerate() has for another."""
    errs = []
    for t in gt["threads"]:
        if names.get(t["tid"]) != t["name"]:
            errs.append("%s: thread %d named %r, threading says %r"
                        % (what, t["tid"], names.get(t["tid"]), t["name"]))
    known = {}
    for name, native_id in gt["enumerate"]:
        known.setdefault(native_id, set()).add(name)
    for tid, name in sorted(names.items()):
        if tid in known and name not in known[tid]:
            errs.append("%s: thread %d named %r, not one of threading's %s"
                        % (what, tid, name, sorted(known[tid])))
    return errs


def test_monkey_patched_names(interp, tool):
    """Under gevent.monkey.patch_all() threading._active is keyed by
    greenlet ids, not by the OS threads' idents: each thread is still
    named as threading names it (matched by its native id): the main
    thread "MainThread", not the OS's "python3", in the JSON and text
    dumps and in a profile's threads."""
    with start_patched(interp) as tg:
        gt = tg.wait_ground_truth()
        argv, rc, out, err, _ = tool_run(tool, ["--json", str(tg.pid)])
        assert rc == 0, "%s exited %s: %s" % (" ".join(argv), rc, short(err))
        targv, trc, text, terr, _ = tool_run(tool, [str(tg.pid)])
        assert trc == 0, "%s exited %s: %s" % (" ".join(targv), trc, short(terr))
        prof = os.path.join(tg.out_host, "patched.json")
        sargv, src, _, serr, _ = tool_run(tool, ["sample", "--threads", "-n", "20", "-f",
                                                 "json", "-o", prof, str(tg.pid)])
        assert src == 0, "%s exited %s: %s" % (" ".join(sargv), src, short(serr))
        with open(prof) as f:
            sdoc = json.load(f)
    doc, e = parse_json_out(out)
    assert not e, e
    assert len(gt["threads"]) == 2 and gt["threads"][0]["name"] == "MainThread", gt["threads"]
    errs = name_errors(gt, dict((t["tid"], t["name"]) for t in doc["threads"]), "--json")
    errs += name_errors(gt, dict((t["tid"], t["name"]) for t in sdoc["threads"]), "sample")
    text = text.decode("utf-8", "replace")
    for t in gt["threads"]:
        if 'Thread %d "%s"' % (t["tid"], t["name"]) not in text:
            errs.append('text: no line Thread %d "%s"' % (t["tid"], t["name"]))
    assert not errs, "\n".join(errs)


def test_sample_greenlet_idle(interp, tool):
    """sample -m greenlet --threads on the monkey-patched target, where
    nothing runs: the main thread's hub blocked in epoll_wait and the
    thread-pool worker blocked in a lock are OS threads asleep (state S),
    so their stacks count as waiting (self_await, await_samples), not as
    running on a CPU (cpu_samples, self)."""
    with start_patched(interp) as tg:
        gt = tg.wait_ground_truth()
        doc = greenlet_profile(tool, tg)
    rounds = doc["ticks"] - doc["missed"]
    stacks = profile_stacks(doc)
    errs = []
    if doc["cpu_samples"] > 0.05 * rounds:
        errs.append("cpu_samples %d in %d rounds of idle threads" % (doc["cpu_samples"], rounds))
    for t in gt["threads"]:
        mine = [s for s in stacks if s["tid"] == t["tid"]]
        ran, waited = sum(s["self"] - s["self_await"] for s in mine), \
            sum(s["self_await"] for s in mine)
        if ran > 0.05 * rounds or waited < SAMPLE_SHARE * rounds:
            errs.append("thread %d (%s): %d samples on CPU, %d waiting, in %d rounds"
                        % (t["tid"], t["name"], ran, waited, rounds))
    assert not errs, "sample -m greenlet --threads -n %d:\n%s" % (SAMPLE_TICKS, "\n".join(errs))
