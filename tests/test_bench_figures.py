"""The README's performance figures against the benches' result files
(bench/check_readme.py, bench/README.md): a figure tied to a file must be
the file's value; a file not written yet is only a warning."""

import json
import os
import subprocess
import sys

import pytest

from harness.interps import REPO

CHECKER = os.path.join(REPO, "bench", "check_readme.py")


def run_checker(*args):
    return subprocess.run([sys.executable, CHECKER, "-q"] + list(args),
                          capture_output=True, text=True)


@pytest.mark.rootfree
def test_readme_figures():
    res = run_checker()
    assert res.returncode == 0, "a README figure is not its result file's:\n" + res.stdout


@pytest.mark.rootfree
def test_checker(tmp_path):
    """The checker itself: equal to the digits shown, different, a missing
    row, a file not written yet."""
    (tmp_path / "b.json").write_text(json.dumps(
        {"rows": [{"id": "x", "ms": 95.04, "ratio": 4.16, "rate": 661234.0}]}))
    readme = tmp_path / "README.md"

    def check(text):
        readme.write_text(text)
        return run_checker("--readme", str(readme), "--results", str(tmp_path))

    ok = check("in 95 ms<!-- bench:b.json:rows[x].ms -->, **4.2x**<!-- bench:b.json:rows[0].ratio -->"
               ", 661k<!-- bench:b.json:rows[x].rate --> a second\n")
    assert ok.returncode == 0 and "3 ok" in ok.stdout, ok.stdout
    assert check("4.1x<!-- bench:b.json:rows[x].ratio -->\n").returncode == 1
    assert check("4.2x<!-- bench:b.json:rows[y].ratio -->\n").returncode == 1
    assert check("4.1-4.2x<!-- bench:b.json:rows[x].ratio -->\n").returncode == 1
    later = check("4.1x<!-- bench:none.json:rows[x].ratio -->\n")
    assert later.returncode == 0 and "not measured yet" in later.stdout
