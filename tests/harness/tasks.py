"""Checks of a task graph (pystack-dump --tasks --json, docs/tasks-json.md)
against tests/targets/asyncio_graph.py's ground truth, and against
`python3.X -m asyncio ps`."""

import os
import re
import time

from .dumps import (_is_int, base_gt_sanity, diff_frames, ffmt, objects_in, process_errors,
                    stack_schema_errors)
from .procs import GT_TIMEOUT, STOP, TARGET_ENV, TOOL_TIMEOUT, run, short, task_states, vlog
from .results import Result
from .target import TargetError, parse_json_out, tool_run


TASKS_TARGET = "asyncio_graph"
TASKS_MANY = 1000                       # the many=N variant: N more tasks
TASKS_MANY_MAX_SECS = 20.0              # generous wall time for --tasks --json on it
TASKS_DOCUMENTED_MIN = (3, 14)          # docs/tasks-json.md: supported from here on
TASKS_ORACLE_MIN = (3, 14)              # python3.X -m asyncio ps (in the chroot)
TASKS_UNSUPPORTED = "task graphs not supported for this version yet"
_EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception))(: .*)?$")
# the target dying of one of these before its ground truth means this Python
# lacks something it uses (SKIP, naming it); anything else is a FAIL
_MISSING_FEATURE = re.compile(
    r"^(SyntaxError|ImportError|ModuleNotFoundError|NameError"
    r"|AttributeError: (module|type object) '[^']*' has no attribute"
    r"|TypeError: .*(unexpected keyword argument|positional argument)"
    r"|RuntimeError: (There is no current event loop|.*attached to a different loop))")


class TargetCannotRun(Exception):
    pass


def wait_tasks_truth(tg, timeout=GT_TIMEOUT):
    """Like Target.wait_ground_truth, but an uncaught exception in the log
    (a thread dying does not end the process) ends the wait after 2 s, and a
    failure that names a feature this Python lacks raises TargetCannotRun."""
    deadline = time.time() + timeout
    err = tg.gt_host + ".error"
    tb_seen = None
    while not STOP.is_set():
        if os.path.exists(tg.gt_host):
            return tg.wait_ground_truth(5)
        log = tg.log_tail(20000)
        if tb_seen is None and "Traceback (most recent call last)" in log:
            tb_seen = time.time()
        ended = tg.proc.poll() is not None or os.path.exists(err)
        if ended or (tb_seen and time.time() - tb_seen > 2) or time.time() > deadline:
            exc = [l for l in log.splitlines() if _EXC_LINE.match(l)]
            if exc and _MISSING_FEATURE.match(exc[-1]):
                raise TargetCannotRun(exc[-1].strip())
            if ended:
                return tg.wait_ground_truth(1)          # raises, with the details
            if tb_seen:
                raise TargetError("the target raised before writing its ground truth:\n"
                                  + tg.log_tail())
            raise TargetError("no ground truth after %.0fs:\n%s" % (timeout, tg.log_tail()))
        time.sleep(0.05)
    raise KeyboardInterrupt


def wait_all_sleeping(pid, timeout=15.0):
    """Every thread of pid sleeps in the kernel, twice 50 ms apart."""
    deadline = time.time() + timeout
    streak, st = 0, {}
    while time.time() < deadline:
        st = task_states(pid)
        if not st:
            raise TargetError("target died")
        streak = streak + 1 if all(s in "SD" for s in st.values()) else 0
        if streak >= 2:
            return
        time.sleep(0.05)
    raise TargetError("threads never settled: %s" % st)


def tasks_gt_sanity(gt, interp):
    errs = base_gt_sanity(gt, interp)
    if not gt.get("tasks"):
        errs.append("no tasks in the ground truth")
    return errs


def tasks_run(tool, args, timeout=TOOL_TIMEOUT):
    return tool_run(tool, ["--tasks"] + list(args), timeout)


def tasks_unsupported(rc, err):
    return rc == 6 and b"not supported yet" in err


def unsupported_result(interp, names, argv, err):
    """Exit 6 'not supported yet': SKIP, except where docs/tasks-json.md says
    the version is supported."""
    if interp.minor >= TASKS_DOCUMENTED_MIN:
        return [Result(n, "FAIL", "%s exited 6 (%s), but docs/tasks-json.md "
                       "says CPython %d.%d+ is supported" % (" ".join(argv), short(err, 300),
                                                           *TASKS_DOCUMENTED_MIN))
                for n in names]
    return [Result(n, "SKIP", TASKS_UNSUPPORTED) for n in names]


def parse_tasks(argv, rc, out, err, secs, ok=(0,)):
    """Returns (doc, error string). With a wrong exit status the error is
    set, and doc is still the JSON printed if any (to show how it differs)."""
    cmd = " ".join(argv)
    if rc is None:
        return None, "%s: timed out after %.0fs; stderr: %s" % (cmd, secs, short(err))
    doc, e = parse_json_out(out)
    if rc not in ok:
        return (None if e else doc), "%s: exited %d (expected %s); stderr: %s" % (
            cmd, rc, "/".join(map(str, ok)), short(err))
    return doc, (None if e is None else "%s: %s" % (cmd, e))


def with_graph_diff(e, doc, gt, interp):
    """[e] plus, if a document came with the error, how it differs."""
    if doc is None:
        return [e]
    diff = compare_tasks(gt, doc, interp)
    return [e, "the JSON it printed, against the ground truth: "
            + ("no difference" if not diff else "")] + ["  " + x for x in diff]


def check_tasks_schema(doc):
    errs = []
    if not isinstance(doc, dict):
        return ["top level is %s, not an object" % type(doc).__name__]
    for k, ok in (("pid", _is_int), ("python_version", lambda v: isinstance(v, str)),
                  ("binary", lambda v: isinstance(v, str)),
                  ("asyncio_loaded", lambda v: isinstance(v, bool)),
                  ("truncated", lambda v: isinstance(v, bool)),
                  ("error", lambda v: v is None or isinstance(v, str)),
                  ("source", lambda v: v in ("process", "core", "snapshot"))):
        if k not in doc or not ok(doc[k]):
            errs.append("%s missing or invalid: %r" % (k, doc.get(k)))
    cyc = doc.get("cycles")
    if not (isinstance(cyc, list) and all(isinstance(c, list) and all(_is_int(i) for i in c)
                                          for c in cyc)):
        errs.append("cycles missing or not a list of lists of ids")
    for w, t in objects_in(doc, "tasks", errs):
        if not _is_int(t.get("id")):
            errs.append("%s.id not an int: %r" % (w, t.get("id")))
        if not isinstance(t.get("name"), str):
            errs.append("%s.name not a string: %r" % (w, t.get("name")))
        if t.get("state") not in ("pending", "done", "cancelled", "unknown"):
            errs.append("%s.state invalid: %r" % (w, t.get("state")))
        if "thread" not in t or not (t["thread"] is None or _is_int(t["thread"])):
            errs.append("%s.thread missing or not int|null" % w)
        if not isinstance(t.get("running"), bool):
            errs.append("%s.running missing or not a bool" % w)
        for k in ("awaits", "awaited_by"):
            if not (isinstance(t.get(k), list) and all(_is_int(x) for x in t[k])):
                errs.append("%s.%s missing or not a list of ids" % (w, k))
        errs += stack_schema_errors(w, t, "coroutine_stack")
        if len(errs) > 20:
            return errs[:20] + ["..."]
    return errs


def compare_tasks(gt, doc, interp):
    """Compare a --tasks --json document with asyncio_graph's ground truth:
    the same tasks (by id(task) if recorded, else by name), and for each its
    name, state, thread, running, coroutine_stack (function, file, line;
    qualname on 3.11+) and every awaits/awaited_by edge; the cycles."""
    errs = check_tasks_schema(doc)
    if errs:
        return ["schema: " + e for e in errs]
    qual = interp.minor >= (3, 11)
    errs += process_errors(gt, doc)
    if doc["asyncio_loaded"] is not True:
        errs.append("asyncio_loaded is %r, expected true" % doc["asyncio_loaded"])
    if doc["truncated"]:
        errs.append("truncated is true (%d tasks)" % len(doc["tasks"]))
    if doc["error"] is not None:
        errs.append("error %r: the task lists were not read to their end" % doc["error"])
    by_id = all("id" in t for t in gt["tasks"])
    key = "id" if by_id else "name"
    gname = dict((t["id"], t["name"]) for t in doc["tasks"])
    if by_id:
        gname.update((t["id"], t["name"]) for t in gt["tasks"])

    def lab(i):
        return "%r (0x%x)" % (gname.get(i, "?"), i) if _is_int(i) else repr(i)

    def edge_keys(ids, own):
        """Edges as match keys: ids, or names when matching by name."""
        return sorted(ids) if by_id else sorted(own.get(i, "0x%x" % i) for i in ids)

    got = {}
    for t in doc["tasks"]:
        if t[key] in got:
            errs.append("task %s listed twice" % lab(t["id"]))
        got[t[key]] = t
    exp = dict((t[key], t) for t in gt["tasks"])
    for k in sorted(set(exp) - set(got), key=str):
        errs.append("task %s missing from the dump" % (lab(k) if by_id else repr(k)))
    for k in sorted(set(got) - set(exp), key=str):
        g = got[k]
        errs.append("unexpected task %s in the dump (%d frames, innermost %s)"
                    % (lab(g["id"]), len(g["coroutine_stack"]),
                       ffmt(g["coroutine_stack"][0], qual) if g["coroutine_stack"] else "-"))
    for k in sorted(set(exp) & set(got), key=str):
        e, g = exp[k], got[k]
        what = "task %s" % lab(g["id"])
        if g["name"] != e["name"]:
            errs.append("%s: name %r, expected %r" % (what, g["name"], e["name"]))
        for fld in ("state", "thread", "running"):
            if fld in e and g[fld] != e[fld]:
                errs.append("%s: %s %r, expected %r" % (what, fld, g[fld], e[fld]))
        if g["error"] is not None:
            errs.append("%s: error %r on a stack that must be complete" % (what, g["error"]))
        if not qual:
            withq = [i for i, f in enumerate(g["coroutine_stack"]) if f.get("qualname") is not None]
            if withq:
                errs.append("%s: qualname must be null before 3.11, coroutine_stack[%d] has %r"
                            % (what, withq[0], g["coroutine_stack"][withq[0]]["qualname"]))
        errs += diff_frames(e["coroutine_stack"], g["coroutine_stack"], qual,
                            what + " coroutine_stack")
        for fld in ("awaits", "awaited_by"):
            ev = sorted(e[fld]) if by_id else sorted(e[fld], key=str)
            gv = edge_keys(g[fld], gname)
            if ev != gv:
                errs.append("%s: %s [%s], expected [%s]"
                            % (what, fld, ", ".join(lab(i) if by_id else repr(i) for i in gv),
                               ", ".join(lab(i) if by_id else repr(i) for i in ev)))
    # the document's own consistency: both ends of every edge, ids listed
    ids = set(t["id"] for t in doc["tasks"])
    aw = set((t["id"], b) for t in doc["tasks"] for b in t["awaits"])
    ab = set((a, t["id"]) for t in doc["tasks"] for a in t["awaited_by"])
    for a, b in sorted(aw ^ ab)[:5]:
        errs.append("edge %s -> %s is in only one of awaits/awaited_by" % (lab(a), lab(b)))
    for a, b in sorted(aw | ab):
        if a not in ids or b not in ids:
            errs.append("edge %s -> %s names a task not in tasks" % (lab(a), lab(b)))
            break
    if by_id and "cycles" in gt:
        ec = sorted(tuple(sorted(c)) for c in gt["cycles"])
        gc_ = sorted(tuple(sorted(set(c))) for c in doc["cycles"])
        if ec != gc_:
            errs.append("cycles %s, expected %s"
                        % ([[lab(i) for i in c] for c in gc_], [[lab(i) for i in c] for c in ec]))
    if len(errs) > 60:
        errs = errs[:60] + ["... %d more" % (len(errs) - 60)]
    return errs


def tasks_info(doc):
    return "%d tasks, %d edges" % (len(doc["tasks"]), sum(len(t["awaits"]) for t in doc["tasks"]))


def mentions(text, name):
    return re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(name), text) is not None


# -- python3.X -m asyncio ps PID (3.14+, in the chroot)

_PS_ROW = re.compile(r"^(\d+)( +)(0x[0-9a-fA-F]+) ")


def parse_asyncio_ps(text):
    """Rows of `python -m asyncio ps`, printed as
    f"{tid:<10} {task_id:<20} {name:<20} {stack:<50} {chain:<50} {awaiter_name:<15}
    {awaiter_id:<15}": one row per (task, awaiter), awaiter id 0x0 for none.
    Returns [(tid, task id, name, awaiter id or None)]."""
    rows = []
    for line in text.splitlines():
        m = _PS_ROW.match(line)
        if not m:
            continue
        tid, tidw, tidf = int(m.group(1)), max(10, len(m.group(1))), m.group(3)
        start = tidw + 1 + max(20, len(tidf)) + 1
        if line[start + 20:start + 21] == " ":
            name = line[start:start + 20].rstrip()
        else:                            # longer than its column (no spaces in our names)
            name = line[start:].split(" ", 1)[0]
        aw = int(line.split()[-1], 16)
        rows.append((tid, int(tidf, 16), name, aw or None))
    return rows


def run_asyncio_ps(interp, pid):
    argv = ["chroot", interp.chroot, interp.exe, "-m", "asyncio", "ps", str(pid)]
    env = dict(TARGET_ENV, NO_COLOR="1", TERM="dumb")
    rc, out, err, secs = run(argv, TOOL_TIMEOUT, env=env)
    vlog("%s -> rc=%s in %.2fs" % (" ".join(argv), rc, secs))
    if rc != 0:
        return None, "%s failed (rc=%s): %s" % (" ".join(argv), rc, short(err or out))
    rows = parse_asyncio_ps(out.decode("utf-8", "replace"))
    if not rows:
        return None, "%s printed no task rows: %s" % (" ".join(argv), short(out))
    return rows, None


def asyncio_ps_vs(doc, rows, main_tid, minor, what):
    """Compare what `asyncio ps` can show with a --tasks document (or the
    ground truth): the task set, names, threads, (task, awaiter) pairs.
    3.14's ps lists only the main thread's tasks and thread-less ones, and
    prints non-ASCII names blank. Returns (errors, facts)."""
    main_only = minor < (3, 15)
    shown = [t for t in doc["tasks"]
             if not main_only or t.get("thread") in (main_tid, None)]
    ids = set(t["id"] for t in shown)
    byid = dict((t["id"], t) for t in doc["tasks"])
    errs = []
    ps_ids = set(r[1] for r in rows)
    for i in sorted(ids - ps_ids):
        errs.append("%s: task %r (0x%x, thread %s) not in asyncio ps"
                    % (what, byid[i]["name"], i, byid[i].get("thread")))
    for i in sorted(ps_ids - ids):
        r = next(r for r in rows if r[1] == i)
        errs.append("%s: asyncio ps shows task %r (0x%x, tid %d) that is not in %s"
                    % (what, r[2], i, r[0], what))
    skipped_names = 0
    for tid, i, name, aw in rows:
        t = byid.get(i)
        if t is None or i not in ids:
            continue
        if main_only and not all(ord(c) < 128 for c in t["name"]):
            skipped_names += 1
        elif name != t["name"]:
            errs.append("%s: task 0x%x is named %r, asyncio ps says %r" % (what, i, t["name"], name))
        if tid != (t.get("thread") or 0):
            errs.append("%s: task %r thread %s, asyncio ps says tid %d"
                        % (what, t["name"], t.get("thread"), tid))
    want = set((t["id"], a) for t in shown for a in t["awaited_by"])
    have = set((i, aw) for _tid, i, _n, aw in rows if aw is not None)
    for i, a in sorted(want - have):
        errs.append("%s: %r awaited by %r, not in asyncio ps"
                    % (what, byid[i]["name"], byid.get(a, {}).get("name", hex(a))))
    for i, a in sorted(have - want):
        errs.append("%s: asyncio ps: 0x%x awaited by 0x%x, not in %s" % (what, i, a, what))
    facts = ("%d tasks, %d awaited-by pairs compared (names, tids, pairs)"
             % (len(ids & ps_ids), len(want & have)))
    if main_only:
        facts += ("; 3.14's asyncio ps shows only main-thread and thread-less tasks and "
                  "blanks non-ASCII names: %d task(s) of other threads and %d name(s) "
                  "not compared" % (len(doc["tasks"]) - len(shown), len(set(
                      i for _t, i, _n, _a in rows if i in ids and not all(
                          ord(c) < 128 for c in byid[i]["name"])))))
    return errs, facts



def _start_tasks_target(interp, names, tg):
    """Ground truth, settled, sane: (gt, None) or (None, [results])."""
    try:
        gt = wait_tasks_truth(tg)
    except TargetCannotRun as e:
        if interp.minor >= TASKS_DOCUMENTED_MIN:    # made for these: a real failure
            return None, [Result(n, "FAIL", "target %s cannot run on %s, a "
                                 "version pystack-dump supports task graphs for: %s\n%s"
                                 % (TASKS_TARGET, interp.minor_str, e, tg.log_tail()))
                          for n in names]
        return None, [Result(n, "SKIP", "target %s cannot run on %s: %s"
                             % (TASKS_TARGET, interp.minor_str, e)) for n in names]
    wait_all_sleeping(tg.pid)
    sanity = tasks_gt_sanity(gt, interp)
    if sanity:
        return None, [Result(n, "FAIL", "ground truth: " + "; ".join(sanity))
                      for n in names]
    return gt, None
