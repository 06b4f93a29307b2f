// A machine's NICs: one per Ethernet link (eth0, eth1, ... in link order), each with its own rx
// ring, NAPI instance and interrupt, the interrupt on the CPU its affinity names (CPU 0 unless
// [machine.nic] irq_cpus says otherwise: what a kernel without irqbalance does, every IRQ's
// default smp_affinity letting the GIC deliver it to CPU 0). They share the machine's stack,
// DMA platform, memory hierarchy and, for those listed in [machine.nic] pcie, one PCIe link.
#include "system/system.h"

namespace kdsim::system {

namespace {
engine::Task<> nic_open(net::Nic& nic) { co_await nic.open(); }

// The machine's DMA platform with its swiotlb: the pool the kernel would set up (swiotlb.h), below
// its low limit in the DRAM layout, and the bounce copy's warm cycles per byte (the hierarchy's copy
// figure, else a cached source's [tcp] copy). The loader has checked that the pool fits and that the
// mask reaches it.
std::unique_ptr<devices::DmaPlatform> make_dma_platform(const MachineConfig& mc) {
    auto dma = std::make_unique<devices::DmaPlatform>(*mc.profile.dma);
    const devices::DramLayout* dram = mc.dram ? &*mc.dram : nullptr;
    if (!devices::swiotlb_wanted(mc.swiotlb, dram, devices::dma_bit_mask(mc.nic_dma_mask))) {
        if (mc.swiotlb == devices::SwiotlbMode::NOFORCE) dma->set_swiotlb(mc.swiotlb, nullptr, 0);
        return dma;
    }
    std::uint64_t start = 0;
    if (dram) {
        const std::uint64_t limit = devices::swiotlb_low_limit(mc.profile.arch == arch::Arch::ARM64, mc.nic_dma_mask);
        const auto at = devices::swiotlb_pool_start(dram->base, dram->size, mc.swiotlb_size, limit);
        require(at.has_value(), "machine " + mc.name + ": the swiotlb pool does not fit in DRAM below its low limit");
        start = *at;
    }
    const bool hier = mc.profile.memory && mc.profile.memory->copy_warm > 0;
    require(hier || mc.profile.tcp, "machine " + mc.name + ": swiotlb's bounce copy needs [memory].copy or [tcp]");
    dma->set_swiotlb(mc.swiotlb, std::make_unique<devices::SwiotlbPool>(start, mc.swiotlb_size, mc.cpus),
                     hier ? mc.profile.memory->copy_warm : mc.profile.tcp->copy_from_user);
    return dma;
}
} // namespace

net::Nic& System::add_nic(Machine& m) {
    const MachineConfig& mc = *m.cfg;
    const std::size_t k = m.device ? 1 + m.more_nics.size() : 0;
    const std::string ifname = "eth" + std::to_string(k);
    const int cpu = k < mc.nic_irq_cpus.size() ? mc.nic_irq_cpus[k] : 0;
    require(cpu >= 0 && cpu < mc.cpus, "machine " + mc.name + ": " + ifname + "'s IRQ on no CPU of it");
    auto nic = std::make_unique<net::Nic>(*m.softnet[static_cast<std::size_t>(cpu)], m.next_vector++, *mc.profile.net,
                                          mc.name + "." + ifname, mc.nic_rx_ring);
    if (mc.nic_fec_itr) { // the FEC driver's microseconds-to-ICTT conversion with the SoC's ahb clock
        require(mc.profile.net->fec_itr_clock.has_value(),
                "machine " + mc.name + ": coalesce = \"fec-itr\" needs the [net] fec_itr_clock figure of profile " +
                    mc.profile.name);
        nic->set_rx_usecs(net::fec_itr_period(mc.nic_rx_usecs / engine::PS_PER_US, *mc.profile.net->fec_itr_clock));
    } else
        nic->set_rx_usecs(mc.nic_rx_usecs);
    nic->set_poll_loop(mc.nic_poll_loop);
    if (mc.nic_gro) {
        const net::NetCosts& nc = *mc.profile.net;
        require(nc.gro_receive && nc.gro_tcp && nc.gro_merge && nc.gro_complete,
                "machine " + mc.name + ": GRO is on (as in Linux; [machine.nic] gro = false turns it off) but "
                "profile " + mc.profile.name + " has no [net] gro_receive, gro_tcp, gro_merge and gro_complete figures");
        nic->set_gro(net::GroCosts{*nc.gro_receive, *nc.gro_tcp, *nc.gro_merge, *nc.gro_complete});
    }
    // without SG, TSO is dropped (netdev_fix_features)
    nic->set_tso(mc.nic_sg ? mc.nic_tso : net::TsoKind::NONE);
    if (nic->tso() == net::TsoKind::FEC_SOFTWARE)
        require(mc.profile.net->tso_hdr && mc.profile.net->tso_data,
                "machine " + mc.name + ": tso = \"fec-software\" needs the [net] tso_hdr and tso_data figures of profile " +
                    mc.profile.name);
    if (!mc.nic_sg) {
        require(mc.profile.tcp.has_value(), "machine " + mc.name + ": sg = false needs the [tcp] copy figure");
        nic->set_sg(false, mc.profile.tcp->copy_from_user);
    }
    if (const auto& d = mc.profile.kernel.device_irq_delivery) nic->set_irq_delivery(*d * engine::PS_PER_NS);
    if (const std::uint64_t j = mc.profile.variation.irq_delivery_jitter)
        nic->set_irq_delivery_jitter(j * engine::PS_PER_NS, sim_.rng("irq-delivery:" + mc.name + "." + ifname));
    if ((mc.nic_rx || mc.nic_tx) && mc.profile.dma) {
        if (!m.dma) m.dma = make_dma_platform(mc);
        nic->set_dma_device(m.dma->add_device(ifname, devices::dma_bit_mask(mc.nic_dma_mask)), mc.dram ? &*mc.dram : nullptr, k);
    }
    const MachineConfig::NicOverride* own = nullptr; // [machine.nic.<ifname>]
    for (const auto& o : mc.nic_overrides)
        if (o.ifname == ifname) own = &o;
    if (mc.nic_rx) {
        require(mc.profile.dma && mc.profile.tcp, "machine " + mc.name + ": [machine.nic] without [dma] or [tcp]");
        net::RxDmaConfig rx = *mc.nic_rx;
        if (own && own->rx_strategy) rx.strategy = *own->rx_strategy;
        nic->set_rx_dma(*m.dma, rx, static_cast<std::uint32_t>(mc.profile.cache_line));
        nic->set_rx_buffer_alloc_cost(mc.profile.tcp->rx_buffer_alloc);
        // rx_copy's memcpy: warm compute on the hierarchy (which adds the cold source's misses), else
        // the [tcp] copy figure of a cold source
        const bool hier = mc.profile.memory && mc.profile.memory->copy_warm > 0;
        if (mc.nic_rx->copy) nic->set_rx_copy_cost(hier ? mc.profile.memory->copy_warm : mc.profile.tcp->copy_to_user_cold);
        nic->cpu().create_task(mc.name + "." + ifname + "-open", kernel::SchedPolicy::NORMAL, 0, true, nic_open(*nic));
    }
    if (mc.nic_tx) {
        const net::NetCosts& nc = *mc.profile.net;
        require(mc.profile.dma && mc.profile.tcp && nc.tx_clean && nc.tx_skb_free,
                "machine " + mc.name + ": the tx DMA API ([machine.nic] tx_dma, driver) needs [dma], [tcp] and the [net] "
                "tx_clean and tx_skb_free figures of profile " + mc.profile.name);
        require(mc.nic_tx->driver != net::NicDriver::FEC ||
                    (nc.fec_xmit && nc.fec_irq && nc.mmio_posted_write && nc.mmio_read),
                "machine " + mc.name + ": driver = \"fec\" needs the [net] fec_xmit, fec_irq, mmio_posted_write and "
                "mmio_read figures of profile " + mc.profile.name);
        // the bounce memcpy: warm compute on the hierarchy, else a cached source's copy figure
        const bool hier = mc.profile.memory && mc.profile.memory->copy_warm > 0;
        nic->set_tx_dma(*m.dma, *mc.nic_tx, static_cast<std::uint32_t>(mc.profile.cache_line),
                        hier ? mc.profile.memory->copy_warm : mc.profile.tcp->copy_from_user);
        if (fec_on_soc_port(mc)) { // the SoC's bus limit (ERR004512)
            require(nc.fec_rx_fifo.has_value(), "machine " + mc.name + ": [net] fec_bus_bandwidth without fec_rx_fifo in profile " +
                                                    mc.profile.name);
            m.dma_ports.push_back(std::make_unique<devices::DmaPort>(*nc.fec_bus_bandwidth));
            nic->set_dma_port(*m.dma_ports.back(), *nc.fec_rx_fifo);
        }
    }
    // after set_tx_dma: the FEC charges its own register writes
    nic->set_rx_tail_batch(own && own->rx_tail_batch ? *own->rx_tail_batch : mc.nic_rx_tail_batch);
    if (soc_mac_rx_fifo(mc, ifname)) nic->set_rx_fifo(*mc.profile.net->fec_rx_fifo); // the SoC's MAC keeps up with its line
    if (mc.nic_rx_mode == net::RxMode::NETIF_RX) { // the 3.0 FEC: netif_rx to the interrupt CPU's backlog
        const net::NetCosts& nc = *mc.profile.net;
        require(mc.nic_tx && mc.nic_tx->driver == net::NicDriver::FEC && nc.netif_rx && nc.process_backlog &&
                    nc.fec_irq_loop,
                "machine " + mc.name + ": rx_mode = \"netif_rx\" needs driver = \"fec\" and the [net] netif_rx, "
                "process_backlog and fec_irq_loop figures of profile " + mc.profile.name);
        nic->set_netif_rx(*backlogs(hw(m))[static_cast<std::size_t>(cpu)]);
    }
    if (mc.nic_xdp != net::XdpAction::NONE) { // an XDP program in the driver's NAPI poll
        const net::NetCosts& nc = *mc.profile.net;
        require(mc.nic_rx_mode == net::RxMode::NAPI && nc.xdp_prog_run &&
                    (mc.nic_xdp != net::XdpAction::DROP || nc.xdp_drop),
                "machine " + mc.name + ": xdp needs rx_mode = \"napi\" and the [net] xdp_prog_run (and, to drop, "
                "xdp_drop) figures of profile " + mc.profile.name);
        nic->set_xdp(mc.nic_xdp);
    }
    if (!m.stack) m.stack = std::make_unique<net::Stack>(*nic);
    else m.stack->add_device(*nic);
    add_qdisc(m, *nic);
    if (mem::MemorySystem* memory = datapath_memory(m)) { // the datapath on the hierarchy
        m.stack->set_memory(memory, mc.profile.memory->copy_warm);
        m.stack->set_skb_slab(m.skb_slab.get());
        m.stack->set_page_placement(m.pages.get());
        nic->set_memory(*m.memory);
        nic->set_page_placement(m.pages.get());
        if (devices::SwiotlbPool* pool = m.dma ? m.dma->swiotlb() : nullptr; pool && pool->slot_addr(0) == 0)
            pool->set_addr(m.memory->alloc(pool->nslabs() * devices::IO_TLB_SIZE, 4096));
    }
    if (std::find(mc.nic_pcie.begin(), mc.nic_pcie.end(), ifname) != mc.nic_pcie.end()) {
        require(mc.profile.pcie.has_value(), "machine " + mc.name + ": a NIC behind PCIe without [pcie] figures");
        if (!m.pcie) m.pcie = std::make_unique<devices::PcieLink>(*mc.profile.pcie);
        nic->set_pcie(*m.pcie, mc.nic_rx_fifo);
    }
    if (mc.nic_rx_pause && nic->has_rx_fifo()) nic->set_rx_pause(true); // the NICs with an rx FIFO (the loader checked one has)
    nic->set_gso(mc.nic_gso);
    net::Nic& out = *nic;
    if (!m.device) m.device = std::move(nic);
    else m.more_nics.push_back(std::move(nic));
    return out;
}

// The NIC's root qdisc over its driver, and NET_TX_SOFTIRQ on each CPU of the machine.
void System::add_qdisc(Machine& m, net::Nic& nic) {
    const MachineConfig& mc = *m.cfg;
    if (mc.nic_qdisc.kind != net::QdiscKind::PFIFO_FAST && mc.nic_qdisc.kind != net::QdiscKind::FQ) return;
    const net::NetCosts& nc = *mc.profile.net;
    const bool fq = mc.nic_qdisc.kind == net::QdiscKind::FQ;
    require(nc.net_tx_action && (fq ? nc.fq_enqueue && nc.fq_dequeue && nc.qdisc_watchdog
                                    : nc.pfifo_fast_enqueue && nc.pfifo_fast_dequeue),
            "machine " + mc.name + ": qdisc = \"" + (fq ? "fq" : "pfifo_fast") + "\" needs the [net] " +
                (fq ? "fq_enqueue, fq_dequeue, qdisc_watchdog" : "pfifo_fast_enqueue, pfifo_fast_dequeue") +
                " and net_tx_action figures of profile " + mc.profile.name);
    net::QdiscCosts qc;
    qc.pfifo_fast_enqueue = nc.pfifo_fast_enqueue.value_or(0);
    qc.pfifo_fast_dequeue = nc.pfifo_fast_dequeue.value_or(0);
    qc.fq_enqueue = nc.fq_enqueue.value_or(0);
    qc.fq_dequeue = nc.fq_dequeue.value_or(0);
    qc.net_tx_action = *nc.net_tx_action;
    qc.qdisc_watchdog = nc.qdisc_watchdog.value_or(0);
    Machine& h = hw(m);
    if (h.net_tx.empty())
        for (auto& c : h.cpus) h.net_tx.push_back(std::make_unique<net::NetTx>(*c, qc.net_tx_action));
    std::vector<net::NetTx*> per_cpu;
    for (auto& t : h.net_tx) per_cpu.push_back(t.get());
    nic.set_txq(std::make_unique<net::TxQueue>(net::make_qdisc(mc.nic_qdisc, qc), qc.qdisc_watchdog));
    m.stack->attach_txq(nic, std::move(per_cpu));
}

void System::register_nic_stats(const Machine& m, const stats::Scope& machine) {
    for (const auto& nic : m.more_nics) {
        const std::string& dev = nic->name();
        nic->register_stats(machine.sub("netdev").sub(dev.substr(dev.rfind('.') + 1)));
    }
    auto fifo = [&](const net::Nic& nic) {
        if (!nic.has_rx_fifo()) return;
        const std::string& dev = nic.name();
        stats::Scope s = machine.sub("netdev").sub(dev.substr(dev.rfind('.') + 1));
        if (nic.rx_pause())
            s.counter("rx_pause_held", nic.rx_pause_held(), "count",
                      "frames the link partner held back, paused (802.3x), until the rx FIFO had room")
                .counter("rx_pause_held_max", nic.rx_pause_held_max(), "count", "the most frames it held at once");
        if (!nic.on_pcie() || nic.rx_pause())
            s.counter("rx_no_desc_held", nic.rx_no_desc_held(), "count",
                      "frames that waited in the rx FIFO for the driver to hand back a descriptor")
                .counter("rx_no_desc_held_max", nic.rx_no_desc_held_max(), "count", "the most that waited at once");
        if (nic.on_pcie()) {
            s.counter("rx_fifo_dropped", nic.rx_fifo_dropped(), "count",
                      "frames dropped: the rx FIFO was full while the PCIe link carried earlier writes");
            return;
        }
        if (!nic.dma_port()) {
            s.counter("rx_fifo_dropped", nic.rx_fifo_dropped(), "count",
                      "frames dropped: the rx FIFO was full while the ring had no free descriptor (an overrun)");
            return;
        }
        s.counter("rx_fifo_dropped", nic.rx_fifo_dropped(), "count",
                  "frames dropped: the rx FIFO was full while the SoC's port carried earlier DMA (an overrun)");
        const devices::DmaPort& p = *nic.dma_port();
        s.sub("dma_port")
            .counter("bytes", p.bytes(), "bytes", "frame bytes the device's SoC port carried, tx fetches and rx writes")
            .value("busy_us", [&p] { return engine::to_us(p.busy()); }, "us", "time the port was busy carrying them, transfers booked past the end of the run included");
    };
    if (const auto* eth0 = dynamic_cast<const net::Nic*>(m.device.get())) fifo(*eth0); // not virtio-net, a tap or a veth
    for (const auto& nic : m.more_nics) fifo(*nic);
    if (!m.pcie) return;
    const devices::PcieLink& l = *m.pcie;
    machine.sub("pcie")
        .counter("wire_bytes", l.wire_bytes(), "bytes", "bytes the link carried upstream (TLPs and DLLPs)")
        .value("busy_us", [&l] { return engine::to_us(l.busy()); }, "us", "time the upstream direction was busy carrying them");
}

} // namespace kdsim::system
