#!/usr/bin/env python3
"""Extract the plaintext lengths of the kernel crypto self-test (testmgr)
hash vectors for SHA-1, SHA-256 and SHA-512 from crypto/testmgr.h, and write
them as kdsim workload data (data/workloads/testmgr-6.1-hash-vectors.tsv).

The input is either an extracted testmgr.h or the Debian linux-source tarball
(/usr/src/linux-source-6.1.tar.xz), from which only crypto/testmgr.h is read,
in memory. Each vector's length is its `.psize`; where a vector has no
`.psize`, the decoded length of its `.plaintext` literal is used instead and
the header says so. As a check that the C literals were decoded correctly,
every vector's plaintext (first psize bytes) is hashed with Python's hashlib
and compared with the vector's `.digest`; any mismatch aborts the run.

Usage:
  tools/extract_testmgr_sizes.py /usr/src/linux-source-6.1.tar.xz \
      -o data/workloads/testmgr-6.1-hash-vectors.tsv
"""
from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import tarfile
from pathlib import Path

ARRAYS = [("sha1", "sha1_tv_template"), ("sha256", "sha256_tv_template"), ("sha512", "sha512_tv_template")]

SIMPLE_ESCAPES = {"n": 10, "t": 9, "r": 13, "0": 0, "\\": 92, '"': 34, "'": 39, "a": 7, "b": 8,
                  "f": 12, "v": 11, "?": 63}


def read_testmgr(path: Path) -> tuple[str, str]:
    """Returns (text of testmgr.h, member name or path it came from)."""
    if path.name.endswith((".tar.xz", ".tar.gz", ".tar.bz2", ".tar")):
        with tarfile.open(path, "r:*") as tar:
            for member in tar:
                if member.isfile() and member.name.endswith("/crypto/testmgr.h"):
                    data = tar.extractfile(member).read()
                    return data.decode("latin-1"), member.name
        sys.exit(f"{path}: no */crypto/testmgr.h member")
    return path.read_text(encoding="latin-1"), str(path)


def strip_comments(src: str) -> str:
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if c == '"':  # copy string literals untouched
            j = i + 1
            while src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:j + 1])
            i = j + 1
        elif src.startswith("/*", i):
            i = src.index("*/", i + 2) + 2
            out.append(" ")
        elif src.startswith("//", i):
            i = src.index("\n", i)
        else:
            out.append(c)
            i += 1
    return "".join(out)


def decode_c_string(body: str) -> bytes:
    """Decodes the inside of one C string literal (no surrounding quotes)."""
    out, i = bytearray(), 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("latin-1")
            i += 1
            continue
        e = body[i + 1]
        if e == "x":
            m = re.match(r"[0-9a-fA-F]+", body[i + 2:])
            out.append(int(m.group(0), 16) & 0xFF)
            i += 2 + len(m.group(0))
        elif e in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            out.append(int(m.group(0), 8) & 0xFF)
            i += 1 + len(m.group(0))
        elif e in SIMPLE_ESCAPES:
            out.append(SIMPLE_ESCAPES[e])
            i += 2
        else:
            raise ValueError(f"unsupported escape \\{e}")
    return bytes(out)


STRING_SEQ = r'(?:"(?:[^"\\]|\\.)*"\s*)+'


def field_bytes(entry: str, field: str) -> bytes | None:
    m = re.search(r"\." + field + r"\s*=\s*(" + STRING_SEQ + ")", entry)
    if not m:
        return None
    return b"".join(decode_c_string(s) for s in re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1)))


def array_entries(src: str, name: str) -> list[str]:
    """Top-level `{ ... }` initialisers of `static const struct hash_testvec NAME[] = { ... };`."""
    m = re.search(r"static\s+const\s+struct\s+hash_testvec\s+" + name + r"\s*\[\s*\]\s*=\s*\{", src)
    if not m:
        sys.exit(f"array {name} not found")
    i, depth, start, entries = m.end(), 1, None, []
    while depth:
        c = src[i]
        if c == '"':
            j = i + 1
            while src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            i = j
        elif c == "{":
            depth += 1
            if depth == 2:
                start = i + 1
        elif c == "}":
            if depth == 2:
                entries.append(src[start:i])
            depth -= 1
        i += 1
    return entries


def package_version(package: str) -> str:
    try:
        return subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package],
                              check=True, capture_output=True, text=True).stdout.strip() or "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", type=Path, help="testmgr.h, or a linux-source tarball containing it")
    ap.add_argument("-o", "--output", type=Path, help="TSV to write (default: stdout)")
    ap.add_argument("--package", default="linux-source-6.1", help="Debian package the source came from")
    ap.add_argument("--version", help="package version (default: asked of dpkg-query)")
    args = ap.parse_args()

    text, origin = read_testmgr(args.source)
    src = strip_comments(text)
    version = args.version or package_version(args.package)

    rows, notes = [], []
    for alg, array in ARRAYS:
        for index, entry in enumerate(array_entries(src, array)):
            plaintext = field_bytes(entry, "plaintext")
            digest = field_bytes(entry, "digest")
            psize_m = re.search(r"\.psize\s*=\s*([^,}\s]+)", entry)
            if re.search(r"\.key\s*=", entry):
                sys.exit(f"{array}[{index}] has a key: not a plain hash vector")
            if plaintext is None or digest is None:
                sys.exit(f"{array}[{index}]: missing .plaintext or .digest")
            if psize_m:
                psize = int(psize_m.group(1), 0)
            else:
                psize = len(plaintext)
                notes.append(f"{alg} {index}: no .psize, used strlen(.plaintext) = {psize}")
            if psize > len(plaintext):
                sys.exit(f"{array}[{index}]: psize {psize} exceeds plaintext literal ({len(plaintext)} bytes)")
            got = hashlib.new(alg, plaintext[:psize]).digest()
            if got != digest:
                sys.exit(f"{array}[{index}]: decoded plaintext does not hash to .digest; parser bug?")
            rows.append((alg, index, psize))

    header = [
        "# kdsim workload: plaintext lengths of the Linux crypto self-test (testmgr) hash vectors",
        f"# package: {args.package}  version: {version}",
        f"# source file: {origin}",
        "# arrays: " + ", ".join(f"{a} ({sum(1 for r in rows if r[0] == alg)} vectors)" for alg, a in ARRAYS),
        "# produced by: tools/extract_testmgr_sizes.py " + str(args.source)
        + (f" -o {args.output}" if args.output else ""),
        "# method: C initialisers parsed; length = .psize of each vector"
        + (" (strlen(.plaintext) where .psize is absent)" if notes else " (every vector has .psize)")
        + "; each decoded plaintext was hashed and matched the vector's .digest",
        "# columns: alg<TAB>index in its array (0-based)<TAB>plaintext length in bytes",
    ] + [f"# note: {n}" for n in notes]
    lines = header + [f"{a}\t{i}\t{n}" for a, i, n in rows]
    out = "\n".join(lines) + "\n"
    if args.output:
        args.output.write_text(out)
    else:
        sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
