"""The harness every test file shares (see tests/README.md).

Options: --build DIR (default: build), --sid-dir DIR (default: $PYD_SID_DIR
or /var/cache/pystack-dump/sid), --facts (print what each test measured).

A test that takes the fixture `interp` runs once for every interpreter
discover() finds, with the interpreter's label in its id (pyenv-3.12,
deb-3.11d, sid-3.15d ...): `pytest -k sid-3.15` runs one, and a version
whose interpreter is missing is skipped, never passed.  `newest` is the
one interpreter of checks that need only one run.  Tests marked job(NAME)
share one target process (harness.results.Jobs); under pytest-xdist they
are kept on one worker (--dist loadgroup).
"""

import glob
import os
import subprocess
import time
import uuid

import pytest

from harness.cores import CORE_PATTERN, core_cleanup, delete_kcores
from harness.interps import (REPO, SID_DIR_DEFAULT, chroot_ready, discover, newest_present,
                             pyenv_root)
from harness.procs import kill, kill_all, spawn
from harness.results import Jobs
from harness.target import Tool

CONFIG = None                           # the session's, for the report hook

# Reasons for skipping, shortened for the per-version summary.
SKIP_WHY = (("interpreter missing", "interpreter missing"),
            ("not supported yet", "tasks: not supported yet"),
            ("cannot run on", "tasks: target cannot run"),
            ("3.7+", "needs 3.7+"),
            ("exist from", "needs a newer version"),
            ("left out of this run", "left out of this run"))


def pytest_addoption(parser):
    g = parser.getgroup("pystack-dump")
    g.addoption("--build", default=os.path.join(REPO, "build"),
                help="the build directory (default: %(default)s)")
    g.addoption("--sid-dir", default=os.environ.get("PYD_SID_DIR", SID_DIR_DEFAULT),
                help="the Debian sid chroot of Python 3.13-3.15 (default: %(default)s)")
    g.addoption("--arm64-build", default=os.path.join(REPO, "build-arm64"),
                help="the arm64 build directory test_arm64.py runs under qemu "
                     "(tools/build-arm64.sh; default: %(default)s)")
    g.addoption("--interps", default="", metavar="LABEL,...",
                help="run only these interpreters' tests, the others' reported skipped, "
                     "'left out of this run' (the sanitizer run and tests/run.sh --quick: "
                     "one interpreter of each layout family, tests/README.md)")
    g.addoption("--facts", action="store_true",
                help="print what each test measured (sizes, rates, counts)")


def pytest_configure(config):
    config.addinivalue_line("markers", "job(name): one of the checks of a job that shares "
                            "one target process with the others of its name")
    config.addinivalue_line("markers", "xdist_group(name): run on one xdist worker")
    config.addinivalue_line("markers", "rootfree: needs no root and no interpreter "
                            "(meson test runs these too, tests/meson.build)")
    config.addinivalue_line("markers", "interps(pred): only the interpreters pred(interp) "
                            "is true of (the check means nothing on the others)")
    if not hasattr(config, "workerinput"):
        # the workers inherit it: one session, one kernel.core_pattern owner
        os.environ.setdefault("PYD_TEST_SESSION", "%d-%s" % (os.getpid(), uuid.uuid4().hex[:8]))
    config.pyd_interps = discover(config.getoption("sid_dir"))
    config.pyd_summary = []
    global CONFIG
    CONFIG = config


def pytest_sessionstart(session):
    tool = os.path.join(os.path.abspath(session.config.getoption("build")), "cli",
                        "pystack-dump")
    if not os.access(tool, os.X_OK):
        raise pytest.UsageError("%s not found or not executable: build it first "
                                "(tools/build.sh BUILDDIR)" % tool)


def pytest_generate_tests(metafunc):
    interps = metafunc.config.pyd_interps
    only = metafunc.definition.get_closest_marker("interps")
    if only:
        interps = [i for i in interps if only.args[0](i)]
    if "interp" in metafunc.fixturenames:
        metafunc.parametrize("interp", interps, ids=[i.label for i in interps], indirect=True)
    if "newest" in metafunc.fixturenames:
        one = newest_present(interps)
        metafunc.parametrize("newest", [one], ids=[one.label if one else "none"],
                             indirect=True)


def usable(interp):
    """interp, or a skip saying why it cannot be used here."""
    if interp is None:
        pytest.skip("interpreter missing: none found")
    if interp.missing:
        pytest.skip("interpreter missing: " + interp.missing)
    only = CONFIG.getoption("interps")
    if only and interp.label not in only.split(","):
        pytest.skip("left out of this run (--interps %s)" % only)
    if interp.chroot:
        err = chroot_ready(interp.chroot)
        if err:
            pytest.skip("interpreter missing: " + err)
    return interp


@pytest.fixture
def interp(request):
    return usable(request.param)


@pytest.fixture
def newest(request):
    return usable(request.param)


@pytest.fixture(scope="session")
def interps(request):
    """Every interpreter discover() knows, present or not."""
    return request.config.pyd_interps


@pytest.fixture(scope="session")
def build(request):
    return os.path.abspath(request.config.getoption("build"))


@pytest.fixture(scope="session")
def tool(build):
    return Tool(os.path.join(build, "cli", "pystack-dump"))


@pytest.fixture
def python27():
    """A Python 2.7 process (pyenv's) asleep, for "unsupported version"."""
    py2 = sorted(glob.glob(os.path.join(pyenv_root(), "versions", "2.7*", "bin", "python2.7")))
    if not py2:
        pytest.skip("interpreter missing: no pyenv python2.7")
    p = spawn([py2[-1], "-c", "import time; time.sleep(600)"], stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    yield p
    kill(p)


@pytest.fixture(scope="session")
def jobs():
    return Jobs()


def group_of(item):
    """The interpreter label of a test, else its file's feature name."""
    spec = getattr(item, "callspec", None)
    for name in ("interp", "newest", "a64"):
        if spec and name in spec.params and spec.params[name] is not None:
            return spec.params[name].label
    return item.module.__name__.replace("test_", "", 1)


@pytest.hookimpl(tryfirst=True)          # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        item.user_properties.append(("group", group_of(item)))
        job = item.get_closest_marker("job")
        if job:
            spec = item.callspec.params
            key = [job.args[0]] + [getattr(spec.get(k), "label", spec.get(k))
                                   for k in ("interp", "newest", "target", "kind") if k in spec]
            item.add_marker(pytest.mark.xdist_group(":".join(map(str, key))))


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        props = dict(report.user_properties)
        why = report.longrepr[2] if report.skipped and isinstance(report.longrepr, tuple) else ""
        CONFIG.pyd_summary.append((props.get("group", "?"), report.nodeid, report.outcome,
                                   why, props))


def pytest_sessionfinish(session):
    kill_all()
    delete_kcores()
    if not hasattr(session.config, "workerinput"):
        CORE_PATTERN.restore()
        core_cleanup(sorted(set(i.chroot for i in session.config.pyd_interps if i.chroot)))


def pytest_terminal_summary(terminalreporter, config):
    rows = config.pyd_summary
    if not rows:
        return
    tr = terminalreporter
    order = [i.label for i in config.pyd_interps]
    groups = sorted(set(r[0] for r in rows),
                    key=lambda g: (order.index(g) if g in order else len(order), g))
    tr.write_sep("-", "per version")
    tr.write_line("%-14s %7s %7s %8s" % ("version", "passed", "failed", "skipped"))
    for g in groups:
        rs = [r for r in rows if r[0] == g]
        why = sorted(set(short for needle, short in SKIP_WHY
                         for r in rs if r[2] == "skipped" and needle in r[3]))
        tr.write_line("%-14s %7d %7d %8d%s" % (
            g, sum(r[2] == "passed" for r in rs), sum(r[2] == "failed" for r in rs),
            sum(r[2] == "skipped" for r in rs), "  (%s)" % "; ".join(why) if why else ""))
    sizes = sorted(((r[0], r[4]["snapshot_bytes"]) for r in rows if "snapshot_bytes" in r[4]),
                   key=lambda gn: groups.index(gn[0]))
    if sizes:
        tr.write_line("")
        tr.write_line("snapshot size, recursion target (main thread 1,500 frames deep, "
                      "a worker 1,000):")
        for g, n in sizes:
            tr.write_line("  %-14s %8d bytes" % (g, n))
    if config.getoption("facts"):
        tr.write_sep("-", "facts")
        for r in rows:
            if "info" in r[4]:
                tr.write_line("%s   [%s]" % (r[1], r[4]["info"]))
