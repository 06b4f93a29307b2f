// Runs the hold model for a given number of events and exits; no timing of its own.
//
//   kdsim_hold_callgrind MODEL N EVENTS     MODEL: engine | coroutine | queue | heapqueue | floor
//
// Used by bench/callgrind_per_event.sh, which runs it under callgrind at two EVENTS counts and
// divides the difference in instructions by the difference in events (set-up, warm-up and
// process start-up cancel out). It prints the final simulated time, which is the same for every
// model at equal N and EVENTS (they handle the same events in the same order), and the peak
// resident set size.

#include "hold_models.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {

template <class Model>
int run(std::size_t n, std::uint64_t events) {
    Model model(n);
    model.run(events);
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    std::printf("now_ps=%llu pending=%zu max_rss_kib=%ld\n",
                static_cast<unsigned long long>(model.now()), model.pending(), ru.ru_maxrss);
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s engine|coroutine|queue|heapqueue|floor N EVENTS\n", argv[0]);
        return 2;
    }
    const std::string_view model = argv[1];
    const std::size_t n = std::strtoull(argv[2], nullptr, 10);
    const std::uint64_t events = std::strtoull(argv[3], nullptr, 10);
    if (n == 0 || events == 0) {
        std::fprintf(stderr, "N and EVENTS must be positive\n");
        return 2;
    }
    using namespace kdsim::bench;
    if (model == "engine") return run<CallbackHold>(n, events);
    if (model == "coroutine") return run<CoroutineHold>(n, events);
    if (model == "queue") return run<QueueHold>(n, events);
    if (model == "heapqueue") return run<HeapQueueHold>(n, events);
    if (model == "floor") return run<FloorHold>(n, events);
    std::fprintf(stderr, "unknown model '%s'\n", argv[1]);
    return 2;
}
