#!/usr/bin/env python3
"""CPU time of two kdsim binaries on the same scenarios, interleaved (this guest's CPU time drifts
between blocks of runs, so compared programs must alternate).

usage: bench/ab_cpu.py OLD_KDSIM NEW_KDSIM REPS SCENARIO.toml...

Per repetition and scenario, each binary (alternating which goes first) runs the whole scenario and
then the same scenario cut to 1 us of simulated time (a hidden copy beside it, removed at the end),
pinned with `taskset -c 1`; CPU = user + system of the child (getrusage). The run's CPU is whole - cut
(loading, assembly and report taken out). Prints the medians, x real time (the scenario's simulated
time from the JSON / the run's CPU time) and new / old."""
import json, os, re, resource, statistics, subprocess, sys, tempfile
bins = {"old": sys.argv[1], "new": sys.argv[2]}
reps = int(sys.argv[3])
scens = sys.argv[4:]
def cut(path):
    out, s = [], False
    for line in open(path):
        if re.match(r'^\[scenario\]', line):
            out += [line, 'duration = "1 us"\n']; s = True; continue
        if line.startswith('['): s = False
        if s and re.match(r'^\s*duration\s*=', line): continue
        out.append(line)
    p = os.path.join(os.path.dirname(path), ".cut-" + os.path.basename(path))
    open(p, "w").writelines(out); return p
def cpu(b, f):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["taskset", "-c", "1", b, "run", "--quiet", "--json", JSON, f],
                   check=True, stdout=subprocess.DEVNULL)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1e3
JSON = os.path.join(tempfile.mkdtemp(), "run.json")
res = {(s, k): [] for s in scens for k in bins}
sim_ms = {}
cuts = []
for i in range(reps):
    for s in scens:
        c = cut(s)
        cuts.append(c)
        for k, b in (list(bins.items()) if i % 2 == 0 else list(bins.items())[::-1]):
            w = cpu(b, s)
            sim_ms[s] = json.load(open(JSON))["simulated_us"] / 1e3
            cc = cpu(b, c)
            res[(s, k)].append(w - cc)
for c in set(cuts):
    os.remove(c)
for s in scens:
    o = statistics.median(res[(s, "old")]); n = statistics.median(res[(s, "new")])
    print(f"{os.path.basename(s):32s} old {o:6.1f} ms ({sim_ms[s]/o:4.1f}x)  new {n:6.1f} ms ({sim_ms[s]/n:4.1f}x)  new/old {n/o:.3f}")
