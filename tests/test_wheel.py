"""pystack-dump as Python people install it (pyproject.toml, meson-python):
a wheel built from the checkout and installed into a fresh venv, and the
README's source install; from each, the command, the Python API,
--debugger-setup's lines and both plugins loaded by them, the man page and
the completions.

Builds offline, as the README says: python3 -m build --no-isolation and
pip install --no-build-isolation, with Debian's python3-mesonpy.  Each
build is the whole project (minutes): once per session, on one worker."""

import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from harness.cores import gcore_slot, run_gcore
from harness.interps import REPO
from harness.procs import kill, run, spawn

pytestmark = pytest.mark.xdist_group("wheel")

BUILD_TIMEOUT = 1800
TOOL_TIMEOUT = 120


def text(b):
    return b.decode("utf-8", "replace")


def check_run(argv, timeout=BUILD_TIMEOUT, **kw):
    """Run argv; its stdout, or a failure with the tail of its output."""
    rc, out, err, _ = run(argv, timeout, **kw)
    assert rc == 0, "%s: rc %s\n%s\n%s" % (" ".join(argv), rc, text(out)[-3000:],
                                           text(err)[-3000:])
    return text(out)


def need_backend():
    for mod in ("mesonpy", "build", "venv"):
        rc, _, _, _ = run([sys.executable, "-c", "import " + mod], 60)
        if rc != 0:
            pytest.skip("no Python module %s (Debian: python3-mesonpy, python3-build, "
                        "python3-venv)" % mod)


def venv(path, system_site):
    argv = [sys.executable, "-m", "venv", path]
    check_run(argv + ["--system-site-packages"] if system_site else argv, 300)
    return path


@pytest.fixture(scope="session")
def wheel(tmp_path_factory):
    """The wheel python3 -m build makes from the checkout."""
    need_backend()
    out = str(tmp_path_factory.mktemp("dist"))
    check_run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", out,
               REPO], cwd=REPO)
    wheels = [f for f in os.listdir(out) if f.endswith(".whl")]
    assert len(wheels) == 1, wheels
    return os.path.join(out, wheels[0])


@pytest.fixture(scope="session")
def wheel_env(wheel, tmp_path_factory):
    """A plain venv with the wheel installed from the file alone."""
    env = venv(str(tmp_path_factory.mktemp("wheel") / "venv"), False)
    check_run([os.path.join(env, "bin", "pip"), "install", "--no-index", wheel], 600)
    return env


@pytest.fixture(scope="session")
def source_env(tmp_path_factory):
    """The README's way: pip install --no-build-isolation from the checkout,
    into a venv that sees Debian's mesonpy."""
    need_backend()
    env = venv(str(tmp_path_factory.mktemp("source") / "venv"), True)
    check_run([os.path.join(env, "bin", "pip"), "install", "--no-build-isolation",
               "--no-index", REPO], cwd=REPO)
    return env


@pytest.fixture(params=["wheel", "source"])
def env(request):
    return request.getfixturevalue(request.param + "_env")


@pytest.fixture
def target():
    """A CPython process (the one running the tests) asleep in a function."""
    p = spawn([sys.executable, "-c",
               "import time\ndef nap():\n    time.sleep(120)\nnap()"])
    time.sleep(0.5)
    yield p
    kill(p)


def setup_lines(env):
    """--debugger-setup's output: {"gdb": [lines], "lldb": [lines]} (the
    comment lines left out)."""
    out = check_run([os.path.join(env, "bin", "pystack-dump"), "--debugger-setup"],
                    TOOL_TIMEOUT)
    lines = [l for l in out.splitlines() if l and not l.startswith("#")]
    return {"gdb": [l for l in lines if not l.startswith("plugin load")],
            "lldb": [l for l in lines if l.startswith("plugin load")]}, out


def test_wheel_name(wheel):
    """A wheel for the Python that built it (the API's extension is built
    for its ABI), on Linux x86-64."""
    tag = "cp%d%d" % sys.version_info[:2]
    assert re.match(r"pystack_dump-[0-9.]+-%s-%s-linux_x86_64\.whl$" % (tag, tag),
                    os.path.basename(wheel)), wheel


def test_installed_api_dumps(env, target):
    """The issue's check: in the venv, pystack_dump.dump(PID) is the
    document pystack-dump --json PID prints."""
    script = ("import json, subprocess, sys, pystack_dump\n"
              "pid = int(sys.argv[1])\n"
              "api = pystack_dump.dump(pid)\n"
              "cli = json.loads(subprocess.run([sys.argv[2], '--json', str(pid)],\n"
              "                 stdout=subprocess.PIPE, check=True).stdout)\n"
              "print('same' if api == cli else 'api %r\\ncli %r' % (api, cli))\n")
    out = check_run([os.path.join(env, "bin", "python"), "-c", script, str(target.pid),
                     os.path.join(env, "bin", "pystack-dump")], TOOL_TIMEOUT)
    assert out.strip() == "same", out[-2000:]


def test_installed_core(env, target, tmp_path):
    """The installed command and API on a gcore core of the target: the
    same document."""
    with gcore_slot():
        core, _warned, err = run_gcore(target.pid, str(tmp_path / "core"))
    assert not err, err
    script = ("import json, subprocess, sys, pystack_dump\n"
              "api = pystack_dump.dump(core=sys.argv[1])\n"
              "cli = json.loads(subprocess.run([sys.argv[2], '--core', sys.argv[1], '--json'],\n"
              "                 stdout=subprocess.PIPE, check=True).stdout)\n"
              "nap = [f for t in api['threads'] for f in t['frames'] if f['function'] == 'nap']\n"
              "print('same' if api == cli and nap else 'api %r\\ncli %r' % (api, cli))\n")
    out = check_run([os.path.join(env, "bin", "python"), "-c", script, core,
                     os.path.join(env, "bin", "pystack-dump")], TOOL_TIMEOUT)
    assert out.strip() == "same", out[-2000:]


def test_installed_command_dumps(env, target):
    """venv/bin/pystack-dump PID: the target's stack."""
    out = check_run([os.path.join(env, "bin", "pystack-dump"), str(target.pid)], TOOL_TIMEOUT)
    assert 'in nap' in out and "Traceback (most recent call last)" in out, out


def test_man_page_and_completions(env):
    """The man page and the completions land under the venv's share/, where
    man (MANPATH from PATH's bin/../share/man) and the shells look."""
    for rel in ("share/man/man1/pystack-dump.1",
                "share/bash-completion/completions/pystack-dump",
                "share/zsh/site-functions/_pystack-dump"):
        assert os.path.isfile(os.path.join(env, rel)), rel


def test_debugger_setup_paths(env):
    """The lines name files that exist, all inside the venv."""
    lines, out = setup_lines(env)
    m = re.fullmatch(r'set \$pystack_dump_prefix = "(.*)"', lines["gdb"][0])
    src = re.fullmatch(r"source (.*)", lines["gdb"][1])
    lldb = re.fullmatch(r'plugin load "(.*)"', lines["lldb"][0]) if lines["lldb"] else None
    assert m and src and lldb, out
    assert os.path.realpath(m.group(1)) == os.path.realpath(env), out
    for path in (src.group(1), lldb.group(1)):
        assert os.path.isfile(path) and path.startswith(m.group(1) + "/"), out


def test_gdb_py_bt(env, target):
    """gdb with --debugger-setup's lines: py-bt, as pystack-dump prints it."""
    if shutil.which("gdb") is None:
        pytest.skip("no gdb")
    lines, _ = setup_lines(env)
    argv = ["gdb", "-batch", "-nx", "-iex", "set auto-load off", "-p", str(target.pid)]
    for line in lines["gdb"]:
        argv += ["-ex", line]
    out = check_run(argv + ["-ex", "py-bt"], TOOL_TIMEOUT)
    assert "in nap" in out and "Thread %d" % target.pid in out, out


def test_lldb_py_bt(env, target):
    lldb = shutil.which("lldb") or shutil.which("lldb-16")
    if lldb is None:
        pytest.skip("no lldb")
    lines, _ = setup_lines(env)
    out = check_run([lldb, "-b", "-o", lines["lldb"][0], "-p", str(target.pid),
                     "-o", "py-bt"], TOOL_TIMEOUT)
    assert "in nap" in out and "Thread %d" % target.pid in out, out


def test_gdb_command_file_alone(wheel_env):
    """Sourced without the prefix line: it says which line is missing."""
    lines, _ = setup_lines(wheel_env)
    rc, out, err, _ = run(["gdb", "-batch", "-nx", "-ex", lines["gdb"][1]], TOOL_TIMEOUT)
    assert "set $pystack_dump_prefix" in text(out) + text(err), text(out) + text(err)


def test_moved_venv_not_installed(wheel_env, tmp_path):
    """A pystack-dump copied out of its layout says it cannot tell, rather
    than name paths that are not there."""
    exe = tmp_path / "pystack-dump"
    shutil.copy(os.path.join(wheel_env, "bin", "pystack-dump"), exe)
    rc, out, err, _ = run([str(exe), "--debugger-setup"], TOOL_TIMEOUT)
    assert rc == 1 and "cannot tell where" in text(err) and not out, text(err)
