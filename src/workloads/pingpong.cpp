#include "workloads/pingpong.h"

#include "kernel/sched.h"

namespace kdsim::workloads {

using kernel::Cat;

ArpPingPong::ArpPingPong(Env env, ArpPingPongWorkload cfg, net::Stack& stack)
    : Workload(env), cfg_(std::move(cfg)), stack_(stack) {
    rtts_.reserve(cfg_.count);
}

void ArpPingPong::start() {
    start_finite_process(cfg_.name, arping(*this));
}

engine::Task<> ArpPingPong::arping(ArpPingPong& w) {
    kernel::Cpu& cpu = w.env_.cpu;
    const auto& c = w.stack_.nic().costs();
    w.started_ = cpu.now();
    for (std::uint64_t i = 0; i < w.cfg_.count; ++i) {
        engine::Tick t0 = cpu.now();
        // sendto(): packet_sendmsg -> dev_queue_xmit
        co_await kernel::syscall_enter(cpu);
        co_await cpu.exec(c.syscall, Cat::SYSCALL);
        co_await cpu.exec(c.sock_sendmsg, Cat::COPY);
        co_await w.stack_.dev_queue_xmit(cpu, net::Packet{net::FrameKind::ARP_REQUEST, 42, i, 0, 0, 0});
        co_await kernel::syscall_exit(cpu);
        // recvfrom(): blocks until the reply is queued
        co_await kernel::syscall_enter(cpu);
        co_await cpu.exec(c.syscall, Cat::SYSCALL);
        (void)co_await w.stack_.packet_recvmsg(cpu);
        co_await kernel::syscall_exit(cpu);
        w.rtts_.push_back(cpu.now() - t0);
        if (w.cfg_.interval) co_await kernel::hrtimer_sleep_until(cpu, cpu.now() + w.cfg_.interval);
    }
    w.finished_ = cpu.now();
    w.done_ = true;
    w.env_.completion.done();
}

results::WorkloadResult ArpPingPong::result() const {
    auto r = base_result(cfg_.name, "arp_pingpong");
    engine::Tick total = (done_ ? finished_ : env_.sim.now()) - started_;
    add(r, "completed", done_ ? 1 : 0, "bool");
    add(r, "round_trips", static_cast<double>(rtts_.size()), "count");
    add(r, "total_us", engine::to_us(total), "us");
    add(r, "rtt_mean_us", rtts_.empty() ? 0 : engine::to_us(total) / static_cast<double>(rtts_.size()), "us");
    add(r, "rtt_p50_us", engine::to_us(percentile(rtts_, 50)), "us");
    add(r, "rtt_p99_us", engine::to_us(percentile(rtts_, 99)), "us");
    add(r, "rtt_max_us", engine::to_us(percentile(rtts_, 100)), "us");
    return r;
}

} // namespace kdsim::workloads
