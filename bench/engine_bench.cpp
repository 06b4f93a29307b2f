// Engine throughput: the hold model (bench/hold_models.h) at N = 1e3, 1e4, 1e5 pending events.
//
//   BM_EngineHold     Simulation + EventTarget callback (the engine as models use it)
//   BM_CoroutineHold  Simulation + one root Task<> per entity looping co_await sleep(delay)
//   BM_EventQueueHold engine::EventQueue alone, no run loop or virtual call
//   BM_FloorHold      std::priority_queue of 24-byte PODs, no engine: the floor
//
// Each iteration processes kBatch events. items_per_second is events/s; the counter
// ns_per_event is CPU time per event. Run pinned, e.g.
//   taskset -c 1 ./kdsim_engine_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Results and method: docs/performance.md.

#include "hold_models.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>

namespace {

using namespace kdsim::bench;

constexpr std::uint64_t kBatch = 1 << 16;

template <class Model>
void hold(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    Model model(n);
    // Warm up to the steady-state spread of pending times (and warm the caches and the frame
    // pool): every entity is rescheduled several times before timing starts.
    model.run(std::max<std::uint64_t>(8 * n, 1 << 20));
    for (auto _ : state) model.run(kBatch);
    benchmark::DoNotOptimize(model.now());
    if (model.pending() != n) state.SkipWithError("pending count drifted");
    const double events = static_cast<double>(state.iterations()) * kBatch;
    state.SetItemsProcessed(static_cast<std::int64_t>(events));
    // Rate of (events * 1e-9) per CPU second, inverted: CPU nanoseconds per event.
    state.counters["ns_per_event"] =
        benchmark::Counter(events * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_EngineHold(benchmark::State& s) { hold<CallbackHold>(s); }
void BM_CoroutineHold(benchmark::State& s) { hold<CoroutineHold>(s); }
void BM_EventQueueHold(benchmark::State& s) { hold<QueueHold>(s); }
void BM_FloorHold(benchmark::State& s) { hold<FloorHold>(s); }

#define KDSIM_HOLD_ARGS ->Arg(1'000)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond)
BENCHMARK(BM_EngineHold) KDSIM_HOLD_ARGS;
BENCHMARK(BM_CoroutineHold) KDSIM_HOLD_ARGS;
BENCHMARK(BM_EventQueueHold) KDSIM_HOLD_ARGS;
BENCHMARK(BM_FloorHold) KDSIM_HOLD_ARGS;

} // namespace

BENCHMARK_MAIN();
