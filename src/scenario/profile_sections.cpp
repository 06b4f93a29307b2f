// The optional sections of an architecture profile ([net], [tcp], [udp], [flush], [dma], [variation],
// [cipher.<prim>.<impl>], [tunnel], [virt], [kvm], [irqmask.<impl>]): each is read only when present,
// and then must hold every figure of its table (system/figures.h).
#include "scenario/figure_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace kdsim::scenario::detail {

namespace {

// The table `key` of the profile (nullptr when absent); a value that is not a table is reported
// as "expected <form>, found ...".
const toml::table* section_table(Reader& r, const toml::node* n, const std::string& key, std::string_view form) {
    if (!n) return nullptr;
    const toml::table* t = n->as_table();
    if (!t) r.error(*n, key, fmt::format("expected {}, found {}", form, describe(n)));
    return t;
}

// A section that holds one table of figures: reports a value that is not a table ("expected a
// table [<key>] <what>"), checks its keys, reads the figures into `out`; false on any error.
template <class S, std::size_t N>
bool read_section(Reader& r, const toml::node& n, const std::string& key, std::string_view what,
                  const std::array<engine::Figure<S>, N>& table, S& out) {
    const toml::table* t = section_table(r, &n, key, fmt::format("a table [{}] {}", key, what));
    if (!t) return false;
    r.check_keys(*t, key, fmt::format("[{}]", key), figure_names(table));
    return read_figures(r, *t, key, table, out);
}

// An optional section read into p.*slot when it is present and valid.
template <class S, std::size_t N>
void optional_section(Reader& r, const toml::table& root, std::string_view key, std::string_view what,
                      const std::array<engine::Figure<S>, N>& table, std::optional<S>& slot) {
    const toml::node* n = root.get(key);
    if (!n) return;
    S c;
    if (read_section(r, *n, std::string(key), what, table, c)) slot = c;
}

// [dma]: `coherent` (a bool, not a figure) and the cycle figures of the DMA API.
void read_dma(Reader& r, const toml::table& root, system::Profile& p) {
    const toml::table* t = section_table(r, root.get("dma"), "dma", "a table [dma] with coherent and cycle figures");
    if (!t) return;
    std::vector<std::string_view> allowed = figure_names(system::DMA_FIGURES);
    allowed.insert(allowed.begin(), "coherent");
    r.check_keys(*t, "dma", "[dma]", allowed);
    auto coherent = r.boolean(*t, "coherent", "dma.coherent", true);
    devices::DmaCosts c;
    bool ok = read_figures(r, *t, "dma", system::DMA_FIGURES, c) && coherent.has_value();
    if (!ok) return;
    c.coherent = *coherent;
    p.dma = c;
}

// The cipher implementations the kernel has on each architecture.
std::vector<crypto::CipherImpl> cipher_impls_for(arch::Arch a) {
    using crypto::CipherImpl;
    switch (a) {
    case arch::Arch::X86_64:
        return {CipherImpl::GENERIC, CipherImpl::SSSE3, CipherImpl::AVX, CipherImpl::AVX2, CipherImpl::AVX512,
                CipherImpl::AESNI, CipherImpl::VAES};
    case arch::Arch::ARM32:
        return {CipherImpl::GENERIC, CipherImpl::ARM, CipherImpl::NEON, CipherImpl::BSAES, CipherImpl::CE};
    case arch::Arch::ARM64:
        return {CipherImpl::GENERIC, CipherImpl::ARM64, CipherImpl::NEON, CipherImpl::BSAES, CipherImpl::CE};
    case arch::Arch::PPC32_E500: return {CipherImpl::GENERIC};
    }
    return {};
}

// `curve` of a [cipher.<prim>.<impl>] table (optional, written by kdsim calibrate): a figure whose
// value is at least two [bytes, cycles] pairs, sizes positive integers in increasing order, cycles
// finite and non-negative: the measured cost of one call at each size (CipherCostTable::curve).
std::optional<std::vector<crypto::CostPoint>> read_cost_curve(Reader& r, const toml::table& t, const std::string& ikey) {
    const toml::node* n = t.get("curve");
    if (!n) return std::vector<crypto::CostPoint>{};
    const std::string key = join_key(ikey, "curve");
    constexpr std::string_view FORM = "a figure { value = [[bytes, cycles], ...], unit = \"cycles\", source }";
    const toml::table* fig = n->as_table();
    if (!fig) {
        r.error(*n, key, fmt::format("expected {}, found {}", FORM, describe(n)));
        return std::nullopt;
    }
    const std::size_t before = r.errors();
    r.check_keys(*fig, key, fmt::format("figure {}", key), {"value", "unit", "source"});
    const std::string vkey = join_key(key, "value");
    std::vector<crypto::CostPoint> pts;
    const toml::node* v = fig->get("value");
    const toml::array* a = v ? v->as_array() : nullptr;
    if (!v) {
        r.missing(*fig, vkey, "at least two [bytes, cycles] pairs", "a curve has its points");
    } else if (!a || a->size() < 2) {
        r.error(*v, vkey, fmt::format("expected at least two [bytes, cycles] pairs, found {}", describe(v)));
    } else {
        for (std::size_t i = 0; i < a->size(); ++i) {
            const toml::node& e = *a->get(i);
            const std::string ekey = fmt::format("{}[{}]", vkey, i);
            const toml::array* pair = e.as_array();
            const toml::node* b = pair && pair->size() == 2 ? pair->get(0) : nullptr;
            const toml::node* c = pair && pair->size() == 2 ? pair->get(1) : nullptr;
            if (!b || !b->is_integer() || !c || !c->is_number()) {
                r.error(e, ekey, fmt::format("expected a pair [bytes, cycles] (an integer and a number), found {}",
                                             describe(&e)));
                break;
            }
            const std::int64_t bytes = b->value<std::int64_t>().value_or(0);
            const double cycles = c->value<double>().value_or(-1);
            if (bytes <= 0 || (!pts.empty() && static_cast<std::uint64_t>(bytes) <= pts.back().bytes)) {
                r.error(*b, ekey,
                        fmt::format("expected a size above {} bytes (sizes are positive and increasing), found {}",
                                    pts.empty() ? 0 : pts.back().bytes, bytes));
                break;
            }
            if (!std::isfinite(cycles) || cycles < 0) {
                r.error(*c, ekey, fmt::format("expected a finite non-negative number of cycles, found {}", describe(c)));
                break;
            }
            pts.push_back({static_cast<std::uint64_t>(bytes), cycles});
        }
    }
    check_unit_and_source(r, *fig, key, Unit::CYCLES);
    if (r.errors() != before) return std::nullopt;
    return pts;
}

// [cipher.<prim>.<impl>]: optional; each table has cycles_per_byte and cycles_per_call, and may
// have a measured `curve`.
void read_cipher(Reader& r, const toml::table& root, system::Profile& p, bool arch_ok) {
    const toml::table* t = section_table(r, root.get("cipher"), "cipher", "tables [cipher.<primitive>.<impl>]");
    if (!t) return;
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
            auto allowed = figure_names(system::CIPHER_FIGURES);
            allowed.push_back("curve");
            r.check_keys(*it, ikey, fmt::format("[{}]", ikey), allowed);
            crypto::CipherCost c;
            const bool ok = read_figures(r, *it, ikey, system::CIPHER_FIGURES, c);
            auto curve = read_cost_curve(r, *it, ikey);
            if (ok && curve) {
                p.cipher.set(*prim, *impl, c);
                p.cipher.set_curve(*prim, *impl, std::move(*curve));
            }
        }
    }
}

// [tunnel]: TunnelCosts and its workqueue figures, in one table.
void read_tunnel(Reader& r, const toml::table& root, system::Profile& p) {
    const toml::table* t = section_table(r, root.get("tunnel"), "tunnel", "a table [tunnel] of cycle figures");
    if (!t) return;
    std::vector<std::string_view> allowed = figure_names(system::TUNNEL_FIGURES);
    for (auto k : figure_names(system::WORKQUEUE_FIGURES)) allowed.push_back(k);
    r.check_keys(*t, "tunnel", "[tunnel]", allowed);
    net::TunnelCosts c;
    const bool ok = read_figures(r, *t, "tunnel", system::TUNNEL_FIGURES, c);
    if (read_figures(r, *t, "tunnel", system::WORKQUEUE_FIGURES, c.workqueue) && ok) p.tunnel = c;
}

} // namespace

void read_optional_sections(Reader& r, const toml::table& root, system::Profile& p, bool arch_ok) {
    read_dma(r, root, p);
    read_cipher(r, root, p, arch_ok);
    read_tunnel(r, root, p);
    optional_section(r, root, "skcipher", "of per-request cycle figures", system::SKCIPHER_FIGURES, p.skcipher);
    optional_section(r, root, "udp", "of per-datagram cycle figures", system::UDP_FIGURES, p.udp);
    optional_section(r, root, "netfilter", "of per-packet cycle figures", system::NETFILTER_FIGURES, p.netfilter);
    optional_section(r, root, "flush", "of cache-flush figures", system::FLUSH_FIGURES, p.flush);
    optional_section(r, root, "pcie", "of PCI Express link figures", system::PCIE_FIGURES, p.pcie);
    if (p.pcie && p.pcie->encoded_bits < p.pcie->data_bits)
        r.error(*root.get("pcie")->as_table()->get("encoded_bits"), "pcie.encoded_bits",
                fmt::format("expected at least data_bits ({}) symbols, found {}", p.pcie->data_bits, p.pcie->encoded_bits));
    optional_section(r, root, "virt", "of cycle figures", system::VIRT_FIGURES, p.virt);
    optional_section(r, root, "kvm", "of cycle figures", system::KVM_FIGURES, p.kvm);
    optional_section(r, root, "net", "of cycle figures", system::NET_FIGURES, p.net);
    if (p.net && p.net->fec_bus_bandwidth && !p.net->fec_rx_fifo)
        r.error(*root.get("net")->as_table()->get("fec_bus_bandwidth"), "net.fec_bus_bandwidth",
                "expected fec_rx_fifo beside it (the FEC's port on the SoC's bus: the receive FIFO frames wait in for "
                "it; fec_rx_fifo alone is a FEC whose bus keeps up with its line)");
    optional_section(r, root, "tcp", "of per-segment figures", system::TCP_FIGURES, p.tcp);
    std::optional<net::NetVariation> variation;
    optional_section(r, root, "variation", "of variation figures", system::VARIATION_FIGURES, variation);
    if (variation) p.variation = *variation;
    if (const toml::table* t = section_table(r, root.get("irqmask"), "irqmask", "tables [irqmask.<impl>]")) {
        std::vector<std::string_view> impls;
        if (arch_ok && p.arch == arch::Arch::ARM64) impls = {"daif", "pmr_off", "pmr", "pmr_nosync"};
        if (arch_ok && p.arch == arch::Arch::PPC32_E500) impls = {}; // 32-bit e500 masks with wrteei (MSR[EE]) only
        r.check_keys(*t, "irqmask", "[irqmask] (masking implementations of this arch)", impls);
        for (auto&& [k, node] : *t) {
            kernel::IrqMaskCosts c;
            if (read_section(r, node, join_key("irqmask", k.str()), "of cycle figures", system::IRQMASK_FIGURES, c))
                p.irqmask[std::string(k.str())] = c;
        }
    }
}

} // namespace kdsim::scenario::detail
