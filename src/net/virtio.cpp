#include "net/virtio.h"

#include "kernel/irqflags.h"
#include "kernel/sched.h"
#include "kernel/softirq.h"

#include <algorithm>
#include <cmath>

namespace kdsim::net {

using kernel::Cat;


// ---- guest ---------------------------------------------------------------------------------

VirtioNet::VirtioNet(Softnet& softnet, unsigned vector, const NetCosts& costs, kvm::Vm& vm, std::string name,
                     const VirtioFeatures& features)
    : NetDevice(std::move(name)), softnet_(softnet), cpu_(softnet.cpu()), vector_(vector), costs_(costs), vm_(vm),
      features_(features.negotiated()), rx_mode_(net::rx_mode(features_)) {
    napi_.poll = &VirtioNet::virtnet_poll;
    napi_.ctx = this;
    cpu_.request_irq(vector_, &VirtioNet::vring_interrupt, this, name_ + "-input.0");
    try_fill_recv(); // virtnet_probe -> init_vqs, then try_fill_recv at open
}

// start_xmit -> xmit_skb: the header and the skb's scatter-gather entries as one chain; kick if
// the host wants notifications.
// Models: start_xmit(), xmit_skb() (drivers/net/virtio_net.c)
engine::Task<> VirtioNet::xmit(kernel::Cpu& cpu, const Packet& p) {
    bool flags = co_await kernel::local_irq_save(cpu); // the tx queue's lock (HARD_TX_LOCK), irqsave in the model
    Cycles c = costs_.driver_xmit;
    const std::uint32_t sg = tx_sg_entries(p.kind == FrameKind::TCP_DATA ? p.payload : 0);
    if (sg > 2) c += *costs_.virtio_tx_sg * (sg - 2);
    if (p.gso_segs > 1) c += *costs_.virtio_gso_hdr;
    co_await cpu.exec(c, Cat::DRIVER);
    ++stats_.tx_frames;
    tap_xmit(cpu, p);
    const Vhost::Notify n = host_->guest_tx(p, cpu);
    co_await kernel::local_irq_restore(cpu, flags);
    if (n.kick) {
        ++stats_.kicks;
        co_await vm_.vcpu(cpu.id()).mmio_ioeventfd(n.wakes); // virtqueue_notify: the MMIO write exits
    }
}

// Models: try_fill_recv(), add_recvbuf_mergeable(), add_recvbuf_big(), add_recvbuf_small() (drivers/net/virtio_net.c)
void VirtioNet::try_fill_recv() {
    while (avail_.size() + used_bufs_ < VQ_SIZE) {
        switch (rx_mode_) {
        case VirtioRxMode::MERGEABLE: avail_.push_back(mrg_.next_len()); break;
        case VirtioRxMode::BIG: avail_.push_back(MAX_SKB_FRAGS * VIRTIO_PAGE_SIZE + VNET_HDR_LEN); break;
        case VirtioRxMode::SMALL: avail_.push_back(GOOD_PACKET_LEN + VNET_HDR_LEN); break;
        }
    }
}

std::uint32_t VirtioNet::rx_buffers_for(std::uint32_t len) const {
    std::uint64_t need = std::uint64_t{len} + VNET_HDR_LEN, got = 0;
    std::uint32_t n = 0;
    for (const std::uint32_t b : avail_) {
        got += b;
        ++n;
        if (got >= need) return n;
        if (rx_mode_ != VirtioRxMode::MERGEABLE) return 0; // one buffer per packet: it does not fit
    }
    return 0;
}

void VirtioNet::rx_fill(const Packet& p, std::uint32_t buffers) {
    avail_.erase(avail_.begin(), avail_.begin() + buffers);
    used_bufs_ += buffers;
    rx_.push_back({p, buffers});
}

bool VirtioNet::signal() {
    if (!callbacks_) return false;
    callbacks_ = false; // the guest disables them in vring_interrupt; the model does it here so
                        // that one injection is in flight at a time
    vm_.vcpu(cpu_.id()).kick(vector_); // kvm_vgic_inject_irq, kvm_vcpu_kick
    return true;
}

// vring_interrupt -> skb_recv_done: virtqueue_disable_cb, napi_schedule.
// Models: vring_interrupt() (drivers/virtio/virtio_ring.c)
engine::Task<> VirtioNet::vring_interrupt(kernel::Cpu& cpu, void* ctx) {
    auto& v = *static_cast<VirtioNet*>(ctx);
    ++v.stats_.irqs;
    co_await cpu.exec(v.costs_.driver_rx_irq, Cat::DRIVER);
    co_await v.softnet_.napi_schedule(v.napi_);
}

// receive_mergeable takes each further buffer as a frag (virtio_rx_buf each); receive_big's
// pages past the first are frags of the same skb (give_pages returns the unused ones).
Cycles VirtioNet::receive_buf_extra(const Used& u) const {
    std::uint32_t extra = u.buffers - 1;
    if (rx_mode_ == VirtioRxMode::BIG) extra = (u.p.len + VNET_HDR_LEN + VIRTIO_PAGE_SIZE - 1) / VIRTIO_PAGE_SIZE - 1;
    Cycles c = extra ? *costs_.virtio_rx_buf * extra : 0;
    if (u.p.gso_segs > 1) c += *costs_.virtio_gso_hdr;
    return c;
}

// virtnet_poll -> virtnet_receive: used buffers to the stack (napi_gro_receive), try_fill_recv
// when more than half a budget of slots is free; when drained, virtqueue_napi_complete
// re-enables callbacks (and re-polls if buffers came in meanwhile).
// Models: virtnet_poll(), virtnet_receive(), receive_mergeable() (drivers/net/virtio_net.c)
engine::Task<int> VirtioNet::virtnet_poll(kernel::Cpu& cpu, void* ctx, int budget) {
    auto& v = *static_cast<VirtioNet*>(ctx);
    ++v.stats_.polls;
    co_await cpu.exec(v.costs_.napi_poll, Cat::DRIVER);
    int done = 0;
    while (done < budget && !v.rx_.empty()) {
        const Used u = v.rx_.front();
        v.rx_.pop_front();
        v.used_bufs_ -= u.buffers;
        ++done;
        ++v.stats_.rx_frames;
        v.stats_.rx_bytes += u.p.len;
        if (v.rx_mode_ == VirtioRxMode::MERGEABLE) v.mrg_.add_packet(u.p.len);
        co_await cpu.exec(v.costs_.driver_rx + v.receive_buf_extra(u), Cat::DRIVER);
        if (v.gro_ && u.p.kind != FrameKind::ARP_REQUEST && u.p.kind != FrameKind::ARP_REPLY)
            co_await v.gro_->napi_gro_receive(cpu, u.p);
        else { // netif_receive_skb
            co_await cpu.exec(v.costs_.netif_receive_skb, Cat::PROTOCOL);
            co_await v.deliver(cpu, u.p);
        }
    }
    const std::size_t free = VQ_SIZE - v.avail_.size() - v.used_bufs_;
    if (free > std::min<std::size_t>(static_cast<std::size_t>(budget), VQ_SIZE) / 2) {
        v.try_fill_recv();
        v.host_->guest_rx_refilled(cpu);
    }
    if (v.gro_ && !v.gro_->empty()) { // as Nic::napi_poll: napi_complete_done's flush, or the old ones after a full poll
        const bool flush_old = done >= budget && cpu.tick_period() <= engine::PS_PER_MS;
        co_await v.gro_->napi_gro_flush(cpu, flush_old);
    }
    if (done < budget) {
        napi_complete_done(v.napi_);
        v.callbacks_ = true;
        if (!v.rx_.empty()) { // virtqueue_enable_cb found more: poll again
            v.callbacks_ = false;
            co_await v.softnet_.napi_schedule(v.napi_);
        }
    }
    co_return done;
}

// ---- host tap --------------------------------------------------------------------------------

Tap::Tap(const NetCosts& costs, const VirtCosts& virt, std::string name)
    : NetDevice(std::move(name)), costs_(costs), virt_(virt) {}

// tun_net_xmit: onto the ptr_ring the vhost worker reads; wake it.
// Models: tun_net_xmit() (drivers/net/tun.c)
engine::Task<> Tap::xmit(kernel::Cpu& cpu, const Packet& p) {
    co_await cpu.exec(virt_.tun_xmit, Cat::DRIVER);
    if (!host_->tap_tx(p)) {
        ++stats_.tx_dropped;
        co_return;
    }
    ++stats_.tx_frames;
    tap_xmit(cpu, p);
    co_await host_->wake(cpu);
}

engine::Task<> Tap::receive(kernel::Cpu& cpu, const Packet& p) {
    ++stats_.rx_frames;
    stats_.rx_bytes += p.len;
    co_await cpu.exec(costs_.netif_receive_skb, Cat::PROTOCOL);
    co_await deliver(cpu, p);
}

// ---- vhost ---------------------------------------------------------------------------------

Vhost::Vhost(kernel::Cpu& host_cpu, const VirtCosts& virt, VirtioNet& guest, Tap& tap, std::string name,
             std::vector<kernel::Cpu*> affinity)
    : virt_(virt), guest_(guest), tap_(tap) {
    task_ = &host_cpu.create_task(std::move(name), kernel::SchedPolicy::NORMAL, 0, true, worker(*this));
    kernel::set_cpus_allowed(*task_, std::move(affinity));
    guest_.attach(*this);
    tap_.attach(*this);
}

Vhost::Notify Vhost::guest_tx(const Packet& p, kernel::Cpu& guest_cpu) {
    txq_.push_back(p);
    if (!notify_) return {};
    notify_ = false;
    if (!sleeping_) return {true, false};
    sleeping_ = false;
    guest_cpu.wake_up_process(*task_); // ioeventfd -> vhost_poll_wakeup, paid by the exit
    return {true, true};
}

bool Vhost::tap_tx(const Packet& p) {
    if (rxq_.size() >= Tap::TXQUEUELEN) return false;
    rxq_.push_back(p);
    return true;
}

engine::Task<> Vhost::wake(kernel::Cpu& caller) {
    if (!sleeping_ || waiting_rx_room_) co_return;
    sleeping_ = false;
    co_await kernel::try_to_wake_up(caller, *task_); // sk_data_ready -> vhost_poll_wakeup
}

void Vhost::guest_rx_refilled(kernel::Cpu& guest_cpu) {
    if (!waiting_rx_room_) return;
    waiting_rx_room_ = false; // the guest's refill kick (virtqueue_kick after try_fill_recv)
    if (sleeping_) {
        sleeping_ = false;
        guest_cpu.wake_up_process(*task_);
    }
}

// One skb's bookkeeping in handle_tx/handle_rx and the copy between the guest's buffers and the
// skb. Takes the packet off the front of `q` and counts it in `frames`.
engine::Task<Packet> Vhost::vhost_copy(std::deque<Packet>& q, std::uint64_t& frames, kernel::Cycles per_descriptor) {
    const Packet p = q.front();
    q.pop_front();
    ++frames;
    co_await this_cpu().exec(per_descriptor, Cat::VIRT);
    co_await this_cpu().exec(per_byte(virt_.copy_per_byte, p.len), Cat::COPY);
    co_return p;
}

// handle_tx_copy for one chain: vhost_get_vq_desc walks its descriptors, tun_get_user builds one
// skb (virtio_net_hdr_to_skb keeps a GSO skb whole) and tun_rx_batched hands it to the stack.
// Models: handle_tx_copy() (drivers/vhost/net.c)
// Models: tun_get_user() (drivers/net/tun.c)
engine::Task<> Vhost::handle_tx_one() {
    const Packet& head = txq_.front();
    const std::uint32_t desc = tx_sg_entries(head.kind == FrameKind::TCP_DATA ? head.payload : 0);
    Cycles c = virt_.vhost_tx + (desc > 2 ? virt_.vhost_desc * (desc - 2) : 0);
    stats_.tx_descriptors += desc;
    if (head.gso_segs > 1) {
        c += virt_.vnet_hdr_gso;
        ++stats_.tx_gso_skbs;
        stats_.tx_gso_segs += head.gso_segs;
    }
    const Packet p = co_await vhost_copy(txq_, stats_.tx_frames, c);
    // tun_rx_batched: with bottom halves off the worker cannot be preempted, nor moved, until
    // local_bh_enable, so one CPU serves the receive
    kernel::Cpu& cpu = this_cpu();
    co_await kernel::local_bh_disable(cpu);
    co_await tap_.receive(cpu, p);
    co_await kernel::local_bh_enable(cpu);
}

// handle_rx for one skb of the tap's ring: get_rx_bufs takes guest buffers until they hold it
// and its header (vhost_get_vq_desc per buffer), tun_recvmsg copies it (tun_put_user), and
// vhost_add_used_n returns them with num_buffers.
// Models: handle_rx(), get_rx_bufs() (drivers/vhost/net.c)
engine::Task<bool> Vhost::handle_rx_one() {
    const Packet& head = rxq_.front();
    const std::uint32_t bufs = guest_.rx_buffers_for(head.len);
    if (bufs == 0) co_return false;
    Cycles c = virt_.vhost_rx + virt_.vhost_rx_buf * (bufs - 1);
    // a big-packets buffer is a chain of the header, the first page and MAX_SKB_FRAGS - 1 more
    // (add_recvbuf_big): vhost_get_vq_desc translates every descriptor of it
    if (guest_.rx_mode() == VirtioRxMode::BIG) c += virt_.vhost_desc * MAX_SKB_FRAGS;
    stats_.rx_buffers += bufs;
    stats_.rx_buffers_max = std::max<std::uint64_t>(stats_.rx_buffers_max, bufs);
    if (head.gso_segs > 1) {
        c += virt_.vnet_hdr_gso;
        ++stats_.rx_gso_skbs;
        stats_.rx_gso_segs += head.gso_segs;
    }
    guest_.rx_fill(co_await vhost_copy(rxq_, stats_.rx_frames, c), bufs);
    co_return true;
}

// vhost_worker: handle_tx and handle_rx until both have nothing to do.
// Models: vhost_worker() (drivers/vhost/vhost.c)
// Models: handle_tx(), handle_rx() (drivers/vhost/net.c)
engine::Task<> Vhost::worker(Vhost& v) {
    for (;;) {
        ++v.stats_.runs;
        bool progress = false;
        for (int n = 0; n < VHOST_NET_PKT_WEIGHT && !v.txq_.empty(); ++n) {
            progress = true;
            co_await v.handle_tx_one();
        }
        bool filled = false;
        for (int n = 0; n < VHOST_NET_PKT_WEIGHT && !v.rxq_.empty(); ++n) {
            if (!co_await v.handle_rx_one()) {
                ++v.stats_.guest_rx_full;
                v.waiting_rx_room_ = true;
                break;
            }
            progress = filled = true;
        }
        if (filled && v.guest_.signal()) { // vhost_signal -> eventfd_signal(irqfd)
            ++v.stats_.injections;
            co_await v.this_cpu().exec(v.virt_.virq_inject, Cat::VIRT);
        }
        co_await kernel::cond_resched(v.this_cpu());
        if (progress && (!v.txq_.empty() || (!v.rxq_.empty() && !v.waiting_rx_room_))) continue;
        if (v.txq_.empty()) v.notify_ = true; // vhost_enable_notify
        if (!v.txq_.empty() || (!v.rxq_.empty() && !v.waiting_rx_room_)) continue;
        v.sleeping_ = true;
        co_await v.this_cpu().block();
    }
}

void Vhost::register_placement_stats(const stats::Scope& s) const {
    if (task_->cpus_allowed.size() < 2) return;
    s.value("host_cpu", [this] { return static_cast<double>(cpu().id()); }, "cpu",
            "the host CPU the worker runs on, or last ran on")
        .counter("migrations", task_->nr_migrations, "count",
                 "moves to another host CPU: wake-up placements (select_task_rq_fair) and load balances")
        .counter("balance_moves", task_->nr_balance_moves, "count",
                 "load balances that pulled the queued worker to an idle host CPU (newidle_balance, nohz_idle_balance)");
}

void Vhost::register_offload_stats(const stats::Scope& s) const {
    const VhostStats& st = stats_;
    s.counter("tx_gso_skbs", st.tx_gso_skbs, "count", "GSO skbs copied guest -> host (HOST_TSO4)")
        .counter("tx_gso_segs", st.tx_gso_segs, "count", "segments of those GSO skbs")
        .counter("tx_descriptors", st.tx_descriptors, "count", "descriptors of the guest's tx chains")
        .counter("rx_gso_skbs", st.rx_gso_skbs, "count", "GSO skbs copied host -> guest (GUEST_TSO4)")
        .counter("rx_gso_segs", st.rx_gso_segs, "count", "segments of those GSO skbs")
        .counter("rx_buffers", st.rx_buffers, "count", "guest rx buffers filled")
        .value("rx_buffers_per_packet", [&st] { return st.rx_frames ? double(st.rx_buffers) / double(st.rx_frames) : 0.0; },
               "count", "guest rx buffers per packet, mean (num_buffers)")
        .counter("rx_buffers_max", st.rx_buffers_max, "count", "the most guest rx buffers one packet took (num_buffers)")
        .counter("guest_sw_gso_segs", guest_.stats().gso_sw_segs, "count",
                 "segments the guest's stack made in software before virtio (no HOST_TSO4)")
        .counter("host_sw_gso_segs", tap_.stats().gso_sw_segs, "count",
                 "segments the host's stack made in software before the tap (no GUEST_TSO4)");
}

} // namespace kdsim::net
