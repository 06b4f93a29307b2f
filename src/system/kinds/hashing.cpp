// module_load, hash_list and tcrypt (workloads/hashing.h): tasks that hash through
// crypto_shash_digest; tcrypt with an skcipher alg runs the skcipher speed test
// (workloads/tcrypt_skcipher.h) instead.
#include "system/workload_kind.h"
#include "workloads/hashing.h"
#include "workloads/tcrypt_skcipher.h"
#include "workloads/testmgr.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace kdsim::system {

namespace {

using workloads::HashListWorkload;
using workloads::ModuleLoadWorkload;
using workloads::TcryptWorkload;
using workloads::TestmgrWorkload;

std::optional<std::uint32_t> read_repeat(ParamReader& r) {
    // At most a million passes over the size list: the largest shipped use is 100,000, and 2^32
    // passes of testmgr's list would hash for weeks of wall time.
    if (auto v = r.integer("repeat", false, 1, 1'000'000)) return static_cast<std::uint32_t>(*v);
    return std::nullopt;
}

void read_module_load(ParamReader& r, ModuleLoadWorkload& x) {
    read_hash(r, x, true);
    if (auto t = r.bytes("signature_trailer", false, false)) x.signature_trailer = *t;
    if (auto b = r.boolean("blacklist_hash", false)) x.blacklist_hash = *b;
    if (auto t = r.duration("user_time", false, false)) x.user_time = *t;
    if (auto v = read_repeat(r)) x.repeat = *v;
    // systemd-udevd caps its workers at WORKER_NUM_MAX = 2048 (src/udev/udevd.c)
    if (auto v = r.integer("workers", false, 1, 2048)) x.workers = static_cast<std::uint32_t>(*v);
    if (r.has("modules_file")) {
        if (auto l = r.module_list(x.alg, x.signature_trailer, "signature_trailer")) {
            x.sizes = std::move(l->sizes);
            x.algs = std::move(l->algs);
        }
    } else if (auto s = r.sizes(x.signature_trailer, "signature_trailer")) {
        x.sizes = std::move(*s);
    }
}

void read_hash_list(ParamReader& r, HashListWorkload& x) {
    read_hash(r, x, true);
    if (auto v = read_repeat(r)) x.repeat = *v;
    if (auto b = r.boolean("cond_resched_between", false)) x.cond_resched_between = *b;
    if (auto s = r.sizes(0, "")) x.sizes = std::move(*s);
}

void read_testmgr(ParamReader& r, TestmgrWorkload& x) {
    read_hash(r, x, true);
    if (auto b = r.boolean("extra_tests", false)) x.extra_tests = *b;
    // testmgr's module parameter; 10^4 random configurations per vector is already days of boot
    if (auto v = r.integer("fuzz_iterations", false, 0, 10'000)) x.fuzz_iterations = static_cast<std::uint32_t>(*v);
    // A vector is at most the 2-page test buffer less the poison (build_test_sglist's bound).
    if (auto s = r.sizes(0, "")) {
        for (std::uint64_t v : *s)
            if (v > workloads::testmgr::MAX_RANDOM_DATA) {
                r.error("sizes", "expected test vectors of at most 8176 bytes (2 pages less 16 bytes of poison), found " +
                                     std::to_string(v));
                return;
            }
        x.sizes = std::move(*s);
    }
}

// tcrypt's block_sizes (crypto/tcrypt.c), each rounded up to the algorithm's block size as
// test_skcipher_speed does.
std::vector<std::uint64_t> tcrypt_block_sizes(crypto::SkcipherAlg a) {
    std::vector<std::uint64_t> out;
    const std::uint64_t bs = crypto::skcipher_blocksize(a);
    for (std::uint64_t s : {16, 64, 128, 256, 1024, 1420, 4096}) out.push_back((s + bs - 1) / bs * bs);
    return out;
}

// The keys of one test that the other does not take.
constexpr std::string_view HASH_ONLY[] = {"impl", "block_size", "duration"};
constexpr std::string_view SKCIPHER_ONLY[] = {"key_bits", "sizes", "sizes_file", "count", "driver", "context"};

void read_skcipher_test(ParamReader& r, crypto::SkcipherAlg alg, TcryptWorkload& x) {
    for (std::string_view k : HASH_ONLY)
        if (r.has(k)) r.error(k, fmt::format("expected no {} for the skcipher test of {} (a hash test's key)", k, to_string(alg)));
    workloads::TcryptSkcipher t;
    t.alg = alg;
    const auto bits = crypto::skcipher_key_bits(alg);
    t.key_bits = bits.front();
    if (auto v = r.integer("key_bits", false, 1, 4096)) {
        if (std::find(bits.begin(), bits.end(), *v) == bits.end()) {
            std::vector<std::string> names;
            for (unsigned b : bits) names.push_back(std::to_string(b));
            r.error("key_bits", fmt::format("expected {} for {}{}, found {}", fmt::join(names, " or "), to_string(alg),
                                            alg == crypto::SkcipherAlg::XTS_AES
                                                ? " (two AES keys, the data key and the tweak key: 2 x 128 or 2 x 256)"
                                                : " (AES-128 or AES-256; the profiles have no AES-192 figures)",
                                            *v));
        } else {
            t.key_bits = static_cast<unsigned>(*v);
        }
    }
    if (r.has("sizes") || r.has("sizes_file")) {
        if (auto s = r.sizes(0, "")) {
            for (std::uint64_t v : *s)
                if (auto e = crypto::skcipher_len_error(alg, v)) {
                    r.error(r.has("sizes") ? "sizes" : "sizes_file",
                            fmt::format("expected request sizes of {} for {}, found {}", *e, to_string(alg), v));
                    break;
                }
            t.sizes = std::move(*s);
        }
    } else {
        t.sizes = tcrypt_block_sizes(alg);
    }
    // one request in flight at a time; 10^6 per size is already hours of wall time at 4 KiB
    if (auto v = r.integer("count", false, 1, 1'000'000)) t.count = static_cast<std::uint32_t>(*v);
    const std::vector<std::string_view> drivers(workloads::SKCIPHER_DRIVER_NAMES.begin(), workloads::SKCIPHER_DRIVER_NAMES.end());
    if (auto i = r.choice("driver", false, drivers)) t.driver = static_cast<workloads::SkcipherDriver>(*i);
    if (auto i = r.choice("context", false, {"task", "softirq"})) t.context = static_cast<workloads::RequestContext>(*i);
    if (const Profile* p = r.profile()) {
        for (bool enc : {true, false}) {
            const auto prim = crypto::skcipher_prim(alg, t.key_bits, enc);
            if (!crypto::skcipher_impl(p->cipher, prim)) {
                r.error("alg", fmt::format("profile {} has no cipher.{} table (any implementation), needed by {} with a "
                                           "{}-bit key",
                                           p->name, to_string(prim), to_string(alg), t.key_bits));
                break;
            }
        }
        if (!p->skcipher) r.error("alg", fmt::format("profile {} has no [skcipher] table, needed by {}", p->name, to_string(alg)));
        const auto driver = t.driver.value_or(workloads::default_skcipher_driver(p->arch));
        if (driver != workloads::SkcipherDriver::DIRECT && !p->tunnel)
            r.error(t.driver ? "driver" : "alg",
                    fmt::format("profile {} has no [tunnel] table, whose cryptd_enqueue, cryptd_complete, queue_work and process_one_work "
                                "a request through cryptd costs",
                                p->name));
    }
    x.skcipher = std::move(t);
}

void read_tcrypt(ParamReader& r, TcryptWorkload& x) {
    std::vector<std::string_view> names = {"sha1", "sha256", "sha512"};
    names.insert(names.end(), crypto::SKCIPHER_ALG_NAMES.names.begin(), crypto::SKCIPHER_ALG_NAMES.names.end());
    const auto i = r.choice("alg", true, names); // unknown: the error lists hashes and skciphers
    if (!i) return;
    if (auto skc = crypto::skcipher_alg_from_string(names[*i])) {
        read_skcipher_test(r, *skc, x);
        return;
    }
    for (std::string_view k : SKCIPHER_ONLY)
        if (r.has(k)) r.error(k, fmt::format("expected no {} for a hash speed test (a key of the skcipher tests: alg = {})", k,
                                             fmt::join(crypto::SKCIPHER_ALG_NAMES.names, ", ")));
    read_hash(r, x, true);
    if (auto b = r.bytes("block_size", false, true)) x.block_size = *b;
    if (auto t = r.duration("duration", false, true)) x.duration = *t;
}

std::unique_ptr<workloads::Workload> build_tcrypt(const TcryptWorkload& x, BuildContext& b) {
    if (!x.skcipher) return std::make_unique<workloads::Tcrypt>(b.env, x);
    const Profile& p = b.machine().profile;
    require(p.skcipher.has_value(), "tcrypt: profile " + p.name + " has no [skcipher] table");
    std::optional<crypto::CryptdCosts> cryptd;
    if (p.tunnel) cryptd = crypto::CryptdCosts{p.tunnel->cryptd_enqueue, p.tunnel->workqueue, p.tunnel->cryptd_complete};
    const auto driver = x.skcipher->driver.value_or(workloads::default_skcipher_driver(p.arch));
    require(driver == workloads::SkcipherDriver::DIRECT || cryptd.has_value(),
            "tcrypt: profile " + p.name + " has no [tunnel] cryptd figures");
    return std::make_unique<workloads::TcryptSkcipherTest>(b.env, x, workloads::SkcipherFigures{p.cipher, *p.skcipher, cryptd},
                                                           driver);
}

#define SIZES "sizes", "sizes_file", "size_column", "match_column", "match", "sample"

} // namespace

extern const WorkloadKind module_load_kind = WorkloadKind::of<ModuleLoadWorkload>(
    "module_load", {"alg", "impl", SIZES, "modules_file", "signature_trailer", "blacklist_hash", "user_time", "repeat", "workers"}, false,
    read_module_load, build_on_cpu<workloads::ModuleLoad>);

extern const WorkloadKind hash_list_kind = WorkloadKind::of<HashListWorkload>(
    "hash_list", {"alg", "impl", SIZES, "repeat", "cond_resched_between"}, false, read_hash_list,
    build_on_cpu<workloads::HashList>);

extern const WorkloadKind testmgr_kind = WorkloadKind::of<TestmgrWorkload>(
    "testmgr", {"alg", "impl", SIZES, "extra_tests", "fuzz_iterations"}, false, read_testmgr,
    build_on_cpu<workloads::Testmgr>);

extern const WorkloadKind tcrypt_kind = WorkloadKind::of<TcryptWorkload>(
    "tcrypt", {"alg", "impl", "block_size", "duration", "key_bits", SIZES, "count", "driver", "context"}, false, read_tcrypt,
    build_tcrypt);

} // namespace kdsim::system
