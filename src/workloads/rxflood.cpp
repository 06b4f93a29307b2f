#include "workloads/rxflood.h"

#include <algorithm>
#include <cmath>

namespace kdsim::workloads {

using kernel::Cat;

RxFlood::RxFlood(Env env, RxFloodWorkload cfg, RxFloodCosts costs)
    : Workload(env), cfg_(std::move(cfg)), costs_(std::move(costs)),
      decrypt_(costs_.decrypt_per_call +
               static_cast<Cycles>(std::llround(static_cast<double>(cfg_.payload) * costs_.decrypt_per_byte))),
      queue_(cfg_.cryptd_qlen) {}

void RxFlood::start() {
    const auto policy = cfg_.priority > 0 ? kernel::SchedPolicy::FIFO : kernel::SchedPolicy::NORMAL;
    rx_ = &user_task(cfg_.name, policy, cfg_.priority, rx_body(*this));
    if (cfg_.cryptd) {
        worker_ = &user_task(cfg_.name + "-cryptd", policy, cfg_.priority, worker_body(*this));
    }
}

engine::Task<> RxFlood::rx_body(RxFlood& w) {
    kernel::Cpu& cpu = w.env_.cpu;
    const RxFloodWorkload& c = w.cfg_;
    for (;;) {
        // One round (net_rx_action): polls of up to `weight` while the budget lasts. The ring is
        // always full, so every poll does its whole weight and every round ends squeezed.
        ++w.rounds_;
        if (Cycles r = cpu.costs().softirq_round) co_await cpu.exec(r, Cat::SOFTIRQ);
        int budget = c.budget;
        while (budget > 0) {
            ++w.polls_;
            for (int n = 0; n < c.weight; ++n) {
                ++w.received_;
                if (w.costs_.flush_per_packet) {
                    co_await cpu.exec(w.costs_.flush_per_packet, Cat::CACHE_MAINT);
                    w.lines_ += w.costs_.flush_lines;
                }
                if (!w.worker_) {
                    co_await cpu.exec(w.decrypt_, Cat::CRYPTO);
                    ++w.decrypted_;
                    continue;
                }
                // cryptd_enqueue_request(): a full queue refuses the request, the packet is dropped
                if (w.queue_.crypto_enqueue_request(crypto::CryptoAsyncRequest{&w.tfm_, w.received_, 0}) == -ENOSPC) {
                    ++w.queue_drops_;
                    continue;
                }
                w.max_queued_ = std::max<std::uint64_t>(w.max_queued_, w.queue_.qlen());
                if (w.worker_sleeping_) {
                    w.worker_sleeping_ = false;
                    ++w.worker_wakeups_;
                    co_await kernel::try_to_wake_up(cpu, *w.worker_);
                }
            }
            budget -= c.weight;
        }
        ++w.squeezes_;
        if (w.worker_ && w.queue_.qlen() > 0) {
            // sched_yield() with the worker runnable at the same priority: it runs until its queue
            // is empty; it puts this task back on the runqueue when it goes to sleep.
            ++w.yields_;
            w.rx_yielded_ = true;
            co_await cpu.block();
        }
    }
}

engine::Task<> RxFlood::worker_body(RxFlood& w) {
    kernel::Cpu& cpu = w.env_.cpu;
    for (;;) {
        if (w.queue_.qlen() == 0) {
            if (w.rx_yielded_) { // the yielded rx task is runnable again (a requeue, not a wake-up)
                w.rx_yielded_ = false;
                cpu.wake_up_process(*w.rx_);
            }
            w.worker_sleeping_ = true;
            co_await cpu.block();
            continue;
        }
        w.queue_.crypto_dequeue_request(); // one request per pass
        co_await cpu.exec(w.decrypt_, Cat::CRYPTO);
        ++w.decrypted_; // the completion
    }
}

results::WorkloadResult RxFlood::result() const {
    auto r = base_result(cfg_.name, "rx_flood " + std::string(crypto::to_string(cfg_.alg)) + " " + costs_.impl);
    const kernel::CpuStats& s = env_.cpu.stats();
    const double secs = engine::to_s(env_.sim.now());
    const double busy = static_cast<double>(env_.cpu.clock().to_cycles(s.busy_ticks));
    add(r, "packets_received", static_cast<double>(received_), "count");
    add(r, "packets_decrypted", static_cast<double>(decrypted_), "count");
    add(r, "packets_per_s", secs > 0 ? static_cast<double>(decrypted_) / secs : 0, "1/s");
    add(r, "payload_mbit_s", secs > 0 ? static_cast<double>(decrypted_ * cfg_.payload) * 8 / secs / 1e6 : 0, "Mbit/s");
    add(r, "cycles_per_packet", decrypted_ ? busy / static_cast<double>(decrypted_) : 0, "cycles");
    add(r, "decrypt_cycles", static_cast<double>(decrypt_), "cycles");
    add(r, "flush_lines_per_packet", static_cast<double>(costs_.flush_lines), "count");
    add(r, "lines_flushed", static_cast<double>(lines_), "count");
    add(r, "rounds", static_cast<double>(rounds_), "count");
    add(r, "polls", static_cast<double>(polls_), "count");
    add(r, "time_squeeze", static_cast<double>(squeezes_), "count");
    if (worker_) {
        add(r, "queue_drops", static_cast<double>(queue_drops_), "count");
        add(r, "max_cryptd_queue", static_cast<double>(max_queued_), "count");
        add(r, "worker_wakeups", static_cast<double>(worker_wakeups_), "count");
        add(r, "yields", static_cast<double>(yields_), "count");
    }
    return r;
}

} // namespace kdsim::workloads
