"""Stacks read while threads enter and leave generators of every kind
(tests/targets/gen_races.py: a generator expression consumed by sum(), a
for loop, a pipeline, a yield from chain, an async generator and
coroutines driven by hand): a generator's link to its caller is cleared at
every yield, so a read can land where its frame looks like the bottom of
the stack.  150 dumps (40 in the sanitizer build) and a sample of each
interpreter: every busy thread's stack is whole (its outer frames exact,
the frames inside its loop its own) or says it is not ("error" set, exit
8; the sampler drops it and counts an error).  A stack cut short without
a word fails."""

from harness.dumps import diff_frames, ffmt, gt_sanity, parse_dump
from harness.profiles import profile_stacks, sample_profile
from harness.results import Result, settle
from harness.target import Target

DUMPS = 150
# Under AddressSanitizer a dump takes ten times as long (150 were 46-57 s
# of each interpreter's CI time): that run is for memory errors, and the
# normal run counts the torn reads of all 150.
DUMPS_SANITIZED = 40
# A thread read torn that often would be a reader that gave up too soon.
MAX_FLAGGED_SHARE = 0.05


def busy_errors(e, frames, qual, what):
    """A busy thread's stack (innermost first) against its ground truth:
    the stable outer frames exactly, then only its loop's frames."""
    outer = e["stable_outer"]
    if len(frames) < len(outer) + 1:
        return ["%s: %d frames, not the %d outer ones and the loop's: %s"
                % (what, len(frames), len(outer), [ffmt(f, False) for f in frames])]
    errs = diff_frames(outer, frames[len(frames) - len(outer):], qual, what + " [outer frames]")
    for f in frames[:len(frames) - len(outer)]:
        if f["function"] not in e["allowed_inner"]:
            errs.append("%s: frame %s is not one of %s" % (what, ffmt(f, qual), e["allowed_inner"]))
            break
    return errs


def dumps_for(tool):
    return DUMPS_SANITIZED if tool.sanitized else DUMPS


def dumps_check(tg, gt, tool, qual):
    """dumps_for(tool) dumps: (errors, flagged, cut short, threads read)."""
    busy = dict((t["tid"], t) for t in gt["threads"] if t["busy"])
    errs, flagged, short, read = [], 0, 0, 0
    for i in range(dumps_for(tool)):
        rc, out, err, secs = tool.dump(tg.pid)
        doc, e = parse_dump(0 if rc == 8 else rc, out, err, secs)
        if e:
            return ["dump %d: %s" % (i, e)], flagged, short, read
        torn = [t for t in doc["threads"] if t.get("error") is not None]
        if (rc == 8) != bool(torn):
            errs.append("dump %d: exit %s with %d thread(s) marked" % (i, rc, len(torn)))
        for t in doc["threads"]:
            e = busy.get(t["tid"])
            if e is None:
                continue
            read += 1
            what = "dump %d, thread %r" % (i, e["name"])
            if t.get("error") is not None:
                flagged += 1
                continue
            bad = busy_errors(e, t["frames"], qual, what + " (no error: whole)")
            short += bool(bad)
            if len(errs) < 12:
                errs += bad
    return errs, flagged, short, read


def sample_check(tg, gt, tool, qual):
    """Every sample of every busy thread has its outer frames: (errors,
    profile, samples cut short)."""
    busy = dict((t["tid"], t) for t in gt["threads"] if t["busy"])
    argv, doc, errs, _, _, _ = sample_profile(tool, tg.pid, gt, "wall", [], rate_check=False)
    short = 0
    if doc is None:
        return errs, None, short
    for s in profile_stacks(doc):
        e = busy.get(s["tid"])
        if e is None:
            continue
        frames = [dict(f, qualname=f.get("qualname")) for f in reversed(s["frames"])]
        bad = busy_errors(e, frames, qual, "%d sample(s) of thread %r" % (s["self"], e["name"]))
        short += s["self"] if bad else 0
        if len(errs) < 12:
            errs += bad[:2]
    return errs, doc, short


def races_job(interp, tool):
    qual = interp.minor >= (3, 11)
    with Target(interp, "gen_races") as tg:
        gt = tg.settled_truth(gt_sanity)
        errs, flagged, short, read = dumps_check(tg, gt, tool, qual)
        if read and flagged > MAX_FLAGGED_SHARE * read:
            errs.append("%d of %d thread reads marked torn (more than %d%%)"
                        % (flagged, read, MAX_FLAGGED_SHARE * 100))
        serrs, doc, sshort = sample_check(tg, gt, tool, qual)
    errs += ["sample: " + e for e in serrs]
    info = "%d dumps: %d busy-thread stacks, %d marked torn, %d cut short" % (
        dumps_for(tool), read, flagged, short)
    if doc is not None:
        info += "; sample: %d samples, %d cut short, %d errors in %d ticks" % (
            doc["samples"], sshort, doc["errors"], doc["ticks"])
    return Result("generator races", "FAIL" if errs else "PASS", "\n".join(errs), info=info)


def test_generator_races(interp, tool, request):
    """Zero stacks cut short without a word, in hundreds of dumps and a
    sample, on every interpreter."""
    settle(races_job(interp, tool), request.node)
