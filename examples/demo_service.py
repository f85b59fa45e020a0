"""A small service to point pystack-dump at: a few worker threads blocked in
different ways, one busy rendering reports, and an asyncio event loop with
tasks awaiting each other."""
import asyncio
import threading
import time

lock = threading.Lock()
ready = threading.Event()


def hold_lock_forever():
    with lock:
        ready.set()
        time.sleep(3600)


def wait_for_lock():
    ready.wait()
    with lock:
        pass


class Poller:
    def poll(self):
        while True:
            time.sleep(0.5)


def format_row(i):
    return "%08d|%s" % (i, str(i * i))


def checksum(rows):
    return sum(len(r) for r in rows)


def render_reports():
    while True:
        rows = [format_row(i) for i in range(2000)]
        checksum(rows)
        time.sleep(0.001)


async def fetch(name, delay):
    await asyncio.sleep(delay)
    return name


async def handle_request(n):
    results = await asyncio.gather(fetch("db-%d" % n, 3600), fetch("cache-%d" % n, 3600))
    return results


async def main():
    print("demo service running, pid", __import__("os").getpid(), flush=True)
    await asyncio.gather(*(handle_request(n) for n in range(3)))


for target, name in ((hold_lock_forever, "lock-holder"), (wait_for_lock, "lock-waiter"),
                     (Poller().poll, "poller"), (render_reports, "renderer")):
    threading.Thread(target=target, name=name, daemon=True).start()
asyncio.run(main())
