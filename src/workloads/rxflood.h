// rx_flood: a flood of ESP-like AEAD packets received on one CPU, the simulated twin of the
// user-space receive datapath of `kdsim validate` (src/validate/datapath.cpp, docs/validation.md).
//
// The device runs on another core and keeps the rx ring full (closed loop), so it costs this CPU
// nothing and the rx task never waits for a packet. The rx task (user space: no SIMD bracket, no
// system call per packet) loops over NET_RX-like rounds: polls of up to `weight` packets while
// `budget` lasts (a poll that did its whole weight continues, so a round does at most
// ceil(budget / weight) polls); per round it pays the profile's irq.softirq_round; per packet it
// pays the flush of the buffer's lines (flush != none: lines x [dma] inner_inv_line + [dma]
// barrier) and either the decryption (the fused AEAD primitive's cost of one call over the
// payload: cycles_per_call + payload x cycles_per_byte, or its measured curve, as CRYPTO) or, with cryptd, the hand-off to a worker task on the same CPU:
// cryptd's request queue (crypto/cryptd.h CryptoQueue of cryptd_qlen: a full one refuses the
// request with -ENOSPC and the packet is dropped) and, when the worker sleeps, a try_to_wake_up.
// The worker takes one request per pass, as cryptd_queue_worker does; it is a user thread of the
// harness, not cryptd's kworker, and the rounds are the harness's user-space imitation of
// net_rx_action (a poll that did its whole weight continues in the same round), not the
// kernel's (net/napi.h), because the twin must do what the measured harness does.
// After a round with work queued for the worker the rx task gives the CPU up until the worker
// has emptied its queue (the real harness's sched_yield between rounds with both threads at the
// same SCHED_FIFO priority: the worker then runs until its queue is empty and sleeps).
//
//
// On a profile with [memory] tables (with a flush, only when [flush] gives the re-read's fixed cost
// apart: the flush then pays its own figures and drops the lines, the hierarchy gives the re-read),
// the loop runs on the memory hierarchy (src/mem) with two CPUs:
// the rx CPU (0) and the device's core (1). The descriptors (one 64 B line each, as the harness's
// alignas(64) Desc) and the rx buffers (one contiguous ring of them, plus cryptd's pool) have
// addresses. The device fills a descriptor's buffer as soon as the rx task gives it back: a DMA
// write (non-temporal stores: to DRAM, the CPUs' copies dropped on a coherent platform) and the
// descriptor's done/len store from its core. The rx task reads the descriptor (a line the device's
// core modified), and whoever decrypts reads what InPlaceOpener::open reads, in its order: the
// 16-byte tag at the end of the frame and the ESP header (SPI, sequence number, IV), independent
// loads issued together (their misses overlap up to the core's fill buffers; each a load site the
// stride prefetcher follows from buffer to buffer), then the payload,
// decrypted in place (read, then written); the rx task stores into the descriptor to give it back.
// Each access pays the hierarchy's stall on top of the warm compute figures, except the payload's
// read: the decryption consumes it (MemorySystem::consume), so its lines' fetch overlaps the
// decrypt's cycles and only what the compute does not cover is a stall.
#pragma once

#include "crypto/cryptd.h"
#include "kernel/sched.h"
#include "mem/memory.h"
#include "workloads/config.h"
#include "workloads/workload.h"

#include <memory>
#include <optional>
#include <vector>

namespace kdsim::workloads {

// The costs of one rx_flood packet, resolved from the profile by the system layer.
struct RxFloodCosts {
    Cycles decrypt = 0; // one call over the payload: CipherCostTable::call_cycles of [cipher.<prim>.<impl>]
    std::string impl;            // "<prim>.<impl>", for the result
    Cycles flush_per_packet = 0; // lines x inner_inv_line + barrier (0 without flush)
    std::uint64_t flush_lines = 0;
    std::optional<mem::MemoryConfig> memory; // the hierarchy the loop runs on (none: figures alone)
    std::uint64_t clock_hz = 0;             // the CPU clock, for the hierarchy's cycles
};

class RxFlood final : public Workload {
public:
    RxFlood(Env env, RxFloodWorkload cfg, RxFloodCosts costs);
    void start() override;
    bool finite() const override { return false; }
    results::WorkloadResult result() const override;
    // Cycles of one decryption.
    Cycles decrypt_cycles() const { return costs_.decrypt; }

    // The rx descriptors of the harness (datapath.h RxConfig::ring).
    static constexpr std::size_t RING = 128;
    // The load sites of InPlaceOpener::open, for the stride prefetcher.
    static constexpr std::uint8_t SITE_TAG = 1, SITE_HEADER = 2;

private:
    // The hierarchy's view of the ring: addresses, which buffer each descriptor holds, cryptd's pool.
    struct Hierarchy {
        mem::MemorySystem mem;
        mem::Addr descs = 0, buffers = 0;
        std::vector<std::uint32_t> desc_buf;            // per descriptor, its buffer
        std::vector<std::uint32_t> free_bufs, queued;   // FIFO rings (cryptd): the pool, the queue's buffers
        std::size_t free_head = 0, free_n = 0, q_head = 0, q_n = 0;
        Hierarchy(const mem::MemoryConfig& c, std::uint64_t hz) : mem(c, 2, hz) {}
    };
    // The stall of CPU 0 reading (or writing) [a, a + len) at `t`, and `t` moved past it.
    Cycles touch(Tick& t, mem::Addr a, std::size_t len, bool write);
    // The reads and the in-place write of InPlaceOpener::open on buffer `b`: the stall, from now.
    Cycles open_stall(std::uint32_t b);
    // The descriptor read of packet slot `d`: the stall, from now.
    Cycles desc_read_stall(std::size_t d);
    // The flush of buffer `b`'s flushed lines on the hierarchy (its cycles are the flush figure's).
    void drop_flushed(std::uint32_t b);
    // The rx task gives descriptor `d` back (its store) and the device refills it at once.
    void give_back(std::size_t d);
    mem::Addr buffer_addr(std::uint32_t b) const { return hier_->buffers + static_cast<mem::Addr>(b) * cfg_.buffer; }

    static engine::Task<> rx_body(RxFlood& w);
    static engine::Task<> worker_body(RxFlood& w);
    RxFloodWorkload cfg_;
    RxFloodCosts costs_;
    kernel::TaskStruct* rx_ = nullptr;
    kernel::TaskStruct* worker_ = nullptr;
    bool worker_sleeping_ = false;
    bool rx_yielded_ = false;
    crypto::CryptoQueue queue_;
    crypto::CryptdTfm tfm_; // identifies the requests; the worker decrypts them itself
    std::uint64_t max_queued_ = 0;
    std::uint64_t received_ = 0, decrypted_ = 0, queue_drops_ = 0, lines_ = 0;
    std::uint64_t rounds_ = 0, polls_ = 0, squeezes_ = 0, worker_wakeups_ = 0, yields_ = 0;
    std::unique_ptr<Hierarchy> hier_;
    std::size_t slot_ = 0; // the next descriptor the rx task reads
    Cycles desc_stall_ = 0, frame_stall_ = 0;
};

} // namespace kdsim::workloads
