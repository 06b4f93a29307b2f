#include "workloads/iperf3.h"

#include "kernel/sched.h"

namespace kdsim::workloads {

Iperf3::Iperf3(Env env, Iperf3Workload cfg, net::Stack& stack, const net::TcpCosts& rx_costs, kernel::Cpu& peer_cpu,
               net::Stack& peer_stack, const net::TcpCosts& tx_costs, engine::Tick stop_at)
    : Workload(env), cfg_(std::move(cfg)), stack_(stack), peer_cpu_(peer_cpu), peer_stack_(peer_stack),
      stop_at_(stop_at), sink_(stack, rx_costs, cfg_.rcvbuf), source_(peer_stack, tx_costs, cfg_.window) {}

void Iperf3::start() {
    server_task_ = &env_.cpu.create_task(cfg_.name + "-s", kernel::SchedPolicy::NORMAL, 0, false, server(*this));
    client_task_ = &peer_cpu_.create_task(cfg_.name + "-c", kernel::SchedPolicy::NORMAL, 0, false, client(*this));
    server_task_->in_user = client_task_->in_user = true;
}

engine::Task<> Iperf3::server(Iperf3& w) { co_await w.sink_.read_loop(w.env_.cpu, *w.server_task_); }

engine::Task<> Iperf3::client(Iperf3& w) {
    co_await kernel::hrtimer_sleep_until(w.peer_cpu_, w.cfg_.start);
    co_await w.source_.send_loop(w.peer_cpu_, *w.client_task_, w.stop_at_);
}

results::WorkloadResult Iperf3::result() const {
    auto r = base_result(cfg_.name, "iperf3 tcp");
    engine::Tick end = std::min(env_.sim.now(), stop_at_);
    double secs = end > cfg_.start ? engine::to_s(end - cfg_.start) : 0;
    const auto& nic = stack_.nic().stats();
    add(r, "receiver_mbit_s", secs > 0 ? static_cast<double>(sink_.bytes_read()) * 8 / secs / 1e6 : 0, "Mbit/s");
    add(r, "sender_mbit_s", secs > 0 ? static_cast<double>(source_.bytes_acked()) * 8 / secs / 1e6 : 0, "Mbit/s");
    add(r, "receiver_bytes", static_cast<double>(sink_.bytes_read()), "bytes");
    add(r, "segments_received", static_cast<double>(sink_.segments()), "count");
    add(r, "rx_packets_per_s", secs > 0 ? static_cast<double>(nic.rx_frames) / secs : 0, "1/s");
    add(r, "acks_sent", static_cast<double>(sink_.acks_sent()), "count");
    add(r, "window_updates", static_cast<double>(sink_.window_updates()), "count");
    add(r, "segments_sent", static_cast<double>(source_.segments_sent()), "count");
    add(r, "bytes_acked", static_cast<double>(source_.bytes_acked()), "bytes");
    add(r, "link_frames_to_receiver", static_cast<double>(peer_stack_.nic().stats().tx_frames), "count");
    add(r, "rx_dropped", static_cast<double>(nic.rx_dropped), "count");
    add(r, "stale_frames", static_cast<double>(nic.stale_frames), "count");
    if (const devices::DmaPlatform* d = stack_.nic().dma()) {
        double pkts = static_cast<double>(nic.rx_frames ? nic.rx_frames : 1);
        add(r, "cache_maint_cycles_per_packet", static_cast<double>(d->stats().cycles) / pkts, "cycles");
        add(r, "dma_line_invalidates_per_packet",
            static_cast<double>(d->stats().inner_inv + d->stats().inner_flush) / pkts, "count");
    }
    return r;
}

} // namespace kdsim::workloads
