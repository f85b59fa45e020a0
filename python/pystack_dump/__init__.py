"""Look inside a running CPython process from the outside: pystack-dump's
Python API.  Each call runs the ``pystack-dump`` command installed with
this package (a static executable: no library of the build machine is
needed) and reads its JSON, so no code runs in the target and none of
pystack-dump's C runs in the calling process.

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

The command is found at ``PREFIX/bin/pystack-dump``, where pip and meson
install it next to this package (``PREFIX/lib/pythonX.Y/site-packages``);
the environment variable ``PYSTACK_DUMP`` names another.

Reading another process needs the right to ptrace it (root, or
CAP_SYS_PTRACE, or kernel.yama.ptrace_scope=0 for the same user).
Dumping the calling process itself (``dump(os.getpid())``) works: the
call keeps the GIL while the command reads this process, so its other
Python threads stand still; ``locked`` and ``native`` (which ptrace the
target's threads) are refused for it.
"""

import errno
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import warnings
import weakref

__all__ = ["dump", "tasks", "Sampler", "Error", "UsageError", "ProcessNotFound",
           "PermissionDenied", "NotPython", "UnsupportedVersion", "ProcessExited",
           "StacksChanging", "MemoryUnreadable", "OutOfMemory", "BadFile", "NotACore",
           "ForeignCore", "CoreTruncated", "BadSnapshot", "ExeMismatch", "BadProfile",
           "OutputUnwritable", "NoKeptCore", "IncompleteWarning"]


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


class OutputUnwritable(Error):
    """An output file (``-o``, ``--save-snapshot``) cannot be written (17)."""


class NoKeptCore(Error):
    """``coredump=``: systemd-coredump kept no core of that process or
    program (18)."""


class IncompleteWarning(UserWarning):
    """A document returned with what is missing from it (``code``: the exit
    status ``pystack-dump`` has for it, ``message``: its message)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


#: Every exit status and its short name ("no such process", ...): the
#: command's (core/error.c, pyd_strerror; tests/test_api.py checks them).
ERRORS = {2: "bad usage", 3: "no such process", 4: "permission denied",
          5: "not a Python process", 6: "unsupported Python version",
          7: "process exited during the read", 8: "stack kept changing during the read",
          9: "memory could not be read", 10: "out of memory", 11: "not an ELF core file",
          12: "core file of another architecture", 13: "core file truncated",
          14: "bad or unsupported snapshot file", 15: "executable does not match the core",
          16: "bad or unsupported profile or recording",
          17: "output file cannot be written", 18: "no kept core matches"}

# The one map from exit status to class.
_CLASSES = {2: UsageError, 3: ProcessNotFound, 4: PermissionDenied, 5: NotPython,
            6: UnsupportedVersion, 7: ProcessExited, 8: StacksChanging,
            9: MemoryUnreadable, 10: OutOfMemory, 11: NotACore, 12: ForeignCore,
            13: CoreTruncated, 14: BadSnapshot, 15: ExeMismatch, 16: BadProfile,
            17: OutputUnwritable, 18: NoKeptCore}


def _error(code, message):
    return _CLASSES.get(code, Error)(code, message)


def _command():
    """The pystack-dump to run: $PYSTACK_DUMP, else PREFIX/bin's (this file
    is PREFIX/lib/pythonX.Y/site-packages/pystack_dump/__init__.py)."""
    exe = os.environ.get("PYSTACK_DUMP")
    if not exe:
        prefix = os.path.abspath(__file__)
        for _ in range(5):
            prefix = os.path.dirname(prefix)
        exe = os.path.join(prefix, "bin", "pystack-dump")
    if not os.access(exe, os.X_OK):
        # 127: the shell's status for a command it cannot find.
        raise Error(127, "pystack_dump: no pystack-dump command at %s (it is installed "
                         "with this package in PREFIX/bin; set PYSTACK_DUMP to name "
                         "another)" % exe)
    return exe


def _message(err):
    """The command's message on stderr, as the API words it."""
    return err.decode("utf-8", "replace").rstrip("\n").replace("pystack-dump:",
                                                                "pystack_dump:", 1)


def _status(rc):
    """A wait status's exit code; minus the signal that killed it."""
    return os.WEXITSTATUS(rc) if os.WIFEXITED(rc) else -os.WTERMSIG(rc)


def _killed(code):
    return Error(code, "pystack_dump: pystack-dump was killed by signal %d" % -code)


def _run_self(argv):
    """argv's exit code, stdout and stderr, run while this thread keeps the
    GIL: the command reads this very process, whose other Python threads
    then stand still (subprocess's waits release the GIL).  Its output
    goes to files, as a pipe left unread while waiting could fill."""
    import ctypes                       # only here: a dump of oneself is rare
    libc = ctypes.PyDLL(None, use_errno=True)   # PyDLL: calls keep the GIL
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = os.posix_spawn(argv[0], argv, os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, out.fileno(), 1), (os.POSIX_SPAWN_DUP2, err.fileno(), 2)])
        status = ctypes.c_int()
        while libc.waitpid(child, ctypes.byref(status), 0) < 0:
            if ctypes.get_errno() != errno.EINTR:
                raise OSError(ctypes.get_errno(), "waitpid")
        out.seek(0)
        err.seek(0)
        return _status(status.value), out.read(), err.read()


def _run(opts, pid):
    """pystack-dump OPTS [PID]: its document, or the error it exits with."""
    argv = [_command()] + opts + ([str(pid)] if pid else [])
    if pid == os.getpid():
        code, out, err = _run_self(argv)
    else:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        code, out, err = p.returncode, p.stdout, p.stderr
    if code < 0:
        raise _killed(code)
    if code and not out:
        raise _error(code, _message(err))
    if code:
        warnings.warn(IncompleteWarning(code, _message(err)), stacklevel=3)
    return json.loads(out)


def _pid(pid, who):
    if isinstance(pid, bool) or not isinstance(pid, int) or not 0 < pid <= 0x7fffffff:
        raise UsageError(2, "%s: %r is not a process id" % (who, pid))
    return pid


def _source(who, pid, core, snapshot, coredump=None):
    """The CLI's options for the one source given, and the pid (0: a file)."""
    if (pid is not None) + (core is not None) + (snapshot is not None) + \
            (coredump is not None) != 1:
        raise UsageError(2, "%s: give one of pid, core=, coredump= or snapshot=" % who)
    if core is not None:
        return ["--core", os.fsdecode(core)], 0
    if coredump is not None:
        return ["--coredump", str(coredump)], 0
    if snapshot is not None:
        return ["--snapshot", os.fsdecode(snapshot)], 0
    return [], _pid(pid, who)


def dump(pid=None, *, core=None, snapshot=None, exe=None, sysroot=None, locked=False,
         locals=False, native=False, coredump=None):
    """The stacks of every thread of a process, a core or a snapshot.

    Exactly one of ``pid``, ``core`` (an ELF core file, compressed or not;
    ``exe`` and ``sysroot`` as ``--exe`` and ``--sysroot``), ``coredump``
    (a pid or program whose newest core systemd-coredump kept, as
    ``--coredump``: the document's ``"crash"`` says what its records
    say) and ``snapshot``.  Returns
    the document ``pystack-dump --json`` prints for the same options
    (``locked``: ``--locked``, ``locals``: ``--locals``, ``native``:
    ``--native``): ``{"pid", "source", "python_version", "binary",
    "threads": [{"tid", "name", "holds_gil", "state", "frames": [...]}]}``,
    ``frames[0]`` the innermost.  Raises :class:`Error`; warns
    :class:`IncompleteWarning` for a document with parts missing.
    """
    who = "pystack_dump.dump"
    opts, pid = _source(who, pid, core, snapshot, coredump)
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


# The formats written as samples are taken (sample -f raw, jsonl), by name
# and by the suffix that picks them.
_STREAMED = {"raw": ".pydrec", "jsonl": ".jsonl"}


def _cleanup(proc, tmpdir):
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()
    shutil.rmtree(tmpdir, ignore_errors=True)


class Sampler:
    """A sampling profiler of one live process: ``pystack-dump sample``
    run in the background, recording every sample (``-f raw``) into a
    temporary file from which :meth:`profile` and :meth:`write` make any
    format (``pystack-dump report``).  The calling process's threads run
    on meanwhile.

    ``rate``: rounds per second (``"max"``: as fast as possible); ``mode``:
    ``"wall"``, ``"cpu"``, ``"gil"``, ``"async"`` or ``"exception"``, as
    ``pystack-dump sample -m``.  The process is opened here (a bad pid, a
    missing right or a mode its Python lacks raises at once); sampling
    runs between :meth:`start` and :meth:`stop`, or inside a ``with``
    block.  A Sampler samples once: a second :meth:`start` raises
    :class:`UsageError`; :meth:`stop` when not sampling does nothing.
    :meth:`profile` and :meth:`write` need it stopped.  Sampling also ends
    by itself when the target exits; what was sampled stays.  The streamed
    formats (``raw``, ``jsonl``) need ``keep_samples=True``.
    """

    def __init__(self, pid, rate=1000, mode="wall", *, keep_samples=False):
        self._pid = _pid(pid, "pystack_dump.Sampler")
        self._opts = ["--rate", str(rate), "--mode", str(mode)]
        self._keep = bool(keep_samples)
        self._proc = None
        self._samples = None
        # One round, written nowhere: the process opened as start() will
        # open it, so that what would fail there fails here.
        p = subprocess.run([_command(), "sample", "-q", "-n", "1", "-f", "collapsed",
                            "-o", os.devnull] + self._opts + [str(self._pid)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if p.returncode:
            raise _killed(p.returncode) if p.returncode < 0 else \
                _error(p.returncode, _message(p.stderr))
        self._dir = tempfile.mkdtemp(prefix="pystack_dump-")
        self._rec = os.path.join(self._dir, "samples.pydrec")
        self._err = os.path.join(self._dir, "stderr")
        self._finalizer = weakref.finalize(self, _cleanup, None, self._dir)

    @property
    def running(self):
        """Sampling now."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def samples(self):
        """Stacks recorded (0 while running)."""
        if self._proc is None or self.running:
            return 0
        if self._samples is None:
            self._samples = self.profile()["samples"]
        return self._samples

    def start(self):
        """Start sampling: returns once the command samples."""
        if self._proc is not None:
            raise UsageError(2, "pystack_dump.Sampler: already started; a Sampler "
                                "samples once (make a new one)")
        with open(self._err, "wb") as err:
            self._proc = subprocess.Popen(
                [_command(), "sample", "-q", "-f", "raw", "-o", self._rec] + self._opts
                + [str(self._pid)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=err)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _cleanup, self._proc, self._dir)
        # The recording's header is written once the process is open and
        # the command's SIGINT handler set: only then may stop() signal it.
        while self._proc.poll() is None and not (os.path.exists(self._rec) and
                                                 os.path.getsize(self._rec)):
            time.sleep(0.001)

    def stop(self):
        """Stop sampling (no-op if not running)."""
        if self._proc is None or self._proc.returncode is not None:
            return
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)
        code = self._proc.wait()
        if code:
            with open(self._err, "rb") as f:
                raise _killed(code) if code < 0 else _error(code, _message(f.read()))

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def _report(self, opts):
        """pystack-dump report RECORDING OPTS: what it writes on stdout."""
        if self.running:
            raise UsageError(2, "pystack_dump.Sampler: still sampling; stop() it first")
        if self._proc is None:
            raise UsageError(2, "pystack_dump.Sampler: never started: nothing sampled")
        p = subprocess.run([_command(), "report", "-q", self._rec] + opts,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode:
            raise _killed(p.returncode) if p.returncode < 0 else \
                _error(p.returncode, _message(p.stderr))
        return p.stdout

    def render(self, options):
        """The profile as ``pystack-dump report`` writes it with options
        (--format, --threads, --limit, --idle), as bytes."""
        fmt = options[options.index("--format") + 1] if "--format" in options else None
        if fmt in _STREAMED and not self._keep:
            raise UsageError(2, "pystack_dump.Sampler: the streamed formats (raw, jsonl) "
                                "need every sample: Sampler(..., keep_samples=True)")
        return self._report(list(options))

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
        if format is None:
            format = next((f for f, suffix in _STREAMED.items() if path.endswith(suffix)),
                          None)
        opts = ["--output", path, "--limit", str(limit)]
        opts += ["--format", str(format)] if format is not None else []
        opts += ["--threads"] if threads else []
        opts += ["--idle"] if idle else []
        self.render(opts)
