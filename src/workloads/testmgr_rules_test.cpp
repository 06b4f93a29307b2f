// testmgr's rules (crypto/testmgr.c, 6.1) worked out by hand. The random cases use the stream
// Rng(7, "testmgr-rules-test"), whose first 32-bit draws (next() >> 32) are, in order:
//   d0 1986737781  d1 2340282743  d2 1537022936  d3 3289153477  d4 1992894551  d5 1468785626
//   d6 2357184459  d7 2236690083  d8 813441198   d9 1586948981  d10 382800527  d11 159012732
//   d12 4141611557 d13 1369222323 d14 529452227  d15 2581996333 d16 650869017  d17 1901840945
//   d18 1351462050 d19 67510181   d20 3793577686 d21 2534726350 d22 3062611645 d23 2302975670
//   d24 2916138361 d25 1487621255 d26 2457131352 d27 3602183282 d28 3915354395 d29 2815242667
//   d30 1759504705 d31 699361343  d32 953505497  d33 803705734  d34 4284865238 d35 3874594938
//   d36 2330426663 d37 722049609  d38 4267791659 d39 2248610820 d40 3002021038 d41 149772466
//   d42 3143872333 d43 259281332  d44 1148744242 d45 3406672384 d46 1898529612 d47 880811383
//   d48 643346978  d49 4188731028 d50 2067717322 d51 1812300461 d52 3620571354 d53 1723499302
// (xoshiro256** as engine/rng.h defines it); testmgr's prandom_u32_below(n) is draw % n.
#include "workloads/testmgr_rules.h"

#include <gtest/gtest.h>

namespace kdsim::workloads::testmgr {
namespace {

using crypto::ShashOp;

struct Expect {
    ShashOp op;
    std::uint32_t len;
    bool resched = false; // a walk step of a may-sleep request: cond_resched() follows
};

void expect_calls(const std::vector<HashCall>& got, const std::vector<Expect>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got[i].op, want[i].op) << "call " << i;
        EXPECT_EQ(got[i].len, want[i].len) << "call " << i;
        EXPECT_FALSE(got[i].nosimd) << "call " << i;
        EXPECT_EQ(got[i].resched, want[i].resched) << "call " << i;
    }
}

TEST(TestmgrRules, TwoRandomConfigsFromAFixedSeedGiveTheUpdateCallsWorkedOutByHand) {
    engine::Rng rng(7, "testmgr-rules-test");
    // Config 1: d0%4=1 out of place; d1%2=1 may_sleep (so no nosimd draw); d2%4=0 use_final.
    // src_divs (flushes allowed): d3%2=1 -> 100%; d4%4=3, d5%2=0 -> offset d6%4096 = 1995;
    // d7%8=3 not alignmask-relative; d8%4=2 no flush; one division. dst_divs: d9%2=1 -> d10..d13.
    // iv_offset: d14%2=1 -> d15; key_offset: d16%2=1 -> d17.
    TestvecConfig a = generate_random_testvec_config(rng);
    EXPECT_TRUE(a.may_sleep);
    EXPECT_FALSE(a.nosimd);
    EXPECT_EQ(a.finalization, Finalization::FINAL);
    ASSERT_EQ(a.src_divs.size(), 1u);
    EXPECT_EQ(a.src_divs[0].proportion_of_total, 10000u);
    EXPECT_EQ(a.src_divs[0].offset, 1995u);
    EXPECT_EQ(a.src_divs[0].flush, Flush::NONE);
    // 3000 bytes at 1995 of the 2-page buffer: the page boundary at 4096 splits the ahash walk
    // into 4096-1995 = 2101 and 899, each followed by cond_resched (may_sleep); shash updates the
    // entry whole; both end with final() (no walk, no yield).
    auto sg = build_test_sglist(a, 3000, 0);
    ASSERT_EQ(sg.size(), 1u);
    expect_calls(shash_calls(a, sg), {{ShashOp::UPDATE, 3000}, {ShashOp::FINUP, 0}});
    expect_calls(ahash_calls(a, sg), {{ShashOp::UPDATE, 2101, true}, {ShashOp::UPDATE, 899, true}, {ShashOp::FINUP, 0}});

    // Config 2: d18%4=2 in place; d19%2=1 may_sleep; d20%4=2 use_digest (no flushes).
    // div0: d21%2=0 -> 1 + d22%10000 = 1646; d23%4=2, d24%2=1 -> offset d25%32 = 7; d26%8=0 -> +alignmask.
    // div1: d27%2=0 -> 1 + d28%8354 = 1676; d29%4=3, d30%2=1 -> offset d31%32 = 31; d32%8=1.
    // div2: d33%2=0 -> 1 + d34%6678 = 6675; d35%4=2, d36%2=1 -> offset d37%32 = 9; d38%8=3.
    // div3: d39%2=0 -> 1 + d40%3 = 2; d41%4=2, d42%2=1 -> offset d43%32 = 20; d44%8=2.
    // div4: d45%2=0 -> 1 + d46%1 = 1 (remaining 1); d47%4=3, d48%2=0 -> offset d49%4096; d50%8=2.
    TestvecConfig b = generate_random_testvec_config(rng);
    EXPECT_EQ(b.finalization, Finalization::DIGEST);
    ASSERT_EQ(b.src_divs.size(), 5u);
    const std::uint32_t props[] = {1646, 1676, 6675, 2, 1};
    for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(b.src_divs[i].proportion_of_total, props[i]) << i;
    EXPECT_EQ(b.src_divs[0].offset, 7u);
    EXPECT_TRUE(b.src_divs[0].offset_relative_to_alignmask);
    EXPECT_EQ(b.src_divs[3].offset, 20u);
    // 1023 bytes (the longest sha256 vector): (1023*1646+5000)/10000 = 168, (1023*1676+5000)/10000
    // = 171, (1023*6675+5000)/10000 = 683, then 0 and 0 (omitted); the last entry takes the
    // remaining 1 byte: 168, 171, 684. shash skips a digest over 3 entries; ahash walks them
    // (none crosses a page, each step yields: may_sleep) and finishes with finup.
    sg = build_test_sglist(b, 1023, 0);
    ASSERT_EQ(sg.size(), 3u);
    EXPECT_EQ(sg[0].offset, 7u);
    expect_calls(shash_calls(b, sg), {});
    expect_calls(ahash_calls(b, sg),
                 {{ShashOp::UPDATE, 168, true}, {ShashOp::UPDATE, 171, true}, {ShashOp::FINUP, 684, true}});
}

TEST(TestmgrRules, RandomLengthTakesTheDrawModMaxPlusOneThenTheChosenModulus) {
    engine::Rng rng(7, "testmgr-rules-test");
    // d0 % 8177 = 4799; d1 % 4 = 3: the length as drawn.
    EXPECT_EQ(generate_random_length(rng, MAX_RANDOM_DATA), 4799u);
}

TEST(TestmgrRules, DefaultConfigsCrossingPagesAndImportExportMakeTheirCalls) {
    const auto& cfgs = default_hash_configs();
    ASSERT_EQ(cfgs.size(), 9u);
    // "digest misaligned splits crossing pages", 1023 bytes: (1023*7500+5000)/10000 = 767 at
    // 4096-32, the other 256 at 4096-7. shash skips (2 entries); ahash walks 32+735 and 7+249.
    auto sg = build_test_sglist(cfgs[7], 1023, 0);
    expect_calls(shash_calls(cfgs[7], sg), {});
    expect_calls(ahash_calls(cfgs[7], sg),
                 {{ShashOp::UPDATE, 32}, {ShashOp::UPDATE, 735}, {ShashOp::UPDATE, 7}, {ShashOp::FINUP, 249}});
    // "import/export", 1023 bytes: 665 and 358 (rounded shares 665.45 and 358.55). ahash flushes
    // the pending 665 when it reaches the second division, then updates 358 and finals.
    sg = build_test_sglist(cfgs[8], 1023, 0);
    expect_calls(shash_calls(cfgs[8], sg), {{ShashOp::UPDATE, 665}, {ShashOp::UPDATE, 358}, {ShashOp::FINUP, 0}});
    expect_calls(ahash_calls(cfgs[8], sg), {{ShashOp::UPDATE, 665}, {ShashOp::UPDATE, 358}, {ShashOp::FINUP, 0}});
    // "digest aligned buffer", 0 bytes: one empty entry; both APIs make a single finup of 0.
    sg = build_test_sglist(cfgs[2], 0, 0);
    expect_calls(shash_calls(cfgs[2], sg), {{ShashOp::FINUP, 0}});
    expect_calls(ahash_calls(cfgs[2], sg), {{ShashOp::FINUP, 0}});
}

} // namespace
} // namespace kdsim::workloads::testmgr
