// rx_flood: a flood of ESP-like AEAD packets received on one CPU, the simulated twin of the
// user-space receive datapath of `kdsim validate` (src/validate/datapath.cpp, docs/validation.md).
//
// The device runs on another core and keeps the rx ring full (closed loop), so it costs this CPU
// nothing and the rx task never waits for a packet. The rx task (user space: no SIMD bracket, no
// system call per packet) loops over NET_RX-like rounds: polls of up to `weight` packets while
// `budget` lasts (a poll that did its whole weight continues, so a round does at most
// ceil(budget / weight) polls); per round it pays the profile's irq.softirq_round; per packet it
// pays the flush of the buffer's lines (flush != none: lines x [dma] inner_inv_line + [dma]
// barrier) and either the decryption (the fused AEAD primitive's cycles_per_call + payload x
// cycles_per_byte, as CRYPTO) or, with cryptd, the hand-off to a worker task on the same CPU:
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
// Per-packet work of the real loop that no profile figure covers (reading the descriptor, the
// first touch of the lines the device wrote) is not charged: docs/validation.md.
#pragma once

#include "crypto/cryptd.h"
#include "kernel/sched.h"
#include "workloads/config.h"
#include "workloads/workload.h"

namespace kdsim::workloads {

// The costs of one rx_flood packet, resolved from the profile by the system layer.
struct RxFloodCosts {
    Cycles decrypt_per_call = 0; // [cipher.<prim>.<impl>] cycles_per_call
    double decrypt_per_byte = 0; // and cycles_per_byte
    std::string impl;            // "<prim>.<impl>", for the result
    Cycles flush_per_packet = 0; // lines x inner_inv_line + barrier (0 without flush)
    std::uint64_t flush_lines = 0;
};

class RxFlood final : public Workload {
public:
    RxFlood(Env env, RxFloodWorkload cfg, RxFloodCosts costs);
    void start() override;
    bool finite() const override { return false; }
    results::WorkloadResult result() const override;
    // Cycles of one decryption.
    Cycles decrypt_cycles() const { return decrypt_; }

private:
    static engine::Task<> rx_body(RxFlood& w);
    static engine::Task<> worker_body(RxFlood& w);
    RxFloodWorkload cfg_;
    RxFloodCosts costs_;
    Cycles decrypt_ = 0;
    kernel::TaskStruct* rx_ = nullptr;
    kernel::TaskStruct* worker_ = nullptr;
    bool worker_sleeping_ = false;
    bool rx_yielded_ = false;
    crypto::CryptoQueue queue_;
    crypto::CryptdTfm tfm_; // identifies the requests; the worker decrypts them itself
    std::uint64_t max_queued_ = 0;
    std::uint64_t received_ = 0, decrypted_ = 0, queue_drops_ = 0, lines_ = 0;
    std::uint64_t rounds_ = 0, polls_ = 0, squeezes_ = 0, worker_wakeups_ = 0, yields_ = 0;
};

} // namespace kdsim::workloads
