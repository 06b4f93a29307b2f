#!/usr/bin/env python3
"""Measure the machine code size of the Linux functions kdsim models (and of the code paths of
data/kernel/footprint-paths.txt), from a Debian kernel's debug symbols, and write it as kdsim data
(data/kernel/code-sizes-<kernel>.tsv).

The inputs are the `vmlinux` (and module `.ko` files) of a Debian `linux-image-<ver>-<flavour>-dbg`
package: ELF files with a full symbol table, whose FUNC symbols carry their size in bytes. The
function list is docs/kernel-index.md (every `// Models: fn()` tag in src/). For each function the
tool adds up its symbol and the parts gcc split off or specialised (`fn.part.N`, `fn.constprop.N`,
`fn.isra.N`, and their combinations); the `.cold` parts (code gcc moved out of the hot path) are
reported apart. A function with no symbol was inlined into its callers (or is not built in this
configuration): its bytes are in its callers'. A name defined by several static functions in
different files is flagged `ambiguous` and its largest definition is taken.

Usage (the package is ~0.8 GB; only the ELF files are read):
  apt-get download linux-image-6.1.0-47-arm64-dbg:arm64      # dpkg --add-architecture arm64 first
  dpkg-deb --fsys-tarfile linux-image-6.1.0-47-arm64-dbg_*.deb | tar -x -C x \\
      ./usr/lib/debug/boot/vmlinux-6.1.0-47-arm64 --wildcards '*/wireguard.ko' ...
  tools/kernel_code_sizes.py --deb linux-image-6.1.0-47-arm64-dbg_6.1.170-3_arm64.deb \\
      x/usr/lib/debug/boot/vmlinux-6.1.0-47-arm64 x/.../wireguard.ko ... \\
      -o data/kernel/code-sizes-6.1.0-47-arm64.tsv
"""
from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLONE = re.compile(r"^(?P<base>[A-Za-z_][A-Za-z0-9_]*)(?P<suffix>(\.(part|constprop|isra|cold|localalias)\.?[0-9]*)*)$")


@dataclass
class Sizes:
    hot: int = 0          # the symbol and its non-cold clones, bytes
    cold: int = 0         # .cold parts, bytes
    definitions: int = 0  # symbols of exactly this name (several: static functions in several files)
    objects: set[str] = field(default_factory=set)


def parse_readelf(text: str, obj: str, into: dict[str, Sizes]) -> None:
    """Adds the FUNC symbols of `readelf -sW` output `text` (of file `obj`) to `into`, by base name.

    A line is `Num: Value Size Type Bind Vis Ndx Name`; Size may be decimal or 0x-hex.
    Undefined symbols (Ndx UND) and zero-size ones are skipped."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 8 or parts[3] != "FUNC" or parts[6] == "UND":
            continue
        size = int(parts[2], 16) if parts[2].startswith("0x") else int(parts[2])
        if size == 0:
            continue
        m = CLONE.match(parts[7])
        if not m:
            continue
        if ".localalias" in m.group("suffix"):
            continue  # an alias of a symbol counted already (same address)
        s = into.setdefault(m.group("base"), Sizes())
        s.objects.add(obj)
        if ".cold" in m.group("suffix"):
            s.cold += size
        elif m.group("suffix") == "":
            s.definitions += 1
            s.hot += size
        else:
            s.hot += size


def ambiguous_max(text: str, name: str) -> int:
    """The largest single definition of `name` (several static functions of one name)."""
    best = 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[3] == "FUNC" and parts[7] == name and parts[6] != "UND":
            best = max(best, int(parts[2], 16) if parts[2].startswith("0x") else int(parts[2]))
    return best


def read_paths(path: Path) -> dict[str, tuple[str, list[str]]]:
    """data/kernel/footprint-paths.txt: name -> (description, functions in order)."""
    paths: dict[str, tuple[str, list[str]]] = {}
    current = None
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if not line[0].isspace():
            name, sep, desc = line.partition(":")
            if not sep or not re.fullmatch(r"[a-z0-9_]+", name):
                raise SystemExit(f"{path}:{n}: expected 'name: description', found '{line}'")
            current = name
            paths[name] = (desc.strip(), [])
        elif current is None:
            raise SystemExit(f"{path}:{n}: functions before the first 'name: description' line")
        else:
            paths[current][1].extend(line.split())
    return paths


def index_functions(index: Path) -> list[tuple[str, str]]:
    """(function, kernel file) for every row of docs/kernel-index.md, in the index's order."""
    out, file = [], ""
    for line in index.read_text().splitlines():
        if line.startswith("## "):
            file = line[3:].strip()
        m = re.match(r"^\| `([A-Za-z_][A-Za-z0-9_]*)\(\)` \|", line)
        if m and (m.group(1), file) not in out:
            out.append((m.group(1), file))
    return out


ARCH_DIRS = {"AArch64": "arm64", "ARM": "arm", "Advanced Micro Devices X86-64": "x86", "PowerPC": "powerpc"}


def elf_arch(elf: Path) -> str:
    """The kernel's arch/ directory for an ELF file's machine (readelf -h), e.g. "arm64"."""
    r = subprocess.run(["readelf", "-h", str(elf)], capture_output=True, text=True, check=True)
    m = re.search(r"Machine:\s+(.+)", r.stdout)
    machine = m.group(1).strip() if m else ""
    if machine not in ARCH_DIRS:
        raise SystemExit(f"{elf}: unknown ELF machine '{machine}'")
    return ARCH_DIRS[machine]


def for_arch(functions: list[tuple[str, str]], arch: str) -> list[tuple[str, str]]:
    """The functions of files outside arch/, and of arch/<arch>/: another architecture's do not apply."""
    return [(fn, f) for fn, f in functions if not f.startswith("arch/") or f.startswith(f"arch/{arch}/")]


def table(functions: list[tuple[str, str]], texts: dict[str, str]) -> list[tuple[str, str, int, int, str, str]]:
    """Rows (function, kernel file, hot bytes, cold bytes, objects, note)."""
    sizes: dict[str, Sizes] = {}
    for obj, text in texts.items():
        parse_readelf(text, obj, sizes)
    rows = []
    for fn, kfile in functions:
        s = sizes.get(fn)
        if s is None or (s.hot == 0 and s.cold == 0):
            rows.append((fn, kfile, 0, 0, "-", "inlined or not built"))
            continue
        note = ""
        hot = s.hot
        if s.definitions > 1:
            note = f"ambiguous: {s.definitions} static definitions, the largest taken"
            hot = max(ambiguous_max(t, fn) for t in texts.values())
        elif s.definitions == 0:
            note = "only gcc's clones (.part/.constprop/.isra)"
        rows.append((fn, kfile, hot, s.cold, ",".join(sorted(s.objects)), note))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("elf", nargs="+", type=Path, help="vmlinux (first: it gives the architecture) and module .ko files")
    ap.add_argument("--deb", type=Path, required=True, help="the -dbg package they came from (named in the header)")
    ap.add_argument("--index", type=Path, default=ROOT / "docs" / "kernel-index.md")
    ap.add_argument("--paths", type=Path, default=ROOT / "data" / "kernel" / "footprint-paths.txt",
                    help="named code paths whose functions are listed too")
    ap.add_argument("-o", "--output", type=Path, required=True)
    a = ap.parse_args()
    texts = {}
    for elf in a.elf:
        r = subprocess.run(["readelf", "-sW", str(elf)], capture_output=True, text=True, check=False)
        if r.returncode != 0:
            print(f"{elf}: readelf failed: {r.stderr.strip()}", file=sys.stderr)
            return 1
        texts[elf.name] = r.stdout
    digest = hashlib.sha256(a.deb.read_bytes()).hexdigest() if a.deb.exists() else "(package not at hand)"
    arch = elf_arch(a.elf[0])
    functions = for_arch(index_functions(a.index), arch)
    listed = {fn for fn, _ in functions}
    for name, (_, fns) in read_paths(a.paths).items():
        for fn in (f for alt in fns for f in alt.split("|")):
            if fn not in listed:
                functions.append((fn, f"(path {name})"))
                listed.add(fn)
    rows = table(functions, texts)
    found = [r for r in rows if r[2] > 0]
    head = [
        f"# Machine code size of the Linux functions kdsim models (docs/kernel-index.md), from {a.deb.name}",
        f"# sha256 {digest}",
        f"# read with `readelf -sW` from: {', '.join(sorted(texts))}",
        f"# the functions of docs/kernel-index.md outside arch/ and in arch/{arch}/, then those of data/kernel/footprint-paths.txt",
        "# bytes: the function's FUNC symbol plus gcc's .part/.constprop/.isra clones; cold_bytes: its .cold parts.",
        "# 0 bytes: no symbol (inlined into its callers, or not built in this configuration).",
        f"# {len(found)} of {len(rows)} functions have code of their own; regenerate with tools/kernel_code_sizes.py.",
        "function\tkernel_file\tbytes\tcold_bytes\tobject\tnote",
    ]
    a.output.parent.mkdir(parents=True, exist_ok=True)
    tmp = a.output.with_suffix(".tmp")
    tmp.write_text("\n".join(head + ["\t".join(str(c) for c in r) for r in rows]) + "\n")
    tmp.replace(a.output)
    print(f"{a.output}: {len(found)} of {len(rows)} functions with code of their own")
    return 0


if __name__ == "__main__":
    sys.exit(main())
