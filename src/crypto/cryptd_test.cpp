// cryptd and the crypto request queue, against crypto/algapi.c and crypto/cryptd.c read by hand:
// -EINPROGRESS below max_qlen, -ENOSPC past it without CRYPTO_TFM_REQ_MAY_BACKLOG, -EBUSY and
// the backlog pointer with it; one request per cryptd_queue_worker run, the child in task
// context with BH enabled, the completion with BH disabled, the work item re-queued while
// requests remain. Costs are round numbers on a 1 GHz clock so the sums can be checked.
#include "crypto/cryptd.h"

#include "kernel/preempt.h"
#include "kernel/sched.h"

#include <gtest/gtest.h>

#include <map>

#include <string>
#include <vector>

namespace kdsim::crypto {
namespace {

using kernel::Cat;
using kernel::CtxKind;

TEST(CryptoQueue, AcceptsUpToMaxQlenThenRefusesWithoutBacklogFlagAndBacklogsWithIt) {
    CryptdTfm tfm;
    CryptoQueue q(2);
    EXPECT_EQ(q.crypto_enqueue_request({&tfm, 1, 0}), -EINPROGRESS);
    EXPECT_EQ(q.crypto_enqueue_request({&tfm, 2, 0}), -EINPROGRESS);
    EXPECT_EQ(q.crypto_enqueue_request({&tfm, 3, 0}), -ENOSPC);
    EXPECT_EQ(q.qlen(), 2u);
    EXPECT_EQ(q.crypto_get_backlog(), nullptr);
    EXPECT_EQ(q.crypto_enqueue_request({&tfm, 4, CRYPTO_TFM_REQ_MAY_BACKLOG}), -EBUSY);
    EXPECT_EQ(q.crypto_enqueue_request({&tfm, 5, CRYPTO_TFM_REQ_MAY_BACKLOG}), -EBUSY);
    EXPECT_EQ(q.qlen(), 4u); // backlogged requests are on the list too
    ASSERT_NE(q.crypto_get_backlog(), nullptr);
    EXPECT_EQ(q.crypto_get_backlog()->arg, 4u); // the first backlogged request
}

TEST(CryptoQueue, EachDequeueTakesTheHeadAndMovesTheBacklogPointerOneRequestOn) {
    CryptdTfm tfm;
    CryptoQueue q(2);
    for (std::uint64_t i = 1; i <= 2; ++i) q.crypto_enqueue_request({&tfm, i, 0});
    for (std::uint64_t i = 3; i <= 4; ++i) q.crypto_enqueue_request({&tfm, i, CRYPTO_TFM_REQ_MAY_BACKLOG});
    // list 1 2 3 4, backlog at 3
    EXPECT_EQ(q.crypto_dequeue_request()->arg, 1u);
    ASSERT_NE(q.crypto_get_backlog(), nullptr);
    EXPECT_EQ(q.crypto_get_backlog()->arg, 4u); // backlog->next
    EXPECT_EQ(q.crypto_dequeue_request()->arg, 2u);
    EXPECT_EQ(q.crypto_get_backlog(), nullptr); // 4->next is the list head
    EXPECT_EQ(q.crypto_dequeue_request()->arg, 3u);
    EXPECT_EQ(q.crypto_dequeue_request()->arg, 4u);
    EXPECT_FALSE(q.crypto_dequeue_request().has_value());
}

// What the child and the completion saw.
struct Seen {
    std::uint64_t arg;
    int err;            // completion's err; 1 for the child's call
    std::uint32_t pc;   // preempt_count
    CtxKind ctx;
    std::string task;
    bool queued;        // cryptd_queued(tfm) at that moment
};

struct Harness {
    engine::Simulation sim{1};
    kernel::Cpu cpu;
    Cryptd cryptd;
    CryptdTfm tfm;
    std::vector<Seen> seen;
    std::vector<int> results;

    explicit Harness(CryptdCosts costs, std::size_t qlen)
        : cpu(sim, 0, engine::Clock(1'000'000'000), kernel::KernelCosts{}, kernel::KernelConfig{}),
          cryptd({&cpu}, costs, qlen), tfm{&child, &complete, this} {}

    void note(std::uint64_t arg, int err) {
        seen.push_back({arg, err, cpu.preempt_count(), cpu.ctx_kind(), cpu.current()->comm, cryptd_queued(tfm)});
    }
    static engine::Task<int> child(kernel::Cpu& cpu, void* ctx, std::uint64_t arg) {
        auto& h = *static_cast<Harness*>(ctx);
        h.note(arg, 1);
        co_await cpu.exec(1000, Cat::CRYPTO);
        co_return 0;
    }
    static engine::Task<> complete(kernel::Cpu&, void* ctx, std::uint64_t arg, int err) {
        static_cast<Harness*>(ctx)->note(arg, err);
        co_return;
    }
    // A SCHED_FIFO task (the kworker cannot run before it ends) enqueues requests 1..n, the
    // ones listed in `backlog` with CRYPTO_TFM_REQ_MAY_BACKLOG.
    static engine::Task<> submitter(Harness& h, std::uint64_t n, std::vector<std::uint64_t> backlog) {
        for (std::uint64_t i = 1; i <= n; ++i) {
            std::uint32_t flags = 0;
            for (std::uint64_t b : backlog)
                if (b == i) flags = CRYPTO_TFM_REQ_MAY_BACKLOG;
            h.results.push_back(co_await h.cryptd.cryptd_enqueue_request(h.cpu, CryptoAsyncRequest{&h.tfm, i, flags}));
        }
    }
    void run(std::uint64_t n, std::vector<std::uint64_t> backlog = {}) {
        cpu.create_task("submitter", kernel::SchedPolicy::FIFO, 50, true, submitter(*this, n, std::move(backlog)));
        cpu.boot();
        sim.run(engine::PS_PER_S);
        cpu.finish();
    }
    engine::Cycles task_cycles(Cat c) const {
        return cpu.stats().cycles[static_cast<std::size_t>(CtxKind::TASK)][static_cast<std::size_t>(c)];
    }
};

TEST(Cryptd, HandlesOneRequestPerWorkItemRunInOrderAndTheQueueEmpties) {
    Harness h(CryptdCosts{}, Cryptd::CRYPTD_MAX_CPU_QLEN);
    h.run(3);
    EXPECT_EQ(h.results, (std::vector<int>{-EINPROGRESS, -EINPROGRESS, -EINPROGRESS}));
    EXPECT_EQ(h.cryptd.stats().worker_runs, 3u); // three runs: the first re-queued itself twice
    EXPECT_EQ(h.cryptd.stats().completed, 3u);
    EXPECT_EQ(h.cryptd.stats().max_qlen, 3u);
    EXPECT_EQ(h.cryptd.qlen(0), 0u);
    ASSERT_EQ(h.seen.size(), 6u); // child then completion, per request, in submission order
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(h.seen[2 * i].arg, i + 1);
        EXPECT_EQ(h.seen[2 * i].err, 1);
        EXPECT_EQ(h.seen[2 * i + 1].arg, i + 1);
        EXPECT_EQ(h.seen[2 * i + 1].err, 0);
    }
    EXPECT_EQ(h.task_cycles(Cat::CRYPTO), 3000u);
}

TEST(Cryptd, RunsTheChildInTaskContextWithBhEnabledAndTheCompletionWithBhDisabled) {
    Harness h(CryptdCosts{}, Cryptd::CRYPTD_MAX_CPU_QLEN);
    h.run(1);
    ASSERT_EQ(h.seen.size(), 2u);
    for (const Seen& s : h.seen) {
        EXPECT_EQ(s.ctx, CtxKind::TASK);
        EXPECT_EQ(s.task, "kworker/0:cryptd");
        EXPECT_TRUE(s.queued); // still counted in flight until the completion has returned
    }
    EXPECT_EQ(h.seen[0].pc, 0u);                              // cryptd_aead_crypt's child call
    EXPECT_EQ(h.seen[1].pc, kernel::SOFTIRQ_DISABLE_OFFSET); // local_bh_disable around the completion
    EXPECT_FALSE(cryptd_queued(h.tfm));                      // refcount back once completed
}

TEST(Cryptd, AFullQueueRefusesWithEnospcOrBacklogsWithEbusyAndTellsTheBacklogWhenItEnters) {
    // max_cpu_qlen 2: requests 1, 2 queue; 3 (no flag) is refused; 4 (MAY_BACKLOG) is
    // backlogged. Run 1 admits 4 (-EINPROGRESS to its completion) and handles 1; run 2
    // handles 2; run 3 handles 4.
    Harness h(CryptdCosts{}, 2);
    h.run(4, {4});
    EXPECT_EQ(h.results, (std::vector<int>{-EINPROGRESS, -EINPROGRESS, -ENOSPC, -EBUSY}));
    std::vector<std::pair<std::uint64_t, int>> order;
    for (const Seen& s : h.seen) order.emplace_back(s.arg, s.err);
    EXPECT_EQ(order, (std::vector<std::pair<std::uint64_t, int>>{
                         {4, -EINPROGRESS}, {1, 1}, {1, 0}, {2, 1}, {2, 0}, {4, 1}, {4, 0}}));
    const CryptdStats& s = h.cryptd.stats();
    EXPECT_EQ(s.enqueued, 2u);
    EXPECT_EQ(s.backlogged, 1u);
    EXPECT_EQ(s.refused, 1u);
    EXPECT_EQ(s.completed, 3u);
    EXPECT_EQ(s.worker_runs, 3u);
    EXPECT_EQ(s.max_qlen, 3u);
}

TEST(Cryptd, RegistersEachCpusQueueCountersUnderItsPlace) {
    // The run of the test above (max_cpu_qlen 2; 1, 2 queued, 3 refused, 4 backlogged; three
    // worker runs) on CPU 0: its queue's counters under <scope>/cpu0, as stats() sums them.
    Harness h(CryptdCosts{}, 2);
    stats::Registry reg;
    h.cryptd.register_stats(stats::Scope(reg, "m/cryptd"));
    h.run(4, {4});
    std::map<std::string, double> v;
    for (const stats::Entry& e : reg.entries()) v[e.path] = e.value();
    EXPECT_EQ(v, (std::map<std::string, double>{{"m/cryptd/cpu0/enqueued", 2},
                                                 {"m/cryptd/cpu0/backlogged", 1},
                                                 {"m/cryptd/cpu0/refused", 1},
                                                 {"m/cryptd/cpu0/completed", 3},
                                                 {"m/cryptd/cpu0/worker_runs", 3},
                                                 {"m/cryptd/cpu0/max_qlen", 3}}));
}

TEST(Cryptd, ChargesEnqueueQueueWorkAndProcessOneWorkAsTheWorkItemIsQueuedAndRun) {
    // 4 enqueues x 50 (charged before the queue answers, so the refused one pays too);
    // queue_work 20 when the item is not pending: the first enqueue and the two re-queues
    // after runs 1 and 2 (run 3 empties the queue); process_one_work 30 per run:
    // 200 + 60 + 90 = 350 cycles of QUEUEING, all in task context.
    Harness h(CryptdCosts{50, kernel::WorkqueueCosts{20, 30}}, 2);
    h.run(4, {4});
    EXPECT_EQ(h.task_cycles(Cat::QUEUEING), 350u);
}

TEST(Cryptd, ChargesTheCompletionOncePerCompletedRequestAndNotForTheRefusedOne) {
    // The same 4 enqueues on a 2-deep queue: 1 and 2 queued, 3 refused (-ENOSPC), 4 backlogged
    // (-EBUSY) and completed later, so 3 completions; the backlogged one's -EINPROGRESS notice
    // is not a completion. cryptd_complete 40 each: 3 x 40 = 120 cycles of QUEUEING.
    Harness h(CryptdCosts{0, kernel::WorkqueueCosts{0, 0}, 40}, 2);
    h.run(4, {4});
    EXPECT_EQ(h.task_cycles(Cat::QUEUEING), 120u);
}

} // namespace
} // namespace kdsim::crypto
