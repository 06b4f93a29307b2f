// The part of a machine's network stack a link-layer ping-pong crosses: dev_queue_xmit, the
// ARP responder (net/ipv4/arp.c arp_rcv -> arp_process -> arp_send_dst) and one bound AF_PACKET
// socket (net/packet/af_packet.c packet_rcv / packet_recvmsg), as arping uses. Receive runs in
// NET_RX context from the NIC's NAPI poll; queueing to the socket takes the queue's
// spin_lock_irqsave and wakes the reader (sock_def_readable -> __wake_up, whose wait-queue lock
// and try_to_wake_up's pi_lock are irqsave locks too).
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"
#include "mem/memory.h"
#include "net/netdevice.h"
#include "net/page_placement.h"
#include "net/skb_slab.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kdsim::net {

// A TCP or UDP endpoint bound on a stack: receives its segments in NET_RX context (or wherever
// the tunnel delivering them runs).
class TcpEndpoint {
public:
    virtual ~TcpEndpoint() = default;
    virtual engine::Task<> tcp_rcv(kernel::Cpu& cpu, const Packet& p) = 0;
    // Registers the socket's counters under `s` (<machine>/tcp/flow<N>), if it has any.
    virtual void register_stats(const stats::Scope&) const {}
    // The skb's destructor at its free after transmission (tcp_wfree): `truesize` bytes leave
    // sk_wmem_alloc; in the freeing context on `cpu`.
    virtual void tcp_wfree(kernel::Cpu&, std::uint32_t /*truesize*/) {}
    // The TSQ tasklet's work for this socket (tcp_tsq_handler), in TASKLET_SOFTIRQ.
    virtual engine::Task<> tcp_tsq_handler(kernel::Cpu&) { co_return; }
};

// A tunnel device on the stack (WireGuard, an IPsec SA): takes the stack's outgoing inner
// packets and its incoming encapsulated ones.
class Tunnel {
public:
    virtual ~Tunnel() = default;
    // The route's output for inner packets (wg_xmit, xfrm_output), in the caller's context; a
    // GSO skb is segmented there.
    virtual engine::Task<> xmit(kernel::Cpu& cpu, Packet inner) = 0;
    // The encapsulated packet's receive handler (udp encap_rcv -> wg_packet_receive, xfrm4_rcv).
    virtual engine::Task<> rcv(kernel::Cpu& cpu, const Packet& outer) = 0;
    // A socket on this route may build GSO skbs: a WireGuard device takes them (wg_xmit segments
    // them); an xfrm route does not (sk_setup_caps clears the GSO bits when dst->header_len).
    virtual bool gso_ok() const = 0;
};

// A received segment or datagram on a socket's queue: its payload bytes and where the payload
// starts in memory (0: no memory hierarchy).
struct QueuedSkb {
    std::uint32_t len = 0;
    mem::Addr data = 0;
};

// A reader's or writer's user buffer (iperf3 reads into, and writes from, one 128 KiB buffer),
// placed in memory at first use; successive reads or writes go through it round-robin.
struct UserBuffer {
    static constexpr std::size_t SIZE = 128 * 1024;
    mem::Addr base = 0;
    std::size_t off = 0;
};

class Stack {
public:
    explicit Stack(NetDevice& dev);

    // The machine's memory hierarchy and the warm copy loop's cycles per byte ([memory].copy), or
    // nullptr: execs that touch packet data then cost the profile's figures alone.
    void set_memory(mem::MemorySystem* m, double copy_cycles_per_byte) {
        memory_ = m;
        copy_warm_ = copy_cycles_per_byte;
        copy_len_ = 0;
        copy_loop_ = 0;
    }
    mem::MemorySystem* memory() const { return memory_; }
    // The stall of `cpu` reading bytes [from, to) of the received frame `p` (headers): 0 without
    // a hierarchy or when the frame has no address.
    Cycles frame_read(kernel::Cpu& cpu, const Packet& p, std::uint32_t from, std::uint32_t to);
    // skb_copy_datagram_iter of `s` into `ub`: with a hierarchy, [memory].copy per byte plus the
    // stalls of reading the skb's lines and writing the user buffer's; else `cold_cpb` per byte
    // (the profile's copy figure, which has the cold source in it).
    // Inline: the reader's call per segment goes to kernel_copy without a frame of its own.
    // Models: skb_copy_datagram_iter() (net/core/datagram.c)
    Cycles copy_to_user(kernel::Cpu& cpu, const QueuedSkb& s, UserBuffer& ub, double cold_cpb) {
        if (!memory_ || s.data == 0) return per_byte(cold_cpb, s.len);
        return kernel_copy(cpu, s.data, user_bytes(ub, s.len), s.len);
    }
    // The copy of `len` bytes of the writer's buffer `ub` into an skb's data at `dst`
    // (skb_copy_to_page_nocache): with a hierarchy, [memory].copy per byte plus the stalls of
    // reading ub's lines and writing dst's; else `cached_cpb` per byte (the profile's
    // copy_from_user, which has the source's misses in it).
    Cycles copy_from_user(kernel::Cpu& cpu, UserBuffer& ub, mem::Addr dst, std::uint32_t len, double cached_cpb);
    // A kernel memcpy of `len` bytes from `src` to `dst` (skb_copy_bits, pskb_expand_head):
    // [memory].copy per byte plus the stalls of the reads (consumed by the copy loop: their fetch
    // overlaps its cycles, MemorySystem::consume) and of the writes. Needs a hierarchy.
    Cycles kernel_copy(kernel::Cpu& cpu, mem::Addr src, mem::Addr dst, std::uint32_t len);
    // An in-place pass over data (a cipher's): the stalls of reading [a, a + read) and then
    // writing [a, a + write); its compute is the caller's figure, `consumed_by` cycles of it
    // working on the bytes read as they arrive (0: none overlaps). 0 without a hierarchy.
    Cycles touch(kernel::Cpu& cpu, mem::Addr a, std::uint32_t read, std::uint32_t write, Cycles consumed_by = 0);
    // An out-of-place pass (a cipher's from one buffer into another): the stalls of reading
    // [src, src + read), consumed by `consumed_by` cycles of compute, then of writing
    // [dst, dst + write). 0 without a hierarchy or without both addresses.
    Cycles touch(kernel::Cpu& cpu, mem::Addr src, std::uint32_t read, mem::Addr dst, std::uint32_t write,
                 Cycles consumed_by);
    // The machine's slab of linear skb heads (skb_slab.h), or nullptr (no hierarchy).
    void set_skb_slab(SkbSlab* s) { slab_ = s; }
    SkbSlab* skb_slab() const { return slab_; }
    // The machine's record of where its sockets' buffers lie physically (page_placement.h), or
    // nullptr (no hierarchy): a socket that places a buffer ring registers it here.
    void set_page_placement(PagePlacement* p) { pages_ = p; }
    PagePlacement* page_placement() const { return pages_; }
    // consume_skb of a received skb whose data lies at `a`: its head goes back to the slab when it
    // came from there.
    void skb_data_free(mem::Addr a) {
        if (slab_ && a) slab_->free(a);
    }

    // __dev_queue_xmit on the calling CPU: rcu_read_lock_bh, qdisc, the driver. False: the
    // qdisc dropped the skb (NET_XMIT_DROP). For `co_await` at once; `p` must live, unchanged,
    // until it is done.
    XmitAwaiter dev_queue_xmit(kernel::Cpu& cpu, const Packet& p);
    // The same through a qdisc, or for a GSO skb the stack segments first.
    engine::Task<bool> dev_queue_xmit_qdisc(kernel::Cpu& cpu, NetDevice& dev, const Packet& p);
    // The output route of a locally generated IP packet: through the tunnel when one is
    // configured, else straight to the device. False: dropped by the device's qdisc. For
    // `co_await` at once; `p` must live, unchanged, until it is done.
    XmitAwaiter ip_output(kernel::Cpu& cpu, const Packet& p);
    // An skb of a qdisc device was freed after transmission: its socket's destructor.
    void skb_free(kernel::Cpu& cpu, const Packet& p);
    // tsq_tasklet on `cpu`: the socket's tcp_tsq_handler runs in its TASKLET_SOFTIRQ.
    void tsq_schedule(kernel::Cpu& cpu, TcpEndpoint& ep);
    // Some device of the stack has a qdisc layer.
    bool has_qdisc() const { return !drivers_.empty(); }
    // The root qdisc of the device `p` leaves by, or nullptr.
    const Qdisc* qdisc_for(const Packet& p) { return route(p).txq() ? &route(p).txq()->qdisc() : nullptr; }
    // Puts `dev`'s tx queue (when it has one) over the driver, the NET_TX softirq of each CPU of
    // the machine in `per_cpu`. Call before the run.
    void attach_txq(NetDevice& dev, std::vector<NetTx*> per_cpu);
    // A TCP socket on this stack may send GSO skbs (sk_can_gso): the device has GSO on and the
    // route takes them.
    bool can_gso() const;
    // Local delivery of an IP packet (after decapsulation too): to the bound TCP endpoint.
    engine::Task<> ip_local_deliver(kernel::Cpu& cpu, const Packet& p);
    void set_tunnel(Tunnel& t) { tunnel_ = &t; }
    void set_prerouting_drop(PreroutingDrop where, const NetfilterCosts& costs) {
        nf_drop_ = where;
        nf_costs_ = costs;
        nf_on_ = true;
    }
    // IPv4 packets dropped by the PRE_ROUTING rule.
    std::uint64_t nf_dropped() const { return nf_dropped_; }
    bool nf_conntrack() const { return nf_on_ && nf_drop_ == PreroutingDrop::AFTER_CONNTRACK; }
    // Conntrack entries created (and destroyed unconfirmed) by the dropped packets.
    std::uint64_t nf_ct_created() const { return nf_ct_created_; }

    // The bound AF_PACKET socket: receives ARP replies.
    // packet_recvmsg: blocks the calling task until a frame is queued; returns it.
    engine::Task<Packet> packet_recvmsg(kernel::Cpu& cpu);

    NetDevice& nic() { return nic_; }
    // Another device of the machine (eth1, eth2, ...): its received frames come to this stack,
    // and the replies of a flow leave by the device the flow's frames arrive on (the route to
    // the peer behind it: each peer sits behind one device). Call before the run.
    void add_device(NetDevice& dev);
    // The device a packet leaves by: for a TCP or UDP flow, the one its frames came in on;
    // else (and before any came in) the first.
    NetDevice& route(const Packet& p) {
        if (flow_dev_.empty() || !carries_flow(p.kind)) return nic_;
        return p.flow < flow_dev_.size() && flow_dev_[p.flow] ? *flow_dev_[p.flow] : nic_;
    }
    static bool carries_flow(FrameKind k) {
        return k == FrameKind::TCP_DATA || k == FrameKind::TCP_ACK || k == FrameKind::UDP_DATA;
    }
    std::size_t devices() const { return 1 + more_.size(); }
    // Binds the endpoint of connection `flow` (its segments carry that flow number).
    void bind_tcp(std::uint32_t flow, TcpEndpoint& ep) {
        if (tcp_.size() <= flow) tcp_.resize(flow + std::size_t{1}, nullptr);
        tcp_[flow] = &ep;
    }
    // Binds one endpoint to the `count` flows from `first` on: a socket table that finds the
    // flow's own socket itself (udp_table.h). Flows bound by bind_tcp take precedence.
    void bind_flow_range(std::uint32_t first, std::uint32_t count, TcpEndpoint& ep) {
        ranges_.push_back(FlowRange{first, count, &ep});
    }
    std::uint64_t arp_replies_sent() const { return arp_replies_; }
    // Registers every bound TCP socket's counters under `s`/flow<N>.
    void register_stats(const stats::Scope& s) const {
        for (std::size_t f = 0; f < tcp_.size(); ++f)
            if (tcp_[f]) tcp_[f]->register_stats(s.sub("flow" + std::to_string(f)));
    }

private:
    // The next `len` bytes of the user buffer `ub` (placed in the hierarchy at first use, filled
    // round-robin).
    mem::Addr user_bytes(UserBuffer& ub, std::uint32_t len) {
        if (ub.base == 0) ub.base = place_user_buffer();
        if (ub.off + len > UserBuffer::SIZE) ub.off = 0;
        const mem::Addr a = ub.base + ub.off;
        ub.off += len;
        return a;
    }
    mem::Addr place_user_buffer();
    static engine::Task<> netif_receive(kernel::Cpu& cpu, void* ctx, const Packet& p);
    engine::Task<> arp_rcv(kernel::Cpu& cpu, const Packet& p);
    engine::Task<> packet_rcv(kernel::Cpu& cpu, const Packet& p);
    engine::Task<> nf_prerouting_drop(kernel::Cpu& cpu);
    engine::Task<> nf_conntrack_in(kernel::Cpu& cpu);
    engine::Task<> skb_gso_segment(kernel::Cpu& cpu, const Packet& p);
    // validate_xmit_skb (segmenting a GSO skb the device cannot take) and the driver.
    engine::Task<> dev_hard_start_xmit(kernel::Cpu& cpu, NetDevice& dev, const Packet& p);
    // dev_hard_start_xmit's segmenting path: skb_gso_segment, then each segment to the driver.
    engine::Task<> xmit_segments(kernel::Cpu& cpu, NetDevice& dev, const Packet& p);
    // ip_output through the tunnel: tunnel_xmit's copy of the skb is made here, out of line, so that
    // ip_output without a tunnel is a plain jump to dev_queue_xmit (no copy's stack frame).
    [[gnu::noinline]] engine::Task<bool> tunnel_output(kernel::Cpu& cpu, const Packet& p);
    engine::Task<bool> tunnel_xmit(kernel::Cpu& cpu, Packet p);
    // What a device's qdisc calls below it.
    struct DevDriver final : TxDriver {
        Stack* stack;
        NetDevice* dev;
        DevDriver(Stack* s, NetDevice* d) : stack(s), dev(d) {}
        std::size_t tx_room() const override { return dev->tx_room(); }
        void skb_free(kernel::Cpu& cpu, const Packet& p) override { stack->skb_free(cpu, p); }
        engine::Task<> hard_start_xmit(kernel::Cpu& cpu, const Packet& p) override {
            return stack->dev_hard_start_xmit(cpu, *dev, p);
        }
    };
    std::vector<std::unique_ptr<DevDriver>> drivers_;
    std::vector<NetTx*> net_tx_; // per CPU, with a qdisc layer

    NetDevice& nic_;
    // The receive hook's context of each device (the first's too, once there are several)
    struct DevCtx {
        Stack* stack;
        NetDevice* dev;
    };
    std::vector<std::unique_ptr<DevCtx>> more_;
    std::vector<NetDevice*> flow_dev_; // by flow, with several devices
    static engine::Task<> netif_receive_on(kernel::Cpu& cpu, void* ctx, const Packet& p);
    mem::MemorySystem* memory_ = nullptr;
    double copy_warm_ = 0;
    // the copy loop's cycles of the last length kernel_copy saw (per_byte(copy_warm_, copy_len_)):
    // a stream copies one segment size over and over
    std::uint32_t copy_len_ = 0;
    Cycles copy_loop_ = 0;
    SkbSlab* slab_ = nullptr;
    PagePlacement* pages_ = nullptr;
    Tunnel* tunnel_ = nullptr;
    bool nf_on_ = false;
    PreroutingDrop nf_drop_ = PreroutingDrop::RAW;
    NetfilterCosts nf_costs_;
    std::uint64_t nf_dropped_ = 0;
    std::uint64_t nf_ct_created_ = 0;
    std::vector<Packet> sk_queue_;
    kernel::TaskStruct* waiter_ = nullptr;
    std::vector<TcpEndpoint*> tcp_; // by flow
    struct FlowRange {
        std::uint32_t first, count;
        TcpEndpoint* ep;
    };
    std::vector<FlowRange> ranges_;
    std::uint64_t arp_replies_ = 0;
};

} // namespace kdsim::net
