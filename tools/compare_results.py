#!/usr/bin/env python3
"""Proves that two sets of kdsim results JSON files give the same numbers.

    tools/compare_results.py BEFORE_DIR AFTER_DIR

Every *.json of BEFORE_DIR must have a namesake in AFTER_DIR (AFTER_DIR may have more). The
AFTER files are results format 2 (statistics registered by their owners, docs/report-format.md);
the BEFORE files may be format 1, where machine statistics lived in the CPU objects and in the
workloads' metrics: each format-1 figure is mapped to its statistic path (or recomputed from
statistics, for the per-packet ratios iperf3 used to derive) and compared; its clobber reports
and count are compared with the typed findings of kind simd_clobber (format 3), and its verdict
with theirs (the failure texts were reworded, so they are not compared). Integers and strings
must be equal; a ratio recomputed from statistics may differ by rounding only (1e-9 relative).
Figures that moved to their owner since (any format): a workload's digest_mismatches metric is
the machine's typed findings of kind digest_mismatch (summed over the machine's workloads); the
softirq_load's max_cryptd_queue and cryptd_drops metrics and a tunnel's cryptd_max_queue
statistic are the statistics its cryptd registers (cryptd/cpu<N>/max_qlen, the longest of the
CPUs, and cryptd/cpu<N>/refused). Text added since is compared only when BEFORE has it (a CPU's
simd.longest_bracket_holder_by_driver, a machine's profile_sha256, a workload's data_lost and
metrics it did not have). Every figure of BEFORE must be accounted for. Exit status 0 when all agree, 1 otherwise.
Python 3 standard library only.
"""
import copy
import json
import math
import os
import sys

REL = 1e-9
MISSING = object()  # a figure the AFTER file does not have

# format-1 CPU field -> statistic path below <machine>/cpu<N>/
CPU_FIELDS = {
    "hardirqs": "hardirqs",
    "softirq_runs": "softirq/runs",
    "softirq_restarts": "softirq/restarts",
    "ksoftirqd_wakeups": "softirq/ksoftirqd_wakeups",
    "bh_disable_ops": "softirq/local_bh_disable",
    "context_switches": "sched/context_switches",
    "preemptions": "sched/preemptions",
    "rcu_stall_warnings": "watchdog/rcu_stall_warnings",
    "rcu_exp_stall_warnings": "watchdog/rcu_exp_stall_warnings",
    "soft_lockups": "watchdog/soft_lockups",
    "simd_clobbers": "simd/clobbers",
}
SIMD_COUNTERS = ["brackets", "begin_end_cycles", "saves", "restores", "save_restore_cycles", "bytes", "fallbacks",
                 "kernel_traps", "kernel_use_warnings"]
# format-1 iperf3 tunnel metric suffix -> statistic below <machine>/tunnel/<name>/
TUNNEL = {"simd_passes": "aead/simd_passes", "scalar_passes": "aead/scalar_passes",
          "simd_fallbacks": "aead/simd_fallbacks"}
# format-1 workload metric -> (end, statistic pattern below the machine) for plain counters
DEVICE = {
    "link_frames_to_receiver": ("sender", "netdev/*/tx_frames"),
    "rx_dropped": ("receiver", "netdev/*/rx_dropped"),
    "sender_tx_dropped": ("sender", "netdev/*/tx_dropped"),
    "receiver_tx_dropped": ("receiver", "netdev/*/tx_dropped"),
    "receiver_device_irqs": ("receiver", "netdev/*/irqs"),
    "sender_device_kicks": ("sender", "netdev/*/kicks"),
    "receiver_device_kicks": ("receiver", "netdev/*/kicks"),
    "stale_frames": ("receiver", "netdev/*/stale_frames"),
    "receiver_time_squeeze": ("receiver", "*/softnet/time_squeeze"),
    "sender_time_squeeze": ("sender", "*/softnet/time_squeeze"),
    "receiver_napi_polls": ("receiver", "*/softnet/polls"),
    "sender_napi_polls": ("sender", "*/softnet/polls"),
}
PINGPONG = {"tx_frames": "netdev/*/tx_frames", "rx_frames": "netdev/*/rx_frames", "rx_irqs": "netdev/*/irqs"}
# per received frame: numerator statistics below <machine>/
PER_FRAME = {
    "cache_maint_cycles_per_packet": ["dma/cycles"],
    "dma_line_invalidates_per_packet": ["dma/lines_invalidated", "dma/lines_flushed"],
    "dma_syncs_for_cpu_per_packet": ["dma/syncs_for_cpu"],
    "dma_maps_per_packet": ["dma/maps"],
}


def matches(pattern, path):
    p, q = pattern.split("/"), path.split("/")
    return len(p) == len(q) and all(a in ("*", b) for a, b in zip(p, q))


class After:
    def __init__(self, j):
        self.j = j
        self.stats = {s["path"]: s["value"] for s in j["statistics"]}

    def stat(self, pattern):
        """Sum of the statistics matching `pattern`; None when none does."""
        hits = [v for p, v in self.stats.items() if matches(pattern, p)]
        return sum(hits) if hits else None

    def stat_max(self, pattern, default=None):
        """Largest of the statistics matching `pattern`; `default` when none does."""
        hits = [v for p, v in self.stats.items() if matches(pattern, p)]
        return max(hits) if hits else default

    def findings(self, machine, kind):
        return sum(c["count"] for c in self.j.get("finding_counts", []) if c["machine"] == machine and c["kind"] == kind)

    def category_cycles(self, machine, category):
        for m in self.j["machines"]:
            if m["name"] == machine:
                return sum(c["derived"]["category_cycles"].get(category, 0) for c in m["cpus"])
        return None

    def workload(self, i):
        return self.j["workloads"][i]


class Check:
    def __init__(self, name):
        self.name, self.errors, self.compared = name, [], 0

    def same(self, where, old, new, exact=True):
        self.compared += 1
        if new is MISSING or (new is None and old is not None):
            self.errors.append(f"{where}: {old!r} before, missing after")
        elif old is None or isinstance(old, (str, bool, list, dict)) or (exact and isinstance(old, int)):
            if old != new:
                self.errors.append(f"{where}: {old!r} before, {new!r} after")
        elif not math.isclose(float(old), float(new), rel_tol=REL, abs_tol=1e-12):
            self.errors.append(f"{where}: {old!r} before, {new!r} after")


def other_machine(j, machine):
    others = [m["name"] for m in j["machines"] if m["name"] != machine]
    return others[0] if len(others) == 1 else None


def workload_metric(chk, after, where, w_old, w_new, key, old):
    """Compares one format-1 workload metric with what format 2 says of it."""
    for m in w_new["metrics"]:
        if m["key"] == key:
            return chk.same(where, old, m["value"])
    new_metrics = {m["key"]: m["value"] for m in w_new["metrics"]}
    ends = {"receiver": w_old["machine"], "sender": other_machine(after.j, w_old["machine"])}
    for side in ("receiver", "sender"):
        prefix = side + "_tunnel_"
        if key.startswith(prefix):
            k = key[len(prefix):]
            if k == "cryptd_max_queue":
                return chk.same(where, old, after.stat_max(f"{ends[side]}/tunnel/*/cryptd/*/max_qlen", 0))
            return chk.same(where, old, after.stat(f"{ends[side]}/tunnel/*/{TUNNEL.get(k, k)}"))
        for unit, count in (("segment", "segments_received"), ("datagram", "datagrams_received")):
            prefix = f"{side}_cycles_per_{unit}."
            if key.startswith(prefix):
                n = new_metrics.get(count) or 1
                cycles = after.category_cycles(ends[side], key[len(prefix):])
                return chk.same(where, old, None if cycles is None else cycles / n, exact=False)
    if key in DEVICE:
        side, pattern = DEVICE[key]
        return chk.same(where, old, after.stat(f"{ends[side]}/{pattern}"))
    if key in PINGPONG and w_old["kind"] == "arp_pingpong":
        return chk.same(where, old, after.stat(f"{ends['receiver']}/{PINGPONG[key]}"))
    frames = after.stat(f"{ends['receiver']}/netdev/*/rx_frames")
    if key == "rx_packets_per_s":
        secs = new_metrics.get("seconds")
        return chk.same(where, old, None if secs is None else (frames / secs if secs > 0 else 0), exact=False)
    if key in PER_FRAME:
        parts = [after.stat(f"{ends['receiver']}/{p}") for p in PER_FRAME[key]]
        value = None if None in parts or frames is None else sum(parts) / (frames or 1)
        return chk.same(where, old, value, exact=False)
    chk.errors.append(f"{where}: no mapping for format-1 metric '{key}'")


MOVED_METRICS = ("digest_mismatches", "max_cryptd_queue", "cryptd_drops")


def moved_metrics(chk, after, old):
    """Compares the workload metrics that moved to findings or to cryptd's statistics, and
    returns a copy of `old` without them (rx_flood's own max_cryptd_queue stays)."""
    old = json.loads(json.dumps(old))
    mismatches = {}
    for i, w in enumerate(old["workloads"]):
        if not w["kind"].startswith(("softirq_load", "module_load", "hash_list", "tcrypt")):
            continue
        base = f"{w['machine']}/workload/{w['name']}/cryptd/*"
        for m in w["metrics"]:
            where = f"workloads[{i}]({w['name']}).{m['key']}"
            if m["key"] == "digest_mismatches":
                mismatches[w["machine"]] = mismatches.get(w["machine"], 0) + m["value"]
            elif m["key"] == "max_cryptd_queue":
                chk.same(where, m["value"], after.stat_max(base + "/max_qlen"))
            elif m["key"] == "cryptd_drops":
                chk.same(where, m["value"], after.stat(base + "/refused"))
        w["metrics"] = [m for m in w["metrics"] if m["key"] not in MOVED_METRICS]
    for machine, n in mismatches.items():
        chk.same(f"{machine}: digest_mismatches", n, after.findings(machine, "digest_mismatch"))
    return old


def moved_stat(after, path):
    """The value after of a statistic path that moved, or MISSING."""
    if path.endswith("/cryptd_max_queue"):
        return after.stat_max(path[: -len("cryptd_max_queue")] + "cryptd/*/max_qlen", 0)
    return MISSING


def compare_cpu(chk, after, where, machine, c_old, c_new):
    base = f"{machine}/cpu{c_old['id']}/"
    for k, v in c_old.items():
        w = f"{where}.{k}"
        if k in CPU_FIELDS:
            chk.same(w, v, after.stat(base + CPU_FIELDS[k]))
        elif k == "irqflag_ops":
            for op, n in v.items():
                chk.same(f"{w}.{op}", n, after.stat(base + "irqflags/" + op))
        elif k == "simd":
            for sk, sv in v.items():
                if sk in SIMD_COUNTERS:
                    chk.same(f"{w}.{sk}", sv, after.stat(base + "simd/" + sk))
                else:
                    chk.same(f"{w}.{sk}", sv, c_new["simd"].get(sk, MISSING))
        elif k == "derived":
            for dk, dv in v.items():
                if dk.startswith("simd_") and dk.endswith("_per_bracket"):
                    counter = "begin_end_cycles" if "begin_end" in dk else "bytes"
                    brackets = after.stat(base + "simd/brackets")
                    new = after.stat(base + "simd/" + counter) / brackets if brackets else None
                    chk.same(f"{w}.{dk}", dv, new, exact=False)
                else:
                    chk.same(f"{w}.{dk}", dv, c_new["derived"].get(dk, MISSING))
        else:
            chk.same(w, v, c_new.get(k, MISSING))


# Text added to the results since, read only when BEFORE has it too: who held each driver's
# longest SIMD bracket (a CPU's simd.longest_bracket_holder_by_driver, issue 19; the figures
# themselves are statistics, which BEFORE's statistics must all match).
ADDED_SIMD_DETAILS = ("longest_bracket_holder_by_driver",)
# A machine's profile_sha256 (issue 13): which bytes the profile had. A profile_file (a private
# profile) is never dropped: it says the run did not use the stock profile.
ADDED_MACHINE_DETAILS = ("profile_sha256",)


def without_added_details(old, new):
    new = copy.deepcopy(new)
    # A workload's data_lost (issue 13 item 6) and metrics added since (datagrams_missing).
    for w_old, w_new in zip(old.get("workloads", []), new.get("workloads", [])):
        if "data_lost" not in w_old:
            w_new.pop("data_lost", None)
        keys = {m["key"] for m in w_old.get("metrics", [])}
        w_new["metrics"] = [m for m in w_new.get("metrics", []) if m["key"] in keys]
    for m_old, m_new in zip(old.get("machines", []), new.get("machines", [])):
        for k in ADDED_MACHINE_DETAILS:
            if k not in m_old:
                m_new.pop(k, None)
        for c_old, c_new in zip(m_old.get("cpus", []), m_new.get("cpus", [])):
            for k in ADDED_SIMD_DETAILS:
                if k not in c_old.get("simd", {}):
                    c_new.get("simd", {}).pop(k, None)
    return new


def compare(old, new, name):
    chk = Check(name)
    after = After(new)
    old = moved_metrics(chk, after, old)
    if old.get("format_version", 1) == new.get("format_version"):  # every figure by its own key or path
        old_stats = {s["path"]: s for s in old["statistics"]}
        for p, s in old_stats.items():
            chk.same(f"statistics[{p}]", s["value"], after.stats.get(p, moved_stat(after, p)))
        old, new = dict(old), without_added_details(old, new)
        for j in (old, new):
            j.pop("statistics", None)
            j.pop("format_version", None)
            j.pop("scenario_path", None)  # where the checkout lies, not a figure
        chk.same("everything else", old, new)
        return chk
    for k in ("scenario", "seed", "mode", "simulated_us", "events", "failed"):
        chk.same(k, old[k], new.get(k, MISSING))
    if "finding_counts" in new:
        clobbers = sum(c["count"] for c in new["finding_counts"] if c["kind"] == "simd_clobber")
        chk.same("clobber_count", old["clobber_count"], clobbers)
        kept = [f for f in new["findings"] if f["kind"] == "simd_clobber"]
        for n, c in enumerate(old["clobbers"][:len(kept)]):
            chk.same(f"clobbers[{n}]", c, {k: kept[n][k] for k in c})
        if len(kept) < min(len(old["clobbers"]), 16):
            chk.errors.append(f"clobbers: {len(old['clobbers'])} kept before, {len(kept)} after")
    else:
        for k in ("clobber_count", "failures", "clobbers"):
            chk.same(k, old[k], new.get(k, MISSING))
    for i, m_old in enumerate(old["machines"]):
        m_new = new["machines"][i]
        for k, v in m_old.items():
            if k != "cpus":
                chk.same(f"machines[{i}].{k}", v, m_new.get(k, MISSING))
        if "profile_file" in m_new and "profile_file" not in m_old:
            chk.same(f"machines[{i}].profile_file", MISSING, m_new["profile_file"])
        for n, c_old in enumerate(m_old["cpus"]):
            compare_cpu(chk, after, f"machines[{i}].cpus[{n}]", m_old["name"], c_old, m_new["cpus"][n])
    for i, w_old in enumerate(old["workloads"]):
        w_new = new["workloads"][i]
        for k in ("name", "kind", "machine", "cpu", "notes"):
            chk.same(f"workloads[{i}].{k}", w_old.get(k), w_new.get(k))  # notes may be absent in both
        for m in w_old["metrics"]:
            workload_metric(chk, after, f"workloads[{i}]({w_old['name']}).{m['key']}", w_old, w_new, m["key"], m["value"])
    return chk


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    before, after = argv[1], argv[2]
    names = sorted(f for f in os.listdir(before) if f.endswith(".json"))
    if not names:
        print(f"{before}: no *.json files", file=sys.stderr)
        return 2
    failed, figures = 0, 0
    for name in names:
        path = os.path.join(after, name)
        if not os.path.exists(path):
            print(f"{name}: MISSING in {after}")
            failed += 1
            continue
        with open(os.path.join(before, name)) as a, open(path) as b:
            chk = compare(json.load(a), json.load(b), name)
        figures += chk.compared
        if chk.errors:
            failed += 1
            print(f"{name}: {len(chk.errors)} difference(s) of {chk.compared} figures")
            for e in chk.errors[:20]:
                print(f"  {e}")
    print(f"{len(names) - failed} of {len(names)} files agree ({figures} figures compared)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
