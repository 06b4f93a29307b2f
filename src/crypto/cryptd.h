// cryptd, the kernel's software async crypto daemon (crypto/cryptd.c), on the generic request
// queue of crypto/algapi.c.
//
// crypto_queue: crypto_enqueue_request() appends a request while qlen < max_qlen
// (-EINPROGRESS); past it a request flagged CRYPTO_TFM_REQ_MAY_BACKLOG is still appended but
// returns -EBUSY and the queue's backlog pointer marks the first such request; one without the
// flag is refused with -ENOSPC. crypto_dequeue_request() takes the head and moves the backlog
// pointer one request on; crypto_get_backlog() names the backlogged request that a dequeue
// admits.
//
// cryptd: one cryptd_cpu_queue per CPU (a crypto_queue of cryptd_max_cpu_qlen, default 1000,
// and a work item on cryptd_wq, run by that CPU's kworker). cryptd_enqueue_request() runs with
// BH disabled: the request goes on this CPU's queue and the work item is queued on this CPU.
// cryptd_queue_worker() handles ONE request per run ("to avoid hogging the crypto
// workqueue"): under local_bh_disable it takes the backlog and the head, tells the backlogged
// request it is now in the queue (-EINPROGRESS), runs the head request's algorithm in task
// context and its completion with BH disabled, and queues itself again while requests remain.
// A transform's refcount counts its requests in flight (cryptd_aead_queued()), which
// crypto/simd.c reads to keep request order.
#pragma once

#include "engine/task.h"
#include "kernel/cpu.h"
#include "kernel/workqueue.h"
#include "stats/registry.h"

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kdsim::crypto {

// The queue returns errno values negated, as the kernel does (EINPROGRESS, EBUSY, ENOSPC).
inline constexpr std::uint32_t CRYPTO_TFM_REQ_MAY_BACKLOG = 0x400;

// A cryptd-wrapped transform (what cryptd_alloc_aead / cryptd_alloc_ahash return): the child
// algorithm the worker runs for a request and the user's completion. `arg` identifies the
// request to its owner.
struct CryptdTfm {
    // The child algorithm, in the worker's task context; returns the request's error (0 = done).
    using Crypt = engine::Task<int> (*)(kernel::Cpu& cpu, void* ctx, std::uint64_t arg);
    // The user's completion (BH disabled): err 0 or the child's error; -EINPROGRESS when a
    // backlogged request has entered the queue proper (the request completes later).
    using Complete = engine::Task<> (*)(kernel::Cpu& cpu, void* ctx, std::uint64_t arg, int err);
    Crypt crypt = nullptr;
    Complete complete = nullptr;
    void* ctx = nullptr;
    std::uint64_t in_flight = 0; // ctx->refcnt - 1: enqueued and not yet completed
};

// Requests of this transform still in cryptd.
// Models: cryptd_aead_queued(), cryptd_ahash_queued() (crypto/cryptd.c)
inline bool cryptd_queued(const CryptdTfm& tfm) { return tfm.in_flight > 0; }

struct CryptoAsyncRequest {
    CryptdTfm* tfm = nullptr;
    std::uint64_t arg = 0;
    std::uint32_t flags = 0; // CRYPTO_TFM_REQ_MAY_BACKLOG or 0
};

// struct crypto_queue with its list and backlog pointer.
class CryptoQueue {
public:
    explicit CryptoQueue(std::size_t max_qlen) : max_qlen_(max_qlen) {}
    // -EINPROGRESS (queued), -EBUSY (queued on the backlog) or -ENOSPC (refused).
    int crypto_enqueue_request(const CryptoAsyncRequest& r);
    // The head request, or none when the queue is empty; the backlog pointer moves on by one.
    std::optional<CryptoAsyncRequest> crypto_dequeue_request();
    // The request the backlog pointer marks, or nullptr.
    const CryptoAsyncRequest* crypto_get_backlog() const;
    std::size_t qlen() const { return list_.size(); }
    std::size_t max_qlen() const { return max_qlen_; }

private:
    static constexpr std::size_t NONE = SIZE_MAX;
    std::size_t max_qlen_;
    std::deque<CryptoAsyncRequest> list_;
    std::size_t backlog_ = NONE; // index in list_ of queue->backlog; NONE when it is the list head
};

// Cycles of cryptd's own work, from the profile.
struct CryptdCosts {
    engine::Cycles cryptd_enqueue = 0; // cryptd_enqueue_request under BH off (queue_work_on apart)
    kernel::WorkqueueCosts workqueue;
    // Per completed request, the child's work and the user's callback apart: the worker's
    // crypto_request_complete into cryptd_*_crypt, the subrequest set up for the child, the
    // ->complete dispatch and refcount_dec_and_test (the local_bh pair is charged by its own).
    engine::Cycles cryptd_complete = 0;
};

struct CryptdStats {
    std::uint64_t enqueued = 0;  // -EINPROGRESS
    std::uint64_t backlogged = 0; // -EBUSY
    std::uint64_t refused = 0;   // -ENOSPC
    std::uint64_t completed = 0;
    std::uint64_t worker_runs = 0; // cryptd_queue_worker calls
    std::uint64_t max_qlen = 0;    // the longest the queue was
};

class Cryptd {
public:
    static constexpr std::size_t CRYPTD_MAX_CPU_QLEN = 1000; // module parameter cryptd_max_cpu_qlen

    // One queue and one cryptd_wq kworker ("kworker/<id>:cryptd") on each of `cpus`; requests
    // are enqueued only from these CPUs.
    Cryptd(const std::vector<kernel::Cpu*>& cpus, const CryptdCosts& costs,
           std::size_t max_cpu_qlen = CRYPTD_MAX_CPU_QLEN);
    ~Cryptd();
    Cryptd(const Cryptd&) = delete;
    Cryptd& operator=(const Cryptd&) = delete;

    // cryptd_enqueue_request on the calling CPU's queue: -EINPROGRESS, -EBUSY or -ENOSPC.
    engine::Task<int> cryptd_enqueue_request(kernel::Cpu& cpu, CryptoAsyncRequest req);
    std::size_t qlen(int cpu) const;
    // Summed over the CPUs (max_qlen: the longest any CPU's queue was).
    const CryptdStats& stats() const { return stats_; }
    // Registers each CPU's queue counters under `s`/cpu<N>.
    void register_stats(const stats::Scope& s) const;

private:
    struct CpuQueue;
    static engine::Task<> cryptd_queue_worker(kernel::Cpu& cpu, void* ctx);

    CryptdCosts costs_;
    std::vector<std::unique_ptr<CpuQueue>> queues_;
    CryptdStats stats_;
};

} // namespace kdsim::crypto
