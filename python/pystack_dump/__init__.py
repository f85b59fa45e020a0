"""Look inside a running CPython process from the outside: pystack-dump's
Python API, on the same C core as the ``pystack-dump`` command (no
subprocess, no code run in the target).

    >>> import pystack_dump
    >>> doc = pystack_dump.dump(4242)           # == pystack-dump --json 4242
    >>> graph = pystack_dump.tasks(4242)        # == pystack-dump --tasks --json 4242
    >>> with pystack_dump.Sampler(4242, rate=1000) as s:
    ...     time.sleep(5)
    >>> tree = s.profile()                      # == sample -f json
    >>> s.write("prof.html")                    # any format of sample -f

Every failure raises an :class:`Error` (a subclass per cause) whose
``code`` is the exit status ``pystack-dump`` has for it and whose message
is the one it prints.  A document the command prints with a non-zero
status (a stack that kept changing, a truncated core, corrupt memory) is
returned, with an :class:`IncompleteWarning` saying what is missing.

Reading another process needs the right to ptrace it (root, or
CAP_SYS_PTRACE, or kernel.yama.ptrace_scope=0 for the same user).
Dumping the calling process itself (``dump(os.getpid())``) works: it is
read through the same live source as any other, its other Python threads
held still by the GIL the call keeps; ``locked`` and ``native`` (which
ptrace the target's threads) are refused for it.
"""

import json
import os
import warnings

from . import _native

__all__ = ["dump", "tasks", "Sampler", "Error", "UsageError", "ProcessNotFound",
           "PermissionDenied", "NotPython", "UnsupportedVersion", "ProcessExited",
           "StacksChanging", "MemoryUnreadable", "OutOfMemory", "BadFile", "NotACore",
           "ForeignCore", "CoreTruncated", "BadSnapshot", "ExeMismatch", "BadProfile",
           "IncompleteWarning"]


class Error(Exception):
    """What went wrong, as ``pystack-dump`` says it.

    ``code`` is the command's exit status for it (``ERRORS`` names them),
    ``message`` its message: the cause and, where there is one, the fix."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


class UsageError(Error, ValueError):
    """Arguments that do not go together, or a bad value (exit status 2)."""


class ProcessNotFound(Error):
    """No such process (3)."""


class PermissionDenied(Error):
    """Not allowed to read the process: no ptrace rights (4)."""


class NotPython(Error):
    """The process (or core) runs no CPython (5)."""


class UnsupportedVersion(Error):
    """A Python this version of pystack-dump cannot read (6)."""


class ProcessExited(Error):
    """The process exited while it was being read (7)."""


class StacksChanging(Error):
    """A stack kept changing while it was read (8)."""


class MemoryUnreadable(Error):
    """The target's memory was not readable as expected (9)."""


class OutOfMemory(Error):
    """pystack-dump ran out of memory (10)."""


class BadFile(Error):
    """A core or snapshot file that cannot be read (11-15)."""


class NotACore(BadFile):
    """Not an ELF core file (11)."""


class ForeignCore(BadFile):
    """A core of another architecture (12)."""


class CoreTruncated(BadFile):
    """The core file ends before its segments do (13)."""


class BadSnapshot(BadFile):
    """A bad or unsupported snapshot file (14)."""


class ExeMismatch(BadFile):
    """``exe`` is not the core's executable (15)."""


class BadProfile(Error):
    """A bad or unsupported profile or recording file (16)."""


class IncompleteWarning(UserWarning):
    """A document returned with what is missing from it (``code``: the exit
    status ``pystack-dump`` has for it, ``message``: its message)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


#: Every exit status and its short name ("no such process", ...).
ERRORS = dict(_native.ERRORS)

# The one map from exit status to class; the C half raises through it.
_CLASSES = {2: UsageError, 3: ProcessNotFound, 4: PermissionDenied, 5: NotPython,
            6: UnsupportedVersion, 7: ProcessExited, 8: StacksChanging,
            9: MemoryUnreadable, 10: OutOfMemory, 11: NotACore, 12: ForeignCore,
            13: CoreTruncated, 14: BadSnapshot, 15: ExeMismatch, 16: BadProfile}


def _error(code, message):
    return _CLASSES.get(code, Error)(code, message)


_native.set_error_factory(_error)


def _pid(pid, who):
    if isinstance(pid, bool) or not isinstance(pid, int) or not 0 < pid <= 0x7fffffff:
        raise UsageError(2, "%s: %r is not a process id" % (who, pid))
    return pid


def _source(who, pid, core, snapshot):
    """The CLI's options for the one source given, and the pid (0: a file)."""
    if (pid is not None) + (core is not None) + (snapshot is not None) != 1:
        raise UsageError(2, "%s: give one of pid, core= or snapshot=" % who)
    if core is not None:
        return ["--core", os.fsdecode(core)], 0
    if snapshot is not None:
        return ["--snapshot", os.fsdecode(snapshot)], 0
    return [], _pid(pid, who)


def _run(opts, pid):
    text, code, message = _native.dump(opts, pid)
    if code:
        warnings.warn(IncompleteWarning(code, message.rstrip("\n")), stacklevel=3)
    return json.loads(text)


def dump(pid=None, *, core=None, snapshot=None, exe=None, sysroot=None, locked=False,
         locals=False, native=False):
    """The stacks of every thread of a process, a core or a snapshot.

    Exactly one of ``pid``, ``core`` (an ELF core file; ``exe`` and
    ``sysroot`` as ``--exe`` and ``--sysroot``) and ``snapshot``.  Returns
    the document ``pystack-dump --json`` prints for the same options
    (``locked``: ``--locked``, ``locals``: ``--locals``, ``native``:
    ``--native``): ``{"pid", "source", "python_version", "binary",
    "threads": [{"tid", "name", "holds_gil", "state", "frames": [...]}]}``,
    ``frames[0]`` the innermost.  Raises :class:`Error`; warns
    :class:`IncompleteWarning` for a document with parts missing.
    """
    who = "pystack_dump.dump"
    opts, pid = _source(who, pid, core, snapshot)
    if pid == os.getpid() and (locked or native):
        raise UsageError(2, "%s: locked and native stop the target's threads with "
                            "ptrace, which a process cannot do to its own; dump "
                            "this process without them" % who)
    opts += ["--json"]
    opts += ["--exe", os.fsdecode(exe)] if exe is not None else []
    opts += ["--sysroot", os.fsdecode(sysroot)] if sysroot is not None else []
    opts += ["--locked"] if locked else []
    opts += ["--locals"] if locals else []
    opts += ["--native"] if native else []
    return _run(opts, pid)


def tasks(pid=None, *, core=None, snapshot=None):
    """The asyncio task graph of a process, a core or a snapshot: the
    document ``pystack-dump --tasks --json`` prints (docs/tasks-json.md).
    Raises :class:`Error` (:class:`UnsupportedVersion` before 3.7)."""
    opts, pid = _source("pystack_dump.tasks", pid, core, snapshot)
    return _run(opts + ["--tasks", "--json"], pid)


class Sampler(_native.Sampler):
    """A sampling profiler of one live process, in a native thread that
    never holds the GIL (the calling process's threads run on meanwhile).

    ``rate``: rounds per second (``"max"``: as fast as possible); ``mode``:
    ``"wall"``, ``"cpu"``, ``"gil"``, ``"async"`` or ``"exception"``, as
    ``pystack-dump sample -m``.  The process is opened here (a bad pid
    raises at once); sampling runs between :meth:`start` and :meth:`stop`,
    or inside a ``with`` block.  A Sampler samples once: a second
    :meth:`start` raises :class:`UsageError`; :meth:`stop` when not
    sampling does nothing.  :meth:`profile` and :meth:`write` need it
    stopped.  Sampling also ends by itself when the target exits; what
    was sampled stays.  ``keep_samples``: also keep every sample as taken
    (a recording in memory, zstd: a few KB per 10,000 samples of a steady
    program, more for stacks that keep changing), which the streamed
    formats (``raw``, ``jsonl``) are written from.
    """

    def __init__(self, pid, rate=1000, mode="wall", *, keep_samples=False):
        who = "pystack_dump.Sampler"
        super().__init__(["--rate", str(rate), "--mode", str(mode)], _pid(pid, who),
                         bool(keep_samples))

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def profile(self):
        """The call tree: the document ``pystack-dump sample -f json``
        writes (docs/profile-formats.md)."""
        return json.loads(self.render(["--format", "json"]))

    def write(self, path, format=None, *, threads=False, limit=40, idle=False):
        """Write the profile to ``path`` in ``format`` (a name of
        ``pystack-dump sample --list-formats``; default: from ``path``'s
        suffix, as ``-o`` picks it).  ``threads``: a tree per thread;
        ``limit``: the table's rows (0: all); ``idle``: keep idle threads
        in the table.  The streamed formats (raw: a recording
        ``pystack-dump report`` reads; jsonl) need ``keep_samples=True``."""
        path = os.fsdecode(path)
        opts = ["--output", path, "--limit", str(limit)]
        opts += ["--format", str(format)] if format is not None else []
        opts += ["--threads"] if threads else []
        opts += ["--idle"] if idle else []
        data = self.render(opts)
        with open(path, "wb") as f:
            f.write(data)
