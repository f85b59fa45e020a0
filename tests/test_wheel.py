"""pystack-dump as Python people install it (pyproject.toml, meson-python):
a wheel built from the checkout and installed into a fresh venv, and the
README's source install; from each, the command, the Python API,
--debugger-setup's lines and both plugins loaded by them, the man page and
the completions.  The release wheel (tools/build-wheel.py): its manylinux
tag, what it holds (no extension module, no plugin, a pystack-dump that
imports no library), and installed into a fresh venv in the bullseye
chroot (glibc 2.31): the command and the API there, against ground truth.

Builds offline, as the README says: python3 -m build --no-isolation and
pip install --no-build-isolation, with Debian's python3-mesonpy.  Each
build is the whole project (minutes): once per session, on one worker."""

import json
import os
import re
import shutil
import sys
import time

import pytest

from harness.cores import gcore_slot, run_gcore
from harness.debuggers import gdb_argv
from harness.dumps import compare, gt_sanity
from harness.interps import REPO, bullseye_dir, chroot_ready
from harness.procs import kill, run, session_id, spawn
from harness.target import Target
from test_static import PT_DYNAMIC, PT_INTERP, segments

pytestmark = pytest.mark.xdist_group("wheel")

BUILD_TIMEOUT = 1800
TOOL_TIMEOUT = 120


def text(b):
    return b.decode("utf-8", "replace")


def own_env():
    """This environment without PYSTACK_DUMP (tests/test_api.py names the
    build tree's pystack-dump with it, in this worker too): an installed
    package runs its own."""
    return {k: v for k, v in os.environ.items() if k != "PYSTACK_DUMP"}


def check_run(argv, timeout=BUILD_TIMEOUT, **kw):
    """Run argv; its stdout, or a failure with the tail of its output."""
    kw.setdefault("env", own_env())
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
    """Any Python 3 (no extension module), Linux x86-64 (pystack-dump and
    the plugins are x86-64 code); meson-python's tag, not a manylinux one:
    its plugins load the build machine's libraries."""
    assert re.match(r"pystack_dump-[0-9.]+-py3-none-linux_x86_64\.whl$",
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
    """gdb with --debugger-setup's lines: py-bt, as pystack-dump prints it,
    and its help, from the help file installed next to the command file."""
    if shutil.which("gdb") is None:
        pytest.skip("no gdb")
    lines, _ = setup_lines(env)
    argv = gdb_argv() + ["-p", str(target.pid)]
    for line in lines["gdb"]:
        argv += ["-ex", line]
    out = check_run(argv + ["-ex", "py-bt", "-ex", "help py-bt"], TOOL_TIMEOUT)
    assert "in nap" in out and "Thread %d" % target.pid in out, out
    assert "py-bt [all]" in out, out


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
    rc, out, err, _ = run([str(exe), "--debugger-setup"], TOOL_TIMEOUT, env=own_env())
    assert rc == 1 and "cannot tell where" in text(err) and not out, text(err)


# ---- the release wheel (tools/build-wheel.py) ----

RELEASE_TAGS = ["py3-none-manylinux_2_17_x86_64", "py3-none-manylinux2014_x86_64"]


@pytest.fixture(scope="session")
def release_wheel(tmp_path_factory):
    """The wheel tools/build-wheel.py makes (its last line names it)."""
    need_backend()
    out = str(tmp_path_factory.mktemp("release"))
    made = check_run([sys.executable, os.path.join(REPO, "tools", "build-wheel.py"), out],
                     cwd=REPO).strip().splitlines()[-1]
    assert os.path.dirname(made) == out and os.path.isfile(made), made
    return made


def test_release_wheel_tag(release_wheel):
    """Named and tagged manylinux_2_17 (and its legacy alias manylinux2014)
    for any Python 3: no extension module."""
    import zipfile
    assert re.match(r"pystack_dump-[0-9.]+-py3-none-manylinux2014_x86_64"
                    r"\.manylinux_2_17_x86_64\.whl$", os.path.basename(release_wheel))
    with zipfile.ZipFile(release_wheel) as z:
        (wheel_file,) = [n for n in z.namelist() if n.endswith(".dist-info/WHEEL")]
        tags = [l[5:] for l in z.read(wheel_file).decode().splitlines()
                if l.startswith("Tag: ")]
    assert tags == RELEASE_TAGS


def test_release_wheel_files(release_wheel, tmp_path):
    """No shared object at all (no extension module, no plugin), and its
    pystack-dump static: no interpreter, no dynamic section, no symbol
    version it imports."""
    import zipfile
    with zipfile.ZipFile(release_wheel) as z:
        names = z.namelist()
        assert not [n for n in names if re.search(r"\.so(\.|$)", n)], names
        (exe,) = [n for n in names if n.endswith(".data/scripts/pystack-dump")]
        assert z.getinfo(exe).external_attr >> 16 & 0o111, "not executable"
        path = z.extract(exe, str(tmp_path))
    types = segments(path)
    assert PT_INTERP not in types and PT_DYNAMIC not in types, types
    out = check_run(["readelf", "-V", "-d", path], TOOL_TIMEOUT)
    assert "GLIBC_" not in out and "NEEDED" not in out, out


@pytest.fixture(scope="session")
def bullseye_venv(release_wheel):
    """(root, venv): the release wheel installed with pip --no-index into
    a fresh venv of the bullseye chroot's python3.9."""
    root = bullseye_dir()
    why = chroot_ready(root)
    if why:
        pytest.skip("no bullseye chroot: %s" % why)
    if run(["chroot", root, "python3.9", "-c", "import ensurepip"], 60)[0] != 0:
        pytest.skip("no python3.9-venv in the bullseye chroot (tests/setup-bullseye.sh "
                    "installs it where the mirror is reachable)")
    inside = "/tmp/pyd-wheel-%s-%d" % (session_id(), os.getpid())
    os.makedirs(root + inside)
    shutil.copy(release_wheel, root + inside)
    try:
        venv_dir = inside + "/venv"
        check_run(["chroot", root, "python3.9", "-m", "venv", venv_dir], 300)
        check_run(["chroot", root, venv_dir + "/bin/pip", "install", "--no-index",
                   inside + "/" + os.path.basename(release_wheel)], 300)
        yield root, venv_dir
    finally:
        shutil.rmtree(root + inside)


# pystack_dump.dump(PID) and a short Sampler, from the venv's python.
API_SCRIPT = """import json, sys, time, pystack_dump
pid = int(sys.argv[1])
doc = pystack_dump.dump(pid)
with pystack_dump.Sampler(pid, rate=200) as s:
    time.sleep(0.5)
print(json.dumps({"dump": doc, "samples": s.samples}))
"""


@pytest.mark.interps(lambda i: i.label in ("bullseye-3.9", "pyenv-3.12"))
def test_release_wheel_in_bullseye(interp, bullseye_venv):
    """In the bullseye venv, pystack-dump PID --json and the API's
    dump(PID) are the target's ground truth (a target of bullseye's
    python3.9 in the chroot, and one of a host Python outside it); the API's
    Sampler samples it."""
    root, venv_dir = bullseye_venv
    with Target(interp, "threads") as tg:
        gt = tg.settled_truth(gt_sanity)
        cli = json.loads(check_run(["chroot", root, venv_dir + "/bin/pystack-dump", "--json",
                                    str(tg.pid)], TOOL_TIMEOUT))
        api = json.loads(check_run(["chroot", root, venv_dir + "/bin/python", "-c",
                                    API_SCRIPT, str(tg.pid)], TOOL_TIMEOUT))
    errs = ["command: " + e for e in compare(gt, cli, interp, tg.pid)]
    errs += ["API: " + e for e in compare(gt, api["dump"], interp, tg.pid)]
    assert not errs, "\n".join(errs)
    assert api["samples"] > 0, api["samples"]


def test_release_wheel_debugger_setup(bullseye_venv):
    """--debugger-setup in the bullseye venv: exit 0, no loading line, and
    for each debugger why there is no plugin (the manylinux wheel leaves
    them out) and what to do."""
    root, venv_dir = bullseye_venv
    out = check_run(["chroot", root, venv_dir + "/bin/pystack-dump", "--debugger-setup"],
                    TOOL_TIMEOUT)
    lines = out.splitlines()
    assert all(not l or l.startswith("#") for l in lines), out
    for debugger in ("gdb", "lldb"):
        said = [l for l in lines if l.startswith("# %s: no plugin" % debugger)]
        assert len(said) == 1 and "manylinux wheel" in said[0] and \
            "build pystack-dump from source" in said[0], out
