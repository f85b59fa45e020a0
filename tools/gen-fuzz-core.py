#!/usr/bin/env python3
"""Write a minimal x86-64 ELF core for the core fuzzer's seed corpus: the
notes pystack-dump reads (NT_PRSTATUS for two threads, NT_PRPSINFO,
NT_FILE naming an executable and a library) and two small PT_LOAD
segments, one of them writable.  Deterministic, a few KB.

usage: tools/gen-fuzz-core.py OUT.core
"""
import struct
import sys

NT_PRSTATUS, NT_PRPSINFO, NT_FILE = 1, 3, 0x46494C45
BASE = 0x400000


def note(name, ntype, desc):
    n = name.encode() + b"\0"
    pad = lambda b: b + b"\0" * (-len(b) % 4)
    return struct.pack("<III", len(n), len(desc), ntype) + pad(n) + pad(desc)


def prstatus(tid, rip, rsp):
    regs = [0] * 27
    regs[16], regs[19] = rip, rsp          # user_regs_struct: rip, rsp
    d = bytearray(112)
    struct.pack_into("<i", d, 32, tid)     # pr_pid
    return bytes(d) + struct.pack("<27Q", *regs) + b"\0" * 8


def nt_file():
    files = [(BASE, BASE + 0x1000, 0, b"/usr/bin/python3.12"),
             (BASE + 0x1000, BASE + 0x2000, 0, b"/usr/lib/libpython3.12.so.1.0")]
    d = struct.pack("<QQ", len(files), 4096)
    for s, e, off, _ in files:
        d += struct.pack("<QQQ", s, e, off)
    return d + b"".join(p + b"\0" for *_, p in files)


def main():
    notes = (note("CORE", NT_PRSTATUS, prstatus(100, BASE + 0x10, BASE + 0x1800))
             + note("CORE", NT_PRSTATUS, prstatus(101, BASE + 0x20, BASE + 0x1c00))
             + note("CORE", NT_PRPSINFO, struct.pack("<24xi", 100) + b"\0" * 108)
             + note("CORE", NT_FILE, nt_file()))
    phnum, ehsize, phentsize = 3, 64, 56
    off = ehsize + phnum * phentsize
    segs = [(4, 0, off, 0, len(notes))]
    data_off = off + len(notes)
    data_off += -data_off % 4096
    segs += [(1, 5, data_off, BASE, 0x1000), (1, 6, data_off + 0x1000, BASE + 0x1000, 0x1000)]
    eh = (b"\x7fELF\x02\x01\x01" + b"\0" * 9
          + struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, ehsize, 0, 0, ehsize, phentsize,
                        phnum, 64, 0, 0))
    ph = b"".join(struct.pack("<IIQQQQQQ", t, fl, o, va, va, sz, sz, 4096 if t == 1 else 4)
                  for t, fl, o, va, sz in segs)
    body = bytearray(eh + ph + notes)
    body += b"\0" * (data_off - len(body))
    body += bytes(range(256)) * 16 + b"xdebugpy" + struct.pack("<Q", 0x030D01F0) + b"\0" * 4080
    with open(sys.argv[1], "wb") as f:
        f.write(body)


if __name__ == "__main__":
    main()
