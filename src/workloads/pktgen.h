// A packet generator into the machine under test, as the kernel's pktgen (net/core/pktgen.c)
// drives it: one kthread per generating CPU builds one skb and hands it to the driver's
// ndo_start_xmit over and over (clone_skb: no allocation per packet, no socket, no qdisc), as
// fast as the driver takes it. Minimum-size UDP frames, the receive-and-drop benchmark of the
// XDP paper (TRex on another box there; the generator's own cost does not enter what the machine
// under test does, as long as it sends faster than that machine can receive). The receiving
// side is the machine's ordinary NIC, NAPI and stack; this workload counts what it took.
#pragma once

#include "workloads/config.h"
#include "workloads/iperf3.h"
#include "workloads/workload.h"

#include <vector>

namespace kdsim::workloads {

class Pktgen final : public Workload {
public:
    // `env` and `rx` are the receiver's; the generator threads run on `peer_cpus` and send
    // through `tx`'s device. Frames carry `flow`; none is sent at or after `stop_at`.
    Pktgen(Env env, PktgenWorkload cfg, Iperf3End rx, std::vector<kernel::Cpu*> peer_cpus, Iperf3End tx,
           std::uint32_t flow, engine::Tick stop_at);
    void start() override;
    bool finite() const override { return false; }
    results::WorkloadResult result() const override;

private:
    static engine::Task<> thread(Pktgen& w, kernel::Cpu& cpu);

    PktgenWorkload cfg_;
    Iperf3End rx_, tx_;
    std::vector<kernel::Cpu*> peer_cpus_;
    std::uint32_t flow_;
    engine::Tick stop_at_;
    std::uint64_t sent_ = 0;
};

} // namespace kdsim::workloads
