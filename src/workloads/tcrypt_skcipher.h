// tcrypt's skcipher speed test (crypto/tcrypt.c test_acipher_speed -> test_acipher_cycles, as
// `insmod tcrypt mode=500 sec=0` runs it): in the insmod system call, for each request size, a
// number of crypto_skcipher_encrypt calls and then as many crypto_skcipher_decrypt calls on one
// buffer whose data starts after the key in its first page, each timed from the call to its
// completion (do_one_acipher_op -> crypto_wait_req sleeps until an asynchronous request
// completes). The request reaches the driver directly, through crypto/simd.c
// (simd_skcipher_encrypt: cryptd when !crypto_simd_usable() or, in atomic context, while this
// transform has requests in cryptd) or always through cryptd (cryptd_skcipher_encrypt_enqueue);
// from the insmod task or, as a tasklet would, from TASKLET_SOFTIRQ raised by it.
#pragma once

#include "crypto/cryptd.h"
#include "crypto/skcipher.h"
#include "net/net_costs.h"
#include "workloads/config.h"
#include "workloads/workload.h"

#include <memory>
#include <optional>

namespace kdsim::workloads {

// What the skcipher test needs of its machine's profile.
struct SkcipherFigures {
    const crypto::CipherCostTable& cipher;
    crypto::SkcipherCosts skcipher;
    std::optional<crypto::CryptdCosts> cryptd; // from [tunnel]; needed when a request can go async
};

// The driver as the architecture registers it: x86 wraps its AES-NI skciphers with crypto/simd.c
// (simd_register_skciphers_compat), arm64's aes-ce ones are called directly.
SkcipherDriver default_skcipher_driver(arch::Arch a);

class TcryptSkcipherTest final : public Workload {
public:
    TcryptSkcipherTest(Env env, TcryptWorkload cfg, SkcipherFigures figures, SkcipherDriver driver);
    ~TcryptSkcipherTest() override;
    void start() override;
    bool finite() const override { return true; }
    results::WorkloadResult result() const override;
    void register_stats(const stats::Scope& machine) const override;

private:
    struct Row {
        std::uint64_t size = 0;
        bool encrypt = true;
        engine::Tick total = 0;       // of the timed requests
        engine::Cycles cycles = 0;    // the same, in CPU cycles (get_cycles())
        std::uint64_t brackets = 0;   // kernel_*_begin/end pairs of the timed requests
        std::uint64_t async = 0;      // requests that went through cryptd
    };
    static engine::Task<> insmod(TcryptSkcipherTest& w);
    static engine::Task<> tasklet(kernel::Cpu& cpu, void* ctx);
    static engine::Task<int> cryptd_crypt(kernel::Cpu& cpu, void* ctx, std::uint64_t arg);
    static engine::Task<> cryptd_complete(kernel::Cpu& cpu, void* ctx, std::uint64_t arg, int err);
    // crypto_skcipher_encrypt/decrypt of the current request, in the running context.
    engine::Task<> issue(kernel::Cpu& cpu);
    engine::Task<bool> driver_crypt(kernel::Cpu& cpu);
    void finish(kernel::Cpu& cpu, bool clobbered);
    void check_functional(kernel::Cpu& cpu, bool clobbered);

    TcryptWorkload cfg_;
    TcryptSkcipher test_;
    SkcipherFigures fig_;
    SkcipherDriver driver_;
    crypto::SkcipherStats stats_;
    std::unique_ptr<crypto::Cryptd> cryptd_;
    crypto::CryptdTfm tfm_;
    kernel::TaskStruct* task_ = nullptr;
    std::vector<Row> rows_;
    Row* row_ = nullptr;          // the row of the request in flight
    engine::Tick issued_ = 0;
    bool done_ = false;           // the request in flight has completed
    bool waiting_ = false;        // the insmod task sleeps on it
    bool completed_ = false;      // the whole test
    std::uint64_t clobbered_ = 0;
    std::uint64_t mismatches_ = 0;
    std::uint64_t checked_ = 0;
    std::unique_ptr<crypto::SkcipherKey> key_; // functional mode
    std::vector<std::uint8_t> plain_, out_, back_;
};

} // namespace kdsim::workloads
