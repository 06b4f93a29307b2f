#include "workloads/pktgen.h"

#include "kernel/sched.h"
#include "net/stack.h"
#include "net/udp.h"

#include <algorithm>

namespace kdsim::workloads {

Pktgen::Pktgen(Env env, PktgenWorkload cfg, Iperf3End rx, std::vector<kernel::Cpu*> peer_cpus, Iperf3End tx,
               std::uint32_t flow, engine::Tick stop_at)
    : Workload(env), cfg_(std::move(cfg)), rx_(std::move(rx)), tx_(std::move(tx)), peer_cpus_(std::move(peer_cpus)),
      flow_(flow), stop_at_(stop_at) {}

void Pktgen::start() {
    for (std::size_t i = 0; i < peer_cpus_.size(); ++i)
        peer_cpus_[i]->create_task(cfg_.name + "/" + std::to_string(i), kernel::SchedPolicy::NORMAL, 0, true,
                                   thread(*this, *peer_cpus_[i]));
}

// Models: pktgen_xmit() (net/core/pktgen.c)
engine::Task<> Pktgen::thread(Pktgen& w, kernel::Cpu& cpu) {
    if (cpu.now() < w.cfg_.start) co_await kernel::hrtimer_sleep_until(cpu, w.cfg_.start);
    net::Packet p;
    p.kind = net::FrameKind::UDP_DATA;
    p.len = w.cfg_.frame;
    p.payload = w.cfg_.frame - net::UDP_IP_HEADERS - 14;
    p.flow = w.flow_;
    while (cpu.now() < w.stop_at_) {
        p.seq = w.sent_++;
        co_await w.tx_.stack->nic().xmit(cpu, p);
    }
}

results::WorkloadResult Pktgen::result() const {
    auto r = base_result(cfg_.name, "pktgen");
    const engine::Tick end = std::min(env_.sim.now(), stop_at_);
    const double secs = end > cfg_.start ? engine::to_s(end - cfg_.start) : 0;
    const auto& rx = rx_.stack->nic().stats();
    const std::uint64_t tx_dropped = tx_.stack->nic().stats().tx_dropped;
    const std::uint64_t nf = rx_.stack->nf_dropped();
    const double mpps = secs > 0 ? static_cast<double>(rx.rx_frames) / secs / 1e6 : 0;
    add(r, "packets_sent", static_cast<double>(sent_), "count");
    add(r, "sender_tx_dropped", static_cast<double>(tx_dropped), "count");
    add(r, "rx_dropped", static_cast<double>(rx.rx_dropped), "count");
    add(r, "packets_received", static_cast<double>(rx.rx_frames), "count");
    add(r, "nf_dropped", static_cast<double>(nf), "count");
    if (rx_.stack->nf_conntrack()) add(r, "nf_ct_created", static_cast<double>(rx_.stack->nf_ct_created()), "count");
    add(r, "in_flight", static_cast<double>(sent_ - std::min(sent_, tx_dropped + rx.rx_dropped + rx.rx_frames)), "count");
    add(r, "rx_mpps", mpps, "Mpps");
    add(r, "nf_drop_mpps", secs > 0 ? static_cast<double>(nf) / secs / 1e6 : 0, "Mpps");
    add(r, "ns_per_packet", mpps > 0 ? 1e3 / mpps : 0, "ns");
    return r;
}

} // namespace kdsim::workloads
