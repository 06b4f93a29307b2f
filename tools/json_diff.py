#!/usr/bin/env python3
"""Per-metric difference between two folders of kdsim result JSON (kdsim run --json or
kdsim experiments --out): every number or string that differs, by file and path.

    tools/json_diff.py OLD_DIR NEW_DIR [--rel 0] [--ignore events]

Workload metrics are keyed by workload name and metric key (not list position), so a metric
added or removed shows as such instead of shifting the others. Exit status 1 when anything
differs beyond --rel (relative, for numbers), else 0."""
import argparse
import json
import pathlib
import sys


def flatten(x, path, out):
    if isinstance(x, dict):
        for k, v in x.items():
            flatten(v, f"{path}/{k}", out)
    elif isinstance(x, list):
        if all(isinstance(e, dict) and "key" in e and "value" in e for e in x) and x:
            for e in x:
                out[f"{path}/{e['key']}"] = e["value"]
        elif all(isinstance(e, dict) and "name" in e for e in x) and x:
            for e in x:
                flatten(e, f"{path}/{e['name']}", out)
        else:
            for i, e in enumerate(x):
                flatten(e, f"{path}[{i}]", out)
    else:
        out[path] = x


def differs(a, b, rel):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if a == b:
            return False
        return abs(a - b) > rel * max(abs(a), abs(b))
    return a != b


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rel", type=float, default=0.0, help="relative tolerance for numbers (default 0: exact)")
    ap.add_argument("--ignore", action="append", default=[], help="skip paths ending in this key (repeatable)")
    a = ap.parse_args()
    old, new = pathlib.Path(a.old), pathlib.Path(a.new)
    names = sorted({p.name for p in old.glob("*.json")} | {p.name for p in new.glob("*.json")})
    changed = 0
    for name in names:
        po, pn = old / name, new / name
        if not po.exists() or not pn.exists():
            print(f"{name}: only in {'new' if pn.exists() else 'old'}")
            changed += 1
            continue
        fo, fn = {}, {}
        flatten(json.loads(po.read_text()), "", fo)
        flatten(json.loads(pn.read_text()), "", fn)
        for k in sorted(set(fo) | set(fn)):
            if any(k.endswith("/" + i) for i in a.ignore):
                continue
            if k not in fo or k not in fn:
                print(f"{name}: {k}: {fo.get(k, '(absent)')} -> {fn.get(k, '(absent)')}")
                changed += 1
            elif differs(fo[k], fn[k], a.rel):
                print(f"{name}: {k}: {fo[k]} -> {fn[k]}")
                changed += 1
    print(f"{changed} difference(s) in {len(names)} file(s)", file=sys.stderr)
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
