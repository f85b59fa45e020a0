"""Benchmark target: N pending asyncio tasks, each awaiting an Event, in
chains of 10 (each task awaits the next), so the graph has edges too.
Prints "ready" once every task is suspended."""
import asyncio
import sys


async def leaf(event):
    await event.wait()


async def link(depth, event):
    if depth == 0:
        await leaf(event)
    else:
        await asyncio.create_task(link(depth - 1, event), name="link-%d" % depth)


async def main(n):
    event = asyncio.Event()
    for i in range(n // 10):
        asyncio.create_task(link(9, event), name="chain-%d" % i)
    await asyncio.sleep(0.5)
    print("ready", flush=True)
    await event.wait()


asyncio.run(main(int(sys.argv[1])))
