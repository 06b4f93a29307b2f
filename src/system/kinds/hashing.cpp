// module_load, hash_list and tcrypt (workloads/hashing.h): tasks that hash through
// crypto_shash_digest.
#include "system/workload_kind.h"
#include "workloads/hashing.h"
#include "workloads/testmgr.h"

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

void read_tcrypt(ParamReader& r, TcryptWorkload& x) {
    read_hash(r, x, true);
    if (auto b = r.bytes("block_size", false, true)) x.block_size = *b;
    if (auto t = r.duration("duration", false, true)) x.duration = *t;
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
    "tcrypt", {"alg", "impl", "block_size", "duration"}, false, read_tcrypt, build_on_cpu<workloads::Tcrypt>);

} // namespace kdsim::system
