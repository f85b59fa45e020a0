#!/usr/bin/python3
"""Where a suite's time went, file by file: python3 tests/file_times.py
JUNIT.xml (pytest --junitxml).  Seconds are summed over the tests of
each file as the workers spent them (setup, call and teardown), so with
3 workers they add up to about 3 times the wall time; the share column
is what a developer cuts by speeding a file up."""

import collections
import sys
import xml.etree.ElementTree as ET


def file_times(path):
    secs, count = collections.Counter(), collections.Counter()
    for case in ET.parse(path).iter("testcase"):
        parts = case.get("classname", "").split(".")
        name = next((p for p in parts if p.startswith("test_")), parts[-1]) + ".py"
        secs[name] += float(case.get("time") or 0)
        count[name] += 1
    return secs, count


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: tests/file_times.py JUNIT.xml")
    secs, count = file_times(argv[1])
    total = sum(secs.values()) or 1.0
    print("  %-32s %6s %8s %6s" % ("file", "tests", "seconds", "share"))
    for name, s in secs.most_common():
        print("  %-32s %6d %8.0f %5.1f%%" % (name, count[name], s, 100 * s / total))
    print("  %-32s %6d %8.0f" % ("all", sum(count.values()), total))


if __name__ == "__main__":
    main(sys.argv)
