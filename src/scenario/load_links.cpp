// [[link]] tables and the checks that need every machine: a tunnel's ends name each other and
// agree, and a workload's peer is linked to its machine.
#include "scenario/loader.h"

#include <fmt/format.h>

namespace kdsim::scenario::detail {

namespace {
constexpr engine::Tick LINK_LATENCY_MAX = 10 * engine::PS_PER_S;
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
            r_.check_keys(*l, lkey, "[[link]]", {"ends", "rate", "latency", "kind", "vhost_cpu", "queue"});
            system::LinkConfig lc;
            if (auto q = r_.integer(*l, "queue", lkey + ".queue", false, 1, 1'000'000)) lc.queue = static_cast<std::size_t>(*q);
            if (auto k = r_.choice(*l, "kind", lkey + ".kind", false, {"ethernet", "virtio"}))
                lc.kind = *k == 0 ? system::LinkConfig::Kind::ETHERNET : system::LinkConfig::Kind::VIRTIO;
            if (auto v = r_.integer(*l, "vhost_cpu", lkey + ".vhost_cpu", false, 0, MAX_CPUS - 1))
                lc.vhost_cpu = static_cast<int>(*v);
            if (lc.kind == system::LinkConfig::Kind::VIRTIO)
                for (const char* k : {"rate", "latency", "queue"})
                    if (const toml::node* n = l->get(k))
                        r_.error(*n, lkey + "." + k,
                                 fmt::format("a virtio link has no {} (the vhost worker's copy is its speed)", k));
            if (l->get("vhost_cpu") && lc.kind != system::LinkConfig::Kind::VIRTIO)
                r_.error(*l->get("vhost_cpu"), lkey + ".vhost_cpu", "vhost_cpu belongs to a kind = \"virtio\" link");
            if (const toml::array* ends = r_.array(*l, "ends", lkey + ".ends", true, "two machine names")) {
                std::vector<std::string> names;
                for (std::size_t k = 0; k < ends->size(); ++k)
                    if (auto v = ends->get(k)->value<std::string>()) names.push_back(*v);
                bool ok = names.size() == 2 && names[0] != names[1];
                for (const auto& nm : names) {
                    bool found = false;
                    for (const auto& m : cfg.machines) found = found || m.name == nm;
                    ok = ok && found;
                }
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
                for (const auto& m : cfg.machines)
                    if (m.name == lc.b) {
                        if (lc.vhost_cpu >= m.cpus)
                            r_.error(l->get("vhost_cpu") ? *l->get("vhost_cpu") : *l, lkey + ".vhost_cpu",
                                     fmt::format("expected a CPU of the host '{}' (0..{}), found {}", m.name, m.cpus - 1,
                                                 lc.vhost_cpu));
                        if (!m.profile.virt)
                            r_.error(*l, lkey + ".kind",
                                     fmt::format("a virtio link needs the [virt] figures of the host's profile {}, which has none",
                                                 m.profile.name));
                    }
            }
            for (const auto& prev : cfg.links)
                for (const std::string& e : {lc.a, lc.b})
                    if (!e.empty() && (prev.a == e || prev.b == e))
                        r_.error(*l, lkey + ".ends",
                                 fmt::format("machine '{}' is already an end of another link (one network device per machine)", e));
            cfg.links.push_back(lc);
        }
    }}

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
    for (auto& mc : cfg.machines)
        for (auto& w : mc.workloads)
            // Workloads with a peer machine (arp_pingpong, iperf3) need a link to it.
            if (const std::string* peer = w.peer()) {
                bool linked = false;
                for (const auto& l : cfg.links)
                    linked = linked || (l.a == mc.name && l.b == *peer) || (l.b == mc.name && l.a == *peer);
                if (!linked)
                    r_.error_file("machine", fmt::format("machine '{}': the workload's peer '{}' is not linked to it by a [[link]]",
                                                         mc.name, *peer));
            }}

} // namespace kdsim::scenario::detail
