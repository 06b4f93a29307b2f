// tcrypt's skcipher speed test (scenarios/tcrypt-skcipher): the cycles of one request computed by
// hand from the profile's figures and the walk steps, the kernel_*_begin brackets per request (one
// per page the data touches, tcrypt's data starting after the key), cryptd's hop, and the real
// bytes' round trip in functional mode.
#include "helpers.h"
#include "scenario/load.h"
#include "system/system.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kdsim {
namespace {

using namespace testing; // ROOT, run_scenario, metric, stat (helpers.h)

results::RunResults run(const std::string& stem) { return run_scenario("scenarios/tcrypt-skcipher/" + stem + ".toml"); }

TEST(TcryptSkcipher, ACbcDecryptionOf1KiBOnA72CostsTheRequestTheRoutineAndOneBracket) {
    const auto p = scenario::load_profile(ROOT / "data/profiles/arm64/cortex-a72-ce.toml");
    const auto& c = *p.cipher.get(crypto::CipherPrim::AES128_CBC_DEC, crypto::CipherImpl::CE);
    // request + the routine's call + 1024 bytes + kernel_neon_begin/end, which disable BH (arm64 5.13+)
    const double expect = static_cast<double>(p.skcipher->request + c.cycles_per_call) + std::round(1024 * c.cycles_per_byte) +
                          static_cast<double>(p.simd.begin + p.simd.end + p.kernel.local_bh_disable + p.kernel.local_bh_enable);
    EXPECT_NEAR(metric(run("a72-ce"), "cbc", "dec_1024B_cycles_per_op"), expect, 1.0); // ps to cycles rounding
}

TEST(TcryptSkcipher, A4KiBRequestAfterTheKeyTouchesTwoPagesSoTwoBrackets) {
    const auto r = run("a72-ce");
    for (const char* wl : {"cbc", "ctr", "xts"}) {
        EXPECT_EQ(metric(r, wl, "enc_4096B_brackets_per_op"), 2.0) << wl;
        EXPECT_EQ(metric(r, wl, "dec_1024B_brackets_per_op"), 1.0) << wl;
    }
    // every bracket a request opens is one walk step: brackets == walk steps (aes-ce is SIMD throughout)
    EXPECT_EQ(metric(r, "xts", "brackets"), metric(r, "xts", "walk_steps"));
}

TEST(TcryptSkcipher, XtsStealsCiphertextInAThirdBracketAndA64KiBRequestTakesSeventeenPages) {
    const auto r = run("a53-ce-xts-softirq"); // 512-bit key: the data starts 64 bytes into its page
    EXPECT_EQ(metric(r, "xts", "enc_4096B_brackets_per_op"), 2.0);
    EXPECT_EQ(metric(r, "xts", "enc_4100B_brackets_per_op"), 3.0); // 4032 + 48, then 16 + 4
    EXPECT_EQ(metric(r, "xts", "enc_65536B_brackets_per_op"), 17.0);
    EXPECT_EQ(metric(r, "xts", "enc_4096B_async"), 0.0);
    EXPECT_EQ(stat(r, "a53-ce/cpu0/softirq/tasklet/runs"), 2 * 5 * 8); // every request from the softirq
}

TEST(TcryptSkcipher, OnX86TheSimdWrapperKeepsTaskRequestsSynchronousAndChargesItsSubrequest) {
    const auto p = scenario::load_profile(ROOT / "data/profiles/x86/amd-zen3.toml");
    const auto& c = *p.cipher.get(crypto::CipherPrim::AES128_CTR, crypto::CipherImpl::AESNI);
    const auto r = run("zen3");
    EXPECT_EQ(metric(r, "ctr", "enc_1024B_async"), 0.0);
    const double expect = static_cast<double>(p.skcipher->simd_wrapper + p.skcipher->request + c.cycles_per_call) +
                          std::round(1024 * c.cycles_per_byte) + static_cast<double>(p.simd.begin + p.simd.end);
    EXPECT_NEAR(metric(r, "ctr", "dec_1024B_cycles_per_op"), expect, 1.0);
}

TEST(TcryptSkcipher, EveryRequestThroughCryptdCostsAtLeastTheQueueAndTheWorkItemMore) {
    const auto p = scenario::load_profile(ROOT / "data/profiles/x86/amd-zen3.toml");
    const auto sync = run("zen3"), async = run("zen3-xts-cryptd");
    EXPECT_EQ(metric(async, "xts", "enc_4096B_async"), 8.0);
    const double hop = static_cast<double>(p.tunnel->cryptd_enqueue + p.tunnel->cryptd_complete + p.tunnel->workqueue.queue_work +
                                           p.tunnel->workqueue.process_one_work + 2 * p.kernel.context_switch) -
                       static_cast<double>(p.skcipher->simd_wrapper);
    EXPECT_GT(metric(async, "xts", "enc_4096B_cycles_per_op") - metric(sync, "xts", "enc_4096B_cycles_per_op"), hop);
}

TEST(TcryptSkcipher, FunctionalModeRoundTripsEveryRequestThroughOpenSsl) {
    scenario::LoadOptions lo;
    lo.mode_override = system::Mode::FUNCTIONAL;
    const system::ScenarioConfig cfg = scenario::load_scenario(ROOT / "scenarios/tcrypt-skcipher/a72-ce.toml", lo);
    system::System sys(cfg); // keeps a reference to cfg
    const auto r = sys.run();
    for (const char* wl : {"cbc", "ctr", "xts"}) {
        EXPECT_EQ(metric(r, wl, "requests_checked"), 2 * 7 * 8) << wl; // both directions, tcrypt's 7 sizes, 8 each
        EXPECT_EQ(metric(r, wl, "round_trip_mismatches"), 0.0) << wl;
    }
}

} // namespace
} // namespace kdsim
