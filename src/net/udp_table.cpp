#include "net/udp_table.h"

#include "kernel/irqflags.h"
#include "kernel/sched.h"

#include <array>

namespace kdsim::net {

using kernel::Cat;

UdpSocketTable::UdpSocketTable(Stack& stack, const UdpCosts& udp, const NetCosts& net, double copy_to_user,
                               std::uint32_t first_flow, std::uint32_t flows, std::uint32_t length, std::uint64_t rcvbuf)
    : udp_(udp), net_(net), copy_to_user_(copy_to_user), first_(first_flow), length_(length), rcvbuf_(rcvbuf),
      socks_(flows, UdpFlowSocket{0, 0, 0, NOT_READY}) {
    stack.bind_flow_range(first_flow, flows, *this);
}

// Models: ep_poll_callback() (fs/eventpoll.c)
void UdpSocketTable::ready_push(std::uint32_t s) {
    socks_[s].next_ready = LAST;
    if (tail_ == LAST) head_ = s;
    else socks_[tail_].next_ready = s;
    tail_ = s;
}

std::uint32_t UdpSocketTable::ready_pop() {
    const std::uint32_t s = head_;
    head_ = socks_[s].next_ready;
    if (head_ == LAST) tail_ = LAST;
    socks_[s].next_ready = NOT_READY;
    return s;
}

// Models: __udp4_lib_rcv() (net/ipv4/udp.c)
engine::Task<> UdpSocketTable::tcp_rcv(kernel::Cpu& cpu, const Packet& p) {
    co_await cpu.exec(udp_.udp_rcv + cpu.text(kernel::Text::IP_RCV), Cat::PROTOCOL, kernel::Text::UDP_RCV);
    UdpFlowSocket& sk = socks_[p.flow - first_];
    if (static_cast<std::uint64_t>(sk.queued) * length_ + p.payload > rcvbuf_) {
        ++sk.drops; // __udp_enqueue_schedule_skb: sk_rmem_alloc over sk_rcvbuf
        ++stats_.rcvbuf_drops;
        co_return;
    }
    ++sk.queued;
    ++sk.received;
    ++stats_.received;
    if (sk.next_ready == NOT_READY) ready_push(p.flow - first_); // ep_poll_callback
    if (waiter_) {
        kernel::TaskStruct* t = waiter_;
        waiter_ = nullptr;
        ++stats_.wakeups;
        co_await kernel::try_to_wake_up(cpu, *t);
    }
}

// Models: ep_poll() (fs/eventpoll.c)
engine::Task<> UdpSocketTable::read_loop(kernel::Cpu& cpu, kernel::TaskStruct& self) {
    std::array<std::uint32_t, MAXEVENTS> events{};
    for (;;) {
        co_await kernel::syscall_enter(cpu); // epoll_wait
        while (head_ == LAST) {
            waiter_ = &self;
            co_await cpu.block();
        }
        co_await cpu.exec(net_.syscall, Cat::SYSCALL);
        ++stats_.epoll_waits;
        int n = 0;
        while (n < MAXEVENTS && head_ != LAST) events[static_cast<std::size_t>(n++)] = ready_pop();
        co_await kernel::syscall_exit(cpu);
        for (int i = 0; i < n; ++i) {
            const std::uint32_t s = events[static_cast<std::size_t>(i)];
            co_await kernel::syscall_enter(cpu); // recvfrom
            co_await cpu.exec(net_.syscall, Cat::SYSCALL);
            --socks_[s].queued;
            co_await cpu.exec(udp_.udp_recvmsg, Cat::PROTOCOL, kernel::Text::UDP_RECVMSG);
            co_await cpu.exec(per_byte(copy_to_user_, length_), Cat::COPY, kernel::Text::COPY_TO_USER);
            ++stats_.read;
            stats_.bytes_read += length_;
            co_await kernel::syscall_exit(cpu);
            if (socks_[s].queued > 0 && socks_[s].next_ready == NOT_READY) ready_push(s); // level-triggered
        }
    }
}

} // namespace kdsim::net
