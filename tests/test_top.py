"""pystack-dump top: the live view driven in tmux (an 80x24 pane, keys
sent, the screen captured) against sample_split, whose main thread spends
75% of its time in spend_hot and 25% in spend_cold: the header and the hot
function on top, sorting, pausing, and every way out (q, Ctrl-C, SIGTERM,
the target exiting) leaving the shell's screen as it was."""

import os
import re
import shutil
import signal
import subprocess
import time
import uuid

import pytest

from harness.target import Target

TOP_LABELS = ["pyenv-3.12", "pyenv-3.6", "sid-3.15", "ft-3.15t"]
SCREEN_TIMEOUT = 20.0   # s for a screen to show what is awaited (loaded CI)
PROMPT = "TOP-TEST$ "
ROW0 = 5                # the first function's line: after the header and titles

pytestmark = pytest.mark.skipif(not shutil.which("tmux"), reason="tmux not installed")


class Pane:
    """A shell in an 80x24 tmux pane on a tmux server of its own."""

    def __init__(self):
        self.socket = "pyd-top-%s" % uuid.uuid4().hex[:8]

    def tmux(self, *args):
        return subprocess.run(["tmux", "-L", self.socket] + list(args), capture_output=True,
                              text=True, timeout=10).stdout

    def __enter__(self):
        env = "env -i PATH=/usr/bin:/bin TERM=screen PS1='%s' bash --norc --noprofile" % PROMPT
        subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", "new-session", "-d",
                        "-x", "80", "-y", "24", env], check=True, timeout=10)
        self.wait_for(lambda s: PROMPT.rstrip() in s, "the shell's prompt")
        return self

    def __exit__(self, *exc):
        self.tmux("kill-server")

    def send(self, *keys):
        self.tmux("send-keys", *keys)

    def screen(self):
        return self.tmux("capture-pane", "-p")

    def alternate(self):
        return self.tmux("display-message", "-p", "#{alternate_on}").strip() == "1"

    def wait_for(self, pred, what, timeout=SCREEN_TIMEOUT):
        deadline = time.time() + timeout
        while True:
            s = self.screen()
            if pred(s):
                return s
            if time.time() > deadline:
                pytest.fail("waited %.0f s for %s; the screen:\n%s" % (timeout, what, s))
            time.sleep(0.2)


def rows(screen):
    """The function lines: (own%, total%, label)."""
    out = []
    for l in screen.splitlines()[ROW0:-1]:
        f = l.split(None, 4)
        if len(f) == 5 and f[0].endswith("%"):
            out.append((float(f[0][:-1]), float(f[1][:-1]), f[4]))
    return out


def by_name(screen):
    names = [r[2] for r in rows(screen)]
    return bool(names) and names == sorted(names)


def by_total(screen):
    totals = [r[1] for r in rows(screen)]
    return bool(totals) and totals == sorted(totals, reverse=True)


def hot_on_top(screen):
    r = rows(screen)
    return bool(r) and r[0][2].startswith("spend_hot ")


def start_top(pane, tool, pid, pidfile):
    """top in the pane, its pid in pidfile, its exit status echoed after."""
    pane.send("sh -c 'echo $$ > %s; exec %s top %d'; echo rc=$?" % (pidfile, tool.path, pid),
              "Enter")
    return pane.wait_for(hot_on_top, "spend_hot on top of the view")


def ended(pane, reason):
    """top ended with exit 0, reason said, the shell's screen back."""
    s = pane.wait_for(lambda s: "rc=" in s and s.rstrip().endswith(PROMPT.rstrip()),
                      "top to exit")
    assert "rc=0" in s, s
    assert "pystack-dump top: %s after" % reason in s, s
    assert not pane.alternate(), "the alternate screen is still on:\n" + s
    assert "pystack-dump top: pid" not in s, "the view was left on the screen:\n" + s


@pytest.fixture
def pidfile(tmp_path):
    return str(tmp_path / "top.pid")


@pytest.mark.interps(lambda i: i.label in TOP_LABELS)
def test_top_view_keys_quit(interp, tool, pidfile):
    """The header, spend_hot on top by own samples, sorting by name and by
    total, a pause that freezes the screen, q."""
    with Target(interp, "sample_split") as tg, Pane() as pane:
        tg.wait_ground_truth()
        s = start_top(pane, tool, tg.pid, pidfile)
        head = s.splitlines()
        assert head[0].startswith("pystack-dump top: pid %d, Python %s" %
                                  (tg.pid, interp.minor_str)), s
        assert "wall mode, 1000 Hz" in head[0], s
        assert head[1].startswith("Rate ") and "errors" in head[1] and "missed" in head[1], s
        assert "[%Own]" in head[4], s
        own = rows(s)
        assert own[0][0] > 50 and own[1][2].startswith("spend_cold "), s
        # Each waits for the whole redraw: tmux can be caught between the
        # new title and the rows that follow it on the terminal.
        pane.send("5")
        s = pane.wait_for(lambda s: "[Function]" in s and by_name(s), "the name column sorted")
        pane.send("2")
        s = pane.wait_for(lambda s: "[%Total]" in s and by_total(s), "the total column sorted")
        assert rows(s)[0][1] > 95, s
        pane.send("p")
        before = pane.wait_for(lambda s: "[PAUSED]" in s, "the pause")
        time.sleep(2.5)
        assert pane.screen() == before, "the paused screen changed"
        pane.send("p")
        pane.wait_for(lambda s: "[PAUSED]" not in s, "the view to resume")
        pane.send("q")
        ended(pane, "quit")


@pytest.mark.interps(lambda i: i.label in TOP_LABELS)
@pytest.mark.parametrize("how", ["sigterm", "ctrl-c"])
def test_top_signal(interp, tool, pidfile, how):
    """SIGTERM to top, or Ctrl-C in its terminal: exit 0, terminal restored."""
    with Target(interp, "sample_split") as tg, Pane() as pane:
        tg.wait_ground_truth()
        start_top(pane, tool, tg.pid, pidfile)
        if how == "sigterm":
            with open(pidfile) as f:
                os.kill(int(f.read()), signal.SIGTERM)
        else:
            pane.send("C-c")
        ended(pane, "terminated" if how == "sigterm" else "interrupted")


@pytest.mark.interps(lambda i: i.label in TOP_LABELS)
def test_top_target_exits(interp, tool, pidfile):
    """The target exiting ends top, which says so."""
    with Target(interp, "sample_split", args=["exit-after=6"]) as tg, Pane() as pane:
        tg.wait_ground_truth()
        start_top(pane, tool, tg.pid, pidfile)
        ended(pane, "the target exited")


def test_top_not_a_terminal(tool):
    """Output to a pipe: a clear error and bad usage's exit status (2)."""
    r = subprocess.run([tool.path, "top", str(os.getpid())], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 2, r
    assert "is not a terminal" in r.stderr and "pystack-dump sample" in r.stderr, r.stderr
    assert r.stdout == "", r.stdout


@pytest.mark.interps(lambda i: i.label in TOP_LABELS and not i.ft and i.minor >= (3, 7))
def test_top_gil_contended(interp, tool, pidfile):
    """top -m gil on sample_gil.py (a holder and two contenders, switch
    interval 1 s): the header says the GIL is contended in most looks."""
    with Target(interp, "sample_gil", args=["switch=1"]) as tg, Pane() as pane:
        tg.wait_ground_truth()
        pane.send("sh -c 'echo $$ > %s; exec %s top -m gil %d'; echo rc=$?"
                  % (pidfile, tool.path, tg.pid), "Enter")
        pat = re.compile(r"GIL contended (\d+)%")

        def contended(s):
            lines = s.splitlines()
            m = pat.search(lines[1]) if len(lines) > 1 else None
            return m and int(m.group(1)) >= 50
        s = pane.wait_for(contended, "GIL contended 50% or more in the header")
        assert "gil mode" in s.splitlines()[0], s
        pane.send("q")
        ended(pane, "quit")
