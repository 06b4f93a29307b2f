// Engine throughput: the hold model (bench/hold_models.h) at N = 1e3, 1e4, 1e5 pending events.
//
//   BM_EngineHold     Simulation + EventTarget callback (the engine as models use it)
//   BM_CoroutineHold  Simulation + one root Task<> per entity looping co_await sleep(delay)
//   BM_EventQueueHold engine::EventQueue alone, no run loop or virtual call
//   BM_HeapQueueHold  engine::HeapEventQueue alone: the engine's single heap before the two-tier
//                     EventQueue (the control)
//   BM_FloorHold      std::priority_queue of 24-byte PODs, no engine: the floor
//
// Each iteration processes kBatch events. items_per_second is events per CPU second; the
// counter ns_per_event is CPU nanoseconds per event (thread CPU time of the timed loop). Run pinned, e.g.
//   taskset -c 1 ./kdsim_engine_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Results and method: docs/performance.md.

#include "hold_models.h"

#include <benchmark/benchmark.h>

#include <time.h>

#include <algorithm>
#include <cstdint>

namespace {

using namespace kdsim::bench;

constexpr std::uint64_t kBatch = 1 << 16;

double thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

template <class Model>
void hold(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    Model model(n);
    // Warm up to the steady-state spread of pending times (and warm the caches and the frame
    // pool): every entity is rescheduled several times before timing starts.
    model.run(std::max<std::uint64_t>(8 * n, 1 << 20));
    const double t0 = thread_cpu_ns();
    for (auto _ : state) model.run(kBatch);
    const double cpu_ns = thread_cpu_ns() - t0;
    benchmark::DoNotOptimize(model.now());
    if (model.pending() != n) state.SkipWithError("pending count drifted");
    const double events = static_cast<double>(state.iterations()) * kBatch;
    state.SetItemsProcessed(static_cast<std::int64_t>(events));
    // CPU nanoseconds per event (a plain number: Google Benchmark's inverted-rate counters
    // print a misleading "s" suffix).
    state.counters["ns_per_event"] = cpu_ns / events;
}

void BM_EngineHold(benchmark::State& s) { hold<CallbackHold>(s); }
void BM_CoroutineHold(benchmark::State& s) { hold<CoroutineHold>(s); }
void BM_EventQueueHold(benchmark::State& s) { hold<QueueHold>(s); }
void BM_HeapQueueHold(benchmark::State& s) { hold<HeapQueueHold>(s); }
void BM_FloorHold(benchmark::State& s) { hold<FloorHold>(s); }

#define KDSIM_HOLD_ARGS ->Arg(1'000)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond)
BENCHMARK(BM_EngineHold) KDSIM_HOLD_ARGS;
BENCHMARK(BM_CoroutineHold) KDSIM_HOLD_ARGS;
BENCHMARK(BM_EventQueueHold) KDSIM_HOLD_ARGS;
BENCHMARK(BM_HeapQueueHold) KDSIM_HOLD_ARGS;
BENCHMARK(BM_FloorHold) KDSIM_HOLD_ARGS;

} // namespace

BENCHMARK_MAIN();
