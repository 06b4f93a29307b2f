// The real datapath of kdsim validate (see datapath.h for the arrangement of threads and why).
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

namespace kdsim::validate {

// ---- building blocks ---------------------------------------------------------------------------

std::int64_t mono_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

namespace {

long futex_wait(std::atomic<std::uint32_t>* a, std::uint32_t val) {
    return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(a), FUTEX_WAIT_PRIVATE, val, nullptr, nullptr, 0);
}
long futex_wake(std::atomic<std::uint32_t>* a) {
    return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(a), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

std::uint64_t splitmix(std::uint64_t& s) {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void fill(std::uint8_t* p, std::size_t n, std::uint64_t seed) {
    std::uint64_t s = seed;
    for (std::size_t i = 0; i < n; i += 8) {
        std::uint64_t v = splitmix(s);
        std::memcpy(p + i, &v, std::min<std::size_t>(8, n - i));
    }
}

void put_be32(std::uint8_t* p, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (24 - 8 * i));
}
void put_be64(std::uint8_t* p, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (56 - 8 * i));
}
std::uint32_t get_be32(const std::uint8_t* p) {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

const EVP_CIPHER* evp_cipher(crypto::AeadAlg alg) {
    switch (alg) {
    case crypto::AeadAlg::CHACHA20_POLY1305: return EVP_chacha20_poly1305();
    case crypto::AeadAlg::AES_128_GCM: return EVP_aes_128_gcm();
    case crypto::AeadAlg::AES_256_GCM: return EVP_aes_256_gcm();
    }
    throw std::invalid_argument("unknown AEAD algorithm");
}

struct AlignedFree {
    void operator()(std::uint8_t* p) const noexcept { std::free(p); }
};
using AlignedBuf = std::unique_ptr<std::uint8_t, AlignedFree>;
AlignedBuf aligned_bytes(std::size_t n, std::size_t align = 4096) {
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

double thread_cpu_ns(std::thread& t) {
    clockid_t cid;
    if (pthread_getcpuclockid(t.native_handle(), &cid) != 0) return 0;
    timespec ts;
    if (clock_gettime(cid, &ts) != 0) return 0;
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

void sleep_s(double s) {
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

void sleep_until_ns(std::int64_t t) {
    timespec ts;
    ts.tv_sec = static_cast<time_t>(t / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(t % 1'000'000'000);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
}

} // namespace

Sa make_sa(crypto::AeadAlg alg, std::uint64_t seed) {
    Sa sa;
    sa.alg = alg;
    sa.key.resize(crypto::key_size(alg));
    fill(sa.key.data(), sa.key.size(), seed ^ 0x6b6579);
    fill(sa.salt.data(), sa.salt.size(), seed ^ 0x73616c74);
    sa.spi = 0x1000 + static_cast<std::uint32_t>(seed & 0xff);
    return sa;
}

std::vector<std::uint8_t> build_frame(const Sa& sa, std::uint32_t seq, std::uint64_t iv, std::size_t payload,
                                      std::uint64_t seed) {
    std::vector<std::uint8_t> f(frame_len(payload));
    // Ethernet: dst, src, type IPv4; IPv4 header with protocol 50 (ESP).
    static constexpr std::uint8_t outer[OUTER_HDR] = {
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x08, 0x00, // Ethernet
        0x45, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x40, 0x32, 0x00, 0x00,             // IPv4 ... proto 50
        0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02};
    std::memcpy(f.data(), outer, OUTER_HDR);
    std::size_t ip_len = f.size() - 14;
    f[16] = static_cast<std::uint8_t>(ip_len >> 8);
    f[17] = static_cast<std::uint8_t>(ip_len);
    put_be32(f.data() + ESP_OFF, sa.spi);
    put_be32(f.data() + ESP_OFF + 4, seq);
    put_be64(f.data() + ESP_OFF + 8, iv);
    std::array<std::uint8_t, 12> nonce{};
    std::memcpy(nonce.data(), sa.salt.data(), 4);
    std::memcpy(nonce.data() + 4, f.data() + ESP_OFF + 8, 8);
    std::vector<std::uint8_t> plain(payload);
    fill(plain.data(), plain.size(), seed ^ (std::uint64_t{seq} << 20));
    std::vector<std::uint8_t> sealed = crypto::aead_seal(sa.alg, sa.key, nonce,
                                                         std::span<const std::uint8_t>(f.data() + ESP_OFF, 8), plain);
    std::memcpy(f.data() + PAYLOAD_OFF, sealed.data(), sealed.size());
    return f;
}

InPlaceOpener::InPlaceOpener(const Sa& sa) : sa_(sa), ctx_(EVP_CIPHER_CTX_new()) {
    if (!ctx_ || EVP_DecryptInit_ex(ctx_, evp_cipher(sa.alg), nullptr, nullptr, nullptr) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_SET_IVLEN, 12, nullptr) != 1 ||
        EVP_DecryptInit_ex(ctx_, nullptr, nullptr, sa.key.data(), nullptr) != 1) {
        EVP_CIPHER_CTX_free(ctx_);
        throw std::runtime_error("OpenSSL: cannot set up the AEAD decryption context");
    }
}

InPlaceOpener::~InPlaceOpener() { EVP_CIPHER_CTX_free(ctx_); }

bool InPlaceOpener::open(std::span<std::uint8_t> frame) {
    if (frame.size() < PAYLOAD_OFF + crypto::tag_size) return false;
    std::uint8_t* esp = frame.data() + ESP_OFF;
    if (get_be32(esp) != sa_.spi) return false; // xfrm_state_lookup: no SA
    std::uint8_t nonce[12];
    std::memcpy(nonce, sa_.salt.data(), 4);
    std::memcpy(nonce + 4, esp + 8, 8);
    const std::size_t n = frame.size() - PAYLOAD_OFF - crypto::tag_size;
    std::uint8_t* data = frame.data() + PAYLOAD_OFF;
    std::uint8_t tag[crypto::tag_size];
    std::memcpy(tag, data + n, crypto::tag_size);
    int len = 0, fl = 0;
    if (EVP_DecryptInit_ex(ctx_, nullptr, nullptr, nullptr, nonce) != 1 ||
        EVP_DecryptUpdate(ctx_, nullptr, &len, esp, 8) != 1 ||
        EVP_DecryptUpdate(ctx_, data, &len, data, static_cast<int>(n)) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_AEAD_SET_TAG, static_cast<int>(crypto::tag_size), tag) != 1)
        throw std::runtime_error("OpenSSL: AEAD decryption failed");
    return EVP_DecryptFinal_ex(ctx_, data + len, &fl) > 0;
}

std::size_t flush_lines(const void* p, std::size_t bytes, std::size_t line, bool clflushopt) {
    const auto* c = static_cast<const char*>(p);
    const std::size_t n = (bytes + line - 1) / line;
    for (std::size_t i = 0; i < n; ++i) {
        if (clflushopt) asm volatile("clflushopt (%0)" ::"r"(c + i * line) : "memory");
        else asm volatile("clflush (%0)" ::"r"(c + i * line) : "memory");
    }
    _mm_mfence();
    return n;
}

#define KDSIM_VALIDATE_ALL_XMM "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", \
                               "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

UserSimdState::UserSimdState(const calibrate::CpuFeatures& cpu) : cpu_(cpu) {
    if (!cpu.osxsave) throw std::runtime_error("the OS has not enabled XSAVE (CPUID.1:ECX.OSXSAVE clear)");
    unsigned a, b, c, d;
    __cpuid_count(0xd, 0, a, b, c, d);
    size_ = b;
    std::size_t sz = (size_ + 63) / 64 * 64;
    area_ = static_cast<unsigned char*>(std::aligned_alloc(64, sz));
    if (!area_) throw std::bad_alloc();
    std::memset(area_, 0, sz);
    unsigned lo = static_cast<unsigned>(cpu_.xcr0), hi = static_cast<unsigned>(cpu_.xcr0 >> 32);
    asm volatile("xsave64 (%0)" ::"r"(area_), "a"(lo), "d"(hi) : "memory"); // a valid header
}

UserSimdState::~UserSimdState() { std::free(area_); }

__attribute__((noinline)) void UserSimdState::dirty() {
    if (cpu_.avx)
        asm volatile("vpcmpeqd %%ymm1, %%ymm1, %%ymm1\n\tvpaddd %%ymm1, %%ymm0, %%ymm0\n\t"
                     "vpaddd %%ymm1, %%ymm8, %%ymm8" ::: "xmm0", "xmm1", "xmm8");
    else
        asm volatile("pcmpeqd %%xmm1, %%xmm1\n\tpaddd %%xmm1, %%xmm0" ::: "xmm0", "xmm1");
}

__attribute__((noinline)) void UserSimdState::save() {
    unsigned lo = static_cast<unsigned>(cpu_.xcr0), hi = static_cast<unsigned>(cpu_.xcr0 >> 32);
    if (cpu_.xsaveopt)
        asm volatile("xsaveopt64 (%0)" ::"r"(area_), "a"(lo), "d"(hi) : "memory");
    else
        asm volatile("xsave64 (%0)" ::"r"(area_), "a"(lo), "d"(hi) : "memory");
    ++saves;
}

__attribute__((noinline)) void UserSimdState::restore() {
    unsigned lo = static_cast<unsigned>(cpu_.xcr0), hi = static_cast<unsigned>(cpu_.xcr0 >> 32);
    asm volatile("xrstor64 (%0)" ::"r"(area_), "a"(lo), "d"(hi) : "memory", KDSIM_VALIDATE_ALL_XMM);
    ++restores;
}

bool set_fifo(int priority) {
    sched_param sp{};
    sp.sched_priority = priority;
    return pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
}

bool set_normal() {
    sched_param sp{};
    sp.sched_priority = 0;
    return pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp) == 0;
}

bool fifo_permitted() {
    bool ok = false;
    std::thread t([&] { ok = set_fifo(1); });
    t.join();
    return ok;
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
    if (rank == 0) rank = 1;
    return v[std::min(rank, v.size()) - 1];
}

// ---- packet receive ------------------------------------------------------------------------------

std::string to_string(Flush f) {
    switch (f) {
    case Flush::NONE: return "none";
    case Flush::FULL_BUFFER: return "full buffer";
    case Flush::RECEIVED_LENGTH: return "received length";
    }
    return "?";
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

    alignas(64) std::atomic<std::uint32_t> irq_seq{0};
    alignas(64) std::atomic<std::uint32_t> irq_armed{0};
    alignas(64) std::atomic<std::uint32_t> worker_seq{0};
    alignas(64) std::atomic<std::uint32_t> worker_sleeping{0};
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
            std::atomic_thread_fence(std::memory_order_seq_cst);
            if (s.irq_armed.load(std::memory_order_relaxed) && s.irq_armed.exchange(0)) {
                s.interrupts.inc();
                s.irq_seq.fetch_add(1);
                futex_wake(&s.irq_seq);
            }
        }
    } catch (const std::exception& e) {
        s.error.put(std::string("device thread: ") + e.what());
    }
    s.device_done.store(true, std::memory_order_release);
    s.irq_seq.fetch_add(1);
    futex_wake(&s.irq_seq);
}

void wake_worker(RxShared& s) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (s.worker_sleeping.load(std::memory_order_relaxed) && s.worker_sleeping.exchange(0)) {
        s.worker_wakeups.inc();
        s.worker_seq.fetch_add(1);
        futex_wake(&s.worker_seq);
    }
}

void rx_thread(RxShared& s, const RxRun& run) {
    try {
        calibrate::pin_to_cpu(run.cpu_rx);
        if (run.fifo_priority > 0) set_fifo(run.fifo_priority);
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
            std::uint32_t seq = s.irq_seq.load(std::memory_order_acquire);
            s.irq_armed.store(1);
            std::atomic_thread_fence(std::memory_order_seq_cst);
            if (s.descs[next].done.load(std::memory_order_acquire) || s.device_done.load(std::memory_order_acquire)) {
                s.irq_armed.store(0);
                continue;
            }
            futex_wait(&s.irq_seq, seq);
            s.irq_armed.store(0);
        }
    } catch (const std::exception& e) {
        s.error.put(std::string("rx thread: ") + e.what());
    }
    s.rx_done.store(true, std::memory_order_release);
    s.worker_seq.fetch_add(1);
    futex_wake(&s.worker_seq);
}

// cryptd_queue_worker(): one request per work item; sleeps when the queue is empty.
void worker_thread(RxShared& s, const RxRun& run) {
    try {
        calibrate::pin_to_cpu(run.cpu_rx);
        if (run.fifo_priority > 0) set_fifo(run.fifo_priority);
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
            std::uint32_t seq = s.worker_seq.load(std::memory_order_acquire);
            s.worker_sleeping.store(1);
            std::atomic_thread_fence(std::memory_order_seq_cst);
            if (!s.work.empty() || s.rx_done.load(std::memory_order_acquire)) {
                s.worker_sleeping.store(0);
                continue;
            }
            futex_wait(&s.worker_seq, seq);
            s.worker_sleeping.store(0);
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
