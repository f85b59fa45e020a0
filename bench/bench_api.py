#!/usr/bin/env python3
"""What a call of the Python API costs now that it runs the pystack-dump
command (a subprocess per call, its JSON parsed), against the in-process C
extension it replaced (python/_native.c, removed in the commit after
9010513), side by side on the same targets: dump(pid) of a small target
(a main thread and 4 sleeping threads), tasks(pid) of an asyncio target
(20 tasks), and a Sampler run for 1 s at 1,000 Hz (the time from
Sampler() to profile() returned, and the samples it got).  Each API runs
in a Python process of its own, alternately, ROUNDS times; medians.

The old API is a build directory's python/ of a checkout that still has
the extension (git worktree add OLD 9010513; tools/build.sh OLD/build):

    bench/bench_api.py --old OLD/build/python [--build build] [--exe PATH]

--exe: the pystack-dump the new API runs (default build-static's, the
static one a wheel holds, else the build's).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from common import ROOT, record, tool_path

SMALL = """import threading, time
def nap():
    time.sleep(600)
for i in range(4):
    threading.Thread(target=nap, daemon=True, name="t%d" % i).start()
print("ready", flush=True)
nap()
"""

TASKS = """import asyncio
async def leaf(n):
    await asyncio.sleep(600)
async def main():
    tasks = [asyncio.create_task(leaf(i), name="leaf%d" % i) for i in range(20)]
    print("ready", flush=True)
    await asyncio.gather(*tasks)
asyncio.run(main())
"""

# Run in the measuring process: N calls of each kind; per call ms.
WORKER = """import json, sys, time, warnings
sys.path.insert(0, sys.argv[1])
import pystack_dump
small, tasks, n = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
warnings.simplefilter("ignore")
out = {}
for name, call in (("dump", lambda: pystack_dump.dump(small)),
                   ("tasks", lambda: pystack_dump.tasks(tasks))):
    call()                                  # imports, page cache
    t0 = time.perf_counter()
    for _ in range(n):
        call()
    out[name] = (time.perf_counter() - t0) * 1e3 / n
t0 = time.perf_counter()
with pystack_dump.Sampler(small, rate=1000) as s:
    time.sleep(1.0)
prof = s.profile()
out["sampler"] = (time.perf_counter() - t0) * 1e3
out["samples"] = prof["samples"]
print(json.dumps(out))
"""


def start(code):
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    if p.stdout.readline().strip() != b"ready":
        p.kill()
        sys.exit("target did not start")
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="build/python of a checkout with _native")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--exe", default=None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=100)
    a = ap.parse_args()
    exe = a.exe or next(p for p in (tool_path(os.path.join(ROOT, "build-static")),
                                    tool_path(a.build)) if os.access(p, os.X_OK))
    apis = {"extension (in-process)": (a.old, {}),
            "command (subprocess)": (os.path.join(a.build, "python"),
                                     {"PYSTACK_DUMP": exe})}
    small, tasks = start(SMALL), start(TASKS)
    time.sleep(0.3)
    got = {name: [] for name in apis}
    try:
        for _ in range(a.rounds):
            for name, (where, env) in apis.items():
                r = subprocess.run([sys.executable, "-c", WORKER, where, str(small.pid),
                                    str(tasks.pid), str(a.calls)], stdout=subprocess.PIPE,
                                   env=dict(os.environ, **env), check=True)
                got[name].append(json.loads(r.stdout))
    finally:
        for p in (small, tasks):
            p.kill()
            p.wait()
    print("Python %s; new API runs %s; %d rounds of %d calls, medians"
          % (sys.version.split()[0], exe, a.rounds, a.calls))
    print("| | %s |" % " | ".join(apis))
    print("|---|" + "---|" * len(apis))
    figures = []
    for key, label in (("dump", "dump(pid), 5 threads, ms/call"),
                       ("tasks", "tasks(pid), 20 tasks, ms/call"),
                       ("sampler", "Sampler, 1 s at 1,000 Hz, ms to profile()"),
                       ("samples", "... samples it got")):
        med = dict((name, statistics.median(r[key] for r in got[name])) for name in apis)
        print("| %s | %s |" % (label, " | ".join(
            ("%.0f" if key == "samples" else "%.2f") % med[name] for name in apis)))
        figures.append({"id": key, "what": label, "extension": med["extension (in-process)"],
                        "command": med["command (subprocess)"]})
    record("bench_api", figures, tool=exe, interpreters=[sys.executable + " " + sys.version.split()[0]])


if __name__ == "__main__":
    main()
