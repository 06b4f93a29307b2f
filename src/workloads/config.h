// Workload parameters as typed data (filled by the scenario layer from [[machine.workload]]).
#pragma once

#include "crypto/aead.h"
#include "crypto/digest.h"
#include "crypto/hash_costs.h"
#include "crypto/skcipher.h"
#include "engine/time.h"
#include "net/tcp_cc.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kdsim::workloads {

using engine::Tick;

// A user process that loads kernel modules: per module, user-space work, then a syscall whose
// kernel side hashes the module (module_sig_check; optionally Debian's blacklist hash of the
// whole file), then return to user space.
struct ModuleLoadWorkload {
    std::string name = "modprobe";
    int cpu = 0;
    crypto::HashAlg alg = crypto::HashAlg::SHA256;
    std::optional<crypto::HashImpl> impl; // default: the best the CPU has
    std::vector<std::uint64_t> sizes;     // bytes per module
    std::vector<crypto::HashAlg> algs;    // per module its signature hash (a module list); empty: alg for all
    std::uint32_t workers = 1;            // loaders in parallel (systemd-udevd's children), each takes the next module
    std::uint64_t signature_trailer = 0;  // bytes not covered by the signature hash
    bool blacklist_hash = false;          // also hash the whole file
    Tick user_time = 0;                   // user-space work before each load
    std::uint32_t repeat = 1;             // passes over the list
};

// A kernel thread hashing a list of buffers (crypto self-tests, cryptomgr-like).
struct HashListWorkload {
    std::string name = "cryptomgr";
    int cpu = 0;
    crypto::HashAlg alg = crypto::HashAlg::SHA256;
    std::optional<crypto::HashImpl> impl;
    std::vector<std::uint64_t> sizes;
    std::uint32_t repeat = 1;
    bool cond_resched_between = true;
};

// The crypto self-tests of one hash algorithm (crypto/testmgr.c alg_test_hash) for every driver
// the CPU registers for it, as the cryptomgr_test thread runs them, with or without
// CONFIG_CRYPTO_MANAGER_EXTRA_TESTS.
struct TestmgrWorkload {
    std::string name = "cryptomgr";
    int cpu = 0;
    crypto::HashAlg alg = crypto::HashAlg::SHA256;
    std::optional<crypto::HashImpl> impl; // test only this driver; default: every registered one
    std::vector<std::uint64_t> sizes;     // the plaintext lengths of the algorithm's test vectors
    bool extra_tests = false;             // CONFIG_CRYPTO_MANAGER_EXTRA_TESTS
    std::uint32_t fuzz_iterations = 100;  // testmgr's module parameter
};

// A user task computing with SIMD registers all the time (live user state to save).
struct SimdUserWorkload {
    std::string name = "simd_user";
    int cpu = 0;
    Tick chunk = 20 * engine::PS_PER_US; // SIMD work between register checks
};

// cyclictest-like probe: a SCHED_FIFO task sleeping to absolute period boundaries.
struct CyclictestWorkload {
    std::string name = "cyclictest";
    int cpu = 0;
    int priority = 95;
    Tick period = engine::PS_PER_MS;
    std::uint64_t loops = 0; // 0: until the run ends
};

// A device interrupt raising NET_RX; the softirq hashes a packet-sized buffer (an IPsec-like
// HMAC in softirq context), using SIMD when may_use_simd() allows.
struct SoftirqLoadWorkload {
    std::string name = "nic_rx";
    int cpu = 0;
    Tick period = 50 * engine::PS_PER_US;
    Tick jitter = 0; // uniform random extra delay per interrupt
    crypto::HashAlg alg = crypto::HashAlg::SHA256;
    std::optional<crypto::HashImpl> impl;
    std::uint64_t bytes = 1500;
    std::uint64_t count = 0; // interrupts; 0: until the run ends
    bool hmac = false;       // HMAC: an inner hash over key block + packet, an outer over key block + digest
    bool cryptd = false;     // NET_RX hands each packet to a cryptd-like worker thread instead of hashing it
};

// tcrypt's hash speed test (crypto/tcrypt.c test_hash_speed, sec mode): `insmod tcrypt mode=3xx
// sec=N` hashes one block size back to back for N seconds in the insmod system call and
// reports operations and bytes per second.
// With `skcipher` set, the skcipher speed test instead (test_acipher_speed, `insmod tcrypt mode=500
// sec=0` style): for each request size, `count` encryptions and then `count` decryptions, each
// timed from crypto_skcipher_encrypt/decrypt until its completion (crypto_wait_req), reported as
// tcrypt's "1 operation in N cycles (B bytes)" and as cycles per byte.
enum class SkcipherDriver : std::uint8_t { DIRECT, SIMD, CRYPTD };
inline constexpr std::array<std::string_view, 3> SKCIPHER_DRIVER_NAMES = {"direct", "simd", "cryptd"};
enum class RequestContext : std::uint8_t { TASK, SOFTIRQ };
struct TcryptSkcipher {
    crypto::SkcipherAlg alg = crypto::SkcipherAlg::CBC_AES;
    unsigned key_bits = 128;
    std::vector<std::uint64_t> sizes;  // request bytes; the data starts key_bits / 8 bytes into a page, as tcrypt's
    std::uint32_t count = 8;           // timed requests per size and direction (tcrypt's 8)
    // How the driver is reached: called directly (arm64's aes-ce skciphers are registered so;
    // on x86 the inner "__" driver), through crypto/simd.c (x86's registration: cryptd when
    // !crypto_simd_usable()), or every request through cryptd. Absent: as the arch registers it.
    std::optional<SkcipherDriver> driver;
    RequestContext context = RequestContext::TASK; // softirq: each request is issued from TASKLET_SOFTIRQ
};

struct TcryptWorkload {
    std::string name = "tcrypt";
    int cpu = 0;
    crypto::HashAlg alg = crypto::HashAlg::SHA256;
    std::optional<crypto::HashImpl> impl;
    std::uint64_t block_size = 2048;
    Tick duration = engine::PS_PER_S; // tcrypt's sec=
    std::optional<TcryptSkcipher> skcipher;
};

// arping-like link-layer ping-pong to a peer machine over a link (E4).
struct ArpPingPongWorkload {
    std::string name = "arping";
    int cpu = 0;
    std::string peer;        // the machine that answers
    std::uint64_t count = 10000;
    Tick interval = 0;       // pause between round trips (arping -w style); 0: back to back
};

// net.core.rmem_default: a socket's sk_rcvbuf unless SO_RCVBUF sets it (212,992 bytes, the
// kernel's SK_RMEM_MAX on 64-bit; Documentation/admin-guide/sysctl/net.rst).
inline constexpr std::uint64_t RMEM_DEFAULT = 208 * 1024;

// iperf3-like TCP bulk stream: the peer machine sends, this machine receives (E5).
struct Iperf3Workload {
    std::string name = "iperf3";
    int cpu = 0;                  // the receiving iperf3 server's CPU
    std::string peer;             // the sending machine
    int sender_cpu = 0;
    // The CPUs each server (affinity) and each client (sender_affinity) task may run on, `cpu` /
    // `sender_cpu` among them (where it starts): the scheduler places it (cpus_allowed). Empty:
    // pinned to `cpu` / `sender_cpu`, as iperf3 run with -A / taskset would be.
    std::vector<int> affinity;
    std::vector<int> sender_affinity;
    // iperf3 -w: the sender's cap on bytes in flight (its send buffer twice that) and the
    // receiver's buffer (advertised whole when empty); 0: not set, the kernel autotunes both
    // within the machines' tcp_wmem / tcp_rmem
    std::uint64_t window = 0;
    std::uint64_t rcvbuf = 0;
    Tick start = 5 * engine::PS_PER_MS; // connection set-up; the stream starts here
    int parallel = 1;             // iperf3 -P: streams, each its own connection and task pair
    bool udp = false;             // iperf3 -u
    std::uint64_t bitrate = 1'000'000; // -b, bits/s per stream (UDP; iperf3's default 1 Mbit/s)
    std::uint32_t length = 0;     // -l, UDP datagram payload (0: the route's MTU - 28)
    // -C: the sender's congestion control (absent: the sending machine's
    // net.ipv4.tcp_congestion_control)
    std::optional<net::CongestionAlgorithm> congestion;
    // -i: a report line per interval from `start` (iperf3's default 1 s); 0: none (-i 0)
    Tick interval = engine::PS_PER_S;
};

// Many low-rate UDP flows from the peer machine into this one (workloads/udp_flows.h): `flows`
// client sockets each send a `length`-byte datagram every `interval`, from `start` plus a
// per-flow random phase in [0, interval); this machine has one socket per flow and one epoll
// reader task on `cpu`.
struct UdpFlowsWorkload {
    static constexpr std::uint32_t MAX_FLOWS = 10'000'000;
    std::string name = "udp_flows";
    int cpu = 0;                        // the reader task's CPU
    std::string peer;                   // the sending machine
    int sender_cpu = 0;
    std::uint32_t flows = 1000;         // 1 .. MAX_FLOWS
    Tick interval = engine::PS_PER_S;   // per flow, > 0
    std::uint64_t count = 0;            // datagrams per flow; 0: until the run ends
    std::uint32_t length = 64;          // datagram payload bytes
    std::uint64_t rcvbuf = RMEM_DEFAULT; // each socket's sk_rcvbuf
    Tick start = engine::PS_PER_MS;     // the first round starts here
    Tick timer_slack = 50 * engine::PS_PER_US; // the sender task's timer_slack_ns (PR_SET_TIMERSLACK)
};

// The kvm-unit-tests micro-benchmark (arm/micro-bench.c) in a KVM guest: one test run
// `iterations` times by vCPU `cpu`, timed as the test times itself (the counter read before and
// after the batch, averaged; timer_10ms less its 10 ms per iteration). ipi sends to vCPU cpu+1,
// which spins with interrupts enabled, as the test's secondary does (target SPIN), or idles in WFI
// as an idle Linux vCPU does (target WFI: not the published test, a variant of it).
enum class MicroBenchTest : std::uint8_t { HVC, MMIO_READ_USER, MMIO_READ_VGIC, EOI, IPI, TIMER_10MS };
enum class MicroBenchTarget : std::uint8_t { SPIN, WFI };
struct KvmMicroBenchWorkload {
    std::string name = "micro-bench";
    int cpu = 0;
    MicroBenchTest test = MicroBenchTest::HVC;
    MicroBenchTarget target = MicroBenchTarget::SPIN; // ipi: what vCPU cpu+1 does meanwhile
    std::uint64_t iterations = 65536; // NTIMES of micro-bench.c (timer_10ms: 256)
    Tick start = engine::PS_PER_MS;   // the batch starts here
};

// A packet generator on the peer machine sending minimum-size UDP frames into this one as fast as
// it can (the kernel's pktgen, or a TRex/DPDK box standing beside the machine under test):
// `threads` kthreads on the peer's CPUs 0 .. threads-1 hand frames straight to the peer's driver
// (ndo_start_xmit: no socket, no qdisc) from `start` on. This machine receives them on CPU 0
// (its NIC's NAPI); what it does with them is up to its stack ([machine.netfilter]).
struct PktgenWorkload {
    std::string name = "pktgen";
    int cpu = 0;                       // unused: the receive work runs on CPU 0, where the NIC's NAPI is
    std::string peer;                  // the generating machine
    int threads = 1;                   // generator kthreads, one per peer CPU from 0
    std::uint32_t frame = 60;          // frame bytes without FCS (pktgen pkt_size 60: 64 on the wire)
    Tick start = engine::PS_PER_MS;    // the first frame is sent here
};

// A flood of ESP-like AEAD packets received on one CPU, as the user-space datapath of `kdsim
// validate` runs it (src/validate/datapath.cpp): a device on another core keeps the rx ring full;
// the rx task polls it in NET_RX-like rounds (polls of `weight` packets while `budget` lasts),
// optionally flushes each buffer's lines (a non-coherent dma_sync_single_for_cpu stand-in), and
// decrypts each payload with the fused AEAD primitive of the profile ([cipher.<prim>.<impl>]),
// or hands it to a cryptd-like worker task on the same CPU.
enum class RxFlush : std::uint8_t { NONE, FULL_BUFFER, RECEIVED_LENGTH };

struct RxFloodWorkload {
    std::string name = "rx";
    int cpu = 0;
    crypto::AeadAlg alg = crypto::AeadAlg::AES_128_GCM;
    std::uint64_t payload = 1420;       // ESP payload bytes per packet
    std::uint64_t buffer = 1536;        // bytes per rx buffer
    RxFlush flush = RxFlush::NONE;
    bool cryptd = false;                // hand each packet to the worker task
    std::uint64_t cryptd_qlen = 1000;   // its bounded queue (a full queue drops the packet)
    int weight = 64;                    // packets per poll
    int budget = 300;                   // packets per round (net.core.netdev_budget)
    int priority = 0;                   // 0: SCHED_NORMAL; 1..99: SCHED_FIFO at this priority
};

// Bytes on the wire per packet of rx_flood (and of the real datapath): Ethernet + IPv4 (34),
// SPI + sequence number + explicit IV (16), the ciphertext, the 16-byte ICV.
inline constexpr std::uint64_t rx_frame_len(std::uint64_t payload) { return 34 + 16 + payload + 16; }

} // namespace kdsim::workloads
