#include "workloads/tcrypt_skcipher.h"

#include "kernel/sched.h"
#include "kernel/softirq.h"

#include <fmt/format.h>

namespace kdsim::workloads {

using kernel::Cat;

SkcipherDriver default_skcipher_driver(arch::Arch a) {
    return a == arch::Arch::X86_64 ? SkcipherDriver::SIMD : SkcipherDriver::DIRECT;
}

TcryptSkcipherTest::TcryptSkcipherTest(Env env, TcryptWorkload cfg, SkcipherFigures figures, SkcipherDriver driver)
    : Workload(env), cfg_(std::move(cfg)), test_(*cfg_.skcipher), fig_(figures), driver_(driver) {}

TcryptSkcipherTest::~TcryptSkcipherTest() = default;

void TcryptSkcipherTest::start() {
    if (driver_ != SkcipherDriver::DIRECT) {
        if (!fig_.cryptd) throw std::logic_error("tcrypt: a request that can go to cryptd needs [tunnel] figures");
        cryptd_ = std::make_unique<crypto::Cryptd>(std::vector<kernel::Cpu*>{&env_.cpu}, *fig_.cryptd);
        tfm_ = crypto::CryptdTfm{&TcryptSkcipherTest::cryptd_crypt, &TcryptSkcipherTest::cryptd_complete, this};
    }
    if (test_.context == RequestContext::SOFTIRQ)
        env_.cpu.open_softirq(kernel::TASKLET_SOFTIRQ, &TcryptSkcipherTest::tasklet, this);
    if (env_.functional) {
        // tcrypt keys with 0xff bytes and fills the data with 0xff; two distinct XTS halves here,
        // as OpenSSL refuses equal ones
        std::vector<std::uint8_t> key(test_.key_bits / 8, 0xff);
        for (std::size_t i = key.size() / 2; test_.alg == crypto::SkcipherAlg::XTS_AES && i < key.size(); ++i) key[i] = 0xfe;
        key_ = std::make_unique<crypto::SkcipherKey>(test_.alg, key);
    }
    env_.completion.add();
    task_ = &user_task(cfg_.name, kernel::SchedPolicy::NORMAL, 0, insmod(*this));
}

// Models: test_skcipher_speed(), test_acipher_cycles() (crypto/tcrypt.c)
engine::Task<> TcryptSkcipherTest::insmod(TcryptSkcipherTest& w) {
    kernel::Cpu& cpu = w.env_.cpu;
    co_await kernel::syscall_enter(cpu);
    w.rows_.reserve(2 * w.test_.sizes.size());
    for (bool encrypt : {true, false}) {
        for (std::uint64_t size : w.test_.sizes) {
            w.rows_.push_back(Row{size, encrypt});
            w.row_ = &w.rows_.back();
            for (std::uint32_t i = 0; i < w.test_.count; ++i) {
                w.done_ = false;
                const std::uint64_t brackets = w.stats_.brackets;
                const engine::Tick start = cpu.now();
                if (w.test_.context == RequestContext::SOFTIRQ) {
                    // tasklet_schedule from the task: the softirq runs at local_bh_enable
                    co_await kernel::local_bh_disable(cpu);
                    cpu.__raise_softirq_irqoff(kernel::TASKLET_SOFTIRQ);
                    co_await kernel::local_bh_enable(cpu);
                } else {
                    co_await w.issue(cpu);
                }
                while (!w.done_) { // crypto_wait_req: wait_for_completion
                    w.waiting_ = true;
                    co_await cpu.block();
                }
                const engine::Tick took = cpu.now() - start;
                w.row_->total += took;
                w.row_->cycles += cpu.clock().to_cycles(took);
                w.row_->brackets += w.stats_.brackets - brackets;
            }
        }
    }
    co_await kernel::syscall_exit(cpu);
    w.completed_ = true;
    w.env_.completion.done();
}

engine::Task<> TcryptSkcipherTest::tasklet(kernel::Cpu& cpu, void* ctx) {
    co_await static_cast<TcryptSkcipherTest*>(ctx)->issue(cpu);
}

// crypto_skcipher_encrypt/decrypt of the transform tcrypt allocated.
// Models: simd_skcipher_encrypt(), simd_skcipher_decrypt() (crypto/simd.c)
// Models: cryptd_skcipher_encrypt_enqueue() (crypto/cryptd.c)
engine::Task<> TcryptSkcipherTest::issue(kernel::Cpu& cpu) {
    issued_ = cpu.now();
    bool async = driver_ == SkcipherDriver::CRYPTD;
    if (driver_ == SkcipherDriver::SIMD)
        async = !arch::crypto_simd_usable(env_.simd) || (cpu.preempt_count() != 0 && crypto::cryptd_queued(tfm_));
    if (!async) {
        if (driver_ == SkcipherDriver::SIMD) co_await cpu.exec(fig_.skcipher.simd_wrapper, Cat::CRYPTO);
        const bool clobbered = co_await driver_crypt(cpu);
        finish(cpu, clobbered);
        co_return;
    }
    ++row_->async;
    // tcrypt's requests may backlog (CRYPTO_TFM_REQ_MAY_BACKLOG); one is in flight at a time
    co_await cryptd_->cryptd_enqueue_request(cpu, crypto::CryptoAsyncRequest{&tfm_, 0, crypto::CRYPTO_TFM_REQ_MAY_BACKLOG});
}

engine::Task<bool> TcryptSkcipherTest::driver_crypt(kernel::Cpu& cpu) {
    (void)cpu;
    co_return co_await crypto::skcipher_crypt(env_.simd, fig_.cipher, fig_.skcipher, test_.alg, test_.key_bits,
                                              row_->encrypt, row_->size, test_.key_bits / 8, stats_);
}

// cryptd_skcipher_encrypt/decrypt: the driver in the cryptd worker's task context.
engine::Task<int> TcryptSkcipherTest::cryptd_crypt(kernel::Cpu& cpu, void* ctx, std::uint64_t) {
    auto& w = *static_cast<TcryptSkcipherTest*>(ctx);
    const bool clobbered = co_await w.driver_crypt(cpu);
    w.check_functional(cpu, clobbered);
    co_return 0;
}

// crypto_req_done, BH disabled: complete() wakes the insmod task.
engine::Task<> TcryptSkcipherTest::cryptd_complete(kernel::Cpu& cpu, void* ctx, std::uint64_t, int err) {
    auto& w = *static_cast<TcryptSkcipherTest*>(ctx);
    if (err == -EINPROGRESS) co_return;
    w.done_ = true;
    if (w.waiting_) {
        w.waiting_ = false;
        cpu.wake_up_process(*w.task_);
    }
}

void TcryptSkcipherTest::finish(kernel::Cpu& cpu, bool clobbered) {
    check_functional(cpu, clobbered);
    done_ = true;
    if (waiting_) {
        waiting_ = false;
        cpu.wake_up_process(*task_);
    }
}

// Functional mode: the request's real bytes through OpenSSL; a clobbered bracket leaves garbage,
// which the round trip shows.
void TcryptSkcipherTest::check_functional(kernel::Cpu& cpu, bool clobbered) {
    if (clobbered) ++clobbered_;
    if (!key_) return;
    const std::vector<std::uint8_t> iv(crypto::AES_BLOCK_SIZE, 0xff);
    plain_.assign(row_->size, 0xff);
    key_->crypt(row_->encrypt, iv, plain_, out_);
    if (clobbered) out_[0] ^= 0x5a;
    key_->crypt(!row_->encrypt, iv, out_, back_);
    ++checked_;
    if (back_ != plain_) {
        ++mismatches_;
        cpu.report_finding(stats::FindingKind::LOST_DATA, "", cpu.running_context(),
                           fmt::format("{} {} of {} bytes did not round-trip", to_string(test_.alg),
                                       row_->encrypt ? "encryption" : "decryption", row_->size));
    }
}

results::WorkloadResult TcryptSkcipherTest::result() const {
    const auto impl = crypto::skcipher_impl(fig_.cipher, crypto::skcipher_prim(test_.alg, test_.key_bits, true));
    auto r = base_result(cfg_.name, fmt::format("tcrypt {} ({}, {})", to_string(test_.alg),
                                                impl ? crypto::skcipher_driver_name(test_.alg, *impl) : "none",
                                                SKCIPHER_DRIVER_NAMES[static_cast<std::size_t>(driver_)]));
    add(r, "completed", completed_ ? 1 : 0, "bool");
    add(r, "key_bits", test_.key_bits, "bits");
    for (const Row& row : rows_) {
        const double n = test_.count ? static_cast<double>(test_.count) : 1;
        const std::string k = fmt::format("{}_{}B", row.encrypt ? "enc" : "dec", row.size);
        // tcrypt prints (cycles + 4) / 8: the mean, rounded
        add(r, k + "_cycles_per_op", static_cast<double>(row.cycles) / n, "cycles");
        add(r, k + "_cycles_per_byte", static_cast<double>(row.cycles) / n / static_cast<double>(row.size), "cycles/byte");
        add(r, k + "_brackets_per_op", static_cast<double>(row.brackets) / n, "count");
        add(r, k + "_async", static_cast<double>(row.async), "count");
    }
    add(r, "requests", static_cast<double>(stats_.calls), "count");
    add(r, "walk_steps", static_cast<double>(stats_.steps), "count");
    add(r, "brackets", static_cast<double>(stats_.brackets), "count");
    add(r, "unusable_simd_brackets", static_cast<double>(stats_.unusable_simd), "count");
    add(r, "clobbered_requests", static_cast<double>(clobbered_), "count");
    if (env_.functional) {
        add(r, "requests_checked", static_cast<double>(checked_), "count");
        add(r, "round_trip_mismatches", static_cast<double>(mismatches_), "count");
    }
    return r;
}

void TcryptSkcipherTest::register_stats(const stats::Scope& machine) const {
    if (cryptd_) cryptd_->register_stats(machine.sub("workload").sub(cfg_.name).sub("cryptd"));
}

} // namespace kdsim::workloads
