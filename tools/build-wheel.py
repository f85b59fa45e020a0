#!/usr/bin/env python3
"""The release wheel: one that installs on any x86-64 Linux with glibc 2.17
or newer, and says so in its tag (README, "Packaging and releases").

    tools/build-wheel.py [OUTDIR]      # default dist/

Builds the wheel as pip would (python3 -m build --no-isolation; meson's
-Dwheel=true links its pystack-dump statically) without the debugger
plugins, which are shared objects on libdw, libelf, zlib and zstd that the
manylinux policy does not allow; checks what auditwheel would (no
extension module; every ELF file imports only the policy's libraries and
glibc symbol versions up to 2.17: a static pystack-dump imports nothing);
then retags it py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.
auditwheel itself is not in Debian; this is its check for the one kind of
file the wheel holds.  Exits 1, naming the file, where a check fails."""

import base64
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GLIBC_FLOOR = (2, 17)
PLATFORMS = ["manylinux_2_17_x86_64", "manylinux2014_x86_64"]
# The manylinux2014 policy's libraries (PEP 599), which a wheel may load
# from the system.
ALLOWED = {"libgcc_s.so.1", "libstdc++.so.6", "libm.so.6", "libdl.so.2", "librt.so.1",
           "libc.so.6", "libnsl.so.1", "libutil.so.1", "libpthread.so.0",
           "libresolv.so.2", "libX11.so.6", "libXext.so.6", "libXrender.so.1",
           "libICE.so.6", "libSM.so.6", "libGL.so.1", "libgobject-2.0.so.0",
           "libgthread-2.0.so.0", "libglib-2.0.so.0"}


def elf_problems(path):
    """What in the ELF file at path breaks the manylinux_2_17 policy."""
    dyn = subprocess.run(["readelf", "-d", "-V", "-W", path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, check=True).stdout.decode()
    problems = ["loads %s" % lib for lib in re.findall(r"\(NEEDED\).*\[(.*)\]", dyn)
                if lib not in ALLOWED]
    for name in sorted(set(re.findall(r"Name: (GLIBC_[0-9.]+)", dyn))):
        if tuple(int(x) for x in name[6:].split(".")) > GLIBC_FLOOR:
            problems.append("needs %s" % name)
    return problems


def is_extension(name):
    """A shared object Python would import: in the package's purelib or
    platlib, or at the wheel's root (not in its .data's scripts or data)."""
    parts = name.split("/")
    return name.endswith(".so") and (not parts[0].endswith(".data") or
                                     parts[1] in ("purelib", "platlib"))


def check(wheel):
    """Every problem of the wheel's files, as "file: problem"."""
    problems = []
    with zipfile.ZipFile(wheel) as z, tempfile.TemporaryDirectory() as tmp:
        for info in z.infolist():
            if is_extension(info.filename):
                problems.append("%s: an extension module" % info.filename)
            with z.open(info) as f:
                if f.read(4) != b"\x7fELF":
                    continue
            problems += ["%s: %s" % (info.filename, p)
                         for p in elf_problems(z.extract(info, tmp))]
    return problems


def record_hash(data):
    """A RECORD's hash of data (PEP 376, as wheels write it)."""
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def retag(wheel, outdir):
    """The wheel with its platform tag changed to PLATFORMS, in outdir: a
    copy entry by entry (wheel pack would drop the executable's mode),
    its WHEEL file and that file's RECORD line rewritten."""
    platforms = ".".join(sorted(PLATFORMS))          # as a wheel's name sorts them
    out = os.path.join(outdir, os.path.basename(wheel).replace("linux_x86_64", platforms))
    with zipfile.ZipFile(wheel) as z, zipfile.ZipFile(out + ".tmp", "w",
                                                      zipfile.ZIP_DEFLATED) as o:
        names = [i.filename for i in z.infolist()]
        (wheel_file,) = [n for n in names if n.endswith(".dist-info/WHEEL")]
        (record,) = [n for n in names if n.endswith(".dist-info/RECORD")]
        lines = z.read(wheel_file).decode().splitlines()
        tags = [l for l in lines if l.startswith("Tag: ")]
        if tags != ["Tag: py3-none-linux_x86_64"]:
            raise SystemExit("%s: tags %s, not py3-none-linux_x86_64" % (wheel, tags))
        lines = [l for l in lines if not l.startswith("Tag: ")]
        tagged = ("\n".join(lines + ["Tag: py3-none-%s" % p for p in PLATFORMS]) +
                  "\n").encode()
        rows = [r for r in z.read(record).decode().splitlines()
                if r and not r.startswith(wheel_file + ",")]
        rows.append("%s,%s,%d" % (wheel_file, record_hash(tagged), len(tagged)))
        for info in z.infolist():
            data = {wheel_file: tagged, record: ("\n".join(rows) + "\n").encode()}.get(
                info.filename) or z.read(info)
            o.writestr(info, data, zipfile.ZIP_DEFLATED)
    os.replace(out + ".tmp", out)
    return out


def main():
    outdir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "dist"))
    os.makedirs(outdir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation",
                        "--outdir", tmp, "-Csetup-args=-Dgdb=disabled",
                        "-Csetup-args=-Dlldb=disabled", REPO], check=True, cwd=REPO)
        (wheel,) = [os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".whl")]
        problems = check(wheel)
        if problems:
            print("%s is not manylinux_2_17:\n  %s" % (os.path.basename(wheel),
                                                       "\n  ".join(problems)),
                  file=sys.stderr)
            return 1
        print(retag(wheel, outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
