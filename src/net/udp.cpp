#include "net/udp.h"

#include "kernel/irqflags.h"
#include "kernel/sched.h"
#include "kernel/softirq.h"
#include "net/tcp.h"

#include <algorithm>
#include <cmath>

namespace kdsim::net {

using kernel::Cat;


UdpSource::UdpSource(Stack& stack, const UdpCosts& costs, const NetCosts& net, double copy_from_user,
                     std::uint32_t length, std::uint64_t bitrate, std::uint32_t flow)
    : stack_(stack), costs_(costs), net_(net), copy_from_user_(copy_from_user), length_(length), bitrate_(bitrate),
      flow_(flow) {
    stack_.bind_tcp(flow_, *this);
}

// iperf3 -u: datagram n is due at start + n * length * 8 / bitrate; when ahead of schedule the
// sender sleeps until the next one is due (iperf3 paces in its main loop the same way).
// Models: udp_sendmsg() (net/ipv4/udp.c)
engine::Task<> UdpSource::send_loop(kernel::Cpu& start_cpu, engine::Tick stop_at, kernel::TaskStruct* self) {
    const kernel::ThisCpu cpu = self ? kernel::ThisCpu::of(*self, start_cpu) : kernel::ThisCpu(start_cpu);
    const engine::Tick start = cpu->now();
    const auto due = [&](std::uint64_t n) {
        return start + static_cast<engine::Tick>(static_cast<unsigned __int128>(n) * length_ * 8 * engine::PS_PER_S /
                                                 bitrate_);
    };
    while (cpu->now() < stop_at) {
        if (cpu->now() < due(sent_)) {
            co_await kernel::hrtimer_sleep_until(cpu, due(sent_));
            continue;
        }
        co_await kernel::syscall_enter(cpu);
        co_await cpu->exec(net_.syscall, Cat::SYSCALL);
        Packet p = transport_packet(FrameKind::UDP_DATA, length_, UDP_IP_HEADERS, sent_, flow_);
        co_await cpu->exec(ip_append_data(cpu, p), Cat::COPY);
        // udp_send_skb's UDP header, ip_make_skb's IP header, neigh_hh_output's Ethernet header:
        // written in front of the payload (with a hierarchy)
        co_await cpu->exec(costs_.udp_sendmsg + stack_.touch(cpu, p.data, 0, ETH_HEADER + UDP_IP_HEADERS), Cat::PROTOCOL,
                          kernel::Text::UDP_SENDMSG);
        ++sent_;
        co_await stack_.ip_output(cpu, p);
        co_await kernel::syscall_exit(cpu);
    }
}

std::size_t UdpSource::head_size(std::uint32_t length) {
    const std::size_t need = LL_RESERVED + 15 + UDP_IP_HEADERS + std::size_t{length} + 320;
    std::size_t size = 32;
    while (size < need) size *= 2;
    return size;
}

// udp_sendmsg -> ip_make_skb -> __ip_append_data: a datagram that fits SKB_MAX_ALLOC is one linear
// skb (sock_alloc_send_skb of the headers and the data, skb_reserve(hh_len)), and getfrag
// (ip_generic_getfrag: copy_from_user, or csum_and_copy_from_user without checksum offload; the
// model charges both alike) copies the payload behind the IP and UDP headers. With a hierarchy,
// [memory].copy per byte plus the stalls of reading the user buffer's lines and writing the head's;
// the heads cycle through a ring of as many as the send buffer holds (the skbs a socket may have in
// flight; not modelled: SLUB handing a head freed at tx completion out again first). Without one,
// the profile's copy_from_user per byte, as before.
// Models: __ip_append_data() (net/ipv4/ip_output.c)
Cycles UdpSource::ip_append_data(kernel::Cpu& cpu, Packet& p) {
    mem::MemorySystem* m = stack_.memory();
    if (!m) return per_byte(copy_from_user_, length_);
    if (heads_ == 0) {
        head_size_ = head_size(length_);
        head_count_ = head_ring(length_);
        heads_ = m->alloc(head_size_ * head_count_, std::max<std::size_t>(head_size_, 4096));
        // each head physically contiguous (a slab object, kmalloc_large's pages): page_placement.h
        if (PagePlacement* pp = stack_.page_placement()) pp->add(heads_, head_size_ * head_count_, head_size_);
    }
    const mem::Addr head = heads_ + head_next_ * head_size_;
    head_next_ = (head_next_ + 1) % head_count_;
    p.data = head + LL_RESERVED - ETH_HEADER; // the frame: the Ethernet header ends at hh_len
    return stack_.copy_from_user(cpu, user_, head + LL_RESERVED + UDP_IP_HEADERS, length_, copy_from_user_);
}

UdpSink::UdpSink(Stack& stack, const UdpCosts& costs, const NetCosts& net, double copy_to_user, std::uint64_t rcvbuf,
                 std::uint32_t flow)
    : stack_(stack), costs_(costs), net_(net), copy_to_user_(copy_to_user), rcvbuf_(rcvbuf) {
    stack.bind_tcp(flow, *this);
}

// Models: udp_queue_rcv_skb() (net/ipv4/udp.c)
engine::Task<> UdpSink::tcp_rcv(kernel::Cpu& cpu, const Packet& p) {
    co_await cpu.exec(costs_.udp_rcv + stack_.frame_read(cpu, p, ETH_HEADER, ETH_HEADER + UDP_IP_HEADERS) +
                          cpu.text(kernel::Text::IP_RCV),
                      Cat::PROTOCOL, kernel::Text::UDP_RCV);
    if (queued_bytes_ + p.payload > rcvbuf_) {
        ++drops_; // __udp_queue_rcv_skb: sk_rmem_alloc over sk_rcvbuf
        co_return;
    }
    queued_bytes_ += p.payload;
    queue_.push_back(Datagram{QueuedSkb{p.payload, p.data ? p.data + ETH_HEADER + UDP_IP_HEADERS : 0}, p.seq});
    ++received_;
    if (reader_) {
        kernel::TaskStruct* t = reader_;
        reader_ = nullptr;
        co_await kernel::try_to_wake_up(cpu, *t); // sock_def_readable
    }
}

// Models: udp_recvmsg() (net/ipv4/udp.c)
engine::Task<> UdpSink::read_loop(kernel::Cpu& start, kernel::TaskStruct& self) {
    const kernel::ThisCpu cpu = kernel::ThisCpu::of(self, start); // a movable reader: its CPU at each use
    for (;;) {
        co_await kernel::syscall_enter(cpu);
        while (queue_.empty()) {
            reader_ = &self;
            co_await cpu->block();
        }
        co_await cpu->exec(net_.syscall, Cat::SYSCALL);
        const Datagram d = queue_.front();
        const QueuedSkb& skb = d.skb;
        const std::uint32_t n = skb.len;
        queue_.pop_front();
        max_seq_read_ = read_++ ? std::max(max_seq_read_, d.seq) : d.seq;
        queued_bytes_ -= n;
        co_await cpu->exec(costs_.udp_recvmsg, Cat::PROTOCOL, kernel::Text::UDP_RECVMSG);
        co_await cpu->exec(stack_.copy_to_user(cpu, skb, user_, copy_to_user_), Cat::COPY, kernel::Text::COPY_TO_USER);
        bytes_read_ += n;
        co_await kernel::syscall_exit(cpu);
    }
}

} // namespace kdsim::net
