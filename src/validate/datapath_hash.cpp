// kdsim validate's hashing load: a SCHED_FIFO hasher against a timer probe (datapath.h).
#include "validate/datapath_threads.h"

namespace kdsim::validate {

using namespace detail;

// ---- hashing load ----------------------------------------------------------------------------------

std::string to_string(Bracketing b) { return b == Bracketing::FIXED ? "fixed" : "yield"; }

namespace {

struct HashShared {
    std::atomic<std::int64_t> pending{0}; // the last period boundary whose need_resched was raised
    std::atomic<std::int64_t> served{0};  // the last period boundary the probe has handled
    std::atomic<bool> stop{false};
    std::atomic<int> ready{0};
    std::int64_t t0 = 0; // ns, CLOCK_MONOTONIC: the probe's first period starts here
    ErrorSlot error;
};

constexpr int HASHER_PRIO = 96; // above the probe: kernel code between preemption points
constexpr int TIMER_PRIO = 94;

} // namespace

HashResult run_hash(const HashConfig& cfg, const HashRunOpts& opts, const calibrate::CpuFeatures& cpu, double tsc_hz) {
    if (cfg.sizes.empty() || cfg.passes == 0 || cfg.chunk == 0 || cfg.probe_period_ns <= 0)
        throw std::invalid_argument("hash: sizes, passes, chunk and probe period must be positive");
    if (opts.cpu == opts.cpu_timer)
        throw std::invalid_argument("hash: the need_resched timer needs a CPU of its own (this run has one CPU)");
    HashResult r;
    const std::uint64_t maxlen = *std::max_element(cfg.sizes.begin(), cfg.sizes.end());
    AlignedBuf data = aligned_bytes(std::max<std::uint64_t>(maxlen, 1));
    fill(data.get(), maxlen, 0x68617368);
    // One-shot reference digests: the bracketed, chunked hashing must give the same.
    std::vector<std::array<unsigned char, 32>> ref(cfg.sizes.size());
    for (std::size_t i = 0; i < cfg.sizes.size(); ++i) {
        unsigned int ol = 0;
        if (EVP_Digest(data.get(), cfg.sizes[i], ref[i].data(), &ol, EVP_sha256(), nullptr) != 1)
            throw std::runtime_error("OpenSSL: SHA-256 failed");
    }
    HashShared s;
    const bool fifo = fifo_permitted();
    r.fifo = fifo;
    std::atomic<bool> hasher_fifo{fifo};
    // The common origin of the probe's periods and of the hashing: a little ahead, so that every
    // thread is pinned and waiting when it comes.
    s.t0 = mono_ns() + 20'000'000;
    const std::int64_t period = cfg.probe_period_ns;
    std::vector<double> lat;
    // Room for the periods of a run at 100 MB/s or faster (the vectors grow beyond if need be).
    double total = 0;
    for (auto x : cfg.sizes) total += static_cast<double>(x);
    const std::uint64_t expected_periods =
        static_cast<std::uint64_t>((total * cfg.passes / 1e8 + 0.1) * 1e9 / static_cast<double>(period)) + 16;
    lat.reserve(std::min<std::uint64_t>(expected_periods, 1u << 22));

    std::vector<double> flag_lag, yield_wait, seen_lag;
    flag_lag.reserve(lat.capacity());
    yield_wait.reserve(lat.capacity());
    seen_lag.reserve(lat.capacity());
    std::thread probe([&] {
        try {
            calibrate::pin_to_cpu(opts.cpu);
            if (fifo) set_fifo(cfg.probe_priority);
            s.ready.fetch_add(1);
            std::int64_t next = s.t0;
            for (std::int64_t k = 1; !s.stop.load(); ++k) {
                next += period;
                if (next > mono_ns()) sleep_until_ns(next);
                const std::int64_t now = mono_ns();
                if (s.stop.load()) break;
                lat.push_back(static_cast<double>(now - next) / 1e3);
                s.served.store(k, std::memory_order_release);
            }
        } catch (const std::exception& e) {
            s.error.put(std::string("probe: ") + e.what());
        }
    });
    std::thread timer([&] {
        try {
            calibrate::pin_to_cpu(opts.cpu_timer);
            if (fifo) set_fifo(TIMER_PRIO);
            s.ready.fetch_add(1);
            std::int64_t next = s.t0;
            for (std::int64_t k = 1; !s.stop.load(); ++k) {
                next += period;
                // Wake a little early and spin, so that the flag is raised at the boundary itself
                // rather than one idle wake-up of this CPU later.
                if (next - 60'000 > mono_ns()) sleep_until_ns(next - 60'000);
                while (mono_ns() < next && !s.stop.load(std::memory_order_relaxed)) _mm_pause();
                s.pending.store(k, std::memory_order_release); // the timer interrupt: set_tsk_need_resched()
                flag_lag.push_back(static_cast<double>(mono_ns() - next) / 1e3);
            }
        } catch (const std::exception& e) {
            s.error.put(std::string("timer: ") + e.what());
        }
    });

    std::uint64_t brackets = 0, yields = 0, bytes = 0, buffers = 0, mismatches = 0;
    double longest = 0;
    std::int64_t h0 = 0, h1 = 0;
    std::unique_ptr<UserSimdState> user;
    std::exception_ptr hasher_error;
    std::thread hasher([&] {
        try {
            calibrate::pin_to_cpu(opts.cpu);
            if (cfg.user_simd_live) user = std::make_unique<UserSimdState>(cpu);
            std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md(EVP_MD_CTX_new(), EVP_MD_CTX_free);
            if (!md) throw std::runtime_error("OpenSSL: EVP_MD_CTX_new failed");
            // Wait (sleeping: the probe shares this CPU) until the probe and the timer are set up,
            // then take the FIFO priority above the probe from the common origin on.
            while (s.ready.load() < 2) sleep_until_ns(mono_ns() + 100'000);
            sleep_until_ns(s.t0);
            if (fifo && !set_fifo(HASHER_PRIO)) hasher_fifo.store(false);
            // schedule(): the CPU goes to the probe if need_resched is set.
            auto need_resched = [&] {
                return s.pending.load(std::memory_order_acquire) > s.served.load(std::memory_order_acquire);
            };
            auto reschedule = [&] {
                ++yields;
                if (!hasher_fifo.load(std::memory_order_relaxed)) {
                    sched_yield();
                    return;
                }
                const std::int64_t want = s.pending.load(std::memory_order_acquire);
                const std::uint64_t y0 = __rdtsc();
                seen_lag.push_back(static_cast<double>(mono_ns() - (s.t0 + want * period)) / 1e3);
                set_fifo(1); // below the probe: it runs now if the kernel has woken it
                const std::uint64_t limit = y0 + static_cast<std::uint64_t>(tsc_hz * 5e-3);
                while (s.served.load(std::memory_order_acquire) < want && __rdtsc() < limit) _mm_pause();
                yield_wait.push_back(static_cast<double>(__rdtsc() - y0) / tsc_hz * 1e6);
                set_fifo(HASHER_PRIO);
            };
            bool saved = false;
            std::uint64_t bstart = 0;
            auto begin = [&] { // kernel_fpu_begin()
                bstart = __rdtsc();
                if (user && !saved) {
                    user->save();
                    saved = true;
                }
                ++brackets;
            };
            auto end = [&] { // kernel_fpu_end()
                longest = std::max(longest, static_cast<double>(__rdtsc() - bstart));
            };
            h0 = mono_ns();
            for (std::uint32_t pass = 0; pass < cfg.passes; ++pass) {
                for (std::size_t i = 0; i < cfg.sizes.size(); ++i) {
                    const std::uint64_t len = cfg.sizes[i];
                    if (user) user->dirty(); // user space computes with its vector registers
                    // the system call: crypto_shash_digest() in brackets
                    if (cfg.policy == Bracketing::YIELD) begin();
                    if (EVP_DigestInit_ex(md.get(), EVP_sha256(), nullptr) != 1)
                        throw std::runtime_error("OpenSSL: EVP_DigestInit_ex failed");
                    std::array<unsigned char, 32> out{};
                    std::uint64_t pos = 0;
                    do {
                        const std::uint64_t n = std::min(cfg.chunk, len - pos);
                        const bool last = pos + n == len;
                        if (cfg.policy == Bracketing::FIXED) begin();
                        if (EVP_DigestUpdate(md.get(), data.get() + pos, n) != 1)
                            throw std::runtime_error("OpenSSL: EVP_DigestUpdate failed");
                        pos += n;
                        if (last) {
                            unsigned int ol = 0;
                            if (EVP_DigestFinal_ex(md.get(), out.data(), &ol) != 1)
                                throw std::runtime_error("OpenSSL: EVP_DigestFinal_ex failed");
                        }
                        if (cfg.policy == Bracketing::FIXED) {
                            end(); // preempt_enable(): no preemption point under PREEMPT_VOLUNTARY
                        } else if (!last && need_resched()) { // kernel_fpu_yield()
                            end();
                            reschedule();
                            begin();
                        }
                    } while (pos < len);
                    if (cfg.policy == Bracketing::YIELD) end();
                    if (out != ref[i]) ++mismatches;
                    bytes += len;
                    ++buffers;
                    // the return to user space: the saved user state is restored; a preemption point
                    if (saved) {
                        user->restore();
                        saved = false;
                    }
                    if (need_resched()) reschedule();
                }
            }
            h1 = mono_ns();
            set_normal();
        } catch (...) {
            hasher_error = std::current_exception();
            set_normal();
        }
    });
    hasher.join();
    s.stop.store(true);
    timer.join();
    probe.join();
    if (hasher_error) std::rethrow_exception(hasher_error);
    if (s.error.set.load()) throw std::runtime_error(s.error.what);

    r.fifo = hasher_fifo.load();
    r.bytes = bytes;
    r.buffers = buffers;
    r.elapsed_s = static_cast<double>(h1 - h0) * 1e-9;
    r.mb_per_s = r.elapsed_s > 0 ? static_cast<double>(bytes) / r.elapsed_s / 1e6 : 0;
    r.brackets = brackets;
    r.yields = yields;
    r.xsaves = user ? user->saves : 0;
    r.xrstors = user ? user->restores : 0;
    r.longest_bracket_cycles = longest;
    r.longest_bracket_us = longest / tsc_hz * 1e6;
    r.probe_latency_us = std::move(lat);
    r.probe_p50_us = percentile(r.probe_latency_us, 50);
    r.probe_p99_us = percentile(r.probe_latency_us, 99);
    r.probe_max_us = percentile(r.probe_latency_us, 100);
    r.flag_lag_p50_us = percentile(flag_lag, 50);
    r.yield_wait_p50_us = percentile(yield_wait, 50);
    r.resched_seen_p50_us = percentile(seen_lag, 50);
    r.yield_wait_p99_us = percentile(yield_wait, 99);
    if (mismatches) r.digest_check = std::to_string(mismatches) + " digest(s) differ from the one-shot digest";
    return r;
}

} // namespace kdsim::validate
