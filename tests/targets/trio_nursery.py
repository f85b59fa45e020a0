# -*- coding: utf-8 -*-
"""An event loop that is not asyncio: trio, with three tasks sleeping in
a nursery.  --tasks finds no asyncio task and must say what runs
instead.  Needs trio (Debian's python3-trio, for the host's 3.11).

Ground truth (once the three tasks sleep): base fields, "loop": "trio",
"tasks": 3.

usage: trio_nursery.py GROUND_TRUTH.json
"""
import os
import sys

import trio

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import base_truth, wait_workers, write_json  # noqa: E402

TASKS = 3


async def child(started):
    started.release()
    await trio.sleep(1e6)


async def main():
    started = trio.Semaphore(0, max_value=TASKS)
    async with trio.open_nursery() as nursery:
        for _ in range(TASKS):
            nursery.start_soon(child, started)
        for _ in range(TASKS):
            await started.acquire()
        doc = base_truth()
        doc.update({"loop": "trio", "tasks": TASKS})
        write_json(sys.argv[1], doc)


if __name__ == "__main__":
    wait_workers()
    trio.run(main)
