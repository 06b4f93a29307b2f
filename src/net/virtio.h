// Paravirtual networking between a KVM guest and its host, as virtio-net with vhost-net runs it:
//
// Guest (drivers/net/virtio_net.c): start_xmit adds the frame to the tx virtqueue and kicks the
// host only when the host asked for notifications (virtqueue_kick_prepare: vhost disables them
// while it is processing): the kick is an MMIO write that exits to KVM (kvm_io_bus_write ->
// ioeventfd), paid by the vCPU (kvm/kvm.h). Receive: the host injects an interrupt (irqfd ->
// kvm_vgic_inject_irq, kvm_vcpu_kick); the vCPU's exit and re-entry, or its wake-up from WFI, are
// KVM's (kvm::Vcpu's hook on the guest CPU); then vring_interrupt disables further callbacks and
// schedules NAPI; virtnet_poll takes used buffers (refilling the ring) and re-enables
// callbacks when drained (virtqueue_napi_complete).
//
// Host (drivers/vhost/net.c, drivers/net/tun.c): the vhost worker (a kthread of the host,
// pinned) runs handle_tx: copies each frame out of guest memory into an skb and hands it to
// the tap (tun_get_user -> tun_rx_batched: netif_receive_skb under local_bh_disable, in the
// worker's context), up to VHOST_NET_PKT_WEIGHT frames per run; and handle_rx: frames the host
// stack sent to the tap (tun_net_xmit: ptr_ring of txqueuelen 500, then sk_data_ready wakes the
// worker) are copied into the guest's rx buffers, and the guest is signalled (irqfd) when it
// has callbacks enabled.
//
// The guest's vCPUs are modelled as dedicated host cores (a separate machine whose CPUs are the
// vCPUs): exits and injections are cycles of those CPUs (kvm::Vm), the backend's work cycles of
// host CPUs.
// Not modelled: tx-completion interrupts (napi_tx), mergeable buffers and GSO over virtio,
// event-index details, the vCPU threads competing with host tasks for cores.
#pragma once

#include "engine/simulation.h"
#include "kernel/cpu.h"
#include "kvm/kvm.h"
#include "net/napi.h"
#include "net/net_costs.h"
#include "net/netdevice.h"

#include <cstdint>
#include <deque>
#include <string>

namespace kdsim::net {

class Vhost;

class VirtioNet final : public NetDevice {
public:
    static constexpr std::size_t VQ_SIZE = 256;
    VirtioNet(Softnet& softnet, unsigned vector, const NetCosts& costs, kvm::Vm& vm, std::string name);
    void attach(Vhost& host) { host_ = &host; }
    engine::Task<> xmit(kernel::Cpu& cpu, Packet p) override;
    const NetCosts& costs() const override { return costs_; }

    // Host side: whether a used rx buffer can be filled; fills it.
    bool rx_has_room() const { return rx_.size() < VQ_SIZE; }
    void rx_fill(const Packet& p);
    // Host side: vhost_signal. True when the guest had callbacks enabled (an injection).
    bool signal();

private:
    static engine::Task<> vring_interrupt(kernel::Cpu& cpu, void* ctx);
    static engine::Task<int> virtnet_poll(kernel::Cpu& cpu, void* ctx, int budget);

    Softnet& softnet_;
    kernel::Cpu& cpu_;
    unsigned vector_;
    NetCosts costs_;
    kvm::Vm& vm_;
    NapiStruct napi_;
    Vhost* host_ = nullptr;
    std::deque<Packet> rx_;
    bool callbacks_ = true;
};

// The host's tap device: its xmit feeds the vhost worker's rx side.
class Tap final : public NetDevice {
public:
    static constexpr std::size_t TXQUEUELEN = 500;
    Tap(const NetCosts& costs, const VirtCosts& virt, std::string name);
    void attach(Vhost& host) { host_ = &host; }
    engine::Task<> xmit(kernel::Cpu& cpu, Packet p) override;
    const NetCosts& costs() const override { return costs_; }
    // The vhost worker hands a guest frame to the host stack (netif_receive_skb).
    engine::Task<> receive(kernel::Cpu& cpu, const Packet& p);
    void count_tx_drop() { ++stats_.tx_dropped; }

private:
    NetCosts costs_;
    VirtCosts virt_;
    Vhost* host_ = nullptr;
};

struct VhostStats {
    std::uint64_t tx_frames = 0;  // guest -> host
    std::uint64_t rx_frames = 0;  // host -> guest
    std::uint64_t injections = 0; // interrupts injected into the guest
    std::uint64_t runs = 0;
    std::uint64_t guest_rx_full = 0; // runs that stopped because the guest had no rx buffers
};

class Vhost {
public:
    static constexpr int VHOST_NET_PKT_WEIGHT = 256;
    Vhost(kernel::Cpu& host_cpu, const VirtCosts& virt, VirtioNet& guest, Tap& tap, std::string name);
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
    }

private:
    static engine::Task<> worker(Vhost& v);
    engine::Task<Packet> vhost_copy(std::deque<Packet>& q, std::uint64_t& frames, kernel::Cycles per_descriptor);

    kernel::Cpu& cpu_;
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
