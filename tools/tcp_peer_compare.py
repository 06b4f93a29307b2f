#!/usr/bin/env python3
"""kdsim's CUBIC against ns-3's TcpCubic on the same link and loss pattern (docs/tcp.md).

For each scenario of scenarios/tcp-peer/ it runs kdsim with the tcp_probe trace
(--trace-categories tcp) and bench/peers' kdsim_tcp_cubic_ns3 with the scenario's rate, one-way
delay, queue, run length and drop pattern, then prints side by side: where slow start ended,
each loss (cwnd before it, ssthresh after it, the fast-recovery episode's length, the time until
cwnd is back at its pre-loss value), cwnd at fixed times, retransmissions and goodput.

Both sides give (time, cwnd, ssthresh, ca_state) snapshots in segments: kdsim's tcp_probe as each
ACK reaches the sender (the state before the ACK is processed), ns-3's on every change of the
socket's CongestionWindow, SlowStartThreshold or CongState. Times are from the flow's first
data segment (kdsim: the iperf3 start; ns-3: its first data transmission, after the handshake).

Usage: tools/tcp_peer_compare.py [--build build] [--out DIR] [--cases no-loss,one-drop,...]
Needs a build configured with -DKDSIM_BUILD_PEERS=ON (libns3-dev).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = ["no-loss", "one-drop", "burst3", "periodic"]
FIXED_TIMES = [0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 6]
STATES = {"Open": 0, "Disorder": 1, "CWR": 2, "Recovery": 3, "Loss": 4}
INFINITE = 0x7FFFFFFF
PROBE = re.compile(r" (\d+\.\d+): tcp_probe: flow=(\d+) snd_cwnd=(\d+) ssthresh=(\d+) ca_state=(\w+)")
UNITS = {"ms": 1e-3, "us": 1e-6, "s": 1.0, "ns": 1e-9}
RATES = {"Gbit/s": 1e9, "Mbit/s": 1e6, "kbit/s": 1e3, "bit/s": 1.0}


def seconds(text):
    m = re.fullmatch(r"\s*([0-9.]+)\s*(\w+)\s*", text)
    return float(m.group(1)) * UNITS[m.group(2)]


def bit_rate(text):
    m = re.fullmatch(r"\s*([0-9.]+)\s*(\S+)\s*", text)
    return float(m.group(1)) * RATES[m.group(2)]


def scenario_of(case):
    path = os.path.join(ROOT, "scenarios", "tcp-peer", case + ".toml")
    with open(path, "rb") as f:
        s = tomllib.load(f)
    link = s["link"][0]
    wl = next(w for m in s["machine"] for w in m.get("workload", []) if w["kind"] == "iperf3")
    start = seconds(wl.get("start", "5 ms"))
    return {
        "path": path,
        "rate": bit_rate(link["rate"]),
        "delay_ms": seconds(link["latency"]) * 1e3,
        "queue": link.get("queue", 1000),
        "drop": link.get("drop", []),
        "drop_every": link.get("drop_every", 0),
        "start": start,
        "seconds": seconds(s["scenario"]["duration"]) - start,
    }


def run_kdsim(kdsim, sc, out, case):
    trace = os.path.join(out, case + ".kdsim.txt")
    js = os.path.join(out, case + ".kdsim.json")
    subprocess.run([kdsim, "run", sc["path"], "--quiet", "--trace", trace, "--trace-categories", "tcp",
                    "--trace-limit", "10000000", "--json", js], check=True, stdout=subprocess.DEVNULL)
    snaps = []
    with open(trace) as f:
        for line in f:
            m = PROBE.search(line)
            if m and m.group(2) == "0":
                snaps.append((float(m.group(1)) - sc["start"], int(m.group(3)), int(m.group(4)), STATES[m.group(5)]))
    with open(js) as f:
        run = json.load(f)
    metrics = {}
    for w in run.get("workloads", []):
        if w.get("name") == "iperf3":
            metrics = {x["key"]: x["value"] for x in w["metrics"]}
    return {
        "snaps": snaps,
        "goodput": metrics.get("receiver_mbit_s"),
        "retransmits": int(metrics.get("retransmits", 0)),
        "dropped": None,
    }


def run_ns3(ns3, sc, out, case):
    cmd = [ns3, f"--rate={sc['rate']:.0f}", f"--delay-ms={sc['delay_ms']}", f"--queue={sc['queue']}",
           f"--seconds={sc['seconds']}"]
    if sc["drop"]:
        cmd.append("--drop=" + ",".join(str(x) for x in sc["drop"]))
    if sc["drop_every"]:
        cmd.append(f"--drop-every={sc['drop_every']}")
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    with open(os.path.join(out, case + ".ns3.txt"), "w") as f:
        f.write(" ".join(cmd) + "\n" + text)
    t0, snaps, res = 0.0, [], {"dropped": None, "retransmits": 0, "goodput": None}
    for line in text.splitlines():
        w = line.split()
        if not w or w[0] == "#":
            continue
        if w[0] == "t0":
            t0 = float(w[1])
        elif w[0] == "probe":
            snaps.append((float(w[1]) - t0, int(w[2]), int(w[3]), int(w[4])))
        elif w[0] == "goodput":
            res["goodput"] = int(w[1]) * 8 / float(w[2]) / 1e6
        elif w[0] == "retransmits":
            res["retransmits"] = int(w[1])
        elif w[0] == "dropped":
            res["dropped"] = int(w[1])
    # one snapshot per instant: the last (the state after every change made at that time)
    merged = []
    for s in snaps:
        if merged and merged[-1][0] == s[0]:
            merged[-1] = s
        else:
            merged.append(s)
    res["snaps"] = [s for s in merged if s[0] >= 0] if merged else []
    return res


def analyse(snaps, horizon):
    """Slow start's end, the loss episodes and cwnd at fixed times, from (t, cwnd, ssthresh, state)."""
    a = {"ss_end": None, "losses": [], "at": {}, "max_cwnd": max((s[1] for s in snaps), default=0)}
    for i, (t, cwnd, ssth, st) in enumerate(snaps):
        if ssth < INFINITE and a["ss_end"] is None:
            a["ss_end"] = (t, cwnd if st == 0 else snaps[i - 1][1], "HyStart" if st == 0 else "loss")
        if st in (3, 4) and i > 0 and snaps[i - 1][3] not in (3, 4):
            before = snaps[i - 1][1]
            end = next((u for u, _, _, s2 in snaps[i:] if s2 == 0), None)
            back = next((u for u, c, _, _ in snaps[i:] if c >= before), None)
            a["losses"].append({"t": t, "kind": "RTO" if st == 4 else "recovery", "cwnd": before, "ssthresh": ssth,
                                "episode": None if end is None else end - t,
                                "regain": None if back is None else back - t})
    for x in FIXED_TIMES:
        if x <= horizon + 1e-9:
            prior = [s for s in snaps if s[0] <= x]
            a["at"][x] = prior[-1][1] if prior else None
    return a


def fmt_t(x):
    return "-" if x is None else f"{x * 1e3:.0f} ms" if x < 1 else f"{x:.2f} s"


def report(case, sc, k, n):
    ka, na = analyse(k["snaps"], sc["seconds"]), analyse(n["snaps"], sc["seconds"])
    rows = [("goodput (Mbit/s)", f"{k['goodput']:.1f}", f"{n['goodput']:.1f}"),
            ("segments retransmitted", str(k["retransmits"]), str(n["retransmits"])),
            ("largest cwnd", str(ka["max_cwnd"]), str(na["max_cwnd"]))]

    def ss(a):
        return "-" if a["ss_end"] is None else f"{fmt_t(a['ss_end'][0])}, cwnd {a['ss_end'][1]} ({a['ss_end'][2]})"
    rows.append(("slow start ended", ss(ka), ss(na)))
    for i in range(max(len(ka["losses"]), len(na["losses"]))):
        if i >= 12:
            rows.append((f"... {max(len(ka['losses']), len(na['losses'])) - 12} more loss episodes", "", ""))
            break
        def cell(a, f):
            if i >= len(a["losses"]):
                return "-"
            return f(a["losses"][i])
        rows.append((f"loss {i + 1}: at", cell(ka, lambda e: f"{fmt_t(e['t'])} ({e['kind']})"),
                     cell(na, lambda e: f"{fmt_t(e['t'])} ({e['kind']})")))
        rows.append((f"loss {i + 1}: cwnd before / ssthresh after", cell(ka, lambda e: f"{e['cwnd']} / {e['ssthresh']}"),
                     cell(na, lambda e: f"{e['cwnd']} / {e['ssthresh']}")))
        rows.append((f"loss {i + 1}: recovery episode / back at pre-loss cwnd",
                     cell(ka, lambda e: f"{fmt_t(e['episode'])} / {fmt_t(e['regain'])}"),
                     cell(na, lambda e: f"{fmt_t(e['episode'])} / {fmt_t(e['regain'])}")))
    if len(ka["losses"]) > 12 or len(na["losses"]) > 12:
        rows.append(("loss episodes", str(len(ka["losses"])), str(len(na["losses"]))))
    for x in ka["at"]:
        rows.append((f"cwnd at {fmt_t(x)}", str(ka["at"][x]), str(na["at"].get(x))))
    drops = f"drop = {sc['drop']}" if sc["drop"] else f"drop_every = {sc['drop_every']}" if sc["drop_every"] else "no drops"
    out = [f"### {case}: {drops}", "", "| | kdsim | ns-3 TcpCubic |", "|---|---|---|"]
    out += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    if n["dropped"] is not None:
        out.append(f"\nns-3's error model dropped {n['dropped']} segments.")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "tcp-peer"))
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args()
    kdsim = os.path.join(args.build, "kdsim")
    ns3 = os.path.join(args.build, "bench", "peers", "kdsim_tcp_cubic_ns3")
    if not os.access(ns3, os.X_OK):
        sys.exit(f"{ns3} not found: configure with -DKDSIM_BUILD_PEERS=ON (needs libns3-dev) and build it")
    os.makedirs(args.out, exist_ok=True)
    for case in args.cases.split(","):
        sc = scenario_of(case)
        k = run_kdsim(kdsim, sc, args.out, case)
        n = run_ns3(ns3, sc, args.out, case)
        print(report(case, sc, k, n))


if __name__ == "__main__":
    main()
