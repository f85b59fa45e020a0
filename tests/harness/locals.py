"""Checks of pystack-dump --locals: each frame's arguments and locals
against the reprs the target recorded itself (tests/targets/_pyd_vars.py);
and of the debuggers' frame commands (py-up ... py-print)."""

import importlib.util
import os

from .dumps import compare
from .interps import TARGETS_DIR


def vars_schema_errors(doc):
    """Every frame has "arguments" and "locals": an object of name -> str,
    or null; the document says whether the budget ran out."""
    errs = []
    if not isinstance(doc.get("locals_budget_spent"), bool):
        errs.append("locals_budget_spent missing or not a bool")
    for t in doc.get("threads", []):
        for j, fr in enumerate(t.get("frames", [])):
            for k in ("arguments", "locals"):
                v = fr.get(k, "missing")
                if v is None:
                    continue
                if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
                    errs.append("thread %s frame %d: %s is %r, not an object of strs"
                                % (t.get("tid"), j, k, v))
    return errs


def compare_vars(gt, doc):
    """Each frame's variables, in order, as the ground truth has them."""
    errs = vars_schema_errors(doc)
    got = dict((t["tid"], t) for t in doc.get("threads", []))
    for t in gt["threads"]:
        g = got.get(t["tid"])
        if g is None:
            continue                    # compare() reports the thread
        for j, (ef, gf) in enumerate(zip(t["frames"], g["frames"])):
            where = "thread %r frame %d (%s)" % (t["name"], j, ef["function"])
            for k in ("arguments", "locals"):
                exp = [tuple(x) for x in ef[k]]
                have = gf.get(k)
                if have is None:
                    errs.append("%s: %s unreadable, expected %s" % (where, k, exp))
                    continue
                have = list(have.items())
                if have == exp:
                    continue
                names_e, names_h = [n for n, _ in exp], [n for n, _ in have]
                if names_e != names_h:
                    errs.append("%s: %s names %s, expected %s" % (where, k, names_h, names_e))
                for (n, e), (_, h) in zip(exp, have):
                    if e != h and names_e == names_h:
                        errs.append("%s: %s = %s, expected %s" % (where, n, h, e))
    return errs


def check_locals_doc(gt, doc, interp, pid):
    """The frames (compare) and their variables."""
    return compare(gt, doc, interp, pid) + compare_vars(gt, doc)


# The frame commands of both debuggers on the locals target's main thread
# (selected when a debugger attaches): main() is #0, <module> #1.
FRAME_COMMANDS = ["py-frame", "py-locals", "py-print req", "py-print Request",
                  "py-print len", "py-print nope", "py-print deep", "py-print wide",
                  "py-print ring",
                  "py-up", "py-list", "py-up 5", "py-down", "py-down 3"]
# The native frame is looked at right after the first py-up (it selects
# the one running that Python frame): FRAME_COMMANDS[:UP] come before.
UP = FRAME_COMMANDS.index("py-up") + 1
# py-print's limits (PYD_REPR_DEEP) and its cap on the text (commands.c)
PRINT_LIMITS = (1000, 100, 5)
PRINT_MAX_TEXT = 64 << 10


# What test_gdb.py and test_lldb.py check of them, live and on a core.
DEBUGGER_CHECKS = (["py-bt -l (live)", "py-bt full (live)", "py-bt all -l (live)"]
                   + ["%s (live)" % c for c in FRAME_COMMANDS]
                   + ["py-up selects the eval loop (live)", "py-bt all -l (core)"]
                   + ["%s (core)" % c for c in FRAME_COMMANDS])


def core_host_file(path):
    """Where a core's file is here: only where it says (no /proc root)."""
    return path if os.path.exists(path) else None


def source_of(path, line):
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()[line - 1].strip()
    except (OSError, IndexError):
        return None


def frame_text(fr, level, host_file):
    """py-frame's text for frame fr of the ground truth at level."""
    src = source_of(host_file, fr["line"])
    out = '#%d File "%s", line %d, in %s\n' % (level, fr["file"], fr["line"],
                                               fr["qualname"] or fr["function"])
    return out + ("    %s\n" % src if src else "")


def print_reprs():
    """py-print's reprs of the target's deep, wide and ring (print_values() of
    tests/targets/_pyd_vars.py): its renderer, loaded apart, under
    py-print's limits, the text cut where py-print cuts it."""
    spec = importlib.util.spec_from_file_location(
        "_pyd_vars_print", os.path.join(TARGETS_DIR, "_pyd_vars.py"))
    pv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pv)
    pv.STRING, pv.ITEMS, pv.DEPTH = PRINT_LIMITS
    out = []
    for v in pv.print_values():
        r = pv.brepr(v)
        out.append(r if len(r) <= PRINT_MAX_TEXT else r[:PRINT_MAX_TEXT - 3] + "...")
    return out


def frame_expectations(gt, host_file):
    """{command: (how, text)} for FRAME_COMMANDS: how is "equal" or
    "prefix"; host_file(path) is where the target's file is here (None:
    the debugger cannot read it, as from a core of a chroot)."""
    main = [t for t in gt["threads"] if t["main"]][0]["frames"]
    f0, f1 = main[0], main[1]
    hf0, hf1 = host_file(f0["file"]), host_file(f1["file"])
    vars0 = "".join("    %s:\n%s" % (head, "".join("      %s = %s\n" % (n, r) for n, r in f0[k]))
                    for head, k in (("Arguments", "arguments"), ("Locals", "locals")) if f0[k])
    req = dict(f0["locals"])["req"]
    deep, wide, ring = print_reprs()
    exp = {
        "py-frame": ("equal", frame_text(f0, 0, hf0)),
        "py-locals": ("equal", frame_text(f0, 0, hf0) + vars0),
        "py-print req": ("equal", "local req = %s: path='/main', me=%s>\n" % (req[:-1], req)),
        "py-print Request": ("prefix", "global Request = <type object at 0x"),
        "py-print len": ("prefix", "builtin len = <builtin_function_or_method object at 0x"),
        "py-print nope": ("equal", "py-print: 'nope' is not a local, global or builtin "
                                   "name of #0 (main)\n"),
        "py-print deep": ("equal", "local deep = %s\n" % deep),
        "py-print wide": ("equal", "local wide = %s\n" % wide),
        "py-print ring": ("equal", "local ring = %s\n" % ring),
        "py-up": ("equal", frame_text(f1, 1, hf1)),
        "py-up 5": ("equal", "py-up: #1 is the outermost Python frame\n"),
        "py-down": ("equal", frame_text(f0, 0, hf0)),
        "py-down 3": ("equal", "py-down: #0 is the innermost Python frame\n"),
    }
    src = source_of(hf1, f1["line"]) if hf1 else None
    exp["py-list"] = (("prefix", None) if src is None else
                      ("contains", "->%5d  %s" % (f1["line"], src)))
    return exp


def frame_results(exp, got, what, Result):
    """A Result per command: got[command] against exp."""
    out = []
    for cmd in FRAME_COMMANDS:
        how, want = exp[cmd]
        have = got.get(cmd, "")
        if want is None:
            ok = "cannot read line" in have
        elif how == "equal":
            ok = have == want
        elif how == "prefix":
            ok = have.startswith(want)
        else:
            ok = want in have
        out.append(Result("%s (%s)" % (cmd, what), "PASS" if ok else "FAIL",
                          "" if ok else "expected (%s):\n%s\ngot:\n%s" % (how, want, have)))
    return out
