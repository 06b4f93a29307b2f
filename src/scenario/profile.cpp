// Architecture profiles: data/profiles/<family>/<part>.toml -> system::Profile.
//
// Every figure is an inline table { value, unit, source }. A figure that is missing, has the
// wrong unit or no source is an error, never a zero (SPEC 2.7). Integer figures (cycles,
// bytes, Hz) may be written fractionally and are rounded to the nearest integer.
#include "scenario/figure_reader.h"
#include "scenario/toml_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace kdsim::scenario::detail {

namespace {

namespace fs = std::filesystem;

// An integer figure of the profile outside [hash]: where it lives in the file and in Profile.
struct IntFigure {
    std::string_view section;
    std::string_view name;
    Unit unit;
    bool positive; // zero is an error (a clock, a cache line)
    std::uint64_t& (*ref)(system::Profile&);
};

#define KDSIM_FIG(sec, nm, unit, pos, member)                                                                          \
    IntFigure {                                                                                                        \
        sec, nm, unit, pos, [](system::Profile& p) -> std::uint64_t& { return p.member; }                              \
    }

const std::array<IntFigure, 21> INT_FIGURES = {{
    KDSIM_FIG("cpu", "clock", Unit::HZ, true, clock_hz),
    KDSIM_FIG("cpu", "cache_line", Unit::BYTES, true, cache_line),
    KDSIM_FIG("sched", "context_switch", Unit::CYCLES, false, kernel.context_switch),
    KDSIM_FIG("sched", "wakeup", Unit::CYCLES, false, kernel.wakeup),
    KDSIM_FIG("sched", "tick", Unit::CYCLES, false, kernel.tick),
    KDSIM_FIG("sched", "cond_resched", Unit::CYCLES, false, kernel.cond_resched),
    KDSIM_FIG("irq", "entry", Unit::CYCLES, false, kernel.irq_entry),
    KDSIM_FIG("irq", "exit", Unit::CYCLES, false, kernel.irq_exit),
    KDSIM_FIG("irq", "timer_handler", Unit::CYCLES, false, kernel.timer_handler),
    KDSIM_FIG("irq", "softirq_round", Unit::CYCLES, false, kernel.softirq_round),
    KDSIM_FIG("irqflags", "local_irq_disable", Unit::CYCLES, false, kernel.local_irq_disable),
    KDSIM_FIG("irqflags", "local_irq_enable", Unit::CYCLES, false, kernel.local_irq_enable),
    KDSIM_FIG("irqflags", "local_irq_save", Unit::CYCLES, false, kernel.local_irq_save),
    KDSIM_FIG("irqflags", "local_irq_restore", Unit::CYCLES, false, kernel.local_irq_restore),
    KDSIM_FIG("bh", "local_bh_disable", Unit::CYCLES, false, kernel.local_bh_disable),
    KDSIM_FIG("bh", "local_bh_enable", Unit::CYCLES, false, kernel.local_bh_enable),
    KDSIM_FIG("simd", "state_size", Unit::BYTES, false, simd.state_size),
    KDSIM_FIG("simd", "begin", Unit::CYCLES, false, simd.begin),
    KDSIM_FIG("simd", "end", Unit::CYCLES, false, simd.end),
    KDSIM_FIG("simd", "save", Unit::CYCLES, false, simd.save),
    KDSIM_FIG("simd", "restore", Unit::CYCLES, false, simd.restore),
}};
#undef KDSIM_FIG

constexpr std::array<std::string_view, 6> SECTIONS = {"cpu", "sched", "irq", "irqflags", "bh", "simd"};
constexpr std::array<std::string_view, 19> TOP_KEYS = {"profile", "memory", "cpu",  "sched", "irq",     "irqflags", "bh",
                                                       "simd",    "hash", "irqmask", "net", "dma", "tcp",
                                                       "cipher", "tunnel", "virt", "udp", "flush", "netfilter"};
constexpr std::array<crypto::HashAlg, 3> ALGS = {crypto::HashAlg::SHA1, crypto::HashAlg::SHA256,
                                                 crypto::HashAlg::SHA512};

std::string_view simd_unit_of(arch::Arch a) {
    switch (a) {
    case arch::Arch::X86_64: return "x86-fpu";
    case arch::Arch::ARM32: return "arm32-neon";
    case arch::Arch::ARM64: return "arm64-fpsimd";
    case arch::Arch::PPC32_E500: return "ppc-spe";
    }
    return "?";
}

// The hash implementations the kernel has on each architecture.
std::vector<crypto::HashImpl> impls_for(arch::Arch a) {
    using crypto::HashImpl;
    switch (a) {
    case arch::Arch::X86_64:
        return {HashImpl::GENERIC, HashImpl::SSSE3, HashImpl::AVX, HashImpl::AVX2, HashImpl::SHANI};
    case arch::Arch::ARM32: return {HashImpl::GENERIC, HashImpl::ARM, HashImpl::NEON, HashImpl::CE};
    case arch::Arch::ARM64: return {HashImpl::GENERIC, HashImpl::ARM64, HashImpl::NEON, HashImpl::CE};
    case arch::Arch::PPC32_E500: return {HashImpl::GENERIC, HashImpl::PPC, HashImpl::SPE};
    }
    return {};
}


// If `file` lies below a data/profiles directory, the profile name its path implies
// ("x86/intel-icelake-server").
std::optional<std::string> name_from_path(const fs::path& file) {
    std::error_code ec;
    fs::path abs = fs::weakly_canonical(fs::absolute(file, ec), ec);
    if (ec) abs = file.lexically_normal();
    for (fs::path dir = abs.parent_path(); !dir.empty(); dir = dir.parent_path()) {
        if (dir.filename() == "profiles" && dir.parent_path().filename() == "data") {
            fs::path rel = abs.lexically_relative(dir);
            rel.replace_extension();
            return rel.generic_string();
        }
        if (dir == dir.parent_path()) break;
    }
    return std::nullopt;
}

void read_header(Reader& r, const toml::table& root, const fs::path& file, system::Profile& p) {
    const toml::table* h =
        r.table(root, "profile", "profile", true, "a table [profile] with name, arch and description");
    if (!h) return;
    r.check_keys(*h, "profile", "[profile]", {"name", "arch", "description"});
    if (auto name = r.string(*h, "name", "profile.name", true)) {
        auto expected = name_from_path(file);
        if (expected && *name != *expected)
            r.error(*h->get("name"), "profile.name",
                    fmt::format("expected \"{}\" (the file's path under data/profiles, without .toml), found {}",
                                *expected, quote(*name)));
        else
            p.name = *name;
    }
    const std::vector<std::string_view> arches = {"x86_64", "arm32", "arm64", "ppc32-e500"};
    if (auto idx = r.choice(*h, "arch", "profile.arch", true, arches)) p.arch = *arch::arch_from_string(arches[*idx]);
    if (auto d = r.string(*h, "description", "profile.description", true)) p.description = *d;
}

void read_sections(Reader& r, const toml::table& root, system::Profile& p, bool arch_ok) {
    for (std::string_view sec : SECTIONS) {
        std::vector<std::string_view> keys;
        if (sec == "simd") keys.push_back("unit");
        for (auto& f : INT_FIGURES)
            if (f.section == sec) keys.push_back(f.name);
        std::vector<std::string_view> allowed = keys;
        if (sec == "simd") {
            // Optional figures: required only by the mechanisms that use them (SPE traps).
            allowed.push_back("unavailable_trap");
            allowed.push_back("kernel_use_warning");
        }
        std::string what = fmt::format("a table [{}] with {}", sec, [&] {
            std::string s;
            for (auto k : keys) s += (s.empty() ? "" : ", ") + std::string(k);
            return s;
        }());
        const toml::table* t = r.table(root, sec, std::string(sec), true, what);
        if (!t) continue;
        r.check_keys(*t, sec, fmt::format("[{}]", sec), allowed);
        if (sec == "simd") {
            for (auto [name, member] : {std::pair{"unavailable_trap", &arch::SimdCosts::unavailable_trap},
                                        std::pair{"kernel_use_warning", &arch::SimdCosts::kernel_use_warning}}) {
                if (!t->contains(name)) continue;
                std::string key = fmt::format("simd.{}", name);
                if (auto d = read_figure(r, *t, name, key, Unit::CYCLES))
                    if (auto v = to_integer_figure(r, *t->get(name)->as_table()->get("value"), join_key(key, "value"),
                                                   *d, Unit::CYCLES, false))
                        p.simd.*member = *v;
            }
            std::vector<std::string_view> units = {"x86-fpu", "arm32-neon", "arm64-fpsimd", "ppc-spe"};
            if (auto idx = r.choice(*t, "unit", "simd.unit", true, units)) {
                if (arch_ok && units[*idx] != simd_unit_of(p.arch))
                    r.error(*t->get("unit"), "simd.unit",
                            fmt::format("expected \"{}\" (the SIMD unit of arch {}), found \"{}\"",
                                        simd_unit_of(p.arch), arch::to_string(p.arch), units[*idx]));
                else
                    p.simd_unit = std::string(units[*idx]);
            }
        }
        for (auto& f : INT_FIGURES) {
            if (f.section != sec) continue;
            std::string key = fmt::format("{}.{}", sec, f.name);
            auto d = read_figure(r, *t, f.name, key, f.unit);
            if (!d) continue;
            const toml::node& at = *t->get(f.name)->as_table()->get("value");
            if (auto v = to_integer_figure(r, at, join_key(key, "value"), *d, f.unit, f.positive)) f.ref(p) = *v;
        }
    }
}

void read_hash(Reader& r, const toml::table& root, system::Profile& p, bool arch_ok) {
    const toml::table* h =
        r.table(root, "hash", "hash", true,
                "tables [hash.<alg>.<impl>] with a generic implementation of sha1, sha256 and sha512");
    if (!h) return;
    r.check_keys(*h, "hash", "[hash] (hash algorithms)", {"sha1", "sha256", "sha512"});
    for (crypto::HashAlg alg : ALGS) {
        std::string_view an = crypto::to_string(alg);
        std::string akey = fmt::format("hash.{}", an);
        const toml::table* at =
            r.table(*h, an, akey, true,
                    fmt::format("a table [{}.generic] (every algorithm needs its generic implementation)", akey));
        if (!at) continue;
        if (!at->contains("generic"))
            r.missing(*at, akey + ".generic",
                      fmt::format("a table [{}.generic] with cycles_per_byte and cycles_per_call", akey),
                      "every algorithm needs its generic implementation");
        for (auto&& [k, node] : *at) {
            std::string ikey = join_key(akey, k.str());
            auto impl = crypto::hash_impl_from_string(k.str());
            if (!impl) {
                std::vector<std::string> names;
                for (std::size_t i = 0; i < crypto::HASH_IMPLS; ++i)
                    names.emplace_back(crypto::to_string(static_cast<crypto::HashImpl>(i)));
                r.error(
                    k.source().begin, ikey,
                    fmt::format("unknown hash implementation '{}'; expected one of: {}", k.str(), join_list(names)));
                continue;
            }
            if (arch_ok) {
                auto allowed = impls_for(p.arch);
                if (std::find(allowed.begin(), allowed.end(), *impl) == allowed.end()) {
                    std::vector<std::string> names;
                    for (auto i : allowed) names.emplace_back(crypto::to_string(i));
                    r.error(k.source().begin, ikey,
                            fmt::format("implementation '{}' does not exist on arch {}; expected one of: {}", k.str(),
                                        arch::to_string(p.arch), join_list(names)));
                    continue;
                }
            }
            const toml::table* it = node.as_table();
            if (!it) {
                r.error(node, ikey,
                        fmt::format("expected a table [{}] with cycles_per_byte and cycles_per_call, found {}", ikey,
                                    describe(&node)));
                continue;
            }
            r.check_keys(*it, ikey, fmt::format("[{}]", ikey), {"cycles_per_byte", "cycles_per_call", "cold_start"});
            auto cpb = read_figure(r, *it, "cycles_per_byte", ikey + ".cycles_per_byte", Unit::CYCLES_PER_BYTE);
            auto cpc = read_figure(r, *it, "cycles_per_call", ikey + ".cycles_per_call", Unit::CYCLES);
            std::optional<std::uint64_t> call;
            if (cpc)
                call = to_integer_figure(r, *it->get("cycles_per_call")->as_table()->get("value"),
                                         ikey + ".cycles_per_call.value", *cpc, Unit::CYCLES, false);
            std::optional<std::uint64_t> cold;
            if (it->contains("cold_start"))
                if (auto cs = read_figure(r, *it, "cold_start", ikey + ".cold_start", Unit::CYCLES))
                    cold = to_integer_figure(r, *it->get("cold_start")->as_table()->get("value"),
                                             ikey + ".cold_start.value", *cs, Unit::CYCLES, false);
            if (cpb && call) p.hash.set(alg, *impl, crypto::HashCost{*cpb, *call, cold});
        }
    }
}


// Reads a table of cycle figures with exactly `names`; returns them in order when all are valid.
// `other_keys` are further keys the table may hold, read by the caller.
std::optional<std::vector<std::uint64_t>> read_cycle_table(Reader& r, const toml::table& t, const std::string& key,
                                                          const std::vector<std::string_view>& names,
                                                          const std::vector<std::string_view>& other_keys = {}) {
    std::vector<std::string_view> allowed = names;
    allowed.insert(allowed.end(), other_keys.begin(), other_keys.end());
    r.check_keys(t, key, fmt::format("[{}]", key), allowed);
    std::vector<std::uint64_t> out;
    bool ok = true;
    for (std::string_view n : names) {
        std::string k = fmt::format("{}.{}", key, n);
        auto d = read_figure(r, t, n, k, Unit::CYCLES);
        std::optional<std::uint64_t> v;
        if (d) v = to_integer_figure(r, *t.get(n)->as_table()->get("value"), join_key(k, "value"), *d, Unit::CYCLES, false);
        if (!v) ok = false;
        else out.push_back(*v);
    }
    if (!ok) return std::nullopt;
    return out;
}

// [dma]: `coherent` (a bool, not a figure) and the cycle figures of the DMA API.
void read_dma(Reader& r, const toml::table& root, system::Profile& p) {
    const toml::node* n = root.get("dma");
    if (!n) return;
    const toml::table* t = n->as_table();
    if (!t) {
        r.error(*n, "dma", fmt::format("expected a table [dma] with coherent and cycle figures, found {}", describe(n)));
        return;
    }
    static const std::vector<std::string_view> DMA = {
        "map_call",       "unmap_call",       "sync_call",      "inner_inv_line",   "inner_clean_line", "inner_flush_line",
        "outer_inv_line", "outer_clean_line", "outer_flush_line", "outer_sync",     "barrier"};
    std::vector<std::string_view> allowed = DMA;
    allowed.insert(allowed.begin(), "coherent");
    r.check_keys(*t, "dma", "[dma]", allowed);
    auto coherent = r.boolean(*t, "coherent", "dma.coherent", true);
    devices::DmaCosts c;
    engine::Cycles* f[] = {&c.map_call,       &c.unmap_call,       &c.sync_call,        &c.inner_inv_line,
                           &c.inner_clean_line, &c.inner_flush_line, &c.outer_inv_line, &c.outer_clean_line,
                           &c.outer_flush_line, &c.outer_sync,       &c.barrier};
    bool ok = coherent.has_value();
    for (std::size_t i = 0; i < DMA.size(); ++i) {
        std::string k = fmt::format("dma.{}", DMA[i]);
        auto d = read_figure(r, *t, DMA[i], k, Unit::CYCLES);
        std::optional<std::uint64_t> v;
        if (d) v = to_integer_figure(r, *t->get(DMA[i])->as_table()->get("value"), join_key(k, "value"), *d,
                                     Unit::CYCLES, false);
        if (v) *f[i] = *v;
        else ok = false;
    }
    if (!ok) return;
    c.coherent = *coherent;
    p.dma = c;
}

// The cipher implementations the kernel has on each architecture.
std::vector<crypto::CipherImpl> cipher_impls_for(arch::Arch a) {
    using crypto::CipherImpl;
    switch (a) {
    case arch::Arch::X86_64:
        return {CipherImpl::GENERIC, CipherImpl::SSSE3, CipherImpl::AVX2, CipherImpl::AVX512, CipherImpl::AESNI,
                CipherImpl::VAES};
    case arch::Arch::ARM32:
        return {CipherImpl::GENERIC, CipherImpl::ARM, CipherImpl::NEON, CipherImpl::BSAES, CipherImpl::CE};
    case arch::Arch::ARM64:
        return {CipherImpl::GENERIC, CipherImpl::ARM64, CipherImpl::NEON, CipherImpl::BSAES, CipherImpl::CE};
    case arch::Arch::PPC32_E500: return {CipherImpl::GENERIC};
    }
    return {};
}

// [cipher.<prim>.<impl>]: optional; each table has cycles_per_byte and cycles_per_call.
void read_cipher(Reader& r, const toml::table& root, system::Profile& p, bool arch_ok) {
    const toml::node* n = root.get("cipher");
    if (!n) return;
    const toml::table* t = n->as_table();
    if (!t) {
        r.error(*n, "cipher", fmt::format("expected tables [cipher.<primitive>.<impl>], found {}", describe(n)));
        return;
    }
    std::vector<std::string_view> prims;
    for (std::size_t i = 0; i < crypto::CIPHER_PRIMS; ++i) prims.push_back(crypto::to_string(static_cast<crypto::CipherPrim>(i)));
    r.check_keys(*t, "cipher", "[cipher] (primitives)", prims);
    const auto impls = arch_ok ? cipher_impls_for(p.arch) : std::vector<crypto::CipherImpl>{};
    for (auto&& [pk, pnode] : *t) {
        auto prim = crypto::cipher_prim_from_string(pk.str());
        if (!prim) continue; // reported by check_keys
        std::string pkey = join_key("cipher", pk.str());
        const toml::table* pt = pnode.as_table();
        if (!pt) {
            r.error(pnode, pkey, fmt::format("expected tables [{}.<impl>], found {}", pkey, describe(&pnode)));
            continue;
        }
        for (auto&& [ik, inode] : *pt) {
            std::string ikey = join_key(pkey, ik.str());
            auto impl = crypto::cipher_impl_from_string(ik.str());
            if (!impl || (arch_ok && std::find(impls.begin(), impls.end(), *impl) == impls.end())) {
                std::vector<std::string> names;
                for (auto i : impls) names.emplace_back(crypto::to_string(i));
                r.error(inode, ikey,
                        fmt::format("unknown {} implementation '{}' for this architecture; expected one of: {}",
                                    pk.str(), ik.str(), join_list(names)));
                continue;
            }
            const toml::table* it = inode.as_table();
            if (!it) {
                r.error(inode, ikey,
                        fmt::format("expected a table [{}] with cycles_per_byte and cycles_per_call, found {}", ikey,
                                    describe(&inode)));
                continue;
            }
            r.check_keys(*it, ikey, fmt::format("[{}]", ikey), {"cycles_per_byte", "cycles_per_call"});
            auto cpb = read_figure(r, *it, "cycles_per_byte", join_key(ikey, "cycles_per_byte"), Unit::CYCLES_PER_BYTE);
            auto call = read_figure(r, *it, "cycles_per_call", join_key(ikey, "cycles_per_call"), Unit::CYCLES);
            std::optional<std::uint64_t> calli;
            if (call)
                calli = to_integer_figure(r, *it->get("cycles_per_call")->as_table()->get("value"),
                                          join_key(join_key(ikey, "cycles_per_call"), "value"), *call, Unit::CYCLES,
                                          false);
            if (cpb && calli) p.cipher.set(*prim, *impl, crypto::CipherCost{*cpb, *calli});
        }
    }
}

// [tunnel] and [virt]: optional cycle tables.
void read_tunnel_virt(Reader& r, const toml::table& root, system::Profile& p) {
    if (const toml::node* n = root.get("tunnel")) {
        if (const toml::table* t = n->as_table()) {
            static const std::vector<std::string_view> TUN = {
                "wg_xmit",    "wg_encrypt", "wg_tx",         "wg_rx",          "wg_decrypt", "wg_rx_poll",
                "esp_output", "esp_input",  "aead_request",  "cryptd_enqueue", "queue_work", "process_one_work"};
            if (auto v = read_cycle_table(r, *t, "tunnel", TUN)) {
                net::TunnelCosts c;
                std::uint64_t* f[] = {&c.wg_xmit,    &c.wg_encrypt,   &c.wg_tx,          &c.wg_rx,
                                      &c.wg_decrypt, &c.wg_rx_poll,   &c.esp_output,     &c.esp_input,
                                      &c.aead_request, &c.cryptd_enqueue, &c.workqueue.queue_work,
                                      &c.workqueue.process_one_work};
                for (std::size_t i = 0; i < TUN.size(); ++i) *f[i] = (*v)[i];
                p.tunnel = c;
            }
        } else {
            r.error(*n, "tunnel", fmt::format("expected a table [tunnel] of cycle figures, found {}", describe(n)));
        }
    }
    if (const toml::node* n = root.get("udp")) {
        if (const toml::table* t = n->as_table()) {
            if (auto v = read_cycle_table(r, *t, "udp", {"udp_sendmsg", "udp_rcv", "udp_recvmsg"}))
                p.udp = net::UdpCosts{(*v)[0], (*v)[1], (*v)[2]};
        } else {
            r.error(*n, "udp", fmt::format("expected a table [udp] of per-datagram cycle figures, found {}", describe(n)));
        }
    }
    if (const toml::node* n = root.get("netfilter")) {
        if (const toml::table* t = n->as_table()) {
            if (auto v = read_cycle_table(r, *t, "netfilter", {"ip_rcv_core", "drop_rule", "nf_conntrack_in", "kfree_skb"}))
                p.netfilter = net::NetfilterCosts{(*v)[0], (*v)[1], (*v)[2], (*v)[3]};
        } else {
            r.error(*n, "netfilter", fmt::format("expected a table [netfilter] of per-packet cycle figures, found {}", describe(n)));
        }
    }
    if (const toml::node* n = root.get("flush")) {
        if (const toml::table* t = n->as_table()) {
            devices::FlushCosts c;
            auto v = read_cycle_table(r, *t, "flush", {"per_call"}, {"dirty_line", "reread_line"});
            bool ok = v.has_value();
            if (ok) c.per_call = (*v)[0];
            for (auto [name, member] : {std::pair{"dirty_line", &devices::FlushCosts::dirty_line},
                                        std::pair{"reread_line", &devices::FlushCosts::reread_line}}) {
                if (auto d = read_figure(r, *t, name, fmt::format("flush.{}", name), Unit::CYCLES)) c.*member = *d;
                else ok = false;
            }
            if (ok) p.flush = c;
        } else {
            r.error(*n, "flush", fmt::format("expected a table [flush] of cache-flush figures, found {}", describe(n)));
        }
    }
    if (const toml::node* n = root.get("virt")) {
        if (const toml::table* t = n->as_table()) {
            static const std::vector<std::string_view> VIRT = {"exit_mmio", "virq_delivery", "virq_inject",
                                                               "vhost_tx",  "vhost_rx",      "tun_xmit"};
            net::VirtCosts c;
            auto v = read_cycle_table(r, *t, "virt", VIRT, {"copy_per_byte"});
            bool ok = v.has_value();
            if (ok) {
                std::uint64_t* f[] = {&c.exit_mmio, &c.virq_delivery, &c.virq_inject, &c.vhost_tx, &c.vhost_rx, &c.tun_xmit};
                for (std::size_t i = 0; i < VIRT.size(); ++i) *f[i] = (*v)[i];
            }
            if (auto d = read_figure(r, *t, "copy_per_byte", "virt.copy_per_byte", Unit::CYCLES_PER_BYTE)) c.copy_per_byte = *d;
            else ok = false;
            if (ok) p.virt = c;
        } else {
            r.error(*n, "virt", fmt::format("expected a table [virt] of cycle figures, found {}", describe(n)));
        }
    }
}

// [net], [dma] and [irqmask.<impl>]: optional sections, required only by scenarios that use them.
void read_optional_sections(Reader& r, const toml::table& root, system::Profile& p, bool arch_ok) {
    read_dma(r, root, p);
    read_cipher(r, root, p, arch_ok);
    read_tunnel_virt(r, root, p);
    if (const toml::node* n = root.get("net")) {
        if (const toml::table* t = n->as_table()) {
            static const std::vector<std::string_view> NET = {
                "syscall",   "sock_sendmsg", "dev_queue_xmit",    "driver_xmit", "driver_rx_irq", "napi_poll",
                "driver_rx", "netif_receive_skb", "arp_rcv", "packet_rcv",  "sock_recvmsg"};
            if (auto v = read_cycle_table(r, *t, "net", NET)) {
                net::NetCosts c;
                std::uint64_t* f[] = {&c.syscall,   &c.sock_sendmsg,      &c.dev_queue_xmit, &c.driver_xmit,
                                      &c.driver_rx_irq, &c.napi_poll,     &c.driver_rx,      &c.netif_receive_skb,
                                      &c.arp_rcv,   &c.packet_rcv,        &c.sock_recvmsg};
                for (std::size_t i = 0; i < NET.size(); ++i) *f[i] = (*v)[i];
                p.net = c;
            }
        } else {
            r.error(*n, "net", fmt::format("expected a table [net] of cycle figures, found {}", describe(n)));
        }
    }
    if (const toml::node* n = root.get("tcp")) {
        if (const toml::table* t = n->as_table()) {
            static const std::vector<std::string_view> CYC = {"ip_rcv",      "tcp_v4_rcv",  "tcp_ack_send",
                                                              "tcp_ack_rcv", "tcp_sendmsg", "tcp_recvmsg",
                                                              "skb_free",    "rx_buffer_alloc"};
            net::TcpCosts c;
            auto cycles = read_cycle_table(r, *t, "tcp", CYC, {"copy_to_user_cold", "copy_from_user"});
            bool ok = cycles.has_value();
            if (ok) {
                std::uint64_t* f[] = {&c.ip_rcv,      &c.tcp_v4_rcv,  &c.tcp_ack_send, &c.tcp_ack_rcv,
                                      &c.tcp_sendmsg, &c.tcp_recvmsg, &c.skb_free,     &c.rx_buffer_alloc};
                for (std::size_t i = 0; i < CYC.size(); ++i) *f[i] = (*cycles)[i];
            }
            for (auto [name, member] : {std::pair{"copy_to_user_cold", &net::TcpCosts::copy_to_user_cold},
                                        std::pair{"copy_from_user", &net::TcpCosts::copy_from_user}}) {
                if (auto d = read_figure(r, *t, name, fmt::format("tcp.{}", name), Unit::CYCLES_PER_BYTE)) c.*member = *d;
                else ok = false;
            }
            if (ok) p.tcp = c;
        } else {
            r.error(*n, "tcp", fmt::format("expected a table [tcp] of per-segment figures, found {}", describe(n)));
        }
    }
    if (const toml::node* n = root.get("irqmask")) {
        const toml::table* t = n->as_table();
        if (!t) {
            r.error(*n, "irqmask", fmt::format("expected tables [irqmask.<impl>], found {}", describe(n)));
            return;
        }
        std::vector<std::string_view> impls;
        if (arch_ok && p.arch == arch::Arch::ARM64) impls = {"daif", "pmr_off", "pmr", "pmr_nosync"};
        if (arch_ok && p.arch == arch::Arch::PPC32_E500) impls = {}; // 32-bit e500 masks with wrteei (MSR[EE]) only
        r.check_keys(*t, "irqmask", "[irqmask] (masking implementations of this arch)", impls);
        static const std::vector<std::string_view> IRQMASK = {"local_irq_disable", "local_irq_enable", "local_irq_save",
                                                              "local_irq_restore", "irq_entry_extra",
                                                              "exception_return_extra"};
        for (auto&& [k, node] : *t) {
            std::string key = join_key("irqmask", k.str());
            const toml::table* it = node.as_table();
            if (!it) {
                r.error(node, key, fmt::format("expected a table [{}] of cycle figures, found {}", key, describe(&node)));
                continue;
            }
            if (auto v = read_cycle_table(r, *it, key, IRQMASK))
                p.irqmask[std::string(k.str())] =
                    system::IrqMaskCosts{(*v)[0], (*v)[1], (*v)[2], (*v)[3], (*v)[4], (*v)[5], 0, 0};
        }
    }
}

} // namespace

std::vector<std::string> impls_of(const system::Profile& profile, crypto::HashAlg alg) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < crypto::HASH_IMPLS; ++i)
        if (profile.hash.has(alg, static_cast<crypto::HashImpl>(i)))
            names.emplace_back(crypto::to_string(static_cast<crypto::HashImpl>(i)));
    return names;
}

std::optional<system::Profile> read_profile(const fs::path& file, const std::string& display,
                                            std::vector<Diagnostic>& out) {
    Reader r(display, out);
    auto root = parse_file(file, r);
    if (!root) return std::nullopt;

    system::Profile p;
    // Independent of the working directory, so that reports are identical everywhere.
    auto implied = name_from_path(file);
    p.path = implied ? fmt::format("data/profiles/{}.toml", *implied) : display;
    if (!root->contains("profile") && root->contains("scenario")) {
        r.error_file("profile", "expected a table [profile], found a scenario ([scenario]); load it as a scenario");
        return std::nullopt;
    }
    if (!root->contains("profile")) r.missing(*root, "profile", "a table [profile] with name, arch and description");
    r.check_keys(*root, "", "a profile (top level)", std::vector<std::string_view>(TOP_KEYS.begin(), TOP_KEYS.end()));
    if (root->contains("profile")) read_header(r, *root, file, p);
    // Arch-dependent checks only when the arch itself was read.
    const toml::table* h = root->get_as<toml::table>("profile");
    bool arch_ok = h && h->get("arch") && arch::arch_from_string(h->get("arch")->value_or(std::string_view{}));
    read_sections(r, *root, p, arch_ok);
    read_hash(r, *root, p, arch_ok);
    read_optional_sections(r, *root, p, arch_ok);
    read_memory(r, *root, p);
    if (r.errors()) return std::nullopt;
    return p;
}

std::optional<std::string> apply_override(system::Profile& profile, std::string_view figure, const toml::node& value,
                                          const std::string& key, Reader& r) {
    // The figure: a fixed one or hash.<alg>.<impl>.<field>.
    const IntFigure* fixed = nullptr;
    for (auto& f : INT_FIGURES)
        if (fmt::format("{}.{}", f.section, f.name) == figure) fixed = &f;

    std::optional<crypto::HashAlg> alg;
    std::optional<crypto::HashImpl> impl;
    bool per_byte = false;
    if (!fixed) {
        std::vector<std::string_view> parts;
        std::string_view rest = figure;
        while (true) {
            auto dot = rest.find('.');
            parts.push_back(rest.substr(0, dot));
            if (dot == std::string_view::npos) break;
            rest.remove_prefix(dot + 1);
        }
        if (parts.size() == 4 && parts[0] == "hash" &&
            (parts[3] == "cycles_per_byte" || parts[3] == "cycles_per_call")) {
            alg = crypto::hash_alg_from_string(parts[1]);
            impl = crypto::hash_impl_from_string(parts[2]);
            per_byte = parts[3] == "cycles_per_byte";
            if (!alg) {
                r.error(value, key,
                        fmt::format("unknown hash algorithm '{}'; expected one of: sha1, sha256, sha512", parts[1]));
                return std::nullopt;
            }
            if (!impl || !profile.hash.has(*alg, *impl)) {
                r.error(value, key,
                        fmt::format("profile {} has no {} implementation '{}' to override; it has: {}", profile.name,
                                    parts[1], parts[2], join_list(impls_of(profile, *alg))));
                return std::nullopt;
            }
        } else {
            std::vector<std::string> names;
            for (auto& f : INT_FIGURES) names.push_back(fmt::format("{}.{}", f.section, f.name));
            names.emplace_back("hash.<alg>.<impl>.cycles_per_byte");
            names.emplace_back("hash.<alg>.<impl>.cycles_per_call");
            r.error(value, key,
                    fmt::format("unknown profile figure '{}'; expected one of: {}", figure, join_list(names)));
            return std::nullopt;
        }
    }
    Unit unit = fixed ? fixed->unit : per_byte ? Unit::CYCLES_PER_BYTE : Unit::CYCLES;

    if (!value.is_number()) {
        r.error(value, key,
                fmt::format("expected a {} (in the profile's unit, {}), found {}", quantity(unit), unit_name(unit),
                            describe(&value)));
        return std::nullopt;
    }
    double d = value.value<double>().value_or(0);
    if (!std::isfinite(d) || d < 0) {
        r.error(value, key,
                fmt::format("expected a finite, non-negative {}, found {}", quantity(unit), describe(&value)));
        return std::nullopt;
    }
    if (per_byte) {
        crypto::HashCost c = *profile.hash.get(*alg, *impl);
        std::string s = fmt::format("{}: {} cycles/byte (profile: {} cycles/byte)", figure, d, c.cycles_per_byte);
        c.cycles_per_byte = d;
        profile.hash.set(*alg, *impl, c);
        return s;
    }
    auto v = to_integer_figure(r, value, key, d, unit, fixed && fixed->positive);
    if (!v) return std::nullopt;
    std::uint64_t old;
    if (fixed) {
        old = fixed->ref(profile);
        fixed->ref(profile) = *v;
    } else {
        crypto::HashCost c = *profile.hash.get(*alg, *impl);
        old = c.cycles_per_call;
        c.cycles_per_call = *v;
        profile.hash.set(*alg, *impl, c);
    }
    return fmt::format("{}: {} {} (profile: {} {})", figure, *v, unit_name(unit), old, unit_name(unit));
}

} // namespace kdsim::scenario::detail

namespace kdsim::scenario {

system::Profile load_profile(const std::filesystem::path& file) {
    std::vector<Diagnostic> out;
    auto p = detail::read_profile(file, file.generic_string(), out);
    if (!p) {
        detail::sort_diagnostics(out, file.generic_string());
        throw InputError(std::move(out));
    }
    return *p;
}

} // namespace kdsim::scenario
