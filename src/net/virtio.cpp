#include "net/virtio.h"

#include "kernel/irqflags.h"
#include "kernel/sched.h"
#include "kernel/softirq.h"

#include <cmath>

namespace kdsim::net {

using kernel::Cat;


// ---- guest ---------------------------------------------------------------------------------

VirtioNet::VirtioNet(Softnet& softnet, unsigned vector, const NetCosts& costs, kvm::Vm& vm, std::string name)
    : NetDevice(std::move(name)), softnet_(softnet), cpu_(softnet.cpu()), vector_(vector), costs_(costs), vm_(vm) {
    napi_.poll = &VirtioNet::virtnet_poll;
    napi_.ctx = this;
    cpu_.request_irq(vector_, &VirtioNet::vring_interrupt, this, name_ + "-input.0");
}

// start_xmit: add to the tx virtqueue; kick if the host wants notifications.
// Models: start_xmit() (drivers/net/virtio_net.c)
engine::Task<> VirtioNet::xmit(kernel::Cpu& cpu, Packet p) {
    bool flags = co_await kernel::local_irq_save(cpu); // the tx queue's lock (HARD_TX_LOCK), irqsave in the model
    co_await cpu.exec(costs_.driver_xmit, Cat::DRIVER);
    ++stats_.tx_frames;
    p.sent = cpu.now();
    tap_xmit(cpu, p);
    const Vhost::Notify n = host_->guest_tx(p, cpu);
    co_await kernel::local_irq_restore(cpu, flags);
    if (n.kick) {
        ++stats_.kicks;
        co_await vm_.vcpu(cpu.id()).mmio_ioeventfd(n.wakes); // virtqueue_notify: the MMIO write exits
    }
}

void VirtioNet::rx_fill(const Packet& p) {
    rx_.push_back(p);
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

// virtnet_poll -> virtnet_receive: used buffers to the stack, try_fill_recv; when drained,
// virtqueue_napi_complete re-enables callbacks (and re-polls if buffers came in meanwhile).
// Models: virtnet_poll() (drivers/net/virtio_net.c)
engine::Task<int> VirtioNet::virtnet_poll(kernel::Cpu& cpu, void* ctx, int budget) {
    auto& v = *static_cast<VirtioNet*>(ctx);
    ++v.stats_.polls;
    co_await cpu.exec(v.costs_.napi_poll, Cat::DRIVER);
    int done = 0;
    while (done < budget && !v.rx_.empty()) {
        Packet p = v.rx_.front();
        v.rx_.pop_front();
        ++done;
        ++v.stats_.rx_frames;
        v.stats_.rx_bytes += p.len;
        co_await cpu.exec(v.costs_.driver_rx, Cat::DRIVER);
        co_await cpu.exec(v.costs_.netif_receive_skb, Cat::PROTOCOL);
        co_await v.deliver(cpu, p);
    }
    if (done > 0) v.host_->guest_rx_refilled(cpu);
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
engine::Task<> Tap::xmit(kernel::Cpu& cpu, Packet p) {
    co_await cpu.exec(virt_.tun_xmit, Cat::DRIVER);
    p.sent = cpu.now();
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

Vhost::Vhost(kernel::Cpu& host_cpu, const VirtCosts& virt, VirtioNet& guest, Tap& tap, std::string name)
    : cpu_(host_cpu), virt_(virt), guest_(guest), tap_(tap) {
    task_ = &cpu_.create_task(std::move(name), kernel::SchedPolicy::NORMAL, 0, true, worker(*this));
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

// vhost_worker: handle_tx and handle_rx until both have nothing to do.
// Models: vhost_worker() (drivers/vhost/vhost.c)
// One descriptor's work in handle_tx/handle_rx: the vhost bookkeeping and the copy between the
// guest's buffer and the skb. Takes the packet off the front of `q` and counts it in `frames`.
engine::Task<Packet> Vhost::vhost_copy(std::deque<Packet>& q, std::uint64_t& frames, kernel::Cycles per_descriptor) {
    const Packet p = q.front();
    q.pop_front();
    ++frames;
    co_await cpu_.exec(per_descriptor, Cat::VIRT);
    co_await cpu_.exec(per_byte(virt_.copy_per_byte, p.len), Cat::COPY);
    co_return p;
}

// Models: handle_tx(), handle_rx() (drivers/vhost/net.c)
engine::Task<> Vhost::worker(Vhost& v) {
    kernel::Cpu& cpu = v.cpu_;
    for (;;) {
        ++v.stats_.runs;
        bool progress = false;
        // handle_tx
        for (int n = 0; n < VHOST_NET_PKT_WEIGHT && !v.txq_.empty(); ++n) {
            progress = true;
            const Packet p = co_await v.vhost_copy(v.txq_, v.stats_.tx_frames, v.virt_.vhost_tx);
            co_await kernel::local_bh_disable(cpu); // tun_rx_batched
            co_await v.tap_.receive(cpu, p);
            co_await kernel::local_bh_enable(cpu);
        }
        // handle_rx
        bool filled = false;
        for (int n = 0; n < VHOST_NET_PKT_WEIGHT && !v.rxq_.empty(); ++n) {
            if (!v.guest_.rx_has_room()) {
                ++v.stats_.guest_rx_full;
                v.waiting_rx_room_ = true;
                break;
            }
            progress = true;
            v.guest_.rx_fill(co_await v.vhost_copy(v.rxq_, v.stats_.rx_frames, v.virt_.vhost_rx));
            filled = true;
        }
        if (filled && v.guest_.signal()) { // vhost_signal -> eventfd_signal(irqfd)
            ++v.stats_.injections;
            co_await cpu.exec(v.virt_.virq_inject, Cat::VIRT);
        }
        co_await kernel::cond_resched(cpu);
        if (progress && (!v.txq_.empty() || (!v.rxq_.empty() && !v.waiting_rx_room_))) continue;
        if (v.txq_.empty()) v.notify_ = true; // vhost_enable_notify
        if (!v.txq_.empty() || (!v.rxq_.empty() && !v.waiting_rx_room_)) continue;
        v.sleeping_ = true;
        co_await cpu.block();
    }
}

} // namespace kdsim::net
