"""pystack-dump sample on a target whose code objects are freed and their
addresses reused while it samples (exec'd strings; a program starting
up does the same with its imports): each sample is named after the code
object running then, not after the one that had the address before."""

import collections
import os

from harness.dumps import base_gt_sanity
from harness.profiles import collapsed_run
from harness.results import Result, settle
from harness.target import Target

FUNCTIONS = 4          # work_0..work_3, a quarter of the time each
SHARE_TOLERANCE = 10   # points either side of 25%; a stale name gives 0 or 50+
MIN_SAMPLES = 200


def test_sample_code_reuse(interp, tool, request):
    with Target(interp, "code_reuse") as tg:
        gt = tg.wait_ground_truth()
        sanity = base_gt_sanity(gt, interp)
        if sanity:
            settle(Result("code reuse", "FAIL", "ground truth: " + "; ".join(sanity)),
                   request.node)
            return
        if gt["distinct_ids"] == gt["rounds"]:
            settle(Result("code reuse", "SKIP", "this interpreter gave each of %d rounds' "
                          "code objects a new address: nothing to tell apart" % gt["rounds"]),
                   request.node)
            return
        stacks, errs = collapsed_run(tool, tg.pid, 2,
                                     os.path.join(tg.out_host, "reuse.collapsed"))
        if not errs:
            counts = collections.Counter()
            for labels, n in stacks:
                for frame in labels:
                    name = frame.split(" ", 1)[0]
                    if name.startswith("work_") and "gen_%s.py" % name[5:] in frame:
                        counts[name] += n
                        break
            total = sum(counts.values())
            shares = dict(("work_%d" % k, 100.0 * counts["work_%d" % k] / max(1, total))
                          for k in range(FUNCTIONS))
            if total < MIN_SAMPLES:
                errs.append("only %d samples in work_* functions (want %d+)"
                            % (total, MIN_SAMPLES))
            off = ["%s %.1f%%" % kv for kv in sorted(shares.items())
                   if abs(kv[1] - 100.0 / FUNCTIONS) > SHARE_TOLERANCE]
            if off:
                errs.append("each work_K runs a quarter of the time; shares of the %d samples: "
                            "%s (off by more than %d points: %s)"
                            % (total, ", ".join("%s %.1f%%" % kv for kv in sorted(shares.items())),
                               SHARE_TOLERANCE, ", ".join(off)))
        settle(Result("code reuse", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)
