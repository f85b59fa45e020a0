#!/usr/bin/env python3
"""Load a heat map page in headless Chromium and report what it shows.

    python3 tests/check_heatmap.py FILE.html [--screenshot OUT.png]

Fails (exit 1) on any console error, uncaught exception or network
request other than the file itself (check_flamegraph.py's browser), or if
the page lists no file.  Otherwise prints, as JSON: "files" ([file, total,
own, text readable] each, hottest first) and "hottest" (per file, its line
with the most own samples: [line, own, total, text or null]), after
opening every file's section; and "rows", the counted rows drawn.
"""
import argparse
import base64
import json
import os
import pathlib
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_flamegraph import CHROMIUM, DEADLINE_S, Browser, Failure, Page  # noqa: E402


def inspect(page):
    if not page.eval("typeof window.pydHeat === 'object'"):
        raise Failure("the page did not set up window.pydHeat")
    files = page.eval("pydHeat.files()")
    if not files:
        raise Failure("the page lists no file")
    rows = 0
    hottest = []
    for i in range(len(files)):
        page.eval("pydHeat.open(%d)" % i)
        rows += page.eval("pydHeat.rows(%d)" % i)
        hottest.append(page.eval("pydHeat.hottest(%d)" % i))
    page.eval("document.getElementById('only').click()")
    page.eval("document.getElementById('only').click()")
    # The hottest file's source in view, for the screenshot.
    page.eval("document.getElementById('file-0').scrollIntoView()")
    page.eval("window.scrollBy(0, -90)")
    page.frame()
    return {"files": files, "hottest": hottest, "rows": rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--screenshot", metavar="OUT.png")
    args = ap.parse_args()
    if not os.path.isfile(args.file):
        sys.exit("check_heatmap: no such file: " + args.file)
    if not os.access(CHROMIUM, os.X_OK):
        sys.exit("check_heatmap: no chromium at " + CHROMIUM)
    url = pathlib.Path(os.path.abspath(args.file)).as_uri()
    browser = Browser(time.monotonic() + DEADLINE_S)
    page = Page(browser, url)
    shown = None
    try:
        page.open()
        shown = inspect(page)
        page.drain(0.2)
        if args.screenshot:
            png = browser.send("Page.captureScreenshot", {"format": "png"})
            with open(args.screenshot, "wb") as f:
                f.write(base64.b64decode(png["data"]))
    except Failure as e:
        page.problems.append(str(e))
    finally:
        browser.close()
    if page.problems:
        for p in page.problems:
            print("check_heatmap: FAIL: " + p, file=sys.stderr)
        sys.exit(1)
    print(json.dumps(shown))


if __name__ == "__main__":
    main()
