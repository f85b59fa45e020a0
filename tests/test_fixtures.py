"""The snapshot fixtures in tests/fixtures: every supported version decoded
on any machine, without its interpreter and without root."""

import json
import os
import types

import pytest

from harness.dumps import compare, first_difference, parse_dump, without_source
from harness.interps import FIXTURES_DIR, fixture_paths
from harness.procs import TOOL_TIMEOUT, run, short
from harness.tasks import compare_tasks, parse_tasks


def _fixture_dump_errors(tool, snap, stem, gt, expected):
    argv = [tool.path, "--snapshot", snap, "--json"]
    doc, e = parse_dump(*run(argv, TOOL_TIMEOUT))
    if e:
        return ["%s: %s" % (" ".join(argv), e)]
    minor = tuple(int(x) for x in gt["python_version"].split(".")[:2])
    os_names = dict((t["tid"], t["name"]) for t in expected["threads"])
    errs = compare(gt, doc, types.SimpleNamespace(minor=minor), gt["pid"],
                   comm_of=os_names.get)
    if doc.get("source") != "snapshot":
        errs.append("source %r, expected 'snapshot'" % (doc.get("source"),))
    # JSON fields added to pystack-dump since the recording are ignored
    d = first_difference(without_source(expected), without_source(doc), added_ok=True)
    if d:
        errs.append("differs from the recorded live dump %s.dump.json (first "
                    "difference, recorded vs now: %s)" % (stem, d))
    argv = [tool.path, "--snapshot", snap]
    rc, out, err, secs = run(argv, TOOL_TIMEOUT)
    if rc != 0 or not out.startswith(b"Snapshot "):
        errs.append("%s (text) exited %s; stdout: %s; stderr: %s"
                    % (" ".join(argv), rc, short(out, 200), short(err, 300)))
    return errs


def _fixture_tasks_errors(tool, snap, stem, gt, expected):
    argv = [tool.path, "--snapshot", snap, "--tasks", "--json"]
    rc, out, err, secs = run(argv, TOOL_TIMEOUT)
    doc, e = parse_tasks(argv, rc, out or b"", err or b"", secs)
    if e:
        return [e]
    minor = tuple(int(x) for x in gt["python_version"].split(".")[:2])
    errs = compare_tasks(gt, doc, types.SimpleNamespace(minor=minor))
    d = first_difference(without_source(expected), without_source(doc), added_ok=True)
    if d:
        errs.append("differs from the recorded live graph %s.tasks.json (first "
                    "difference, recorded vs now: %s)" % (stem, d))
    for extra in (["--table"], []):
        argv = [tool.path, "--snapshot", snap, "--tasks"] + extra
        rc, out, err, secs = run(argv, TOOL_TIMEOUT)
        if rc != 0 or not out:
            errs.append("%s exited %s; stderr: %s" % (" ".join(argv), rc, short(err, 300)))
    return errs


def test_fixtures_present():
    """The fixtures are in the tree (tests/regen_fixtures.py makes them)."""
    assert fixture_paths(), ("no *.snap in %s (make them with python3 "
                             "tests/regen_fixtures.py)" % FIXTURES_DIR)


@pytest.mark.parametrize("snap", fixture_paths(), ids=lambda p: os.path.basename(p)[:-5])
def test_fixture(snap, tool, request):
    """A snapshot recorded from a live target of one CPython version
    decodes, on any machine and without that interpreter, to what the
    live target showed: its ground truth and the recorded JSON."""
    stem = os.path.basename(snap)[:-len(".snap")]
    base = snap[:-len(".snap")]
    tasks = os.path.exists(base + ".tasks.json")
    with open(base + ".ground_truth.json", encoding="utf-8") as f:
        gt = json.load(f)
    with open(base + (".tasks.json" if tasks else ".dump.json"), encoding="utf-8") as f:
        expected = json.load(f)
    check = _fixture_tasks_errors if tasks else _fixture_dump_errors
    errs = check(tool, snap, stem, gt, expected)
    request.node.user_properties.append(("info", "%d bytes" % os.path.getsize(snap)))
    assert not errs, "command: %s --snapshot %s %s--json\n%s" % (
        tool.path, snap, "--tasks " if tasks else "", "\n".join(errs))
