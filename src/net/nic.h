// A NIC and its driver, reduced to what a latency ping-pong needs: an rx descriptor ring,
// an rx interrupt on one CPU, NAPI polling from NET_RX_SOFTIRQ (net/core/dev.c net_rx_action,
// __napi_poll with weight 64, netdev_budget 300), and ndo_start_xmit onto a Link. DMA is coherent
// here; non-coherent DMA, buffer sizes and interrupt moderation belong to the network issue.
// Every path masks interrupts through the kernel's primitives (napi_schedule's
// local_irq_save, net_rx_action's local_irq_disable, the driver's tx spin_lock_irqsave), so a
// masking implementation's cost falls out of the packet count.
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"
#include "net/net_costs.h"
#include "net/packet.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kdsim::net {

class Link;

// The protocol layer's receive entry (netif_receive_skb's delivery), called in NET_RX context.
using RxHandler = engine::Task<> (*)(kernel::Cpu& cpu, void* ctx, const Packet& p);

struct NicStats {
    std::uint64_t rx_frames = 0;
    std::uint64_t tx_frames = 0;
    std::uint64_t rx_dropped = 0; // ring full
    std::uint64_t irqs = 0;
    std::uint64_t polls = 0;
};

class Nic {
public:
    Nic(kernel::Cpu& cpu, unsigned vector, const NetCosts& costs, std::string name, std::size_t ring = 256);
    void attach(Link& link) { link_ = &link; }
    void set_rx_handler(RxHandler fn, void* ctx) {
        rx_fn_ = fn;
        rx_ctx_ = ctx;
    }

    // The device: a frame arrives from the wire and is written into the rx ring.
    void receive_from_wire(const Packet& p);
    // ndo_start_xmit via the driver, in the caller's context (dev_queue_xmit's).
    engine::Task<> xmit(Packet p);

    kernel::Cpu& cpu() { return cpu_; }
    const NetCosts& costs() const { return costs_; }
    const NicStats& stats() const { return stats_; }
    const std::string& name() const { return name_; }

private:
    static engine::Task<> rx_irq(kernel::Cpu& cpu, void* ctx);
    static engine::Task<> net_rx_action(kernel::Cpu& cpu, void* ctx);
    engine::Task<int> napi_poll(int weight);

    kernel::Cpu& cpu_;
    unsigned vector_;
    NetCosts costs_;
    std::string name_;
    Link* link_ = nullptr;
    RxHandler rx_fn_ = nullptr;
    void* rx_ctx_ = nullptr;
    std::vector<Packet> ring_;
    std::size_t head_ = 0, count_ = 0;
    bool irq_enabled_ = true; // the device's rx interrupt (masked while NAPI polls)
    bool napi_scheduled_ = false;
    NicStats stats_;
};

} // namespace kdsim::net
