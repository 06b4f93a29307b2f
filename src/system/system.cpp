#include "system/system.h"

#include "system/machine_checks.h"
#include "workloads/iperf3.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

namespace kdsim::system {

namespace {

results::SimdResult simd_result(const arch::SimdUnit& unit, const engine::Clock& clock) {
    const arch::SimdStats& s = unit.stats();
    results::SimdResult r;
    std::size_t last = 0;
    for (std::size_t i = 0; i < s.bytes_hist.size(); ++i)
        if (s.bytes_hist[i]) last = i + 1;
    r.bytes_per_bracket_log2_hist.assign(s.bytes_hist.begin(), s.bytes_hist.begin() + static_cast<std::ptrdiff_t>(last));
    r.longest_bracket_us = engine::to_us(s.longest_bracket);
    r.longest_bracket_cycles = clock.to_cycles(s.longest_bracket);
    r.longest_bracket_bytes = s.longest_bracket_bytes;
    r.longest_bracket_start_us = engine::to_us(s.longest_bracket_start);
    r.longest_bracket_holder = s.longest_bracket_holder;
    for (const arch::SimdOwnerStats& o : unit.owners()) r.longest_bracket_holder_by_driver.emplace_back(o.name, o.longest_bracket_holder);
    return r;
}

} // namespace

// A workload's view of its machine while it is built (system/workload_kind.h).
class System::Builder final : public BuildContext {
public:
    Builder(System& sys, Machine& m, workloads::Env env, unsigned& next_vector)
        : BuildContext(env), sys_(sys), m_(m), next_vector_(next_vector) {}
    const MachineConfig& machine() const override { return *m_.cfg; }
    net::Stack* stack() override { return m_.stack.get(); }
    net::Softnet& softnet(int cpu) override {
        Machine& box = hw(m_);
        if (box.softnet.empty())
            for (auto& c : box.cpus) box.softnet.push_back(std::make_unique<net::Softnet>(*c));
        return *box.softnet[static_cast<std::size_t>(cpu)];
    }
    unsigned next_vector() override { return next_vector_++; }
    std::vector<kernel::Cpu*> cpus() override {
        std::vector<kernel::Cpu*> out;
        for (auto& c : hw(m_).cpus) out.push_back(c.get());
        return out;
    }
    std::optional<Route> route(const std::string& name) override {
        Machine* peer = sys_.machine_named(name);
        if (!peer || !peer->stack || !m_.stack) return std::nullopt;
        Route r;
        r.peer = peer->cfg;
        for (auto& c : hw(*peer).cpus) r.peer_cpus.push_back(c.get());
        r.mtu = route_mtu(*m_.cfg, *peer->cfg);
        return r;
    }
    workloads::Iperf3End end(const std::string& name) override {
        Machine& x = *sys_.machine_named(name);
        workloads::Iperf3End e;
        e.stack = x.stack.get();
        e.tcp = x.cfg->profile.tcp ? &*x.cfg->profile.tcp : nullptr;
        e.udp = x.cfg->profile.udp ? &*x.cfg->profile.udp : nullptr;
        e.net = x.cfg->profile.net ? &*x.cfg->profile.net : nullptr;
        e.sysctl = &x.cfg->tcp;
        return e;
    }
    std::uint32_t take_flows(std::uint64_t n) override {
        require(sys_.next_flow_ + n <= UINT32_MAX, "more than 2^32 flows in the scenario");
        const auto first = static_cast<std::uint32_t>(sys_.next_flow_);
        sys_.next_flow_ += n;
        return first;
    }
    engine::Tick stop() const override { return sys_.cfg_.duration ? *sys_.cfg_.duration : sys_.cfg_.max_duration; }
    kvm::Vm* kvm() override { return m_.vm.get(); }

private:
    System& sys_;
    Machine& m_;
    unsigned& next_vector_;
};

System::System(const ScenarioConfig& cfg) : cfg_(cfg), sim_(cfg.seed), completion_(sim_) {
    // KDSIM_MERGE_EXECS=0 turns the merged execs off (docs/performance.md): the same results,
    // one queued event per exec, for checking that claim and measuring what merging saves.
    if (const char* v = std::getenv("KDSIM_MERGE_EXECS"); v && std::string_view(v) == "0")
        sim_.set_inline_events(false);
    machines_.reserve(cfg.machines.size());
    for (const MachineConfig& mc : cfg.machines) {
        Machine& m = machines_.emplace_back();
        m.cfg = &mc;
        if (!mc.netns_of.empty()) { // a namespace runs on its machine's CPUs (the loader puts that one first)
            m.host = machine_named(mc.netns_of);
            require(m.host && !m.host->host && mc.cpus == m.host->cfg->cpus,
                    "machine " + mc.name + ": a network namespace of no machine above it");
            continue;
        }
        // all checked by the loader, with file:line:col
        require(arch::arch_of(mc.simd_policy) == mc.profile.arch, "machine " + mc.name + ": SIMD policy of another arch");
        require(mc.irq_masking.empty() || mc.profile.irqmask.count(mc.irq_masking),
                "machine " + mc.name + ": no [irqmask." + mc.irq_masking + "] figures");
        require(!missing_spe_figures(mc), "machine " + mc.name + ": no " + missing_spe_figures(mc).value_or(""));
        require(!missing_cold_start(mc), "machine " + mc.name + ": no " + missing_cold_start(mc).value_or(""));
        engine::Clock clock(mc.profile.clock_hz);
        m.costs = mc.profile.kernel;
        if (!mc.irq_masking.empty()) {
            const kernel::IrqMaskCosts& q = mc.profile.irqmask.at(mc.irq_masking);
            m.costs.local_irq_disable = q.local_irq_disable;
            m.costs.local_irq_enable = q.local_irq_enable;
            m.costs.local_irq_save = q.local_irq_save;
            m.costs.local_irq_restore = q.local_irq_restore;
            m.costs.irq_entry_extra = q.irq_entry_extra;
            m.costs.exception_return_extra = q.exception_return_extra;
        }
        kernel::KernelConfig kc = mc.kernel;
        kc.pseudo_nmi = mc.irq_masking == "pmr" || mc.irq_masking == "pmr_nosync";        // priority masking lets NMI-priority vectors through
        kc.soft_irq_masking = mc.irq_masking == "soft"; // PowerPC lazy masking
        kc.idle_polling = idle_polls(mc.profile.arch);
        const bool sched_mc = mc.sched_mc.value_or(mc.profile.arch != arch::Arch::ARM32);
        const int llc_id = static_cast<int>(machines_.size()) << 8;
        for (int i = 0; i < mc.cpus; ++i) {
            m.cpus.push_back(std::make_unique<kernel::Cpu>(sim_, i, clock, m.costs, kc));
            m.cpus.back()->set_findings(&m.findings);
            // One last-level cache per machine (cpus_share_cache): every profile's part has one
            // for its cores up to the CPU counts the scenarios give (docs/architecture.md). Without
            // CONFIG_SCHED_MC the scheduler knows of none: each CPU an id of its own.
            m.cpus.back()->set_sd_llc_id(sched_mc ? llc_id : llc_id | (i + 1), sched_mc);
            m.simd.push_back(arch::make_simd_unit(*m.cpus.back(), mc.simd_policy, mc.profile.simd));
            if (m.simd.back()) m.simd.back()->set_crypto_simd_disabled_for_test(mc.crypto_simd_disabled_for_test);
            m.caches.push_back(mc.hash_cold_after ? std::make_unique<crypto::HashCache>(mc.hash_cold_after) : nullptr);
            require(m.simd.back() != nullptr, "machine " + mc.name + ": no SIMD unit model");
        }
        if (m.cpus.size() > 1) { // one sched_domain over the machine: the load balancer's span
            m.rd = std::make_unique<kernel::RootDomain>();
            for (auto& c : m.cpus) m.rd->span.push_back(c.get());
            for (auto& c : m.cpus)
                c->set_root_domain(m.rd.get(), sim_.rng("sched_rng:" + mc.name + "/cpu" + std::to_string(c->id())));
        }
    }
    for (Machine& m : machines_) { // a guest's vCPUs run its host's KVM
        if (m.cfg->kvm_host.empty()) continue;
        Machine* host = machine_named(m.cfg->kvm_host);
        require(host && !host->host && host != &m && host->cfg->profile.kvm && !m.host &&
                    host->cfg->profile.clock_hz == m.cfg->profile.clock_hz,
                "machine " + m.cfg->name + ": a KVM guest of no host with [kvm] figures and its clock");
        std::vector<kernel::Cpu*> vcpus;
        for (auto& c : m.cpus) vcpus.push_back(c.get());
        require(m.cfg->vcpu_cpus.empty() || m.cfg->vcpu_cpus.size() == vcpus.size(),
                "machine " + m.cfg->name + ": vcpu_cpus of another length than cpus");
        const std::vector<kernel::Cpu*> threads_on = host_cpus(*host, m.cfg->vcpu_cpus, "machine " + m.cfg->name + ": vcpu_cpus");
        const std::vector<kernel::Cpu*> affinity =
            host_cpus(*host, m.cfg->vcpu_affinity, "machine " + m.cfg->name + ": vcpu_affinity");
        const arch::SimdCosts& hs = host->cfg->profile.simd;
        m.vm = std::make_unique<kvm::Vm>(*host->cfg->profile.kvm, host->costs, std::move(vcpus), threads_on,
                                         kvm::HostFpsimd{hs.save, hs.restore},
                                         host->cfg->halt_poll_ns.value_or(kvm::KVM_HALT_POLL_NS_DEFAULT), affinity);
    }
    build_network();
    // Kinds built with their machine, then, once every machine exists, those that wait for it,
    // kind by kind in registration order.
    struct Deferred {
        Machine* m;
        const WorkloadConfig* w;
        workloads::Env env;
    };
    std::vector<Deferred> deferred;
    for (Machine& m : machines_) {
        const MachineConfig& mc = *m.cfg;
        unsigned next_vector = m.next_vector;
        for (const WorkloadConfig& w : mc.workloads) {
            const int c = w.cpu();
            require(c >= 0 && c < mc.cpus, "machine " + mc.name + ": a workload's cpu out of range");
            Machine& box = hw(m);
            workloads::Env env{sim_,   *box.cpus[static_cast<std::size_t>(c)], *box.simd[static_cast<std::size_t>(c)],
                               mc.profile.hash, mc.chunking, cfg.mode == Mode::FUNCTIONAL, mc.name, completion_,
                               box.caches[static_cast<std::size_t>(c)].get()};
            const WorkloadKind& kind = workload_kind_of(w);
            if (kind.after_machines) {
                deferred.push_back({&m, &w, env});
                continue;
            }
            Builder b(*this, m, env, next_vector);
            m.workloads.push_back(kind.build(w, b));
        }
    }
    for (const WorkloadKind* kind : workload_kinds())
        for (const Deferred& d : deferred)
            if (&workload_kind_of(*d.w) == kind) {
                unsigned next_vector = d.m->next_vector;
                Builder b(*this, *d.m, d.env, next_vector);
                d.m->workloads.push_back(kind->build(*d.w, b));
            }
    register_stats();
}

namespace {

// The memory hierarchy's counters under <machine>/memory (mem links no stats layer).
void register_memory_stats(const mem::MemorySystem& ms, const stats::Scope& s) {
    const mem::MemoryStats& m = ms.stats();
    if (ms.refresh_interval())
        s.counter("refresh_waits", m.refresh_waits, "count", "DRAM transfers that waited for a refresh to end");
    s.counter("peer_hits", m.peer_hits, "count", "lines served from another CPU's private cache")
        .counter("dram_demand_lines", m.dram_demand_lines, "count", "CPU line reads from DRAM that paid the latency")
        .counter("dram_stream_lines", m.dram_stream_lines, "count", "CPU line reads from DRAM covered by a stream prefetch")
        .counter("dram_write_allocates", m.dram_write_allocates, "count", "CPU stores that allocated a line from DRAM")
        .counter("writebacks", m.writebacks, "count", "dirty lines written to DRAM (evictions and cleans)")
        .counter("dma_write_bytes", m.dma_write_bytes, "bytes", "bytes devices wrote to memory")
        .counter("dma_read_bytes", m.dma_read_bytes, "bytes", "bytes devices read from memory")
        .counter("invalidated_lines", m.invalidated_lines, "count", "cached lines dropped by cache maintenance")
        .counter("stall_cycles", m.stall_cycles, "cycles", "CPU stall cycles beyond L1-hit execution");
}


} // namespace

void System::register_stats() {
    for (const Machine& m : machines_) {
        const stats::Scope machine(stats_, m.cfg->name);
        for (std::size_t i = 0; i < m.cpus.size(); ++i) {
            const stats::Scope cpu = machine.sub("cpu" + std::to_string(m.cpus[i]->id()));
            m.cpus[i]->register_stats(cpu);
            m.simd[i]->register_stats(cpu.sub("simd"));
            if (i < m.softnet.size()) m.softnet[i]->register_stats(cpu.sub("softnet"));
            if (i < m.backlog.size())
                cpu.sub("softnet").counter("dropped", m.backlog[i]->dropped(), "count",
                                           "frames dropped: the backlog's input queue held netdev_max_backlog");
        }
        if (m.device) {
            const std::string& dev = m.device->name(); // "<machine>.<ifname>"
            m.device->register_stats(machine.sub("netdev").sub(dev.substr(dev.rfind('.') + 1)));
        }
        if (m.vm) m.vm->register_stats(machine.sub("kvm"));
        register_nic_stats(m, machine);
        if (m.dma) m.dma->register_stats(machine.sub("dma"));
        if (m.memory) register_memory_stats(*m.memory, machine.sub("memory"));
        if (m.text) {
            const mem::ICacheStats& i = m.text->icache().stats();
            machine.sub("memory").sub("l1i")
                .counter("hits", i.hits, "count", "kernel code lines the CPUs' L1I held")
                .counter("misses", i.misses, "count", "kernel code lines filled into the CPUs' L1I")
                .counter("prefetched", i.prefetched, "count", "missing lines a next-line prefetch had requested")
                .counter("stall_cycles", i.stall_cycles, "cycles", "instruction fetch stall beyond warm code");
        }
        if (m.stack) m.stack->register_stats(machine.sub("tcp"));
        if (m.tunnel)
            m.tunnel->register_stats(machine.sub("tunnel").sub(m.tunnel->kind() == net::TunnelKind::WIREGUARD ? "wg0" : "esp0"));
        for (const auto& [guest, vhost] : m.vhosts) vhost->register_stats(machine.sub("vhost").sub(guest));
    }
    for (const LinkDrops& d : link_drops_)
        stats::Scope(stats_, d.machine)
            .sub("wire")
            .sub(d.ifname)
            .counter("segments_dropped", d.drops->dropped(), "count",
                     "TCP data segments the link's drop pattern lost on the wire (either direction)");
}

// The network: per-CPU softnet data of every networked machine, its device (a NIC on an
// Ethernet link, virtio-net in a guest, a tap in a host) on CPU 0, the stack, links and vhost
// workers, then the tunnels (with their kworkers) and the channel they share.
System::Machine* System::machine_named(const std::string& name) {
    for (Machine& m : machines_)
        if (m.cfg->name == name) return &m;
    return nullptr;
}

void System::build_network() {
    auto networked = [&](Machine& m) {
        require(m.cfg->profile.net.has_value(), "machine " + m.cfg->name + ": a network device without [net] figures");
        require(!m.cfg->nic_gso || m.cfg->profile.net->gso_segment.has_value(),
                "machine " + m.cfg->name + ": GSO is on (as in Linux; [machine.nic] gso = false turns it off) but profile " +
                    m.cfg->profile.name + " has no [net] gso_segment figure");
        Machine& box = hw(m);
        if (!box.softnet.empty()) return;
        for (auto& c : box.cpus) box.softnet.push_back(std::make_unique<net::Softnet>(*c));
    };
    for (const LinkConfig& l : cfg_.links) {
        Machine* a = machine_named(l.a);
        Machine* b = machine_named(l.b);
        require(a && b && a != b, "link " + l.a + " - " + l.b + ": not two distinct machines");
        networked(*a);
        networked(*b);
        require(l.kind == LinkConfig::Kind::VETH || (!a->host && !b->host),
                "link " + l.a + " - " + l.b + ": a network namespace's device is a veth");
        if (l.kind == LinkConfig::Kind::VETH) {
            build_veth(*a, *b);
        } else if (l.kind == LinkConfig::Kind::ETHERNET) {
            net::Nic& na = add_nic(*a);
            net::Nic& nb = add_nic(*b);
            for (auto [m, peer] : {std::pair{a, b}, std::pair{b, a}})
                if (!m->more_nics.empty() && m->more_peers.size() < m->more_nics.size()) m->more_peers.push_back(peer);
            if (!a->link_peer) a->link_peer = b;
            if (!b->link_peer) b->link_peer = a;
            links_.push_back(std::make_unique<net::Link>(sim_, l.rate_bps, l.latency, l.queue));
            links_.back()->attach(na, nb);
            if (!l.drop.empty() || l.drop_every) {
                const std::string& dev = na.name(); // "<machine>.<ifname>"
                link_drops_.push_back({std::make_unique<net::SegmentDrops>(l.drop, l.drop_every), l.a,
                                       dev.substr(dev.rfind('.') + 1)});
                link_drops_.back().drops->attach(*links_.back());
            }
        } else {
            const MachineConfig& guest = *a->cfg;
            const MachineConfig& host = *b->cfg;
            require(host.profile.virt && !guest.nic_rx && !host.nic_rx,
                    "virtio link " + l.a + " - " + l.b + ": no [virt] figures, or a [machine.nic] end");
            require(a->vm != nullptr && guest.kvm_host == host.name, "virtio link " + l.a + " - " + l.b + ": the guest is not the host's");
            const net::VirtCosts& v = *host.profile.virt;
            const net::NetCosts& gn = *guest.profile.net;
            require(gn.virtio_rx_buf && gn.virtio_tx_sg && gn.virtio_gso_hdr,
                    "virtio link " + l.a + " - " + l.b + ": the guest's profile " + guest.profile.name +
                        " has no [net] virtio_rx_buf, virtio_tx_sg and virtio_gso_hdr figures");
            auto vdev = std::make_unique<net::VirtioNet>(*a->softnet[0], a->next_vector++, gn, *a->vm, guest.name + ".eth0",
                                                         l.virtio);
            auto tap = std::make_unique<net::Tap>(*host.profile.net, v, host.name + ".tap0");
            const net::VirtioFeatures f = vdev->features();
            tap->set_tso(f.tap_tso());
            // without CSUM (GUEST_CSUM) neither device has NETIF_F_SG: skb_segment copies
            if (!f.csum) vdev->set_sg(false, guest.profile.tcp ? guest.profile.tcp->copy_from_user : 0.0);
            if (!f.guest_csum) tap->set_sg(false, host.profile.tcp ? host.profile.tcp->copy_from_user : 0.0);
            if (guest.nic_gro) {
                require(gn.gro_receive && gn.gro_tcp && gn.gro_merge && gn.gro_complete,
                        "machine " + guest.name + ": GRO is on (as in Linux; [machine.nic] gro = false turns it off) but "
                        "profile " + guest.profile.name + " has no [net] gro_receive, gro_tcp, gro_merge and gro_complete figures");
                vdev->set_gro(net::GroCosts{*gn.gro_receive, *gn.gro_tcp, *gn.gro_merge, *gn.gro_complete});
            }
            std::vector<kernel::Cpu*> vhost_affinity =
                host_cpus(*b, l.vhost_affinity, "virtio link " + l.a + " - " + l.b + ": vhost_affinity");
            vhosts_.push_back(std::make_unique<net::Vhost>(*b->cpus[static_cast<std::size_t>(l.vhost_cpu)], v, *vdev, *tap,
                                                           "vhost-" + guest.name, std::move(vhost_affinity)));
            b->vhosts.emplace_back(guest.name, vhosts_.back().get());
            a->stack = std::make_unique<net::Stack>(*vdev);
            b->stack = std::make_unique<net::Stack>(*tap);
            vdev->set_gso(guest.nic_gso);
            tap->set_gso(host.nic_gso);
            a->device = std::move(vdev);
            b->device = std::move(tap);
            a->link_peer = b;
            b->link_peer = a;
        }
    }
    for (Machine& m : machines_) {
        const MachineConfig& mc = *m.cfg;
        if (!mc.tunnel) continue;
        Machine* peer = machine_named(mc.tunnel->peer);
        require(peer && m.stack && mc.profile.tunnel, "machine " + mc.name + ": a tunnel without a link or [tunnel] figures");
        // one channel per pair, made by whichever end comes first
        net::TunnelChannel* channel = peer->channel;
        int side = 1;
        if (!channel) {
            channels_.push_back(std::make_unique<net::TunnelChannel>(mc.tunnel->kind, mc.tunnel->aead, cfg_.mode == Mode::FUNCTIONAL));
            channel = channels_.back().get();
            side = 0;
        }
        m.channel = channel;
        m.channel_side = side;
        net::TunnelEnv env;
        env.stack = m.stack.get();
        Machine& box = hw(m);
        for (std::size_t i = 0; i < box.cpus.size(); ++i)
            env.cpus.push_back(net::TunnelCpu{box.cpus[i].get(), box.simd[i].get(), box.softnet[i].get()});
        env.cipher = &mc.profile.cipher;
        env.costs = *mc.profile.tunnel;
        env.copy_per_byte = mc.profile.tcp ? mc.profile.tcp->copy_from_user : 0.0;
        const auto choice = net::tunnel_aead_driver(mc.tunnel->kind, mc.simd_policy, mc.tunnel->aead, mc.profile.cipher);
        env.driver = choice.driver;
        env.driver_async = mc.tunnel->simd_wrapper.value_or(choice.async_wrapped);
        env.driver_internal = choice.async_wrapped;
        require(!crypto::aead_missing_costs(mc.profile.cipher, choice.driver, mc.tunnel->aead,
                                            mc.crypto_simd_disabled_for_test && !env.driver_async),
                "machine " + mc.name + ": its tunnel's cipher figures are missing");
        env.channel = channel;
        env.side = side;
        if (mc.tunnel->kind == net::TunnelKind::WIREGUARD) env.peer_id = box.wg_peers++;
        if (mc.tunnel->kind == net::TunnelKind::WIREGUARD) m.tunnel = std::make_unique<net::WireGuard>(std::move(env));
        else m.tunnel = std::make_unique<net::Esp>(std::move(env));
        m.stack->set_tunnel(*m.tunnel);
    }
    for (Machine& m : machines_) {
        const MachineConfig& mc = *m.cfg;
        if (!mc.prerouting_drop) continue;
        require(m.stack && mc.profile.netfilter, "machine " + mc.name + ": [machine.netfilter] without a link or [netfilter]");
        m.stack->set_prerouting_drop(*mc.prerouting_drop, *mc.profile.netfilter);
    }
}

std::vector<std::unique_ptr<net::Backlog>>& System::backlogs(Machine& box) {
    if (box.backlog.empty())
        for (auto& s : box.softnet)
            box.backlog.push_back(std::make_unique<net::Backlog>(*s, *box.cfg->profile.net->process_backlog));
    return box.backlog;
}

// The slab's objects: kmalloc-4k (a TCP skb's head pulled linear, skb_slab.h); 4096 of them (16
// MiB): more than the heads a run keeps alive (a TCP receive queue of a few MB at most).
mem::MemorySystem* System::datapath_memory(Machine& box) {
    const MachineConfig& mc = *box.cfg;
    if (!mc.profile.memory || mc.profile.memory->copy_warm <= 0) return nullptr;
    if (!box.memory) {
        box.memory = std::make_unique<mem::MemorySystem>(*mc.profile.memory, mc.cpus, mc.profile.clock_hz);
        if (const engine::Tick period = box.memory->refresh_interval())
            box.memory->set_refresh_phase(sim_.rng("dram-refresh:" + mc.name).below(period));
        box.skb_slab = std::make_unique<net::SkbSlab>(*box.memory, 4096, 4096);
        box.pages = std::make_unique<net::PagePlacement>();
        if (mc.profile.memory->l1i.size > 0) { // the CPUs' instruction fetch on the L1I
            box.text = KernelTextFetch::make(*mc.profile.memory, mc.cpus);
            for (auto& c : box.cpus) c->set_text_fetch(box.text.get());
        }
    }
    return box.memory.get();
}

void System::build_veth(Machine& a, Machine& b) {
    Machine& box = hw(a);
    require(&box == &hw(b), "veth link " + a.cfg->name + " - " + b.cfg->name + ": its ends are namespaces of two machines");
    const net::NetCosts& nc = *box.cfg->profile.net;
    require(nc.veth_xmit && nc.process_backlog, "machine " + box.cfg->name + ": a veth pair without [net] veth figures");
    std::vector<net::Backlog*> queues;
    for (auto& q : backlogs(box)) queues.push_back(q.get());
    auto va = std::make_unique<net::Veth>(nc, *nc.veth_xmit, queues, a.cfg->name + ".veth0");
    auto vb = std::make_unique<net::Veth>(nc, *nc.veth_xmit, queues, b.cfg->name + ".veth1");
    net::Veth::pair(*va, *vb);
    a.stack = std::make_unique<net::Stack>(*va);
    b.stack = std::make_unique<net::Stack>(*vb);
    if (mem::MemorySystem* memory = datapath_memory(box)) // one kernel: both namespaces on the box's hierarchy
        for (net::Stack* s : {a.stack.get(), b.stack.get()}) {
            s->set_memory(memory, box.cfg->profile.memory->copy_warm);
            s->set_skb_slab(box.skb_slab.get());
            s->set_page_placement(box.pages.get());
        }
    va->set_gso(a.cfg->nic_gso);
    vb->set_gso(b.cfg->nic_gso);
    a.device = std::move(va);
    b.device = std::move(vb);
    a.link_peer = &b;
    b.link_peer = &a;
}

System::~System() = default;

std::vector<System::Device> System::devices() {
    std::vector<Device> out;
    auto index = [&](const Machine* m) { return static_cast<std::size_t>(m - machines_.data()); };
    for (Machine& m : machines_) {
        if (!m.device || !m.link_peer) continue;
        const std::string& dev = m.device->name(); // "<machine>.<ifname>"
        out.push_back(Device{m.cfg->name + "-" + dev.substr(dev.rfind('.') + 1), m.device.get(),
                             net::wire::machine_endpoint(index(&m)), net::wire::machine_endpoint(index(m.link_peer)),
                             m.channel, m.channel_side});
        for (std::size_t i = 0; i < m.more_nics.size(); ++i) {
            const std::string& more = m.more_nics[i]->name();
            out.push_back(Device{m.cfg->name + "-" + more.substr(more.rfind('.') + 1), m.more_nics[i].get(),
                                 net::wire::machine_endpoint(index(&m)), net::wire::machine_endpoint(index(m.more_peers[i])),
                                 nullptr, 0});
        }
    }
    return out;
}

bool System::enable_trace(const TraceRequest& req) {
    if constexpr (!kernel::TRACE_COMPILED) return false;
    trace_ = std::make_unique<kernel::TraceRecorder>(req.limit, req.filter);
    trace_info_ = TraceInfo{cfg_.name, cfg_.seed, req.cpus_text, req.categories_text};
    for (std::size_t i = 0; i < machines_.size(); ++i)
        for (auto& c : machines_[i].cpus)
            if (req.cpus.selects(machines_[i].cfg->name, c->id()))
                c->set_trace(trace_.get(), trace_->add_track(machines_[i].cfg->name, static_cast<int>(i), c->id()));
    return true;
}

std::vector<std::pair<std::string, int>> System::machine_cpus() const {
    std::vector<std::pair<std::string, int>> out;
    for (const Machine& m : machines_)
        if (!m.host) out.emplace_back(m.cfg->name, static_cast<int>(m.cpus.size()));
    return out;
}

std::vector<kernel::Cpu*> System::host_cpus(const Machine& host, const std::vector<int>& numbers, const std::string& what) {
    std::vector<kernel::Cpu*> out;
    for (int h : numbers) {
        require(h >= 0 && h < host.cfg->cpus, what + " names no CPU of the host");
        out.push_back(host.cpus[static_cast<std::size_t>(h)].get());
    }
    return out;
}

bool System::cpus_share_cache(const std::string& name, int a, int b) const {
    for (const Machine& m : machines_)
        if (m.cfg->name == name)
            return m.cpus.at(static_cast<std::size_t>(a))->cpus_share_cache(*m.cpus.at(static_cast<std::size_t>(b)));
    throw std::out_of_range("System: no machine " + name);
}

void System::write_trace(const std::function<void(std::string_view)>& out) const {
    if (trace_) write_trace_json(*trace_, trace_info_, out);
}

void System::write_trace_ftrace(const std::function<void(std::string_view)>& out) const {
    if (trace_) system::write_trace_ftrace(*trace_, trace_info_, out);
}

results::RunResults System::run() {
    start();
    advance(end());
    return finish();
}

void System::start() {
    for (Machine& m : machines_)
        for (auto& w : m.workloads) w->start();
    for (Machine& m : machines_) // what a workload owns exists once it has started
        for (auto& w : m.workloads) w->register_stats(stats::Scope(stats_, m.cfg->name));
    for (Machine& m : machines_)
        for (auto& c : m.cpus) c->boot();
}

engine::Tick System::end() const { return cfg_.duration ? *cfg_.duration : cfg_.max_duration; }

bool System::advance(engine::Tick t) {
    // A fixed duration runs to its end even when finite workloads end early (Completion stops the
    // engine: it is resumed); otherwise the run ends when the last finite workload does, or at
    // max_duration.
    const engine::Tick until = std::min(t, end());
    while (!ended_) {
        sim_.run(until);
        if (sim_.now() >= end() || sim_.pending() == 0 || (sim_.stopped() && !cfg_.duration)) ended_ = true;
        else if (sim_.now() >= until) return true;
    }
    return false;
}

results::RunResults System::finish() {
    for (Machine& m : machines_)
        for (auto& c : m.cpus) c->finish();
    for (Machine& m : machines_)
        if (m.vm) m.vm->finish();
    for (Machine& m : machines_)
        for (auto& w : m.workloads) w->check_at_end();
    return collect();
}

std::vector<std::pair<std::string, double>> System::progress() const {
    std::vector<std::pair<std::string, double>> out;
    std::vector<workloads::Workload::Progress> p;
    for (const Machine& m : machines_)
        for (const auto& w : m.workloads) {
            p.clear();
            w->progress(p);
            const std::string name = w->result().name;
            for (const auto& x : p) out.emplace_back("workload." + name + "." + x.key, x.amount);
        }
    return out;
}

results::RunResults System::collect() const {
    results::RunResults r;
    r.scenario = cfg_.name;
    r.scenario_path = cfg_.path;
    r.description = cfg_.description;
    r.seed = cfg_.seed;
    r.mode = cfg_.mode == Mode::FUNCTIONAL ? "functional" : "timing";
    r.simulated_us = engine::to_us(sim_.now());
    r.events = sim_.events_processed();
    for (const Machine& m : machines_) {
        const MachineConfig& mc = *m.cfg;
        if (m.host) { // a namespace: its CPUs are its machine's
            for (const auto& w : m.workloads) r.workloads.push_back(w->result());
            continue;
        }
        results::MachineResult mr;
        mr.name = mc.name;
        mr.profile = mc.profile.name;
        mr.profile_sha256 = mc.profile.sha256;
        if (!mc.profile.stock) mr.profile_file = mc.profile.path;
        mr.arch = std::string(arch::to_string(mc.profile.arch));
        mr.clock_hz = mc.profile.clock_hz;
        mr.preempt = std::string(kernel::to_string(mc.kernel.preempt));
        mr.simd_policy = std::string(arch::to_string(mc.simd_policy));
        mr.chunking = std::string(crypto::to_string(mc.chunking.policy));
        if (mc.chunking.policy != crypto::ChunkPolicy::NONE) mr.chunking += " " + std::to_string(mc.chunking.bytes) + " bytes";
        mr.overrides = mc.overrides;
        for (std::size_t i = 0; i < m.cpus.size(); ++i) {
            const kernel::Cpu& cpu = *m.cpus[i];
            const kernel::CpuStats& s = cpu.stats();
            results::CpuResult cr;
            cr.id = cpu.id();
            cr.busy_us = engine::to_us(s.busy_ticks);
            cr.idle_us = engine::to_us(s.idle_ticks);
            for (std::size_t k = 0; k < kernel::CTX_KINDS; ++k)
                for (std::size_t c = 0; c < kernel::CATS; ++c)
                    if (s.cycles[k][c])
                        cr.cycles[std::string(kernel::to_string(static_cast<kernel::CtxKind>(k)))]
                                 [std::string(kernel::to_string(static_cast<kernel::Cat>(c)))] = s.cycles[k][c];
            cr.longest_np_span_us = engine::to_us(s.longest_np_span);
            cr.longest_np_span_start_us = engine::to_us(s.longest_np_span_start);
            cr.longest_np_holder = s.longest_np_holder;
            cr.simd = simd_result(*m.simd[i], cpu.clock());
            mr.cpus.push_back(std::move(cr));
        }
        r.machines.push_back(std::move(mr));
        for (const auto& w : m.workloads) r.workloads.push_back(w->result());
    }
    for (const stats::Entry& e : stats_.entries())
        r.statistics.push_back(results::Statistic{e.path, e.unit, e.description, e.value(), e.integral()});
    // the verdict: every machine's typed findings
    for (const Machine& m : machines_) {
        const std::string& name = m.cfg->name;
        for (const stats::Finding& f : m.findings.kept())
            r.findings.push_back(results::Finding{std::string(stats::to_string(f.kind)), name, f.cpu, engine::to_us(f.time_ps),
                                                  f.culprit, f.victim, f.where});
        for (std::size_t k = 0; k < stats::FINDING_KINDS; ++k) {
            const auto kind = static_cast<stats::FindingKind>(k);
            if (const std::uint64_t n = m.findings.count(kind)) {
                r.finding_counts.push_back(results::FindingCount{std::string(stats::to_string(kind)), name, n});
                r.failures.push_back(name + ": " + std::to_string(n) + " " + std::string(stats::describe(kind)));
            }
        }
    }
    r.failed = !r.finding_counts.empty();
    return r;
}

} // namespace kdsim::system
