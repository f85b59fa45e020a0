"""pystack-dump sample --push URL: each interval's profile sent to Grafana
Pyroscope's ingest API, checked by a receiver on loopback that holds each
request to what Pyroscope's server API reference documents: POST
/ingest?name=APP{k=v,...}&from=&until= (Unix seconds) &format=pprof
&sampleRate=&spyName=, the gzipped pprof as the raw body (which the real
pprof reads, tests/check_pprof.py), 2xx accepted.  Then what happens
when the server fails (500, then 200: sent again), refuses (400: not
sent again, said once), is not there (sampling goes on, the full queue
said once, exit 9) or is slow (sampling does not wait for it)."""

import gzip
import http.server
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import pytest

from harness.interps import REPO
from harness.procs import free_port, run, short
from harness.results import Result, settle
from harness.target import Target, tool_run
from test_greenlets import SUPPORTED_MINORS as greenlet_minors, start as greenlet_target

RATE = 1000
# A few interpreters for the failure paths, whose code does not depend on
# the target's version.
few = pytest.mark.interps(lambda i: i.label in ("pyenv-3.12", "sid-3.15"))
APP_CHARS = re.compile(r"^[A-Za-z0-9_.\-/]+$")
QUERY_FIELDS = {"name", "from", "until", "format", "sampleRate", "spyName"}


class Receiver:
    """An HTTP server on 127.0.0.1 (a free port) that records every
    request and answers them with codes in turn (the last one repeated),
    each after delay seconds."""

    def __init__(self, codes=(200,), delay=0.0):
        self.codes, self.delay, self.requests = list(codes), delay, []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def handle_any(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                i = len(outer.requests)
                outer.requests.append({"method": self.command, "path": self.path,
                                       "headers": dict(self.headers), "body": body,
                                       "at": time.time()})
                time.sleep(outer.delay)
                code = outer.codes[min(i, len(outer.codes) - 1)]
                self.send_response(code)
                self.send_header("Content-Length", "0" if code < 400 else "25")
                self.end_headers()
                if code >= 400:
                    self.wfile.write(b"invalid label set: x\nmore")

            do_POST = do_PUT = do_GET = handle_any

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def push(tool, pid, url, *more, timeout=60):
    """sample --push URL ... PID: (argv, rc, stderr text, seconds)."""
    argv, rc, out, err, secs = tool_run(
        tool, ["sample", "-r", str(RATE), "--push", url] + list(more) + [str(pid)],
        timeout=timeout)
    return " ".join(argv), rc, err.decode("utf-8", "replace"), secs


def query(req):
    """The request's query, one value a field."""
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(req["path"]).query,
                              keep_blank_values=True)
    return {k: v[0] for k, v in q.items()}


def process_app(pid):
    """The app name pushed by default: the process's argv[0], its last
    part, characters Pyroscope does not take made '_'."""
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        argv0 = f.read().split(b"\0")[0].decode()
    return re.sub(r"[^A-Za-z0-9_.\-/]", "_", os.path.basename(argv0))


def request_errors(req, name):
    """What in one request is not as the ingest API documents."""
    errs = []
    q = query(req)
    if req["method"] != "POST" or urllib.parse.urlsplit(req["path"]).path != "/ingest":
        errs.append("%s %s, want POST /ingest" % (req["method"], req["path"]))
    if set(q) != QUERY_FIELDS:
        errs.append("query fields %s, want %s" % (sorted(q), sorted(QUERY_FIELDS)))
    want = {"name": name, "format": "pprof", "spyName": "pystack-dump",
            "sampleRate": str(RATE)}
    errs += ["%s=%r, want %r" % (k, q.get(k), v) for k, v in want.items() if q.get(k) != v]
    if not (q.get("from", "").isdigit() and q.get("until", "").isdigit()):
        errs.append("from=%r until=%r: not Unix seconds" % (q.get("from"), q.get("until")))
    elif not 0 < int(q["until"]) - int(q["from"]) <= 2:
        errs.append("from=%s until=%s: not one 1 s interval" % (q["from"], q["until"]))
    ctype = req["headers"].get("Content-Type", "")
    if "multipart" in ctype or "form-urlencoded" in ctype:
        errs.append("Content-Type %r: the pprof goes as the raw body" % ctype)
    try:
        gzip.decompress(req["body"])
    except (OSError, EOFError) as e:
        errs.append("body of %d bytes is not gzip: %s" % (len(req["body"]), e))
    return errs


def pprof_errors(body, expect):
    """The real pprof reads the body (tests/check_pprof.py: -raw and
    -top), naming expect if given."""
    with tempfile.NamedTemporaryFile(suffix=".pb.gz") as f:
        f.write(body)
        f.flush()
        argv = [sys.executable, os.path.join(REPO, "tests", "check_pprof.py"), f.name] + \
            (["--expect", expect] if expect else [])
        rc, out, err, _ = run(argv, 300)
    return [] if rc == 0 else ["pprof on a pushed body: %s" % short(out + err, 1500)]


def consecutive_errors(reqs):
    """Each interval's from is the one before's until."""
    spans = [(int(query(r)["from"]), int(query(r)["until"])) for r in reqs]
    return ["intervals %s: not consecutive" % spans
            for a, b in zip(spans, spans[1:]) if b[0] != a[1]][:1]


def test_push(interp, tool, request):
    """Three and a half 1 s intervals: four POSTs as documented, their
    intervals consecutive and in the run's time, labels in the name, each
    body a gzipped pprof the real pprof reads, naming the hot function."""
    errs = []
    with Target(interp, "sample_split") as tg, Receiver() as rx:
        gt = tg.wait_ground_truth()
        started = time.time()
        cmd, rc, err, secs = push(tool, tg.pid, rx.url, "--every", "1", "-d", "3.5",
                                  "--labels", "env=test,run=r1.%s" % interp.minor[1])
        name = "%s{env=test,run=r1.%d}" % (process_app(tg.pid), interp.minor[1])
        reqs = rx.requests
        if rc != 0:
            errs.append("%s: exit %s: %s" % (cmd, rc, short(err)))
        if len(reqs) != 4:
            errs.append("%d requests, want 4 (3 whole intervals and the last half)"
                        % len(reqs))
        for r in reqs[:3]:
            errs += request_errors(r, name)
        if reqs:
            errs += consecutive_errors(reqs)
            first = int(query(reqs[0]).get("from") or 0)
            if abs(first - started) > 2:
                errs.append("first from=%d, the run started at %.1f" % (first, started))
            errs += pprof_errors(reqs[0]["body"], gt["hot"]["function"])
        if "pushed %d profiles" % len(reqs) not in err:
            errs.append("the summary does not say %d pushed: %s" % (len(reqs), short(err)))
    settle(Result("push", "FAIL" if errs else "PASS", "\n".join(errs),
                  info="%d requests" % len(rx.requests)), request.node)


@few
def test_push_retried(interp, tool, request):
    """A 500 is a server's trouble: the same profile is sent again, and
    everything gets there; the failure is said once.  -o writes each
    profile to a file as well."""
    errs = []
    with Target(interp, "sample_split") as tg, Receiver(codes=(500, 200)) as rx:
        tg.wait_ground_truth()
        cmd, rc, err, secs = push(tool, tg.pid, rx.url, "--every", "1", "-d", "2.5",
                                  "-o", os.path.join(tg.out_host, "p-%s.pb.gz"))
        reqs = rx.requests
        files = [f for f in os.listdir(tg.out_host) if f.startswith("p-")]
        if len(files) != len(reqs) - 1:
            errs.append("%d files written with -o, %d profiles pushed" % (len(files),
                                                                          len(reqs) - 1))
        if rc != 0:
            errs.append("%s: exit %s: %s" % (cmd, rc, short(err)))
        if len(reqs) < 2 or query(reqs[0]) != query(reqs[1]) or \
                reqs[0]["body"] != reqs[1]["body"]:
            errs.append("the profile answered 500 was not sent again as it was: %s"
                        % [r["path"] for r in reqs])
        elif len({query(r)["from"] for r in reqs}) != len(reqs) - 1:
            errs.append("profiles sent again after a 200: %s" % [r["path"] for r in reqs])
        if err.count("cannot push to") != 1 or "HTTP 500" not in err:
            errs.append("the 500 is not said once: %s" % short(err))
        if "pushed %d profiles" % (len(reqs) - 1) not in err or "1 sends retried" not in err:
            errs.append("summary: %s" % short(err))
    settle(Result("push retried", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)


@few
def test_push_refused(interp, tool, request):
    """A 400 is the request's fault: not sent again, said once with the
    reply's first line; the exit status is 9."""
    errs = []
    with Target(interp, "sample_split") as tg, Receiver(codes=(400,)) as rx:
        tg.wait_ground_truth()
        cmd, rc, err, secs = push(tool, tg.pid, rx.url, "--every", "1", "-d", "2.5")
        reqs = rx.requests
        if rc != 9:
            errs.append("%s: exit %s, want 9: %s" % (cmd, rc, short(err)))
        froms = [query(r)["from"] for r in reqs]
        if len(reqs) != 3 or len(set(froms)) != len(froms):
            errs.append("%d requests, from=%s: want 3 profiles, each once" % (len(reqs), froms))
        said = err.count("refused a profile: HTTP 400: invalid label set: x;")
        if said != 1 or "more" in err:
            errs.append("the refusal is said %d times, want once with the reply's first "
                        "line: %s" % (said, short(err)))
        if "%d refused" % len(reqs) not in err:
            errs.append("summary: %s" % short(err))
    settle(Result("push refused", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)


def rounds_per_second(err):
    m = re.search(r"\(([\d.]+) rounds/s\)", err)
    return float(m.group(1)) if m else 0.0


# A sampler held up by its sends would lose most of its rounds (a 2 s
# request every 0.5 s: three quarters); machine noise moves the rate far
# less than that, run to run.
KEPT_RATE = 0.5


def baseline_rate(tool, tg, every, secs):
    """Rounds per second of the same run writing files instead."""
    out = os.path.join(tg.out_host, "base-%s.pb.gz")
    argv, rc, _, err, _ = tool_run(tool, ["sample", "-r", str(RATE), "--every", every,
                                          "-d", secs, "-o", out, str(tg.pid)], timeout=60)
    return rounds_per_second(err.decode("utf-8", "replace"))


def rate_errors(err, base):
    got = rounds_per_second(err)
    return [] if got >= KEPT_RATE * base else \
        ["%.0f rounds/s with --push, %.0f writing files instead" % (got, base)]


@few
def test_push_unreachable(interp, tool, request):
    """No server: sampling goes on at its rate, the failure and the full
    queue are each said once, the flush at the end is bounded (5 s), and
    the exit status is 9."""
    errs = []
    with Target(interp, "sample_split") as tg:
        tg.wait_ground_truth()
        url = "http://127.0.0.1:%d" % free_port()
        base = baseline_rate(tool, tg, "0.2", "3")
        cmd, rc, err, secs = push(tool, tg.pid, url, "--every", "0.2", "-d", "3")
        if rc != 9:
            errs.append("%s: exit %s, want 9: %s" % (cmd, rc, short(err)))
        for what in ("cannot push to", "the push queue is full", "were not sent"):
            if err.count(what) != 1:
                errs.append("%r said %d times, want once" % (what, err.count(what)))
        errs += rate_errors(err, base)
        if secs > 3 + 5 + 3:
            errs.append("took %.1f s: the flush is not bounded" % secs)
        if "8 unsent at the end" not in err:
            errs.append("summary: %s" % short(err))
    settle(Result("push unreachable", "FAIL" if errs else "PASS", "\n".join(errs),
                  info="%.1f s" % secs), request.node)


@few
def test_push_slow_server(interp, tool, request):
    """A server that takes 2 s a request does not slow sampling down."""
    errs = []
    with Target(interp, "sample_split") as tg, Receiver(delay=2.0) as rx:
        tg.wait_ground_truth()
        base = baseline_rate(tool, tg, "0.5", "3")
        cmd, rc, err, secs = push(tool, tg.pid, rx.url, "--every", "0.5", "-d", "3")
        if rc not in (0, 9):
            errs.append("%s: exit %s: %s" % (cmd, rc, short(err)))
        errs += rate_errors(err, base)
        if not rx.requests:
            errs.append("nothing reached the server")
        if secs > 3 + 5 + 3:
            errs.append("took %.1f s: the flush is not bounded" % secs)
    settle(Result("push slow", "FAIL" if errs else "PASS", "\n".join(errs),
                  info="%.0f rounds/s" % rounds_per_second(err)), request.node)


@few
def test_push_interrupted(interp, tool, request):
    """Ctrl-C ends the run: the interval under way is pushed too (the
    flush at the end), and the exit status is 0."""
    errs = []
    with Target(interp, "sample_split") as tg, Receiver() as rx:
        tg.wait_ground_truth()
        argv = tool.cmd + ["sample", "-r", str(RATE), "--push", rx.url, "--every", "1",
                           str(tg.pid)]
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            time.sleep(2.5)
            p.send_signal(signal.SIGINT)
            err = p.communicate(timeout=20)[1].decode("utf-8", "replace")
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        if p.returncode != 0 or "interrupted" not in err:
            errs.append("%s, Ctrl-C after 2.5 s: exit %s: %s" % (" ".join(argv), p.returncode,
                                                                short(err)))
        if len(rx.requests) != 3 or "pushed 3 profiles" not in err:
            errs.append("%d requests, want 3 (two whole intervals and the one cut): %s"
                        % (len(rx.requests), short(err)))
    settle(Result("push interrupted", "FAIL" if errs else "PASS", "\n".join(errs)),
           request.node)


MODES = {"cpu": ("sample_cpu", "burn_cpu"), "gil": ("sample_gil", None),
         "async": ("sample_async", "burn_cpu"), "exception": ("sample_exception", None),
         "greenlet": ("greenlets", None)}


def mode_target(interp, mode):
    """The target of a mode; greenlets where --greenlets reads them."""
    if mode != "greenlet":
        return Target(interp, MODES[mode][0])
    if interp.minor not in greenlet_minors:
        pytest.skip("-m greenlet: CPython %d.%d's greenlets are not read" % interp.minor)
    return greenlet_target(interp)


@few
@pytest.mark.parametrize("mode", sorted(MODES))
def test_push_modes(interp, tool, mode, request):
    """--push in the other sampling modes: pprof the real pprof reads."""
    hot = MODES[mode][1]
    errs = []
    with mode_target(interp, mode) as tg, Receiver() as rx:
        tg.wait_ground_truth()
        cmd, rc, err, secs = push(tool, tg.pid, rx.url, "-m", mode, "--every", "1",
                                  "-d", "1.5")
        if rc != 0:
            errs.append("%s: exit %s: %s" % (cmd, rc, short(err)))
        if not rx.requests:
            errs.append("nothing pushed")
        else:
            errs += request_errors(rx.requests[0], query(rx.requests[0]).get("name"))
            errs += pprof_errors(rx.requests[0]["body"], hot)
    settle(Result("push " + mode, "FAIL" if errs else "PASS", "\n".join(errs)), request.node)


BAD = [(["--labels", "env"], "--labels 'env'"),
       (["--labels", "a=1,b-c=2"], "--labels 'b-c=2'"),
       (["--labels", "__name__=x"], "--labels '__name__=x'"),
       (["--labels", "a=x y"], "--labels 'a=x y'"),
       (["--app", "my app"], "--app 'my app'"),
       (["-f", "json"], "--push sends pprof"),
       (["-o", "x.html"], "--push sends pprof"),
       (["-n", "5"], "not with -n")]


@pytest.mark.parametrize("args,said", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_push_usage(tool, args, said, request):
    """A bad label, app name or format is a usage error (2) naming it,
    before anything is read."""
    argv, rc, out, err, _ = tool_run(tool, ["sample", "--push", "http://127.0.0.1:9"]
                                     + args + ["1"])
    text = err.decode("utf-8", "replace")
    errs = [] if rc == 2 and said in text else \
        ["%s: exit %s, want 2 saying %r: %s" % (" ".join(argv), rc, said, short(err))]
    for url in ("ftp://h", "h:4040", "http://h/?a=1"):
        argv, rc, out, err, _ = tool_run(tool, ["sample", "--push", url, "1"])
        if rc != 2 or b"--push" not in err:
            errs.append("%s: exit %s, want 2: %s" % (" ".join(argv), rc, short(err)))
    settle(Result("push usage", "FAIL" if errs else "PASS", "\n".join(errs)), request.node)
