#include "workloads/testmgr_rules.h"

#include <algorithm>

namespace kdsim::workloads::testmgr {

using crypto::ShashOp;

namespace {

// prandom_u32_below(): a 32-bit draw mod `ceil` (testmgr's own, slightly biased, rule).
std::uint32_t below(engine::Rng& rng, std::uint32_t ceil) { return static_cast<std::uint32_t>(rng.next() >> 32) % ceil; }
bool coin(engine::Rng& rng) { return below(rng, 2) != 0; }
std::uint32_t inclusive(engine::Rng& rng, std::uint32_t floor, std::uint32_t ceil) {
    return floor + below(rng, ceil - floor + 1);
}

// Models: generate_random_sgl_divisions() (crypto/testmgr.c)
std::vector<SgDivision> random_divisions(engine::Rng& rng, bool gen_flushes, bool may_sleep) {
    std::vector<SgDivision> divs;
    std::uint32_t remaining = TEST_SG_TOTAL;
    do {
        SgDivision d;
        const bool last_slot = divs.size() == XBUFSIZE - 1;
        d.proportion_of_total = last_slot || coin(rng) ? remaining : inclusive(rng, 1, remaining);
        if (below(rng, 4) == 0) d.offset = inclusive(rng, PAGE_SIZE - 128, PAGE_SIZE - 1);
        else if (coin(rng)) d.offset = below(rng, 32);
        else d.offset = below(rng, PAGE_SIZE);
        if (below(rng, 8) == 0) d.offset_relative_to_alignmask = true;
        if (gen_flushes) {
            switch (below(rng, 4)) {
            case 0: d.flush = Flush::REIMPORT; break;
            case 1: d.flush = Flush::FLUSH; break;
            default: break;
            }
        }
        if (d.flush != Flush::NONE && !may_sleep && coin(rng)) d.nosimd = true;
        remaining -= d.proportion_of_total;
        divs.push_back(d);
    } while (remaining);
    return divs;
}

SgDivision whole(std::uint32_t proportion, std::uint32_t offset = 0, Flush flush = Flush::NONE) {
    return SgDivision{proportion, offset, false, flush, false};
}

} // namespace

const std::vector<TestvecConfig>& default_hash_configs() {
    static const std::vector<TestvecConfig> configs = [] {
        std::vector<TestvecConfig> c;
        c.push_back({"init+update+final aligned buffer", false, Finalization::FINAL, false, {whole(10000)}});
        c.push_back({"init+finup aligned buffer", false, Finalization::FINUP, false, {whole(10000)}});
        c.push_back({"digest aligned buffer", false, Finalization::DIGEST, false, {whole(10000)}});
        c.push_back({"init+update+final misaligned buffer", false, Finalization::FINAL, false, {whole(10000, 1)}});
        SgDivision rel = whole(10000, 1);
        rel.offset_relative_to_alignmask = true;
        c.push_back({"digest buffer aligned only to alignmask", false, Finalization::DIGEST, false, {rel}});
        c.push_back({"init+update+update+final two even splits", false, Finalization::FINAL, false,
                     {whole(5000), whole(5000, 0, Flush::FLUSH)}});
        c.push_back({"digest uneven misaligned splits, may sleep", true, Finalization::DIGEST, false,
                     {whole(1900, 33), whole(3300, 7), whole(4800, 18)}});
        c.push_back({"digest misaligned splits crossing pages", false, Finalization::DIGEST, false,
                     {whole(7500, PAGE_SIZE - 32), whole(2500, PAGE_SIZE - 7)}});
        c.push_back({"import/export", false, Finalization::FINAL, false,
                     {whole(6500, 0, Flush::REIMPORT), whole(3500, 0, Flush::REIMPORT)}});
        return c;
    }();
    return configs;
}

// Models: generate_random_length() (crypto/testmgr.c)
std::uint32_t generate_random_length(engine::Rng& rng, std::uint32_t max_len) {
    const std::uint32_t len = below(rng, max_len + 1);
    switch (below(rng, 4)) {
    case 0: return len % 64;
    case 1: return len % 256;
    case 2: return len % 1024;
    default: return len;
    }
}

// Models: generate_random_testvec_config() (crypto/testmgr.c)
TestvecConfig generate_random_testvec_config(engine::Rng& rng) {
    TestvecConfig cfg;
    cfg.name = "random";
    const bool out_of_place = below(rng, 4) < 2; // OUT_OF_PLACE, else one of the in-place modes
    cfg.may_sleep = coin(rng);
    switch (below(rng, 4)) {
    case 0: cfg.finalization = Finalization::FINAL; break;
    case 1: cfg.finalization = Finalization::FINUP; break;
    default: cfg.finalization = Finalization::DIGEST; break;
    }
    if (!cfg.may_sleep && coin(rng)) cfg.nosimd = true;
    cfg.src_divs = random_divisions(rng, cfg.finalization != Finalization::DIGEST, cfg.may_sleep);
    if (out_of_place && coin(rng)) random_divisions(rng, false, cfg.may_sleep); // dst_divs
    if (coin(rng)) inclusive(rng, 1, MAX_ALGAPI_ALIGNMASK);                     // iv_offset
    if (coin(rng)) inclusive(rng, 1, MAX_ALGAPI_ALIGNMASK);                     // key_offset
    return cfg;
}

// Models: build_test_sglist() (crypto/testmgr.c)
std::vector<SgEntry> build_test_sglist(const TestvecConfig& cfg, std::uint32_t total_len, std::uint32_t alignmask) {
    std::vector<SgEntry> sg;
    std::uint32_t remaining = total_len;
    for (std::size_t i = 0; i < cfg.src_divs.size(); ++i) {
        const std::uint64_t share =
            (static_cast<std::uint64_t>(total_len) * cfg.src_divs[i].proportion_of_total + TEST_SG_TOTAL / 2) / TEST_SG_TOTAL;
        const std::uint32_t len = std::min<std::uint32_t>(remaining, static_cast<std::uint32_t>(share));
        if (len) {
            sg.push_back({len, 0, i});
            remaining -= len;
        }
    }
    if (sg.empty()) sg.push_back({0, 0, 0});
    sg.back().length += remaining;
    for (SgEntry& e : sg) {
        const SgDivision& d = cfg.src_divs[e.div];
        std::uint32_t offset = d.offset + (d.offset_relative_to_alignmask ? alignmask : 0);
        while (offset + e.length + TESTMGR_POISON_LEN > 2 * PAGE_SIZE && offset > 0) offset /= 2;
        e.offset = offset;
    }
    return sg;
}

// Models: test_shash_vec_cfg() (crypto/testmgr.c)
std::vector<HashCall> shash_calls(const TestvecConfig& cfg, const std::vector<SgEntry>& sg) {
    std::vector<HashCall> calls;
    if (cfg.finalization == Finalization::DIGEST) {
        if (sg.size() == 1) calls.push_back({ShashOp::FINUP, sg[0].length, cfg.nosimd});
        return calls;
    }
    for (std::size_t i = 0; i < sg.size(); ++i) {
        const bool nosimd = cfg.src_divs[sg[i].div].nosimd;
        if (i + 1 == sg.size() && cfg.finalization == Finalization::FINUP) {
            calls.push_back({ShashOp::FINUP, sg[i].length, nosimd});
            return calls;
        }
        calls.push_back({ShashOp::UPDATE, sg[i].length, nosimd});
    }
    calls.push_back({ShashOp::FINUP, 0, cfg.nosimd}); // crypto_shash_final
    return calls;
}

namespace {

// crypto_hash_walk over entries [first, last): the pieces shash_ahash_update/_finup feed to the
// shash, each within one page (kmap_local_page).
std::vector<std::uint32_t> walk(const std::vector<SgEntry>& sg, std::size_t first, std::size_t last) {
    std::vector<std::uint32_t> pieces;
    for (std::size_t i = first; i < last; ++i) {
        std::uint32_t off = sg[i].offset, left = sg[i].length;
        while (left) {
            const std::uint32_t n = std::min(left, PAGE_SIZE - off % PAGE_SIZE);
            pieces.push_back(n);
            off += n;
            left -= n;
        }
    }
    return pieces;
}

// Models: shash_ahash_update() (crypto/shash.c)
// Models: crypto_hash_walk_done() (crypto/ahash.c)
void walk_update(std::vector<HashCall>& calls, const std::vector<std::uint32_t>& pieces, bool nosimd, bool may_sleep) {
    for (std::uint32_t n : pieces) calls.push_back({ShashOp::UPDATE, n, nosimd, may_sleep});
}

// Models: shash_ahash_finup() (crypto/shash.c)
void walk_finup(std::vector<HashCall>& calls, const std::vector<std::uint32_t>& pieces, bool nosimd, bool may_sleep) {
    if (pieces.empty()) {
        calls.push_back({ShashOp::FINUP, 0, nosimd, false}); // crypto_shash_final, no walk
        return;
    }
    for (std::size_t i = 0; i < pieces.size(); ++i)
        calls.push_back({i + 1 == pieces.size() ? ShashOp::FINUP : ShashOp::UPDATE, pieces[i], nosimd, may_sleep});
}

} // namespace

// Models: test_ahash_vec_cfg() (crypto/testmgr.c)
// Models: shash_ahash_digest() (crypto/shash.c)
std::vector<HashCall> ahash_calls(const TestvecConfig& cfg, const std::vector<SgEntry>& sg) {
    std::vector<HashCall> calls;
    if (cfg.finalization == Finalization::DIGEST) {
        std::uint32_t total = 0;
        for (const SgEntry& e : sg) total += e.length;
        // One entry's bytes within one page: crypto_shash_digest on them directly.
        if (total && total <= std::min(sg[0].length, PAGE_SIZE - sg[0].offset % PAGE_SIZE)) {
            calls.push_back({ShashOp::FINUP, total, cfg.nosimd});
            return calls;
        }
        walk_finup(calls, walk(sg, 0, sg.size()), cfg.nosimd, cfg.may_sleep);
        return calls;
    }
    std::size_t pending = sg.size(); // the first entry not yet hashed; sg.size(): none pending
    for (std::size_t i = 0; i < sg.size(); ++i) {
        const SgDivision& d = cfg.src_divs[sg[i].div];
        if (d.flush != Flush::NONE && pending != sg.size()) {
            walk_update(calls, walk(sg, pending, i), d.nosimd, cfg.may_sleep);
            pending = sg.size();
        }
        if (pending == sg.size()) pending = i;
    }
    const std::size_t from = pending == sg.size() ? sg.size() : pending;
    if (cfg.finalization == Finalization::FINAL) {
        walk_update(calls, walk(sg, from, sg.size()), cfg.nosimd, cfg.may_sleep);
        calls.push_back({ShashOp::FINUP, 0, cfg.nosimd}); // crypto_ahash_final -> crypto_shash_final
    } else {
        walk_finup(calls, walk(sg, from, sg.size()), cfg.nosimd, cfg.may_sleep);
    }
    return calls;
}

} // namespace kdsim::workloads::testmgr
