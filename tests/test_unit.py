"""The C unit tests (tests/unit), as meson built them."""

import glob
import os

from harness.interps import REPO
from harness.procs import run, short


def unit_binaries(build):
    """The C unit tests meson built (build/tests/test_*)."""
    found = []
    for path in sorted(glob.glob(os.path.join(build, "tests", "**", "test_*"), recursive=True)):
        name = os.path.relpath(path, build)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            continue
        if any(part.endswith(".p") for part in name.split(os.sep)[:-1]) \
                or os.path.splitext(path)[1] in (".o", ".a", ".so", ".d", ".c", ".h", ".py"):
            continue                    # meson object dirs, build products, sources
        found.append(path)
    return found


def pytest_generate_tests(metafunc):
    if "unit_test" in metafunc.fixturenames:
        build = os.path.abspath(metafunc.config.getoption("build"))
        paths = unit_binaries(build)
        metafunc.parametrize("unit_test", paths, ids=[os.path.basename(p) for p in paths])


def test_unit_binaries_built(build):
    """meson built the C unit tests (tests/unit/*.c)."""
    assert unit_binaries(build), "no unit test executables under %s/tests" % build


def test_unit(unit_test):
    """One C unit test (tests/unit), run from the repository root."""
    rc, out, err, secs = run([unit_test], 300, cwd=REPO)
    assert rc == 0, "exit %s; output tail:\n%s" % ("timeout" if rc is None else rc,
                                                  short((out or b"") + (err or b""), 1500))
