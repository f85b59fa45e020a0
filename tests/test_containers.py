"""A target in its own mount namespace whose root is the sid chroot
(pivot_root, as container runtimes do): binaries are found through
/proc/PID/root."""

import shutil

import pytest

from harness.dumps import compare, gt_sanity, parse_dump
from harness.results import Result, settle
from harness.target import Target


CONTAINER_LABELS = ["sid-3.13", "sid-3.14", "sid-3.15"]
CONTAINER_TARGETS = ["threads", "names"]

def container_job(interp, target, tool):
    """The target in its own mount namespace rooted at the sid chroot: its
    maps show in-container paths, so binaries must be opened through
    /proc/PID/root. The live dump must match exactly."""
    name = "container:" + target
    with Target(interp, target, container=True) as tg:
        gt = tg.settled_truth(gt_sanity)
        try:
            with open("/proc/%d/maps" % tg.pid) as f:
                paths = set(l.split(None, 5)[5].strip() for l in f if len(l.split(None, 5)) == 6)
        except OSError as e:
            return [Result(name, "FAIL", "cannot read maps: %s" % e)]
        if interp.exe not in paths or interp.host_path(interp.exe) in paths:
            return [Result(name, "FAIL",
                           "setup: /proc/%d/maps does not name %s by its in-container path "
                           "(paths: %s)" % (tg.pid, interp.exe, sorted(paths)[:6]))]
        doc, err = parse_dump(*tool.dump(tg.pid))
        errs = [err] if err else compare(gt, doc, interp, tg.pid)
        if errs:
            errs.insert(0, "command: %s --json %d" % (tool.path, tg.pid))
        return [Result(name, "FAIL" if errs else "PASS", "\n".join(errs))]


@pytest.mark.interps(lambda i: i.label in CONTAINER_LABELS)
@pytest.mark.parametrize("target", CONTAINER_TARGETS)
def test_container(interp, target, tool, request):
    """A target in its own mount namespace, rooted at the sid chroot."""
    if not (shutil.which("unshare") and shutil.which("pivot_root")):
        pytest.skip("unshare/pivot_root (util-linux) not installed")
    settle(container_job(interp, target, tool)[0], request.node)
