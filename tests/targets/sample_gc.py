# -*- coding: utf-8 -*-
"""For `pystack-dump sample`'s <GC> frames: the main thread makes cyclic
garbage and collects it (gc.collect()) in a loop, so the collector runs
a good share of the time.

Ground truth (written once the loop runs): base fields, "collect"
(code_info of collect_forever).

usage: sample_gc.py GROUND_TRUTH.json
"""
import gc
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _pyd_common import base_truth, code_info, fail, write_json  # noqa: E402


class Node(object):
    def __init__(self):
        self.me = self
        self.pad = [object() for _ in range(20)]


def collect_forever():
    written = False
    while True:
        for _ in range(10000):
            Node()
        gc.collect()
        if not written:
            doc = base_truth()
            doc["collect"] = code_info(collect_forever)
            write_json(sys.argv[1], doc)
            written = True


if __name__ == "__main__":
    try:
        collect_forever()
    except BaseException:
        import traceback
        fail("sample_gc raised:\n" + traceback.format_exc())
