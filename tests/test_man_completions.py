"""The man page and the bash and zsh completions (docs/meson.build, written
by tools/gen-docs.py from the helps): they offer every option of every
--help, the page renders without warnings, the completions complete what
each option and operand takes, and meson install puts them in place."""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from harness.interps import REPO
from harness.procs import kill, spawn

GROFF_FLAGS = ["-man", "-ww", "-z"]


@pytest.fixture(scope="session")
def helps(tool):
    """{command: its --help}, "" for pystack-dump itself, the subcommands
    from its usage lines."""
    main = subprocess.run([tool.path, "--help"], capture_output=True, text=True).stdout
    subs = dict.fromkeys(re.findall(r"^(?:Usage:| {6}) pystack-dump ([a-z]+) ", main, re.M))
    found = {"": main}
    for sub in subs:
        found[sub] = subprocess.run([tool.path, sub, "--help"], capture_output=True,
                                    text=True).stdout
    return found


def help_options(text):
    """The long options a help lists, each at the start of its own line."""
    return re.findall(r"^ {2,6}(?:-\w, )?(--[\w-]+)", text, re.M)


@pytest.fixture(scope="session")
def page(build):
    return os.path.join(build, "docs", "pystack-dump.1")


def rendered(page):
    return subprocess.run(["groff", "-man", "-Tascii", "-P-cbou", page], capture_output=True,
                          text=True, check=True).stdout


def man_section(text, heading):
    """The lines under heading, up to the next heading."""
    m = re.search(r"^%s\n(.*?)(?=^\S|\Z)" % re.escape(heading), text, re.M | re.S)
    assert m, "no section %s in the man page" % heading
    return m[1]


def test_man_lists_every_option(helps, page):
    """Each command's section of the page lists each option of its --help."""
    text = rendered(page)
    missing = []
    for cmd, help_text in helps.items():
        section = man_section(text, "PYSTACK-DUMP " + cmd.upper() if cmd else "OPTIONS")
        missing += ["%s %s" % (cmd or "pystack-dump", o) for o in help_options(help_text)
                    if not re.search(r"^ {7}(-\w, )?%s\b" % o, section, re.M)]
    assert helps.keys() >= {"", "sample", "top", "diff", "report"}
    assert not missing, "options of --help not in the man page: %s" % missing


def test_man_exit_status(page):
    """EXIT STATUS gives every code of enum pyd_err (core/pyd_error.h)."""
    with open(os.path.join(REPO, "core", "pyd_error.h")) as f:
        codes = set(re.findall(r"PYD_\w+ = (\d+),", f.read()))
    listed = set(re.findall(r"^ {7}(\d+) ", man_section(rendered(page), "EXIT STATUS"), re.M))
    assert listed == codes, "exit codes: pyd_error.h %s, man page %s" % (
        sorted(codes, key=int), sorted(listed, key=int))


def test_man_renders_cleanly(page):
    """groff and man render it without a warning (mandoc -Tlint too, if here)."""
    checks = [["groff", "-Tutf8"] + GROFF_FLAGS + [page]]
    if shutil.which("man"):
        checks.append(["man", "--warnings", "-l", page])
    if shutil.which("mandoc"):
        checks.append(["mandoc", "-Tlint", page])
    for argv in checks:
        r = subprocess.run(argv, capture_output=True, text=True,
                           env=dict(os.environ, MANPAGER="cat", PAGER="cat", MANWIDTH="80"))
        assert r.returncode == 0 and not r.stderr.strip(), "%s: status %d, %s" % (
            " ".join(argv), r.returncode, r.stderr)


# ---- bash ----

# Sources the completion, calls the function it registered for
# pystack-dump with the words given, prints COMPREPLY a word a line.
BASH_CALL = r'''
source "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
spec=$(complete -p pystack-dump) || exit 1
fn=${spec#*-F }; fn=${fn%% *}
"$fn" pystack-dump "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
printf '%s\n' "${COMPREPLY[@]}"
'''


@pytest.fixture(scope="session")
def complete(build):
    """complete(words...): what bash completes the last of `pystack-dump words...` with."""
    script = os.path.join(build, "docs", "pystack-dump")

    def run(*words):
        r = subprocess.run(["bash", "-c", BASH_CALL, "bash", script, "pystack-dump"] + list(words),
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and not r.stderr, "bash: %s" % r.stderr
        return [w for w in r.stdout.split("\n") if w]
    return run


def test_bash_subcommands(complete, helps):
    assert complete("sa") == ["sample"]
    assert set(complete("")) >= set(helps) - {""}


def test_bash_every_option(complete, helps):
    """After -, each command offers every option its --help lists."""
    missing = []
    for cmd, help_text in helps.items():
        offered = complete(*([cmd, "-"] if cmd else ["-"]))
        missing += ["%s %s" % (cmd or "pystack-dump", o) for o in help_options(help_text)
                    if o not in offered]
    assert not missing, "options of --help not completed: %s" % missing


def test_bash_option_prefix(complete):
    assert sorted(complete("sample", "--no-")) == ["--no-gc", "--no-lines"]
    assert sorted(complete("--loc")) == ["--locals", "--locals-depth", "--locals-items",
                                 "--locals-string", "--locked"]


def test_bash_formats(complete, tool):
    """-f offers the formats of sample --list-formats (report's too), diff's
    only the ones diff writes."""
    table = subprocess.run([tool.path, "sample", "--list-formats"], capture_output=True,
                           text=True, check=True).stdout
    formats = [line.split("\t")[0] for line in table.splitlines()]
    assert complete("sample", "-f", "") == formats
    assert complete("report", "--format", "") == formats
    assert complete("sample", "-f", "fl") == ["flamegraph"]
    assert complete("diff", "-f", "") == ["table", "collapsed", "flamegraph"]


def test_bash_modes(complete, tool):
    """-m offers the modes sample knows (those it names refusing one)."""
    err = subprocess.run([tool.path, "sample", "-m", "nope", "1"], capture_output=True,
                         text=True).stderr
    modes = re.search(r"\((.*)\)", err)[1].split(", ")
    assert modes == ["wall", "cpu", "gil", "async", "exception", "greenlet"]
    assert complete("sample", "-m", "") == modes
    assert complete("top", "--mode", "") == modes
    assert complete("sample", "-m", "e") == ["exception"]


def test_bash_files(complete, tmp_path):
    """Options that take a file complete files, --sysroot directories."""
    (tmp_path / "core.1234").write_text("")
    (tmp_path / "cores").mkdir()
    prefix = str(tmp_path / "co")
    want = [str(tmp_path / "core.1234"), str(tmp_path / "cores")]
    for words in (["--core", prefix], ["--snapshot", prefix], ["sample", "-o", prefix],
                  ["report", prefix], ["diff", "base.json", prefix]):
        assert sorted(complete(*words)) == want, words
    assert complete("--sysroot", prefix) == [str(tmp_path / "cores")]
    assert complete("sample", "-d", "") == []


def test_bash_program(complete, tmp_path):
    """sample -- completes the program to launch, then its arguments' files."""
    (tmp_path / "app.py").write_text("")
    assert "python3" in complete("sample", "-r", "max", "--", "python")
    assert complete("sample", "--", "python3", str(tmp_path / "ap")) == [str(tmp_path / "app.py")]


def python_pid_ready(p, deadline=10):
    """Waits until the spawned process runs python (setpriv execs it)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            if "python" in os.path.basename(os.readlink("/proc/%d/exe" % p.pid)):
                return
        except OSError:
            pass
        time.sleep(0.05)
    pytest.fail("pid %d never ran python" % p.pid)


def test_bash_pids(complete):
    """The PID operand offers Python processes, not others."""
    py = spawn([sys.executable, "-c", "import time; time.sleep(60)"])
    other = spawn(["sleep", "60"])
    try:
        python_pid_ready(py)
        for words in ([""], ["sample", "-r", "100", ""], ["top", ""], ["--json", ""]):
            offered = complete(*words)
            assert str(py.pid) in offered, words
            assert str(other.pid) not in offered, words
        assert complete(str(py.pid)) == [str(py.pid)]
    finally:
        kill(py)
        kill(other)


# ---- zsh ----

@pytest.fixture(scope="session")
def zsh():
    path = shutil.which("zsh")
    if not path:
        pytest.skip("zsh not installed (tools/install-deps.sh installs it)")
    return path


def test_zsh_loads(zsh, build):
    """The function parses, and compinit binds it to pystack-dump."""
    func = os.path.join(build, "docs", "_pystack-dump")
    r = subprocess.run([zsh, "-n", func], capture_output=True, text=True)
    assert r.returncode == 0 and not r.stderr, r.stderr
    script = ("fpath=(%s $fpath); autoload -Uz compinit; compinit -u -D; "
              "print -r -- $_comps[pystack-dump]; autoload +X _pystack-dump" % os.path.dirname(func))
    r = subprocess.run([zsh, "-f", "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "_pystack-dump" and not r.stderr, (
        r.stdout, r.stderr)


def test_zsh_every_option(build, helps):
    """Each command's function has a spec for each option of its --help."""
    with open(os.path.join(build, "docs", "_pystack-dump")) as f:
        text = f.read()
    missing = []
    for cmd, help_text in helps.items():
        body = re.search(r"^_pystack-dump_%s\(\)\n\{\n(.*?)^\}" % (cmd or "main"), text,
                         re.M | re.S)
        assert body, "no function for %s" % (cmd or "pystack-dump")
        missing += ["%s %s" % (cmd or "pystack-dump", o) for o in help_options(help_text)
                    if not re.search(r"\)?%s\[" % o, body[1])]
    assert not missing, "options of --help not in the zsh completion: %s" % missing


# ---- install ----

def test_meson_install(build, tmp_path):
    """meson install puts the page in man1 and the completions where bash
    and zsh look for them."""
    subprocess.run(["meson", "install", "-C", build, "--destdir", str(tmp_path), "--no-rebuild",
                    "--quiet"], check=True, capture_output=True)
    opts = {o["name"]: o["value"] for o in json.loads(subprocess.run(
        ["meson", "introspect", "--buildoptions", build], capture_output=True, text=True,
        check=True).stdout)}
    root = str(tmp_path) + opts["prefix"]
    for where, name in ((os.path.join(opts["mandir"], "man1"), "pystack-dump.1"),
                        (os.path.join(opts["datadir"], "bash-completion", "completions"),
                         "pystack-dump"),
                        (os.path.join(opts["datadir"], "zsh", "site-functions"),
                         "_pystack-dump")):
        with open(os.path.join(build, "docs", name), "rb") as built, \
                open(os.path.join(root, where, name), "rb") as installed:
            assert installed.read() == built.read(), name
