// virtio-net's offload features and the guest's receive buffers, as Linux 6.1 and QEMU set them up:
//
// Features (include/uapi/linux/virtio_net.h): a device offers them (QEMU's virtio-net-pci with
// vhost=on offers every one modelled here; csum=off, host_tso4=off, ... turn one off) and the
// guest driver accepts what it knows. QEMU's virtio_net_get_features drops a feature whose
// prerequisite is off: HOST_TSO4/6 without CSUM, GUEST_TSO4/6 without GUEST_CSUM (the virtio
// spec's "requires"). What the negotiated set makes of the two devices:
//  - the guest's virtio-net (virtnet_probe): CSUM gives NETIF_F_HW_CSUM | NETIF_F_SG, HOST_TSO4
//    NETIF_F_TSO: without it the guest's stack segments a GSO skb before start_xmit;
//  - the host's tap (QEMU's virtio_net_apply_guest_offloads -> TUNSETOFFLOAD): GUEST_CSUM gives
//    TUN_F_CSUM (NETIF_F_HW_CSUM | NETIF_F_SG), GUEST_TSO4 TUN_F_TSO4 (NETIF_F_TSO): without it
//    the host's stack segments a GSO skb before tun_net_xmit;
//  - the guest's receive buffers (virtnet_probe): MRG_RXBUF: mergeable buffers; else, with
//    GUEST_TSO4/6, "big packets" (one buffer of MAX_SKB_FRAGS pages per packet); else small
//    buffers (one GOOD_PACKET_LEN frame each).
// The model carries IPv4 only: the TSO6 features are negotiated and reported but move nothing.
//
// Mergeable buffers (add_recvbuf_mergeable, get_mergeable_buf_len, mergeable_min_buf_len): each
// buffer is carved from the receive queue's page_frag (32 KiB pages); its length is the EWMA of
// received packet lengths (weight 1/64) plus the 12-byte virtio_net_hdr_mrg_rxbuf, clamped to
// [min_buf_len, PAGE_SIZE - hdr] and rounded up to L1_CACHE_BYTES; a buffer that leaves less
// than its own length in the page_frag takes the rest too. vhost's get_rx_bufs takes buffers
// until they hold the packet and its header (num_buffers in the header).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace kdsim::net {

struct VirtioFeatures {
    bool csum = true;       // VIRTIO_NET_F_CSUM: the device takes partially checksummed packets
    bool guest_csum = true; // VIRTIO_NET_F_GUEST_CSUM: the guest takes them
    bool host_tso4 = true;  // VIRTIO_NET_F_HOST_TSO4: the device takes TCPv4 GSO skbs
    bool host_tso6 = true;  // VIRTIO_NET_F_HOST_TSO6
    bool guest_tso4 = true; // VIRTIO_NET_F_GUEST_TSO4: the guest takes TCPv4 GSO skbs
    bool guest_tso6 = true; // VIRTIO_NET_F_GUEST_TSO6
    bool mrg_rxbuf = true;  // VIRTIO_NET_F_MRG_RXBUF: a packet may span several rx buffers

    // QEMU's property names ([[link]] features = { host_tso4 = false, ... }), in member order.
    static constexpr std::array<std::string_view, 7> NAMES{"csum",      "guest_csum", "host_tso4", "host_tso6",
                                                           "guest_tso4", "guest_tso6", "mrg_rxbuf"};
    bool& operator[](std::size_t i);
    bool operator[](std::size_t i) const { return const_cast<VirtioFeatures&>(*this)[i]; }

    // What the guest ends up with: prerequisites enforced (virtio_net_get_features).
    VirtioFeatures negotiated() const;
    bool guest_tso() const { return csum && host_tso4; }   // the guest device's NETIF_F_TSO
    bool tap_tso() const { return guest_csum && guest_tso4; } // the tap's NETIF_F_TSO (TUN_F_TSO4)
};

// How the guest posts and takes receive buffers (receive_mergeable / receive_big / receive_small).
enum class VirtioRxMode : std::uint8_t { SMALL, BIG, MERGEABLE };
VirtioRxMode rx_mode(const VirtioFeatures& negotiated);

inline constexpr std::uint32_t VNET_HDR_LEN = 12;      // sizeof(struct virtio_net_hdr_mrg_rxbuf)
inline constexpr std::uint32_t GOOD_PACKET_LEN = 1518; // ETH_HLEN + VLAN_HLEN + ETH_DATA_LEN
inline constexpr std::uint32_t VIRTIO_PAGE_SIZE = 4096;
inline constexpr std::uint32_t PAGE_FRAG_SIZE = 32768; // SKB_FRAG_PAGE_ORDER: the page_frag's compound page
inline constexpr std::uint32_t L1_CACHE_BYTES = 64;
inline constexpr std::uint32_t MAX_SKB_FRAGS = 17;     // big packets: pages per buffer

// The guest's mergeable rx buffer sizes: the EWMA of packet lengths and the page_frag's fill.
class MergeableBufs {
public:
    // get_mergeable_buf_len + add_recvbuf_mergeable: the next posted buffer's length (with its
    // share of the page_frag's hole when that is too small for another buffer).
    std::uint32_t next_len();
    // receive_mergeable: ewma_pkt_len_add(head_skb->len).
    void add_packet(std::uint32_t len);
    std::uint32_t ewma() const { return static_cast<std::uint32_t>(ewma_); }

private:
    std::uint64_t ewma_ = 0;  // DECLARE_EWMA(pkt_len, 0, 64): precision 0, weight 1/64
    std::uint32_t offset_ = PAGE_FRAG_SIZE; // the page_frag's offset: full, so the first buffer refills it
};

// The scatter-gather entries of a frame on the guest's tx virtqueue (xmit_skb with
// any_header_sg: the header with the linear part, then each page frag; tcp_sendmsg fills
// 32 KiB page frags, so a TCP skb's payload spans ceil(payload / 32 KiB) of them).
std::uint32_t tx_sg_entries(std::uint32_t tcp_payload);

} // namespace kdsim::net
