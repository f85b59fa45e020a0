"""Checks of a dump (pystack-dump --json) against a target's ground truth,
and against CPython 3.15's own `profiling.sampling dump`."""

import json
import re
import time

from .procs import TARGET_ENV, TOOL_TIMEOUT, alive, run, short, task_states, tracer_pid, vlog


def parse_dump(rc, out, err, secs, ok=(0,)):
    """Returns (doc, error string); ok: the exit statuses expected (9: a
    dump that says it is partial)."""
    if rc is None:
        return None, "pystack-dump timed out after %.0fs; stderr: %s" % (secs, short(err))
    if rc not in ok:
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
    if doc.get("source") not in ("process", "core", "snapshot"):
        errs.append("source missing or invalid: %r" % (doc.get("source"),))
    for w, t in objects_in(doc, "threads", errs):
        if not _is_int(t.get("tid")):
            errs.append("%s.tid not an int: %r" % (w, t.get("tid")))
        if "name" not in t or not (t["name"] is None or isinstance(t["name"], str)):
            errs.append("%s.name missing or not str|null" % w)
        if not isinstance(t.get("holds_gil"), bool):
            errs.append("%s.holds_gil missing or not a bool" % w)
        if not isinstance(t.get("waits_for_gil"), bool):
            errs.append("%s.waits_for_gil missing or not a bool" % w)
        elif t["holds_gil"] and t["waits_for_gil"]:
            errs.append("%s holds the GIL and waits for it" % w)
        if t.get("state") not in ("running", "idle", "unknown"):
            errs.append("%s.state invalid: %r" % (w, t.get("state")))
        errs += stack_schema_errors(w, t, "frames")
        if len(errs) > 20:
            return errs[:20] + ["..."]
    return errs


def objects_in(doc, key, errs):
    """(path, item) of each object of the list doc[key]; what is wrong with
    the list or with an item is appended to errs."""
    items = doc.get(key)
    if not isinstance(items, list):
        errs.append("%s missing or not a list" % key)
        return
    for i, t in enumerate(items):
        w = "%s[%d]" % (key, i)
        if isinstance(t, dict):
            yield w, t
        else:
            errs.append("%s is not an object" % w)


def stack_schema_errors(w, t, key):
    """What is wrong with the "error" and the stack t[key] of a thread or a
    task (w names it)."""
    errs = []
    if "error" not in t or not (t["error"] is None or isinstance(t["error"], str)):
        errs.append("%s.error missing or not str|null" % w)
    frames = t.get(key)
    if not isinstance(frames, list):
        return errs + ["%s.%s missing or not a list" % (w, key)]
    for j, fr in enumerate(frames):
        errs += frame_schema_errors("%s.%s[%d]" % (w, key, j), fr)
    return errs


def frame_schema_errors(fw, fr):
    """What is wrong with fr as a {function, qualname, file, line} frame
    (of the dump and the task graph JSON alike), fw naming it."""
    if not isinstance(fr, dict):
        return ["%s not an object" % fw]
    errs = []
    if not isinstance(fr.get("function"), str):
        errs.append("%s.function not a string" % fw)
    if not (fr.get("qualname") is None or isinstance(fr.get("qualname"), str)):
        errs.append("%s.qualname not str|null" % fw)
    if not isinstance(fr.get("file"), str):
        errs.append("%s.file not a string" % fw)
    if not _is_int(fr.get("line")):
        errs.append("%s.line not an int" % fw)
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


def thread_name_ok(name, py_name, os_name=None):
    """A reported thread name is the Python name (cut at 63 bytes if
    longer); where os_name is given (a snapshot recorded by an older
    pystack-dump, a profile), it may also be the OS name (comm), or a
    prefix of the Python name (comm is cut at 15 bytes, possibly inside a
    UTF-8 sequence: trailing U+FFFD from such a cut are ignored)."""
    if name == py_name or (len(py_name.encode("utf-8")) > 63 and py_name.startswith(name)):
        return True
    stem = name.rstrip("\ufffd")
    return os_name is not None and (name == os_name or bool(stem and py_name.startswith(stem)))


def process_errors(gt, doc):
    """The process a document (a dump, a task graph) names against its
    ground truth: pid and Python version."""
    errs = []
    if doc["pid"] != gt["pid"]:
        errs.append("pid: expected %d, got %d" % (gt["pid"], doc["pid"]))
    if doc.get("free_threaded") != gt.get("free_threaded", False):
        errs.append("free_threaded: expected %r, got %r"
                    % (gt.get("free_threaded", False), doc.get("free_threaded")))
    if doc["python_version"] != gt["python_version"]:
        errs.append("python_version: expected %r (sys.version %r), got %r"
                    % (gt["python_version"], gt["sys_version"].split()[0], doc["python_version"]))
    return errs


def compare(gt, doc, interp, pid, partial=(), comm_of=None, stats=None):
    """Compare a pystack-dump document with the target's ground truth.

    partial: tids whose stacks may legitimately be cut short (their memory
    is missing from a core); such a thread either matches exactly with
    "error" null, or has "error" set and frames that are the innermost
    frames of the ground truth (a non-empty prefix, unless "partial" is
    the string "any", which also allows no frames at all).
    comm_of(tid): an OS thread name to accept too (snapshots recorded by an
    older pystack-dump); by default only the Python name is right.
    stats: if a dict, counts "exact" and "partial" threads."""
    errs = check_schema(doc)
    if errs:
        return ["schema: " + e for e in errs]
    qual = interp.minor >= (3, 11)
    errs += process_errors(gt, doc)
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
        c = comm_of(tid) if comm_of else None
        if g["name"] is None or not thread_name_ok(g["name"], e["name"], c):
            errs.append("%s: name %r is not the Python thread name %r%s"
                        % (what, g["name"], e["name"], " (nor the OS name %r)" % c if c else ""))
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
            if (partial == "any" or tid in partial) and g.get("error") is not None:
                n = len(gf)
                if n == 0 and partial != "any":
                    errs.append("%s: error %r and no frames (expected the innermost "
                                "frames of %d)" % (what, g["error"], len(e["frames"])))
                elif n > len(e["frames"]):
                    errs.append("%s: error %r but %d frames, more than the %d expected"
                                % (what, g["error"], n, len(e["frames"])))
                else:
                    errs += diff_frames(e["frames"][:n], gf, qual,
                                        what + " [incomplete: innermost %d of %d frames]"
                                        % (n, len(e["frames"])))
                if stats is not None:
                    stats["partial"] = stats.get("partial", 0) + 1
            else:
                errs += diff_frames(e["frames"], gf, qual, what)
                if g.get("error") is not None:
                    errs.append("%s: error %r on a stack that must be complete"
                                % (what, g["error"]))
                if stats is not None:
                    stats["exact"] = stats.get("exact", 0) + 1
            if g["holds_gil"]:
                errs.append("%s: blocked thread reported holds_gil=true" % what)
            if g.get("waits_for_gil"):
                errs.append("%s: blocked thread reported waits_for_gil=true" % what)
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
        if f == "__init__" and name == "__init__":
            continue                    # the interpreter's __init__ trampoline,
                                        # which tracebacks leave out (3.15.2's
                                        # oracle shows it)
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


def base_gt_sanity(gt, interp):
    """The ground truth comes from the interpreter we meant to run."""
    errs = []
    if not gt["python_version"].startswith(interp.minor_str + "."):
        errs.append("interpreter reports %s, expected %s.x" % (gt["python_version"],
                                                               interp.minor_str))
    if gt["debug_build"] != interp.debug:
        errs.append("debug build is %s, expected %s" % (gt["debug_build"], interp.debug))
    if gt.get("free_threaded", False) != interp.ft:
        errs.append("free-threading build is %s, expected %s"
                    % (gt.get("free_threaded"), interp.ft))
    return errs


def gt_sanity(gt, interp):
    errs = base_gt_sanity(gt, interp)
    if not any(t["main"] for t in gt["threads"]):
        errs.append("no main thread in ground truth")
    return errs


def first_difference(a, b, path="$", added_ok=False):
    """A readable description of where two JSON values first differ.
    added_ok: object keys present only in b are ignored (b may come from a
    newer pystack-dump that reports more)."""
    if type(a) is not type(b):
        return "%s: %r vs %r" % (path, a, b)
    if isinstance(a, dict):
        for k in sorted(set(a) | (set() if added_ok else set(b))):
            if k not in a or k not in b:
                return "%s.%s: present in only one (%r vs %r)" % (path, k, a.get(k), b.get(k))
            d = first_difference(a[k], b[k], "%s.%s" % (path, k), added_ok)
            if d:
                return d
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, "%s[%d]" % (path, i), added_ok)
            if d:
                return d
        if len(a) != len(b):
            return "%s: %d vs %d entries" % (path, len(a), len(b))
        return None
    return None if a == b else "%s: %r vs %r" % (path, a, b)


def without_source(doc):
    d = dict(doc)
    d.pop("source", None)
    return d


def core_doc_checks(doc):
    """What every dump of a core must say: source core and no run state (a
    core has none).  Thread names are not in a core's notes; the tool may
    still read the Python names from memory (3.7-3.13), which compare()
    checks against the ground truth like a live dump's."""
    errs = []
    if doc.get("source") != "core":
        errs.append("source is %r, expected 'core'" % (doc.get("source"),))
    for t in doc.get("threads", []):
        if t.get("state") != "unknown":
            errs.append("thread %s: state %r, expected 'unknown' in a core"
                        % (t.get("tid"), t.get("state")))
            break
    return errs


def roundtrip_errors(live, rep, what):
    """A live document and its snapshot's decode: each says where it came
    from, and otherwise they are the same."""
    errs = []
    if live.get("source") != "process":
        errs.append("live dump: source %r, expected 'process'" % (live.get("source"),))
    if rep.get("source") != "snapshot":
        errs.append("snapshot dump: source %r, expected 'snapshot'" % (rep.get("source"),))
    d = first_difference(without_source(live), without_source(rep))
    if d:
        errs.append("the snapshot decodes differently from the live %s it recorded "
                    "(first difference, live vs snapshot: %s)" % (what, d))
    return errs
