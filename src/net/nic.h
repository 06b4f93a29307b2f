// A NIC and its driver (a lan743x-like one): an rx descriptor ring, an rx interrupt on one CPU,
// NAPI polling from NET_RX_SOFTIRQ (napi.h: net_rx_action, weight 64, netdev_budget 300), the
// rx buffers' DMA API strategy on non-coherent platforms, and ndo_start_xmit onto a Link.
// Every path masks interrupts through the kernel's primitives (napi_schedule's
// local_irq_save, net_rx_action's local_irq_disable, the driver's tx spin_lock_irqsave), so a
// masking implementation's cost falls out of the packet count. rx_copy (RxDmaConfig::copy) is the
// FEC driver before rx_copybreak: each frame copied into a new skb, the ring buffer mapped again.
// rx_mode NETIF_RX is the FEC before NAPI (Linux 3.0 drivers/net/fec.c): fec_enet_interrupt loops
// over IEVENT in hardirq, fec_enet_rx walks the whole ring there and hands each frame to netif_rx
// (the interrupted CPU's backlog, net/backlog.h); the device interrupt is never masked.
#pragma once

#include "engine/rng.h"
#include "engine/task.h"
#include "devices/dma.h"
#include "devices/dma_port.h"
#include "devices/pcie.h"
#include "kernel/cpu.h"
#include "net/backlog.h"
#include "net/config.h"
#include "net/napi.h"
#include "net/netdevice.h"
#include "net/page_placement.h"
#include "net/net_costs.h"
#include "net/packet.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace kdsim::net {

class Link;

// The rx buffer of a NIC without a DMA API model, for the memory hierarchy's addresses: an MTU
// frame's napi_alloc_skb buffer (1536 B + NET_SKB_PAD + skb_shared_info, rounded to 2 KiB).
inline constexpr std::size_t RX_BUFFER_NO_DMA = 2048;
// The page-frag size the TCP sender fills an skb's data from (sk_page_frag, SKB_FRAG_PAGE_ORDER).
inline constexpr std::uint32_t TSO_FRAG_PAGE = 32768;

// The interrupt coalescing period the FEC hardware gets for `usecs` (ethtool -C rx-usecs, the
// driver's default FEC_ITR_ICTT_DEFAULT = 1000) when its "ahb" clock runs at `itr_clk_hz`: the
// driver's ICTT = usecs * (itr_clk_hz / 64000) / 1000 in integers, masked to its 16-bit field,
// in units of 64 clock cycles; 0 (no coalescing: fec_enet_itr_coal_set leaves RXIC0 0) when the
// ICTT comes out 0. Rounded to the nearest picosecond.
engine::Tick fec_itr_period(std::uint64_t usecs, std::uint64_t itr_clk_hz);

class Nic final : public NetDevice, public engine::EventTarget {
public:
    Nic(Softnet& softnet, unsigned vector, const NetCosts& costs, std::string name, std::size_t ring = 256);
    void attach(Link& link) { link_ = &link; }

    // The NIC's DMA device (its mask) and the machine's DRAM layout, from which its buffers get
    // physical addresses (nullptr: none, every mask reaches them); `index`: the NIC's number on the
    // machine. Call before set_rx_dma and set_tx_dma.
    void set_dma_device(devices::DmaDevice& dev, const devices::DramLayout* dram, std::uint64_t index);
    // Gives the rx ring DMA buffers handled by `cfg`'s strategy; they are mapped by a probe
    // step at the first poll. Call before the run.
    void set_rx_dma(devices::DmaPlatform& platform, const RxDmaConfig& cfg, std::uint32_t line_size);
    std::size_t ring_size() const { return ring_.size(); }
    // Gives the rx buffers addresses in `m` (and the DMA platform, if any, the hierarchy): each
    // refill takes the next buffer of a pool twice the ring's size, as the driver's fresh
    // page-fragment buffers cycle through memory while the received skbs wait to be read. The
    // device's writes then go to DRAM and the driver's first touch of a frame feels it. Call
    // after set_rx_dma, before the run.
    void set_memory(mem::MemorySystem& m);
    // Where the machine's sockets' buffers lie physically (the stack's record): a transmitted
    // skb's own data is mapped where its sender wrote it, cut at its pages (nic_tx.cpp). Without
    // one, every such address lies in a 4 KiB page of its own. Call before the run.
    void set_page_placement(const PagePlacement* p) { pages_ = p ? p : &PagePlacement::none(); }
    // ndo_open: maps every rx buffer. Frames arriving before it completes are dropped.
    engine::Task<> open() { co_await map_ring(); }
    const devices::DmaPlatform* dma() const override { return dma_; }

    // The device: a frame arrives from the wire and is written into the rx ring (behind a PCIe
    // link: once its DMA write has crossed the link, nic_pcie.cpp). `p` is read before anything
    // of the machine's can run (an interrupt raised now): Link::on_event passes its ring's slot.
    void receive_from_wire(const Packet& p);
    // Puts the device behind `link`, whose upstream direction its rx DMA writes share with the
    // other devices there; frames wait in the device's rx FIFO of `fifo_bytes` for the link and
    // are dropped when it is full. Call before the run.
    void set_pcie(devices::PcieLink& link, std::size_t fifo_bytes);
    // Puts the device's DMA behind a SoC port slower than its line (devices/dma_port.h): a
    // received frame waits in the rx FIFO of `fifo_bytes` until its write has crossed the port
    // (dropped when the FIFO is full: an overrun), a transmitted frame goes on the wire once the
    // device has fetched it through the port. Call before the run; not with set_pcie.
    void set_dma_port(devices::DmaPort& port, std::size_t fifo_bytes);
    // A SoC's own MAC whose interconnect keeps up with its line: a received frame waits in the rx
    // FIFO of `fifo_bytes` only while the ring has no free descriptor for it (dropped when the
    // FIFO is full). Call before the run; not with set_pcie or set_dma_port.
    void set_rx_fifo(std::size_t fifo_bytes);
    // Frames dropped because the rx FIFO was full (the link or port too slow, or no descriptor).
    const std::uint64_t& rx_fifo_dropped() const { return fifo_dropped_; }
    // Frames that waited in the rx FIFO for a free descriptor (igb's rx_no_buffer_count), and the
    // most that waited at once.
    const std::uint64_t& rx_no_desc_held() const { return no_desc_held_; }
    const std::uint64_t& rx_no_desc_held_max() const { return no_desc_held_max_; }
    bool on_pcie() const { return pcie_ != nullptr; }
    // Its frames wait in an rx FIFO (behind a PCIe link or a SoC port, or set_rx_fifo).
    bool has_rx_fifo() const { return fifo_; }
    const devices::DmaPort* dma_port() const { return port_; }
    // 802.3x flow control on the receive side (the FEC's pause frames, negotiated by default in
    // Linux 6.1 for a gigabit FEC: fec_probe sets FEC_PAUSE_FLAG_AUTONEG, fec_enet_mii_probe
    // phy_support_sym_pause): a frame that finds the rx FIFO full is not overrun but held back
    // by the link partner, which the MAC paused, and comes in as soon as the FIFO has room; at
    // most the link's queue of frames are held (the partner's tx queue), further ones dropped.
    // Call before the run, after set_dma_port or set_pcie.
    void set_rx_pause(bool on) { pause_ = on; }
    bool rx_pause() const { return pause_; }
    // Frames the partner held back while paused, and the most held at once.
    const std::uint64_t& rx_pause_held() const { return pause_held_; }
    const std::uint64_t& rx_pause_held_max() const { return pause_held_max_; }
    engine::Task<> xmit(kernel::Cpu& cpu, const Packet& p) override;
    // start_xmit<true>'s frame; without the DMA API (no tx_map) the stack runs its steps in the
    // caller's frame instead (noqueue_steps: xmit_steps) and does not call this.
    engine::Task<bool> dev_queue_xmit_noqueue(kernel::Cpu& cpu, const Packet& p) override;
    // Interrupt moderation (ethtool -C rx-usecs): at least `t` between two rx interrupts.
    void set_rx_usecs(engine::Tick t) { rx_usecs_ = t; }
    // The NAPI poll's loop over IEVENT (PollLoop, net/config.h: the 6.1 FEC's fec_enet_rx_napi);
    // NONE: one pass. Needs rx_mode NAPI. Call before the run.
    void set_poll_loop(PollLoop l) {
        poll_loop_ = l;
        poll_loop_on_ = l != PollLoop::NONE;
    }
    // GRO on (NETIF_F_GRO, the default) with these costs; without a call the driver hands every
    // frame to netif_receive_skb (ethtool -K gro off). Call before the run.
    void set_gro(const GroCosts& costs) {
        gro_.emplace(costs, &NetDevice::deliver_up, static_cast<NetDevice*>(this),
                     Gro::UpCost{&costs_.netif_receive_skb, kernel::Text::NETIF_RECEIVE_SKB});
        gro_stats_ = &gro_->stats();
    }
    const Gro* gro() const { return gro_ ? &*gro_ : nullptr; }
    // The driver's TSO (NONE: the stack segments GSO skbs). FEC_SOFTWARE needs the [net] tso_hdr
    // and tso_data figures. Call before the run.
    void set_tso(TsoKind k) { tso_ = k; }
    // The transmit side through the DMA API (nic_tx.cpp): each tx buffer mapped DMA_TO_DEVICE in
    // xmit (bounced first under `cfg`'s tx_align), reclaimed by the NAPI poll once the frame has
    // left. `copy_per_byte`: the bounce memcpy's warm cycles per byte. Needs the [net] tx_clean and
    // tx_skb_free figures (FEC: also fec_xmit, fec_irq, mmio_*). Registers the rx interrupt's handler
    // of its driver (rx_irq<FEC>; in rx_mode NAPI). Call before set_memory and before the run.
    void set_tx_dma(devices::DmaPlatform& platform, const TxDmaConfig& cfg, std::uint32_t line_size, double copy_per_byte);
    const TxDmaStats* tx_dma_stats() const { return tx_dma_ ? &tx_stats_ : nullptr; }
    TsoKind tso() const override { return tso_; }
    // Each rx interrupt reaches the CPU `latency` after the device raises it: the MSI write or
    // the interrupt line crossing the interconnect and the interrupt controller ([irq]
    // device_delivery). Zero: at once. Call before the run.
    void set_irq_delivery(engine::Tick latency) { irq_delivery_ = latency; }
    // Run-to-run variation: each rx interrupt reaches the CPU a delay drawn uniformly from
    // [0, max] later still (beyond set_irq_delivery's latency), from `rng`. Call before the run.
    void set_irq_delivery_jitter(engine::Tick max, engine::Rng rng) {
        irq_jitter_ = max;
        irq_rng_ = rng;
    }
    // EV_MODERATION: a moderated interrupt is due; EV_DELIVER: one arrives; EV_TX_DONE: an skb's
    // frames have left (tx completion due); EV_DMA_DONE: a frame's DMA write crossed the PCIe link
    void on_event(std::uint64_t arg) override;

    // rx_mode = "netif_rx": the 3.0 FEC's receive in its interrupt handler, each frame through
    // netif_rx to `backlog` (the interrupt CPU's, which charges process_backlog). Needs driver =
    // "fec" (set_tx_dma) and the [net] netif_rx and fec_irq_loop figures. Call before the run.
    void set_netif_rx(Backlog& backlog) {
        rx_mode_ = RxMode::NETIF_RX;
        cpu_.request_irq(vector_, &Nic::rx_irq_netif_rx, this, name_ + "-rx");
        backlog_ = &backlog;
        netif_rx_on_ = true;
    }
    RxMode rx_mode() const { return rx_mode_; }
    // The driver hands refilled rx descriptors back with a posted write of the rx tail register,
    // once per `batch` of them and once at the end of a poll for the rest (igb_alloc_rx_buffers,
    // called every IGB_RX_BUFFER_WRITE = 16 cleaned buffers and at the end of igb_clean_rx_irq;
    // lan743x_rx_update_tail every 8 descriptors); each costs [net] mmio_posted_write. batch 0: the
    // driver writes no register (mlx5e's doorbell record is in memory). Without the figure, or with
    // driver = "fec" (whose register writes fec_mmio charges), nothing is charged. Call before the run.
    void set_rx_tail_batch(std::size_t batch) {
        rx_tail_batch_ = costs_.mmio_posted_write && !fec() ? batch : 0;
        rx_tail_on_ = rx_tail_batch_ > 0;
    }
    // An XDP program on every received frame (bpf_prog_run_xdp in the NAPI poll): PASS charges
    // [net] xdp_prog_run and goes on; DROP charges it and xdp_drop, syncs the received bytes for
    // the CPU and, the page recycled, for the device again, and builds no skb. Needs those figures
    // and rx_mode NAPI. Call before the run.
    void set_xdp(XdpAction a) {
        xdp_ = a;
        xdp_on_ = a != XdpAction::NONE;
    }

    kernel::Cpu& cpu() { return cpu_; }
    const NetCosts& costs() const override { return costs_; }
    // Under a qdisc the link's queue of this direction is the tx ring (in frames).
    std::size_t tx_room() const override;

private:
    // FEC = fec(): the FEC's register accesses are a step of their own; set_tx_dma registers the
    // form that matches the driver (other drivers have no such step, not one of no cycles).
    template <bool FEC>
    static kernel::IrqStep rx_irq(kernel::Cpu& cpu, void* ctx, unsigned step);
    static engine::Task<> rx_irq_netif_rx(kernel::Cpu& cpu, void* ctx);
    static engine::Task<int> napi_poll(kernel::Cpu& cpu, void* ctx, int budget);
    // The NAPI poll around the ring walk: up to `budget` frames off the ring (each descriptor's
    // completion, hand-off and refill) and to the stack; in rx_mode NETIF_RX the walk alone.
    // Returns the frames taken, dropped ones included.
    engine::Task<int> rx_poll(kernel::Cpu& cpu, int budget);
    // xdp = DROP: the frame's descriptors completed and recycled; no skb is built.
    engine::Task<> rx_xdp_drop(const Packet& p, unsigned fec_writes);
    // The rx tail's posted write: the descriptors refilled since the last one go back to the device.
    // `co_await rx_tail_write()` is its exec (an awaitable: no coroutine frame of its own).
    kernel::Cpu::ExecAwaiter rx_tail_write();
    XdpAction xdp_ = XdpAction::NONE;
    // rx_mode NETIF_RX: the 3.0 FEC's handler (its ring walk, fec_enet_rx over every frame, is
    // rx_poll's), netif_rx; the device's IEVENT bits and its interrupt line (asserted from the
    // first event until the handler reads IEVENT empty).
    engine::Task<> fec_enet_interrupt(kernel::Cpu& cpu);
    engine::Task<> netif_rx(kernel::Cpu& cpu, const Packet& p);
    void fec_event(unsigned bits);
    static constexpr unsigned FEC_ENET_RXF = 1, FEC_ENET_TXF = 2;
    RxMode rx_mode_ = RxMode::NAPI;
    // poll_loop: the events IEVENT holds for the NAPI poll's loop (ievent_), set as the frames and
    // tx completions come; fec_collect_events reads and acks what the loop can see.
    PollLoop poll_loop_ = PollLoop::NONE;
    bool fec_collect_events();
    Backlog* backlog_ = nullptr;
    unsigned ievent_ = 0;
    bool irq_line_ = false;
    engine::Task<> rx_copy_frame(std::size_t slot, std::size_t n); // rx_copy: n bytes into a new skb
    static constexpr std::size_t NET_IP_ALIGN = 2; // arm's: the copied skb's data offset
    // Descriptors whose refill mapping failed (dma_mapping_error): the device cannot use them until
    // a later poll maps them; the frame that freed them was dropped.
    std::vector<std::size_t> rx_unmapped_;
    bool rx_drop_frame_ = false;
    engine::Task<> rx_retry_refills();
    [[gnu::cold, gnu::noinline]] void rx_refill_failed(std::size_t slot);
    // Descriptors a frame of `len` bytes (FCS excluded) occupies.
    std::size_t descriptors_for(std::uint32_t len) const;
    // The device raises its rx interrupt, now or when moderation allows.
    void raise_rx_irq();
    engine::Task<> map_ring();
    // ndo_start_xmit; BH: inside __dev_queue_xmit's rcu_read_lock_bh section, with the stack's
    // part, all in this frame (dev_queue_xmit_noqueue), and true.
    template <bool BH>
    engine::Task<std::conditional_t<BH, bool, void>> start_xmit(kernel::Cpu& cpu, const Packet& p);
    // start_xmit<true>'s awaits as XmitRun steps, for a Nic without tx_dma_ (whose start_xmit
    // awaits no Task): the same execs, mask operations and frames, in the same order.
    static bool xmit_steps(XmitRun& r);
    // start_xmit's plain parts: FEC software TSO's cycles for a GSO skb of `segs`; the frames
    // onto the wire; after tx_queued, the qdisc's completion bookkeeping.
    Cycles tso_cycles(const Packet& p, std::uint32_t segs);
    void xmit_frames(kernel::Cpu& cpu, const Packet& p, std::uint32_t segs);
    void xmit_queued(const Packet& p);
    bool fec() const { return tx_dma_ && tx_cfg_.driver == NicDriver::FEC; }
    bool rx_dma_on() const { return rx_dma_.strategy != RxStrategy::NONE; }
    // FEC register accesses (driver = "fec"): `writes` writel()s and `reads` readl()s, charged;
    // `co_await fec_mmio(...)` is their exec (an awaitable: no coroutine frame of its own).
    kernel::Cpu::ExecAwaiter fec_mmio(kernel::Cpu& cpu, unsigned writes, unsigned reads);
    Cycles fec_mmio_cycles(unsigned writes, unsigned reads); // counted, not charged
    // nic_tx.cpp: the skb's descriptors mapped (and bounced) for the device; its frames' departure
    // schedules the completion. tx_reclaim: fec_enet_tx / the completion of what has left.
    // Returns false when a mapping failed: the skb's descriptors are undone and it is dropped.
    engine::Task<bool> tx_map(kernel::Cpu& cpu, const Packet& p, std::uint32_t segs);
    void tx_queued(std::size_t first_desc, engine::Tick departs);
    std::uint32_t tso_chunks(const Packet& p) const; // FEC software TSO: the data descriptors of a GSO skb with an address
    engine::Task<> tx_reclaim(kernel::Cpu& cpu);
    bool tx_pending() const { return tx_done_skbs_ > 0; }
    devices::DmaBuffer* tx_buffer();
    void tx_set_memory(mem::MemorySystem& m); // the tx regions' addresses
    // Adds a descriptor of `len` bytes at `addr` (the CPU's data, in `region`: TX_HEADS or TX_DATA,
    // the model's stand-ins written here for free, or TX_SKB: the skb's own data, which its sender
    // wrote and paid for); `coherent`: in the driver's dma_alloc_coherent area (no mapping). False:
    // the mapping failed.
    engine::Task<bool> tx_descriptor(kernel::Cpu& cpu, mem::Addr addr, std::uint32_t len, bool coherent, unsigned region);
    // Physical addresses of the NIC's buffers: the n-th block of `unit` bytes of `region`.
    static constexpr unsigned RX_POOL = 0, TX_HEADS = 1, TX_DATA = 2, TX_BOUNCE = 3, TX_SKB = 4;
    const PagePlacement* pages_ = &PagePlacement::none();
    std::uint64_t phys_of(unsigned region, std::uint64_t n, std::uint64_t unit) const;
    devices::DmaDevice* dma_dev_ = nullptr;
    const devices::DramLayout* dram_ = nullptr;
    std::uint64_t nic_index_ = 0;
    std::size_t rx_phys_next_ = 0;

    Softnet& softnet_;
    kernel::Cpu& cpu_;
    NapiStruct napi_;
    unsigned vector_;
    NetCosts costs_;
    std::optional<Gro> gro_;
    TsoKind tso_ = TsoKind::NONE;
    Link* link_ = nullptr;
    std::vector<Packet> ring_;
    std::size_t head_ = 0, count_ = 0;
    std::size_t rx_tail_batch_ = 0; // descriptors per rx tail write (0: none charged)
    std::size_t rx_refilled_ = 0;   // descriptors refilled since the last rx tail write
    bool irq_enabled_ = true; // the device's rx interrupt (masked while NAPI polls)
    engine::Tick rx_usecs_ = 0;
    engine::Tick last_irq_ = 0;
    bool irq_timer_armed_ = false;
    bool irq_raised_once_ = false;
    static constexpr std::uint64_t EV_MODERATION = 0, EV_DELIVER = 1, EV_DMA_DONE = 3, EV_XON = 4; // EV_TX_DONE = 2 below
    // The frame's descriptors in the ring and its bytes in memory; the rx interrupt.
    void ring_write(const Packet& p);
    // Behind a PCIe link or a SoC port: the frames whose DMA write is under way, oldest first
    // (nic_pcie.cpp).
    devices::PcieLink* pcie_ = nullptr;
    devices::DmaPort* port_ = nullptr;
    bool fifo_ = false;
    std::size_t fifo_capacity_ = 0, fifo_bytes_ = 0;
    std::vector<Packet> dma_inflight_;
    // The frames in the FIFO that wait for a free descriptor, oldest first.
    Fifo<Packet> no_desc_;
    std::uint64_t no_desc_held_ = 0, no_desc_held_max_ = 0;
    std::size_t dma_head_ = 0, dma_count_ = 0, dma_descriptors_ = 0;
    std::uint64_t fifo_dropped_ = 0;
    // With rx pause: the frames the paused partner holds, oldest first.
    bool pause_ = false;
    Fifo<Packet> paused_;
    std::uint64_t pause_held_ = 0, pause_held_max_ = 0;
    bool xon_armed_ = false;     // the next held frame is on the wire
    engine::Tick held_in_ = 0;   // when the last held frame came in
    void pause_resume();         // XON once the FIFO has room for the oldest held frame
    bool admit_held();           // the oldest held frame comes in (false: the FIFO has no room)
    void on_xon();               // the held frame on the wire has come in
    void reset_rx_fifo(std::size_t bytes); // an empty rx FIFO of `bytes`
    bool descriptors_free(std::uint32_t len) const; // the ring has the descriptors a frame of `len` needs
    void fifo_receive(const Packet& p);
    bool fifo_admit(const Packet& p); // false: the FIFO has no room for it
    void fifo_dma_start(const Packet& p); // takes its descriptors; its write across the link or port
    void fifo_dma_done();
    // After descriptors came free: the frames waiting for one start their writes, then the paused
    // partner's frames come in while the FIFO has room.
    void fifo_kick();
    engine::Tick irq_delivery_ = 0;
    engine::Tick irq_jitter_ = 0;
    engine::Rng irq_rng_{0, "unused"};
    // DMA rx buffers, one per descriptor (only with an RxDmaConfig)
    devices::DmaPlatform* dma_ = nullptr;
    RxDmaConfig rx_dma_;
    std::vector<devices::DmaBuffer> bufs_;
    bool ring_mapped_ = false;
    // the memory hierarchy: the pool of rx buffer addresses and each descriptor's current one
    mem::MemorySystem* memory_ = nullptr;
    mem::Addr pool_base_ = 0;
    std::size_t pool_buffers_ = 0, pool_next_ = 0, pool_stride_ = 0;
    std::vector<mem::Addr> slot_addr_;
    mem::Addr next_rx_buffer();
    Cycles rx_buffer_alloc_ = 0;

    // the transmit side through the DMA API (nic_tx.cpp)
    struct TxDesc {
        devices::DmaBuffer* buf = nullptr; // nullptr: a TSO header in coherent memory (no unmap)
        std::uint32_t len = 0;             // the mapping's length
        std::uint32_t dev_len = 0;         // what the device reads (from the line holding the data)
        bool skb_end = false;              // the skb's last descriptor (tx_skbuff[index])
    };
    bool tx_dma_ = false;
    TxDmaConfig tx_cfg_;
    double tx_copy_per_byte_ = 0;
    std::uint32_t tx_line_ = 32;
    std::vector<std::unique_ptr<devices::DmaBuffer>> tx_pool_; // every buffer object made (grows to the high-water mark)
    std::vector<devices::DmaBuffer*> tx_free_;
    std::vector<TxDesc> tx_ring_; // circular, in submission order; grows when full
    std::size_t tx_head_ = 0, tx_count_ = 0, tx_index_ = 0;
    std::size_t tx_done_skbs_ = 0;   // skbs whose frames have all left, not yet reclaimed
    std::uint64_t tx_frag_off_ = 0;  // the sender's page-frag stream: where the next payload byte lies
    mem::Addr tx_data_base_ = 0, tx_bounce_base_ = 0, tx_head_base_ = 0;
    TxDmaStats tx_stats_;
    static constexpr std::uint64_t EV_TX_DONE = 2;
    // flow control under a qdisc: netif_tx_stop_queue, and the completion that wakes the queue
    bool tx_wake_armed_ = false;
    // skbs on the wire whose tx completion frees them (their sockets' TSQ), oldest first
    struct TxDone {
        Packet skb;
        engine::Tick departs;
    };
    Fifo<TxDone> tx_done_;
    bool tx_done_armed_ = false;
    static Cycles tx_done_irq(kernel::Cpu& cpu, void* ctx, engine::Tick expiry);
    void netif_maybe_stop_queue();
    static Cycles tx_wake_irq(kernel::Cpu& cpu, void* ctx, engine::Tick expiry);

    // rx_copy (RxDmaConfig::copy): the copy's warm cycles per byte, where the last frame was copied to
    double rx_copy_per_byte_ = 0;
    mem::Addr rx_copied_to_ = 0;

public:
    void set_rx_buffer_alloc_cost(Cycles c) { rx_buffer_alloc_ = c; }
    // rx_copy: the copy's cycles per byte (warm compute on the memory hierarchy, else a cold
    // source's copy figure). Call before the run.
    void set_rx_copy_cost(double cycles_per_byte) { rx_copy_per_byte_ = cycles_per_byte; }
};

} // namespace kdsim::net
