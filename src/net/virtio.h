// Paravirtual networking between a KVM guest and its host, as virtio-net with vhost-net runs it:
//
// Guest (drivers/net/virtio_net.c): start_xmit adds the skb to the tx virtqueue (xmit_skb: the
// virtio_net_hdr and the skb's scatter-gather entries, one descriptor chain) and kicks the host
// only when the host asked for notifications (virtqueue_kick_prepare: vhost disables them while
// it is processing): the kick is an MMIO write that exits to KVM (kvm_io_bus_write -> ioeventfd),
// paid by the vCPU (kvm/kvm.h). With HOST_TSO4 the skb may be a GSO skb of up to 64 KiB
// (virtio_net_hdr_from_skb writes its gso_type and gso_size): one chain, one kick decision.
// Receive: the host injects an interrupt (irqfd -> kvm_vgic_inject_irq, kvm_vcpu_kick); the
// vCPU's exit and re-entry, or its wake-up from WFI, are KVM's (kvm::Vcpu's hook on the guest
// CPU); then vring_interrupt disables further callbacks and schedules NAPI; virtnet_poll takes
// used buffers (receive_mergeable: one skb from num_buffers buffers; receive_big; receive_small),
// hands each skb to napi_gro_receive (GRO on) or netif_receive_skb, refills the ring when more
// than half a budget of buffers is free (try_fill_recv), and re-enables callbacks when drained
// (virtqueue_napi_complete).
//
// Host (drivers/vhost/net.c, drivers/net/tun.c): the vhost worker (a kthread of the host, pinned
// to `vhost_cpu`, or with `vhost_affinity` placed by the host's scheduler at each wake-up, as a
// 6.1 vhost kthread allowed on every CPU is) runs handle_tx: copies each skb out of guest memory (tun_get_user ->
// virtio_net_hdr_to_skb: a GSO skb stays one skb) and hands it to the tap's receive
// (tun_rx_batched: netif_receive_skb under local_bh_disable, in the worker's context), up to
// VHOST_NET_PKT_WEIGHT per run; and handle_rx: skbs the host stack sent to the tap
// (tun_net_xmit: ptr_ring of txqueuelen 500, then sk_data_ready wakes the worker) are copied into
// as many guest rx buffers as they need (get_rx_bufs; num_buffers), and the guest is signalled
// (irqfd) when it has callbacks enabled. The tap takes GSO skbs only with GUEST_TSO4 (TUN_F_TSO4):
// else the host's stack segments them first (virtio_offload.h says what each feature does).
//
// The guest is a separate machine whose CPUs are the vCPUs: exits and injections are cycles of
// those CPUs (kvm::Vm), the backend's work cycles of host CPUs. The vCPUs are dedicated cores,
// or with vcpu_cpus host threads that share the host's CPUs with the vhost worker
// (kvm/vcpu_thread.h).
// Not modelled: tx-completion interrupts (napi_tx), event-index details, XDP headroom in rx
// buffers, indirect descriptors' ring-slot savings (a chain takes one slot), IPv6 (the TSO6
// features move nothing).
#pragma once

#include "engine/simulation.h"
#include "kernel/cpu.h"
#include "kvm/kvm.h"
#include "net/napi.h"
#include "net/net_costs.h"
#include "net/netdevice.h"
#include "net/virtio_offload.h"

#include <cstdint>
#include <deque>
#include <string>

namespace kdsim::net {

class Vhost;

class VirtioNet final : public NetDevice {
public:
    static constexpr std::size_t VQ_SIZE = 256;
    // `features`: what the device offers; the guest takes them negotiated (virtio_offload.h).
    // The virtio_* figures of `costs` are needed when a feature uses them.
    VirtioNet(Softnet& softnet, unsigned vector, const NetCosts& costs, kvm::Vm& vm, std::string name,
              const VirtioFeatures& features = {});
    void attach(Vhost& host) { host_ = &host; }
    engine::Task<> xmit(kernel::Cpu& cpu, const Packet& p) override;
    const NetCosts& costs() const override { return costs_; }
    TsoKind tso() const override { return features_.guest_tso() ? TsoKind::HARDWARE : TsoKind::NONE; }
    const VirtioFeatures& features() const { return features_; }
    VirtioRxMode rx_mode() const { return rx_mode_; }
    // napi_gro_receive for received skbs (ethtool -K gro on); call before the run.
    void set_gro(const GroCosts& costs) {
        gro_.emplace(costs, &NetDevice::deliver_up, static_cast<NetDevice*>(this),
                     Gro::UpCost{&costs_.netif_receive_skb, kernel::Text::NONE});
        gro_stats_ = &gro_->stats();
    }

    // Host side (get_rx_bufs): the guest rx buffers a packet of `len` bytes takes with its
    // header, from the posted ones in ring order; 0 when those posted cannot hold it now.
    std::uint32_t rx_buffers_for(std::uint32_t len) const;
    // Fills the first `buffers` posted buffers with `p` (vhost_add_used_n).
    void rx_fill(const Packet& p, std::uint32_t buffers);
    // Host side: vhost_signal. True when the guest had callbacks enabled (an injection).
    bool signal();
    // The lengths of the posted rx buffers, in ring order (for tests).
    const std::deque<std::uint32_t>& posted() const { return avail_; }

private:
    struct Used {
        Packet p;
        std::uint32_t buffers = 1;
    };
    static engine::Task<> vring_interrupt(kernel::Cpu& cpu, void* ctx);
    static engine::Task<int> virtnet_poll(kernel::Cpu& cpu, void* ctx, int budget);
    // receive_buf's per-buffer work beyond driver_rx's first buffer, and the GSO header.
    Cycles receive_buf_extra(const Used& u) const;
    // try_fill_recv: posts buffers into every free slot.
    void try_fill_recv();

    Softnet& softnet_;
    kernel::Cpu& cpu_;
    unsigned vector_;
    NetCosts costs_;
    kvm::Vm& vm_;
    VirtioFeatures features_;
    VirtioRxMode rx_mode_;
    NapiStruct napi_;
    Vhost* host_ = nullptr;
    std::optional<Gro> gro_;
    std::deque<std::uint32_t> avail_; // posted rx buffers' lengths
    std::deque<Used> rx_;             // used, not yet taken by the poll
    std::size_t used_bufs_ = 0;       // buffers held by rx_
    MergeableBufs mrg_;
    bool callbacks_ = true;
};

// The host's tap device: its xmit feeds the vhost worker's rx side.
class Tap final : public NetDevice {
public:
    static constexpr std::size_t TXQUEUELEN = 500;
    Tap(const NetCosts& costs, const VirtCosts& virt, std::string name);
    void attach(Vhost& host) { host_ = &host; }
    engine::Task<> xmit(kernel::Cpu& cpu, const Packet& p) override;
    const NetCosts& costs() const override { return costs_; }
    // The vhost worker hands a guest frame to the host stack (netif_receive_skb).
    engine::Task<> receive(kernel::Cpu& cpu, const Packet& p);
    void count_tx_drop() { ++stats_.tx_dropped; }
    // TUNSETOFFLOAD with TUN_F_TSO4 (the guest took GUEST_TSO4): the tap takes GSO skbs.
    void set_tso(bool on) { tso_ = on; }
    TsoKind tso() const override { return tso_ ? TsoKind::HARDWARE : TsoKind::NONE; }

private:
    NetCosts costs_;
    VirtCosts virt_;
    Vhost* host_ = nullptr;
    bool tso_ = false;
};

struct VhostStats {
    std::uint64_t tx_frames = 0;  // guest -> host skbs (a GSO skb is one)
    std::uint64_t rx_frames = 0;  // host -> guest skbs
    std::uint64_t tx_gso_skbs = 0, tx_gso_segs = 0; // GSO skbs guest -> host and their segments
    std::uint64_t rx_gso_skbs = 0, rx_gso_segs = 0; // GSO skbs host -> guest and their segments
    std::uint64_t tx_descriptors = 0; // descriptors of the tx chains
    std::uint64_t rx_buffers = 0;     // guest rx buffers filled
    std::uint64_t rx_buffers_max = 0; // the most one packet took (num_buffers)
    std::uint64_t injections = 0; // interrupts injected into the guest
    std::uint64_t runs = 0;
    std::uint64_t guest_rx_full = 0; // runs that stopped because the guest had no rx buffers
};

class Vhost {
public:
    static constexpr int VHOST_NET_PKT_WEIGHT = 256;
    // The worker starts on `host_cpu`; with `affinity` (host CPUs, `host_cpu` among them) the host's
    // scheduler places it at each wake-up (kernel::Cpu::select_task_rq), else it stays pinned.
    Vhost(kernel::Cpu& host_cpu, const VirtCosts& virt, VirtioNet& guest, Tap& tap, std::string name,
          std::vector<kernel::Cpu*> affinity = {});
    // The host CPU the worker runs on, or last ran on.
    const kernel::Cpu& cpu() const { return *task_->cpu; }
    // Guest kick (ioeventfd): queue the frame; says whether the guest must exit to notify, and
    // whether that notification wakes the worker.
    struct Notify {
        bool kick = false;
        bool wakes = false;
    };
    Notify guest_tx(const Packet& p, kernel::Cpu& guest_cpu);
    // tun_net_xmit: the host stack's frame for the guest; false when the ring is full.
    bool tap_tx(const Packet& p);
    engine::Task<> wake(kernel::Cpu& caller);
    // The guest returned rx buffers: the worker may continue (called from guest context).
    void guest_rx_refilled(kernel::Cpu& guest_cpu);
    const VhostStats& stats() const { return stats_; }
    // Registers the worker's counters under `s` (<host>/vhost/<guest>).
    void register_stats(const stats::Scope& s) const {
        s.counter("tx_frames", stats_.tx_frames, "count", "frames copied guest -> host")
            .counter("rx_frames", stats_.rx_frames, "count", "frames copied host -> guest")
            .counter("injections", stats_.injections, "count", "interrupts injected into the guest")
            .counter("runs", stats_.runs, "count", "worker runs")
            .counter("guest_rx_full", stats_.guest_rx_full, "count", "runs that stopped because the guest had no rx buffers");
        register_offload_stats(s);
        register_placement_stats(s);
    }

private:
    void register_offload_stats(const stats::Scope& s) const;
    void register_placement_stats(const stats::Scope& s) const; // with an affinity of several CPUs
    static engine::Task<> worker(Vhost& v);
    engine::Task<Packet> vhost_copy(std::deque<Packet>& q, std::uint64_t& frames, kernel::Cycles per_descriptor);
    engine::Task<> handle_tx_one();
    // False when the guest has too few rx buffers posted for the next packet.
    engine::Task<bool> handle_rx_one();

    // The worker's CPU now: a worker with several allowed CPUs may be placed elsewhere at a wake-up
    // or pulled elsewhere while preempted, so its code reads this after every await (cpus_allowed's
    // contract) and holds no Cpu& across one.
    kernel::Cpu& this_cpu() const { return *task_->cpu; }
    VirtCosts virt_;
    VirtioNet& guest_;
    Tap& tap_;
    kernel::TaskStruct* task_ = nullptr;
    std::deque<Packet> txq_, rxq_;
    bool notify_ = true;   // the guest must kick for new tx frames
    bool sleeping_ = false;
    bool waiting_rx_room_ = false;
    VhostStats stats_;
};

} // namespace kdsim::net
