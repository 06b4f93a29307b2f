// The run trace of one CPU on a 1 GHz clock (1 cycle = 1 ns) with round costs: the slices an
// interrupted exec, the hardirq that cut it and the switch to idle leave, worked out by hand.
#include "kernel/cpu.h"
#include "kernel/cpu_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace kdsim::kernel {
namespace {

using engine::PS_PER_NS;
using engine::PS_PER_US;

using testing::round_costs;

using testing::IrqAt;

engine::Task<> device_irq(Cpu& cpu, void*) { co_await cpu.exec(50, Cat::DRIVER); }

engine::Task<> crunch(Cpu& cpu, Cycles c) { co_await cpu.exec(c, Cat::CRYPTO); }

// A record as "kind name [begin_ns, end_ns] arg", for readable failures.
std::string show(const TraceRecorder& tr, const TraceRecord& r) {
    static const char* kinds[] = {"task", "softirq", "hardirq", "nmi", "bracket", "idle", "exec", "switch", "clobber"};
    std::string s = kinds[static_cast<int>(r.kind)];
    if (r.kind == TraceKind::EXEC)
        s += std::string(" ") + std::string(to_string(static_cast<Cat>(r.sub & 31))) + "/" +
             std::string(to_string(static_cast<CtxKind>(r.sub >> 5)));
    if (r.name) s += " " + tr.strings()[r.name];
    return s + " [" + std::to_string(r.begin / PS_PER_NS) + "," + std::to_string(r.end / PS_PER_NS) + "] " +
           std::to_string(r.arg);
}

TEST(Trace, AnInterruptedExecEndsAtTheHardirqAndResumesAsANewSlice) {
    // kthread computes 100'000 cycles from 0; a device interrupt at 10 us costs entry 300 +
    // handler 50 + exit 200 ns. Then the task ends and the CPU switches to idle: switch 2000 +
    // irq disable/enable 3 + 4 ns, then idles until the end of the run.
    if constexpr (!TRACE_COMPILED) GTEST_SKIP() << "built with KDSIM_TRACE=OFF";
    engine::Simulation sim{1};
    KernelConfig cfg;
    cfg.hz = 100; // first tick at 10 ms, after the run
    Cpu cpu(sim, 0, engine::Clock(1'000'000'000), round_costs(), cfg);
    TraceRecorder tr(1000);
    cpu.set_trace(&tr, tr.add_track("m", 0, 0));
    const unsigned v = Cpu::FIRST_DEVICE_VECTOR;
    cpu.request_irq(v, &device_irq, nullptr, "dev");
    TaskStruct& t = cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, crunch(cpu, 100'000));
    IrqAt irq(cpu, v);
    sim.schedule_at(10 * PS_PER_US, &irq);
    cpu.boot();
    sim.run(5 * engine::PS_PER_MS);
    cpu.finish();
    const std::uint64_t end_ns = cpu.now() / PS_PER_NS;
    ASSERT_GT(end_ns, 102'557u);

    std::vector<TraceRecord> rs = tr.records();
    std::stable_sort(rs.begin(), rs.end(), [](const TraceRecord& a, const TraceRecord& b) {
        if (a.begin != b.begin) return a.begin < b.begin;
        if (a.end != b.end) return a.end > b.end;
        return a.kind < b.kind;
    });
    std::vector<std::string> got;
    for (const TraceRecord& r : rs) got.push_back(show(tr, r));
    const std::string idle_end = std::to_string(end_ns);
    const std::vector<std::string> want = {
        "task kthread [0,100550] " + std::to_string(t.pid),
        "exec crypto/task kthread [0,10000] 10000",
        "hardirq dev [10000,10550] 8",
        "exec irq_entry_exit/hardirq [10000,10300] 300",
        "exec driver/hardirq [10300,10350] 50",
        "exec irq_entry_exit/hardirq [10350,10550] 200",
        "exec crypto/task kthread [10550,100550] 90000",
        "task swapper/0 [100550," + idle_end + "] 0",
        "exec scheduler/task swapper/0 [100550,102550] 2000",
        "switch kthread [100550,100550] " + std::to_string(tr.intern("swapper/0")),
        "exec irq_mask/task swapper/0 [102550,102557] 7",
        "idle [102557," + idle_end + "] 0",
    };
    EXPECT_EQ(got, want);
    EXPECT_EQ(tr.dropped(), 0u);
}

TEST(Trace, RecordsBeyondTheLimitAreCountedNotKept) {
    TraceRecorder tr(2);
    for (Tick t = 1; t <= 5; ++t) tr.record(TraceRecord{t, t + 1, 0, 0, 0, TraceKind::IDLE, 0});
    EXPECT_EQ(tr.records().size(), 2u);
    EXPECT_EQ(tr.dropped(), 3u);
    EXPECT_EQ(tr.first_dropped_at(), 3u);
}

TEST(TraceFilter, AWindowKeepsWholeEverySliceThatOverlapsItAndTheInstantsInsideIt) {
    TraceFilter f;
    f.from = 100;
    f.until = 200;
    TraceRecorder tr(100, f);
    auto slice = [&](Tick b, Tick e) { tr.record(TraceRecord{b, e, 0, 0, 0, TraceKind::IDLE, 0}); };
    auto instant = [&](Tick t) { tr.record(TraceRecord{t, t, 0, 0, 0, TraceKind::SWITCH, 0}); };
    slice(10, 100);  // ends where the window begins: out
    slice(10, 101);  // overlaps the first picosecond: in, whole
    slice(150, 160); // inside: in
    slice(199, 500); // overlaps the last picosecond: in, whole
    slice(200, 300); // begins where the window ends: out
    slice(50, 900);  // spans the window: in
    instant(99);     // out
    instant(100);    // in
    instant(199);    // in
    instant(200);    // out
    std::vector<std::pair<Tick, Tick>> kept;
    for (const TraceRecord& r : tr.records()) kept.emplace_back(r.begin, r.end);
    const std::vector<std::pair<Tick, Tick>> want = {{10, 101}, {150, 160}, {199, 500}, {50, 900}, {100, 100}, {199, 199}};
    EXPECT_EQ(kept, want);
    EXPECT_EQ(tr.dropped(), 0u) << "records outside the window are not counted against the limit";
}

TEST(TraceFilter, KindsAndExecCategoriesSelectRecords) {
    TraceFilter f;
    f.kinds = 1u << static_cast<unsigned>(TraceKind::EXEC) | 1u << static_cast<unsigned>(TraceKind::HARDIRQ);
    f.exec_cats = 1u << static_cast<unsigned>(Cat::CRYPTO);
    const auto exec_sub = [](Cat c, CtxKind k) {
        return static_cast<std::uint8_t>(static_cast<unsigned>(c) | static_cast<unsigned>(k) << 5);
    };
    EXPECT_TRUE(f.keeps(TraceRecord{0, 1, 0, 0, 0, TraceKind::EXEC, exec_sub(Cat::CRYPTO, CtxKind::SOFTIRQ)}));
    EXPECT_FALSE(f.keeps(TraceRecord{0, 1, 0, 0, 0, TraceKind::EXEC, exec_sub(Cat::COPY, CtxKind::SOFTIRQ)}));
    EXPECT_TRUE(f.keeps(TraceRecord{0, 1, 0, 0, 0, TraceKind::HARDIRQ, 0}));
    EXPECT_FALSE(f.keeps(TraceRecord{0, 1, 0, 0, 0, TraceKind::TASK, 0}));
    EXPECT_FALSE(f.keeps(TraceRecord{0, 0, 0, 0, 0, TraceKind::SWITCH, 0}));
}

TEST(Trace, NoHookRecordsWithoutARecorder) {
    // The same run untraced leaves the CPU's accounting as it is with tracing.
    engine::Simulation sim{1};
    KernelConfig cfg;
    cfg.hz = 100;
    Cpu cpu(sim, 0, engine::Clock(1'000'000'000), round_costs(), cfg);
    cpu.create_task("kthread", SchedPolicy::NORMAL, 0, true, crunch(cpu, 1000));
    cpu.boot();
    sim.run(engine::PS_PER_MS);
    cpu.finish();
    EXPECT_FALSE(cpu.tracing());
    EXPECT_EQ(cpu.stats().cycles[0][static_cast<std::size_t>(Cat::CRYPTO)], 1000u);
}

} // namespace
} // namespace kdsim::kernel
