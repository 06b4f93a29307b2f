// [machine.overrides] of a scenario (and `--set machine.<m>.overrides.<figure>=V` on the command
// line): a profile figure replaced for one machine, named by its key in the profile file and
// found through the figure tables (system/figures.h). Every figure of every table can be
// overridden: [cpu], the kernel sections, [simd], [variation], [net], [tcp], [udp],
// [netfilter], [flush], [dma], [tunnel], [virt], the keyed tables [hash.<alg>.<impl>],
// [cipher.<prim>.<impl>] and [irqmask.<impl>], and the [memory] tables (memory.copy,
// memory.dram.*, memory.prefetch.*, memory.<level>.size|ways|latency), whose figures are then
// checked together again (mem::check_config), as the profile loader checks them.
#include "scenario/figure_reader.h"

#include "mem/config.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <variant>

namespace kdsim::scenario::detail {

namespace {

// Where a figure lives in a loaded profile.
using Slot = std::variant<std::uint64_t*, double*, std::optional<std::uint64_t>*, std::uint32_t*>;

// A figure at a fixed key ("dma.inner_inv_line").
struct Overridable {
    std::string key;
    std::string section; // the profile table that holds it
    Unit unit;
    bool positive;
    // Its slot in `p`, or nullopt when the profile has no such table.
    std::function<std::optional<Slot>(system::Profile&)> slot;
};

template <class S>
Slot slot_of(S& s, const typename engine::Figure<S>::Member& m) {
    return std::visit([&](auto member) -> Slot { return &(s.*member); }, m);
}

// Adds the figures of `table` under `section` (or each figure's own section when empty); `get`
// gives the struct in a profile, or nullptr when the profile lacks it.
template <class S, std::size_t N, class Get>
void add_table(std::vector<Overridable>& out, const std::array<engine::Figure<S>, N>& table, std::string_view section,
               Get get) {
    for (const auto& f : table) {
        const std::string sec(section.empty() ? f.section : section);
        out.push_back({fmt::format("{}.{}", sec, f.name), sec, f.unit, f.positive,
                       [get, member = f.member](system::Profile& p) -> std::optional<Slot> {
                           S* s = get(p);
                           if (!s) return std::nullopt;
                           return slot_of(*s, member);
                       }});
    }
}

template <class T>
T* present(std::optional<T>& o) {
    return o ? &*o : nullptr;
}

const std::vector<Overridable>& overridables() {
    static const std::vector<Overridable> out = [] {
        std::vector<Overridable> v;
        using system::Profile;
        add_table(v, system::CPU_FIGURES, "", [](Profile& p) { return &p; });
        add_table(v, system::KERNEL_FIGURES, "", [](Profile& p) { return &p.kernel; });
        add_table(v, system::VARIATION_FIGURES, "", [](Profile& p) { return &p.variation; });
        add_table(v, system::SIMD_FIGURES, "simd", [](Profile& p) { return &p.simd; });
        add_table(v, system::NET_FIGURES, "net", [](Profile& p) { return present(p.net); });
        add_table(v, system::TCP_FIGURES, "tcp", [](Profile& p) { return present(p.tcp); });
        add_table(v, system::UDP_FIGURES, "udp", [](Profile& p) { return present(p.udp); });
        add_table(v, system::NETFILTER_FIGURES, "netfilter", [](Profile& p) { return present(p.netfilter); });
        add_table(v, system::FLUSH_FIGURES, "flush", [](Profile& p) { return present(p.flush); });
        add_table(v, system::DMA_FIGURES, "dma", [](Profile& p) { return present(p.dma); });
        add_table(v, system::PCIE_FIGURES, "pcie", [](Profile& p) { return present(p.pcie); });
        add_table(v, system::SKCIPHER_FIGURES, "skcipher", [](Profile& p) { return present(p.skcipher); });
        add_table(v, system::TUNNEL_FIGURES, "tunnel", [](Profile& p) { return present(p.tunnel); });
        add_table(v, system::WORKQUEUE_FIGURES, "tunnel",
                  [](Profile& p) { return p.tunnel ? &p.tunnel->workqueue : nullptr; });
        add_table(v, system::VIRT_FIGURES, "virt", [](Profile& p) { return present(p.virt); });
        add_table(v, system::KVM_FIGURES, "kvm", [](Profile& p) { return present(p.kvm); });
        return v;
    }();
    return out;
}

// The keyed tables, as their keys are written.
constexpr std::string_view KEYED[] = {"hash.<alg>.<impl>.<figure>", "cipher.<prim>.<impl>.<figure>",
                                      "irqmask.<impl>.<figure>"};

std::vector<std::string_view> split_dots(std::string_view s) {
    std::vector<std::string_view> parts;
    while (true) {
        const auto dot = s.find('.');
        parts.push_back(s.substr(0, dot));
        if (dot == std::string_view::npos) return parts;
        s.remove_prefix(dot + 1);
    }
}

template <class S, std::size_t N>
std::vector<std::string> names_of(const std::array<engine::Figure<S>, N>& table) {
    std::vector<std::string> v;
    for (const auto& f : table) v.emplace_back(f.name);
    return v;
}

// The slot of figure `name` of `table` in `s`, or nullopt after reporting an unknown name.
template <class S, std::size_t N>
std::optional<std::pair<Slot, const engine::Figure<S>*>> keyed_figure(S& s, const std::array<engine::Figure<S>, N>& table,
                                                                       std::string_view name, std::string_view table_name,
                                                                       const toml::node& value, const std::string& key,
                                                                       Reader& r) {
    for (const auto& f : table)
        if (f.name == name) return std::pair{slot_of(s, f.member), &f};
    r.error(value, key, fmt::format("[{}] has no figure '{}'; expected one of: {}", table_name, name,
                                    join_list(names_of(table))));
    return std::nullopt;
}

struct Found {
    Slot slot;
    Unit unit;
    bool positive;
    bool zero_is_unset = false; // a real figure whose 0 means the profile does not give it
};

// hash.<alg>.<impl>.<f>, cipher.<prim>.<impl>.<f>, irqmask.<impl>.<f>: nullopt when `figure`
// is none of them; a Found, or nothing after an error (reported), otherwise.
std::optional<std::optional<Found>> find_keyed(system::Profile& profile, std::string_view figure,
                                               const toml::node& value, const std::string& key, Reader& r) {
    const std::vector<std::string_view> parts = split_dots(figure);
    const auto found = [](const auto& x) -> std::optional<Found> {
        if (!x) return std::nullopt;
        return Found{x->first, x->second->unit, x->second->positive};
    };
    if (parts.size() == 4 && parts[0] == "hash") {
        const auto alg = crypto::hash_alg_from_string(parts[1]);
        const auto impl = crypto::hash_impl_from_string(parts[2]);
        if (!alg) {
            r.error(value, key, fmt::format("unknown hash algorithm '{}'; expected one of: sha1, sha256, sha512", parts[1]));
            return std::optional<Found>{};
        }
        if (!impl || !profile.hash.has(*alg, *impl)) {
            r.error(value, key, fmt::format("profile {} has no {} implementation '{}' to override; it has: {}",
                                            profile.name, parts[1], parts[2], join_list(impls_of(profile, *alg))));
            return std::optional<Found>{};
        }
        const std::string table = fmt::format("hash.{}.{}", parts[1], parts[2]);
        return found(keyed_figure(*profile.hash.get(*alg, *impl), system::HASH_FIGURES, parts[3], table, value, key, r));
    }
    if (parts.size() == 4 && parts[0] == "cipher") {
        const auto prim = crypto::cipher_prim_from_string(parts[1]);
        const auto impl = crypto::cipher_impl_from_string(parts[2]);
        if (!prim || !impl || !profile.cipher.has(*prim, *impl)) {
            r.error(value, key, fmt::format("profile {} has no [cipher.{}.{}] to override", profile.name, parts[1], parts[2]));
            return std::optional<Found>{};
        }
        const std::string table = fmt::format("cipher.{}.{}", parts[1], parts[2]);
        return found(keyed_figure(*profile.cipher.get(*prim, *impl), system::CIPHER_FIGURES, parts[3], table, value, key, r));
    }
    if (parts.size() == 3 && parts[0] == "irqmask") {
        auto it = profile.irqmask.find(std::string(parts[1]));
        if (it == profile.irqmask.end()) {
            std::vector<std::string> have;
            for (const auto& [name, costs] : profile.irqmask) have.push_back(name);
            r.error(value, key, fmt::format("profile {} has no [irqmask.{}] to override; it has: {}", profile.name,
                                            parts[1], have.empty() ? std::string("none") : join_list(have)));
            return std::optional<Found>{};
        }
        const std::string table = fmt::format("irqmask.{}", parts[1]);
        return found(keyed_figure(it->second, system::IRQMASK_FIGURES, parts[2], table, value, key, r));
    }
    return std::nullopt;
}

// memory.copy, memory.peer_latency, memory.fill_buffers, memory.dram.<f>, memory.prefetch.<f>, memory.l1i.<f>,
// memory.<level>.<f>: nullopt when `figure`
// is not under memory; a Found, or nothing after an error (reported), otherwise.
std::optional<std::optional<Found>> find_memory(system::Profile& profile, std::string_view figure,
                                                const toml::node& value, const std::string& key, Reader& r) {
    const std::vector<std::string_view> parts = split_dots(figure);
    if (parts[0] != "memory") return std::nullopt;
    if (!profile.memory) {
        r.error(value, key, fmt::format("profile {} has no [memory] table, so it has no figure {} to override",
                                        profile.name, figure));
        return std::optional<Found>{};
    }
    mem::MemoryConfig& m = *profile.memory;
    const auto unknown = [&](std::string_view table, std::vector<std::string> names) {
        r.error(value, key, fmt::format("[{}] has no figure '{}'; expected one of: {}", table,
                                        parts.size() > 1 ? parts.back() : std::string_view{}, join_list(names)));
        return std::optional<std::optional<Found>>{std::optional<Found>{}};
    };
    if (parts.size() == 2 && parts[1] == "copy") return std::optional<Found>{Found{&m.copy_warm, Unit::CYCLES_PER_BYTE, true, true}};
    if (parts.size() == 2 && parts[1] == "peer_latency")
        return std::optional<Found>{Found{&m.peer_latency, Unit::CYCLES, true, true}};
    if (parts.size() == 2 && parts[1] == "fill_buffers")
        return std::optional<Found>{Found{&m.fill_buffers, Unit::LINES, true}};
    if (parts.size() == 3 && parts[1] == "dram") {
        if (parts[2] == "latency") return std::optional<Found>{Found{&m.dram_latency_ns, Unit::NS, true}};
        if (parts[2] == "bandwidth") return std::optional<Found>{Found{&m.dram_bandwidth, Unit::BYTES_PER_SECOND, true}};
        if (parts[2] == "core_bandwidth")
            return std::optional<Found>{Found{&m.core_bandwidth, Unit::BYTES_PER_SECOND, true, true}};
        if (parts[2] == "refresh_interval")
            return std::optional<Found>{Found{&m.refresh_interval_ns, Unit::NS, true, true}};
        if (parts[2] == "refresh_time") return std::optional<Found>{Found{&m.refresh_time_ns, Unit::NS, true, true}};
        return unknown("memory.dram", {"latency", "bandwidth", "core_bandwidth", "refresh_interval", "refresh_time"});
    }
    if (parts.size() == 3 && parts[1] == "prefetch") {
        if (parts[2] == "streams") return std::optional<Found>{Found{&m.prefetch_streams, Unit::STREAMS, false}};
        if (parts[2] == "trigger") return std::optional<Found>{Found{&m.prefetch_trigger, Unit::LINES, true}};
        if (parts[2] == "stride_trigger")
            return std::optional<Found>{Found{&m.stride_trigger, Unit::LINES, true, true}};
        if (parts[2] == "stride_degree") return std::optional<Found>{Found{&m.stride_degree, Unit::LINES, true}};
        return unknown("memory.prefetch", {"streams", "trigger", "stride_trigger", "stride_degree"});
    }
    if (parts.size() == 3 && parts[1] == "l1i") {
        if (m.l1i.size == 0) {
            r.error(value, key, fmt::format("profile {} has no [memory.l1i] table, so it has no figure {} to override",
                                            profile.name, figure));
            return std::optional<Found>{};
        }
        if (parts[2] == "size") return std::optional<Found>{Found{&m.l1i.size, Unit::BYTES, true}};
        if (parts[2] == "ways") return std::optional<Found>{Found{&m.l1i.ways, Unit::WAYS, true}};
        if (parts[2] == "prefetch") return std::optional<Found>{Found{&m.l1i.prefetch, Unit::LINES, false}};
        if (parts[2] == "executed") return std::optional<Found>{Found{&m.l1i.executed, Unit::FRACTION, true}};
        if (parts[2] == "align") return std::optional<Found>{Found{&m.l1i.align, Unit::BYTES, true}};
        return unknown("memory.l1i", {"size", "ways", "prefetch", "executed", "align"});
    }
    if (parts.size() == 3)
        for (mem::CacheLevelConfig& l : m.levels) {
            if (l.name != parts[1]) continue;
            const std::string table = fmt::format("memory.{}", l.name);
            if (parts[2] == "size") return std::optional<Found>{Found{&l.size, Unit::BYTES, true}};
            if (parts[2] == "ways") return std::optional<Found>{Found{&l.ways, Unit::WAYS, true}};
            if (parts[2] == "latency") return std::optional<Found>{Found{&l.latency, Unit::CYCLES, true}};
            return unknown(table, {"size", "ways", "latency"});
        }
    std::vector<std::string> have = {"memory.copy", "memory.peer_latency", "memory.fill_buffers", "memory.dram.<figure>",
                                     "memory.prefetch.<figure>"};
    for (const auto& l : m.levels) have.push_back(fmt::format("memory.{}.<figure>", l.name));
    if (m.l1i.size > 0) have.emplace_back("memory.l1i.<figure>");
    r.error(value, key, fmt::format("profile {} has no memory figure '{}'; expected one of: {}", profile.name, figure,
                                    join_list(have)));
    return std::optional<Found>{};
}

std::string show(double d) { return fmt::format("{}", d); }

} // namespace

std::optional<std::string> apply_override(system::Profile& profile, std::string_view figure, const toml::node& value,
                                          const std::string& key, Reader& r) {
    std::optional<Found> f;
    const Overridable* fixed = nullptr;
    for (const auto& o : overridables())
        if (o.key == figure) fixed = &o;
    if (fixed) {
        const std::optional<Slot> s = fixed->slot(profile);
        if (!s) {
            r.error(value, key, fmt::format("profile {} has no [{}] table, so it has no figure {} to override",
                                            profile.name, fixed->section, figure));
            return std::nullopt;
        }
        f = Found{*s, fixed->unit, fixed->positive};
    } else if (auto keyed = find_keyed(profile, figure, value, key, r)) {
        if (!*keyed) return std::nullopt;
        f = *keyed;
    } else if (auto memory = find_memory(profile, figure, value, key, r)) {
        if (!*memory) return std::nullopt;
        f = *memory;
    } else {
        std::vector<std::string> names;
        std::vector<std::string_view> candidates;
        for (const auto& o : overridables()) {
            names.push_back(o.key);
            candidates.push_back(o.key);
        }
        for (std::string_view k : KEYED) names.emplace_back(k);
        names.emplace_back("memory.<table>.<figure>");
        r.error(value, key,
                fmt::format("unknown profile figure '{}'; {}expected one of: {}", figure, did_you_mean(figure, candidates),
                            join_list(names)));
        return std::nullopt;
    }

    if (!value.is_number()) {
        r.error(value, key,
                fmt::format("expected a {} (in the profile's unit, {}), found {}", quantity(f->unit),
                            engine::unit_name(f->unit), describe(&value)));
        return std::nullopt;
    }
    const double d = value.value<double>().value_or(0);
    if (!std::isfinite(d) || d < 0) {
        r.error(value, key, fmt::format("expected a finite, non-negative {}, found {}", quantity(f->unit), describe(&value)));
        return std::nullopt;
    }
    const std::string_view unit = engine::unit_name(f->unit);
    if (double* const* real = std::get_if<double*>(&f->slot)) {
        if (!check_figure_bound(r, value, key, d, f->unit)) return std::nullopt;
        if (f->positive && d == 0) {
            r.error(value, key, fmt::format("expected a positive {}, found 0", quantity(f->unit)));
            return std::nullopt;
        }
        const double old = **real;
        **real = d;
        if (f->zero_is_unset && old == 0) return fmt::format("{}: {} {} (profile: not set)", figure, show(d), unit);
        return fmt::format("{}: {} {} (profile: {} {})", figure, show(d), unit, show(old), unit);
    }
    const std::optional<std::uint64_t> v = to_integer_figure(r, value, key, d, f->unit, f->positive);
    if (!v) return std::nullopt;
    std::string old;
    if (std::uint64_t* const* i = std::get_if<std::uint64_t*>(&f->slot)) {
        old = fmt::format("{} {}", **i, unit);
        **i = *v;
    } else if (std::uint32_t* const* w = std::get_if<std::uint32_t*>(&f->slot)) {
        if (*v > UINT32_MAX) {
            r.error(value, key, fmt::format("expected at most {} {}, found {}", UINT32_MAX, unit, describe(&value)));
            return std::nullopt;
        }
        old = f->zero_is_unset && **w == 0 ? std::string("not set") : fmt::format("{} {}", **w, unit);
        **w = static_cast<std::uint32_t>(*v);
    } else {
        std::optional<std::uint64_t>& o = *std::get<std::optional<std::uint64_t>*>(f->slot);
        old = o ? fmt::format("{} {}", *o, unit) : std::string("not set");
        o = *v;
    }
    return fmt::format("{}: {} {} (profile: {})", figure, *v, unit, old);
}

void check_overridden_memory(system::Profile& profile, const std::vector<MemoryOverride>& overridden, Reader& r) {
    if (overridden.empty() || !profile.memory) return;
    const auto problem = mem::check_config(*profile.memory);
    if (!problem) return;
    // The override of the figure the problem names, else the last memory override.
    const MemoryOverride* at = &overridden.back();
    for (const auto& o : overridden)
        if (o.figure == "memory." + problem->key) at = &o;
    r.error(*at->value, at->key,
            fmt::format("with the overrides, the [memory] tables of profile {} are inconsistent: {}: {}", profile.name,
                        problem->key, problem->message));
}

} // namespace kdsim::scenario::detail
