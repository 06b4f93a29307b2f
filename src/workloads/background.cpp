#include "workloads/background.h"

#include "kernel/softirq.h"

#include <algorithm>

namespace kdsim::workloads {

using kernel::Cat;

void SimdUser::start() {
    task_ = &env_.cpu.create_task(cfg_.name, kernel::SchedPolicy::NORMAL, 0, false, body(*this));
    task_->in_user = true;
    task_->uses_user_simd = true;
}

engine::Task<> SimdUser::body(SimdUser& w) {
    kernel::Cpu& cpu = w.env_.cpu;
    const Cycles chunk = std::max<Cycles>(1, cpu.clock().to_cycles(w.cfg_.chunk));
    for (;;) {
        if (Cycles trap = w.env_.simd.user_simd_use(*w.task_)) co_await cpu.exec(trap, Cat::SIMD_SAVE_RESTORE);
        bool corrupted = co_await cpu.exec_simd(chunk, Cat::USER, w.task_->user_token);
        ++w.steps_;
        if (corrupted) ++w.corrupted_steps_;
    }
}

results::WorkloadResult SimdUser::result() const {
    auto r = base_result(cfg_.name, "simd_user");
    add(r, "steps", static_cast<double>(steps_), "count");
    add(r, "corrupted_steps", static_cast<double>(corrupted_steps_), "count");
    add(r, "cpu_time_us", engine::to_us(task_ ? task_->sum_exec : 0), "us");
    add(r, "context_switches_in", static_cast<double>(task_ ? task_->nr_switches : 0), "count");
    return r;
}

// ---------------------------------------------------------------------------------------

void Cyclictest::start() {
    if (finite()) env_.completion.add();
    task_ = &env_.cpu.create_task(cfg_.name, kernel::SchedPolicy::FIFO, cfg_.priority, false, body(*this));
    task_->in_user = true;
}

// hrtimer_wakeup for the probe's sleep: notes what the interrupted CPU was doing, then wakes it.
engine::Cycles Cyclictest::expire(kernel::Cpu& cpu, void* ctx, engine::Tick) {
    auto& w = *static_cast<Cyclictest*>(ctx);
    w.state_at_expiry_ = cpu.describe_np_state();
    cpu.wake_up_process(*w.task_);
    return cpu.costs().wakeup;
}

engine::Task<> Cyclictest::body(Cyclictest& w) {
    kernel::Cpu& cpu = w.env_.cpu;
    engine::Tick next = cpu.now();
    for (std::uint64_t i = 0; w.cfg_.loops == 0 || i < w.cfg_.loops; ++i) {
        next += w.cfg_.period;
        co_await kernel::syscall_enter(cpu);
        w.state_at_expiry_.clear();
        if (next > cpu.now()) {
            cpu.hrtimer_start(next, &Cyclictest::expire, &w);
            co_await cpu.block();
        }
        co_await kernel::syscall_exit(cpu);
        engine::Tick lat = cpu.now() - next;
        if (w.samples_.empty() || lat > w.worst_) {
            w.worst_ = lat;
            w.worst_at_ = next;
            w.worst_cause_ = w.state_at_expiry_.empty() ? "nothing held the CPU: the wake-up path itself"
                                                        : w.state_at_expiry_;
        }
        w.samples_.push_back(lat);
    }
    w.env_.completion.done();
}

results::WorkloadResult Cyclictest::result() const {
    auto r = base_result(cfg_.name, "cyclictest");
    add(r, "samples", static_cast<double>(samples_.size()), "count");
    add(r, "latency_min_us", engine::to_us(percentile(samples_, 0)), "us");
    add(r, "latency_p50_us", engine::to_us(percentile(samples_, 50)), "us");
    add(r, "latency_p99_us", engine::to_us(percentile(samples_, 99)), "us");
    add(r, "latency_p999_us", engine::to_us(percentile(samples_, 99.9)), "us");
    add(r, "latency_max_us", engine::to_us(percentile(samples_, 100)), "us");
    add(r, "worst_sample_at_us", engine::to_us(worst_at_), "us");
    if (!samples_.empty()) r.notes.emplace_back("worst sample held by", worst_cause_);
    return r;
}

// ---------------------------------------------------------------------------------------

SoftirqLoad::SoftirqLoad(Env env, SoftirqLoadWorkload cfg, unsigned vector)
    : Workload(env), cfg_(std::move(cfg)), vector_(vector),
      impl_(cfg_.impl ? *cfg_.impl : crypto::best_hash_impl(env.hash, cfg_.alg)),
      rng_(env.sim.rng("arrivals:" + env.machine + "/" + cfg_.name)),
      data_rng_(env.sim.rng("data:" + env.machine + "/" + cfg_.name)) {}

void SoftirqLoad::start() {
    if (finite()) env_.completion.add();
    env_.cpu.request_irq(vector_, &SoftirqLoad::irq_handler, this, cfg_.name);
    env_.cpu.open_softirq(kernel::NET_RX_SOFTIRQ, &SoftirqLoad::net_rx_action, this);
    if (cfg_.cryptd) {
        worker_ = &env_.cpu.create_task("cryptd/" + std::to_string(env_.cpu.id()), kernel::SchedPolicy::NORMAL, 0,
                                        true, cryptd_worker(*this));
    }
    env_.sim.schedule_in(cfg_.period, this);
    if (env_.functional) buf_.resize(cfg_.bytes + crypto::block_size(cfg_.alg));
}

void SoftirqLoad::on_event(std::uint64_t) {
    if (cfg_.count && raised_ >= cfg_.count) return;
    ++raised_;
    ++backlog_;
    max_backlog_ = std::max(max_backlog_, backlog_);
    engine::Tick gap = cfg_.period + (cfg_.jitter ? rng_.below(cfg_.jitter + 1) : 0);
    env_.sim.schedule_in(gap, this);
    env_.cpu.raise_irq(vector_);
}

// The device's interrupt handler: acknowledge and schedule the softirq (napi_schedule-like).
engine::Task<> SoftirqLoad::irq_handler(kernel::Cpu& cpu, void* ctx) {
    auto& w = *static_cast<SoftirqLoad*>(ctx);
    ++w.handled_irqs_;
    cpu.raise_softirq_irqoff(kernel::NET_RX_SOFTIRQ);
    co_return;
}

// One packet's crypto, in whatever context calls it.
engine::Task<> SoftirqLoad::process_packet() {
    if (env_.functional) data_rng_.fill(buf_.data(), buf_.size());
    // hmac(): inner hash over the key block and the packet, outer over the key block and the
    // inner digest (crypto/hmac.c); otherwise one hash over the packet.
    const std::uint64_t block = crypto::block_size(cfg_.alg);
    const std::uint64_t inner = cfg_.hmac ? block + cfg_.bytes : cfg_.bytes;
    std::span<const std::uint8_t> data(buf_.data(), env_.functional ? inner : 0);
    crypto::ShashOutcome o = co_await crypto::crypto_shash_digest(env_.simd, env_.hash, cfg_.alg, impl_, env_.chunking,
                                                                  inner, env_.functional, data, stats_, env_.cache);
    if (o.clobbered) ++clobbered_calls_;
    if (cfg_.hmac) {
        const std::uint64_t outer = block + crypto::digest_size(cfg_.alg);
        std::span<const std::uint8_t> odata(buf_.data(), env_.functional ? outer : 0);
        o = co_await crypto::crypto_shash_digest(env_.simd, env_.hash, cfg_.alg, impl_, env_.chunking, outer,
                                                 env_.functional, odata, stats_, env_.cache);
        if (o.clobbered) ++clobbered_calls_;
    }
    ++processed_;
    if (cfg_.count && processed_ >= cfg_.count && !done_) {
        done_ = true;
        env_.completion.done();
    }
}

// NET_RX: process the packets that arrived, at most a NAPI weight's worth per round (64, as
// __napi_poll), re-raising NET_RX for the rest so that __do_softirq's restart limits and the
// ksoftirqd hand-off apply; or queue each to cryptd.
engine::Task<> SoftirqLoad::net_rx_action(kernel::Cpu& cpu, void* ctx) {
    auto& w = *static_cast<SoftirqLoad*>(ctx);
    constexpr int WEIGHT = 64; // NAPI_POLL_WEIGHT
    for (int done = 0; w.backlog_ > 0; ++done) {
        if (done == WEIGHT) {
            cpu.raise_softirq_irqoff(kernel::NET_RX_SOFTIRQ);
            break;
        }
        --w.backlog_;
        if (w.worker_) {
            // cryptd_enqueue_request(): per-CPU queue, then queue_work_on() wakes the worker
            ++w.queued_;
            w.max_queued_ = std::max(w.max_queued_, w.queued_);
            co_await kernel::try_to_wake_up(cpu, *w.worker_);
            continue;
        }
        co_await w.process_packet();
    }
}

// cryptd_queue_worker(): one request per invocation, then it re-queues itself (the workqueue
// thread runs cond_resched() between work items); sleeps when the queue is empty.
engine::Task<> SoftirqLoad::cryptd_worker(SoftirqLoad& w) {
    kernel::Cpu& cpu = w.env_.cpu;
    for (;;) {
        if (w.queued_ == 0) {
            co_await cpu.block();
            continue;
        }
        // crypto_dequeue_request() under local_bh_disable(); the digest itself runs with
        // bottom halves enabled (cryptd_hash_digest); the completion callback runs BH-off.
        co_await kernel::local_bh_disable(cpu);
        --w.queued_;
        co_await kernel::local_bh_enable(cpu);
        co_await w.process_packet();
        co_await kernel::local_bh_disable(cpu);
        co_await kernel::local_bh_enable(cpu);
        co_await kernel::cond_resched(cpu);
    }
}

results::WorkloadResult SoftirqLoad::result() const {
    auto r = base_result(cfg_.name, "softirq_load " + std::string(crypto::to_string(cfg_.alg)) + "-" +
                                        std::string(crypto::to_string(impl_)));
    add(r, "interrupts", static_cast<double>(raised_), "count");
    add(r, "packets_processed", static_cast<double>(processed_), "count");
    add(r, "max_backlog", static_cast<double>(max_backlog_), "count");
    if (cfg_.cryptd) add(r, "max_cryptd_queue", static_cast<double>(max_queued_), "count");
    add(r, "packets_per_s", env_.sim.now() ? static_cast<double>(processed_) / engine::to_s(env_.sim.now()) : 0, "1/s");
    add(r, "simd_calls", static_cast<double>(stats_.simd_calls), "count");
    add(r, "fallback_calls", static_cast<double>(stats_.fallback_calls), "count");
    add(r, "clobbered_calls", static_cast<double>(clobbered_calls_), "count");
    add(r, "hash_calls", static_cast<double>(stats_.calls), "count");
    if (env_.cache) add(r, "cold_calls", static_cast<double>(stats_.cold_calls), "count");
    if (env_.functional) {
        add(r, "digests_checked", static_cast<double>(stats_.digests_checked), "count");
        add(r, "digest_mismatches", static_cast<double>(stats_.digest_mismatches), "count");
    }
    return r;
}

} // namespace kdsim::workloads
