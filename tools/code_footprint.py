#!/usr/bin/env python3
"""Add up the machine code of each path of data/kernel/footprint-paths.txt in each measured
kernel build (data/kernel/code-sizes-*.tsv, written by tools/kernel_code_sizes.py), and print
the table docs/code-footprint.md carries. `--check` compares that table with the document's.

A path's footprint is the sum of its functions' bytes (symbol plus gcc's clones, no .cold parts);
an `a|b` entry counts its first name with code. Functions the build inlined count 0 (their
bytes are in their callers'), so the sum is the path's code once each, not an execution count.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from kernel_code_sizes import read_paths  # noqa: E402

BEGIN = "<!-- footprint table: tools/code_footprint.py -->"
END = "<!-- end of footprint table -->"


def read_sizes(tsv: Path) -> dict[str, int]:
    """function -> bytes of one code-sizes TSV."""
    sizes = {}
    for line in tsv.read_text().splitlines():
        if line.startswith("#") or line.startswith("function\t"):
            continue
        cols = line.split("\t")
        if len(cols) != 6:
            raise SystemExit(f"{tsv}: expected 6 tab-separated columns, found {len(cols)}: '{line}'")
        sizes[cols[0]] = int(cols[2])
    return sizes


def footprint(functions: list[str], sizes: dict[str, int]) -> tuple[int, int, int]:
    """(bytes, functions with code, functions listed) of one path in one build."""
    total = found = 0
    for alt in functions:
        b = next((sizes[f] for f in alt.split("|") if sizes.get(f, 0) > 0), 0)
        total += b
        found += b > 0
    return total, found, len(functions)


def table(paths: dict[str, tuple[str, list[str]]], builds: dict[str, dict[str, int]]) -> str:
    names = sorted(builds)
    lines = ["| path | " + " | ".join(f"{b} bytes (functions with code / listed)" for b in names) + " |",
             "|---|" + "---|" * len(names)]
    for name, (_, fns) in paths.items():
        cells = []
        for b in names:
            total, found, listed = footprint(fns, builds[b])
            cells.append(f"{total:,} ({found} / {listed})")
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with docs/code-footprint.md")
    a = ap.parse_args()
    builds = {t.name.removeprefix("code-sizes-").removesuffix(".tsv"): read_sizes(t)
              for t in sorted((ROOT / "data" / "kernel").glob("code-sizes-*.tsv"))}
    if not builds:
        raise SystemExit("data/kernel: no code-sizes-*.tsv")
    text = table(read_paths(ROOT / "data" / "kernel" / "footprint-paths.txt"), builds)
    if not a.check:
        print(text)
        return 0
    doc = (ROOT / "docs" / "code-footprint.md").read_text()
    if BEGIN not in doc or END not in doc:
        print(f"docs/code-footprint.md: no '{BEGIN}' ... '{END}' block", file=sys.stderr)
        return 1
    shown = doc.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    if shown != text:
        print("docs/code-footprint.md: the footprint table differs from the data; run tools/code_footprint.py\n"
              f"--- in the document\n{shown}\n--- from the data\n{text}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
