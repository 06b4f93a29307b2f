// Tests of Task<T> coroutines (task.h) and their frame pool, alone and driven by the
// simulation's events. Expected values are derived by hand in the comments.
#include "engine/event_queue.h"
#include "engine/frame_pool.h"
#include "engine/rng.h"
#include "engine/simulation.h"
#include "engine/task.h"
#include "engine/time.h"

#include <gtest/gtest.h>

#include <pthread.h>

#include <algorithm>
#include <array>
#include <coroutine>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kdsim::engine {
namespace {

// ---------------------------------------------------------------------------------------------
// Task<T> and FramePool
// ---------------------------------------------------------------------------------------------

Task<int> answer() { co_return 42; }

Task<> await_answer(int& out) { out = co_await answer(); }

TEST(Task, RootAwaitingTaskIntGetsItsValue) {
    int out = 0;
    Task<> root = await_answer(out);
    root.handle().resume();
    EXPECT_TRUE(root.done());
    EXPECT_EQ(out, 42);
    EXPECT_NO_THROW(root.rethrow_if_failed());
}

Task<> set_flag(bool& flag) {
    flag = true;
    co_return;
}

TEST(Task, RootTaskIsInitiallySuspended) {
    bool ran = false;
    Task<> t = set_flag(ran);
    EXPECT_TRUE(t.valid());
    EXPECT_FALSE(t.done());
    EXPECT_FALSE(ran); // the body has not started
    t.handle().resume();
    EXPECT_TRUE(ran);
    EXPECT_TRUE(t.done());
}

Task<std::string> greet(std::string who) { co_return "hello " + who; }

Task<> await_string(std::string& out) { out = co_await greet("kdsim"); }

TEST(Task, TaskOfMoveOnlyOrHeapValueReturnsIt) {
    std::string out;
    Task<> root = await_string(out);
    root.handle().resume();
    EXPECT_EQ(out, "hello kdsim");
}

// Runs `fn` on a thread of its own with a `bytes`-long stack (pages never touched cost
// nothing), so that a build where the stack does grow per await fails the assertions below
// instead of overflowing and killing the whole test binary.
void run_on_thread_with_stack(std::size_t bytes, std::function<void()> fn) {
    pthread_attr_t attr;
    ASSERT_EQ(pthread_attr_init(&attr), 0);
    ASSERT_EQ(pthread_attr_setstacksize(&attr, bytes), 0);
    pthread_t th;
    auto tramp = [](void* p) -> void* {
        (*static_cast<std::function<void()>*>(p))();
        return nullptr;
    };
    ASSERT_EQ(pthread_create(&th, &attr, tramp, &fn), 0);
    ASSERT_EQ(pthread_join(th, nullptr), 0);
    pthread_attr_destroy(&attr);
}

// The lowest stack address reached by a probe call (the stack grows downwards on x86-64).
thread_local std::uintptr_t lowest_probe = UINTPTR_MAX;

[[gnu::noinline]] std::uintptr_t probe_stack() {
    auto here = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
    if (here < lowest_probe) lowest_probe = here;
    return here;
}

// Runs the root task `make()` to completion on its own thread and returns how many bytes the
// C stack grew below the point where the root started (probes are placed in the coroutines).
template <class MakeRoot>
std::uintptr_t stack_growth_of(MakeRoot make) {
    std::uintptr_t growth = 0;
    run_on_thread_with_stack(std::size_t{256} << 20, [&] {
        Task<> root = make();
        lowest_probe = UINTPTR_MAX;
        const std::uintptr_t start = probe_stack();
        root.handle().resume();
        growth = start - lowest_probe;
    });
    return growth;
}

// Under AddressSanitizer (tools/sanitize.sh) the frames are instrumented and the transfer is an
// ordinary call, so the constant-stack property does not hold by construction there.
#if defined(__SANITIZE_ADDRESS__)
#define SKIP_WITHOUT_TAIL_CALLS() GTEST_SKIP() << "no tail calls under -fsanitize=address"
#else
#define SKIP_WITHOUT_TAIL_CALLS() (void)0
#endif

constexpr const char* kNoTailCall =
    "symmetric transfer was not compiled as a tail call: g++ 12 emits it only with "
    "-foptimize-sibling-calls (on at -O2/-O3, off at -O0/-Og/-O1) and never under "
    "-fsanitize=address's stack instrumentation";

Task<int> one() {
    probe_stack();
    co_return 1;
}

Task<> await_in_loop(int n, long& sum) {
    for (int i = 0; i < n; ++i) sum += co_await one();
}

Task<int> nested(int depth) {
    probe_stack();
    if (depth == 0) co_return 0;
    int below = co_await nested(depth - 1);
    co_return below + 1;
}

Task<> await_nested(int depth, int& out) { out = co_await nested(depth); }

TEST(Task, TenThousandDeepNestedAwaitsDoNotGrowTheStack) {
    SKIP_WITHOUT_TAIL_CALLS();
    // Symmetric transfer: each await_suspend and final_suspend hands control to the next
    // coroutine with a tail call, so a chain of any depth runs in constant stack. Were it an
    // ordinary call, 10'000 levels of at least 16 bytes each would take over 160 KB.
    int out = -1;
    const std::uintptr_t growth = stack_growth_of([&] { return await_nested(10'000, out); });
    EXPECT_EQ(out, 10'000);
    EXPECT_LT(growth, 4096u) << kNoTailCall;
}

TEST(Task, HundredThousandSequentialAwaitsInALoopDoNotGrowTheStack) {
    SKIP_WITHOUT_TAIL_CALLS();
    // The classic failure without symmetric transfer: each synchronously completing child
    // resumes its parent from inside its own final_suspend, one stack frame per iteration.
    long sum = 0;
    const std::uintptr_t growth = stack_growth_of([&] { return await_in_loop(100'000, sum); });
    EXPECT_EQ(sum, 100'000);
    EXPECT_LT(growth, 4096u) << kNoTailCall;
}

Task<int> thrower() {
    throw std::runtime_error("boom");
    co_return 0;
}

Task<int> middle() { co_return 1 + co_await thrower(); }

Task<> catcher(std::string& what, bool& after) {
    try {
        (void)co_await middle();
    } catch (const std::runtime_error& e) {
        what = e.what();
    }
    after = true; // the awaiter carries on after handling
}

TEST(Task, ExceptionInAwaitedTaskPropagatesToTheAwaiter) {
    std::string what;
    bool after = false;
    Task<> root = catcher(what, after);
    root.handle().resume();
    EXPECT_EQ(what, "boom"); // through two levels: thrower -> middle -> catcher
    EXPECT_TRUE(after);
    EXPECT_TRUE(root.done());
    EXPECT_NO_THROW(root.rethrow_if_failed()); // it was handled inside
}

Task<> failing_root() {
    (void)co_await middle();
}

TEST(Task, RootRethrowIfFailedRethrowsTheEscapedException) {
    Task<> root = failing_root();
    root.handle().resume(); // the exception is stored, not thrown out of resume()
    EXPECT_TRUE(root.done());
    EXPECT_THROW(root.rethrow_if_failed(), std::runtime_error);
}

TEST(Task, RethrowIfFailedOnAnEmptyTaskDoesNothing) {
    Task<> none;
    EXPECT_FALSE(none.valid());
    EXPECT_FALSE(none.done());
    EXPECT_NO_THROW(none.rethrow_if_failed());
}

// An awaitable that suspends and parks the handle; nothing resumes it unless the test does.
struct Park {
    std::coroutine_handle<>* slot;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) noexcept { *slot = h; }
    void await_resume() const noexcept {}
};

Task<int> parked_child(std::coroutine_handle<>* slot) {
    co_await Park{slot};
    co_return 7;
}

Task<> parked_parent(std::coroutine_handle<>* slot, int& out) { out = co_await parked_child(slot); }

Task<> big_frame(long& out) {
    volatile char buf[4096]; // lives across a suspension point: the frame exceeds 2 KiB
    for (std::size_t i = 0; i < sizeof buf; ++i) buf[i] = static_cast<char>(i);
    co_await std::suspend_always{};
    long s = 0;
    for (std::size_t i = 0; i < sizeof buf; ++i) s += buf[i];
    out = s;
}

TEST(Task, FramesAreReturnedToThePoolWhenTasksAreDestroyed) {
    const std::size_t base = FramePool::live_frames();
    {
        int out = 0;
        Task<> root = await_answer(out);
        EXPECT_EQ(FramePool::live_frames(), base + 1); // the root's frame only
        root.handle().resume();
        EXPECT_EQ(FramePool::live_frames(), base + 1); // the child's frame is already gone
    }
    EXPECT_EQ(FramePool::live_frames(), base);

    // A never-started root.
    {
        int out = 0;
        Task<> root = await_answer(out);
        (void)root;
    }
    EXPECT_EQ(FramePool::live_frames(), base);

    // A root destroyed while suspended inside an awaited child: both frames are freed.
    {
        std::coroutine_handle<> slot;
        int out = 0;
        Task<> root = parked_parent(&slot, out);
        root.handle().resume();
        EXPECT_EQ(FramePool::live_frames(), base + 2);
        EXPECT_FALSE(root.done());
    }
    EXPECT_EQ(FramePool::live_frames(), base);

    // The same, resumed to completion.
    {
        std::coroutine_handle<> slot;
        int out = 0;
        Task<> root = parked_parent(&slot, out);
        root.handle().resume();
        slot.resume();
        EXPECT_TRUE(root.done());
        EXPECT_EQ(out, 7);
        EXPECT_EQ(FramePool::live_frames(), base + 1);
    }
    EXPECT_EQ(FramePool::live_frames(), base);

    // Failed tasks, the deep chain, and a frame too big for the pooled size classes.
    {
        Task<> root = failing_root();
        root.handle().resume();
    }
    {
        int out = 0;
        Task<> root = await_nested(1000, out);
        root.handle().resume();
        EXPECT_EQ(out, 1000);
    }
    {
        long out = 0;
        Task<> root = big_frame(out);
        root.handle().resume();
        root.handle().resume();
        // sum of (char)i for i in 0..4095: 16 repeats of the 256 signed byte values, which sum
        // to (0 + ... + 127) + (-128 + ... + -1) = 8128 - 8256 = -128 per repeat.
        EXPECT_EQ(out, 16 * -128);
    }
    EXPECT_EQ(FramePool::live_frames(), base);
}

TEST(Task, MoveAssignmentDestroysTheOverwrittenFrame) {
    const std::size_t base = FramePool::live_frames();
    bool a = false, b = false;
    Task<> t = set_flag(a);
    Task<> u = set_flag(b);
    EXPECT_EQ(FramePool::live_frames(), base + 2);
    t = std::move(u);
    EXPECT_EQ(FramePool::live_frames(), base + 1);
    EXPECT_FALSE(u.valid());
    t.handle().resume();
    EXPECT_TRUE(b);
    EXPECT_FALSE(a);
    t.reset();
    EXPECT_EQ(FramePool::live_frames(), base);
}

TEST(FramePool, FreedFrameIsReusedBySameSizeClass) {
    const std::size_t base = FramePool::live_frames();
    void* p = FramePool::allocate(100);
    EXPECT_EQ(FramePool::live_frames(), base + 1);
    FramePool::deallocate(p, 100);
    // 100 and 112 bytes both round up to the 112-byte class (7 granules of 16).
    void* q = FramePool::allocate(112);
    EXPECT_EQ(q, p);
    FramePool::deallocate(q, 112);
    EXPECT_EQ(FramePool::live_frames(), base);
}

// Frames up to 2 KiB are pooled (a NAPI driver's ring walk, with its frame's take and GRO's steps
// in one frame, is past 1 KiB): 1,200 bytes are the 1,200-byte class (75 granules) and 2,032 the
// last (127 granules of 128). A freed frame stays in its list: a heap allocation of its size in
// between does not take it (as it would a block given back to the heap).
TEST(FramePool, FramesUpToTwoKibibytesAreReusedBySizeClass) {
    const std::size_t base = FramePool::live_frames();
    for (const std::size_t n : {std::size_t{1200}, std::size_t{2032}}) {
        void* p = FramePool::allocate(n);
        FramePool::deallocate(p, n);
        void* heap = ::operator new(n);
        void* q = FramePool::allocate(n - 15); // the same class
        EXPECT_EQ(q, p) << n;
        FramePool::deallocate(q, n - 15);
        ::operator delete(heap);
    }
    EXPECT_EQ(FramePool::live_frames(), base);
}

// ---------------------------------------------------------------------------------------------
// Coroutines driven by the simulation's events
// ---------------------------------------------------------------------------------------------

// Resumes the coroutine whose address travels in the event's arg.
struct Resumer final : EventTarget {
    void on_event(std::uint64_t arg) override {
        std::coroutine_handle<>::from_address(reinterpret_cast<void*>(arg)).resume();
    }
};

struct Sleep {
    Simulation& sim;
    Resumer& res;
    Tick delay;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
        sim.schedule_in(delay, &res, reinterpret_cast<std::uint64_t>(h.address()));
    }
    void await_resume() const noexcept {}
};

Task<> sleeper(Simulation& sim, Resumer& res, char name, Tick period, int times,
               std::vector<std::pair<Tick, char>>& log) {
    for (int i = 0; i < times; ++i) {
        co_await Sleep{sim, res, period};
        log.emplace_back(sim.now(), name);
    }
}

TEST(Task, CoroutinesSleepingOnSimulationEventsInterleaveByTime) {
    Simulation sim;
    Resumer res;
    std::vector<std::pair<Tick, char>> log;
    Task<> a = sleeper(sim, res, 'a', 30, 3, log);
    Task<> b = sleeper(sim, res, 'b', 20, 4, log);
    a.handle().resume(); // a sleeps until 30
    b.handle().resume(); // b sleeps until 20
    sim.run();
    // a wakes at 30, 60, 90; b at 20, 40, 60, 80. At 60 both are due: a's wake-up was
    // scheduled at 30 and b's at 40, so a's event has the lower sequence number and runs first.
    const std::vector<std::pair<Tick, char>> want{{20, 'b'}, {30, 'a'}, {40, 'b'}, {60, 'a'},
                                                  {60, 'b'}, {80, 'b'}, {90, 'a'}};
    EXPECT_EQ(log, want);
    EXPECT_TRUE(a.done());
    EXPECT_TRUE(b.done());
    EXPECT_EQ(sim.events_processed(), 7u);
}

} // namespace
} // namespace kdsim::engine
