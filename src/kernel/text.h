// The kernel code an exec runs: each exec site that models kernel functions names them with a
// Text, so that the CPU's instruction fetch can be charged (kernel/text.cpp lists each Text's
// Linux 6.1 functions, the fast path's call chain read in the 6.1 source). A Text's cycles stay
// the profile's warm-code figure; what the instruction cache adds is the stall of the lines the
// CPU's L1I no longer holds (TextFetch, implemented over the machine's hierarchy by the system).
// A function the build inlined has no code of its own (its bytes are its callers').
#pragma once

#include "engine/time.h"

#include <cstdint>
#include <span>
#include <string_view>

namespace kdsim::kernel {

enum class Text : std::uint8_t {
    NONE,             // no kernel function named: nothing fetched
    IRQ_ENTER,        // irq_enter and the generic handler's entry
    IRQ_EXIT,         // irq_exit, softirq invocation
    TIMER_INTERRUPT,  // hrtimer_interrupt, the tick
    WAKEUP,           // try_to_wake_up and its placement (select_task_rq)
    WAKEUP_ACTIVATE,  // ttwu_do_activate: the enqueue and the preemption check
    CONTEXT_SWITCH,   // __schedule's pick and switch
    NAPI_POLL,        // net_rx_action's poll of one NAPI instance
    DRIVER_IRQ,       // a NIC's rx interrupt: the NAPI schedule
    FEC_INTERRUPT,    // fec_enet_interrupt
    DRIVER_RX,        // a driver's per-frame receive: the skb built around the buffer
    DMA_SYNC_FOR_CPU, // dma_sync_single_for_cpu and the arch's invalidation
    DMA_SYNC_FOR_DEVICE, // dma_sync_single_for_device and the arch's clean
    GRO_RECEIVE,      // napi_gro_receive down to the protocol's gro_receive
    GRO_MERGE,        // skb_gro_receive
    GRO_COMPLETE,     // napi_gro_complete and the protocols' gro_complete
    NETIF_RECEIVE_SKB,// __netif_receive_skb_core and the list receive
    NETIF_RX,         // netif_rx: the backlog enqueue
    PROCESS_BACKLOG,  // process_backlog
    IP_RCV,           // ip_rcv and local delivery
    TCP_V4_RCV,       // tcp_v4_rcv to the receive queue and the reader's wake-up
    TCP_ACK,          // tcp_ack on an established connection
    TCP_SEND_ACK,     // __tcp_send_ack down to ip_finish_output2
    TCP_RECVMSG,      // tcp_recvmsg: the queue walk and the skb's release
    TCP_SENDMSG,      // tcp_sendmsg down to the first transmit
    UDP_RCV,          // __udp4_lib_rcv to the socket's queue and the reader's wake-up
    UDP_RECVMSG,      // udp_recvmsg and the skb's release
    UDP_SENDMSG,      // udp_sendmsg and the append of the data
    DEV_QUEUE_XMIT,   // __dev_queue_xmit and the qdisc
    COPY_TO_USER,     // the arch's copy_to_user and the datagram iterator
    COUNT
};
inline constexpr std::size_t TEXTS = static_cast<std::size_t>(Text::COUNT);

std::string_view to_string(Text t);
// The Linux 6.1 functions of `t` (several architectures' names where they differ: each build
// has code under at most one of them).
std::span<const std::string_view> text_functions(Text t);

// What running a Text costs beyond warm code on one CPU: its instruction fetch stall.
class TextFetch {
public:
    virtual ~TextFetch() = default;
    virtual engine::Cycles fetch(int cpu, Text t) = 0;
};

} // namespace kdsim::kernel
