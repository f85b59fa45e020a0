#!/usr/bin/env python3
"""Load a flame graph page in headless Chromium and check that it works.

    python3 tests/check_flamegraph.py FILE.html [--expect NAME ...]
                                      [--screenshot OUT.png]

Talks to Chromium over the DevTools protocol on a pipe (stdlib only).
Fails (exit 1) on any console error, uncaught exception or network
request other than the file itself, if the page draws nothing, or if an
--expect name is not among the frames drawn (after zooming into it when
it is too narrow to draw at full view).  It also drives the page: search,
zoom, back, reset and a hover.  Everything is under one deadline, so it
never hangs.
"""
import argparse
import base64
import json
import os
import pathlib
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
DEADLINE_S = 45


class Failure(Exception):
    pass


class Browser:
    """Chromium with --remote-debugging-pipe: messages are JSON, each
    ended by a NUL, written to its fd 3 and read from its fd 4."""

    def __init__(self, deadline):
        self.deadline = deadline
        self.profile = tempfile.mkdtemp(prefix="pyd-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def child_fds():
            # Through fresh descriptors: either end may already be 3 or 4.
            r, w = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-extensions",
             "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
             "--window-size=1280,900", "--user-data-dir=" + self.profile,
             "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, preexec_fn=child_fds,
            close_fds=False, start_new_session=True)
        os.close(to_child_r)
        os.close(from_child_w)
        self.events = queue.Queue()
        self.replies = {}
        self.cond = threading.Condition()
        self.next_id = 0
        self.session = None
        threading.Thread(target=self._reader, daemon=True).start()

    def _reader(self):
        pending = b""
        while True:
            try:
                chunk = os.read(self._from_child, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self.cond:
                    self.replies[None] = "closed"
                    self.cond.notify_all()
                self.events.put(None)
                return
            pending += chunk
            *messages, pending = pending.split(b"\0")
            for raw in messages:
                msg = json.loads(raw)
                if "id" in msg:
                    with self.cond:
                        self.replies[msg["id"]] = msg
                        self.cond.notify_all()
                else:
                    self.events.put(msg)

    def left(self):
        return self.deadline - time.monotonic()

    def send(self, method, params=None, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        with self.cond:
            while self.next_id not in self.replies:
                if None in self.replies:
                    raise Failure("chromium exited during " + method)
                if self.left() <= 0:
                    raise Failure("timed out waiting for " + method)
                self.cond.wait(min(self.left(), 1))
            reply = self.replies.pop(self.next_id)
        if "error" in reply:
            raise Failure("%s: %s" % (method, reply["error"]))
        return reply["result"]

    def event(self, timeout):
        try:
            return self.events.get(timeout=max(0.01, min(timeout,
                                                         self.left())))
        except queue.Empty:
            return None

    def close(self):
        try:
            if self.proc.poll() is None:
                self.send("Browser.close", session=False)
                self.proc.wait(timeout=5)
        except (Failure, OSError, subprocess.TimeoutExpired):
            pass
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, browser, url):
        self.b = browser
        self.url = url
        self.problems = []

    def note(self, msg):
        """Record what the page did wrong; None: the browser went away."""
        if msg is None:
            self.problems.append("chromium exited")
            return
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            text = d.get("exception", {}).get("description") or d["text"]
            self.problems.append("uncaught exception: " + text)
        elif method == "Runtime.consoleAPICalled" and \
                p["type"] in ("error", "assert"):
            args = " ".join(str(a.get("value", a.get("description", "")))
                            for a in p["args"])
            self.problems.append("console.%s: %s" % (p["type"], args))
        elif method == "Log.entryAdded" and p["entry"]["level"] == "error":
            self.problems.append("console error: " + p["entry"]["text"])
        elif method == "Network.requestWillBeSent":
            url = p["request"]["url"]
            if url != self.url and not url.startswith("data:"):
                self.problems.append("network request: " + url)

    def drain(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            msg = self.b.event(end - time.monotonic())
            if msg is not None:
                self.note(msg)
            elif not self.b.events.empty():
                continue
            elif self.b.proc.poll() is not None:
                self.note(None)
                return

    def open(self):
        target = self.b.send("Target.createTarget", {"url": "about:blank"},
                             session=False)
        self.b.session = self.b.send(
            "Target.attachToTarget",
            {"targetId": target["targetId"], "flatten": True},
            session=False)["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.b.send(domain + ".enable")
        self.b.send("Page.navigate", {"url": self.url})
        while True:
            msg = self.b.event(1)
            if self.b.left() <= 0:
                raise Failure("timed out loading the page")
            if msg is None and self.b.proc.poll() is not None:
                raise Failure("chromium exited while loading the page")
            if msg is None:
                continue
            if msg.get("method") == "Page.loadEventFired":
                break
            self.note(msg)
        self.drain(0.3)

    def eval(self, expr):
        r = self.b.send("Runtime.evaluate", {
            "expression": expr, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise Failure("evaluating %s: %s" % (
                expr, d.get("exception", {}).get("description", d["text"])))
        return r["result"].get("value")

    def frame(self):
        """Let the page draw what it was told to."""
        self.eval("new Promise(r => requestAnimationFrame(() => r(0)))")

    def mouse(self, kind, x, y):
        self.b.send("Input.dispatchMouseEvent", {
            "type": kind, "x": x, "y": y, "button": "left",
            "clickCount": 1 if kind != "mouseMoved" else 0})


def exercise(page, expect):
    """Drive the page; return (frames drawn at full view, names not found)."""
    if not page.eval("typeof window.pydFlame === 'object'"):
        raise Failure("the page did not set up window.pydFlame")
    page.frame()
    drawn = page.eval("pydFlame.drawnNames()")
    if not drawn:
        raise Failure("the page drew no frames")
    labels = set(drawn) | set(page.eval("pydFlame.drawnLabels()"))
    missing = []
    for name in expect:
        if name in labels:
            continue
        # Too narrow at full view: the frame must draw once zoomed into.
        node = page.eval("pydFlame.find(%s)" % json.dumps(name))
        if node < 0:
            missing.append(name)
            continue
        page.eval("pydFlame.zoom(%d)" % node)
        page.frame()
        if name not in page.eval("pydFlame.drawnNames()"):
            missing.append(name)
        page.eval("pydFlame.reset()")
    # Hover over the middle of the second row (a thread, or the first
    # frames), click it, go back; search and clear the search.
    box = page.eval("(() => { const r = document.getElementById('canvas')"
                    ".getBoundingClientRect(); return [r.left, r.top, "
                    "r.width, r.height]; })()")
    x, y = box[0] + box[2] / 2, box[1] + 18 + 9
    page.mouse("mouseMoved", x, y)
    page.frame()
    if page.eval("document.getElementById('tip').hidden"):
        raise Failure("no tooltip when hovering over a frame")
    page.mouse("mousePressed", x, y)
    page.mouse("mouseReleased", x, y)
    page.frame()
    page.eval("pydFlame.back()")
    page.eval("pydFlame.search(%s)" % json.dumps(expect[0] if expect
                                                 else drawn[-1]))
    matched = page.eval("document.getElementById('matched').textContent")
    if not matched.startswith("Matched:"):
        raise Failure("search shows no matched share: %r" % matched)
    page.eval("pydFlame.search('')")
    page.eval("pydFlame.reset()")
    # Scrolled to the bottom, the deepest rows must draw.
    page.eval("document.getElementById('chart').scrollTop = 1e9")
    page.frame()
    page.frame()
    if not page.eval("pydFlame.drawnNames().length"):
        raise Failure("nothing drawn when scrolled to the bottom")
    page.eval("document.getElementById('chart').scrollTop = 0")
    page.frame()
    page.frame()
    # Leave a tooltip up for the screenshot.
    page.mouse("mouseMoved", box[0] + box[2] / 3, box[1] + 2 * 18 + 9)
    page.frame()
    return page.eval("pydFlame.drawnNames().length"), missing


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--expect", action="append", default=[],
                    metavar="NAME", help="a frame name that must be drawn")
    ap.add_argument("--screenshot", metavar="OUT.png")
    args = ap.parse_args()
    if not os.path.isfile(args.file):
        sys.exit("check_flamegraph: no such file: " + args.file)
    if not os.access(CHROMIUM, os.X_OK):
        sys.exit("check_flamegraph: no chromium at " + CHROMIUM)
    url = pathlib.Path(os.path.abspath(args.file)).as_uri()
    ndrawn, missing, title = 0, [], ""
    browser = Browser(time.monotonic() + DEADLINE_S)
    page = Page(browser, url)
    try:
        page.open()
        ndrawn, missing = exercise(page, args.expect)
        page.drain(0.2)
        if args.screenshot:
            png = browser.send("Page.captureScreenshot", {"format": "png"})
            with open(args.screenshot, "wb") as f:
                f.write(base64.b64decode(png["data"]))
        title = page.eval("document.getElementById('meta').textContent")
    except Failure as e:
        page.problems.append(str(e))
    finally:
        browser.close()
    if not page.problems and missing:
        page.problems.append("not drawn: " + ", ".join(missing))
    if page.problems:
        for p in page.problems:
            print("check_flamegraph: FAIL: " + p, file=sys.stderr)
        sys.exit(1)
    print("check_flamegraph: OK %s: %d frames drawn, %d expected found%s; %s"
          % (args.file, ndrawn, len(args.expect),
             ", screenshot " + args.screenshot if args.screenshot else "",
             title))


if __name__ == "__main__":
    main()
