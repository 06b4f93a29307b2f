// module_load, hash_list and tcrypt (workloads/hashing.h): tasks that hash through
// crypto_shash_digest.
#include "system/workload_kind.h"
#include "workloads/hashing.h"

namespace kdsim::system {

namespace {

using workloads::HashListWorkload;
using workloads::ModuleLoadWorkload;
using workloads::TcryptWorkload;

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
    if (auto s = r.sizes(x.signature_trailer, "signature_trailer")) x.sizes = std::move(*s);
}

void read_hash_list(ParamReader& r, HashListWorkload& x) {
    read_hash(r, x, true);
    if (auto v = read_repeat(r)) x.repeat = *v;
    if (auto b = r.boolean("cond_resched_between", false)) x.cond_resched_between = *b;
    if (auto s = r.sizes(0, "")) x.sizes = std::move(*s);
}

void read_tcrypt(ParamReader& r, TcryptWorkload& x) {
    read_hash(r, x, true);
    if (auto b = r.bytes("block_size", false, true)) x.block_size = *b;
    if (auto t = r.duration("duration", false, true)) x.duration = *t;
}

#define SIZES "sizes", "sizes_file", "size_column", "match_column", "match", "sample"

} // namespace

extern const WorkloadKind module_load_kind = WorkloadKind::of<ModuleLoadWorkload>(
    "module_load", {"alg", "impl", SIZES, "signature_trailer", "blacklist_hash", "user_time", "repeat"}, false,
    read_module_load, build_on_cpu<workloads::ModuleLoad>);

extern const WorkloadKind hash_list_kind = WorkloadKind::of<HashListWorkload>(
    "hash_list", {"alg", "impl", SIZES, "repeat", "cond_resched_between"}, false, read_hash_list,
    build_on_cpu<workloads::HashList>);

extern const WorkloadKind tcrypt_kind = WorkloadKind::of<TcryptWorkload>(
    "tcrypt", {"alg", "impl", "block_size", "duration"}, false, read_tcrypt, build_on_cpu<workloads::Tcrypt>);

} // namespace kdsim::system
