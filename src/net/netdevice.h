// What the protocol layers see of a network device (struct net_device + its netdev_ops): the
// transmit entry (ndo_start_xmit), the receive hook the stack registers, and counters. A
// physical NIC (nic.h), a virtio-net guest device and a host tap device (virtio.h) implement it.
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"
#include "kernel/irqflags.h"
#include "net/config.h"
#include "net/gro.h"
#include "net/net_costs.h"
#include "net/packet.h"
#include "net/qdisc.h"

#include <coroutine>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <string>

namespace kdsim::devices {
class DmaPlatform;
}

namespace kdsim::net {

// A packet tap on a device, as AF_PACKET sockets (tcpdump) are: it sees each frame the device
// transmits (dev_queue_xmit_nit, just before ndo_start_xmit hands it on: frames a full tx queue
// drops are not seen) and each frame it hands to the stack (__netif_receive_skb_core's
// ptype_all delivery), at that simulated time. Off (no tap) it costs one test per frame.
class FrameTap {
public:
    enum class Dir : std::uint8_t { TX, RX };
    virtual void frame(Dir dir, engine::Tick now, const Packet& p) = 0;

protected:
    ~FrameTap() = default;
};

// The protocol layer's receive entry (netif_receive_skb's delivery), called in the receiving
// context (NET_RX softirq, or a task with BH disabled for a tap) on `cpu`.
using RxHandler = engine::Task<> (*)(kernel::Cpu& cpu, void* ctx, const Packet& p);

// A Task that does nothing. The net layer's pass-through paths (the receive hook's demux, the
// output route, the device's delivery) are plain functions that return the Task of the path they
// pick, which their caller awaits at once, instead of coroutines of their own (a frame, two
// resumptions and a destroy each, docs/performance.md); a path that picks none returns this.
// Defined once in stack.cpp: clang with the sanitizers cannot emit this coroutine inline in every
// translation unit ("Cannot represent a difference across sections", the fuzzer's build).
engine::Task<> nothing();

// A device's part of __dev_queue_xmit run as plain steps in its caller's frame (XmitAwaiter): the
// steps function takes each of its awaits as `co_await` would (take()); at one that must suspend
// it keeps that awaiter, its await_ready asked, and the step to go on with, and returns false.
// It is called again at that step once the await has completed. True: done, `sent` its result.
struct XmitRun {
    enum class Stop : std::uint8_t { EXEC, IRQ_RESTORE, EXEC_POINT };
    XmitRun(void* d, kernel::Cpu* c, const Packet* skb) : dev(d), cpu(c), p(skb) {}
    void* dev;
    kernel::Cpu* cpu;
    const Packet* p;
    unsigned step = 0;
    bool flags = false; // the driver's local_irq_save
    bool sent = false;
    Stop stop = Stop::EXEC;
    union Await {
        Await() {}
        kernel::Cpu::ExecAwaiter exec;
        kernel::IrqRestoreAwaiter restore;
        kernel::Cpu::ExecPointAwaiter point;
    } await;

    // `co_await a`: true when it is done in place; else it is kept and `next` is the step after it.
    bool take(kernel::Cpu::ExecAwaiter a, unsigned next) {
        if (a.await_ready()) return true;
        ::new (&await.exec) kernel::Cpu::ExecAwaiter(a);
        return keep(Stop::EXEC, next);
    }
    bool take(kernel::IrqRestoreAwaiter a, unsigned next) {
        if (a.await_ready()) return true;
        ::new (&await.restore) kernel::IrqRestoreAwaiter(a);
        return keep(Stop::IRQ_RESTORE, next);
    }
    bool take(kernel::Cpu::ExecPointAwaiter a, unsigned next) {
        if (a.await_ready()) return true;
        ::new (&await.point) kernel::Cpu::ExecPointAwaiter(a);
        return keep(Stop::EXEC_POINT, next);
    }
    // The kept await's await_suspend, for the coroutine `h` that waits for it.
    void suspend(std::coroutine_handle<> h) noexcept {
        if (stop == Stop::EXEC) await.exec.await_suspend(h);
        else if (stop == Stop::IRQ_RESTORE) await.restore.await_suspend(h);
        else await.point.await_suspend(h);
    }

private:
    bool keep(Stop s, unsigned next) {
        stop = s;
        step = next;
        return false;
    }
};
using XmitSteps = bool (*)(XmitRun&);

// The steps from the await they stopped at, in a coroutine of their own: made only when a step
// must suspend (stack.cpp).
engine::Task<bool> xmit_rest(XmitRun& r, XmitSteps steps);

// What `co_await dev_queue_xmit(...)` awaits: a device's Task, or its steps (XmitRun) run in the
// awaiting coroutine's frame, without a frame of their own unless one of them suspends; yields
// the Task's or the steps' result.
class [[nodiscard]] XmitAwaiter {
public:
    XmitAwaiter(engine::Task<bool> t) : task_(std::move(t)), run_(nullptr, nullptr, nullptr) {} // NOLINT(google-explicit-constructor)
    XmitAwaiter(XmitSteps steps, void* dev, kernel::Cpu& cpu, const Packet& p) : steps_(steps), run_(dev, &cpu, &p) {}
    bool await_ready() { return steps_ && steps_(run_); }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) {
        if (steps_) task_ = xmit_rest(run_, steps_);
        return std::move(task_).operator co_await().await_suspend(h);
    }
    bool await_resume() {
        if (!task_.valid()) return run_.sent;
        return std::move(task_).operator co_await().await_resume();
    }

private:
    XmitSteps steps_ = nullptr;
    engine::Task<bool> task_;
    XmitRun run_;
};

struct NicStats {
    std::uint64_t rx_frames = 0;
    std::uint64_t tx_frames = 0;
    std::uint64_t rx_dropped = 0; // rx ring (or backend queue) full
    std::uint64_t tx_dropped = 0; // tx queue full
    std::uint64_t irqs = 0;
    std::uint64_t polls = 0;
    std::uint64_t rx_bytes = 0;
    std::uint64_t stale_frames = 0; // frames whose bytes the CPU read stale
    std::uint64_t kicks = 0;        // virtio: notifications to the host (guest exits)
    std::uint64_t gso_sw_segs = 0;  // segments the stack made in software for this device (validate_xmit_skb)
    std::uint64_t rx_copied = 0;    // rx_copy: frames the driver copied into a new skb
    std::uint64_t rx_copy_bytes = 0; // bytes of those copies
    std::uint64_t rx_backlog_dropped = 0; // rx_mode netif_rx: frames netif_rx dropped (the backlog full)
    std::uint64_t irq_loops = 0;          // rx_mode netif_rx: passes of the handler's IEVENT loop
    std::uint64_t poll_passes = 0;        // poll_loop: passes of the NAPI poll's IEVENT loop
    std::uint64_t xdp_drop = 0;           // xdp: frames the program dropped (also in rx_frames)
    std::uint64_t xdp_pass = 0;           // xdp: frames the program passed to the stack
    std::uint64_t rx_tail_writes = 0;     // writel()s of the rx tail: descriptors handed back to the device
};

// What a NIC's transmit side did through the DMA API (nic_tx.cpp).
struct TxDmaStats {
    std::uint64_t descriptors = 0;    // tx descriptors filled
    std::uint64_t mapped_bytes = 0;   // bytes dma_map_single'd DMA_TO_DEVICE
    std::uint64_t bounced = 0;        // buffers copied to a bounce buffer (address not tx_align'ed)
    std::uint64_t bounce_bytes = 0;   // bytes of those copies
    std::uint64_t reclaimed = 0;      // descriptors reclaimed by tx completion
    std::uint64_t skbs_freed = 0;     // skbs freed by tx completion
    std::uint64_t mmio_writes = 0, mmio_reads = 0; // register accesses charged (driver = fec)
};

class NetDevice {
public:
    explicit NetDevice(std::string name) : name_(std::move(name)) {}
    virtual ~NetDevice() = default;
    NetDevice(const NetDevice&) = delete;
    NetDevice& operator=(const NetDevice&) = delete;

    void set_rx_handler(RxHandler fn, void* ctx) {
        rx_fn_ = fn;
        rx_ctx_ = ctx;
    }
    // ndo_start_xmit, in the caller's context on `cpu` (dev_queue_xmit's). `p` must live, unchanged,
    // until the Task is done (the callers await it at once, the skb in their frame).
    virtual engine::Task<> xmit(kernel::Cpu& cpu, const Packet& p) = 0;
    // __dev_queue_xmit of an skb this device takes as it is (no qdisc: noqueue; no software GSO):
    // rcu_read_lock_bh, the stack's part (costs().dev_queue_xmit), ndo_start_xmit,
    // rcu_read_unlock_bh; true (sent). `p` as for xmit. A driver may run it all in its own
    // frame (Nic: one coroutine per skb sent, not two); this one awaits xmit (stack.cpp). Not
    // called while noqueue_steps() is set: the stack runs those steps in the caller's frame.
    virtual engine::Task<bool> dev_queue_xmit_noqueue(kernel::Cpu& cpu, const Packet& p);
    // dev_queue_xmit_noqueue's steps (XmitRun, its `dev` this NetDevice), when the device runs it
    // as steps now: the stack builds their awaiter itself (no call); nullptr: call it.
    XmitSteps noqueue_steps() const { return noqueue_steps_; }
    virtual const NetCosts& costs() const = 0;
    // The DMA platform of the rx buffers, when the device's rx goes through the DMA API.
    virtual const devices::DmaPlatform* dma() const { return nullptr; }
    // NETIF_F_GSO (ethtool -K gso): the TCP sender may build skbs of several segments. Off in a
    // bare device object (every skb one segment); a system turns it on, as Linux has it, unless
    // the scenario says gso = false.
    bool gso() const { return gso_; }
    void set_gso(bool on) { gso_ = on; }
    // NETIF_F_SG: the driver takes an skb's page fragments. Without it skb_segment copies each
    // segment's data into a linear skb, at `copy_per_byte` cycles per byte (a cached source).
    bool sg() const { return sg_; }
    double copy_per_byte() const { return copy_per_byte_; }
    void set_sg(bool on, double copy_per_byte) {
        sg_ = on;
        copy_per_byte_ = copy_per_byte;
    }
    // How ndo_start_xmit takes a GSO skb: NONE, the stack segments it before the driver.
    virtual TsoKind tso() const { return TsoKind::NONE; }

    // The tx queue's root qdisc (net/qdisc.h); none: __dev_queue_xmit calls the driver at once.
    TxQueue* txq() const { return txq_.get(); }
    void set_txq(std::unique_ptr<TxQueue> q) { txq_ = std::move(q); }
    // Frames the driver's tx ring can take now (flow control under a qdisc).
    virtual std::size_t tx_room() const { return std::numeric_limits<std::size_t>::max(); }
    // validate_xmit_skb segmented a GSO skb of `segs` segments for this device.
    void count_gso_segmented(std::uint32_t segs) { stats_.gso_sw_segs += segs; }

    // process_backlog's delivery of one of this device's frames (skb->dev) taken off a CPU's
    // backlog (net/backlog.h): __netif_receive_skb, the protocol demux, then the stack.
    virtual engine::Task<> backlog_receive(kernel::Cpu& cpu, const Packet& p) {
        co_await cpu.exec(costs().netif_receive_skb, kernel::Cat::PROTOCOL, kernel::Text::NETIF_RECEIVE_SKB);
        co_await deliver(cpu, p);
    }

    // The receive hook's Task for `p` on the device `ctx` (a NetDevice*): GRO's `up` after
    // netif_receive_skb's own cost (Gro::UpCost).
    static engine::Task<> deliver_up(kernel::Cpu& cpu, void* ctx, const Packet& p) {
        return static_cast<NetDevice*>(ctx)->deliver(cpu, p);
    }

    // Attaches a tap (nullptr: none); it must outlive the device's run.
    void set_tap(FrameTap* tap) { tap_ = tap; }

    const NicStats& stats() const { return stats_; }
    const std::string& name() const { return name_; }
    // Registers the device's counters under `s` (<machine>/netdev/<ifname>), as in
    // /sys/class/net/<ifname>/statistics.
    void register_stats(const stats::Scope& s) const {
        s.counter("rx_frames", stats_.rx_frames, "count", "frames received and handed to the stack")
            .counter("rx_bytes", stats_.rx_bytes, "bytes", "bytes of those frames")
            .counter("tx_frames", stats_.tx_frames, "count", "frames transmitted")
            .counter("rx_dropped", stats_.rx_dropped, "count", "frames dropped: rx ring (or backend queue) full")
            .counter("tx_dropped", stats_.tx_dropped, "count", "frames dropped: tx queue full")
            .counter("irqs", stats_.irqs, "count", "device interrupts raised")
            .counter("polls", stats_.polls, "count", "NAPI polls of the device")
            .counter("stale_frames", stats_.stale_frames, "count", "frames the CPU read with stale (not invalidated) lines")
            .counter("kicks", stats_.kicks, "count", "virtio: notifications to the host (guest exits)");
        if (gro_stats_) // with GRO on (ethtool -K gro on)
            s.counter("gro_packets", gro_stats_->packets, "count", "packets through napi_gro_receive")
                .counter("gro_merged", gro_stats_->merged, "count", "segments GRO appended to a held skb")
                .counter("gro_skbs", gro_stats_->skbs_up, "count", "held skbs GRO passed up (of one segment or more)")
                .counter("gro_segs", gro_stats_->segs_up, "count", "segments in the skbs GRO passed up");
        if (rx_copy_on_) // the driver copies every frame (the FEC before rx_copybreak)
            s.counter("rx_copied", stats_.rx_copied, "count", "frames the driver copied into a new skb")
                .counter("rx_copy_bytes", stats_.rx_copy_bytes, "bytes", "bytes of those copies");
        if (netif_rx_on_) // the driver receives in its interrupt handler (the FEC before NAPI)
            s.counter("rx_backlog_dropped", stats_.rx_backlog_dropped, "count",
                      "frames netif_rx dropped: the backlog held netdev_max_backlog (also in rx_dropped)")
                .counter("irq_loops", stats_.irq_loops, "count", "passes of the interrupt handler's IEVENT loop");
        if (poll_loop_on_) // the FEC's NAPI poll loops while IEVENT holds an event (fec_enet_rx_napi)
            s.counter("poll_passes", stats_.poll_passes, "count", "passes of the NAPI poll's loop (fec_enet_rx + fec_enet_tx)");
        if (xdp_on_) // an XDP program on the receive path (ip link set dev <ifname> xdp ...)
            s.counter("xdp_drop", stats_.xdp_drop, "count", "frames the XDP program dropped (XDP_DROP; also in rx_frames)")
                .counter("xdp_pass", stats_.xdp_pass, "count", "frames the XDP program passed to the stack (XDP_PASS)");
        if (rx_tail_on_) // the rx tail's posted MMIO writes ([machine.nic] rx_tail_batch)
            s.counter("rx_tail_writes", stats_.rx_tail_writes, "count",
                      "posted MMIO writes of the rx tail register, each handing refilled descriptors back");
        if (txq_) txq_->register_stats(s.sub("qdisc")); // tc -s qdisc show dev <ifname>
        if (tx_dma_stats_) // with the transmit side through the DMA API
            s.counter("tx_descriptors", tx_dma_stats_->descriptors, "count", "tx descriptors filled")
                .counter("tx_mapped_bytes", tx_dma_stats_->mapped_bytes, "bytes", "bytes mapped DMA_TO_DEVICE for transmit")
                .counter("tx_bounced", tx_dma_stats_->bounced, "count", "tx buffers copied to a bounce buffer (not tx_align'ed)")
                .counter("tx_bounce_bytes", tx_dma_stats_->bounce_bytes, "bytes", "bytes copied to tx bounce buffers")
                .counter("tx_reclaimed", tx_dma_stats_->reclaimed, "count", "tx descriptors reclaimed by tx completion")
                .counter("tx_skbs_freed", tx_dma_stats_->skbs_freed, "count", "skbs freed by tx completion")
                .counter("mmio_writes", tx_dma_stats_->mmio_writes, "count", "posted register writes charged (driver = fec)")
                .counter("mmio_reads", tx_dma_stats_->mmio_reads, "count", "non-posted register reads charged (driver = fec)");
    }

protected:
    XmitSteps noqueue_steps_ = nullptr;
    // The receive hook's Task for `p`, for the caller to await at once (the tap sees the frame now).
    engine::Task<> deliver(kernel::Cpu& cpu, const Packet& p) {
        if (tap_) [[unlikely]] tap_->frame(FrameTap::Dir::RX, cpu.now(), p);
        if (rx_fn_) return rx_fn_(cpu, rx_ctx_, p);
        return nothing();
    }
    // dev_queue_xmit_nit: a frame the device transmits now.
    void tap_xmit(kernel::Cpu& cpu, const Packet& p) {
        if (tap_) [[unlikely]] tap_->frame(FrameTap::Dir::TX, cpu.now(), p);
    }
    NicStats stats_;
    std::string name_;
    const GroStats* gro_stats_ = nullptr; // the device's GRO, when on
    const TxDmaStats* tx_dma_stats_ = nullptr; // the transmit side's DMA API use, when modelled
    bool rx_copy_on_ = false;                  // the driver copies every received frame
    bool netif_rx_on_ = false;                 // the driver receives in hardirq through netif_rx
    bool poll_loop_on_ = false;                // the driver's poll loops over IEVENT (the 6.1 FEC)
    bool xdp_on_ = false;                      // an XDP program runs on every received frame
    bool rx_tail_on_ = false;                  // the driver's rx tail writes are charged
    bool gso_ = false;
    bool sg_ = true;
    double copy_per_byte_ = 0;
    std::unique_ptr<TxQueue> txq_;

private:
    RxHandler rx_fn_ = nullptr;
    void* rx_ctx_ = nullptr;
    FrameTap* tap_ = nullptr;
};

} // namespace kdsim::net
