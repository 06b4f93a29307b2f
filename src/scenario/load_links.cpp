// [[link]] tables and the checks that need every machine: a tunnel's ends name each other and
// agree, and a workload's peer is linked to its machine.
#include "scenario/loader.h"

#include "system/machine_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstdint>

namespace kdsim::scenario::detail {

namespace {
constexpr engine::Tick LINK_LATENCY_MAX = 10 * engine::PS_PER_S;
constexpr std::int64_t MAX_DROP_INDEX = std::int64_t{1} << 40;
}

// Each end of a link gets a network device: its profile gives the [net] figures, and a
// [machine.nic] (the DMA API of an Ethernet NIC) the [dma] and [tcp] figures.
void ScenarioLoader::check_link_ends(const toml::table& l, const std::string& lkey, const system::LinkConfig& lc,
                                     const system::ScenarioConfig& cfg) {
    const toml::node& ends = l.get("ends") ? *l.get("ends") : static_cast<const toml::node&>(l);
    const auto box = [&](const std::string& name) { // the machine whose CPUs `name` runs on
        for (const auto& m : cfg.machines)
            if (m.name == name) return m.netns_of.empty() ? m.name : m.netns_of;
        return name;
    };
    if (!lc.a.empty() && lc.kind == system::LinkConfig::Kind::VETH && box(lc.a) != box(lc.b))
        r_.error(ends, lkey + ".ends",
                 fmt::format("a veth pair joins two network namespaces of one machine; '{}' runs on '{}' and '{}' on '{}'",
                             lc.a, box(lc.a), lc.b, box(lc.b)));
    for (const auto& m : cfg.machines) {
        if (m.name.empty() || (m.name != lc.a && m.name != lc.b)) continue;
        if (m.profile.name.empty()) continue; // the profile did not load: its errors are reported
        if (!m.netns_of.empty() && lc.kind != system::LinkConfig::Kind::VETH)
            r_.error(ends, lkey + ".ends",
                     fmt::format("'{}' is a network namespace: its device is a veth (kind = \"veth\")", m.name));
        if (lc.kind == system::LinkConfig::Kind::VETH && m.profile.net &&
            (!m.profile.net->veth_xmit || !m.profile.net->process_backlog))
            r_.error(ends, lkey + ".ends",
                     fmt::format("a veth link needs net.veth_xmit and net.process_backlog of profile {}, which lacks {}",
                                 m.profile.name, m.profile.net->veth_xmit ? "process_backlog" : "veth_xmit"));
        if (!m.profile.net)
            r_.error(ends, lkey + ".ends",
                     fmt::format("machine '{}' gets a network device on this link, but its profile {} has no [net] "
                                 "figures",
                                 m.name, m.profile.name));
        if (!m.nic_rx) continue;
        if (lc.kind == system::LinkConfig::Kind::VIRTIO)
            r_.error(l.get("kind") ? *l.get("kind") : ends, lkey + ".kind",
                     fmt::format("machine '{}' has a [machine.nic] (a DMA NIC's rx strategy), which a virtio link has "
                                 "not",
                                 m.name));
        else if (!m.profile.dma || !m.profile.tcp)
            r_.error(ends, lkey + ".ends",
                     fmt::format("the [machine.nic] of machine '{}' needs the [dma] and [tcp] figures of profile {}, "
                                 "which has no {}",
                                 m.name, m.profile.name, m.profile.dma ? "[tcp]" : "[dma]"));
    }
}

// drop = [n1, n2, ...]: TCP data segments (by index in their stream) the wire loses on their
// first crossing; drop_every = k: also every k-th one (net/link_drops.h).
void ScenarioLoader::read_link_drops(const toml::table& l, const std::string& lkey, system::LinkConfig& lc) {
    if (auto k = r_.integer(l, "drop_every", lkey + ".drop_every", false, 1, MAX_DROP_INDEX))
        lc.drop_every = static_cast<std::uint64_t>(*k);
    const toml::array* a = r_.array(l, "drop", lkey + ".drop", false, "an array of segment indexes");
    if (!a) return;
    for (std::size_t i = 0; i < a->size(); ++i) {
        const toml::node& n = *a->get(i);
        const std::string ikey = index_key(lkey + ".drop", i);
        const auto v = n.value<std::int64_t>();
        if (!n.is_integer() || !v || *v < 0 || *v > MAX_DROP_INDEX) {
            r_.error(n, ikey, fmt::format("expected a segment index (an integer from 0 to {}), found {}", MAX_DROP_INDEX,
                                          describe(&n)));
            return;
        }
        const auto x = static_cast<std::uint64_t>(*v);
        if (!lc.drop.empty() && x <= lc.drop.back()) {
            r_.error(n, ikey, fmt::format("expected segment indexes in increasing order, found {} after {}", x, lc.drop.back()));
            return;
        }
        lc.drop.push_back(x);
    }
}

// features = { csum = true, host_tso4 = false, ... }: what a virtio link's device offers, each
// true (QEMU's default) or false (its host_tso4=off etc.), by QEMU's property names.
void ScenarioLoader::read_virtio_features(const toml::table& l, const std::string& lkey, system::LinkConfig& lc) {
    const std::string fkey = lkey + ".features";
    const toml::table* f = r_.table(l, "features", fkey, false, "a table of virtio-net features (csum = false, ...)");
    if (!f) return;
    if (lc.kind != system::LinkConfig::Kind::VIRTIO) {
        r_.error(*l.get("features"), fkey, "features belong to a kind = \"virtio\" link");
        return;
    }
    const auto& names = net::VirtioFeatures::NAMES;
    r_.check_keys(*f, fkey, "[[link]] features", std::vector<std::string_view>(names.begin(), names.end()));
    for (std::size_t i = 0; i < names.size(); ++i)
        if (auto on = r_.boolean(*f, names[i], fkey + "." + std::string(names[i]), false)) lc.virtio[i] = *on;
}

void ScenarioLoader::read_links(const toml::table& root, system::ScenarioConfig& cfg) {
    if (const toml::array* ls = r_.array(root, "link", "link", false, "[[link]] tables")) {
        for (std::size_t i = 0; i < ls->size(); ++i) {
            std::string lkey = index_key("link", i);
            const toml::table* l = ls->get(i)->as_table();
            if (!l) {
                r_.error(*ls->get(i), lkey, fmt::format("expected a [[link]] table, found {}", describe(ls->get(i))));
                continue;
            }
            r_.check_keys(*l, lkey, "[[link]]", {"ends", "rate", "latency", "kind", "vhost_cpu", "vhost_affinity", "queue", "drop", "drop_every", "features"});
            system::LinkConfig lc;
            if (auto q = r_.integer(*l, "queue", lkey + ".queue", false, 1, 1'000'000)) lc.queue = static_cast<std::size_t>(*q);
            if (auto k = r_.choice(*l, "kind", lkey + ".kind", false, {"ethernet", "virtio", "veth"}))
                lc.kind = std::array{system::LinkConfig::Kind::ETHERNET, system::LinkConfig::Kind::VIRTIO,
                                     system::LinkConfig::Kind::VETH}[*k];
            if (auto v = r_.integer(*l, "vhost_cpu", lkey + ".vhost_cpu", false, 0, MAX_CPUS - 1))
                lc.vhost_cpu = static_cast<int>(*v);
            const toml::array* vhost_affinity =
                r_.array(*l, "vhost_affinity", lkey + ".vhost_affinity", false, "host CPU numbers");
            if (vhost_affinity) {
                if (vhost_affinity->empty()) // as vcpu_affinity: "not pinned" names the CPUs it may move to
                    r_.error(*vhost_affinity, lkey + ".vhost_affinity", "expected at least one host CPU number, found an empty array");
                read_cpu_numbers(r_, *vhost_affinity, lkey + ".vhost_affinity", "host CPU", true, lc.vhost_affinity);
                if (auto wrong = system::starts_outside_affinity("the vhost worker", "vhost_affinity", lc.vhost_affinity,
                                                                 "vhost_cpu", lc.vhost_cpu)) {
                    const char* at = l->contains("vhost_cpu") ? "vhost_cpu" : "vhost_affinity";
                    r_.error(*l->get(at), lkey + "." + at, std::move(*wrong));
                }
            }
            read_link_drops(*l, lkey, lc);
            if (lc.kind == system::LinkConfig::Kind::VIRTIO)
                for (const char* k : {"rate", "latency", "queue", "drop", "drop_every"})
                    if (const toml::node* n = l->get(k))
                        r_.error(*n, lkey + "." + k,
                                 fmt::format("a virtio link has no {} (the vhost worker's copy is its speed)", k));
            if (lc.kind == system::LinkConfig::Kind::VETH)
                for (const char* k : {"rate", "latency", "queue", "drop", "drop_every"})
                    if (const toml::node* n = l->get(k))
                        r_.error(*n, lkey + "." + k,
                                 fmt::format("a veth link has no {} (the CPUs that move its frames are its speed)", k));
            for (const char* k : {"vhost_cpu", "vhost_affinity"})
                if (l->get(k) && lc.kind != system::LinkConfig::Kind::VIRTIO)
                    r_.error(*l->get(k), lkey + "." + k, fmt::format("{} belongs to a kind = \"virtio\" link", k));
            read_virtio_features(*l, lkey, lc);
            if (const toml::array* ends = r_.array(*l, "ends", lkey + ".ends", true, "two machine names")) {
                std::vector<std::string> names;
                for (std::size_t k = 0; k < ends->size(); ++k)
                    if (auto v = ends->get(k)->value<std::string>()) names.push_back(*v);
                // Every declared name, also of a machine that failed to load (its own errors are
                // reported; its link is not also called wrong).
                bool ok = names.size() == 2 && names[0] != names[1];
                for (const auto& nm : names) ok = ok && declared_.count(nm) > 0;
                if (!ok)
                    r_.error(*ends, lkey + ".ends", "expected the names of two distinct machines of this scenario");
                else {
                    lc.a = names[0];
                    lc.b = names[1];
                }
            }
            if (const toml::node* rate = l->get("rate"))
                if (auto bps = r_.rate(*rate, lkey + ".rate")) lc.rate_bps = *bps;
            if (auto t = r_.duration(*l, "latency", lkey + ".latency", false, false)) {
                // Bounded so that a frame's arrival (the end of its serialisation + latency) stays
                // far inside the 213 days a Tick can count.
                if (*t > LINK_LATENCY_MAX)
                    r_.error(*l->get("latency"), lkey + ".latency",
                             fmt::format("expected a latency of at most 10 s, found {} ps", *t));
                else
                    lc.latency = *t;
            }
            if (lc.kind == system::LinkConfig::Kind::VIRTIO && !lc.b.empty()) {
                for (auto& m : cfg.machines) // the guest end is a KVM guest of the host end
                    if (m.name == lc.a && m.kvm_host.empty()) m.kvm_host = lc.b;
                    else if (m.name == lc.a && m.kvm_host != lc.b)
                        r_.error(*l, lkey + ".ends",
                                 fmt::format("the guest '{}' of a virtio link is a KVM guest of '{}' (kvm_host), not of '{}'",
                                             m.name, m.kvm_host, lc.b));
                for (const auto& m : cfg.machines)
                    if (m.name == lc.b) {
                        if (!m.profile.kvm)
                            r_.error(*l, lkey + ".kind",
                                     fmt::format("a virtio link needs the [kvm] figures of the host's profile {}, which has none",
                                                 m.profile.name));
                        if (lc.vhost_cpu >= m.cpus)
                            r_.error(l->get("vhost_cpu") ? *l->get("vhost_cpu") : *l, lkey + ".vhost_cpu",
                                     fmt::format("expected a CPU of the host '{}' (0..{}), found {}", m.name, m.cpus - 1,
                                                 lc.vhost_cpu));
                        if (vhost_affinity) check_within_host(*vhost_affinity, lkey + ".vhost_affinity", m);
                        if (!m.profile.virt)
                            r_.error(*l, lkey + ".kind",
                                     fmt::format("a virtio link needs the [virt] figures of the host's profile {}, which has none",
                                                 m.profile.name));
                    }
            }
            check_link_ends(*l, lkey, lc, cfg);
            // A machine has one NIC per Ethernet link (eth0, eth1, ...); a virtio or veth end is
            // its only device.
            for (const auto& prev : cfg.links)
                for (const std::string& e : {lc.a, lc.b}) {
                    if (e.empty() || (prev.a != e && prev.b != e)) continue;
                    const std::string other = prev.a == e ? prev.b : prev.a;
                    if (prev.kind != system::LinkConfig::Kind::ETHERNET || lc.kind != system::LinkConfig::Kind::ETHERNET)
                        r_.error(*l, lkey + ".ends",
                                 fmt::format("machine '{}' is already an end of another link; only Ethernet links give a "
                                             "machine several devices",
                                             e));
                    else if (other == lc.a || other == lc.b)
                        r_.error(*l, lkey + ".ends",
                                 fmt::format("machines '{}' and '{}' are already linked (one link per pair: each peer sits "
                                             "behind one device)",
                                             lc.a, lc.b));
                }
            cfg.links.push_back(lc);
        }
    }}

void ScenarioLoader::check_nic_devices(const system::ScenarioConfig& cfg) {
    for (const auto& mc : cfg.machines) {
        if (!nic_at_.count(mc.name)) continue;
        const auto& [nic, nkey] = nic_at_.at(mc.name);
        std::size_t n = 0;
        for (const auto& l : cfg.links)
            if (l.kind == system::LinkConfig::Kind::ETHERNET && (l.a == mc.name || l.b == mc.name)) ++n;
        if (mc.nic_irq_cpus.size() > n)
            r_.error(*nic->get("irq_cpus"), nkey + ".irq_cpus",
                     fmt::format("expected at most one CPU per NIC: machine '{}' has {} (one per Ethernet link), found {}",
                                 mc.name, n, mc.nic_irq_cpus.size()));
        for (const auto& o : mc.nic_overrides)
            if (std::stoul(o.ifname.substr(3)) >= n)
                r_.error(*nic->get(o.ifname), nkey + "." + o.ifname,
                         fmt::format("expected a NIC of machine '{}' (eth0..eth{}, one per Ethernet link), found [machine.nic.{}]",
                                     mc.name, n == 0 ? 0 : n - 1, o.ifname));
        for (std::size_t i = 0; i < mc.nic_pcie.size(); ++i)
            if (std::stoul(mc.nic_pcie[i].substr(3)) >= n)
                r_.error(*nic->get("pcie")->as_array()->get(i), index_key(nkey + ".pcie", i),
                         fmt::format("expected a NIC of machine '{}' (eth0..eth{}, one per Ethernet link), found {}",
                                     mc.name, n == 0 ? 0 : n - 1, mc.nic_pcie[i]));
    }
}

// vcpu_cpus: a guest's (kvm_host, or the guest end of a virtio link), one host CPU per vCPU.
void ScenarioLoader::check_vcpu_cpus(const system::ScenarioConfig& cfg) {
    for (const auto& mc : cfg.machines) {
        const system::MachineConfig* host = nullptr;
        for (const auto& o : cfg.machines)
            if (!mc.kvm_host.empty() && o.name == mc.kvm_host) host = &o;
        if (affinity_at_.count(mc.name)) {
            const auto& [a, key] = affinity_at_.at(mc.name);
            if (!vcpu_at_.count(mc.name)) {
                r_.error(*a, key, "vcpu_affinity lets the vCPU threads of vcpu_cpus move: expected vcpu_cpus beside it (the "
                                  "CPUs they start on)");
            } else if (host) {
                check_within_host(*a, key, *host);
                for (std::size_t i = 0; i < mc.vcpu_cpus.size(); ++i)
                    if (auto wrong = system::starts_outside_affinity("a vCPU thread", "vcpu_affinity", mc.vcpu_affinity,
                                                                     index_key("vcpu_cpus", i), mc.vcpu_cpus[i]))
                        r_.error(*vcpu_at_.at(mc.name).first->get(i), index_key(vcpu_at_.at(mc.name).second, i),
                                 std::move(*wrong));
            }
        }
        if (!vcpu_at_.count(mc.name)) continue;
        const auto& [a, key] = vcpu_at_.at(mc.name);
        if (!host) {
            r_.error(*a, key,
                     fmt::format("vcpu_cpus places a KVM guest's vCPU threads on its host's CPUs: machine '{}' is no "
                                 "guest (no kvm_host, no virtio link to a host)",
                                 mc.name));
            continue;
        }
        if (a->size() != static_cast<std::size_t>(mc.cpus))
            r_.error(*a, key,
                     fmt::format("expected one host CPU per vCPU ({} for cpus = {}), found {}", mc.cpus, mc.cpus, a->size()));
        check_within_host(*a, key, *host);
    }
}

void ScenarioLoader::check_within_host(const toml::array& a, const std::string& key, const system::MachineConfig& host) {
    for (std::size_t i = 0; i < a.size(); ++i) {
        const auto v = a.get(i)->value<std::int64_t>();
        if (v && *v >= host.cpus && *v < MAX_CPUS)
            r_.error(*a.get(i), index_key(key, i),
                     fmt::format("expected a CPU of the host '{}' (0..{}), found {}", host.name, host.cpus - 1, *v));
    }
}

void ScenarioLoader::check_peers(const system::ScenarioConfig& cfg) {
    // Tunnel ends must name each other and agree on the tunnel.
    for (const auto& mc : cfg.machines) {
        if (!mc.tunnel || !tunnel_at_.count(mc.name)) continue;
        const auto& [node, tkey] = tunnel_at_.at(mc.name);
        const toml::node& at = node->get("peer") ? *node->get("peer") : *node;
        const system::MachineConfig* peer = nullptr;
        for (const auto& o : cfg.machines)
            if (o.name == mc.tunnel->peer) peer = &o;
        if (!peer && declared_.count(mc.tunnel->peer)) continue; // that machine's own errors are reported
        if (!peer || peer == &mc) {
            r_.error(at, tkey + ".peer",
                     fmt::format("expected the name of another machine of this scenario, found '{}'", mc.tunnel->peer));
            continue;
        }
        if (!peer->tunnel || peer->tunnel->peer != mc.name)
            r_.error(at, tkey + ".peer",
                     fmt::format("machine '{}' names peer '{}', whose [machine.tunnel] does not name '{}' back", mc.name,
                                 peer->name, mc.name));
        else if (peer->tunnel->kind != mc.tunnel->kind || peer->tunnel->aead != mc.tunnel->aead)
            r_.error(*node, tkey,
                     fmt::format("the tunnel peers disagree: '{}' says {} with {}, its peer '{}' says {} with {}", mc.name,
                                 net::to_string(mc.tunnel->kind), crypto::to_string(mc.tunnel->aead), peer->name,
                                 net::to_string(peer->tunnel->kind), crypto::to_string(peer->tunnel->aead)));
        bool linked = false;
        for (const auto& l : cfg.links)
            linked = linked || (l.a == mc.name && l.b == peer->name) || (l.b == mc.name && l.a == peer->name);
        if (!linked)
            r_.error(at, tkey + ".peer",
                     fmt::format("machine '{}' has no [[link]] to its tunnel peer '{}'", mc.name, peer->name));
    }
    auto linked = [&](const std::string& a, const std::string& b) {
        for (const auto& l : cfg.links)
            if ((l.a == a && l.b == b) || (l.b == a && l.a == b)) return true;
        return false;
    };
    auto machine = [&](const std::string& name) -> const system::MachineConfig* {
        for (const auto& m : cfg.machines)
            if (m.name == name) return &m;
        return nullptr;
    };
    // A workload's peer is a machine linked to its own; then its kind checks across the two. Every
    // flow of the scenario has a 32-bit number: the workload whose flows pass 2^32 - 1 is refused.
    std::uint64_t flows = 0;
    bool too_many_flows = false;
    for (std::size_t i = 0; i < cfg.machines.size(); ++i) {
        const system::MachineConfig& mc = cfg.machines[i];
        for (std::size_t j = 0; j < mc.workloads.size(); ++j) {
            const system::WorkloadConfig& w = mc.workloads[j];
            const system::WorkloadKind& kind = system::workload_kind_of(w);
            const std::string* peer = w.peer();
            if (!peer && !kind.flows && !kind.check_machine) continue;
            const WorkloadAt& at = workloads_at_.at(i).at(j);
            WorkloadReader r(*this, *at.table, at.key, &mc.profile, std::nullopt, 0);
            if (kind.check_machine) kind.check_machine(r, w, mc);
            if (kind.flows && !too_many_flows && (flows += kind.flows(w)) > UINT32_MAX) {
                too_many_flows = true;
                r.error(kind.flows_key, fmt::format("the scenario's workloads would open {} flows by this one; every flow "
                                                    "has a 32-bit number, so at most 4294967295 in all",
                                                    flows));
            }
            if (!peer) continue;
            const system::MachineConfig* p = machine(*peer);
            if (!p || !linked(mc.name, *peer)) {
                if (!p && declared_.count(*peer) && *peer != mc.name) continue; // its own errors are reported
                r.error("peer", fmt::format("expected a machine linked to '{}' by a [[link]], found '{}'", mc.name, *peer));
                continue;
            }
            if (const auto& check = system::workload_kind_of(w).check)
                check(r, w, system::PeerView{mc, *p, system::route_mtu(mc, *p)});
        }
    }
    // A netfilter rule filters what the machine's network device receives.
    for (const auto& mc : cfg.machines)
        if (auto it = netfilter_at_.find(mc.name); mc.prerouting_drop && it != netfilter_at_.end()) {
            bool any = false;
            for (const auto& l : cfg.links) any = any || l.a == mc.name || l.b == mc.name;
            if (!any)
                r_.error(*it->second.first, it->second.second,
                         fmt::format("a netfilter rule needs a network device: machine '{}' is no end of a [[link]]",
                                     mc.name));
        }
}

} // namespace kdsim::scenario::detail
