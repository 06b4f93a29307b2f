// [[machine]] tables of a scenario: name, profile, cpus, [machine.kernel] (preemption, HZ, the
// SIMD policy and chunking, irq masking), [machine.nic], [machine.tunnel], [machine.overrides].
#include "scenario/loader.h"

#include "crypto/aead_path.h"
#include "net/tunnel.h"
#include "system/machine_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>

namespace kdsim::scenario::detail {

namespace {

// eth0..eth999: a NIC's name ([machine.nic] pcie, [machine.nic.ethN]); the number is checked against
// the machine's links once they are read.
bool is_nic_name(std::string_view v) {
    return v.rfind("eth", 0) == 0 && v.size() >= 4 && v.size() <= 6 && v.find_first_not_of("0123456789", 3) == std::string_view::npos;
}

// The largest rx buffer a NIC descriptor can describe (a 16-bit length field in the descriptors of
// the FEC, GENET and e1000-class rings this models).
constexpr std::uint64_t MAX_RX_BUFFER = 65535;

constexpr std::array<arch::SimdPolicy, 9> POLICIES = {
    arch::SimdPolicy::X86_PREEMPT,     arch::SimdPolicy::X86_BH_OFF,    arch::SimdPolicy::X86_UNSAFE_NO_INUSE,
    arch::SimdPolicy::ARM32_TASK_ONLY, arch::SimdPolicy::ARM32_SOFTIRQ, arch::SimdPolicy::ARM32_UNSAFE_SOFTIRQ_NO_BH,
    arch::SimdPolicy::ARM64_BH_OFF,    arch::SimdPolicy::PPC_SPE,       arch::SimdPolicy::PPC_SPE_NO_ENABLE,
};

// Names of the policies of `a`, or of all policies.
std::string policy_names(std::optional<arch::Arch> a) {
    std::vector<std::string> names;
    for (auto p : POLICIES)
        if (!a || arch::arch_of(p) == *a) names.emplace_back(arch::to_string(p));
    return names.empty() ? std::string("none (no SIMD policy is modelled for this architecture)") : join_list(names);
}

// The kernel-mode SIMD rules of Linux 6.1 (the kernel of the reference experiments) per arch.
std::optional<arch::SimdPolicy> default_policy(arch::Arch a) {
    switch (a) {
    case arch::Arch::X86_64: return arch::SimdPolicy::X86_PREEMPT;
    case arch::Arch::ARM32: return arch::SimdPolicy::ARM32_TASK_ONLY;
    case arch::Arch::ARM64: return arch::SimdPolicy::ARM64_BH_OFF;
    case arch::Arch::PPC32_E500: return arch::SimdPolicy::PPC_SPE;
    }
    return std::nullopt;
}

} // namespace

bool read_cpu_numbers(Reader& r, const toml::array& a, const std::string& key, std::string_view what, bool once,
                      std::vector<int>& out) {
    bool ok = true;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const toml::node& n = *a.get(i);
        const toml::value<std::int64_t>* v = n.as_integer();
        if (!v || v->get() < 0 || v->get() >= MAX_CPUS) {
            r.error(n, index_key(key, i),
                    fmt::format("expected a {} number (0..{}), found {}", what, MAX_CPUS - 1, describe(&n)));
            ok = false;
        } else if (once && std::find(out.begin(), out.end(), static_cast<int>(v->get())) != out.end()) {
            r.error(n, index_key(key, i), fmt::format("expected each {} once, found {} again", what, v->get()));
            ok = false;
        } else {
            out.push_back(static_cast<int>(v->get()));
        }
    }
    return ok;
}

void ScenarioLoader::read_kernel(const toml::table& m, const std::string& mkey, system::MachineConfig& mc,
                                 const system::Profile* profile, const toml::node* profile_node) {
    std::string kkey = mkey + ".kernel";
    const toml::table* k = r_.table(m, "kernel", kkey, false, "a table [machine.kernel]");
    std::optional<arch::SimdPolicy> policy;
    const toml::node* policy_node = nullptr;
    if (k) {
        r_.check_keys(*k, kkey, "[machine.kernel]",
                      {"preempt", "hz", "simd_policy", "simd_chunking", "simd_chunk_bytes", "sched_latency",
                       "sched_min_granularity", "sched_wakeup_granularity", "max_softirq_time", "max_softirq_restart",
                       "rcu_cpu_stall_timeout", "rcu_exp_cpu_stall_timeout", "softlockup_thresh", "irq_masking",
                       "crypto_simd_disabled_for_test", "swiotlb", "swiotlb_size", "halt_poll_ns", "sched_mc"});
        if (auto v = r_.boolean(*k, "crypto_simd_disabled_for_test", kkey + ".crypto_simd_disabled_for_test", false))
            mc.crypto_simd_disabled_for_test = *v;
        if (const toml::node* im = k->get("irq_masking")) {
            auto v = im->value<std::string>();
            static const std::vector<std::pair<std::string, std::string>> MASKING = {
                {"native", ""},         {"x86-cli-sti", ""},   {"arm64-daif", "daif"},
                {"arm64-pmr-off", "pmr_off"}, {"arm64-pmr", "pmr"}, {"arm64-pmr-nosync", "pmr_nosync"},
                {"ppc-soft-mask", "soft"}};
            static const std::map<std::string, arch::Arch> ARCH_OF = {
                {"x86-cli-sti", arch::Arch::X86_64}, {"arm64-daif", arch::Arch::ARM64}, {"arm64-pmr-off", arch::Arch::ARM64},
                {"arm64-pmr", arch::Arch::ARM64}, {"arm64-pmr-nosync", arch::Arch::ARM64}};
            bool ok = false;
            for (const auto& [name, table] : MASKING)
                if (v && *v == name) {
                    ok = true;
                    mc.irq_masking = table;
                    if (auto a = ARCH_OF.find(name); a != ARCH_OF.end() && profile && profile->arch != a->second) {
                        r_.error(*im, kkey + ".irq_masking",
                                 fmt::format("{} is an {} masking implementation, but profile {} is {}", name,
                                             arch::to_string(a->second), profile->name, arch::to_string(profile->arch)));
                    } else if (!table.empty() && profile && !profile->irqmask.count(table)) {
                        r_.error(*im, kkey + ".irq_masking",
                                 fmt::format("profile {} has no [irqmask.{}] figures for {}", profile->name, table, name));
                    }
                }
            if (!ok)
                r_.error(*im, kkey + ".irq_masking",
                         fmt::format("expected one of: native, x86-cli-sti, arm64-daif, arm64-pmr-off, arm64-pmr, arm64-pmr-nosync, "
                                     "ppc-soft-mask; found {}", describe(im)));
        }
        auto& kc = mc.kernel;
        if (auto p = r_.choice(*k, "preempt", kkey + ".preempt", false, {"none", "voluntary", "full"}))
            kc.preempt =
                std::array{kernel::PreemptModel::NONE, kernel::PreemptModel::VOLUNTARY, kernel::PreemptModel::FULL}[*p];
        if (const toml::node* hz = k->get("hz")) {
            auto v = hz->value<std::int64_t>();
            if (hz->is_integer() && (*v == 100 || *v == 250 || *v == 300 || *v == 1000))
                kc.hz = static_cast<std::uint32_t>(*v);
            else
                r_.error(*hz, kkey + ".hz",
                         fmt::format("expected one of 100, 250, 300, 1000 (CONFIG_HZ), found {}", describe(hz)));
        }
        if ((policy_node = k->get("simd_policy"))) {
            std::string pkey = kkey + ".simd_policy";
            const auto* s = policy_node->as_string();
            auto p = s ? arch::simd_policy_from_string(s->get()) : std::nullopt;
            if (!p) {
                r_.error(*policy_node, pkey,
                         fmt::format("unknown SIMD policy {}; expected one of: {}",
                                     s ? quote(s->get()) : describe(policy_node), policy_names(std::nullopt)));
            } else if (profile && arch::arch_of(*p) != profile->arch) {
                r_.error(*policy_node, pkey,
                         fmt::format("policy {} is for arch {}, but profile {} is {}; expected one of: {}",
                                     quote(s->get()), arch::to_string(arch::arch_of(*p)), profile->name,
                                     arch::to_string(profile->arch), policy_names(profile->arch)));
            } else {
                policy = p;
            }
        }
        if (auto c = r_.choice(*k, "simd_chunking", kkey + ".simd_chunking", false, {"none", "fixed", "yield"}))
            mc.chunking.policy =
                std::array{crypto::ChunkPolicy::NONE, crypto::ChunkPolicy::FIXED, crypto::ChunkPolicy::YIELD}[*c];
        if (auto b = r_.bytes(*k, "simd_chunk_bytes", kkey + ".simd_chunk_bytes", false, true)) mc.chunking.bytes = *b;
        auto dur = [&](std::string_view name, engine::Tick& dst, bool positive) {
            if (auto t = r_.duration(*k, name, join_key(kkey, name), false, positive)) dst = *t;
        };
        dur("sched_latency", kc.sched_latency, true);
        dur("sched_min_granularity", kc.sched_min_granularity, true);
        dur("sched_wakeup_granularity", kc.sched_wakeup_granularity, false);
        dur("max_softirq_time", kc.max_softirq_time, true);
        dur("rcu_cpu_stall_timeout", kc.rcu_cpu_stall_timeout, true);
        dur("rcu_exp_cpu_stall_timeout", kc.rcu_exp_cpu_stall_timeout, true);
        dur("softlockup_thresh", kc.softlockup_thresh, true);
        if (auto t = r_.duration(*k, "halt_poll_ns", join_key(kkey, "halt_poll_ns"), false, false)) mc.halt_poll_ns = *t;
        if (auto v = r_.boolean(*k, "sched_mc", kkey + ".sched_mc", false)) mc.sched_mc = *v;
        if (auto v = r_.integer(*k, "max_softirq_restart", kkey + ".max_softirq_restart", false, 1, 1000))
            kc.max_softirq_restart = static_cast<std::uint32_t>(*v);
    }
    if (policy) {
        mc.simd_policy = *policy;
    } else if (profile && !policy_node) {
        if (auto d = default_policy(profile->arch))
            mc.simd_policy = *d;
        else if (profile_node)
            r_.error(*profile_node, mkey + ".profile",
                     fmt::format("profile {} is {}, for which no SIMD policy is modelled", profile->name,
                                 arch::to_string(profile->arch)));
    }
}

// `rx_strategy` of a [machine.nic] or [machine.nic.ethN] table at `tkey`, if given.
std::optional<net::RxStrategy> ScenarioLoader::read_rx_strategy(const toml::table& t, const std::string& tkey) {
    const auto st = r_.choice(t, "rx_strategy", tkey + ".rx_strategy", false, {"full-sync", "partial-sync", "short-sync", "page-reuse"});
    if (!st) return std::nullopt;
    return std::array{net::RxStrategy::FULL_SYNC, net::RxStrategy::PARTIAL_SYNC, net::RxStrategy::SHORT_SYNC,
                      net::RxStrategy::PAGE_REUSE}[*st];
}

// `rx_tail_batch` of such a table, if given: 0 to the ring's `ring` descriptors.
std::optional<std::size_t> ScenarioLoader::read_rx_tail_batch(const toml::table& t, const std::string& tkey, std::size_t ring) {
    const auto v = r_.integer(t, "rx_tail_batch", tkey + ".rx_tail_batch", false, 0, 4096);
    if (!v) return std::nullopt;
    if (static_cast<std::size_t>(*v) > ring)
        r_.error(*t.get("rx_tail_batch"), tkey + ".rx_tail_batch",
                 "expected at most rx_ring (" + std::to_string(ring) + ") descriptors per rx tail write");
    return static_cast<std::size_t>(*v);
}

// [machine.nic.ethN]: one NIC's own rx strategy and rx tail batch (a SoC MAC beside a PCIe card's
// ports); the rest of [machine.nic] serves it as every NIC.
void ScenarioLoader::read_nic_overrides(const toml::table& nic, const std::string& nkey, bool strategy,
                                        system::MachineConfig& mc) {
    for (const auto& [k, v] : nic) {
        if (!is_nic_name(k.str()) || !v.is_table()) continue;
        const toml::table& o = *v.as_table();
        const std::string name(k.str());
        const std::string okey = nkey + "." + name;
        r_.check_keys(o, okey, "[machine.nic." + name + "]", {"rx_strategy", "rx_tail_batch"});
        system::MachineConfig::NicOverride ov{name, {}, {}};
        ov.rx_strategy = read_rx_strategy(o, okey);
        if (ov.rx_strategy && !strategy)
            r_.error(*o.get("rx_strategy"), okey + ".rx_strategy",
                     "a NIC's own rx_strategy needs [machine.nic]'s rx_strategy (the DMA API and its rx_buffer)");
        ov.rx_tail_batch = read_rx_tail_batch(o, okey, mc.nic_rx_ring);
        mc.nic_overrides.push_back(std::move(ov));
    }
}

void ScenarioLoader::read_nic(const toml::table& m, const std::string& mkey, system::MachineConfig& mc) {
    const toml::table* nic = r_.table(m, "nic", mkey + ".nic", false, "a table [machine.nic]");
    if (!nic) return;
    std::string nkey = mkey + ".nic";
    std::vector<std::string> keys = {"rx_strategy", "rx_buffer", "rx_ring", "rx_tail_batch", "short_sync_bytes", "multi_buffer", "rx_usecs", "gro", "gso", "sg", "tso",
                   "tx_dma", "driver", "tx_align", "tx_ring", "rx_copy", "tx_map_len", "rx_mode", "xdp", "irq_cpus", "pcie", "rx_fifo", "qdisc", "txqueuelen", "fq",
                   "dma_mask", "coalesce", "poll_loop", "pause"};
    for (const auto& [k, v] : *nic) // [machine.nic.ethN]: read below, after the machine-wide keys
        if (is_nic_name(k.str()) && v.is_table()) keys.emplace_back(k.str());
    r_.check_keys(*nic, nkey, "[machine.nic]", std::vector<std::string_view>(keys.begin(), keys.end()));
    nic_at_.try_emplace(mc.name, nic, nkey); // the first machine of a name wins
    read_qdisc(*nic, nkey, mc);
    if (const toml::array* a = r_.array(*nic, "irq_cpus", nkey + ".irq_cpus", false, "CPU numbers, one per NIC")) {
        for (std::size_t i = 0; i < a->size(); ++i) {
            const auto v = a->get(i)->value<std::int64_t>();
            if (!v || *v < 0 || *v >= mc.cpus)
                r_.error(*a->get(i), index_key(nkey + ".irq_cpus", i),
                         fmt::format("expected a CPU of this machine (0..{}), found {}", mc.cpus - 1, describe(a->get(i))));
            else
                mc.nic_irq_cpus.push_back(static_cast<int>(*v));
        }
    }
    if (const toml::array* a = r_.array(*nic, "pcie", nkey + ".pcie", false, "device names (\"eth1\", ...)")) {
        for (std::size_t i = 0; i < a->size(); ++i) {
            const auto v = a->get(i)->value<std::string>();
            // eth0..eth999: the number is checked against the machine's links once they are read
            if (!v || !is_nic_name(*v))
                r_.error(*a->get(i), index_key(nkey + ".pcie", i),
                         fmt::format("expected a device name eth<N> (N at most 999), found {}", describe(a->get(i))));
            else
                mc.nic_pcie.push_back(*v);
        }
        if (!mc.profile.name.empty() && !mc.profile.pcie)
            r_.error(*a, nkey + ".pcie",
                     fmt::format("devices behind a PCIe link need the [pcie] figures of profile {}, which has none",
                                 mc.profile.name));
    }
    if (auto b = r_.bytes(*nic, "rx_fifo", nkey + ".rx_fifo", false, true)) mc.nic_rx_fifo = *b;
    if (!mc.nic_pcie.empty() && !nic->get("rx_fifo"))
        r_.error(*nic->get("pcie"), nkey + ".pcie", "devices behind a PCIe link need rx_fifo (their rx packet buffer)");
    if (nic->get("rx_fifo") && !nic->get("pcie"))
        r_.error(*nic->get("rx_fifo"), nkey + ".rx_fifo", "rx_fifo belongs to devices behind a PCIe link (pcie = [...])");
    net::RxDmaConfig rx;
    bool strategy = false;
    if (auto st = read_rx_strategy(*nic, nkey)) {
        rx.strategy = *st;
        strategy = true;
    }
    if (auto mb = r_.boolean(*nic, "multi_buffer", nkey + ".multi_buffer", false)) rx.multi_buffer = *mb;
    if (auto b = r_.bytes(*nic, "rx_buffer", nkey + ".rx_buffer", false, true)) {
        if (*b < 1518 && !rx.multi_buffer)
            r_.error(*nic->get("rx_buffer"), nkey + ".rx_buffer",
                     fmt::format("expected a buffer that holds a 1518-byte frame (MTU 1500), or multi_buffer = "
                                 "true, found {} bytes", *b));
        else if (*b < 64)
            r_.error(*nic->get("rx_buffer"), nkey + ".rx_buffer",
                     fmt::format("expected at least 64 bytes per buffer, found {}", *b));
        else if (*b > MAX_RX_BUFFER)
            r_.error(*nic->get("rx_buffer"), nkey + ".rx_buffer",
                     fmt::format("expected at most 65535 bytes per buffer (the largest a NIC descriptor can take: "
                                 "a 16-bit length field), found {} bytes", *b));
        else
            rx.buffer_size = *b;
        if (!strategy)
            r_.error(*nic->get("rx_buffer"), nkey + ".rx_buffer", "rx_buffer needs an rx_strategy (the DMA API use)");
    }
    if (auto t = r_.duration(*nic, "rx_usecs", nkey + ".rx_usecs", false, false)) mc.nic_rx_usecs = *t;
    if (auto g = r_.boolean(*nic, "gro", nkey + ".gro", false)) mc.nic_gro = *g;
    if (auto g = r_.boolean(*nic, "gso", nkey + ".gso", false)) mc.nic_gso = *g;
    if (auto g = r_.boolean(*nic, "sg", nkey + ".sg", false)) mc.nic_sg = *g;
    if (auto t = r_.choice(*nic, "tso", nkey + ".tso", false, {"none", "hardware", "fec-software"}))
        mc.nic_tso = std::array{net::TsoKind::NONE, net::TsoKind::HARDWARE, net::TsoKind::FEC_SOFTWARE}[*t];
    if (!mc.nic_sg && mc.nic_tso != net::TsoKind::NONE && nic->get("tso"))
        r_.error(*nic->get("tso"), nkey + ".tso", "expected tso = \"none\" with sg = false (TSO needs scatter-gather)");
    if (auto v = r_.integer(*nic, "rx_ring", nkey + ".rx_ring", false, 1, 4096)) mc.nic_rx_ring = static_cast<std::size_t>(*v);
    if (auto b = read_rx_tail_batch(*nic, nkey, mc.nic_rx_ring)) mc.nic_rx_tail_batch = *b;
    if (auto b = r_.bytes(*nic, "short_sync_bytes", nkey + ".short_sync_bytes", false, true)) rx.short_sync_bytes = *b;
    if (auto c = r_.boolean(*nic, "rx_copy", nkey + ".rx_copy", false)) {
        rx.copy = *c;
        if (*c && !strategy)
            r_.error(*nic->get("rx_copy"), nkey + ".rx_copy",
                     "rx_copy needs an rx_strategy (the DMA API use of the ring buffer the frame is copied from)");
        else if (*c && rx.multi_buffer)
            r_.error(*nic->get("rx_copy"), nkey + ".rx_copy",
                     "expected rx_copy without multi_buffer (the driver copies a frame out of its one buffer)");
    }
    if (strategy) mc.nic_rx = rx;
    read_nic_overrides(*nic, nkey, strategy, mc);
    // the transmit side through the DMA API: tx_dma = true, or the FEC's driver (which always maps)
    net::TxDmaConfig tx;
    bool tx_on = false;
    if (auto d = r_.boolean(*nic, "tx_dma", nkey + ".tx_dma", false)) tx_on = *d;
    if (auto d = r_.choice(*nic, "driver", nkey + ".driver", false, {"lan743x", "fec"})) {
        tx.driver = *d == 0 ? net::NicDriver::LAN743X : net::NicDriver::FEC;
        if (tx.driver == net::NicDriver::FEC) {
            if (nic->get("tx_dma") && !tx_on)
                r_.error(*nic->get("tx_dma"), nkey + ".tx_dma", "expected tx_dma = true with driver = \"fec\" (the FEC maps every tx buffer)");
            tx_on = true;
        }
    }
    if (auto a = r_.bytes(*nic, "tx_align", nkey + ".tx_align", false, false)) {
        if (*a > 4096 || (*a & (*a - 1)) != 0)
            r_.error(*nic->get("tx_align"), nkey + ".tx_align",
                     fmt::format("expected 0 or a power of two up to 4096 bytes (fep->tx_align + 1), found {}", *a));
        tx.tx_align = *a;
    }
    if (auto v = r_.integer(*nic, "tx_ring", nkey + ".tx_ring", false, 1, 4096)) tx.tx_ring = static_cast<std::size_t>(*v);
    if (auto b = r_.bytes(*nic, "tx_map_len", nkey + ".tx_map_len", false, true)) {
        if (*b < 1514 || *b > 65536)
            r_.error(*nic->get("tx_map_len"), nkey + ".tx_map_len",
                     fmt::format("expected 1514 to 65536 bytes (at least a whole 1514-byte frame, as FEC_ENET_TX_FRSIZE), "
                                 "found {} bytes", *b));
        else if (mc.nic_sg)
            r_.error(*nic->get("tx_map_len"), nkey + ".tx_map_len",
                     "expected tx_map_len with sg = false (a driver that maps a fixed length per frame has no scatter-gather)");
        else
            tx.map_len = *b;
    }
    for (const char* k : {"tx_align", "tx_ring", "tx_map_len"})
        if (nic->get(k) && !tx_on)
            r_.error(*nic->get(k), nkey + "." + k, std::string(k) + " needs tx_dma = true or driver = \"fec\"");
    if (tx_on) mc.nic_tx = tx;
    if (auto r = r_.choice(*nic, "rx_mode", nkey + ".rx_mode", false, {"napi", "netif_rx"})) {
        mc.nic_rx_mode = *r == 0 ? net::RxMode::NAPI : net::RxMode::NETIF_RX;
        const toml::node& at = *nic->get("rx_mode");
        if (*r == 1 && (!tx_on || tx.driver != net::NicDriver::FEC))
            r_.error(at, nkey + ".rx_mode",
                     "rx_mode = \"netif_rx\" needs driver = \"fec\" (the receive in the interrupt handler is the 3.0 "
                     "FEC's fec_enet_interrupt)");
        else if (*r == 1 && mc.nic_gro)
            r_.error(at, nkey + ".rx_mode",
                     "rx_mode = \"netif_rx\" needs gro = false (netif_rx hands each frame to the backlog: no GRO)");
        else if (*r == 1 && (nic->get("rx_usecs") || nic->get("pcie")))
            r_.error(at, nkey + ".rx_mode",
                     "rx_mode = \"netif_rx\" takes no rx_usecs or pcie (the 3.0 FEC: no interrupt coalescing, on the SoC)");
        else if (*r == 1 && !mc.profile.name.empty() &&
                 (!mc.profile.net || !mc.profile.net->netif_rx || !mc.profile.net->process_backlog ||
                  !mc.profile.net->fec_irq_loop))
            r_.error(at, nkey + ".rx_mode",
                     fmt::format("rx_mode = \"netif_rx\" needs the [net] netif_rx, process_backlog and fec_irq_loop figures "
                                 "of profile {}", mc.profile.name));
    }
    if (auto x = r_.choice(*nic, "xdp", nkey + ".xdp", false, {"none", "pass", "drop"})) {
        mc.nic_xdp = static_cast<net::XdpAction>(*x);
        const toml::node& at = *nic->get("xdp");
        const net::NetCosts* nc = mc.profile.net ? &*mc.profile.net : nullptr;
        if (mc.nic_xdp != net::XdpAction::NONE && mc.nic_rx_mode == net::RxMode::NETIF_RX)
            r_.error(at, nkey + ".xdp", "xdp needs rx_mode = \"napi\" (XDP runs in a driver's NAPI poll; the 3.0 FEC has none)");
        else if (mc.nic_xdp != net::XdpAction::NONE && !mc.profile.name.empty() &&
                 (!nc || !nc->xdp_prog_run || (mc.nic_xdp == net::XdpAction::DROP && !nc->xdp_drop)))
            r_.error(at, nkey + ".xdp",
                     fmt::format("xdp = \"{}\" needs the [net] {} of profile {}", mc.nic_xdp == net::XdpAction::DROP ? "drop" : "pass",
                                 mc.nic_xdp == net::XdpAction::DROP ? "xdp_prog_run and xdp_drop figures" : "xdp_prog_run figure",
                                 mc.profile.name));
    }
    // coalesce = "fec-itr": rx_usecs goes through the FEC driver's conversion (net::fec_itr_period)
    if (auto c = r_.choice(*nic, "coalesce", nkey + ".coalesce", false, {"usecs", "fec-itr"})) {
        mc.nic_fec_itr = *c == 1;
        const toml::node& at = *nic->get("coalesce");
        if (mc.nic_fec_itr && !nic->get("rx_usecs"))
            r_.error(at, nkey + ".coalesce", "coalesce = \"fec-itr\" needs rx_usecs (the driver's rx_time_itr)");
        else if (mc.nic_fec_itr && mc.nic_rx_usecs % engine::PS_PER_US != 0)
            r_.error(*nic->get("rx_usecs"), nkey + ".rx_usecs",
                     "coalesce = \"fec-itr\" takes rx_usecs in whole microseconds (ethtool -C rx-usecs, an integer)");
        else if (mc.nic_fec_itr && !mc.profile.name.empty() && (!mc.profile.net || !mc.profile.net->fec_itr_clock))
            r_.error(at, nkey + ".coalesce",
                     fmt::format("coalesce = \"fec-itr\" needs the [net] fec_itr_clock figure of profile {}", mc.profile.name));
    }
    if (auto pz = r_.boolean(*nic, "pause", nkey + ".pause", false)) {
        mc.nic_rx_pause = *pz;
        if (*pz && mc.nic_pcie.empty() && !system::fec_on_soc_port(mc) && !system::soc_mac_rx_fifo(mc, "eth0"))
            r_.error(*nic->get("pause"), nkey + ".pause",
                     "pause = true needs an rx FIFO: devices behind PCIe (pcie = [...]), driver = \"fec\" on a profile "
                     "with [net] fec_bus_bandwidth, or a profile with [net] fec_rx_fifo alone" +
                         (mc.profile.name.empty() ? std::string() : ", which profile " + mc.profile.name + " has not"));
    }
    if (auto l = r_.choice(*nic, "poll_loop", nkey + ".poll_loop", false, {"none", "coalesced", "per-frame"})) {
        mc.nic_poll_loop = std::array{net::PollLoop::NONE, net::PollLoop::COALESCED, net::PollLoop::PER_FRAME}[*l];
        if (mc.nic_poll_loop != net::PollLoop::NONE && mc.nic_rx_mode == net::RxMode::NETIF_RX)
            r_.error(*nic->get("poll_loop"), nkey + ".poll_loop",
                     "poll_loop needs rx_mode = \"napi\" (the loop is the NAPI poll's, fec_enet_rx_napi)");
    }
}

// [machine.dram] (size, base), [machine.kernel] swiotlb and swiotlb_size, [machine.nic] dma_mask,
// and what the kernel would make of them: a swiotlb pool that fits below its low limit, and a mask
// that reaches the pool (else every bounced mapping would fail).
void ScenarioLoader::read_dram(const toml::table& m, const std::string& mkey, system::MachineConfig& mc,
                               const system::Profile* prof) {
    const toml::table* nic = m["nic"].as_table();
    const std::string nkey = mkey + ".nic", kkey = mkey + ".kernel", dkey = mkey + ".dram";
    if (nic)
        if (auto b = r_.integer(*nic, "dma_mask", nkey + ".dma_mask", false, devices::DMA_MASK_MIN_BITS,
                                devices::DMA_MASK_MAX_BITS))
            mc.nic_dma_mask = static_cast<unsigned>(*b);
    const toml::table* k = m["kernel"].as_table();
    if (k) {
        if (auto c = r_.choice(*k, "swiotlb", kkey + ".swiotlb", false, {"force", "noforce"}))
            mc.swiotlb = *c == 0 ? devices::SwiotlbMode::FORCE : devices::SwiotlbMode::NOFORCE;
        if (auto b = r_.bytes(*k, "swiotlb_size", kkey + ".swiotlb_size", false, true)) {
            constexpr std::uint64_t seg = devices::IO_TLB_SEGSIZE * devices::IO_TLB_SIZE;
            if (*b % seg != 0)
                r_.error(*k->get("swiotlb_size"), kkey + ".swiotlb_size",
                         fmt::format("expected a multiple of 256 KiB (IO_TLB_SEGSIZE slots of 2 KiB), found {} bytes", *b));
            else
                mc.swiotlb_size = *b;
        }
    }
    if (const toml::table* d = r_.table(m, "dram", dkey, false, "a table [machine.dram]")) {
        r_.check_keys(*d, dkey, "[machine.dram]", {"size", "base"});
        auto size = r_.bytes(*d, "size", dkey + ".size", true, true, true);
        auto base = r_.bytes(*d, "base", dkey + ".base", false, false, true);
        if (size) mc.dram = devices::DramLayout{base.value_or(0), *size};
    }
    const devices::DramLayout* dram = mc.dram ? &*mc.dram : nullptr;
    const std::uint64_t mask = devices::dma_bit_mask(mc.nic_dma_mask);
    if (!prof || !devices::swiotlb_wanted(mc.swiotlb, dram, mask)) return;
    if (dram) { // the pool where memblock_alloc_low puts it, and the mask reaching it
        const std::uint64_t limit = devices::swiotlb_low_limit(prof->arch == arch::Arch::ARM64, mc.nic_dma_mask);
        const auto start = devices::swiotlb_pool_start(dram->base, dram->size, mc.swiotlb_size, limit);
        const toml::node& at = *m.get("dram");
        if (!start) {
            r_.error(at, dkey,
                     fmt::format("the swiotlb pool ({} bytes) does not fit in DRAM [{:#x}, {:#x}) below {:#x}, where the "
                                 "kernel puts it (memblock_alloc_low)",
                                 mc.swiotlb_size, dram->base, dram->base + dram->size, limit));
            return;
        }
        const std::uint64_t last = *start + mc.swiotlb_size - 1;
        if (last > mask) {
            const toml::node* n = nic ? nic->get("dma_mask") : nullptr;
            r_.error(n ? *n : at, n ? nkey + ".dma_mask" : dkey,
                     fmt::format("a {}-bit DMA mask reaches {:#x}, below the swiotlb pool's last byte {:#x} (the pool lies "
                                 "below {:#x}): the kernel would fail every bounced mapping; expected a mask of at least {} bits",
                                 mc.nic_dma_mask, mask, last, limit, std::bit_width(last)));
            return;
        }
    }
    if (prof->dma && !prof->dma->has_swiotlb_figures()) { // the slot allocator's costs
        const devices::DmaCosts& c = *prof->dma;
        const char* missing = !c.swiotlb_map_call     ? "swiotlb_map_call"
                              : !c.swiotlb_unmap_call ? "swiotlb_unmap_call"
                              : !c.swiotlb_slot_probe ? "swiotlb_slot_probe"
                                                      : "swiotlb_slot_write";
        const toml::node* sw = k ? k->get("swiotlb") : nullptr;
        const toml::node* n = sw ? sw : (m.get("dram") ? m.get("dram") : m.get("profile"));
        r_.error(*n, sw ? kkey + ".swiotlb" : (m.get("dram") ? dkey : mkey + ".profile"),
                 fmt::format("this machine bounces DMA through swiotlb, whose slot allocator needs [dma].swiotlb_map_call, "
                             "swiotlb_unmap_call, swiotlb_slot_probe and swiotlb_slot_write; profile {} has no dma.{}",
                             prof->name, missing));
    }
}

void ScenarioLoader::read_netfilter(const toml::table& m, const std::string& mkey, system::MachineConfig& mc,
                                    const system::Profile* prof) {
    const toml::table* nf = r_.table(m, "netfilter", mkey + ".netfilter", false, "a table [machine.netfilter]");
    if (!nf) return;
    const std::string fkey = mkey + ".netfilter";
    r_.check_keys(*nf, fkey, "[machine.netfilter]", {"prerouting_drop"});
    netfilter_at_.try_emplace(mc.name, nf, fkey);
    if (auto w = r_.choice(*nf, "prerouting_drop", fkey + ".prerouting_drop", true, {"raw", "after-conntrack"})) {
        mc.prerouting_drop = *w == 0 ? net::PreroutingDrop::RAW : net::PreroutingDrop::AFTER_CONNTRACK;
        if (prof && !prof->netfilter)
            r_.error(*nf, fkey,
                     fmt::format("a netfilter rule needs the [netfilter] figures of profile {}, which has none", prof->name));
    }
}

// [machine.sysctl]: "net.ipv4.tcp_congestion_control" = "cubic" | "reno"; "net.ipv4.tcp_rmem" and
// "net.ipv4.tcp_wmem" = [min, default, max] (bytes), in that order.
void ScenarioLoader::read_sysctl(const toml::table& m, const std::string& mkey, system::MachineConfig& mc) {
    const toml::table* sc = r_.table(m, "sysctl", mkey + ".sysctl", false, "a table [machine.sysctl]");
    if (!sc) return;
    const std::string skey = mkey + ".sysctl";
    static constexpr std::string_view CC = "net.ipv4.tcp_congestion_control", RMEM = "net.ipv4.tcp_rmem",
                                      WMEM = "net.ipv4.tcp_wmem";
    r_.check_keys(*sc, skey, "[machine.sysctl]", {CC, RMEM, WMEM});
    const auto quoted = [&](std::string_view k) { return skey + ".\"" + std::string(k) + "\""; };
    if (auto c = r_.choice(*sc, CC, quoted(CC), false, {"cubic", "reno"}))
        mc.tcp.congestion_control = *c == 0 ? net::CongestionAlgorithm::CUBIC : net::CongestionAlgorithm::RENO;
    for (auto [name, out] : {std::pair{RMEM, &mc.tcp.rmem}, std::pair{WMEM, &mc.tcp.wmem}}) {
        const toml::array* a = r_.array(*sc, name, quoted(name), false, "an array [min, default, max] of byte counts");
        if (!a) continue;
        if (a->size() != 3) {
            r_.error(a->source().begin, quoted(name), fmt::format("expected 3 byte counts [min, default, max], found {}", a->size()));
            continue;
        }
        std::array<std::uint64_t, 3> v{};
        bool ok = true;
        for (std::size_t i = 0; i < 3; ++i) {
            auto b = r_.bytes(*a->get(i), quoted(name) + "[" + std::to_string(i) + "]", true);
            if (b) v[i] = *b;
            else ok = false;
        }
        if (!ok) continue;
        if (v[0] > v[1] || v[1] > v[2])
            r_.error(a->source().begin, quoted(name),
                     fmt::format("expected min <= default <= max, found {} {} {}", v[0], v[1], v[2]));
        else
            *out = v;
    }
}

void ScenarioLoader::read_tunnel(const toml::table& m, const std::string& mkey, system::MachineConfig& mc,
                                 const system::Profile* prof, const std::optional<std::string>& name) {
    const toml::table* tun = r_.table(m, "tunnel", mkey + ".tunnel", false, "a table [machine.tunnel]");
    if (!tun) return;
    std::string tkey = mkey + ".tunnel";
    r_.check_keys(*tun, tkey, "[machine.tunnel]", {"kind", "aead", "peer", "simd_wrapper"});
    system::MachineConfig::Tunnel t;
    if (auto k = r_.choice(*tun, "kind", tkey + ".kind", true, {"wireguard", "esp"}))
        t.kind = *k == 0 ? net::TunnelKind::WIREGUARD : net::TunnelKind::ESP;
    if (auto a = r_.choice(*tun, "aead", tkey + ".aead", true, {"chacha20-poly1305", "aes-128-gcm", "aes-256-gcm"}))
        t.aead = *crypto::aead_alg_from_string(std::array<std::string_view, 3>{"chacha20-poly1305", "aes-128-gcm",
                                                                              "aes-256-gcm"}[*a]);
    if (auto pe = r_.string(*tun, "peer", tkey + ".peer", true)) t.peer = *pe;
    t.simd_wrapper = r_.boolean(*tun, "simd_wrapper", tkey + ".simd_wrapper", false);
    if (t.simd_wrapper && t.kind == net::TunnelKind::WIREGUARD)
        r_.error(*tun->get("simd_wrapper"), tkey + ".simd_wrapper",
                 "expected no simd_wrapper for a WireGuard tunnel: it calls lib/crypto's chacha20poly1305 directly, "
                 "never through crypto/simd.c");
    if (name) tunnel_at_.try_emplace(*name, tun, tkey);
    if (t.kind == net::TunnelKind::WIREGUARD && t.aead != crypto::AeadAlg::CHACHA20_POLY1305 && tun->get("aead"))
        r_.error(*tun->get("aead"), tkey + ".aead",
                 fmt::format("expected \"chacha20-poly1305\" (WireGuard has no other cipher), found \"{}\"",
                             crypto::to_string(t.aead)));
    const bool consistent = t.kind == net::TunnelKind::ESP || t.aead == crypto::AeadAlg::CHACHA20_POLY1305;
    if (prof && tun->get("aead") && tun->get("kind") && consistent) {
        if (!prof->tunnel)
            r_.error(*tun, tkey, fmt::format("a tunnel needs the [tunnel] figures of profile {}, which has none", prof->name));
        const auto choice = net::tunnel_aead_driver(t.kind, mc.simd_policy, t.aead, prof->cipher);
        const bool simd_never = mc.crypto_simd_disabled_for_test && !t.simd_wrapper.value_or(choice.async_wrapped);
        if (arch::arch_of(mc.simd_policy) == prof->arch)
            if (auto missing = crypto::aead_missing_costs(prof->cipher, choice.driver, t.aead, simd_never))
                r_.error(*tun->get("aead"), tkey + ".aead",
                         fmt::format("{} through {}{} on {} needs {} in profile {}, which lacks it",
                                     crypto::to_string(t.aead), crypto::to_string(choice.driver),
                                     simd_never ? " with crypto_simd_disabled_for_test" : "",
                                     arch::to_string(prof->arch), *missing, prof->name));
    }
    mc.tunnel = t;
}

void ScenarioLoader::check_profile_needs(const toml::table& m, const std::string& mkey, const system::MachineConfig& mc) {
    if (auto missing = system::missing_cold_start(mc))
        r_.error(*m.get("hash_cold_after"), mkey + ".hash_cold_after",
                 fmt::format("hash_cold_after needs a cold_start figure for every hash implementation a workload may "
                             "run; profile {} has no {}",
                             mc.profile.name, *missing));
    if (auto missing = system::missing_spe_figures(mc)) {
        const toml::node* policy = m.at_path("kernel.simd_policy").node();
        const bool by_policy = mc.simd_policy == arch::SimdPolicy::PPC_SPE_NO_ENABLE && policy;
        r_.error(by_policy ? *policy : *m.get("profile"), mkey + (by_policy ? ".kernel.simd_policy" : ".profile"),
                 fmt::format("the SPE-unavailable path needs simd.unavailable_trap and simd.kernel_use_warning; "
                             "profile {} has no {}",
                             mc.profile.name, *missing));
    }
}

bool ScenarioLoader::read_netns(const toml::table& m, const std::string& mkey, system::MachineConfig& mc) {
    const toml::node* at = m.get("netns");
    auto host_name = r_.string(m, "netns", mkey + ".netns", true);
    if (!host_name) return false;
    const system::MachineConfig* host = nullptr;
    for (const auto& o : loading_->machines)
        if (o.name == *host_name && o.netns_of.empty()) host = &o;
    bool ok = true;
    if (!host) {
        if (!declared_.count(*host_name) || *host_name == mc.name)
            r_.error(*at, mkey + ".netns",
                     fmt::format("expected the name of a [[machine]] above this one (not itself a namespace), found '{}'",
                                 *host_name));
        ok = false;
    }
    for (const char* k : {"profile", "cpus", "kernel", "overrides", "hash_cold_after", "nic", "dram"})
        if (const toml::node* n = m.get(k)) {
            r_.error(*n, mkey + "." + k,
                     fmt::format("a network namespace runs on the CPUs of machine '{}' with its profile and kernel: no {} "
                                 "here",
                                 *host_name, k));
            ok = false;
        }
    if (!ok) return false;
    mc.netns_of = host->name;
    mc.profile = host->profile;
    mc.cpus = host->cpus;
    mc.kernel = host->kernel;
    mc.crypto_simd_disabled_for_test = host->crypto_simd_disabled_for_test;
    mc.simd_policy = host->simd_policy;
    mc.chunking = host->chunking;
    mc.irq_masking = host->irq_masking;
    return true;
}

// kvm_host = "<machine>": a KVM guest of a machine above, whose profile has [kvm] and whose cores
// (the same clock) run its vCPUs.
void ScenarioLoader::read_kvm_host(const toml::table& m, const std::string& mkey, system::MachineConfig& mc,
                                   const system::Profile* prof) {
    const toml::node& at = *m.get("kvm_host");
    const std::string key = mkey + ".kvm_host";
    auto host_name = r_.string(m, "kvm_host", key, true);
    if (!host_name) return;
    const system::MachineConfig* host = nullptr;
    for (const auto& o : loading_->machines)
        if (o.name == *host_name && o.netns_of.empty() && o.kvm_host.empty()) host = &o;
    if (!mc.netns_of.empty())
        r_.error(at, key, "a network namespace runs on its machine's CPUs: it is no KVM guest");
    else if (!host)
        r_.error(at, key,
                 fmt::format("expected the name of a [[machine]] above this one that is neither a namespace nor a guest, "
                             "found '{}'",
                             *host_name));
    else if (!host->profile.kvm)
        r_.error(at, key,
                 fmt::format("a KVM guest needs the [kvm] figures of its host's profile {}, which has none", host->profile.name));
    else if (prof && prof->clock_hz != host->profile.clock_hz)
        r_.error(at, key,
                 fmt::format("a guest's vCPUs run on its host's cores: expected the clock of profile {} ({} Hz), found {} Hz "
                             "in profile {}",
                             host->profile.name, host->profile.clock_hz, prof->clock_hz, prof->name));
    else
        mc.kvm_host = host->name;
}

std::optional<system::MachineConfig> ScenarioLoader::read_machine(const toml::table& m, const std::string& mkey,
                                                                  std::uint64_t seed) {
    r_.check_keys(m, mkey, "[[machine]]",
                  {"name", "netns", "kvm_host", "vcpu_cpus", "vcpu_affinity", "profile", "cpus", "kernel", "overrides", "workload", "hash_cold_after", "nic",
                   "tunnel", "netfilter", "sysctl", "dram"});
    std::size_t before = out_.size();
    workloads_read_.clear();
    system::MachineConfig mc;
    auto name = r_.name(m, "name", mkey + ".name", true);
    if (name) mc.name = *name;

    const system::Profile* prof = nullptr;
    std::optional<int> cpus;
    const toml::node* profile_node = m.get("profile");
    if (m.contains("netns")) {
        if (!read_netns(m, mkey, mc)) return std::nullopt;
        prof = &mc.profile;
        cpus = mc.cpus;
    } else {
        if (auto pn = r_.string(m, "profile", mkey + ".profile", true))
            prof = profile(*profile_node, mkey + ".profile", *pn);
        if (prof) mc.profile = *prof;
        if (auto c = r_.integer(m, "cpus", mkey + ".cpus", true, 1, MAX_CPUS)) cpus = static_cast<int>(*c);
        if (cpus) mc.cpus = *cpus;
        read_kernel(m, mkey, mc, prof, profile_node);
    }
    if (m.contains("kvm_host")) read_kvm_host(m, mkey, mc, prof);
    // vcpu_cpus = [host CPU per vCPU] and vcpu_affinity = [host CPUs, each once]: read here, checked
    // against the host once links have named it (check_vcpu_cpus).
    if (const toml::array* a = r_.array(m, "vcpu_cpus", mkey + ".vcpu_cpus", false, "host CPU numbers, one per vCPU")) {
        vcpu_at_[mc.name] = {a, mkey + ".vcpu_cpus"};
        read_cpu_numbers(r_, *a, mkey + ".vcpu_cpus", "host CPU", false, mc.vcpu_cpus);
    }
    if (const toml::array* a = r_.array(m, "vcpu_affinity", mkey + ".vcpu_affinity", false, "host CPU numbers")) {
        affinity_at_[mc.name] = {a, mkey + ".vcpu_affinity"};
        if (a->empty())
            r_.error(*a, mkey + ".vcpu_affinity", "expected at least one host CPU number, found an empty array");
        read_cpu_numbers(r_, *a, mkey + ".vcpu_affinity", "host CPU", true, mc.vcpu_affinity);
    }
    if (auto t = r_.duration(m, "hash_cold_after", mkey + ".hash_cold_after", false, false)) mc.hash_cold_after = *t;
    read_nic(m, mkey, mc);
    read_dram(m, mkey, mc, prof);
    read_tunnel(m, mkey, mc, prof, name);
    read_netfilter(m, mkey, mc, prof);
    read_sysctl(m, mkey, mc);

    if (const toml::table* ov =
            r_.table(m, "overrides", mkey + ".overrides", false, "a table [machine.overrides] of profile figures")) {
        std::vector<detail::MemoryOverride> memory;
        for (auto&& [k, v] : *ov) {
            std::string okey = join_key(mkey + ".overrides", k.str());
            if (!prof) continue; // nothing to override; the profile's own error is reported
            if (auto s = detail::apply_override(mc.profile, k.str(), v, okey, r_)) {
                mc.overrides.push_back(*s);
                if (k.str().starts_with("memory.")) memory.push_back({std::string(k.str()), &v, okey});
            }
        }
        detail::check_overridden_memory(mc.profile, memory, r_);
    }

    if (const toml::array* ws = r_.array(m, "workload", mkey + ".workload", false, "[[machine.workload]] tables")) {
        std::map<std::string, std::string> names; // workload name -> its key
        for (std::size_t i = 0; i < ws->size(); ++i) {
            std::string wkey = index_key(mkey + ".workload", i);
            const toml::node* n = ws->get(i);
            if (!n->is_table()) {
                r_.error(*n, wkey, fmt::format("expected a [[machine.workload]] table, found {}", describe(n)));
                continue;
            }
            if (auto wl = read_workload(*n->as_table(), wkey, mc, cpus, prof, name.has_value(), seed, names)) {
                mc.workloads.push_back(std::move(*wl));
                workloads_read_.push_back({n->as_table(), wkey});
            }
        }
    }
    if (prof && mc.netns_of.empty()) check_profile_needs(m, mkey, mc); // a namespace's are its machine's
    if (out_.size() != before) return std::nullopt;
    return mc;
}

} // namespace kdsim::scenario::detail
