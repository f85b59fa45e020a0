"""What `pystack-dump sample` says about the samples it does not show:
its errors (explained in the summary when there are some, and in
--help), on a target whose threads come and go (targets/thread_storm.py)
and on one that stands still (targets/threads.py); the idle threads the
table leaves out (said in its header), on targets/threads.py, whose
threads all block."""

from harness.dumps import gt_sanity
from harness.procs import short
from harness.results import Result, settle
from harness.target import Target, tool_run

# The summary's explanation of its errors (cli/sample.c, errors_summary).
ERRORS_SAID = "an error is a round in which a thread's stack could not be read"


def summary_errors(tool, pid, rate):
    """`sample -r RATE -d 1` on pid: (errors counted, stderr, problems)."""
    argv, rc, so, se, took = tool_run(tool, ["sample", "-r", rate, "-d", "1", "-f", "json",
                                             "-o", "/dev/null", str(pid)], timeout=60)
    text = se.decode("utf-8", "replace")
    counted = [line for line in text.splitlines() if " errors (" in line]
    if rc != 0 or not counted:
        return None, text, ["%s: exit %s: %s" % (" ".join(argv), rc, short(se))]
    return int(counted[0].split(" errors (")[0].rsplit(" ", 1)[1]), text, []


def errors_said(n, text):
    if n and ERRORS_SAID not in text:
        return ["%d errors, not explained:\n%s" % (n, text)]
    if not n and ERRORS_SAID in text:
        return ["no error, yet an explanation of errors:\n%s" % text]
    return []


def test_sample_errors_explained(interp, tool, request):
    """Threads started and ended a thousand a second tear some reads: the
    summary says what its errors are; none on a still target, and then no
    word of them; --help explains them."""
    errs = []
    with Target(interp, "thread_storm") as tg:
        tg.wait_ground_truth()
        n, text, errs = summary_errors(tool, tg.pid, "max")
        if n == 0:
            errs.append("no error provoked by the thread storm:\n" + text)
        elif n:
            errs += errors_said(n, text)
    with Target(interp, "threads") as tg:
        tg.settled_truth(gt_sanity)
        n, text, more = summary_errors(tool, tg.pid, "1000")
        errs += more or errors_said(n, text)
    helped = tool_run(tool, ["sample", "--help"])[2].decode()
    if "An error is a round in which a thread's stack could not" not in helped:
        errs.append("sample --help does not explain errors")
    settle(Result("errors explained", "FAIL" if errs else "PASS", "\n".join(errs)),
           request.node)


def header(text):
    """The first lines of a table, up to its column titles."""
    return text.split("\n\n")[0] if "\n\n" in text else text


def idle_errors(tool, tg, gt, extra):
    """`sample -f table` on a target whose threads all block: the header
    says its idle threads were left out, with their samples, and how to
    see them; with --idle the table has them and says nothing left out."""
    errs = []
    base = ["sample", "-d", "1", "-q", "-f", "table"] + extra
    argv, rc, so, se, _ = tool_run(tool, base + [str(tg.pid)], timeout=60)
    head = header(so.decode("utf-8", "replace"))
    want = "Left out: %d idle threads (never seen on a CPU), " % len(gt["threads"])
    said = [line for line in head.splitlines() if line.startswith(want)]
    count = said[0][len(want):].split()[0] if said else ""
    if rc != 0 or "; --idle shows them" not in "".join(said) or not count.isdigit() \
            or not int(count):
        errs.append("%s: exit %s, the header does not say the %d idle threads and their "
                    "samples:\n%s" % (" ".join(argv), rc, len(gt["threads"]), head))
    argv, rc, so, se, _ = tool_run(tool, base + ["--idle", str(tg.pid)], timeout=60)
    head = header(so.decode("utf-8", "replace"))
    if rc != 0 or "Left out" in head or " 0 samples in " in head:
        errs.append("%s: exit %s, the idle threads not in the table:\n%s"
                    % (" ".join(argv), rc, head))
    return errs


def test_sample_idle_said(interp, tool, request):
    """Wall mode on a process whose threads all block (targets/threads.py):
    the table leaves them out by default, and says so in its header (it
    said "0 samples ... 0 threads", as if nothing had been sampled); with
    and without --subprocesses (one table per process)."""
    with Target(interp, "threads") as tg:
        gt = tg.settled_truth(gt_sanity)
        errs = idle_errors(tool, tg, gt, []) + idle_errors(tool, tg, gt, ["--subprocesses"])
    settle(Result("idle said", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)
