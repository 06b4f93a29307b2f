// Reading lines that another core wrote with non-temporal stores: the pattern of kdsim validate's
// device thread (src/validate/datapath_rx.cpp), which writes every rx frame with MOVNTDQ + SFENCE so
// that it lands in memory as a NIC's DMA write does. A writer thread on the second CPU writes, the
// measuring thread on the first reads:
//   - a dependent chase through a random cycle of such lines over a small, TLB-resident region:
//     the load-to-use of a line that is in memory and in no cache, without page walks;
//   - the sequential read of the first N lines of each buffer of a 128 x 1536 B ring (validate's
//     rx ring), one load per line, buffers in ring order: the cost of a frame's first touch as the
//     CPU's prefetchers see it;
//   - a line bounced between the two CPUs (each stores, the other loads it): the transfer of a line
//     modified in the other core's cache, half a round trip;
//   - K independent dependent chases through such lines, walked in turn: a core keeps K misses in
//     flight up to its fill buffers, so the cost per load falls as 1/K until they bind;
//   - line 0 of each ring buffer alone, in ring order with a pause before each read, and after a
//     run of such reads one that skips k buffers: when a constant stride is followed (trigger), and
//     how many strides ahead (degree).
// The regions are the caller's (calibrate makes one set per [memory] round, all before the first).
#include "calibrate/primitives.h"
#include "calibrate/tsc.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <optional>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <numeric>
#include <random>
#include <thread>

namespace kdsim::calibrate {

namespace {

constexpr std::size_t RING = 128, BUFFER = 1536; // validate's rx ring (datapath.h RxConfig)

// A thread on another CPU that runs a job whenever asked, and says when it is done.
class Writer {
public:
    explicit Writer(std::optional<int> cpu) : t_([this, cpu] { loop(cpu); }) {}
    ~Writer() {
        stop_.store(true, std::memory_order_release);
        t_.join();
    }
    // Runs `job` on the writer's CPU and waits until it has ended (its stores fenced).
    template <class Job>
    void run(Job&& job) {
        job_ = std::forward<Job>(job);
        const std::uint64_t want = req_.fetch_add(1, std::memory_order_acq_rel) + 1;
        for (unsigned spin = 0; done_.load(std::memory_order_acquire) != want; ++spin)
            if ((spin & 1023) == 1023) std::this_thread::yield(); else _mm_pause();
    }

private:
    void loop(std::optional<int> cpu) {
        if (cpu) pin_to_cpu(*cpu);
        std::uint64_t seen = 0;
        for (unsigned spin = 0; !stop_.load(std::memory_order_acquire); ++spin) {
            const std::uint64_t r = req_.load(std::memory_order_acquire);
            if (r == seen) {
                if ((spin & 1023) == 1023) std::this_thread::yield(); else _mm_pause();
                continue;
            }
            job_();
            _mm_sfence();
            seen = r;
            done_.store(r, std::memory_order_release);
        }
    }
    std::function<void()> job_;
    alignas(64) std::atomic<std::uint64_t> req_{0};
    alignas(64) std::atomic<std::uint64_t> done_{0};
    std::atomic<bool> stop_{false};
    std::thread t_;
};

void stream_line(void* dst, std::uint64_t first_word) {
    auto* d = static_cast<__m128i*>(dst);
    _mm_stream_si128(d, _mm_set_epi64x(0, static_cast<long long>(first_word)));
    for (int i = 1; i < 4; ++i) _mm_stream_si128(d + i, _mm_setzero_si128());
}

std::uint8_t* zeroed_pages(std::size_t bytes) {
    auto* p = static_cast<std::uint8_t*>(std::aligned_alloc(4096, bytes));
    if (!p) throw std::bad_alloc();
    std::memset(p, 0, bytes);
    return p;
}

} // namespace

DeviceLinesRegions::DeviceLinesRegions()
    : chase(zeroed_pages(DeviceLinesResult::CHASE_BYTES), &std::free), ring(zeroed_pages(RING * BUFFER), &std::free),
      parallel(zeroed_pages(DeviceLinesResult::PARALLEL_BYTES), &std::free) {}

DeviceLinesResult measure_device_lines(std::optional<int> writer_cpu, int samples, DeviceLinesRegions* regions) {
    std::optional<DeviceLinesRegions> own;
    if (!regions) regions = &own.emplace();
    DeviceLinesResult r;
    r.two_cpus = writer_cpu.has_value();
    std::optional<Writer> w(std::in_place, writer_cpu);
    constexpr std::size_t line = 64;

    // the chase: a random cycle through the lines of `chase_bytes`, rewritten before every sample
    const std::size_t n = DeviceLinesResult::CHASE_BYTES / line;
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(4242);
    std::uint8_t* base = regions->chase.get();
    void* sink = nullptr;
    r.chase = measure(
        [&] {
            std::shuffle(order.begin() + 1, order.end(), rng);
            w->run([&] {
                for (std::size_t i = 0; i < n; ++i)
                    stream_line(base + order[i] * line, reinterpret_cast<std::uint64_t>(base + order[(i + 1) % n] * line));
            });
            void* p = base;
            const std::uint64_t t0 = tsc_begin();
            for (std::size_t i = 0; i < n; ++i) p = *static_cast<void**>(p);
            const std::uint64_t t1 = tsc_end();
            sink = p;
            return static_cast<double>(t1 - t0) / static_cast<double>(n);
        },
        samples, 2, 0.10, 3);

    // the ring: the first N lines of every buffer written, then read one load per line
    std::uint8_t* rb = regions->ring.get();
    std::uint64_t acc = 0;
    for (std::size_t lines : DeviceLinesResult::SEQ_LINES) {
        DeviceLinesResult::SeqPoint pt;
        pt.lines = lines;
        pt.cycles = measure(
            [&] {
                w->run([&] {
                    for (std::size_t b = 0; b < RING; ++b)
                        for (std::size_t l = 0; l < lines; ++l) stream_line(rb + b * BUFFER + l * line, b + l);
                });
                std::vector<double> per(RING);
                for (std::size_t b = 0; b < RING; ++b) {
                    const volatile std::uint64_t* f = reinterpret_cast<const std::uint64_t*>(rb + b * BUFFER);
                    const std::uint64_t t0 = tsc_begin();
                    for (std::size_t l = 0; l < lines; ++l) acc += f[l * (line / 8)];
                    const std::uint64_t t1 = tsc_end();
                    per[b] = static_cast<double>(t1 - t0);
                }
                return summarize(per).median;
            },
            samples, 2, 0.10, 3);
        r.seq.push_back(pt);
    }
    // the empty bracket, subtracted from the per-buffer figures
    r.bracket = measure(
        [] {
            std::vector<double> v(256);
            for (auto& x : v) {
                const std::uint64_t t0 = tsc_begin();
                const std::uint64_t t1 = tsc_end();
                x = static_cast<double>(t1 - t0);
            }
            return summarize(v).median;
        },
        samples, 1, 0.10, 3);
    for (auto& pt : r.seq) pt.net = std::max(0.0, pt.cycles.stats.median - r.bracket.stats.median);
    std::vector<double> x, y;
    for (const auto& pt : r.seq)
        if (pt.lines >= 2) {
            x.push_back(static_cast<double>(pt.lines));
            y.push_back(pt.net);
        }
    if (x.size() >= 2) r.seq_fit = fit_line(x, y);

    // independent chases: the lines of the region in a random order, dealt into K cycles
    {
        const std::size_t pn = DeviceLinesResult::PARALLEL_BYTES / line;
        std::uint8_t* pb = regions->parallel.get();
        std::vector<std::size_t> perm(pn);
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        for (std::size_t k : DeviceLinesResult::CHAINS) {
            const std::size_t per_chain = pn / k;
            r.parallel.push_back(measure(
                [&] {
                    w->run([&] {
                        for (std::size_t c = 0; c < k; ++c)
                            for (std::size_t i = 0; i < per_chain; ++i) {
                                const std::size_t here = perm[c * per_chain + i];
                                const std::size_t next = perm[c * per_chain + (i + 1) % per_chain];
                                stream_line(pb + here * line, reinterpret_cast<std::uint64_t>(pb + next * line));
                            }
                    });
                    void* p[32];
                    for (std::size_t c = 0; c < k; ++c) p[c] = pb + perm[c * per_chain] * line;
                    const std::uint64_t t0 = tsc_begin();
                    for (std::size_t i = 0; i < per_chain; ++i)
                        for (std::size_t c = 0; c < k; ++c) p[c] = *static_cast<void**>(p[c]);
                    const std::uint64_t t1 = tsc_end();
                    for (std::size_t c = 0; c < k; ++c) sink = p[c];
                    return static_cast<double>(t1 - t0) / static_cast<double>(per_chain * k);
                },
                samples, 1, 0.15, 3));
        }
    }

    // the stride prefetcher: line 0 of each buffer, one load site, a pause before every read
    {
        auto pause = [] {
            const std::uint64_t until = tsc_begin() + DeviceLinesResult::STRIDE_PAUSE;
            while (tsc_begin() < until) _mm_pause();
        };
        auto timed_first_line = [&](std::size_t b) {
            const volatile std::uint64_t* f = reinterpret_cast<const std::uint64_t*>(rb + b * BUFFER);
            pause();
            const std::uint64_t t0 = tsc_begin();
            acc += f[0];
            const std::uint64_t t1 = tsc_end();
            return static_cast<double>(t1 - t0) - r.bracket.stats.median;
        };
        auto rewrite = [&] {
            w->run([&] {
                for (std::size_t b = 0; b < RING; ++b) stream_line(rb + b * BUFFER, b);
            });
        };
        std::vector<std::vector<double>> pos(DeviceLinesResult::STRIDE_POSITIONS),
            skip(DeviceLinesResult::STRIDE_SKIPS);
        for (int s = 0; s < samples; ++s) {
            rewrite();
            for (std::size_t b = 0; b < DeviceLinesResult::STRIDE_POSITIONS; ++b) pos[b].push_back(timed_first_line(b));
            for (std::size_t k = 1; k <= DeviceLinesResult::STRIDE_SKIPS; ++k) {
                rewrite();
                for (std::size_t b = 0; b < DeviceLinesResult::STRIDE_TRAIN; ++b) (void)timed_first_line(b);
                skip[k - 1].push_back(timed_first_line(DeviceLinesResult::STRIDE_TRAIN - 1 + k));
            }
        }
        for (auto& v : pos) r.stride_position.push_back(std::max(0.0, summarize(v).median));
        for (auto& v : skip) r.stride_skip.push_back(std::max(0.0, summarize(v).median));
    }

    w.reset(); // its spinning would share the other CPU with the echo below
    // a line bounced between the CPUs: each side waits for the other's store and answers with its
    // own, so a round trip is two transfers of a line modified in the other core's cache
    if (writer_cpu) {
        alignas(64) static std::atomic<std::uint64_t> cell{0};
        std::atomic<bool> stop{false};
        cell.store(0);
        std::thread echo([&] {
            pin_to_cpu(*writer_cpu);
            while (!stop.load(std::memory_order_relaxed)) {
                const std::uint64_t v = cell.load(std::memory_order_acquire);
                if (v & 1) cell.store(v + 1, std::memory_order_release);
                else _mm_pause();
            }
        });
        r.peer = measure(
            [&] {
                constexpr int rounds = 2000;
                const std::uint64_t t0 = tsc_begin();
                for (int i = 0; i < rounds; ++i) {
                    const std::uint64_t v = cell.load(std::memory_order_acquire) + 1;
                    cell.store(v, std::memory_order_release);
                    for (unsigned spin = 0; cell.load(std::memory_order_acquire) == v; ++spin)
                        if ((spin & 0xfffff) == 0xfffff) std::this_thread::yield(); // the echo is not running
                }
                const std::uint64_t t1 = tsc_end();
                return static_cast<double>(t1 - t0) / (2.0 * rounds);
            },
            samples, 1, 0.15, 3);
        stop.store(true);
        echo.join();
    }
    volatile std::uint64_t keep = acc + reinterpret_cast<std::uintptr_t>(sink);
    (void)keep;
    return r;
}

} // namespace kdsim::calibrate
