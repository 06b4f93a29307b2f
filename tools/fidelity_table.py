#!/usr/bin/env python3
"""Rewrites the figures of docs/fidelity.md's reality tables from one run of the reality suite.

Usage:
    build/kdsim experiments --dir scenarios/reality --brief > reality.log   (or tools/main.sh's log)
    tools/fidelity_table.py reality.log [--doc docs/fidelity.md] [--check]

The log's lines "<figure>: published <v> <unit>, predicted <p> <unit>, error <e> %" and
"<a> / <b>: published ratio <r>, predicted ratio <q>, error <e> %", under each
"R-<case> against published measurements" header, give every figure. In the document, a row of
the case table belongs to the case named in its first cell (or the last one named above it); its
rows are the case's figures in the manifest's order. The published, kdsim and error cells are
rewritten; the prose cells (what decides, what is missing) are kept: they are the author's to
update when the mechanism changes. A published value in the document that differs from the log's,
or a case whose row count differs, is an error (exit 2). --check writes nothing and exits 1 when
the document is not up to date.
"""
import argparse
import re
import sys

FIGURE = re.compile(r"^  (?P<name>.+?): published (?P<pub>[-+0-9.e]+) (?P<unit>\S+), predicted (?P<pred>[-+0-9.e]+) \S+, "
                    r"error (?P<err>[-+0-9.]+) %$")
RATIO = re.compile(r"^  (?P<name>.+?): published ratio (?P<pub>[0-9.]+), predicted ratio (?P<pred>[0-9.]+), "
                   r"error (?P<err>[-+0-9.]+) %$")
HEADER = re.compile(r"^R-(?P<case>[a-z0-9-]+) against published measurements")
CASE_CELL = re.compile(r"^\[(?P<case>[a-z0-9-]+)\]\(")


def read_log(path):
    figures, ratios, case = {}, {}, None
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        m = HEADER.match(line)
        if m:
            case = m["case"]
            figures.setdefault(case, [])
            ratios.setdefault(case, [])
            continue
        if case is None:
            continue
        m = RATIO.match(line)
        if m:
            ratios[case].append((m["name"], float(m["pub"]), float(m["pred"]), m["err"]))
            continue
        m = FIGURE.match(line)
        if m:
            figures[case].append((m["name"], float(m["pub"]), m["unit"], float(m["pred"]), m["err"]))
            continue
        if not line.startswith("  "):
            case = None
    return figures, ratios


def sig(v):
    """As the table has always shown them: 940.987 -> 941.0, 4.705 -> 4.705, 1175.62 -> 1175.6."""
    a = abs(v)
    return f"{v:.1f}" if a >= 100 else f"{v:.2f}" if a >= 10 else f"{v:.3f}"


def err_cell(e):
    v = float(e)
    return ("+" if v > 0 else "−" if v < 0 else "") + f"{abs(v):.1f} %"


def number_in(cell):
    m = re.search(r"[0-9][0-9,]*\.?[0-9]*", cell)
    return float(m.group(0).replace(",", "")) if m else None


def next_entry(seen, kind, case, entries, where):
    """The case's next log entry of `kind` ("figure" or "ratio") for the row at `where`."""
    k = seen.get((kind, case), 0)
    seen[(kind, case)] = k + 1
    if k >= len(entries):
        fail(f"{where}: case {case} has {len(entries)} {kind}(s) in the log, this row is one more")
    return entries[k]


def fail(msg):
    print(f"fidelity_table.py: {msg}", file=sys.stderr)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("log")
    ap.add_argument("--doc", default="docs/fidelity.md")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    figures, ratios = read_log(a.log)
    if not figures:
        fail(f"{a.log}: no 'R-<case> against published measurements' section")
    lines = open(a.doc, encoding="utf-8").read().split("\n")
    out, case, seen, in_ratio = [], None, {}, False
    for n, line in enumerate(lines, 1):
        if line.startswith("| case | ratio |"):
            in_ratio = True
        elif not line.startswith("|"):
            in_ratio = False if line.strip() else in_ratio
        cells = line.split(" | ")
        if n < len(lines) and lines[n].startswith("|---"):  # a table's header row
            case = None
        if not line.startswith("| ") or line.startswith("|---") or len(cells) < 5 or cells[0] == "| case":
            out.append(line)
            continue
        first = cells[0][2:]
        if in_ratio:
            c = first.strip()
            if c not in ratios:
                out.append(line)
                continue
            name, pub, pred, err = next_entry(seen, "ratio", c, ratios[c], f"{a.doc}:{n}")
            if abs(number_in(cells[2]) - pub) > 5e-4:
                fail(f"{a.doc}:{n}: ratio {cells[1]} of {c}: the document says published {cells[2]}, the log {pub:.3f}")
            cells[3], cells[4] = f"{pred:.3f}", err_cell(err) + (" |" if cells[4].endswith(" |") else "")
            out.append(" | ".join(cells))
            continue
        m = CASE_CELL.match(first)
        if m:
            case = m["case"]
        if case not in figures:
            out.append(line)
            continue
        name, pub, unit, pred, err = next_entry(seen, "figure", case, figures[case], f"{a.doc}:{n}")
        if number_in(cells[2]) is None or abs(number_in(cells[2]) - pub) > 1e-9 * max(1, pub):
            fail(f"{a.doc}:{n}: figure '{name}' of {case}: the document says published {cells[2]}, the log {pub:g} {unit}")
        cells[3] = f"{sig(pred)} {unit}"
        cells[4] = err_cell(err)
        out.append(" | ".join(cells))
    for c in figures:
        if seen.get(("figure", c), 0) not in (0, len(figures[c])):
            fail(f"{a.doc}: case {c} has {len(figures[c])} figures in the log but {seen[('figure', c)]} rows")
    missing = [c for c in figures if ("figure", c) not in seen]
    if missing:
        fail(f"{a.doc}: no table row for case(s) {', '.join(missing)}")
    text = "\n".join(out)
    if a.check:
        if text != "\n".join(lines):
            print(f"{a.doc} is not up to date with {a.log}: run tools/fidelity_table.py {a.log}", file=sys.stderr)
            sys.exit(1)
        return
    open(a.doc, "w", encoding="utf-8").write(text)


if __name__ == "__main__":
    main()
