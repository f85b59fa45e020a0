"""The 150,000-frame target (tests/targets/very_deep.py), built once per
interpreter for the checks of test_dump.py and test_sample.py that read
it: building the stack and waiting for it to settle is most of their
time."""

import os

from .dumps import compare, gt_sanity, parse_dump
from .profiles import collapsed_run
from .results import Result
from .target import Target

DUMP, SAMPLE = "very deep dump", "very deep sample"


def very_deep_job(interp, tool):
    """The dump, whole and exact, with no "stack kept changing"; then a
    1 s sample whose deep thread's samples keep every frame."""
    with Target(interp, "very_deep") as tg:
        gt = tg.settled_truth(gt_sanity)
        doc, err = parse_dump(*tool.dump(tg.pid))
        errs = [err] if err else compare(gt, doc, interp, tg.pid)
        dump = Result(DUMP, "FAIL" if errs else "PASS", "\n".join(errs[:20]))
        deep = [t for t in gt["threads"] if t["name"] == "very_deep"][0]
        stacks, errs = collapsed_run(tool, tg.pid, 1, os.path.join(tg.out_host, "deep.collapsed"))
        if not errs:
            depths = [len(labels) for labels, n in stacks]
            # the collapsed stack: the thread's frames, plus a root for the thread
            want = len(deep["frames"])
            if not any(d >= want for d in depths):
                errs.append("no sample has the %d frames of the deep thread; deepest %s"
                            % (want, max(depths) if depths else None))
        return [dump, Result(SAMPLE, "FAIL" if errs else "PASS", "\n".join(errs))]
