"""pystack-dump serve: profiles and stacks over HTTP, fetched on loopback by
real clients -- Go's own `go tool pprof`, as Parca and Grafana Alloy pull
/debug/pprof/profile -- and by hand-made requests for what must be
refused: bad parameters, other methods, long URLs, clients that hang up,
more profiles than the server takes at once, targets that exit."""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest

from harness.procs import kill, run, short, spawn
from harness.target import Target

START_TIMEOUT = 10     # s until the server says where it listens
PROFILE_SECS = 2       # seconds= of the profiles fetched
MODE_SECS = 1          # ... of each mode's: 100 samples, to name one busy function
FETCH_TIMEOUT = 60     # s a client may take (go tool pprof builds nothing)
MAX_PROFILES = 4       # the server's documented bound
HANGUP_STOP_S = 1.5    # a hung-up client's profile ends this soon
# The interpreters the slower checks run on: each kind of build, the
# oldest and newest layouts, a free-threaded one.
SELECTION = ((3, 6), (3, 9), (3, 11), (3, 12), (3, 13), (3, 14), (3, 15))

# mode -> (target, the function a profile of it must name)
MODES = {
    "wall": ("sample_split", "spend_hot"),
    "cpu": ("sample_cpu", "burn_cpu"),
    "gil": ("sample_gil", "hold_gil"),
    "async": ("sample_async", "burn_cpu"),
    "exception": ("sample_exception", "in_handler"),
    "greenlet": ("greenlets", "level3"),
}


class Server:
    """pystack-dump serve on a free loopback port; stopped with SIGTERM."""

    def __init__(self, tool, args):
        self.argv = [tool.path, "serve", "--listen", "127.0.0.1:0"] + [str(a) for a in args]
        self.log = tempfile.TemporaryFile()
        self.proc = spawn(self.argv, stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.time() + START_TIMEOUT
        self.port = None
        while self.port is None and time.time() < deadline and self.proc.poll() is None:
            m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)/", self.stderr_bytes())
            if m:
                self.port = int(m[1])
            else:
                time.sleep(0.05)
        if self.port is None:
            kill(self.proc)
            raise AssertionError("%s did not say where it listens: %s"
                                 % (" ".join(self.argv), short(self.stderr_bytes())))

    def stderr_bytes(self):
        if not self.log.closed:
            self.log.seek(0)
            self.logged = self.log.read()
        return self.logged

    def stderr(self):
        return self.stderr_bytes().decode("utf-8", "replace")

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def get(self, path, method="GET", timeout=FETCH_TIMEOUT):
        """(status, headers, body) of one request."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path)
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def stop(self):
        """SIGTERM: the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=20)
        finally:
            kill(self.proc)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        kill(self.proc)
        self.stderr_bytes()     # kept for the checks after
        self.log.close()


def go_pprof(args, timeout=FETCH_TIMEOUT, saved=None):
    """`go tool pprof ARGS`: (exit status, its output), in a scratch HOME.
    saved: a list that gets the bytes of each profile pprof fetched (it
    keeps a copy of each under $PPROF_TMPDIR)."""
    if not shutil.which("go"):
        pytest.skip("go (golang-go) not installed: go tool pprof is the client")
    with tempfile.TemporaryDirectory(prefix="serve-pprof.") as tmp:
        keep = os.path.join(tmp, "profiles")
        env = dict(os.environ, HOME=tmp, GOCACHE=os.path.join(tmp, "cache"), PPROF_TMPDIR=keep)
        rc, out, err, _ = run(["go", "tool", "pprof"] + args, timeout, env=env)
        if saved is not None and os.path.isdir(keep):
            for name in sorted(os.listdir(keep)):
                with open(os.path.join(keep, name), "rb") as f:
                    saved.append(f.read())
    return rc, (out + err).decode("utf-8", "replace")


def read_pprof(body, kind):
    """`go tool pprof KIND` on a profile already fetched."""
    with tempfile.NamedTemporaryFile(prefix="serve-", suffix=".pb.gz") as f:
        f.write(body)
        f.flush()
        rc, text = go_pprof([kind, f.name])
    assert rc == 0, "go tool pprof %s on a served profile: exit %s: %s" \
        % (kind, rc, short(text.encode(), 1500))
    return text


def fetch(server, query, kind="-raw", saved=None):
    url = server.url("/debug/pprof/profile?" + query)
    rc, text = go_pprof([kind, url], saved=saved)
    assert rc == 0, "go tool pprof %s %s: exit %s: %s\nserver: %s" \
        % (kind, url, rc, short(text.encode(), 1500), short(server.stderr_bytes()))
    return text


def raw_samples(text):
    """The samples of pprof -raw: [(count, label text)], and the functions
    of its locations."""
    samples = [(int(m[1]), m[2]) for m in re.finditer(
        r"^\s+(\d+)\s+\d+: [\d ]+\n((?:\s+\w[\w ]*:\[.*\n)*)", text, re.M)]
    functions = set(re.findall(r"^\s+\d+: 0x0 M=\d+ (\S+)", text, re.M))
    return samples, functions


def named(functions, want):
    return any(f == want or f.endswith("." + want) for f in functions)


def start_target(interp, mode):
    """The target that exercises mode on interp (sample_split where the
    mode's own target cannot run there: the server must refuse it)."""
    name = MODES[mode][0]
    if name == "sample_async" and interp.minor < (3, 7):
        name = "sample_split"
    if name == "greenlets":
        rc, _, _, _ = run(interp.argv(["-c", "import greenlet"]), 60)
        name = "greenlets" if rc == 0 else "sample_split"
    return Target(interp, name), name == MODES[mode][0]


def test_serve_profile(interp, tool):
    """go tool pprof fetches a profile of one served process: -raw labels
    every sample with the process, its pid and the thread; -top, on the
    copy pprof kept of it, names its hot functions."""
    with Target(interp, "sample_split") as tg:
        gt = tg.wait_ground_truth()
        with Server(tool, [tg.pid]) as srv:
            saved = []
            raw = fetch(srv, "seconds=%d" % PROFILE_SECS, saved=saved)
            assert srv.stop() == 0, srv.stderr()
    assert len(saved) == 1, "go tool pprof kept %d copies of the profile it fetched" % len(saved)
    top = read_pprof(saved[0], "-top")
    for f in (gt["hot"]["function"], gt["cold"]["function"]):
        assert re.search(r"\s%s$" % re.escape(f), top, re.M), top
    samples, _ = raw_samples(raw)
    assert sum(n for n, _ in samples) > 0, raw
    for _, labels in samples:
        assert "pid:[%d]" % tg.pid in labels and "process:[process %d " % tg.pid in labels \
            and "thread:[" in labels, labels
    log = srv.stderr()
    assert re.search(r"GET /debug/pprof/profile\?seconds=%d 200 \d+ B \d+ ms" % PROFILE_SECS,
                     log), log


@pytest.mark.interps(lambda i: i.minor in SELECTION)
@pytest.mark.parametrize("mode", sorted(MODES))
def test_serve_modes(interp, tool, mode):
    """?mode= samples as sample -m does: the mode's target's busy function
    is named; where the interpreter (or the process) cannot be sampled in
    that mode, the answer is 501 with sample's reason, and sample refuses
    it too (exit 6)."""
    tg, own = start_target(interp, mode)
    with tg:
        tg.wait_ground_truth()
        with Server(tool, [tg.pid]) as srv:
            status, _, body = srv.get("/debug/pprof/profile?seconds=%d&mode=%s"
                                      % (MODE_SECS, mode))
            cli = run([tool.path, "sample", "-m", mode, "-n", "5", "-f", "json", str(tg.pid)], 60)
            assert srv.stop() == 0, srv.stderr()
    if status == 200:
        # go tool pprof reads the profile served above, not a second one
        # (test_serve_profile has it fetch over HTTP)
        text = read_pprof(body, "-raw")
    if status == 501:
        assert b"-m %s is not supported" % mode.encode() in body, body
        assert cli[0] == 6, "sample -m %s exits %s where serve refuses: %s" \
            % (mode, cli[0], short(cli[2]))
        return
    assert status == 200, (status, body)
    assert own, "%s answered 200 on a target without what it samples" % mode
    _, functions = raw_samples(text)
    assert named(functions, MODES[mode][1]), (mode, sorted(functions))
    if mode in ("async", "greenlet"):
        assert re.search(r"\b%s:\[" % ("task" if mode == "async" else mode), text), \
            "no %s label in the samples: %s" % (mode, text[:3000])


@pytest.mark.interps(lambda i: i.minor in ((3, 11), (3, 15)))
def test_serve_all(interp, tool):
    """--all serves every CPython process, those started after the server
    too: a profile names the hot functions of two targets, each under its
    own pid; / lists them."""
    with Target(interp, "sample_split") as a:
        a.wait_ground_truth()
        with Server(tool, ["--all"]) as srv:
            with Target(interp, "sample_cpu") as b:
                b.wait_ground_truth()
                status, _, index = srv.get("/")
                raw = fetch(srv, "seconds=%d" % PROFILE_SECS)
                status_s, _, stacks = srv.get("/debug/pprof/stacks?json=1")
            assert srv.stop() == 0, srv.stderr()
    assert status == 200 and b"pid %d:" % a.pid in index and b"pid %d:" % b.pid in index, index
    samples, functions = raw_samples(raw)
    for pid, fn in ((a.pid, "spend_hot"), (b.pid, "burn_cpu")):
        assert any("pid:[%d]" % pid in labels for _, labels in samples), (pid, raw[:3000])
        assert named(functions, fn), (fn, sorted(functions))
    doc = json.loads(stacks)
    pids = [p["pid"] for p in doc["processes"]]
    assert status_s == 200 and a.pid in pids and b.pid in pids, pids


def test_serve_stacks(newest, tool):
    """/debug/pprof/stacks is the dump of each process served, text or
    JSON ({"processes": [...]}, as --subprocesses --json), the same stack
    pystack-dump PID prints; a PID that is gone gets its entry with why."""
    with Target(newest, "sample_split") as tg:
        gt = tg.wait_ground_truth()
        gone = subprocess.Popen(["true"])
        gone.wait()
        with Server(tool, [tg.pid, gone.pid]) as srv:
            st, hdr, text = srv.get("/debug/pprof/stacks")
            sj, hj, body = srv.get("/debug/pprof/stacks?json=1")
            assert srv.stop() == 0, srv.stderr()
    assert st == 200 and hdr["Content-Type"].startswith("text/plain"), (st, hdr)
    assert b"Process %d (" % tg.pid in text and b"; parent " in text and b"main" in text, text
    assert b"Process %d: " % gone.pid in text and b"no process with pid" in text, text
    assert sj == 200 and hj["Content-Type"] == "application/json", (sj, hj)
    doc = json.loads(body)
    mine = [p for p in doc["processes"] if p["pid"] == tg.pid]
    assert mine and mine[0]["threads"], doc
    funcs = [f["function"] for t in mine[0]["threads"] for f in t["frames"]]
    assert "main" in funcs and (gt["hot"]["function"] in funcs or
                                gt["cold"]["function"] in funcs), funcs
    assert [p for p in doc["processes"] if p["pid"] == gone.pid][0]["error"], doc


def test_serve_two_clients(newest, tool):
    """Two go tool pprof at once both get whole profiles, each of its own
    seconds; more than the server takes at once are answered 503 with
    Retry-After, not queued."""
    with Target(newest, "sample_split") as tg:
        gt = tg.wait_ground_truth()
        with Server(tool, [tg.pid]) as srv:
            out = {}

            def client(i):
                out[i] = go_pprof(["-top", srv.url("/debug/pprof/profile?seconds=%d"
                                                   % PROFILE_SECS)])
            threads = [threading.Thread(target=client, args=(i,)) for i in range(2)]
            t0 = time.time()
            for t in threads:
                t.start()
            for t in threads:
                t.join(FETCH_TIMEOUT)
            both = time.time() - t0
            busy = {}

            def hold(i):
                busy[i] = srv.get("/debug/pprof/profile?seconds=%d" % (PROFILE_SECS + 1))[0]
            holders = [threading.Thread(target=hold, args=(i,)) for i in range(MAX_PROFILES)]
            for t in holders:
                t.start()
            time.sleep(1)
            status, headers, body = srv.get("/debug/pprof/profile?seconds=1")
            for t in holders:
                t.join(FETCH_TIMEOUT)
            assert srv.stop() == 0, srv.stderr()
    for i in range(2):
        rc, text = out[i]
        assert rc == 0 and gt["hot"]["function"] in text, text
    assert both < 2 * PROFILE_SECS + 2, "two %d s profiles took %.1f s: not at once" \
        % (PROFILE_SECS, both)
    assert sorted(busy.values()) == [200] * MAX_PROFILES, busy
    assert status == 503 and headers.get("Retry-After", "").isdigit() and b"busy" in body, \
        (status, headers, body)


def test_serve_bad_requests(newest, tool):
    """Each bad request gets its documented answer with a line saying why,
    and the server keeps serving: bad seconds= 400, an unknown mode 400,
    an unknown path 404, another method 405 (Allow: GET), a URL too long
    414, a client that hangs up mid-profile stops its sampling."""
    with Target(newest, "sample_split") as tg:
        tg.wait_ground_truth()
        with Server(tool, [tg.pid]) as srv:
            got = {}
            for q in ("seconds=-1", "seconds=0", "seconds=1e9", "seconds=301",
                      "seconds=abc", "seconds=", "seconds=nan", "seconds=inf",
                      "seconds=2&mode=turbo"):
                got[q] = srv.get("/debug/pprof/profile?" + q)
            got["404"] = srv.get("/nowhere")
            got["inject"] = srv.get("/nowhere?x=a%0apystack-dump%20serve:%20forged")
            got["405"] = srv.get("/debug/pprof/profile?seconds=1", method="POST")
            got["414"] = srv.get("/debug/pprof/profile?x=" + "a" * 20000)
            t0 = time.time()
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.sendall(b"GET /debug/pprof/profile?seconds=30 HTTP/1.1\r\nHost: x\r\n\r\n")
            time.sleep(0.5)
            s.close()
            hung = None
            while time.time() - t0 < 10 and hung is None:
                m = re.search(r"seconds=30 \d+ \d+ B (\d+) ms", srv.stderr())
                hung = int(m[1]) if m else None
                time.sleep(0.1)
            after = srv.get("/")
            assert srv.stop() == 0, srv.stderr()
    for q in [k for k in got if "seconds=" in k]:
        status, _, body = got[q]
        want = b"mode=" if "mode" in q else b"seconds="
        assert status == 400 and body.startswith(want) and body.endswith(b"\n"), (q, status, body)
    assert got["404"][0] == 404, got["404"]
    # the client's decoded bytes stay on one line of the log
    assert not re.search(r"^pystack-dump serve: forged", srv.stderr(), re.M), srv.stderr()
    assert "x=a\\npystack-dump serve: forged 404" in srv.stderr(), srv.stderr()
    assert got["405"][0] == 405 and got["405"][1].get("Allow") == "GET", got["405"]
    assert got["414"][0] == 414, got["414"][:2]
    assert hung is not None and hung < (0.5 + HANGUP_STOP_S) * 1000, \
        "a hung-up client's 30 s profile ran %s ms: %s" % (hung, srv.stderr())
    assert after[0] == 200, after


def test_serve_target_exits(newest, tool):
    """A target that exits mid-profile: the profile comes back at once
    with what was sampled before, and pprof reads it."""
    with Target(newest, "sample_split", extra=(), args=["exit-after=2"]) as tg:
        gt = tg.wait_ground_truth()
        with Server(tool, [tg.pid]) as srv:
            t0 = time.time()
            raw = fetch(srv, "seconds=20")
            secs = time.time() - t0
            status, _, body = srv.get("/debug/pprof/profile?seconds=1")
            assert srv.stop() == 0, srv.stderr()
    samples, functions = raw_samples(raw)
    assert secs < 10 and sum(n for n, _ in samples) > 0, (secs, raw[:2000])
    assert named(functions, gt["hot"]["function"]), sorted(functions)
    # gone, or a zombie its parent (this harness) has not reaped yet
    assert status == 404 and re.search(rb"no process with pid|exited", body), (status, body)


def test_serve_sigterm_mid_profile(newest, tool):
    """SIGTERM while a profile is taken: it is answered with what was
    sampled, the server exits 0 and says it stopped."""
    with Target(newest, "sample_split") as tg:
        tg.wait_ground_truth()
        with Server(tool, [tg.pid]) as srv:
            res = {}
            t = threading.Thread(target=lambda: res.update(
                r=srv.get("/debug/pprof/profile?seconds=30")))
            t.start()
            time.sleep(1.5)
            t0 = time.time()
            rc = srv.stop()
            t.join(FETCH_TIMEOUT)
            secs = time.time() - t0
    assert rc == 0 and secs < 5, (rc, secs, srv.stderr())
    status, headers, body = res["r"]
    assert status == 200 and body[:2] == b"\x1f\x8b", (status, headers, body[:100])
    assert "stopping" in srv.stderr(), srv.stderr()


def test_serve_usage(tool):
    """Bad command lines exit 2 with why; an address in use exits 2 naming
    it; a build with serve has --help."""
    def serve(*args):
        return run([tool.path, "serve"] + list(args), 30)
    rc, out, _, _ = serve("--help")
    assert rc == 0 and b"/debug/pprof/profile" in out, out
    for args, words in ((["--all", "1"], b"not both"), ([], b"give PIDs"),
                        (["--listen", "nonsense", "1"], b"not ADDR:PORT"),
                        (["--listen", "127.0.0.1:http", "1"], b"not ADDR:PORT"),
                        (["x"], b"not a process id")):
        rc, _, err, _ = serve(*args)
        assert rc == 2 and words in err, (args, rc, err)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    try:
        rc, _, err, _ = serve("--listen", "127.0.0.1:%d" % s.getsockname()[1], "1")
    finally:
        s.close()
    assert rc == 2 and b"cannot listen on 127.0.0.1:" in err and b"in use" in err, (rc, err)
