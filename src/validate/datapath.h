// The real datapath of `kdsim validate`: real threads pinned to real CPUs, real buffers and real
// cryptography (OpenSSL EVP), arranged like the machines kdsim simulates, so that a measurement
// on this machine can be held against the simulation of the same configuration.
//
// Packet receive (run_rx):
//   device thread (CPU B)  --writes ESP-like AEAD packets into-->  rx descriptor ring
//   rx thread     (CPU A)  --NAPI poll: weight 64, budget 300 per softirq round-->  decrypt in place
//                          (or hand each packet to a cryptd-like worker thread on CPU A)
// The device marks a descriptor done (release store) and, when the receiver has re-armed its
// "interrupt" (NAPI complete), wakes it through a futex. The receiver polls in softirq rounds;
// after a round with work left it yields (a preemption point between rounds, as ksoftirqd's
// cond_resched()), after a round that emptied the ring it re-arms the interrupt and sleeps.
// Optionally, before the CPU reads a buffer, CLFLUSHOPT (or CLFLUSH) of its lines — the whole
// buffer or the received length — stands in for the cache invalidation of a non-coherent
// dma_sync_single_for_cpu().
//
// Hashing load (run_hash): a "user process" on CPU A whose system calls each hash one buffer of a
// list with SHA-256 (EVP) in 4 KiB steps, inside SIMD brackets that really XSAVE the live user
// register state at the first kernel_fpu_begin() of the call and XRSTOR it on the return to user
// space; a cyclictest-like probe on CPU A (clock_nanosleep to absolute period boundaries,
// latency = wake-up - boundary); a timer thread on CPU B that raises a need_resched flag at each
// boundary. Kernel code under PREEMPT_VOLUNTARY is not preemptible between preemption points; the
// hashing thread mirrors that by running SCHED_FIFO above the probe and giving the CPU up only at
// its preemption points (the return to user space after each buffer; with the conditional-yield
// policy also every 4 KiB when need_resched is set), by dropping below the probe's priority until
// the probe has run.
#pragma once

#include "calibrate/calibrate.h"
#include "crypto/aead.h"

#include <openssl/evp.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kdsim::validate {

// ---- building blocks ---------------------------------------------------------------------------

// CLOCK_MONOTONIC in nanoseconds.
std::int64_t mono_ns();

// The packet layout (an ESP-like frame as the NIC writes it into the rx buffer):
//   [0, 34)        outer Ethernet (14) + IPv4 (20) header
//   [34, 38)       SPI            (AAD, with the sequence number: RFC 4106 without ESN)
//   [38, 42)       sequence number
//   [42, 50)       explicit IV    (nonce = 4-byte salt of the SA || this IV)
//   [50, 50 + n)   ciphertext of the n-byte payload
//   [50 + n, +16)  ICV (the AEAD tag)
inline constexpr std::size_t OUTER_HDR = 34;
inline constexpr std::size_t ESP_HDR = 16; // SPI + seq + IV
inline constexpr std::size_t ESP_OFF = OUTER_HDR;
inline constexpr std::size_t PAYLOAD_OFF = OUTER_HDR + ESP_HDR;
inline constexpr std::size_t frame_len(std::size_t payload) { return PAYLOAD_OFF + payload + crypto::tag_size; }

// One security association: algorithm, key, salt, SPI.
struct Sa {
    crypto::AeadAlg alg = crypto::AeadAlg::AES_128_GCM;
    std::vector<std::uint8_t> key;
    std::array<std::uint8_t, 4> salt{};
    std::uint32_t spi = 0x1000;
};
Sa make_sa(crypto::AeadAlg alg, std::uint64_t seed);

// Builds one sealed frame (crypto::aead_seal, the library's one-shot wrapper) for sequence number
// `seq` with the explicit IV `iv` (fresh per packet) and a payload of `payload` bytes.
std::vector<std::uint8_t> build_frame(const Sa& sa, std::uint32_t seq, std::uint64_t iv, std::size_t payload,
                                      std::uint64_t seed);

// Decrypts and authenticates frames in place with one EVP context per thread (keyed once; the
// nonce is set per packet), as the kernel's ESP input runs on a preallocated transform. The
// library wrapper (crypto/aead.h) allocates a context and an output vector per call, which no
// datapath does; the EVP calls are the same.
class InPlaceOpener {
public:
    explicit InPlaceOpener(const Sa& sa);
    ~InPlaceOpener();
    InPlaceOpener(const InPlaceOpener&) = delete;
    InPlaceOpener& operator=(const InPlaceOpener&) = delete;
    // Parses the ESP header of `frame` (frame.size() = received length), decrypts the payload in
    // place; true when the tag verifies (and the SPI is the SA's).
    bool open(std::span<std::uint8_t> frame);

private:
    const Sa& sa_;
    EVP_CIPHER_CTX* ctx_ = nullptr;
};

// CLFLUSHOPT (else CLFLUSH) of the cache lines of [p, p + bytes), then MFENCE. Returns the number
// of lines flushed: ceil(bytes / line) for a line-aligned p.
std::size_t flush_lines(const void* p, std::size_t bytes, std::size_t line, bool clflushopt);

// A live "user" SIMD register state and the XSAVE area the kernel would save it to.
class UserSimdState {
public:
    explicit UserSimdState(const calibrate::CpuFeatures& cpu);
    ~UserSimdState();
    UserSimdState(const UserSimdState&) = delete;
    UserSimdState& operator=(const UserSimdState&) = delete;
    // User code computing with the vector registers (YMM with AVX, else XMM): the state is live
    // and modified.
    void dirty();
    // kernel_fpu_begin() with live user state: XSAVEOPT (else XSAVE) of the XCR0 components.
    void save();
    // The return to user space: XRSTOR of the saved state.
    void restore();
    std::uint32_t area_size() const { return size_; }
    std::uint64_t saves = 0, restores = 0;

private:
    calibrate::CpuFeatures cpu_;
    unsigned char* area_ = nullptr;
    std::uint32_t size_ = 0;
};

// Scheduling helpers; false when the kernel refuses.
bool set_fifo(int priority);
bool set_normal();
// Whether this process may use SCHED_FIFO (tried on a short-lived thread).
bool fifo_permitted();

// ---- packet receive ------------------------------------------------------------------------------

enum class Flush : std::uint8_t { NONE, FULL_BUFFER, RECEIVED_LENGTH };
std::string to_string(Flush f);

struct RxConfig {
    crypto::AeadAlg alg = crypto::AeadAlg::AES_128_GCM;
    std::size_t payload = 1420;           // ESP payload bytes per packet
    std::size_t buffer_size = 1536;       // bytes per rx buffer (1.5 KiB or 9 KiB)
    std::size_t ring = 128;               // rx descriptors
    Flush flush = Flush::NONE;
    bool cryptd = false;                  // hand each packet to the cryptd-like worker
    std::size_t cryptd_qlen = 1000;       // its bounded queue (cryptd's max_cpu_qlen)
    bool user_simd_live = false;          // the softirq interrupts a user task with live SIMD state
    int weight = 64;                      // NAPI_POLL_WEIGHT
    int budget = 300;                     // net.core.netdev_budget
    std::size_t pool = 4096;              // sealed frames the device replays (each its own nonce)
    double offered_pps = 0;               // 0: flood (every free descriptor refilled at once)
    std::optional<std::uint64_t> corrupt_packet; // flip one ciphertext byte of this packet (tests)
    std::uint64_t seed = 1;
};

// How long to run: a number of packets (the device stops after producing them), or a warm-up and
// a measurement window.
struct RxRun {
    std::uint64_t packets = 0; // > 0: produce exactly this many, then drain
    double warmup_s = 0.02;    // with packets == 0
    double window_s = 0.1;
    int cpu_rx = 0;
    int cpu_device = 1;
    // > 0: the device, receiver and worker threads run SCHED_FIFO at this priority (the softirq
    // and the NIC are not time-shared with other processes), and the calling thread at a higher
    // one while it times the window; 0: SCHED_OTHER.
    int fifo_priority = 0;
};

struct RxResult {
    // Whole run (warm-up, window and drain):
    std::uint64_t produced = 0;      // packets the device generated
    std::uint64_t decrypted = 0;     // decrypted and authenticated
    std::uint64_t auth_failures = 0; // tag did not verify
    std::uint64_t ring_drops = 0;    // arrived while their descriptor was still the host's (paced device)
    std::uint64_t queue_drops = 0;   // cryptd queue full
    std::uint64_t lines_flushed = 0;
    std::uint64_t rounds = 0;        // softirq rounds
    std::uint64_t polls = 0;         // napi poll calls
    std::uint64_t squeezes = 0;      // rounds that ended with work left (budget exhausted)
    std::uint64_t interrupts = 0;    // wake-ups of the parked receiver by the device
    std::uint64_t worker_wakeups = 0;
    std::uint64_t xsaves = 0, xrstors = 0;
    bool conserved = false;          // produced == decrypted + auth_failures + ring_drops + queue_drops
    // Measurement window (packets == 0 only):
    double window_s = 0;
    std::uint64_t window_packets = 0;
    double pps = 0;
    double payload_mbit_s = 0;
    double cycles_per_packet = 0;       // CPU A (receiver + worker) thread CPU time, in TSC cycles
    double longest_bracket_cycles = 0;  // longest decrypt (a SIMD bracket), sampled every 8th packet
    double longest_bracket_us = 0;
    double median_bracket_cycles = 0;
};

// Runs the receive datapath once. Throws std::runtime_error when threads cannot be set up.
RxResult run_rx(const RxConfig& cfg, const RxRun& run, const calibrate::CpuFeatures& cpu, double tsc_hz);

// ---- hashing load ----------------------------------------------------------------------------------

enum class Bracketing : std::uint8_t { FIXED, YIELD };
std::string to_string(Bracketing b);

struct HashConfig {
    std::vector<std::uint64_t> sizes;   // bytes per buffer (one system call each)
    std::uint32_t passes = 1;           // passes over the list
    std::uint64_t chunk = 4096;         // bytes per bracket (fixed) or between need_resched checks (yield)
    Bracketing policy = Bracketing::YIELD;
    std::int64_t probe_period_ns = 1'000'000;
    int probe_priority = 95;            // cyclictest -p
    bool user_simd_live = true;
};

struct HashRunOpts {
    int cpu = 0;       // hashing thread and probe
    int cpu_timer = 1; // the thread raising need_resched
};

struct HashResult {
    bool fifo = false;              // SCHED_FIFO was used (else the brackets were preemptible)
    std::uint64_t bytes = 0;
    std::uint64_t buffers = 0;
    double elapsed_s = 0;
    double mb_per_s = 0;            // 1e6 bytes per second
    std::uint64_t brackets = 0;
    std::uint64_t yields = 0;       // times the hashing thread gave the CPU to the probe
    std::uint64_t xsaves = 0, xrstors = 0;
    double longest_bracket_cycles = 0;
    double longest_bracket_us = 0;
    std::vector<double> probe_latency_us; // one per probe period
    // Where the probe's latency goes: how late the timer thread raised need_resched after each
    // boundary, how late the hashing thread acted on it, and how long the hashing thread, having given the CPU up, waited for the probe to
    // run (the kernel's wake-up of the probe: timer interrupt delivery, try_to_wake_up, switch).
    double flag_lag_p50_us = 0;
    double resched_seen_p50_us = 0; // from the boundary to the hashing thread acting on need_resched
    double yield_wait_p50_us = 0, yield_wait_p99_us = 0;
    double probe_p50_us = 0, probe_p99_us = 0, probe_max_us = 0;
    std::string digest_check;       // empty when the streamed digests match one-shot digests
};

HashResult run_hash(const HashConfig& cfg, const HashRunOpts& opts, const calibrate::CpuFeatures& cpu, double tsc_hz);

// The p-th percentile by rank, as kdsim's workloads take it (rank ceil(p/100 * n), at least 1).
double percentile(std::vector<double> v, double p);

} // namespace kdsim::validate
