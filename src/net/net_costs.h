// Costs of the network paths, in cycles: the [net], [tcp], [udp], [tunnel] and [virt] sections
// of a profile.
#pragma once

#include "engine/time.h"
#include "kernel/costs.h"

#include <cmath>
#include <cstdint>
#include <optional>

namespace kdsim::net {

using engine::Cycles;

// Cycles of a per-byte cost over `bytes`, rounded (half away from zero: std::llround's).
inline Cycles per_byte(double cycles_per_byte, std::uint64_t bytes) {
    const double c = cycles_per_byte * static_cast<double>(bytes);
    if (c >= 0 && c < 0x1p52) [[likely]] { // llround without the call: below 2^52, c - trunc(c) is exact
        const auto whole = static_cast<std::uint64_t>(c);
        return whole + (c - static_cast<double>(whole) >= 0.5 ? 1 : 0);
    }
    return static_cast<Cycles>(std::llround(c));
}

struct NetCosts {
    Cycles syscall = 0;           // system call entry + exit
    Cycles sock_sendmsg = 0;      // packet_sendmsg: skb alloc, copy from user
    Cycles dev_queue_xmit = 0;    // __dev_queue_xmit + qdisc, excluding the driver
    Cycles driver_xmit = 0;       // ndo_start_xmit: descriptor, doorbell
    Cycles driver_rx_irq = 0;     // the device's interrupt handler: ack, mask, napi_schedule
    Cycles napi_poll = 0;         // per poll call: bookkeeping, napi_complete_done, irq re-enable
    Cycles driver_rx = 0;         // per received packet in the driver's poll
    Cycles netif_receive_skb = 0; // protocol demux
    Cycles arp_rcv = 0;           // arp_rcv + arp_process, reply built and handed to dev_queue_xmit
    Cycles packet_rcv = 0;        // AF_PACKET delivery to a socket, wake-up excluded
    Cycles sock_recvmsg = 0;      // packet_recvmsg: dequeue, copy to user
    // Needed by veth pairs only (absent in profiles without them):
    std::optional<Cycles> veth_xmit;       // veth_xmit -> __dev_forward_skb -> __netif_rx -> enqueue_to_backlog
    std::optional<Cycles> process_backlog; // per frame in process_backlog, __netif_receive_skb's demux apart
    // Needed by a NIC with rx_mode = "netif_rx" (with process_backlog above):
    std::optional<Cycles> netif_rx;        // netif_rx -> enqueue_to_backlog per frame, rps_lock's irq save/restore apart
    std::optional<Cycles> fec_irq_loop;    // per pass of the 3.0 fec_enet_interrupt loop, its IEVENT readl/writel apart
    // Needed by a NIC with an XDP program ([machine.nic] xdp):
    std::optional<Cycles> xdp_prog_run; // bpf_prog_run_xdp: the xdp_buff set-up, a trivial JITed program, its verdict
    std::optional<Cycles> xdp_drop;     // per XDP_DROP frame: the descriptor's completion, the page recycled, the refill
    // Needed by a NIC with GRO on (net/gro.h; absent in profiles without them):
    std::optional<Cycles> gro_receive;  // per IP packet: gro_list_prepare, inet_gro_receive, udp4_gro_receive's flush
    std::optional<Cycles> gro_tcp;      // per TCP segment: tcp4_gro_receive, tcp_gro_receive (flow, flags, sequence)
    std::optional<Cycles> gro_merge;    // per segment appended to a held skb (skb_gro_receive)
    std::optional<Cycles> gro_complete; // per skb of several segments passed up (napi_gro_complete)
    // Needed by a device with GSO on (the TCP sender's skbs of several segments):
    std::optional<Cycles> gso_segment;  // per segment skb_gso_segment makes (skb_segment, tcp4_gso_segment)
    // Needed by a NIC with the FEC's software TSO (fec_enet_txq_submit_tso):
    std::optional<Cycles> tso_hdr;      // per segment: tso_build_hdr into the header buffer, its descriptor
    std::optional<Cycles> tso_data;     // per data descriptor: tso_build_data, the chunk's descriptor
    // Needed by a NIC whose tx buffers go through the DMA API ([machine.nic] tx_dma, driver = "fec"):
    std::optional<Cycles> tx_clean;     // tx completion per descriptor reclaimed (status read, bookkeeping)
    std::optional<Cycles> tx_skb_free;  // tx completion per skb: dev_kfree_skb_any / napi_consume_skb
    // Needed by driver = "fec" (fec_main.c): instructions only, MMIO apart
    std::optional<Cycles> fec_xmit;     // fec_enet_start_xmit -> fec_enet_txq_submit_skb / _tso set-up
    std::optional<Cycles> fec_irq;      // fec_enet_interrupt: collect events, napi_schedule
    std::optional<Cycles> mmio_posted_write; // writel(): barrier + a posted Device store (doorbell, IMASK)
    std::optional<Cycles> mmio_read;    // readl(): a non-posted Device load + barrier (FEC_IEVENT)
    // Needed by [machine.nic] coalesce = "fec-itr": Hz, the rate of the FEC's "ahb" clock, which the
    // driver reads into fep->itr_clk_rate and converts coalescing microseconds with (a SoC's figure)
    std::optional<std::uint64_t> fec_itr_clock;
    // A SoC whose interconnect limits the FEC's DMA below its line rate (devices/dma_port.h; the
    // i.MX6Dual/Quad and Solo/DualLite, NXP erratum ERR004512): bytes per second the ENET's
    // transmit fetches and receive writes carry together, and the ENET's receive FIFO in bytes,
    // where frames wait for the port. Both or neither; a FEC (driver = "fec") on such a SoC uses them.
    std::optional<std::uint64_t> fec_bus_bandwidth;
    std::optional<std::uint64_t> fec_rx_fifo;
    // Needed by a device with a qdisc layer ([machine.nic] qdisc = "pfifo_fast" / "fq", net/qdisc.h):
    std::optional<Cycles> pfifo_fast_enqueue; // pfifo_fast_enqueue: band, skb_array_produce, backlog
    std::optional<Cycles> pfifo_fast_dequeue; // pfifo_fast_dequeue: the bands' skb_array_consume
    std::optional<Cycles> fq_enqueue;   // fq_enqueue: fq_classify (socket flow lookup), flow queue add
    std::optional<Cycles> fq_dequeue;   // fq_dequeue: check_throttled, round robin, pacing arithmetic
    std::optional<Cycles> net_tx_action; // per NET_TX_SOFTIRQ run: output_queue splice, root lock
    std::optional<Cycles> qdisc_watchdog; // the watchdog hrtimer's callback: __netif_schedule
    // Needed by a virtio-net guest device (drivers/net/virtio_net.c) for its offloads:
    std::optional<Cycles> virtio_rx_buf;  // receive_mergeable per buffer beyond the first (get_buf, frag, its refill)
    std::optional<Cycles> virtio_tx_sg;   // xmit_skb per scatter-gather entry beyond the second (a GSO skb's frags)
    std::optional<Cycles> virtio_gso_hdr; // virtio_net_hdr_from_skb / _to_skb's GSO fields, per GSO skb
};

// Run-to-run variation of the network datapath ([variation] of a profile; absent: none, and
// every seed gives the same results). Drawn from the run's seeded random streams, so a seed
// still gives byte-identical results.
struct NetVariation {
    std::uint64_t irq_delivery_jitter = 0; // ns: a NIC interrupt reaches its CPU uniformly 0..this after it is raised
};

// Per-segment costs of an established TCP stream ([tcp] of a profile).
struct TcpCosts {
    Cycles ip_rcv = 0;
    Cycles tcp_v4_rcv = 0;
    Cycles tcp_ack_send = 0;
    Cycles tcp_ack_rcv = 0;
    Cycles tcp_sendmsg = 0;
    Cycles tcp_recvmsg = 0;
    Cycles skb_free = 0;
    Cycles rx_buffer_alloc = 0;
    double copy_to_user_cold = 0; // cycles per byte, source not cached
    double copy_from_user = 0;    // cycles per byte, source cached
};

// Per-datagram costs of a UDP stream ([udp] of a profile); copies use [tcp]'s per-byte figures.
struct UdpCosts {
    Cycles udp_sendmsg = 0; // udp_sendmsg -> ip_make_skb -> udp_send_skb -> ip output, copy excluded
    Cycles udp_rcv = 0;     // ip_rcv + __udp4_lib_rcv + udp_queue_rcv_skb (socket queue), wake excluded
    Cycles udp_recvmsg = 0; // udp_recvmsg: dequeue, skb free; copy excluded
};

// [tunnel] figures of a profile, cycles per packet (AEAD work excluded: it comes from [cipher]).
struct TunnelCosts {
    Cycles wg_xmit = 0;      // wg_xmit + send_staged_packets: skb checks, queueing, per packet
    Cycles wg_encrypt = 0;   // encrypt worker per packet beyond the AEAD: skb_cow, padding, header
    Cycles wg_tx = 0;        // tx worker per packet: keepalive check, udp_tunnel_xmit_skb (IP+UDP)
    Cycles wg_rx = 0;        // NET_RX: udp_rcv -> encap_rcv -> wg_packet_receive -> consume_data
    Cycles wg_decrypt = 0;   // decrypt worker per packet beyond the AEAD
    Cycles wg_rx_poll = 0;   // peer NAPI per packet: counter_validate, endpoint, napi_gro_receive
    Cycles esp_output = 0;   // xfrm_output + esp_output + esp_output_tail, AEAD excluded
    Cycles esp_input = 0;    // xfrm4_rcv + xfrm_input + esp_input + esp_input_done2
    Cycles aead_request = 0; // crypto_aead_{en,de}crypt: request, scatterlist walk set-up
    Cycles cryptd_enqueue = 0;   // cryptd_enqueue_request under BH off (queue_work apart)
    Cycles cryptd_complete = 0;  // cryptd_*_crypt around the child: subrequest, ->complete dispatch, refcount
    Cycles simd_wrapper = 0;     // crypto/simd.c's synchronous path: subrequest to the inner driver
    double csum_partial = 0;     // the software Internet checksum (csum_partial), cycles per byte, warm
    kernel::WorkqueueCosts workqueue;
};

// [virt] figures of the host profile: the vhost-net backend and the injection it starts, cycles
// of the host's cores (the vCPUs' exits and deliveries are [kvm]: kvm/kvm.h).
struct VirtCosts {
    Cycles virq_inject = 0;     // host: irqfd -> kvm_set_irq -> vGIC list register, vCPU kick
    Cycles vhost_tx = 0;        // host: handle_tx per frame, tun_get_user, skb build
    Cycles vhost_rx = 0;        // host: handle_rx per frame, descriptor handling
    double copy_per_byte = 0;   // host: copy between guest memory and skb, cycles per byte
    Cycles tun_xmit = 0;        // host: tun_net_xmit per frame (ptr_ring produce)
    Cycles vhost_desc = 0;      // host: handle_tx per descriptor beyond the second of a chain (indirect table walk)
    Cycles vhost_rx_buf = 0;    // host: handle_rx per guest rx buffer beyond the first (get_rx_bufs' vhost_get_vq_desc)
    Cycles vnet_hdr_gso = 0;    // host: virtio_net_hdr_to_skb / _from_skb's GSO fields, per GSO skb (tun)
};

// Per-packet costs of netfilter on the IPv4 receive path ([netfilter] of a profile).
struct NetfilterCosts {
    Cycles ip_rcv_core = 0;     // ip_rcv -> ip_rcv_core up to the NF_INET_PRE_ROUTING hook
    Cycles drop_rule = 0;       // nf_hook_slow -> the table's hook -> ipt_do_table: one matching DROP rule
    Cycles nf_conntrack_in = 0; // the conntrack hooks at PRE_ROUTING: tuple, a hash lookup that finds no
                                // confirmed entry, the l4 tracker's packet handling
    Cycles init_conntrack = 0;  // a new, unconfirmed entry: slab allocation, tuples, extensions
    Cycles kfree_skb = 0;       // NF_DROP: kfree_skb of the dropped packet (skb and its buffer)
    Cycles nf_ct_destroy = 0;   // the skb's reference was the entry's last: its destruction and free
};

// An iptables DROP rule at NF_INET_PRE_ROUTING for every IPv4 packet: in the raw table (before
// connection tracking), or after nf_conntrack_in (conntrack on, the rule in a later table). A
// dropped packet's new conntrack entry is never confirmed (ipv4_confirm runs at LOCAL_IN and
// POST_ROUTING), so a flow whose every packet is dropped never has an entry to find: each of its
// packets creates one and its free destroys it.
enum class PreroutingDrop : std::uint8_t { RAW, AFTER_CONNTRACK };

} // namespace kdsim::net
