#!/usr/bin/env python3
"""Mutation fuzzing of the core-file path.

Takes a real core file, writes N mutated copies (random bytes in the ELF
header, in the notes area, anywhere, or a random truncation) and runs
pystack-dump --core on each (plain dump and --tasks), expecting an exit
status, never a crash, a sanitizer report or a hang.  Use an ASan+UBSan
build (meson setup build-asan -Db_sanitize=address,undefined
-Db_lundef=false).  Offending inputs are kept as crash-N.core / hang-N.core.

usage: tools/fuzz-cores.py CORE N PYSTACK_DUMP [SEED] [WORKDIR]
"""
import os
import random
import shutil
import subprocess
import sys


def mutate(data, rng):
    mode = rng.choice(["head", "notes", "any", "trunc"])
    d = bytearray(data)
    if mode == "trunc":
        return mode, d[:rng.randrange(0, len(d))]
    limit = {"head": 4096, "notes": 1 << 16}.get(mode, len(d))
    for _ in range(rng.randint(1, 16)):
        d[rng.randrange(0, min(limit, len(d)))] = rng.randrange(256)
    return mode, d


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    core, n, exe = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    work = sys.argv[5] if len(sys.argv) > 5 else "/tmp/pyd-fuzz"
    os.makedirs(work, exist_ok=True)
    data = open(core, "rb").read()
    mutant = os.path.join(work, "mutant.core")
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:exitcode=99",
               UBSAN_OPTIONS="halt_on_error=1:exitcode=98")
    bad = 0
    for i in range(n):
        mode, d = mutate(data, rng)
        with open(mutant, "wb") as f:
            f.write(d)
        for extra in ([], ["--tasks"]):
            cmd = [exe, "--core", mutant, "--json"] + extra
            try:
                r = subprocess.run(cmd, capture_output=True, timeout=20, env=env)
            except subprocess.TimeoutExpired:
                bad += 1
                print("HANG", i, mode, " ".join(cmd))
                shutil.copy(mutant, os.path.join(work, "hang-%d.core" % i))
                continue
            if r.returncode < 0 or r.returncode >= 98 or b"Sanitizer" in r.stderr:
                bad += 1
                print("CRASH", i, mode, r.returncode, r.stderr.decode(errors="replace")[-2000:])
                shutil.copy(mutant, os.path.join(work, "crash-%d.core" % i))
    print("fuzz-cores: %d mutants, %d bad" % (n, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
