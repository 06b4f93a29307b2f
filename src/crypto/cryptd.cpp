#include "crypto/cryptd.h"

#include "kernel/softirq.h"

#include <algorithm>

namespace kdsim::crypto {

// Models: crypto_enqueue_request() (crypto/algapi.c)
int CryptoQueue::crypto_enqueue_request(const CryptoAsyncRequest& r) {
    int err = -EINPROGRESS;
    if (list_.size() >= max_qlen_) {
        if (!(r.flags & CRYPTO_TFM_REQ_MAY_BACKLOG)) return -ENOSPC;
        err = -EBUSY;
        if (backlog_ == NONE) backlog_ = list_.size();
    }
    list_.push_back(r);
    return err;
}

// Models: crypto_dequeue_request() (crypto/algapi.c)
std::optional<CryptoAsyncRequest> CryptoQueue::crypto_dequeue_request() {
    if (list_.empty()) return std::nullopt;
    // queue->backlog = queue->backlog->next: the next request, or the list head after the last
    if (backlog_ != NONE && backlog_ + 1 >= list_.size()) backlog_ = NONE;
    CryptoAsyncRequest r = list_.front();
    list_.pop_front();
    return r;
}

// Models: crypto_get_backlog() (include/crypto/algapi.h)
const CryptoAsyncRequest* CryptoQueue::crypto_get_backlog() const {
    return backlog_ == NONE ? nullptr : &list_[backlog_];
}

struct Cryptd::CpuQueue {
    Cryptd* cryptd;
    CryptoQueue queue;
    kernel::WorkStruct work;
    kernel::WorkerPool pool;
    CryptdStats stats; // this CPU's
    CpuQueue(Cryptd* c, kernel::Cpu& cpu, std::size_t max_qlen)
        : cryptd(c), queue(max_qlen), work{&Cryptd::cryptd_queue_worker, this, false},
          pool(cpu, c->costs_.workqueue, "kworker/" + std::to_string(cpu.id()) + ":cryptd") {}
};

Cryptd::Cryptd(const std::vector<kernel::Cpu*>& cpus, const CryptdCosts& costs, std::size_t max_cpu_qlen)
    : costs_(costs) {
    for (kernel::Cpu* c : cpus) {
        const auto i = static_cast<std::size_t>(c->id());
        if (queues_.size() <= i) queues_.resize(i + 1);
        queues_[i] = std::make_unique<CpuQueue>(this, *c, max_cpu_qlen);
    }
}

Cryptd::~Cryptd() = default;

std::size_t Cryptd::qlen(int cpu) const { return queues_[static_cast<std::size_t>(cpu)]->queue.qlen(); }

namespace {
// What each CPU queue counts, in the order registered.
struct QueueCounter {
    std::string_view name;
    std::uint64_t CryptdStats::*field;
    std::string_view description;
};
constexpr QueueCounter QUEUE_COUNTERS[] = {
    {"enqueued", &CryptdStats::enqueued, "requests queued (-EINPROGRESS)"},
    {"backlogged", &CryptdStats::backlogged, "requests queued past max_cpu_qlen on the backlog (-EBUSY)"},
    {"refused", &CryptdStats::refused, "requests dropped: the queue was full (-ENOSPC)"},
    {"completed", &CryptdStats::completed, "requests run and completed by cryptd_queue_worker"},
    {"worker_runs", &CryptdStats::worker_runs, "cryptd_queue_worker runs (one request each)"},
    {"max_qlen", &CryptdStats::max_qlen, "the longest this CPU's queue was"},
};
} // namespace

void Cryptd::register_stats(const stats::Scope& s) const {
    for (std::size_t i = 0; i < queues_.size(); ++i) {
        if (!queues_[i]) continue;
        const stats::Scope cpu = s.sub("cpu" + std::to_string(i));
        for (const QueueCounter& c : QUEUE_COUNTERS) cpu.counter(c.name, queues_[i]->stats.*c.field, "count", c.description);
    }
}

// Models: cryptd_enqueue_request() (crypto/cryptd.c)
engine::Task<int> Cryptd::cryptd_enqueue_request(kernel::Cpu& cpu, CryptoAsyncRequest req) {
    CpuQueue& q = *queues_[static_cast<std::size_t>(cpu.id())];
    co_await kernel::local_bh_disable(cpu);
    co_await cpu.exec(costs_.cryptd_enqueue, kernel::Cat::QUEUEING);
    const int err = q.queue.crypto_enqueue_request(req);
    if (err != -ENOSPC) {
        ++req.tfm->in_flight; // refcount_inc(refcnt)
        for (CryptdStats* s : {&stats_, &q.stats}) {
            ++(err == -EBUSY ? s->backlogged : s->enqueued);
            s->max_qlen = std::max<std::uint64_t>(s->max_qlen, q.queue.qlen());
        }
        co_await q.pool.queue_work(cpu, q.work); // queue_work_on(smp_processor_id(), cryptd_wq, ...)
    } else {
        ++stats_.refused;
        ++q.stats.refused;
    }
    co_await kernel::local_bh_enable(cpu);
    co_return err;
}

// Models: cryptd_queue_worker(), cryptd_aead_crypt(), cryptd_hash_complete() (crypto/cryptd.c)
engine::Task<> Cryptd::cryptd_queue_worker(kernel::Cpu& cpu, void* ctx) {
    CpuQueue& q = *static_cast<CpuQueue*>(ctx);
    Cryptd& d = *q.cryptd;
    ++d.stats_.worker_runs;
    ++q.stats.worker_runs;
    co_await kernel::local_bh_disable(cpu);
    std::optional<CryptoAsyncRequest> backlog;
    if (const CryptoAsyncRequest* b = q.queue.crypto_get_backlog()) backlog = *b;
    const std::optional<CryptoAsyncRequest> req = q.queue.crypto_dequeue_request();
    co_await kernel::local_bh_enable(cpu);
    if (!req) co_return;
    if (backlog) { // crypto_request_complete(backlog, -EINPROGRESS), through cryptd_*_crypt's out: path
        co_await kernel::local_bh_disable(cpu);
        co_await backlog->tfm->complete(cpu, backlog->tfm->ctx, backlog->arg, -EINPROGRESS);
        co_await kernel::local_bh_enable(cpu);
    }
    // cryptd_aead_crypt / cryptd_hash_digest: the child in task context, the completion BH-off
    CryptdTfm& tfm = *req->tfm;
    const int err = co_await tfm.crypt(cpu, tfm.ctx, req->arg);
    co_await cpu.exec(d.costs_.cryptd_complete, kernel::Cat::QUEUEING);
    co_await kernel::local_bh_disable(cpu);
    co_await tfm.complete(cpu, tfm.ctx, req->arg, err);
    co_await kernel::local_bh_enable(cpu);
    --tfm.in_flight; // refcount_dec_and_test(&ctx->refcnt)
    ++d.stats_.completed;
    ++q.stats.completed;
    if (q.queue.qlen()) co_await q.pool.queue_work(cpu, q.work);
}

} // namespace kdsim::crypto
