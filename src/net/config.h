// The network configuration a scenario gives a machine ([machine.nic], [machine.tunnel]): plain
// data, so that system::MachineConfig can hold it without the NIC and tunnel models.
#pragma once

#include "net/tcp_cc.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kdsim::net {

// How the driver hands rx buffers to the stack (drivers/net/ethernet/microchip/lan743x_main.c):
//  FULL_SYNC:    before the 2021 series: every completed buffer is dma_unmap_single'd over its
//                whole size (an invalidation of every line) and a new buffer is mapped (another).
//  PARTIAL_SYNC: a8db76d40e4d + 966df6ded24d: dma_sync_single_for_cpu of only the received
//                length, dma_unmap_single_attrs(DMA_ATTR_SKIP_CPU_SYNC), then the refill mapping.
//  SHORT_SYNC:   an unsafe variant that syncs fewer bytes than were received.
//  PAGE_REUSE:   igb's and mlx5e's page recycling (Linux 6.1 igb_main.c: igb_get_rx_buffer's
//                dma_sync_single_range_for_cpu of the received length, :8806; igb_build_skb on the
//                page and igb_reuse_rx_page; igb_alloc_rx_buffers' dma_sync_single_range_for_device
//                of the buffer, :9063, a page mapped only when none is recycled, :8994-9015; mlx5e's
//                rx page cache): the buffer stays mapped, no new buffer is allocated (the skb's
//                head, built around the page, is the driver's per-frame work).
enum class RxStrategy : std::uint8_t { NONE, FULL_SYNC, PARTIAL_SYNC, SHORT_SYNC, PAGE_REUSE };

struct RxDmaConfig {
    RxStrategy strategy = RxStrategy::NONE; // NONE: no DMA API modelled (coherent, free)
    std::size_t buffer_size = 1536;
    std::size_t short_sync_bytes = 128;    // SHORT_SYNC: bytes synced per frame
    bool multi_buffer = false;             // a frame larger than a buffer spans several descriptors
    // copy = true ([machine.nic] rx_copy): the FEC driver before rx_copybreak (1b7bde6d659d, 2014):
    // every frame is copied into a newly allocated skb (netdev_alloc_skb, skb_copy_to_linear_data
    // of the frame less its FCS) and the ring buffer, kept for life, is mapped for the device again.
    bool copy = false;
};

// Where the driver receives ([machine.nic] rx_mode):
//  NAPI:     the interrupt handler schedules NAPI; the poll walks the ring from NET_RX (today's drivers);
//  NETIF_RX: the driver before NAPI, the FEC of Linux 3.0 (drivers/net/fec.c, NAPI from dc975382d2ef,
//            2013): fec_enet_interrupt loops over IEVENT in hardirq, fec_enet_rx walks the whole ring
//            there (no budget) and hands each skb to netif_rx -> enqueue_to_backlog; the stack runs
//            from NET_RX's process_backlog (net/backlog.h).
enum class RxMode : std::uint8_t { NAPI, NETIF_RX };

// The NAPI poll's loop over the device's events ([machine.nic] poll_loop):
//  NONE:      one pass over the ring (and the tx completions), then napi_complete_done (lan743x);
//  COALESCED, PER_FRAME: the FEC of Linux 6.1 (fec_main.c fec_enet_rx_napi): `do { fec_enet_rx;
//             fec_enet_tx; } while (done < budget && fec_enet_collect_events(fep))`, the loop
//             reading IEVENT (and acking what it read) after each pass, and going on while it
//             holds an event. Which events IEVENT holds while the interrupt coalescing runs is a
//             fact of the ENET hardware, not of the kernel source:
//               COALESCED: RXF (and TXF) are set when the coalescing releases them (at most one
//                 event per rx_usecs, as the interrupt), so a poll goes on only if the period ran out
//                 while it ran;
//               PER_FRAME: every received frame sets RXF at once and the coalescing holds back
//                 only the interrupt line, so a poll goes on while frames keep coming.
//             Each pass that ends below the budget is followed by collect_events' readl and writel
//             of IEVENT (charged with driver = "fec"); fec_enet_rx_queue's per-frame writel of RXF
//             to IEVENT clears RXF.
enum class PollLoop : std::uint8_t { NONE, COALESCED, PER_FRAME };

// An XDP program attached to the driver's receive path ([machine.nic] xdp), run on every frame
// before an skb is built (bpf_prog_run_xdp in the driver's NAPI poll, include/linux/filter.h):
//  NONE: no program;
//  PASS: a program that returns XDP_PASS (a no-op in front of the stack): the frame goes on as without;
//  DROP: a program that returns XDP_DROP: the driver recycles the page into its ring, no skb.
enum class XdpAction : std::uint8_t { NONE, PASS, DROP };

// How a device transmits a GSO skb (NETIF_F_TSO and the driver behind it):
//  NONE:     no TSO: validate_xmit_skb segments it in software (skb_gso_segment) first;
//  HARDWARE: the NIC segments it: one descriptor set per skb, a header per segment on the wire;
//  FEC_SOFTWARE: drivers/net/ethernet/freescale/fec_main.c fec_enet_txq_submit_tso: the driver
//            builds each segment's headers in its DMA'd header buffer (tso_build_hdr), one
//            descriptor per header and one per data chunk (tso_build_data).
enum class TsoKind : std::uint8_t { NONE, HARDWARE, FEC_SOFTWARE };

// The driver whose transmit side a NIC models when its tx buffers go through the DMA API:
//  LAN743X: the default driver figures ([net].driver_xmit, driver_rx_irq), which hold its own MMIO;
//  FEC:     drivers/net/ethernet/freescale/fec_main.c: [net].fec_xmit / fec_irq for the instructions,
//           [net].mmio_posted_write / mmio_read at each register access the driver makes, and the
//           bounce copy of a buffer not aligned to tx_align (fep->tx_align + 1).
enum class NicDriver : std::uint8_t { LAN743X, FEC };

// The transmit side's DMA API use ([machine.nic] tx_dma, driver, tx_align, tx_ring): every tx
// buffer dma_map_single'd (DMA_TO_DEVICE) in ndo_start_xmit, unmapped at tx completion in the
// NAPI poll, the skb freed there.
struct TxDmaConfig {
    NicDriver driver = NicDriver::LAN743X;
    std::size_t tx_align = 0;  // bytes; a buffer at an address not a multiple of it is bounced (0, 1: never)
    std::size_t tx_ring = 512; // descriptors: the bounce buffers' count (txq->tx_bounce[index])
    // bytes each tx buffer is mapped (and so cleaned) for, whatever the frame's length: the 3.0
    // FEC's dma_map_single(bufaddr, FEC_ENET_TX_FRSIZE); 0: the buffer's own length (today's driver)
    std::size_t map_len = 0;
};

// A machine's TCP sysctls ([machine.sysctl], as in /etc/sysctl.conf), kernel defaults.
struct TcpSysctl {
    CongestionAlgorithm congestion_control = CongestionAlgorithm::CUBIC; // net.ipv4.tcp_congestion_control
    std::array<std::uint64_t, 3> rmem{4096, 131072, 6291456};           // net.ipv4.tcp_rmem: min, default, max
    std::array<std::uint64_t, 3> wmem{4096, 16384, 4194304};            // net.ipv4.tcp_wmem
};

// A device's root qdisc ([machine.nic] qdisc, net/qdisc.h):
//  NONE:       no qdisc layer (the key absent): __dev_queue_xmit hands each skb to the driver at
//              once, and the link's queue is txqueuelen and the tx ring together; what kdsim did
//              before the qdisc layer, kept so that a scenario that names no qdisc runs as before;
//  NOQUEUE:    noqueue: no queue in front of the driver; a stopped tx queue drops (NET_XMIT_DROP);
//  PFIFO_FAST: three bands by skb->priority, txqueuelen packets in all (the kernel's default);
//  FQ:         sch_fq.c: per-socket flows, round robin with credits, pacing.
enum class QdiscKind : std::uint8_t { NONE, NOQUEUE, PFIFO_FAST, FQ };

// fq's parameters (tc qdisc add ... fq limit L flow_limit F quantum Q initial_quantum I maxrate R),
// the kernel's defaults for a 1500-byte MTU (psched_mtu = 1514).
struct FqConfig {
    std::uint32_t limit = 10000;          // packets in all (sch->limit)
    std::uint32_t flow_limit = 100;       // packets per flow (flow_plimit)
    std::uint32_t quantum = 2 * 1514;     // credit a flow gets per round (2 * psched_mtu)
    std::uint32_t initial_quantum = 10 * 1514; // a new flow's first credit
    std::uint64_t maxrate = 0;            // bytes/s per flow (flow_max_rate); 0: unlimited (~0UL)
    std::uint64_t timer_slack_ns = 10000; // the watchdog's slack (q->timer_slack, 10 us)
    bool pacing = true;                   // rate_enable (tc ... fq nopacing: false)
};

struct QdiscConfig {
    QdiscKind kind = QdiscKind::NONE;
    std::uint32_t txqueuelen = 1000; // dev->tx_queue_len: pfifo_fast's limit
    FqConfig fq;
};

// The tunnel drivers modelled (net/tunnel.h).
enum class TunnelKind : std::uint8_t { WIREGUARD, ESP };
std::string_view to_string(TunnelKind k);
// The MTU of a tunnel's inner route over a 1500-byte device.
std::uint32_t tunnel_inner_mtu(TunnelKind k);

} // namespace kdsim::net
