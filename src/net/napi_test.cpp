// net_rx_action and NAPI (net/core/dev.c, 6.8+) with counts worked out by hand from the rules:
// each instance polled once per call with its weight (64); a poll that used the whole weight
// goes on the repoll list; budget 300 and two jiffies, checked after each poll (time_squeeze);
// what is left goes back (unpolled first, then the repoll list) and NET_RX is raised again, so
// handle_softirqs restarts (at most 10 rounds in all) or hands over to ksoftirqd.
#include "net/napi.h"

#include "kernel/cpu_test_support.h"
#include "kernel/sched.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kdsim::net {
namespace {

using kernel::Cat;
using kernel::CtxKind;
using engine::Cycles;

// The softnet counters on one line, as /proc/net/softnet_stat shows a CPU's: a test states every
// count it expects at once.
std::string counts(const SoftnetStats& s) {
    return "net_rx_actions=" + std::to_string(s.net_rx_actions) + " polls=" + std::to_string(s.polls) +
           " processed=" + std::to_string(s.processed) + " repolls=" + std::to_string(s.repolls) +
           " time_squeeze=" + std::to_string(s.time_squeeze) + " reraises=" + std::to_string(s.reraises);
}

struct Poll {
    char name;
    int work;
    CtxKind ctx;
    std::string task;
};

struct Device {
    char name = '?';
    int backlog = 0;
    Cycles cost = 0; // cycles per poll
    NapiStruct napi;
    std::vector<Poll>* log = nullptr;
    Softnet* sd = nullptr;
    NapiStruct* kick = nullptr; // an instance this poll schedules (from inside net_rx_action)

    static engine::Task<int> poll(kernel::Cpu& cpu, void* ctx, int budget) {
        auto& d = *static_cast<Device*>(ctx);
        if (d.cost) co_await cpu.exec(d.cost, Cat::DRIVER);
        const int work = std::min(budget, d.backlog);
        d.backlog -= work;
        d.log->push_back({d.name, work, cpu.ctx_kind(), cpu.current()->comm});
        if (d.kick) d.sd->napi_schedule_irqoff(*d.kick);
        if (work < budget) napi_complete_done(d.napi);
        co_return work;
    }
};

struct Harness {
    engine::Simulation sim{1};
    kernel::Cpu cpu;
    Softnet sd;
    std::vector<Device> devs;
    std::vector<Poll> log;
    std::size_t at_irq = SIZE_MAX; // how many devices the interrupt schedules (all by default)
    int schedules = 1;             // how many times it schedules each

    // `backlogs[i]` packets waiting on device i; a device interrupt at 10 us schedules them all.
    Harness(std::vector<int> backlogs, std::uint32_t hz = 100, Cycles poll_cost = 0)
        : cpu(sim, 0, engine::Clock(1'000'000'000), kernel::testing::round_costs(), config(hz)), sd(cpu),
          devs(backlogs.size()) {
        for (std::size_t i = 0; i < devs.size(); ++i) {
            devs[i].name = static_cast<char>('A' + i);
            devs[i].backlog = backlogs[i];
            devs[i].cost = poll_cost;
            devs[i].napi.poll = &Device::poll;
            devs[i].napi.ctx = &devs[i];
            devs[i].log = &log;
            devs[i].sd = &sd;
        }
    }
    static kernel::KernelConfig config(std::uint32_t hz) {
        kernel::KernelConfig c;
        c.hz = hz;
        return c;
    }
    static engine::Task<> irq(kernel::Cpu&, void* ctx) {
        auto& h = *static_cast<Harness*>(ctx);
        for (std::size_t i = 0; i < h.devs.size() && i < h.at_irq; ++i)
            for (int k = 0; k < h.schedules; ++k) h.sd.napi_schedule_irqoff(h.devs[i].napi);
        co_return;
    }
    void run(engine::Tick until = 50 * engine::PS_PER_MS) {
        const unsigned v = kernel::Cpu::FIRST_DEVICE_VECTOR;
        cpu.request_irq(v, &Harness::irq, this, "dev");
        kernel::testing::IrqAt at(cpu, v);
        sim.schedule_at(10 * engine::PS_PER_US, &at);
        cpu.boot();
        sim.run(until);
        cpu.finish();
    }
    std::string order() const {
        std::string s;
        for (const Poll& p : log) s += p.name;
        return s;
    }
};

TEST(NetRxAction, PollsEachInstanceOncePerCallAndRepollsThoseThatUsedTheirWeightInTheNextCall) {
    // A, B, C with 100 packets each. Call 1: 64 + 64 + 64 (budget 300 -> 108), all three
    // repolled, NET_RX raised again; call 2 (a handle_softirqs restart): 36 each, all complete.
    Harness h({100, 100, 100});
    h.run();
    EXPECT_EQ(h.order(), "ABCABC");
    EXPECT_EQ(counts(h.sd.stats()), "net_rx_actions=2 polls=6 processed=300 repolls=3 time_squeeze=0 reraises=1");
    EXPECT_EQ(h.cpu.stats().softirq_restarts, 1u);
    EXPECT_EQ(h.cpu.stats().ksoftirqd_wakeups, 0u);
}

TEST(NetRxAction, StopsWhenTheBudgetIsSpentAndPutsTheUnpolledInstancesBeforeTheRepolledOnes) {
    // Six instances with 100 packets. Call 1: A..E poll 64 each, budget 300 - 320 = -20 after
    // E: time_squeeze; F was not polled. Poll list F, A, B, C, D, E. Call 2: F 64 (repoll),
    // A..E 36 each (complete). Call 3: F 36.
    Harness h({100, 100, 100, 100, 100, 100});
    h.run();
    EXPECT_EQ(h.order(), "ABCDEFABCDEF");
    EXPECT_EQ(counts(h.sd.stats()), "net_rx_actions=3 polls=12 processed=600 repolls=6 time_squeeze=1 reraises=2");
}

TEST(NetRxAction, AnInstanceThatDidExactlyItsWeightIsPolledOnceMoreToComplete) {
    Harness h({64});
    h.run();
    EXPECT_EQ(h.sd.stats().polls, 2u);
    EXPECT_EQ(h.sd.stats().repolls, 1u);
    EXPECT_EQ(h.log[1].work, 0);
    EXPECT_FALSE(h.devs[0].napi.scheduled);
}

TEST(NetRxAction, TenRoundsRunAtIrqExitThenKsoftirqdPollsTheRest) {
    // One instance with 12 x 64 packets: one poll per call, each re-raising NET_RX.
    // handle_softirqs runs at most MAX_SOFTIRQ_RESTART = 10 rounds (9 restarts), then wakes
    // ksoftirqd, which polls the last two 64-packet batches and the empty poll that completes.
    Harness h({12 * 64});
    h.run();
    // 12 full batches then the empty completing poll: 12 x 64 = 768 packets.
    EXPECT_EQ(counts(h.sd.stats()), "net_rx_actions=13 polls=13 processed=768 repolls=12 time_squeeze=0 reraises=12");
    EXPECT_EQ(h.cpu.stats().ksoftirqd_wakeups, 1u);
    ASSERT_EQ(h.log.size(), 13u);
    for (std::size_t i = 0; i < 10; ++i) EXPECT_EQ(h.log[i].ctx, CtxKind::SOFTIRQ) << i;
    for (std::size_t i = 10; i < 13; ++i) EXPECT_EQ(h.log[i].task, "ksoftirqd/0") << i;
}

TEST(NetRxAction, TwoJiffiesEndTheCallAndTheRestGoesToKsoftirqd) {
    // HZ 250 (4 ms jiffies); four instances of 10 packets, each poll 3 ms. The call starts in
    // jiffy 0 with time_limit = jiffy 2: A ends at ~3 ms, B ~6 ms (jiffy 1), C ~9 ms (jiffy 2:
    // time_squeeze). D, unpolled, goes back and NET_RX is raised; more than MAX_SOFTIRQ_TIME
    // (2 ms, one jiffy at HZ 250) has passed, so ksoftirqd polls D.
    Harness h({10, 10, 10, 10}, 250, 3'000'000);
    h.run(100 * engine::PS_PER_MS);
    const SoftnetStats& s = h.sd.stats();
    EXPECT_EQ(h.order(), "ABCD");
    EXPECT_EQ(s.time_squeeze, 1u);
    EXPECT_EQ(s.reraises, 1u);
    EXPECT_EQ(s.repolls, 0u);
    EXPECT_EQ(h.cpu.stats().ksoftirqd_wakeups, 1u);
    EXPECT_EQ(h.log[3].task, "ksoftirqd/0");
}

TEST(NapiSchedule, SchedulingAnInstanceTwiceQueuesItOnce) {
    Harness h({5, 5});
    h.schedules = 2;
    h.run();
    EXPECT_EQ(h.order(), "AB");
    EXPECT_EQ(h.sd.stats().net_rx_actions, 1u);
}

TEST(NapiSchedule, FromInsideNetRxActionItDoesNotRaiseTheSoftirqAndTheSameCallPollsTheInstance) {
    // The interrupt schedules A only; A's poll schedules B. sd->in_net_rx_action: no raise;
    // when A completes, the call finds B on the poll list (goto start) and polls it.
    Harness h({5, 5});
    h.at_irq = 1;
    h.devs[0].kick = &h.devs[1].napi;
    h.run();
    EXPECT_EQ(h.order(), "AB");
    EXPECT_EQ(h.sd.stats().net_rx_actions, 1u);
    EXPECT_EQ(h.sd.stats().reraises, 0u);
    EXPECT_EQ(h.cpu.stats().softirq_restarts, 0u);
    EXPECT_EQ(h.cpu.stats().softirq_handled[kernel::NET_RX_SOFTIRQ], 1u);
}

TEST(NetRxAction, ACallThatCompletesEveryInstanceSkipsTheClosingIrqDisable) {
    // local_irq_disable counts against a run whose interrupt schedules nothing (no softirq).
    // Everything completes in one call: handle_softirqs' round (1) + the splice (1), no closing
    // pair (dev.c's goto end). 64 packets (two calls, the first re-raising): 2 rounds + 2
    // splices + the first call's closing local_irq_disable = 5.
    Harness none({5});
    none.at_irq = 0;
    none.run();
    Harness done({5});
    done.run();
    Harness again({64});
    again.run();
    const auto disables = [](const Harness& h) { return h.cpu.stats().irqflag_ops[0]; };
    EXPECT_EQ(disables(done) - disables(none), 2u);
    EXPECT_EQ(disables(again) - disables(none), 5u);
}

} // namespace
} // namespace kdsim::net
