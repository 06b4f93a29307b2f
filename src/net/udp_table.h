// Many UDP sockets on one machine and one epoll reader over them, as a server with one connected
// UDP socket per client runs it (a DNS/QUIC/VPN concentrator): net/ipv4/udp.c demultiplexes each
// datagram to its socket (__udp4_lib_rcv -> __udp4_lib_lookup in the UDP hash table, here an
// index by flow number), __udp_enqueue_schedule_skb queues it while sk_rmem_alloc stays within
// sk_rcvbuf (else UDP RcvbufErrors), and sock_def_readable -> ep_poll_callback (fs/eventpoll.c)
// puts the socket on the epoll ready list and wakes the task sleeping in epoll_wait. The reader
// is level-triggered: ep_send_events hands out up to `maxevents` ready sockets, the task reads
// one datagram from each (recvfrom), and a socket that still holds data goes back on the ready
// list's tail.
//
// Every socket is a 16-byte record in one vector (no object, queue or coroutine per socket):
// all datagrams of the table have the same payload, so a socket's queue is its datagram count.
// The ready list is intrusive (an index per socket). Costs: [udp] udp_rcv per datagram in
// NET_RX, the wake-up, and per recvfrom [net] syscall + [udp] udp_recvmsg + the copy
// ([tcp] copy_to_user_cold per byte); epoll_wait is charged as one [net] syscall — the profiles
// have no figure for ep_poll/ep_send_events themselves, which are therefore not charged.
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"
#include "net/net_costs.h"
#include "net/stack.h"

#include <cstdint>
#include <vector>

namespace kdsim::net {

struct UdpFlowSocket {
    std::uint32_t queued = 0;   // datagrams in the receive queue
    std::uint32_t received = 0; // datagrams queued since the start
    std::uint32_t drops = 0;    // datagrams dropped: receive buffer full
    std::uint32_t next_ready = 0; // the epoll ready list: NOT_READY, LAST or the next socket
};

struct UdpTableStats {
    std::uint64_t received = 0, read = 0, bytes_read = 0, rcvbuf_drops = 0;
    std::uint64_t epoll_waits = 0, wakeups = 0;
};

class UdpSocketTable final : public TcpEndpoint {
public:
    static constexpr int MAXEVENTS = 64; // epoll_wait's maxevents

    // `flows` sockets, bound on `stack` to flows first_flow .. first_flow + flows - 1; every
    // datagram carries `length` payload bytes; each socket's sk_rcvbuf is `rcvbuf` bytes.
    UdpSocketTable(Stack& stack, const UdpCosts& udp, const NetCosts& net, double copy_to_user, std::uint32_t first_flow,
                   std::uint32_t flows, std::uint32_t length, std::uint64_t rcvbuf);

    // udp_rcv for the datagram's socket, in NET_RX context.
    engine::Task<> tcp_rcv(kernel::Cpu& cpu, const Packet& p) override;
    // The reader task's body: epoll_wait, then one recvfrom per ready socket, forever.
    engine::Task<> read_loop(kernel::Cpu& cpu, kernel::TaskStruct& self);

    const std::vector<UdpFlowSocket>& sockets() const { return socks_; }
    const UdpTableStats& stats() const { return stats_; }

private:
    static constexpr std::uint32_t NOT_READY = UINT32_MAX;
    static constexpr std::uint32_t LAST = UINT32_MAX - 1;
    void ready_push(std::uint32_t s);
    std::uint32_t ready_pop();

    UdpCosts udp_;
    NetCosts net_;
    double copy_to_user_;
    std::uint32_t first_, length_;
    std::uint64_t rcvbuf_;
    std::vector<UdpFlowSocket> socks_;
    std::uint32_t head_ = LAST, tail_ = LAST;
    kernel::TaskStruct* waiter_ = nullptr;
    UdpTableStats stats_;
};

} // namespace kdsim::net
