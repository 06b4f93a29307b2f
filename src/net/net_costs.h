// Per-packet costs of the network paths (the [net] section of a profile), in cycles.
#pragma once

#include "engine/time.h"

#include <cmath>
#include <cstdint>

namespace kdsim::net {

using engine::Cycles;

// Cycles of a per-byte cost over `bytes`, rounded.
inline Cycles per_byte(double cycles_per_byte, std::uint64_t bytes) {
    return static_cast<Cycles>(std::llround(cycles_per_byte * static_cast<double>(bytes)));
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

} // namespace kdsim::net
