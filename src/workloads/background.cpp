#include "workloads/background.h"

#include "kernel/softirq.h"

#include <algorithm>

namespace kdsim::workloads {

using kernel::Cat;

void SimdUser::start() {
    task_ = &user_task(cfg_.name, kernel::SchedPolicy::NORMAL, 0, body(*this));
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
    task_ = &user_task(cfg_.name, kernel::SchedPolicy::FIFO, cfg_.priority, body(*this));
}

// hrtimer_wakeup for the probe's sleep: notes what the interrupted CPU was doing, then wakes it.
engine::Cycles Cyclictest::expire(kernel::Cpu& cpu, void* ctx, engine::Tick) {
    auto& w = *static_cast<Cyclictest*>(ctx);
    w.state_at_expiry_ = cpu.describe_np_state();
    return cpu.ttwu_cycles(*w.task_);
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

SoftirqLoad::SoftirqLoad(Env env, SoftirqLoadWorkload cfg, unsigned vector, net::Softnet& softnet)
    : Workload(env), cfg_(std::move(cfg)), vector_(vector), softnet_(softnet),
      impl_(cfg_.impl ? *cfg_.impl : crypto::best_hash_impl(env.hash, cfg_.alg)),
      rng_(env.sim.rng("arrivals:" + env.machine + "/" + cfg_.name)),
      data_rng_(env.sim.rng("data:" + env.machine + "/" + cfg_.name)) {
    napi_.poll = &SoftirqLoad::napi_poll;
    napi_.ctx = this;
}

SoftirqLoad::~SoftirqLoad() = default;

void SoftirqLoad::start() {
    if (finite()) env_.completion.add();
    env_.cpu.request_irq(vector_, &SoftirqLoad::irq_handler, this, cfg_.name);
    if (cfg_.cryptd) {
        cryptd_ = std::make_unique<crypto::Cryptd>(std::vector<kernel::Cpu*>{&env_.cpu}, crypto::CryptdCosts{});
        tfm_ = crypto::CryptdTfm{&SoftirqLoad::cryptd_hash_digest, &SoftirqLoad::cryptd_complete, this};
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

// The device's interrupt handler: acknowledge and napi_schedule_irqoff (a no-op while the
// instance is scheduled).
engine::Task<> SoftirqLoad::irq_handler(kernel::Cpu&, void* ctx) {
    auto& w = *static_cast<SoftirqLoad*>(ctx);
    w.softnet_.napi_schedule_irqoff(w.napi_);
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

// The driver's poll: up to `budget` of the packets that arrived, each hashed here or handed to
// cryptd; napi_complete_done when fewer than `budget` were waiting.
engine::Task<int> SoftirqLoad::napi_poll(kernel::Cpu& cpu, void* ctx, int budget) {
    auto& w = *static_cast<SoftirqLoad*>(ctx);
    int work = 0;
    for (; work < budget && w.backlog_ > 0; ++work) {
        --w.backlog_;
        if (w.cryptd_) co_await w.cryptd_->cryptd_enqueue_request(cpu, crypto::CryptoAsyncRequest{&w.tfm_, 0, 0});
        else co_await w.process_packet();
    }
    if (work < budget) net::napi_complete_done(w.napi_);
    co_return work;
}

// cryptd_hash_digest: the packet's hashing in the cryptd worker.
engine::Task<int> SoftirqLoad::cryptd_hash_digest(kernel::Cpu&, void* ctx, std::uint64_t) {
    co_await static_cast<SoftirqLoad*>(ctx)->process_packet();
    co_return 0;
}

// cryptd_hash_complete's callback (BH disabled): the packet is done.
engine::Task<> SoftirqLoad::cryptd_complete(kernel::Cpu&, void*, std::uint64_t, int) { co_return; }

results::WorkloadResult SoftirqLoad::result() const {
    auto r = base_result(cfg_.name, "softirq_load " + std::string(crypto::to_string(cfg_.alg)) + "-" +
                                        std::string(crypto::to_string(impl_)));
    add(r, "interrupts", static_cast<double>(raised_), "count");
    add(r, "packets_processed", static_cast<double>(processed_), "count");
    add(r, "max_backlog", static_cast<double>(max_backlog_), "count");
    add(r, "packets_per_s", env_.sim.now() ? static_cast<double>(processed_) / engine::to_s(env_.sim.now()) : 0, "1/s");
    add(r, "simd_calls", static_cast<double>(stats_.simd_calls), "count");
    add(r, "fallback_calls", static_cast<double>(stats_.fallback_calls), "count");
    add(r, "clobbered_calls", static_cast<double>(clobbered_calls_), "count");
    add(r, "hash_calls", static_cast<double>(stats_.calls), "count");
    if (env_.cache) add(r, "cold_calls", static_cast<double>(stats_.cold_calls), "count");
    if (env_.functional) add(r, "digests_checked", static_cast<double>(stats_.digests_checked), "count");
    return r;
}

void SoftirqLoad::register_stats(const stats::Scope& machine) const {
    if (cryptd_) cryptd_->register_stats(machine.sub("workload").sub(cfg_.name).sub("cryptd"));
}

} // namespace kdsim::workloads
