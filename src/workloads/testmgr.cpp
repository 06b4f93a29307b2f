#include "workloads/testmgr.h"

#include "kernel/sched.h"

namespace kdsim::workloads {

using crypto::HashImpl;

namespace {

// The drivers a CPU with these costs registers for `alg`, in registration order.
std::vector<HashImpl> registered(const crypto::HashCostTable& cost, crypto::HashAlg alg) {
    std::vector<HashImpl> out;
    for (HashImpl i : {HashImpl::GENERIC, HashImpl::SSSE3, HashImpl::AVX, HashImpl::AVX2, HashImpl::SHANI, HashImpl::ARM,
                       HashImpl::ARM64, HashImpl::NEON, HashImpl::CE, HashImpl::SPE, HashImpl::PPC})
        if (cost.has(alg, i)) out.push_back(i);
    return out;
}

} // namespace

Testmgr::Testmgr(Env env, TestmgrWorkload cfg)
    : HashWorkloadBase(env, cfg.alg, cfg.impl), cfg_(std::move(cfg)),
      drivers_(cfg_.impl ? std::vector<HashImpl>{*cfg_.impl} : registered(env.hash, cfg_.alg)) {}

void Testmgr::start() {
    env_.completion.add();
    env_.cpu.create_task(cfg_.name, kernel::SchedPolicy::NORMAL, 0, true, cryptomgr_test(*this));
}

engine::Task<> Testmgr::run_calls(HashImpl impl, const std::vector<testmgr::HashCall>& calls) {
    std::optional<crypto::Digest> d;
    if (env_.functional) d.emplace(cfg_.alg);
    std::uint64_t buffered = 0;
    for (const testmgr::HashCall& c : calls) {
        std::span<const std::uint8_t> data;
        if (env_.functional) data = std::span<const std::uint8_t>(buf_.data() + buffered, c.len);
        crypto::ShashOutcome o = co_await crypto::crypto_shash_call(
            env_.simd, env_.hash, cfg_.alg, impl, env_.chunking, crypto::ShashCall{c.op, c.len, buffered, c.nosimd},
            d ? &*d : nullptr, data, stats_, env_.cache);
        if (o.clobbered) ++clobbered_calls_;
        buffered += c.len;
        if (c.resched) co_await kernel::cond_resched(env_.cpu); // crypto_yield()
    }
    if (d) crypto::check_digest(env_.cpu, *d, std::span<const std::uint8_t>(buf_.data(), buffered), stats_);
}

void Testmgr::new_message(std::uint32_t len, engine::Rng& data) {
    if (!env_.functional) return;
    buf_.resize(len);
    data.fill(buf_.data(), buf_.size());
}

// Models: test_hash_vec_cfg() (crypto/testmgr.c)
engine::Task<> Testmgr::test_hash_vec_cfg(HashImpl impl, const testmgr::TestvecConfig& cfg, std::uint32_t len) {
    // The x86 and arm SHA drivers have cra_alignmask 0.
    const std::vector<testmgr::SgEntry> sg = testmgr::build_test_sglist(cfg, len, 0);
    ++tests_;
    ++buffers_;
    co_await run_calls(impl, testmgr::shash_calls(cfg, sg));
    co_await run_calls(impl, testmgr::ahash_calls(cfg, sg));
}

// Models: cryptomgr_test() (crypto/algboss.c)
// Models: __alg_test_hash() (crypto/testmgr.c)
// Models: test_hash_vs_generic_impl() (crypto/testmgr.c)
engine::Task<> Testmgr::cryptomgr_test(Testmgr& w) {
    kernel::Cpu& cpu = w.env_.cpu;
    engine::Rng rng = w.env_.sim.rng("testmgr:" + w.env_.machine + "/" + w.cfg_.name);
    engine::Rng data = w.env_.sim.rng("data:" + w.env_.machine + "/" + w.cfg_.name);
    w.started_ = cpu.now();
    for (HashImpl impl : w.drivers_) {
        for (std::uint64_t size : w.cfg_.sizes) {
            const auto len = static_cast<std::uint32_t>(size);
            w.new_message(len, data);
            for (const testmgr::TestvecConfig& c : testmgr::default_hash_configs())
                co_await w.test_hash_vec_cfg(impl, c, len);
            if (w.cfg_.extra_tests) {
                for (std::uint32_t i = 0; i < w.cfg_.fuzz_iterations; ++i) {
                    const testmgr::TestvecConfig c = testmgr::generate_random_testvec_config(rng);
                    ++w.random_configs_;
                    co_await w.test_hash_vec_cfg(impl, c, len);
                    co_await kernel::cond_resched(cpu);
                }
            }
            co_await kernel::cond_resched(cpu);
        }
        if (!w.cfg_.extra_tests || impl == HashImpl::GENERIC) continue;
        for (std::uint32_t i = 0; i < w.cfg_.fuzz_iterations * 8; ++i) {
            // generate_random_hash_testvec(): the generic driver digests the random message.
            const std::uint32_t len = testmgr::generate_random_length(rng, testmgr::MAX_RANDOM_DATA);
            w.new_message(len, data);
            std::vector<testmgr::HashCall> generic_digest(1, testmgr::HashCall{crypto::ShashOp::FINUP, len, false});
            co_await w.run_calls(HashImpl::GENERIC, generic_digest);
            const testmgr::TestvecConfig c = testmgr::generate_random_testvec_config(rng);
            ++w.random_vectors_;
            co_await w.test_hash_vec_cfg(impl, c, len);
            co_await kernel::cond_resched(cpu);
        }
    }
    w.complete(cpu.now());
}

results::WorkloadResult Testmgr::result() const {
    auto r = base_result(cfg_.name, "testmgr " + std::string(crypto::to_string(cfg_.alg)));
    add(r, "drivers", static_cast<double>(drivers_.size()), "count");
    add(r, "tests", static_cast<double>(tests_), "count");
    add(r, "random_configs", static_cast<double>(random_configs_), "count");
    add(r, "random_vectors", static_cast<double>(random_vectors_), "count");
    add(r, "nosimd_calls", static_cast<double>(stats_.nosimd_calls), "count");
    add(r, "partial_block_calls", static_cast<double>(stats_.partial_calls), "count");
    add_common(r);
    return r;
}

} // namespace kdsim::workloads
