#include "workloads/udp_flows.h"

#include "kernel/sched.h"
#include "net/tcp.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>

namespace kdsim::workloads {

using kernel::Cat;

UdpFlows::UdpFlows(Env env, UdpFlowsWorkload cfg, Iperf3End rx, kernel::Cpu& peer_cpu, Iperf3End tx,
                   std::uint32_t first_flow, engine::Tick stop_at)
    : Workload(env), cfg_(std::move(cfg)), rx_(std::move(rx)), tx_(std::move(tx)), peer_cpu_(peer_cpu),
      first_flow_(first_flow), stop_at_(stop_at),
      table_(*rx_.stack, *rx_.udp, *rx_.net, rx_.tcp->copy_to_user_cold, first_flow, cfg_.flows, cfg_.length,
             cfg_.rcvbuf) {
    engine::Rng rng = env_.sim.rng("phases:" + env_.machine + "/" + cfg_.name);
    slots_.resize(cfg_.flows);
    for (std::uint32_t f = 0; f < cfg_.flows; ++f) slots_[f] = Slot{rng.below(cfg_.interval), f};
    std::sort(slots_.begin(), slots_.end(),
              [](const Slot& a, const Slot& b) { return a.phase != b.phase ? a.phase < b.phase : a.flow < b.flow; });
}

void UdpFlows::start() {
    rx_task_ = &env_.cpu.create_task(cfg_.name + "-rx", kernel::SchedPolicy::NORMAL, 0, false, reader(*this));
    kernel::TaskStruct& tx = peer_cpu_.create_task(cfg_.name + "-tx", kernel::SchedPolicy::NORMAL, 0, false, sender(*this));
    tx.timer_slack = cfg_.timer_slack;
    rx_task_->in_user = tx.in_user = true;
}

engine::Task<> UdpFlows::reader(UdpFlows& w) { co_await w.table_.read_loop(w.env_.cpu, *w.rx_task_); }

// sendto() on the flow's connected socket: udp_sendmsg, then the route's output.
engine::Task<> UdpFlows::send_one(const Slot& s) {
    kernel::Cpu& cpu = peer_cpu_;
    co_await kernel::syscall_enter(cpu);
    co_await cpu.exec(tx_.net->syscall, Cat::SYSCALL);
    co_await cpu.exec(net::per_byte(tx_.tcp->copy_from_user, cfg_.length), Cat::COPY);
    co_await cpu.exec(tx_.udp->udp_sendmsg, Cat::PROTOCOL);
    net::Packet p{};
    p.kind = net::FrameKind::UDP_DATA;
    p.len = cfg_.length + net::UDP_IP_HEADERS + net::ETH_HEADER;
    p.payload = cfg_.length;
    p.flow = first_flow_ + s.flow;
    co_await tx_.stack->ip_output(cpu, p);
    co_await kernel::syscall_exit(cpu);
}

// The walk over the rounds: datagram (round r, slot i) is due at start + r * interval + phase_i.
engine::Task<> UdpFlows::sender(UdpFlows& w) {
    kernel::Cpu& cpu = w.peer_cpu_;
    for (;;) {
        if (w.cfg_.count && w.rounds_ >= w.cfg_.count) break;
        const Slot& s = w.slots_[w.next_];
        const engine::Tick due = w.cfg_.start + w.rounds_ * w.cfg_.interval + s.phase;
        if (due >= w.stop_at_) break;
        if (cpu.now() < due) { // epoll_wait until the next one is due: ep_poll's timeout has slack
            co_await kernel::schedule_hrtimeout_range(cpu, due, kernel::select_estimate_accuracy(cpu, due));
            continue;
        }
        w.max_lag_ = std::max(w.max_lag_, cpu.now() - due);
        ++w.sent_; // counted at the sendto() call: a run may end while it is in the kernel
        if (++w.next_ == w.slots_.size()) {
            w.next_ = 0;
            ++w.rounds_;
        }
        co_await w.send_one(s);
    }
}

results::WorkloadResult UdpFlows::result() const {
    auto r = base_result(cfg_.name, "udp flows");
    const net::UdpTableStats& t = table_.stats();
    const auto& nic = rx_.stack->nic().stats();
    std::uint32_t rmin = UINT32_MAX, rmax = 0;
    std::uint64_t silent = 0;
    for (const net::UdpFlowSocket& s : table_.sockets()) {
        rmin = std::min(rmin, s.received);
        rmax = std::max(rmax, s.received);
        silent += s.received == 0;
    }
    const std::uint64_t tx_dropped = tx_.stack->nic().stats().tx_dropped;
    const std::uint64_t dropped = t.rcvbuf_drops + nic.rx_dropped + tx_dropped;
    const std::uint64_t accounted = t.received + dropped;
    const double in_flight = static_cast<double>(sent_) - static_cast<double>(accounted);
    char buf[160];
    std::snprintf(buf, sizeof buf, "%u flows, %llu datagrams sent, %llu received, %llu dropped, %.0f in flight",
                  cfg_.flows, static_cast<unsigned long long>(sent_), static_cast<unsigned long long>(t.received),
                  static_cast<unsigned long long>(dropped), in_flight);
    r.notes.emplace_back("flows", buf);
    if (dropped > 0)
        r.data_lost = fmt::format("{} of {} datagrams dropped and not recovered (UDP does not retransmit): {} at the "
                                  "sockets' receive buffers, {} at the rx ring, {} at the sender's tx queue",
                                  dropped, sent_, t.rcvbuf_drops, nic.rx_dropped, tx_dropped);
    add(r, "flows", cfg_.flows, "count");
    add(r, "datagrams_sent", static_cast<double>(sent_), "count");
    add(r, "datagrams_received", static_cast<double>(t.received), "count");
    add(r, "datagrams_read", static_cast<double>(t.read), "count");
    add(r, "datagrams_in_flight", in_flight, "count");
    add(r, "socket_rcvbuf_drops", static_cast<double>(t.rcvbuf_drops), "count");
    // datagrams per flow: the sender's position gives each flow's count without a counter
    add(r, "flow_sent_min", static_cast<double>(rounds_), "count");
    add(r, "flow_sent_max", static_cast<double>(rounds_ + (next_ > 0 ? 1 : 0)), "count");
    add(r, "flow_received_min", static_cast<double>(rmin), "count");
    add(r, "flow_received_max", static_cast<double>(rmax), "count");
    add(r, "flows_without_datagram", static_cast<double>(silent), "count");
    add(r, "sender_max_lag_us", engine::to_us(max_lag_), "us");
    add(r, "epoll_waits", static_cast<double>(t.epoll_waits), "count");
    add(r, "reader_wakeups", static_cast<double>(t.wakeups), "count");
    return r;
}

} // namespace kdsim::workloads
