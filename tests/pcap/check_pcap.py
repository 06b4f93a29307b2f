#!/usr/bin/env python3
"""kdsim run --pcap, checked with tshark: runs a scenario with --pcap and --json, then has tshark
dissect (and, for ESP, decrypt with the esp_sa file kdsim wrote) every capture, and compares what
tshark counts with kdsim's own counters from the run's JSON.

usage: check_pcap.py KDSIM SCENARIO CASE [kdsim run options...]
CASE: tcp, esp, wg or arp (what the frames must dissect as). Exits 0 with a line "N passed, 0
failed", 1 on a failed check; skips (exit 0, saying so) only when tshark is not installed."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

PROTOCOLS = {
    "tcp": {"eth:ethertype:ip:tcp", "eth:ethertype:ip:tcp:data"},
    "esp": {"eth:ethertype:ip:esp:ip:tcp", "eth:ethertype:ip:esp:ip:tcp:data"},
    "wg": {"eth:ethertype:ip:udp:wg"},
    "arp": {"eth:ethertype:arp"},
}
CHECKSUMS = ["-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE"]

passed = 0
failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok: {what}")
    else:
        failed += 1
        print(f"FAILED: {what}")


def tshark(pcap, fields, extra=(), display=None):
    """One list of field values per frame."""
    cmd = ["tshark", "-n", "-r", pcap, "-T", "fields", "-E", "separator=\t", "-E", "occurrence=a", *extra]
    if display:
        cmd += ["-Y", display]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines()]


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    kdsim, scenario, case = sys.argv[1:4]
    if shutil.which("tshark") is None:
        print("SKIPPED: tshark is not installed (tools/setup-deps.sh installs it)")
        return 0
    tmp = tempfile.mkdtemp(prefix="kdsim-pcap-")
    try:
        cap = os.path.join(tmp, "cap")
        run = subprocess.run([kdsim, "run", scenario, "--pcap", cap, "--json", os.path.join(tmp, "r.json"), "-q",
                              *sys.argv[4:]], capture_output=True, text=True)
        check(run.returncode == 0, f"kdsim run --pcap exits 0 ({run.returncode}: {run.stderr.strip()})")
        if run.returncode != 0:
            return 1
        with open(os.path.join(tmp, "r.json")) as f:
            results = json.load(f)
        subprocess.run([kdsim, "run", scenario, "--json", os.path.join(tmp, "r0.json"), "-q", *sys.argv[4:]],
                       capture_output=True, check=True)
        with open(os.path.join(tmp, "r0.json")) as f:
            check(json.load(f) == results, "the results are the same without --pcap")
        stat = {s["path"]: s["value"] for s in results["statistics"]}
        machines = [m["name"] for m in results["machines"]]
        extra = list(CHECKSUMS)
        if case == "esp":
            with open(os.path.join(cap, "esp_sa")) as f:
                sas = [line.strip() for line in f if line.strip() and not line.startswith("#")]
            check(len(sas) == 2, f"esp_sa holds one SA per direction ({len(sas)})")
            extra += ["-o", "esp.enable_encryption_decode:TRUE", "-o", "esp.enable_authentication_check:TRUE"]
            for sa in sas:
                extra += ["-o", "uat:esp_sa:" + sa]
        files = sorted(os.listdir(cap))
        want = sorted([f"{m}-eth0.pcap" for m in machines] + (["esp_sa"] if case == "esp" else []))
        check(files == want, f"one capture per device: {files}")
        for i, m in enumerate(machines):
            pcap = os.path.join(cap, f"{m}-eth0.pcap")
            dev = f"{m}/netdev/eth0/"
            frames = tshark(pcap, ["frame.protocols", "ip.checksum.status", "tcp.checksum.status", "udp.checksum.status",
                                   "eth.src"], extra)
            mac = f"02:00:00:00:00:{i + 1:02x}"
            tx = sum(1 for f in frames if f[4] == mac)
            rx = len(frames) - tx
            check(tx == stat.get(dev + "tx_frames", 0), f"{m}: tshark reads {tx} frames sent = netdev tx_frames")
            # The tap sees a received frame at netif_receive_skb, after the driver counted it: when
            # the run ends, the frame the driver is handling may be counted and not yet seen.
            behind = stat.get(dev + "rx_frames", 0) - rx
            check(0 <= behind <= 1, f"{m}: tshark reads {rx} frames received = netdev rx_frames less the one in the driver at the end ({behind})")
            protos = {f[0] for f in frames}
            check(protos <= PROTOCOLS[case], f"{m}: every frame dissects as {sorted(PROTOCOLS[case])}: {sorted(protos)}")
            statuses = {s for f in frames for col in f[1:4] for s in col.split(",") if s}
            check(statuses <= {"1"} and (case == "arp" or statuses), f"{m}: every IP, TCP and UDP checksum is good: {sorted(statuses)}")
            me = f"192.0.2.{i + 1}"
            if case == "esp":
                esp = tshark(pcap, ["esp.sequence", "esp.icv_good"], extra, f"ip.src == {me} && esp")
                seqs = sorted(int(e[0]) for e in esp)
                sent = stat[f"{m}/tunnel/esp0/tx_sent"]
                # what the tunnel sent minus what the device's full tx queue dropped
                want_seqs = stat[dev + "tx_frames"]
                check(seqs == list(range(1, want_seqs + 1)) and want_seqs <= sent,
                      f"{m}: ESP sequence numbers sent are 1..{want_seqs} (tunnel tx_sent {sent})")
                check(all(e[1] == "1" for e in esp), f"{m}: every ICV verifies with the SA's key")
            if case == "wg":
                wg = tshark(pcap, ["wg.type", "wg.receiver", "wg.counter"], extra, f"ip.src == {me}")
                check({w[0] for w in wg} == {"4"}, f"{m}: every message is transport data (type 4)")
                counters = sorted(int(w[2]) for w in wg)
                n = stat[dev + "tx_frames"]
                check(counters == list(range(n)), f"{m}: WireGuard counters sent are 0..{n - 1}")
                check(len({w[1] for w in wg}) == 1, f"{m}: one receiver index")
            if case in ("tcp", "esp"):
                check_tcp(pcap, extra, stat, m, me)
        if case == "arp":
            req = tshark(os.path.join(cap, f"{machines[0]}-eth0.pcap"), ["arp.opcode"], extra, "arp.opcode == 1")
            check(len(req) == stat[f"{machines[0]}/netdev/eth0/tx_frames"], f"{machines[0]}: sends only ARP requests ({len(req)})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def check_tcp(pcap, extra, stat, m, me):
    flow = f"{m}/tcp/flow0/"
    if flow + "segments_sent" not in stat:
        return  # the receiving end: its ACKs were counted with the frames
    seg = tshark(pcap, ["tcp.seq_raw", "tcp.len", "tcp.payload", "tcp.analysis.retransmission",
                        "tcp.analysis.out_of_order", "tcp.analysis.duplicate_ack"], extra,
                 f"ip.src == {me} && tcp.len > 0 || ip.dst == {me} && tcp.len == 0")
    data = [s for s in seg if s[1] != "0"]
    acks = [s for s in seg if s[1] == "0"]
    check(len(data) == stat[f"{m}/netdev/eth0/tx_frames"], f"{m}: data segments captured = frames sent ({len(data)})")
    # A segment that does not advance the sequence number is sent again: counted from the bytes here.
    highest, again = 0, 0
    for s in data:
        end = int(s[0]) + int(s[1])
        if end <= highest:
            again += 1
        highest = max(highest, end)
    retrans = stat.get(flow + "retransmits", 0)
    check(retrans > 0 and again == retrans, f"{m}: segments sent again in the capture {again} = kdsim retransmits {retrans} (> 0)")
    # tshark flags them as retransmissions, or as out-of-order when within its 3 ms threshold (no
    # handshake gives it the RTT)
    flagged = sum(1 for s in data if s[3] or s[4])
    check(flagged == retrans, f"{m}: tshark flags {flagged} retransmissions or out-of-order = kdsim retransmits {retrans}")
    dup = sum(1 for s in acks if s[5])
    check(dup == stat.get(flow + "dupacks", 0), f"{m}: tshark's duplicate ACKs {dup} = kdsim dupacks {stat.get(flow + 'dupacks', 0)}")
    # the payload pattern: stream offset o (sequence number o + 1) carries o mod 251
    bad = 0
    for s in data:
        start = int(s[0]) - 1
        payload = bytes.fromhex(s[2].replace(":", ""))
        if payload != bytes((start + k) % 251 for k in range(len(payload))):
            bad += 1
    check(bad == 0, f"{m}: every segment's payload is the stream pattern at its offset ({len(data)} segments)")


if __name__ == "__main__":
    sys.exit(main())
