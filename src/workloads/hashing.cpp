#include "workloads/hashing.h"

#include <algorithm>
#include <cmath>

namespace kdsim::workloads {

using kernel::Cat;

engine::Tick percentile(std::vector<engine::Tick> samples, double p) {
    if (samples.empty()) return 0;
    std::sort(samples.begin(), samples.end());
    auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(samples.size())));
    if (rank == 0) rank = 1;
    return samples[std::min(rank, samples.size()) - 1];
}

engine::Task<> HashWorkloadBase::hash_buffer(crypto::HashAlg alg, crypto::HashImpl impl, std::uint64_t len,
                                             const std::vector<std::uint8_t>& buf) {
    std::span<const std::uint8_t> data;
    if (env_.functional) data = std::span<const std::uint8_t>(buf.data(), len);
    crypto::ShashOutcome o = co_await crypto::crypto_shash_digest(env_.simd, env_.hash, alg, impl, env_.chunking, len,
                                                                  env_.functional, data, stats_, env_.cache);
    if (o.clobbered) ++clobbered_calls_;
}

void HashWorkloadBase::add_common(results::WorkloadResult& r) const {
    engine::Tick elapsed = (done_ ? finished_ : env_.sim.now()) - started_;
    add(r, "completed", done_ ? 1 : 0, "bool");
    add(r, "buffers", static_cast<double>(buffers_), "count");
    add(r, "hash_calls", static_cast<double>(stats_.calls), "count");
    add(r, "bytes_hashed", static_cast<double>(stats_.bytes), "bytes");
    add(r, "simd_calls", static_cast<double>(stats_.simd_calls), "count");
    add(r, "fallback_calls", static_cast<double>(stats_.fallback_calls), "count");
    add(r, "elapsed_us", engine::to_us(elapsed), "us");
    add(r, "throughput_mb_per_s", elapsed ? static_cast<double>(stats_.bytes) / engine::to_us(elapsed) : 0, "MB/s");
    add(r, "clobbered_calls", static_cast<double>(clobbered_calls_), "count");
    if (env_.cache) add(r, "cold_calls", static_cast<double>(stats_.cold_calls), "count");
    if (env_.functional) add(r, "digests_checked", static_cast<double>(stats_.digests_checked), "count");
}

// ---------------------------------------------------------------------------------------

ModuleLoad::ModuleLoad(Env env, ModuleLoadWorkload cfg)
    : HashWorkloadBase(env, cfg.alg, cfg.impl), cfg_(std::move(cfg)) {}

void ModuleLoad::start() {
    running_ = cfg_.workers;
    for (std::uint32_t k = 0; k < cfg_.workers; ++k)
        start_finite_process(cfg_.workers == 1 ? cfg_.name : cfg_.name + ":" + std::to_string(k), loader(*this));
}

// A loader: for each module it takes, user-space work, then finit_module().
// Models: load_module() (kernel/module/main.c)
// Models: mod_verify_sig() (kernel/module/signing.c)
engine::Task<> ModuleLoad::loader(ModuleLoad& w) {
    kernel::Cpu& cpu = w.env_.cpu;
    engine::Rng rng = w.env_.sim.rng("data:" + w.env_.machine + "/" + w.cfg_.name);
    const Cycles user_cycles = cpu.clock().to_cycles(w.cfg_.user_time);
    if (w.next_ == 0) w.started_ = cpu.now();
    std::vector<std::uint8_t> buf; // this loader's module image (functional mode)
    const std::uint64_t total = w.cfg_.sizes.size() * w.cfg_.repeat;
    while (w.next_ < total) {
        const std::size_t i = w.next_++ % w.cfg_.sizes.size();
        const std::uint64_t size = w.cfg_.sizes[i];
        const crypto::HashAlg alg = w.cfg_.algs.empty() ? w.alg_ : w.cfg_.algs[i];
        const crypto::HashImpl impl = alg == w.alg_ ? w.impl_ : crypto::best_hash_impl(w.env_.hash, alg);
        co_await cpu.exec(user_cycles, Cat::USER);
        if (w.env_.functional) {
            buf.resize(size);
            rng.fill(buf.data(), buf.size());
        }
        engine::Tick t0 = cpu.now();
        co_await kernel::syscall_enter(cpu);
        // load_module -> module_sig_check: the signature covers the file less its trailer
        std::uint64_t signed_len = size > w.cfg_.signature_trailer ? size - w.cfg_.signature_trailer : size;
        co_await w.hash_buffer(alg, impl, signed_len, buf);
        if (w.cfg_.blacklist_hash) co_await w.hash_buffer(alg, impl, size, buf);
        co_await kernel::might_resched(cpu);
        co_await kernel::syscall_exit(cpu);
        w.load_times_.push_back(cpu.now() - t0);
        ++w.buffers_;
    }
    if (--w.running_ == 0) w.complete(cpu.now());
    else w.env_.completion.done();
}

results::WorkloadResult ModuleLoad::result() const {
    auto r = hash_result(cfg_.name, "module_load");
    add(r, "modules", static_cast<double>(cfg_.sizes.size()) * cfg_.repeat, "count");
    add_common(r);
    add(r, "load_p50_us", engine::to_us(percentile(load_times_, 50)), "us");
    add(r, "load_p99_us", engine::to_us(percentile(load_times_, 99)), "us");
    add(r, "load_max_us", engine::to_us(percentile(load_times_, 100)), "us");
    return r;
}

// ---------------------------------------------------------------------------------------

HashList::HashList(Env env, HashListWorkload cfg)
    : HashWorkloadBase(env, cfg.alg, cfg.impl), cfg_(std::move(cfg)) {}

void HashList::start() {
    env_.completion.add();
    env_.cpu.create_task(cfg_.name, kernel::SchedPolicy::NORMAL, 0, true, cryptomgr(*this));
}

// Models: cryptomgr_test() (crypto/algboss.c)
// Models: alg_test() (crypto/testmgr.c)
engine::Task<> HashList::cryptomgr(HashList& w) {
    kernel::Cpu& cpu = w.env_.cpu;
    engine::Rng rng = w.env_.sim.rng("data:" + w.env_.machine + "/" + w.cfg_.name);
    w.started_ = cpu.now();
    for (std::uint32_t r = 0; r < w.cfg_.repeat; ++r) {
        for (std::uint64_t size : w.cfg_.sizes) {
            if (w.env_.functional) {
                w.buf_.resize(size);
                rng.fill(w.buf_.data(), w.buf_.size());
            }
            co_await w.hash_buffer(w.cfg_.alg, w.impl_, size, w.buf_);
            ++w.buffers_;
            if (w.cfg_.cond_resched_between) co_await kernel::cond_resched(cpu);
        }
    }
    w.complete(cpu.now());
}

results::WorkloadResult HashList::result() const {
    auto r = hash_result(cfg_.name, "hash_list");
    add_common(r);
    return r;
}

} // namespace kdsim::workloads

namespace kdsim::workloads {

Tcrypt::Tcrypt(Env env, TcryptWorkload cfg)
    : HashWorkloadBase(env, cfg.alg, cfg.impl), cfg_(std::move(cfg)) {}

// test_ahash_jiffies(): digest the block back to back until `sec` seconds of jiffies passed.
// Models: test_ahash_jiffies() (crypto/tcrypt.c)
engine::Task<> Tcrypt::insmod(Tcrypt& w) {
    kernel::Cpu& cpu = w.env_.cpu;
    if (w.env_.functional) {
        w.buf_.resize(w.cfg_.block_size);
        w.env_.sim.rng("data:" + w.env_.machine + "/" + w.cfg_.name).fill(w.buf_.data(), w.buf_.size());
    }
    co_await kernel::syscall_enter(cpu);
    w.started_ = cpu.now();
    const std::uint64_t ticks = w.cfg_.duration / cpu.tick_period();
    const std::uint64_t end = cpu.jiffies() + ticks;
    while (cpu.jiffies() < end) {
        engine::Tick t0 = cpu.now();
        co_await w.hash_buffer(w.cfg_.alg, w.impl_, w.cfg_.block_size, w.buf_);
        w.op_times_.push_back(cpu.now() - t0);
        ++w.buffers_;
    }
    const engine::Tick finished = cpu.now();
    co_await kernel::syscall_exit(cpu);
    w.complete(finished);
}

results::WorkloadResult Tcrypt::result() const {
    auto r = hash_result(cfg_.name, "tcrypt");
    engine::Tick elapsed = (done_ ? finished_ : env_.sim.now()) - started_;
    double secs = engine::to_s(elapsed);
    add(r, "block_size", static_cast<double>(cfg_.block_size), "bytes");
    add(r, "opers", static_cast<double>(buffers_), "count");
    add(r, "opers_per_s", secs > 0 ? static_cast<double>(buffers_) / secs : 0, "1/s");
    add(r, "mb_per_s", secs > 0 ? static_cast<double>(buffers_ * cfg_.block_size) / secs / 1e6 : 0, "MB/s");
    add(r, "us_per_op_p50", engine::to_us(percentile(op_times_, 50)), "us");
    add(r, "us_per_op_max", engine::to_us(percentile(op_times_, 100)), "us");
    add(r, "us_first_op", op_times_.empty() ? 0 : engine::to_us(op_times_.front()), "us");
    add_common(r);
    return r;
}

} // namespace kdsim::workloads
