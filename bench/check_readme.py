#!/usr/bin/env python3
"""Are the README's performance figures the ones the benches wrote?

A figure is tied to a result file by a marker right after it (emphasis
and spaces between are allowed, nothing else):

    10,000 tasks decode in 95 ms<!-- bench:bench_tasks.json:rows[10000 tasks].pystack_dump_ms -->

The marker names a file of bench/results/ and a row of it, by its "id"
(or its index), and a field.  The figure is the number just before the
marker, with its unit: "4.2x", "51 ms", "0.88 ms", "661k" (k: thousands,
M: millions), "2,916 KiB".  It matches when the file's value, rounded
to the digits the README shows, is that number.

Lists every tied figure and what its file says; exits 1 if one differs
or names a row or field its file does not have.  A file that does not
exist yet is "not measured yet": a warning, not a failure.  Warns too
about figures outside code that look like benchmark figures (a ratio
"4.2x", a time "12 ms", a rate "120k/s") but carry no marker.

With --fix, a figure that differs is rewritten in place to its file's
value, in the same unit and digits: after a bench run, the README takes
its figures (the prose around them is still for a person to check).

Usage: bench/check_readme.py [--readme README.md] [--results bench/results] [-q] [--fix]
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

MARKER = re.compile(r"<!--\s*bench:([\w.-]+\.json):(.*?)\s*-->")
PATH = re.compile(r"rows\[([^\]]+)\]\.(\w+)$")
# the figure just before a marker: a number and its unit
TIED = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s?([kM]?(?:x|×|ms|µs|s|MB|KiB|MiB|%|/s)?)$")
# what looks like a benchmark figure (a range counts as one)
LOOKS = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:-\d[\d,]*(?:\.\d+)?)?"
                   r"(?:\s?(?:x|×|ms|µs)|k/s|k samples/s)(?!\w)")


def lookup(doc, path):
    """The value PATH (rows[ID].FIELD, ID a row's "id" or index) names in
    DOC, or raise KeyError saying what is missing."""
    m = PATH.match(path)
    if not m:
        raise KeyError("not rows[ID].FIELD: %r" % path)
    sel, field = m.groups()
    rows = doc.get("rows", [])
    row = (rows[int(sel)] if sel.isdigit() and int(sel) < len(rows)
           else next((r for r in rows if r.get("id") == sel), None))
    if row is None:
        raise KeyError("no row %r" % sel)
    if not isinstance(row.get(field), (int, float)) or isinstance(row.get(field), bool):
        raise KeyError("row %r has no number %r" % (sel, field))
    return row[field]


def scale_digits(shown, unit):
    """The README's unit scale and the digits it shows after the point."""
    scale = 1e3 if unit.startswith("k") else 1e6 if unit in ("M", "M/s") else 1.0
    return scale, len(shown.split(".")[1]) if "." in shown else 0


def matches(shown, unit, value):
    """Is VALUE, in the README's unit and rounded to its digits, SHOWN?"""
    scale, digits = scale_digits(shown, unit)
    return abs(value / scale - float(shown.replace(",", ""))) <= 0.5 * 10 ** -digits + 1e-9


def written_as(shown, unit, value):
    """VALUE written the way SHOWN is: its unit's scale, its digits, and
    thousands commas if it has them."""
    scale, digits = scale_digits(shown, unit)
    return (("{:,.%df}" if "," in shown else "{:.%df}") % digits).format(value / scale)


def prose_lines(text):
    """(line number, line) of the README outside fenced code, inline code
    blanked out (same length, so columns stay)."""
    fenced = False
    for n, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield n, re.sub(r"`[^`]*`", lambda m: " " * len(m.group()), line)


def check(readme, results, fix=False):
    """([(line, figure, where, value, status)], [(line, figure)] untied);
    status is ok, DIFFERS, BAD KEY or not measured yet.  With fix, a
    figure that differs is rewritten to its file's value (status FIXED)."""
    tied, untied, docs, fixes = [], [], {}, []
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    for n, line in prose_lines(text):
        for m in MARKER.finditer(line):
            fname, path = m.groups()
            before = line[:m.start()].rstrip(" *")
            fm = TIED.search(before)
            where = "%s %s" % (fname, path)
            if not fm or re.search(r"\d-$", before[:fm.start()]):
                tied.append((n, before[-20:].strip(), where, None,
                             "BAD KEY (no single figure before the marker)"))
                continue
            figure = fm.group(0)
            file = os.path.join(results, fname)
            if fname not in docs:
                docs[fname] = None
                if os.path.exists(file):
                    with open(file) as f:
                        docs[fname] = json.load(f)
            if docs[fname] is None:
                tied.append((n, figure, where, None, "not measured yet"))
                continue
            try:
                value = lookup(docs[fname], path)
            except KeyError as e:
                tied.append((n, figure, where, None, "BAD KEY (%s)" % e.args[0]))
                continue
            ok = matches(fm.group(1), fm.group(2), value)
            if not ok and fix:
                # The prose line is the README's, inline code blanked
                # out at the same columns: fm's are the README line's.
                new = written_as(fm.group(1), fm.group(2), value)
                fixes.append((n - 1, fm.start(1), fm.end(1), new))
            tied.append((n, figure, where, value,
                         "ok" if ok else "FIXED" if fix else "DIFFERS"))
        for m in LOOKS.finditer(line):
            rest = line[m.end():].lstrip(" *")
            if not MARKER.match(rest) and m.group() != "0x":
                untied.append((n, m.group()))
    for i, start, end, new in reversed(fixes):
        lines[i] = lines[i][:start] + new + lines[i][end:]
    if fixes:
        with open(readme, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
    return tied, untied


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("-q", "--quiet", action="store_true", help="do not list untied figures")
    ap.add_argument("--fix", action="store_true",
                    help="rewrite each figure that differs to its file's value")
    a = ap.parse_args()
    tied, untied = check(a.readme, a.results, a.fix)
    name = os.path.basename(a.readme)
    bad = 0
    for n, figure, where, value, status in tied:
        bad += status in ("DIFFERS",) or status.startswith("BAD KEY")
        print("%s:%d: %s <- %s%s: %s" % (name, n, figure, where,
                                          "" if value is None else " = %r" % value, status))
    if not a.quiet:
        for n, figure in untied:
            print("warning: %s:%d: %s: not tied to a result file" % (name, n, figure))
    unmeasured = sum(1 for t in tied if t[4] == "not measured yet")
    fixed = sum(1 for t in tied if t[4] == "FIXED")
    print("%d figures tied: %d ok, %d wrong, %d fixed, %d not measured yet; %d untied"
          % (len(tied), len(tied) - bad - unmeasured - fixed, bad, fixed, unmeasured,
             len(untied)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
