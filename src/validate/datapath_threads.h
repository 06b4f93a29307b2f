// Internal to kdsim validate's datapath (datapath.cpp, datapath_rx.cpp, datapath_hash.cpp): the
// small thread tools its threads share (futexes, an SPSC queue, counters, an error slot, a
// SCHED_FIFO guard for the main thread, sleeps, aligned buffers).
#pragma once

#include "validate/datapath.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <cpuid.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace kdsim::validate::detail {

inline long futex_wait(std::atomic<std::uint32_t>* a, std::uint32_t val) {
    return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(a), FUTEX_WAIT_PRIVATE, val, nullptr, nullptr, 0);
}
inline long futex_wake(std::atomic<std::uint32_t>* a) {
    return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(a), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

// A sleeper's doorbell: the sleeper arms it and sleeps until it rings; the other side rings it
// only when armed (a device interrupt that napi_complete_done re-enabled, or a worker's wake-up).
struct Doorbell {
    alignas(64) std::atomic<std::uint32_t> seq{0};
    alignas(64) std::atomic<std::uint32_t> armed{0};

    // Wakes the sleeper whatever it is doing (at shutdown).
    void ring() {
        seq.fetch_add(1);
        futex_wake(&seq);
    }
    // Wakes the sleeper if it armed the doorbell; true if it had.
    bool ring_if_armed() {
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (!armed.load(std::memory_order_relaxed) || !armed.exchange(0)) return false;
        ring();
        return true;
    }
    // Arms the doorbell and sleeps until it rings, unless ready() holds once armed.
    template <class Ready> void sleep_unless(Ready ready) {
        const std::uint32_t s = seq.load(std::memory_order_acquire);
        armed.store(1);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (!ready()) futex_wait(&seq, s);
        armed.store(0);
    }
};

inline std::uint64_t splitmix(std::uint64_t& s) {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

inline void fill(std::uint8_t* p, std::size_t n, std::uint64_t seed) {
    std::uint64_t s = seed;
    for (std::size_t i = 0; i < n; i += 8) {
        std::uint64_t v = splitmix(s);
        std::memcpy(p + i, &v, std::min<std::size_t>(8, n - i));
    }
}

struct AlignedFree {
    void operator()(std::uint8_t* p) const noexcept { std::free(p); }
};
using AlignedBuf = std::unique_ptr<std::uint8_t, AlignedFree>;
inline AlignedBuf aligned_bytes(std::size_t n, std::size_t align = 4096) {
    std::size_t rounded = (n + align - 1) / align * align;
    auto* p = static_cast<std::uint8_t*>(std::aligned_alloc(align, rounded));
    if (!p) throw std::bad_alloc();
    std::memset(p, 0, rounded);
    return AlignedBuf(p);
}

// Counters written by one thread and read by others.
struct Counter {
    std::atomic<std::uint64_t> v{0};
    void inc(std::uint64_t n = 1) { v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
    std::uint64_t get() const { return v.load(std::memory_order_relaxed); }
};

// Single-producer single-consumer bounded queue.
template <class T>
class Spsc {
public:
    explicit Spsc(std::size_t cap) : slots_(cap), cap_(cap) {}
    bool push(const T& v) {
        std::size_t t = tail_.load(std::memory_order_relaxed);
        if (t - head_.load(std::memory_order_acquire) == cap_) return false;
        slots_[t % cap_] = v;
        tail_.store(t + 1, std::memory_order_release);
        return true;
    }
    bool pop(T& v) {
        std::size_t h = head_.load(std::memory_order_relaxed);
        if (h == tail_.load(std::memory_order_acquire)) return false;
        v = slots_[h % cap_];
        head_.store(h + 1, std::memory_order_release);
        return true;
    }
    bool empty() const { return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire); }

private:
    std::vector<T> slots_;
    std::size_t cap_;
    alignas(64) std::atomic<std::size_t> head_{0};
    alignas(64) std::atomic<std::size_t> tail_{0};
};

// The first exception of any thread of a run, rethrown by the main thread.
struct ErrorSlot {
    std::mutex m;
    std::string what;
    std::atomic<bool> set{false};
    void put(const std::string& w) {
        std::lock_guard<std::mutex> g(m);
        if (what.empty()) what = w;
        set.store(true);
    }
};

inline double thread_cpu_ns(std::thread& t) {
    clockid_t cid;
    if (pthread_getcpuclockid(t.native_handle(), &cid) != 0) return 0;
    timespec ts;
    if (clock_gettime(cid, &ts) != 0) return 0;
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

inline void sleep_s(double s) {
    if (s <= 0) return;
    timespec ts;
    ts.tv_sec = static_cast<time_t>(s);
    ts.tv_nsec = static_cast<long>((s - static_cast<double>(ts.tv_sec)) * 1e9);
    while (nanosleep(&ts, &ts) != 0) {
    }
}

// Raises the calling thread to SCHED_FIFO `priority` on `cpu` for its lifetime (0: does nothing),
// then restores its policy and affinity.
class MainThreadGuard {
public:
    MainThreadGuard(int priority, int cpu) : active_(priority > 0) {
        if (!active_) return;
        pthread_getaffinity_np(pthread_self(), sizeof mask_, &mask_);
        pthread_getschedparam(pthread_self(), &policy_, &param_);
        calibrate::pin_to_cpu(cpu);
        sched_param sp{};
        sp.sched_priority = priority;
        pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    }
    ~MainThreadGuard() {
        if (!active_) return;
        pthread_setschedparam(pthread_self(), policy_, &param_);
        pthread_setaffinity_np(pthread_self(), sizeof mask_, &mask_);
    }
    MainThreadGuard(const MainThreadGuard&) = delete;
    MainThreadGuard& operator=(const MainThreadGuard&) = delete;

private:
    bool active_;
    cpu_set_t mask_{};
    int policy_ = SCHED_OTHER;
    sched_param param_{};
};

inline void sleep_until_ns(std::int64_t t) {
    timespec ts;
    ts.tv_sec = static_cast<time_t>(t / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(t % 1'000'000'000);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
}

} // namespace kdsim::validate::detail
