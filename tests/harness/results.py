"""Results of checks that share one target process, and how they become
pytest outcomes."""

import traceback

import pytest

from .target import TargetError


class Result:
    """What one check found: status PASS, FAIL or SKIP; detail says why
    (the errors of a FAIL, the reason of a SKIP); info is a short fact for
    the summary (a size, a count, a rate)."""

    def __init__(self, test, status, detail="", info=""):
        self.test, self.status, self.detail, self.info = test, status, detail, info


def settle(r, node):
    """Turn a Result into the pytest outcome of the test node running it."""
    if r.info:
        node.user_properties.append(("info", r.info))
    if r.status == "SKIP":
        pytest.skip(r.detail)
    if r.status == "FAIL":
        pytest.fail(r.detail or "failed", pytrace=False)


class Jobs:
    """One target process serves several checks (a dump, its --locked
    variant, the oracle ...): the job that runs them is run once per worker
    process and its Results are handed out by name.  conftest puts every
    test of one job into one xdist group, so a job never runs twice."""

    def __init__(self):
        self._done = {}

    def result(self, name, fn, *args):
        key = (fn.__module__, fn.__qualname__) + tuple(getattr(a, "label", a) for a in args
                                     if isinstance(a, (str, int)) or hasattr(a, "label"))
        if key not in self._done:
            try:
                self._done[key] = dict((r.test, r) for r in fn(*args))
            except TargetError as e:
                self._done[key] = "target: %s" % e
            except Exception as e:      # every check of the job fails, with why
                self._done[key] = "harness error: %s\n%s" % (e, traceback.format_exc())
        got = self._done[key]
        if isinstance(got, str):
            return Result(name, "FAIL", got)
        return got.get(name) or Result(name, "FAIL", "the job %s gave no result for %r (it gave %s)"
                                       % (fn.__name__, name, ", ".join(sorted(got))))
