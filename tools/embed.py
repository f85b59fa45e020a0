#!/usr/bin/env python3
"""Turn a file into a C header holding it as a NUL-terminated byte array.

    embed.py INPUT OUTPUT NAME

An array initializer rather than a string literal: no escaping to get
wrong and no compiler limit on literal length.
"""
import sys


def main():
    src, dst, name = sys.argv[1:4]
    with open(src, "rb") as f:
        data = f.read() + b"\0"
    lines = [
        "/* Generated from %s by tools/embed.py: do not edit. */"
        % src.replace("\\", "/").rsplit("/", 1)[-1],
        "static const unsigned char %s[] = {" % name,
    ]
    for i in range(0, len(data), 16):
        lines.append("\t" + ", ".join("%d" % c for c in data[i:i + 16]) + ",")
    lines.append("};")
    with open(dst, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
