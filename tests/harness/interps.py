"""The interpreters the tests run targets under: pyenv 3.6-3.13, Debian's
3.11 release and debug, Debian sid's 3.13-3.15 release and debug in a
chroot (tests/setup-sid.sh), Debian bullseye's 3.9 in a chroot
(tests/setup-bullseye.sh), and CPython 3.15.0a0 built free-threaded and,
as its control, default from ../shared/cpython-ft (tests/setup-ft.sh).
Apart from those (tests/test_arm64.py only): Debian's arm64 3.11, 3.13,
3.14 and 3.15 under qemu (tests/setup-arm64.sh)."""

import fcntl
import glob
import os
import re
import shutil
import subprocess

from .procs import PY_FLAGS, session_id, vlog


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGETS_DIR = os.path.join(REPO, "tests", "targets")
FIXTURES_DIR = os.path.join(REPO, "tests", "fixtures")
SID_DIR_DEFAULT = "/var/cache/pystack-dump/sid"
SID_MARKER = ".pyd-sid-ready"          # written by tests/setup-sid.sh on success
BULLSEYE_DIR_DEFAULT = "/var/cache/pystack-dump/bullseye"
BULLSEYE_MARKER = ".pyd-bullseye-ready"  # written by tests/setup-bullseye.sh
FT_DIR_DEFAULT = "/var/cache/pystack-dump/ft"
FT_MARKER = ".pyd-ft-ready"            # written by tests/setup-ft.sh per build
ARM64_DIR_DEFAULT = "/var/cache/pystack-dump/arm64"
ARM64_MARKER = ".pyd-arm64-ready"      # written by tests/setup-arm64.sh on success
# In-chroot directories of the copied targets and of their ground-truth
# files, one pair per test session: sessions running side by side (two
# checkouts, a CI run beside a developer's) must not replace each other's
# targets or remove each other's files.
CHROOT_TARGETS_PREFIX = "/tmp/pyd-targets-"
CHROOT_OUT_PREFIX = "/tmp/pyd-out-"


def chroot_targets():
    return CHROOT_TARGETS_PREFIX + session_id()


def chroot_out():
    return CHROOT_OUT_PREFIX + session_id()

# --------------------------------------------------------------------------
# interpreters

class Interp:
    def __init__(self, label, source, minor, debug, exe, chroot=None, missing=None,
                 ft=False, wrap=()):
        self.label = label          # e.g. pyenv-3.12, deb-3.11d, sid-3.15d, ft-3.15t
        self.source = source        # pyenv | deb | sid | bullseye | ft
        self.minor = minor          # (3, 12)
        self.debug = debug
        self.ft = ft                # a free-threading build
        self.exe = exe              # path as seen by the process (in-chroot for sid, bullseye)
        self.chroot = chroot
        self.missing = missing      # None if usable, else the reason
        self.wrap = list(wrap)      # what runs exe (arm64: qemu -L SYSROOT)

    @property
    def minor_str(self):
        return "%d.%d" % self.minor

    def host_path(self, path):
        return os.path.join(self.chroot, path.lstrip("/")) if self.chroot else path

    def script(self, name):
        base = chroot_targets() if self.chroot else TARGETS_DIR
        return os.path.join(base, name + ".py")

    def argv(self, args):
        cmd = self.wrap + [self.exe] + PY_FLAGS + list(args)
        if self.chroot:
            cmd = ["chroot", self.chroot] + cmd
        return cmd

    def matches(self, tok):
        return tok in (self.label, self.source, self.minor_str,
                       self.minor_str + ("d" if self.debug else "t" if self.ft else ""),
                       "debug" if self.debug else "release",
                       "free-threaded" if self.ft else "default")


def pyenv_root():
    try:
        r = subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=20)
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return os.path.expanduser("~/.pyenv")


def ft_dir():
    return os.environ.get("PYD_FT_DIR", FT_DIR_DEFAULT)


def discover_ft():
    """3.15.0a0 free-threaded (ft-3.15t) and its control, the default build
    of the same tree (ft-3.15)."""
    found = []
    for kind, exe, label, ft in (("ft", "python3.15t", "ft-3.15t", True),
                                 ("default", "python3.15", "ft-3.15", False)):
        d = os.path.join(ft_dir(), kind)
        path = os.path.join(d, "bin", exe)
        why = None
        if not os.path.isfile(os.path.join(d, FT_MARKER)):
            why = "no %s build at %s (run tests/setup-ft.sh)" % (kind, d)
        elif not os.access(path, os.X_OK):
            why = "%s missing" % path
        found.append(Interp(label, "ft", (3, 15), False, path, missing=why, ft=ft))
    return found


def bullseye_dir():
    return os.environ.get("PYD_BULLSEYE_DIR", BULLSEYE_DIR_DEFAULT)


def discover_bullseye():
    """Debian bullseye's python3.9 (3.9.2, glibc 2.31): an older
    distribution's build, and where tests/test_static.py runs the static
    pystack-dump."""
    d, exe = bullseye_dir(), "/usr/bin/python3.9"
    why = None
    if not os.path.isfile(os.path.join(d, BULLSEYE_MARKER)):
        why = "no bullseye chroot at %s (run tests/setup-bullseye.sh)" % d
    elif not os.access(os.path.join(d, exe.lstrip("/")), os.X_OK):
        why = "%s missing in the bullseye chroot" % exe
    return [Interp("bullseye-3.9", "bullseye", (3, 9), False, exe, chroot=d, missing=why)]


def arm64_dir():
    return os.environ.get("PYD_ARM64_DIR", ARM64_DIR_DEFAULT)


def arm64_qemu():
    """qemu-aarch64 11.1 from sid (tests/setup-arm64.sh)."""
    return os.path.join(arm64_dir(), "qemu-sid", "usr", "bin", "qemu-aarch64")


def discover_arm64():
    """Debian's arm64 CPython under qemu-user: bookworm's 3.11 and sid's
    3.13-3.15, each in a sysroot of its packages."""
    d = arm64_dir()
    ready = os.path.isfile(os.path.join(d, ARM64_MARKER))
    found = []
    for suite, m in (("bookworm", 11), ("sid", 13), ("sid", 14), ("sid", 15)):
        root = os.path.join(d, "py-" + suite)
        exe = os.path.join(root, "usr", "bin", "python3.%d" % m)
        why = None
        if not ready:
            why = "no arm64 sysroots at %s (run tests/setup-arm64.sh)" % d
        elif not os.access(exe, os.X_OK):
            why = "%s missing" % exe
        found.append(Interp("arm64-3.%d" % m, "arm64", (3, m), False, exe, missing=why,
                            wrap=[arm64_qemu(), "-L", root]))
    return found


def discover(sid_dir):
    found = []
    root = pyenv_root()
    for m in range(6, 14):
        minor = "3.%d" % m
        best = None
        for d in glob.glob(os.path.join(root, "versions", minor + ".*")):
            mo = re.match(r"^3\.%d\.(\d+)$" % m, os.path.basename(d))
            exe = os.path.join(d, "bin", "python" + minor)
            if mo and os.access(exe, os.X_OK):
                if best is None or int(mo.group(1)) > best[0]:
                    best = (int(mo.group(1)), exe)
        found.append(Interp("pyenv-" + minor, "pyenv", (3, m), False,
                            best[1] if best else None,
                            missing=None if best else "no %s/versions/%s.*" % (root, minor)))
    for suffix, debug in (("", False), ("d", True)):
        exe = "/usr/bin/python3.11" + suffix
        ok = os.access(exe, os.X_OK)
        found.append(Interp("deb-3.11" + suffix, "deb", (3, 11), debug, exe,
                            missing=None if ok else "%s not installed" % exe))
    marker = os.path.isfile(os.path.join(sid_dir, SID_MARKER))
    for m in (13, 14, 15):
        for suffix, debug in (("", False), ("d", True)):
            exe = "/usr/bin/python3.%d%s" % (m, suffix)
            if not marker:
                why = "no sid chroot at %s (run tests/setup-sid.sh)" % sid_dir
            elif not os.access(os.path.join(sid_dir, exe.lstrip("/")), os.X_OK):
                why = "%s missing in the sid chroot" % exe
            else:
                why = None
            found.append(Interp("sid-3.%d%s" % (m, suffix), "sid", (3, m), debug, exe,
                                chroot=sid_dir, missing=why))
    return found + discover_bullseye() + discover_ft()


def remove_stale_sessions(sid_dir):
    """The chroot directories of test sessions whose process is gone."""
    tmp = os.path.join(sid_dir, "tmp")
    for name in os.listdir(tmp):
        for prefix in (CHROOT_TARGETS_PREFIX, CHROOT_OUT_PREFIX):
            base = os.path.basename(prefix)
            pid = name[len(base):].split("-")[0] if name.startswith(base) else ""
            if pid.isdigit() and not os.path.exists("/proc/" + pid):
                shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)


def prepare_chroot(sid_dir):
    """Copy the targets into the chroot (this session's directory) and make
    sure /proc is mounted there (profiling.sampling needs it). Returns an
    error string or None."""
    remove_stale_sessions(sid_dir)
    dst = os.path.join(sid_dir, chroot_targets().lstrip("/"))
    if os.path.isdir(dst):
        shutil.rmtree(dst)
    shutil.copytree(TARGETS_DIR, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = os.path.join(sid_dir, chroot_out().lstrip("/"))
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    proc = os.path.join(sid_dir, "proc")
    if subprocess.run(["mountpoint", "-q", proc]).returncode != 0:
        r = subprocess.run(["mount", "-t", "proc", "proc", proc], capture_output=True, text=True)
        if r.returncode != 0:
            return "cannot mount proc in %s: %s" % (proc, r.stderr.strip())
        vlog("mounted proc at %s" % proc)
    return None


def fixture_paths():
    return sorted(glob.glob(os.path.join(FIXTURES_DIR, "*.snap")))


_chroot_done = {}


def chroot_ready(sid_dir):
    """prepare_chroot once a test session, by whichever worker process asks
    first (the others wait for it): None, or why the chroot cannot be used.
    A session that never runs a chroot target never touches it, so a
    fixtures-only run may go on beside a full one."""
    if sid_dir not in _chroot_done:
        session = session_id()
        stamp = os.path.join(sid_dir, chroot_targets().lstrip("/"), ".session")
        with open(os.path.join(sid_dir, "tmp", ".pyd-chroot.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                with open(stamp) as f:
                    done = f.read() == session
            except OSError:
                done = False
            err = None if done else prepare_chroot(sid_dir)
            if not done and not err:
                with open(stamp, "w") as f:
                    f.write(session)
        _chroot_done[sid_dir] = err
    return _chroot_done[sid_dir]


def newest_present(interps):
    """The one interpreter checks that need only one run on: sid's 3.15,
    else the newest present (release builds first); None if none is."""
    present = [i for i in interps if not i.missing]
    for i in present:
        if i.label == "sid-3.15":
            return i
    present.sort(key=lambda i: (i.minor, not i.debug))
    return present[-1] if present else None
