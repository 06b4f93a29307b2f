// kdsim validate's packet receive datapath: a device thread fills an rx ring, the rx thread polls
// it in NET_RX-like rounds, flushes and decrypts, or hands packets to a worker (datapath.h).
#include "validate/datapath_threads.h"
#include "engine/enum_names.h"

namespace kdsim::validate {

using namespace detail;

// ---- packet receive ------------------------------------------------------------------------------

std::string to_string(Flush f) {
    static constexpr engine::EnumNames<Flush, 3> names{{"none", "full buffer", "received length"}};
    return std::string(names(f));
}

namespace {

struct alignas(64) Desc {
    std::atomic<std::uint32_t> done{0}; // 1: written by the device, owned by the host
    std::uint32_t len = 0;
    std::uint8_t* buf = nullptr;
};

struct Work {
    std::uint8_t* buf = nullptr;
    std::uint32_t len = 0;
};

// Bracket durations (TSC cycles) of every 8th packet inside the measurement window.
struct BracketSampler {
    std::vector<std::uint32_t> samples;
    std::uint64_t n = 0;
    BracketSampler() { samples.reserve(1 << 20); }
    bool want(bool measuring) { return measuring && (n++ & 7) == 0 && samples.size() < samples.capacity(); }
    void add(std::uint64_t cycles) {
        samples.push_back(static_cast<std::uint32_t>(std::min<std::uint64_t>(cycles, UINT32_MAX)));
    }
};

struct RxShared {
    const RxConfig& cfg;
    const Sa& sa;
    const calibrate::CpuFeatures& cpu;
    std::vector<Desc> descs;
    AlignedBuf storage;
    std::vector<std::vector<std::uint8_t>> pool;
    Spsc<Work> work;
    Spsc<std::uint8_t*> free_bufs;
    ErrorSlot error;

    Doorbell irq;    // the device interrupt the NAPI poll sleeps on
    Doorbell worker; // the cryptd worker's wake-up
    std::atomic<bool> stop{false};
    std::atomic<bool> device_done{false};
    std::atomic<bool> rx_done{false};
    std::atomic<bool> measuring{false};

    Counter produced, decrypted, auth_failures, ring_drops, queue_drops, lines, rounds, polls, squeezes, interrupts,
        worker_wakeups, xsaves, xrstors;
    BracketSampler rx_brackets, worker_brackets;

    RxShared(const RxConfig& c, const Sa& s, const calibrate::CpuFeatures& f)
        : cfg(c), sa(s), cpu(f), descs(c.ring), work(std::max<std::size_t>(1, c.cryptd_qlen)),
          free_bufs(c.ring + c.cryptd_qlen + 4) {}
};

// The device's DMA write: non-temporal stores, so that the frame goes to memory (as a NIC's write
// does) instead of staying modified in the device thread's core, whence the receiving core would
// fetch it line by line. `dst` is 64-byte aligned and has room for `n` rounded up to 16 bytes.
void dma_write(std::uint8_t* dst, const std::uint8_t* src, std::size_t n) {
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    if (i < n) {
        alignas(16) std::uint8_t tail[16] = {};
        std::memcpy(tail, src + i, n - i);
        _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), _mm_load_si128(reinterpret_cast<const __m128i*>(tail)));
    }
    _mm_sfence(); // the frame is globally visible before the descriptor says done
}

void device_thread(RxShared& s, const RxRun& run, double tsc_hz) {
    try {
        calibrate::pin_to_cpu(run.cpu_device);
        if (run.fifo_priority > 0) set_fifo(run.fifo_priority);
        const std::size_t ring = s.descs.size();
        const bool paced = s.cfg.offered_pps > 0;
        const double period = paced ? tsc_hz / s.cfg.offered_pps : 0;
        const std::uint64_t t0 = __rdtsc();
        std::size_t head = 0;
        std::uint64_t k = 0;
        while (!s.stop.load(std::memory_order_relaxed) && !s.error.set.load(std::memory_order_relaxed)) {
            if (run.packets && k == run.packets) break;
            Desc& d = s.descs[head];
            if (paced) {
                const auto due = t0 + static_cast<std::uint64_t>(static_cast<double>(k) * period);
                while (__rdtsc() < due && !s.stop.load(std::memory_order_relaxed)) _mm_pause();
                if (d.done.load(std::memory_order_acquire)) { // no free descriptor: the NIC drops it
                    s.produced.inc();
                    s.ring_drops.inc();
                    ++k;
                    continue;
                }
            } else {
                bool stopped = false;
                while (d.done.load(std::memory_order_acquire)) {
                    if (s.stop.load(std::memory_order_relaxed) || s.error.set.load(std::memory_order_relaxed)) {
                        stopped = true;
                        break;
                    }
                    _mm_pause();
                }
                if (stopped) break;
            }
            const auto& f = s.pool[k % s.pool.size()];
            dma_write(d.buf, f.data(), f.size());
            d.len = static_cast<std::uint32_t>(f.size());
            if (s.cfg.corrupt_packet && *s.cfg.corrupt_packet == k) d.buf[PAYLOAD_OFF + f.size() / 3] ^= 0x01;
            d.done.store(1, std::memory_order_release);
            s.produced.inc();
            ++k;
            head = head + 1 == ring ? 0 : head + 1;
            // Raise the interrupt if the receiver re-armed it (napi_complete_done + irq enable).
            if (s.irq.ring_if_armed()) s.interrupts.inc();
        }
    } catch (const std::exception& e) {
        s.error.put(std::string("device thread: ") + e.what());
    }
    s.device_done.store(true, std::memory_order_release);
    s.irq.ring();
}

void wake_worker(RxShared& s) {
    if (s.worker.ring_if_armed()) s.worker_wakeups.inc();
}

// A thread of the receiving CPU: pinned to it, and SCHED_FIFO when the run asks for it.
void enter_rx_cpu(const RxRun& run) {
    calibrate::pin_to_cpu(run.cpu_rx);
    if (run.fifo_priority > 0) set_fifo(run.fifo_priority);
}

void rx_thread(RxShared& s, const RxRun& run) {
    try {
        enter_rx_cpu(run);
        InPlaceOpener opener(s.sa);
        std::unique_ptr<UserSimdState> user;
        if (s.cfg.user_simd_live) user = std::make_unique<UserSimdState>(s.cpu);
        const std::size_t ring = s.descs.size();
        const std::size_t line = s.cpu.cache_line ? s.cpu.cache_line : 64;
        std::size_t next = 0;
        bool saved = false;

        auto process = [&](Desc& d) {
            std::uint8_t* b = d.buf;
            const std::uint32_t len = d.len;
            if (s.cfg.flush != Flush::NONE) // dma_sync_single_for_cpu() of a non-coherent buffer
                s.lines.inc(flush_lines(b, s.cfg.flush == Flush::FULL_BUFFER ? s.cfg.buffer_size : len, line,
                                        s.cpu.clflushopt));
            if (s.cfg.cryptd) {
                // cryptd_enqueue_request(): a full queue fails the request and the packet is dropped
                if (!s.work.push(Work{b, len})) {
                    s.queue_drops.inc();
                    return;
                }
                std::uint8_t* fresh = nullptr;
                if (!s.free_bufs.pop(fresh)) throw std::runtime_error("rx buffer pool exhausted");
                d.buf = fresh; // the skb keeps the old buffer; the ring gets a new one
                wake_worker(s);
                return;
            }
            if (user && !saved) { // kernel_fpu_begin() in a softirq that interrupted a user task
                user->save();
                s.xsaves.inc();
                saved = true;
            }
            const bool timed = s.rx_brackets.want(s.measuring.load(std::memory_order_relaxed));
            const std::uint64_t t0 = timed ? __rdtsc() : 0;
            const bool ok = opener.open(std::span<std::uint8_t>(b, len));
            if (timed) s.rx_brackets.add(__rdtsc() - t0);
            (ok ? s.decrypted : s.auth_failures).inc();
        };
        auto poll = [&](int weight) {
            int n = 0;
            while (n < weight) {
                Desc& d = s.descs[next];
                if (!d.done.load(std::memory_order_acquire)) break;
                process(d);
                d.done.store(0, std::memory_order_release); // the descriptor goes back to the device
                next = next + 1 == ring ? 0 : next + 1;
                ++n;
            }
            return n;
        };

        for (;;) {
            // One NET_RX softirq round: net_rx_action() polls while budget is left; a poll that
            // did its whole weight stays scheduled.
            s.rounds.inc();
            int budget = s.cfg.budget;
            bool more = false;
            while (budget > 0) {
                int n = poll(s.cfg.weight);
                s.polls.inc();
                budget -= n;
                more = n == s.cfg.weight;
                if (!more) break;
            }
            if (saved) { // the interrupted user task resumes: its state is restored
                user->restore();
                s.xrstors.inc();
                saved = false;
            }
            if (s.error.set.load(std::memory_order_relaxed)) break;
            if (more) {
                // time_squeeze: the softirq is raised again; a preemption point between rounds
                // (ksoftirqd's cond_resched()) lets the cryptd worker on this CPU run.
                s.squeezes.inc();
                if (s.cfg.cryptd && !s.work.empty()) sched_yield();
                continue;
            }
            // napi_complete_done(): re-enable the device interrupt and sleep until it fires.
            if (s.device_done.load(std::memory_order_acquire) && !s.descs[next].done.load(std::memory_order_acquire))
                break;
            s.irq.sleep_unless([&] {
                return s.descs[next].done.load(std::memory_order_acquire) || s.device_done.load(std::memory_order_acquire);
            });
        }
    } catch (const std::exception& e) {
        s.error.put(std::string("rx thread: ") + e.what());
    }
    s.rx_done.store(true, std::memory_order_release);
    s.worker.ring();
}

// cryptd_queue_worker(): one request per work item; sleeps when the queue is empty.
void worker_thread(RxShared& s, const RxRun& run) {
    try {
        enter_rx_cpu(run);
        InPlaceOpener opener(s.sa);
        for (;;) {
            Work w;
            if (s.work.pop(w)) {
                const bool timed = s.worker_brackets.want(s.measuring.load(std::memory_order_relaxed));
                const std::uint64_t t0 = timed ? __rdtsc() : 0;
                const bool ok = opener.open(std::span<std::uint8_t>(w.buf, w.len));
                if (timed) s.worker_brackets.add(__rdtsc() - t0);
                (ok ? s.decrypted : s.auth_failures).inc(); // the completion
                if (!s.free_bufs.push(w.buf)) throw std::runtime_error("rx buffer pool overflow");
                continue;
            }
            if (s.rx_done.load(std::memory_order_acquire) && s.work.empty()) break;
            s.worker.sleep_unless([&] { return !s.work.empty() || s.rx_done.load(std::memory_order_acquire); });
        }
    } catch (const std::exception& e) {
        s.error.put(std::string("cryptd worker: ") + e.what());
    }
}

} // namespace

RxResult run_rx(const RxConfig& cfg, const RxRun& run, const calibrate::CpuFeatures& cpu, double tsc_hz) {
    if (cfg.ring == 0 || cfg.weight <= 0 || cfg.budget <= 0 || cfg.pool == 0)
        throw std::invalid_argument("rx: ring, weight, budget and pool must be positive");
    if ((frame_len(cfg.payload) + 15) / 16 * 16 > cfg.buffer_size)
        throw std::invalid_argument("rx: a " + std::to_string(frame_len(cfg.payload)) + "-byte frame does not fit a " +
                                    std::to_string(cfg.buffer_size) + "-byte buffer");
    if (cfg.buffer_size % 64) throw std::invalid_argument("rx: the buffer size must be a multiple of 64 bytes");
    if (cfg.flush != Flush::NONE && !cpu.clflush && !cpu.clflushopt)
        throw std::runtime_error("rx: the CPU has neither CLFLUSHOPT nor CLFLUSH");
    Sa sa = make_sa(cfg.alg, cfg.seed);
    RxShared s(cfg, sa, cpu);
    // The device's frames: sealed before the run, each under its own nonce (see docs/validation.md).
    s.pool.reserve(cfg.pool);
    const std::uint64_t iv0 = 0x5eed000000000000ull ^ (cfg.seed << 32);
    for (std::size_t i = 0; i < cfg.pool; ++i)
        s.pool.push_back(build_frame(sa, static_cast<std::uint32_t>(i + 1), iv0 + i, cfg.payload, cfg.seed));
    const std::size_t nbuf = cfg.ring + (cfg.cryptd ? cfg.cryptd_qlen + 2 : 0);
    s.storage = aligned_bytes(nbuf * cfg.buffer_size);
    for (std::size_t i = 0; i < cfg.ring; ++i) s.descs[i].buf = s.storage.get() + i * cfg.buffer_size;
    for (std::size_t i = cfg.ring; i < nbuf; ++i) s.free_bufs.push(s.storage.get() + i * cfg.buffer_size);

    RxResult r;
    // With FIFO threads busy on both CPUs, this thread must outrank them to end the window on time.
    MainThreadGuard guard(run.fifo_priority > 0 ? run.fifo_priority + 10 : 0, run.cpu_device);
    std::thread rx(rx_thread, std::ref(s), std::cref(run));
    std::thread worker;
    if (cfg.cryptd) worker = std::thread(worker_thread, std::ref(s), std::cref(run));
    std::thread device(device_thread, std::ref(s), std::cref(run), tsc_hz);

    auto cpu_ns = [&] { return thread_cpu_ns(rx) + (cfg.cryptd ? thread_cpu_ns(worker) : 0.0); };
    if (run.packets == 0) {
        sleep_s(run.warmup_s);
        s.measuring.store(true);
        const std::int64_t m0 = mono_ns();
        const double c0 = cpu_ns();
        const std::uint64_t p0 = s.decrypted.get();
        sleep_s(run.window_s);
        const std::uint64_t p1 = s.decrypted.get();
        const double c1 = cpu_ns();
        const std::int64_t m1 = mono_ns();
        s.measuring.store(false);
        s.stop.store(true);
        r.window_s = static_cast<double>(m1 - m0) * 1e-9;
        r.window_packets = p1 - p0;
        r.pps = r.window_s > 0 ? static_cast<double>(r.window_packets) / r.window_s : 0;
        r.payload_mbit_s = r.pps * static_cast<double>(cfg.payload) * 8 / 1e6;
        r.cycles_per_packet = r.window_packets ? (c1 - c0) * 1e-9 * tsc_hz / static_cast<double>(r.window_packets) : 0;
    }
    device.join();
    rx.join();
    if (worker.joinable()) worker.join();
    if (s.error.set.load()) throw std::runtime_error(s.error.what);

    r.produced = s.produced.get();
    r.decrypted = s.decrypted.get();
    r.auth_failures = s.auth_failures.get();
    r.ring_drops = s.ring_drops.get();
    r.queue_drops = s.queue_drops.get();
    r.lines_flushed = s.lines.get();
    r.rounds = s.rounds.get();
    r.polls = s.polls.get();
    r.squeezes = s.squeezes.get();
    r.interrupts = s.interrupts.get();
    r.worker_wakeups = s.worker_wakeups.get();
    r.xsaves = s.xsaves.get();
    r.xrstors = s.xrstors.get();
    r.conserved = r.produced == r.decrypted + r.auth_failures + r.ring_drops + r.queue_drops;
    std::vector<double> br;
    for (auto* smp : {&s.rx_brackets, &s.worker_brackets})
        for (std::uint32_t c : smp->samples) br.push_back(c);
    if (!br.empty()) {
        r.longest_bracket_cycles = *std::max_element(br.begin(), br.end());
        r.longest_bracket_us = r.longest_bracket_cycles / tsc_hz * 1e6;
        r.median_bracket_cycles = percentile(br, 50);
    }
    return r;
}

} // namespace kdsim::validate
