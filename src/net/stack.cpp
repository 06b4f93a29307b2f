#include "net/stack.h"

#include "kernel/irqflags.h"
#include "kernel/sched.h"
#include "kernel/softirq.h"

namespace kdsim::net {

engine::Task<> nothing() { co_return; }

using kernel::Cat;

Stack::Stack(NetDevice& dev) : nic_(dev) {
    nic_.set_rx_handler(&Stack::netif_receive, this);
    sk_queue_.reserve(64);
}

void Stack::add_device(NetDevice& dev) {
    if (more_.empty()) { // the first device now says which device its frames came in on, too
        more_.push_back(std::make_unique<DevCtx>(DevCtx{this, &nic_}));
        nic_.set_rx_handler(&Stack::netif_receive_on, more_.back().get());
    }
    more_.push_back(std::make_unique<DevCtx>(DevCtx{this, &dev}));
    dev.set_rx_handler(&Stack::netif_receive_on, more_.back().get());
}

// A frame of a machine with several devices: the flow's route is the device it came in on.
// (A plain function: the Task it returns is netif_receive's, awaited by the caller at once.)
engine::Task<> Stack::netif_receive_on(kernel::Cpu& cpu, void* ctx, const Packet& p) {
    auto& d = *static_cast<DevCtx*>(ctx);
    Stack& s = *d.stack;
    if (carries_flow(p.kind)) {
        if (s.flow_dev_.size() <= p.flow) s.flow_dev_.resize(p.flow + std::size_t{1}, nullptr);
        s.flow_dev_[p.flow] = d.dev;
    }
    return netif_receive(cpu, &s, p);
}

Cycles Stack::frame_read(kernel::Cpu& cpu, const Packet& p, std::uint32_t from, std::uint32_t to) {
    if (!memory_ || p.data == 0 || to <= from) return 0;
    return memory_->read(cpu.id(), cpu.now(), p.data + from, to - from);
}

mem::Addr Stack::place_user_buffer() { return memory_->alloc(UserBuffer::SIZE); }

// skb_copy_to_page_nocache's copy from the user buffer (copy_from_user: arch/arm64/lib/copy_from_user.S).
// Models: skb_copy_to_page_nocache() (include/net/sock.h)
Cycles Stack::copy_from_user(kernel::Cpu& cpu, UserBuffer& ub, mem::Addr dst, std::uint32_t len, double cached_cpb) {
    if (!memory_ || dst == 0) return per_byte(cached_cpb, len);
    return kernel_copy(cpu, user_bytes(ub, len), dst, len);
}

// Models: skb_copy_bits() (net/core/skbuff.c)
Cycles Stack::kernel_copy(kernel::Cpu& cpu, mem::Addr src, mem::Addr dst, std::uint32_t len) {
    if (len != copy_len_) { // the same length rounds to the same cycles: computed once per length change
        copy_len_ = len;
        copy_loop_ = per_byte(copy_warm_, len);
    }
    const Cycles loop = copy_loop_;
    const Cycles rd = memory_->consume(cpu.id(), cpu.now(), mem::Access{src, len, false, 0}, loop);
    const Cycles wr = memory_->write(cpu.id(), cpu.now() + cpu.clock().to_ticks(rd), dst, len);
    return loop + rd + wr;
}

Cycles Stack::touch(kernel::Cpu& cpu, mem::Addr a, std::uint32_t read, std::uint32_t write, Cycles consumed_by) {
    return touch(cpu, a, read, a, write, consumed_by);
}

Cycles Stack::touch(kernel::Cpu& cpu, mem::Addr src, std::uint32_t read, mem::Addr dst, std::uint32_t write,
                    Cycles consumed_by) {
    if (!memory_ || src == 0 || dst == 0) return 0;
    const Cycles rd =
        read ? memory_->consume(cpu.id(), cpu.now(), mem::Access{src, read, false, 0}, consumed_by) : 0;
    return rd + (write ? memory_->write(cpu.id(), cpu.now() + cpu.clock().to_ticks(rd), dst, write) : 0);
}

// skb_gso_segment of a GSO skb: the cost of every segment it makes; a device without
// NETIF_F_SG also gets each segment's data copied into a linear skb (skb_segment's !sg path).
// Models: skb_segment() (net/core/skbuff.c)
engine::Task<> Stack::skb_gso_segment(kernel::Cpu& cpu, const Packet& p) {
    co_await cpu.exec(*nic_.costs().gso_segment * p.gso_segs, Cat::PROTOCOL);
    if (!nic_.sg()) co_await cpu.exec(per_byte(nic_.copy_per_byte(), p.payload), Cat::COPY);
}

// A GSO skb for a device without TSO is segmented first (validate_xmit_skb), and
// dev_hard_start_xmit hands the segments to the driver one by one; any other skb goes to the
// driver as it is (a plain function: the Task is the driver's or the segmenting path's).
// Models: validate_xmit_skb(), dev_hard_start_xmit() (net/core/dev.c)
engine::Task<> Stack::dev_hard_start_xmit(kernel::Cpu& cpu, NetDevice& dev, const Packet& p) {
    if (p.gso_segs > 1 && dev.tso() == TsoKind::NONE) return xmit_segments(cpu, dev, p);
    return dev.xmit(cpu, p);
}

engine::Task<> Stack::xmit_segments(kernel::Cpu& cpu, NetDevice& dev, const Packet& p) {
    co_await skb_gso_segment(cpu, p);
    dev.count_gso_segmented(p.gso_segs);
    for (std::uint32_t i = 0; i < p.gso_segs; ++i) {
        Packet s = gso_segment_of(p, i);
        s.truesize = i + 1 == p.gso_segs ? p.truesize : 0; // the socket's charge goes with the last
        co_await dev.xmit(cpu, s);
    }
}

// With a qdisc, __dev_xmit_skb queues the skb and runs the qdisc (net/qdisc.h); without one the
// driver takes it at once, all of __dev_queue_xmit in the device's Task when the skb needs no
// software segmenting (NetDevice::dev_queue_xmit_noqueue: the same steps in the same order). A
// plain function: the Task is the device's or the one below.
// Models: __dev_queue_xmit() (net/core/dev.c)
XmitAwaiter Stack::dev_queue_xmit(kernel::Cpu& cpu, const Packet& p) {
    NetDevice& dev = route(p);
    // (no qdisc, no segmenting: the awaits below would be exactly those of dev_queue_xmit_noqueue)
    if (!dev.txq() && !(p.gso_segs > 1 && dev.tso() == TsoKind::NONE)) {
        if (const XmitSteps steps = dev.noqueue_steps()) return {steps, &dev, cpu, p};
        return dev.dev_queue_xmit_noqueue(cpu, p);
    }
    return dev_queue_xmit_qdisc(cpu, dev, p);
}

namespace {
// The await a device's steps stopped at (XmitRun::suspend), for xmit_rest's frame.
struct XmitStop {
    XmitRun& r;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) noexcept { r.suspend(h); }
    void await_resume() const noexcept {}
};
} // namespace

engine::Task<bool> xmit_rest(XmitRun& r, XmitSteps steps) {
    do co_await XmitStop{r};
    while (!steps(r));
    co_return r.sent;
}

engine::Task<bool> NetDevice::dev_queue_xmit_noqueue(kernel::Cpu& cpu, const Packet& p) {
    co_await kernel::local_bh_disable(cpu); // rcu_read_lock_bh()
    co_await cpu.exec(costs().dev_queue_xmit, Cat::PROTOCOL, kernel::Text::DEV_QUEUE_XMIT);
    co_await xmit(cpu, p);
    co_await kernel::local_bh_enable(cpu);
    co_return true;
}

engine::Task<bool> Stack::dev_queue_xmit_qdisc(kernel::Cpu& cpu, NetDevice& dev, const Packet& p) {
    co_await kernel::local_bh_disable(cpu); // rcu_read_lock_bh()
    co_await cpu.exec(dev.costs().dev_queue_xmit, Cat::PROTOCOL, kernel::Text::DEV_QUEUE_XMIT);
    bool sent = true;
    if (TxQueue* q = dev.txq()) sent = co_await q->dev_xmit_skb(cpu, p);
    else co_await dev_hard_start_xmit(cpu, dev, p);
    co_await kernel::local_bh_enable(cpu);
    co_return sent;
}

void Stack::attach_txq(NetDevice& dev, std::vector<NetTx*> per_cpu) {
    if (!dev.txq()) return;
    drivers_.push_back(std::make_unique<DevDriver>(this, &dev));
    net_tx_ = per_cpu;
    dev.txq()->attach(*drivers_.back(), std::move(per_cpu));
}

void Stack::skb_free(kernel::Cpu& cpu, const Packet& p) {
    if (p.kind == FrameKind::TCP_DATA && p.flow < tcp_.size() && tcp_[p.flow]) tcp_[p.flow]->tcp_wfree(cpu, p.truesize);
}

void Stack::tsq_schedule(kernel::Cpu& cpu, TcpEndpoint& ep) {
    net_tx_.at(static_cast<std::size_t>(cpu.id()))->tsq_schedule(ep);
}

// Through a tunnel the skb goes to the tunnel's output as it is, a GSO skb too: the tunnel
// segments it (wg_xmit's, xfrm_output_gso's skb_gso_segment). A plain function: the Task is
// dev_queue_xmit's, which reads the caller's skb in place, or the tunnel path's, which copies it.
// Models: ip_output() (net/ipv4/ip_output.c)
XmitAwaiter Stack::ip_output(kernel::Cpu& cpu, const Packet& p) {
    if (!tunnel_) return dev_queue_xmit(cpu, p);
    return tunnel_output(cpu, p);
}

engine::Task<bool> Stack::tunnel_output(kernel::Cpu& cpu, const Packet& p) { return tunnel_xmit(cpu, p); }

engine::Task<bool> Stack::tunnel_xmit(kernel::Cpu& cpu, Packet p) {
    co_await tunnel_->xmit(cpu, p);
    co_return true;
}

bool Stack::can_gso() const { return nic_.gso() && (!tunnel_ || tunnel_->gso_ok()); }

// A plain function: the Task is the endpoint's receive (nothing() when no endpoint takes it).
// Models: ip_local_deliver() (net/ipv4/ip_input.c)
engine::Task<> Stack::ip_local_deliver(kernel::Cpu& cpu, const Packet& p) {
    if (p.kind != FrameKind::TCP_DATA && p.kind != FrameKind::TCP_ACK && p.kind != FrameKind::UDP_DATA) return nothing();
    if (p.flow < tcp_.size() && tcp_[p.flow]) return tcp_[p.flow]->tcp_rcv(cpu, p);
    for (const FlowRange& r : ranges_)
        if (p.flow - r.first < r.count) return r.ep->tcp_rcv(cpu, p);
    return nothing();
}

// ip_rcv() up to NF_HOOK(NF_INET_PRE_ROUTING), whose rule says NF_DROP; kfree_skb() of the packet.
// With conntrack on, nf_conntrack_in() finds no confirmed entry for the packet's tuple: the
// entries of the earlier packets of its flow were never confirmed (they were dropped before
// ipv4_confirm), so init_conntrack() makes a new one, and the skb's free puts its last reference.
// Models: ip_rcv_core() (net/ipv4/ip_input.c)
engine::Task<> Stack::nf_prerouting_drop(kernel::Cpu& cpu) {
    const bool conntrack = nf_drop_ == PreroutingDrop::AFTER_CONNTRACK;
    co_await cpu.exec(nf_costs_.ip_rcv_core, Cat::PROTOCOL);
    if (conntrack) co_await nf_conntrack_in(cpu);
    co_await cpu.exec(nf_costs_.drop_rule, Cat::PROTOCOL);
    co_await cpu.exec(nf_costs_.kfree_skb, Cat::PROTOCOL);
    if (conntrack) co_await cpu.exec(nf_costs_.nf_ct_destroy, Cat::PROTOCOL); // nf_conntrack_put() -> nf_ct_destroy()
    ++nf_dropped_;
}

// The lookup in the confirmed-entry hash misses (resolve_normal_ct), so the packet gets a new
// entry; it is never inserted in the hash.
// Models: nf_conntrack_in() (net/netfilter/nf_conntrack_core.c)
engine::Task<> Stack::nf_conntrack_in(kernel::Cpu& cpu) {
    co_await cpu.exec(nf_costs_.nf_conntrack_in, Cat::PROTOCOL);
    co_await cpu.exec(nf_costs_.init_conntrack, Cat::PROTOCOL);
    ++nf_ct_created_;
}

// A plain function: the Task is the protocol's receive the frame's kind picks.
// Models: __netif_receive_skb() (net/core/dev.c)
engine::Task<> Stack::netif_receive(kernel::Cpu& cpu, void* ctx, const Packet& p) {
    auto& s = *static_cast<Stack*>(ctx);
    if (s.nf_on_ && p.kind != FrameKind::ARP_REQUEST && p.kind != FrameKind::ARP_REPLY) return s.nf_prerouting_drop(cpu);
    switch (p.kind) {
    case FrameKind::ARP_REQUEST: return s.arp_rcv(cpu, p);
    case FrameKind::ARP_REPLY: return s.packet_rcv(cpu, p);
    case FrameKind::TCP_DATA:
    case FrameKind::TCP_ACK:
    case FrameKind::UDP_DATA: // ip_local_deliver's first lookup here, without its call
        if (p.flow < s.tcp_.size() && s.tcp_[p.flow]) return s.tcp_[p.flow]->tcp_rcv(cpu, p);
        return s.ip_local_deliver(cpu, p);
    case FrameKind::WG_DATA:
    case FrameKind::ESP:
        if (s.tunnel_) return s.tunnel_->rcv(cpu, p);
        break;
    }
    return nothing();
}

// arp_process: a request for one of our addresses is answered at once, from NET_RX.
// Models: arp_rcv() (net/ipv4/arp.c)
engine::Task<> Stack::arp_rcv(kernel::Cpu& cpu, const Packet& p) {
    co_await cpu.exec(nic_.costs().arp_rcv, Cat::PROTOCOL);
    Packet reply = p;
    reply.kind = FrameKind::ARP_REPLY;
    ++arp_replies_;
    co_await dev_queue_xmit(cpu, reply);
}

// packet_rcv: queue to the socket (skb_queue_tail under spin_lock_irqsave), then
// sock_def_readable wakes the reader.
// Models: packet_rcv() (net/packet/af_packet.c)
engine::Task<> Stack::packet_rcv(kernel::Cpu& cpu, const Packet& p) {
    co_await cpu.exec(nic_.costs().packet_rcv, Cat::PROTOCOL);
    bool flags = co_await kernel::local_irq_save(cpu);
    sk_queue_.push_back(p);
    co_await kernel::local_irq_restore(cpu, flags);
    if (waiter_) {
        kernel::TaskStruct* t = waiter_;
        waiter_ = nullptr;
        flags = co_await kernel::local_irq_save(cpu); // __wake_up: wait-queue lock
        co_await kernel::try_to_wake_up(cpu, *t);
        co_await kernel::local_irq_restore(cpu, flags);
    }
}

// Models: packet_recvmsg() (net/packet/af_packet.c)
engine::Task<Packet> Stack::packet_recvmsg(kernel::Cpu& cpu) {
    while (sk_queue_.empty()) {
        // skb_recv_datagram -> __skb_wait_for_more_packets: prepare_to_wait under the
        // wait-queue lock, then schedule()
        bool flags = co_await kernel::local_irq_save(cpu);
        waiter_ = cpu.current();
        co_await kernel::local_irq_restore(cpu, flags);
        co_await cpu.block();
    }
    bool flags = co_await kernel::local_irq_save(cpu); // __skb_try_recv_datagram: queue lock
    Packet p = sk_queue_.front();
    sk_queue_.erase(sk_queue_.begin());
    co_await kernel::local_irq_restore(cpu, flags);
    co_await cpu.exec(nic_.costs().sock_recvmsg, Cat::COPY);
    co_return p;
}

} // namespace kdsim::net
