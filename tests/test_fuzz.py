"""The fuzz harnesses (fuzz/), each run once on every input of its seed
corpus and on every reproducer kept under tests/fuzz/TARGET/, through
the plain driver (fuzz/replay.c) of the build under test: in the
sanitizer build a finding fixed once stays fixed.  The reproducers of
corrupt memory also keep their exact outcome: exit 9, the corruption
named.  No root, no interpreter."""

import glob
import os

import pytest

from harness.interps import FIXTURES_DIR, REPO
from harness.procs import run, short

CORPUS = {
    "snapshot": [FIXTURES_DIR],
    "sample": [FIXTURES_DIR],
    "core": [os.path.join(REPO, "fuzz", "corpus", "core")],
    "profile": [os.path.join(REPO, "fuzz", "corpus", "profile")],
    "linetable": [os.path.join(REPO, "fuzz", "corpus", "linetable")],
    "unicode": [os.path.join(REPO, "fuzz", "corpus", "unicode")],
    "gdb_request": [os.path.join(FIXTURES_DIR, "gdb-request.txt")],
}
REPLAY_TIMEOUT = 300


def reproducers(target):
    return sorted(glob.glob(os.path.join(REPO, "tests", "fuzz", target, "*")))


@pytest.mark.parametrize("target", sorted(CORPUS))
def test_fuzz_replay(build, target):
    """Every seed and reproducer of the harness, once: no crash, no
    sanitizer report (exit 0)."""
    exe = os.path.join(build, "fuzz", "replay_" + target)
    inputs = CORPUS[target] + reproducers(target)
    rc, out, err, secs = run([exe] + inputs, REPLAY_TIMEOUT)
    assert rc == 0, "%s exited %s after %.1fs; stderr: %s" % (exe, rc, secs, short(err, 2000))
    assert b"inputs replayed" in out


@pytest.mark.parametrize("snap", [os.path.basename(p) for p in reproducers("snapshot")
                                  if "loops" in p])
def test_fuzz_loop_snapshots(tool, snap):
    """Snapshots of targets whose thread list loops back: the threads
    before the loop, the corruption named, exit 9."""
    path = os.path.join(REPO, "tests", "fuzz", "snapshot", snap)
    rc, out, err, secs = run([tool.path, "--snapshot", path], REPLAY_TIMEOUT)
    assert rc == 9, "exit %s; stderr: %s" % (rc, short(err))
    assert b"loops back to thread state 0x" in err, short(err)
    assert out.count(b"Thread ") >= 3, short(out)
