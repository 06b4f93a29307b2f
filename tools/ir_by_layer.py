#!/usr/bin/env python3
"""Instructions per model event by layer, from a callgrind profile of one `kdsim run`.

Sums each function's exclusive instruction count (Ir) into the layer its name says
(`kdsim::mem::...` -> mem, `kdsim::kernel::...` -> kernel, ...; anything outside kdsim, such as
libstdc++ or libc, -> "other") and divides by the run's model events, so the breakdown tables of
docs/performance.md come from one command instead of hand sums:

    valgrind --tool=callgrind --callgrind-out-file=F \\
        --toggle-collect='kdsim::engine::Simulation::run*' \\
        build/kdsim run --quiet --mode=timing --json J scenarios/e5/imx6qp-mtu-partial-sync.toml
    tools/ir_by_layer.py F J [--top N]

F is a callgrind output file (read through `callgrind_annotate --inclusive=no`) or a text file of
callgrind_annotate's output; J is the run's --json file (its "events") or a number of events.
"""
import argparse
import json
import re
import subprocess
import sys
from collections import defaultdict

# "  66,523,318 (12.19%)  ???:unsigned long kdsim::mem::MemorySystem::read_unheld_n<2ul>(int, ...) [obj]"
LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(?:[^:\s]*:)?(.*?)(?:\s+\[[^\]]*\])?\s*$")
LAYER = re.compile(r"kdsim::(\w+)::")


def layer_of(function):
    """The layer of a demangled function name: the namespace after the last `kdsim::` before the
    parameter list (so a return type such as `kdsim::engine::Task` does not count), else "other"."""
    head = function.split("(", 1)[0]
    found = LAYER.findall(head)
    return found[-1] if found else "other"


def parse(text):
    """(function, Ir) pairs of callgrind_annotate's per-function lines; the PROGRAM TOTALS line
    is returned apart as (total or None, pairs)."""
    total, pairs = None, []
    for raw in text.splitlines():
        m = LINE.match(raw)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        name = m.group(2)
        if name.startswith("PROGRAM TOTALS"):
            total = ir
        else:
            pairs.append((name, ir))
    return total, pairs


def events_of(arg):
    if re.fullmatch(r"\d+", arg):
        return int(arg)
    with open(arg) as f:
        return int(json.load(f)["events"])


def annotate(path):
    with open(path, "rb") as f:
        head = f.read(64)
    if b"callgrind" in head or head.startswith(b"# callgrind") or head.startswith(b"version:"):
        return subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", path],
                              check=True, capture_output=True, text=True).stdout
    with open(path) as f:
        return f.read()


def table(total, pairs, events, top):
    by_layer = defaultdict(int)
    funcs = defaultdict(list)
    for name, ir in pairs:
        lay = layer_of(name)
        by_layer[lay] += ir
        funcs[lay].append((ir, name))
    listed = sum(by_layer.values())
    out = [f"| layer | Ir | Ir per event | share |", "|---|---|---|---|"]
    for lay, ir in sorted(by_layer.items(), key=lambda kv: -kv[1]):
        out.append(f"| {lay} | {ir:,} | {ir / events:.1f} | {100.0 * ir / listed:.1f} % |")
    out.append(f"| **all** | {listed:,} | **{listed / events:.1f}** | 100 % |")
    if total is not None and total != listed:
        out.append(f"\n(callgrind's total {total:,} Ir; the functions listed sum to {listed:,})")
    if top:
        for lay, ir in sorted(by_layer.items(), key=lambda kv: -kv[1]):
            out.append(f"\n{lay}:")
            for fir, name in sorted(funcs[lay], reverse=True)[:top]:
                out.append(f"  {fir / events:8.1f}  {name[:150]}")
    return "\n".join(out), listed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile", help="callgrind output file, or callgrind_annotate's text output")
    ap.add_argument("events", help="the run's --json file, or the number of model events")
    ap.add_argument("--top", type=int, default=0, help="also list each layer's N largest functions")
    a = ap.parse_args()
    events = events_of(a.events)
    if events <= 0:
        sys.exit(f"{a.events}: the run has no events")
    total, pairs = parse(annotate(a.profile))
    if not pairs:
        sys.exit(f"{a.profile}: no per-function lines found (is it a callgrind profile?)")
    text, _ = table(total, pairs, events, a.top)
    print(f"{events:,} events\n")
    print(text)


if __name__ == "__main__":
    main()
