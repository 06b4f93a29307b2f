// The two tunnels of E1, as their kernel drivers run them:
//
// WireGuard (drivers/net/wireguard: send.c, receive.c, queueing.h). Transmit: wg_xmit ->
// wg_packet_send_staged_packets in the sender's context puts each packet on the device-wide
// encrypt ring and the peer's ordered tx queue, then queue_work_on() a CPU chosen round-robin;
// the per-CPU encrypt worker (kworker, task context) drains the ring with ptr_ring_consume_bh,
// encrypts with lib chacha20poly1305 and queues the peer's transmit work on the peer's serial
// CPU, which sends the in-order prefix of encrypted packets (udp_tunnel_xmit_skb).
// Receive: the UDP encap handler in NET_RX (wg_packet_receive -> wg_packet_consume_data) puts
// the packet on the decrypt ring and the peer's rx queue and queues the decrypt worker of a
// round-robin CPU; the worker decrypts and napi_schedule()s the peer's NAPI on its own CPU;
// wg_packet_rx_poll (NET_RX) delivers the in-order prefix of decrypted packets (replay
// counter, GRO). Rings hold MAX_QUEUED_PACKETS (1024); a full ring drops.
//
// IPsec ESP (net/ipv4/esp4.c, crypto/simd.c, crypto/cryptd.c). esp_output in the sender's
// context and esp_input in NET_RX call crypto_aead_encrypt/decrypt. The AEAD driver may be
// wrapped by crypto/simd.c: then the request goes to cryptd when !crypto_simd_usable(), or
// when in_atomic() and cryptd already holds requests (ordering); cryptd queues it on this
// CPU's queue (cryptd_max_cpu_qlen 1000) and its work item, run by this CPU's kworker,
// dequeues ONE request per run (re-queueing itself while more wait), decrypts in task context
// and calls the completion (xfrm_input_resume / xfrm_output_resume) with BH disabled.
//
// Transmit, both tunnels (Linux 6.1 device.c wg_xmit, send.c encrypt_packet, xfrm_output.c,
// skbuff.c skb_segment): a GSO skb is segmented on the calling CPU with skb_gso_segment(skb, 0), so
// skb_segment copies each segment into a new linear skb and checksums it as it copies
// (skb_copy_and_csum_bits: [tunnel].csum_partial per byte), CHECKSUM_NONE. Any other locally
// built packet is CHECKSUM_PARTIAL and gets skb_checksum_help before encryption (WireGuard's
// encrypt worker; xfrm_output for ESP). TCP over an xfrm route sends no GSO skbs (sk_setup_caps).
//
// With a memory hierarchy (Stack::memory, src/mem) the packets touch lines. WireGuard: a
// segment's copy goes into a head from the machine's slab (net/skb_slab.h), and the encrypt
// worker's skb_cow_data leaves it there; only a one-segment TCP skb (a clone, its payload in page
// frags) is pulled into such a head after its checksum. The AEAD reads and writes the padded
// plaintext in place and writes the tag; the outer frame is that buffer (its WireGuard, UDP, IP
// and Ethernet headers written into the headroom), which a veth hands to the peer as it is; the
// receiver reads the outer headers, decrypts in place (a received skb is linear: no copy) and
// delivers the inner packet from the same buffer. ESP: a TCP segment's checksum reads its page
// frags, and esp_output encrypts them out of place into x->xfrag's page (a slab head here: the
// trailer behind the plaintext, the ESP header, IV and outer IP header in front, the ICV behind;
// in cryptd's worker when the request goes there); a linear packet is encrypted in place.
// esp_input reads the outer and ESP headers and decrypts in place, and leaves the skb
// CHECKSUM_NONE: the inner packet's checksum is verified in software on the receiving CPU
// ([tunnel].csum_partial per byte; WireGuard marks it CHECKSUM_UNNECESSARY). The cipher figures stay warm
// compute; the hierarchy adds the stalls.
//
// Workqueues: WireGuard's crypt and tx work and cryptd's are WQ_CPU_INTENSIVE or their own
// workqueues, so the kernel runs them in separate kworkers that the scheduler time-slices; the
// model gives each work item kind its own kworker per CPU (kernel::WorkerPool).
//
// Functional mode: the sender really seals each packet's real inner IP packet (OpenSSL EVP
// through crypto/aead.h; the bytes: net/tunnel_channel.h) and keeps the ciphertext in the
// channel's store under the packet's counter; the receiver opens it. A pass whose SIMD registers were clobbered, or a frame read stale from a DMA
// buffer, corrupts the bytes first, so authentication fails and the packet is dropped.
#pragma once

#include "arch/simd.h"
#include "crypto/aead.h"
#include "crypto/aead_path.h"
#include "crypto/cipher_costs.h"
#include "crypto/cryptd.h"
#include "engine/task.h"
#include "kernel/workqueue.h"
#include "net/config.h"
#include "net/napi.h"
#include "net/net_costs.h"
#include "net/stack.h"
#include "net/tunnel_channel.h"

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kdsim::net {

// The AEAD driver a tunnel of this kind ends up with on a kernel with this SIMD policy:
// WireGuard always uses lib chacha20poly1305; ESP as crypto::select_esp_driver says.
crypto::AeadDriverChoice tunnel_aead_driver(TunnelKind kind, arch::SimdPolicy policy, crypto::AeadAlg alg,
                                            const crypto::CipherCostTable& t);

// One CPU of the machine as a tunnel sees it.
struct TunnelCpu {
    kernel::Cpu* cpu = nullptr;
    arch::SimdUnit* simd = nullptr;
    Softnet* softnet = nullptr;
};

struct TunnelEnv {
    Stack* stack = nullptr;
    std::vector<TunnelCpu> cpus;
    const crypto::CipherCostTable* cipher = nullptr;
    TunnelCosts costs;
    // Without a memory hierarchy: a kernel copy from a cached source, cycles per byte (the
    // profile's [tcp].copy_from_user), for skb_segment's copies.
    double copy_per_byte = 0;
    crypto::AeadDriver driver = crypto::AeadDriver::LIB_CHACHAPOLY;
    bool driver_async = false; // wrapped by crypto/simd.c: may go through cryptd
    // The driver is the inner ("__") half of a crypto/simd.c pair, SIMD-only: it never tests
    // crypto_simd_usable() itself (the wrapper does, when there is one).
    bool driver_internal = false;
    TunnelChannel* channel = nullptr;
    int side = 0;              // which end of the channel this machine is
    // WireGuard: the peer's internal id, whose rest modulo the CPUs is its serial_work_cpu (the
    // tx worker's CPU, wg_cpumask_choose_online). The kernel numbers peers from one global
    // counter, so two tunnels on one machine (two namespaces) get consecutive ids.
    std::size_t peer_id = 0;
};

struct TunnelStats {
    std::uint64_t tx_packets = 0;       // inner packets handed to the tunnel
    std::uint64_t encrypted = 0;
    std::uint64_t tx_sent = 0;          // outer packets handed to the device
    std::uint64_t rx_packets = 0;       // outer packets received
    std::uint64_t decrypted = 0;
    std::uint64_t delivered = 0;        // inner packets delivered to the stack
    std::uint64_t auth_failures = 0;    // dropped: authentication failed
    std::uint64_t ring_drops = 0;       // dropped: a crypt ring or the cryptd queue was full
    std::uint64_t sync_crypts = 0;      // AEAD ran in the calling context
    std::uint64_t async_crypts = 0;     // AEAD went through cryptd
    std::uint64_t reordered_waits = 0;  // WireGuard: an rx poll stopped at a packet still being decrypted
    crypto::AeadPathStats aead;
};

class TunnelBase : public Tunnel {
public:
    explicit TunnelBase(TunnelEnv env) : env_(std::move(env)) {}
    const TunnelStats& stats() const { return stats_; }
    virtual TunnelKind kind() const = 0;
    // Registers the tunnel's counters under `s` (<machine>/tunnel/wg0 or .../esp0).
    virtual void register_stats(const stats::Scope& s) const {
        const TunnelStats& t = stats_;
        s.counter("tx_packets", t.tx_packets, "count", "inner packets handed to the tunnel")
            .counter("encrypted", t.encrypted, "count", "packets encrypted")
            .counter("tx_sent", t.tx_sent, "count", "outer packets handed to the device")
            .counter("rx_packets", t.rx_packets, "count", "outer packets received")
            .counter("decrypted", t.decrypted, "count", "packets decrypted")
            .counter("delivered", t.delivered, "count", "inner packets delivered to the stack")
            .counter("auth_failures", t.auth_failures, "count", "packets dropped: authentication failed")
            .counter("ring_drops", t.ring_drops, "count", "packets dropped: a crypt ring or the cryptd queue was full")
            .counter("sync_crypts", t.sync_crypts, "count", "AEAD requests run in the calling context")
            .counter("async_crypts", t.async_crypts, "count", "AEAD requests that went through cryptd")
            .counter("reordered_waits", t.reordered_waits, "count", "WireGuard: rx polls stopped at a packet still being decrypted");
        s.sub("aead")
            .counter("calls", t.aead.calls, "count", "AEAD operations")
            .counter("bytes", t.aead.bytes, "bytes", "bytes they processed")
            .counter("simd_passes", t.aead.simd_steps, "count", "primitive passes that ran on the SIMD unit")
            .counter("scalar_passes", t.aead.scalar_steps, "count", "primitive passes that ran scalar code")
            .counter("simd_fallbacks", t.aead.fallbacks, "count", "passes that wanted SIMD but crypto_simd_usable() was false")
            .counter("simd_unusable", t.aead.unusable_simd, "count",
                     "SIMD passes of an internal driver called where may_use_simd() was false (a kernel bug)");
    }
    // The MTU of the tunnel's inner route (an inner TCP segment's IP length at most).
    virtual std::uint32_t inner_mtu() const = 0;

protected:
    TunnelCpu& on(kernel::Cpu& cpu) { return env_.cpus[static_cast<std::size_t>(cpu.id())]; }
    // The outer frame carrying `inner` (its kind and length kept for the receiver).
    static Packet encapsulate(const Packet& inner, FrameKind kind, std::uint64_t counter, std::uint32_t outer_len) {
        Packet outer = inner;
        outer.kind = kind;
        outer.inner = inner.kind;
        outer.inner_len = inner.len;
        outer.counter = counter;
        outer.len = outer_len;
        return outer;
    }
    // skb_gso_segment(skb, 0) of the GSO skb `skb` (wg_xmit, xfrm_output_gso) on the calling CPU:
    // skb_segment's work per segment, and each segment's headers and payload copied into a new
    // linear skb (a head from the machine's slab) and its payload checksummed
    // (skb_copy_and_csum_bits): [memory].copy and [tunnel].csum_partial per byte, with the
    // hierarchy's stalls. The segments (csum_none, data at their new heads) are appended to staged_.
    engine::Task<> skb_gso_segment(kernel::Cpu& cpu, const Packet& skb);
    // skb_checksum_help of the outgoing inner packet that `p` carries (encapsulated or not: its
    // inner_len or len, its data at the inner frame) when it is CHECKSUM_PARTIAL: the checksum of
    // its transport header and payload, [tunnel].csum_partial per byte, its lines read as the
    // checksum consumes them. Nothing for a segment skb_segment checksummed (csum_none).
    engine::Task<> skb_checksum_help(kernel::Cpu& cpu, const Packet& p, std::uint32_t ip_len);
    // skb_cow_data of an outgoing packet `p` (WireGuard's encrypt_packet) with a hierarchy: where
    // its inner IP header now lies, the AEAD working there in place (0: no hierarchy, or a packet
    // without an address); p.data set to the outer frame, `outer` header bytes (beyond
    // Ethernet's) in front of the inner IP header.
    engine::Task<mem::Addr> skb_cow_data(kernel::Cpu& cpu, Packet& p, std::uint32_t outer);
    // The AEAD in the running context: whether its result is garbage (clobbered) and its cycles.
    // `from_cryptd`: cryptd's worker calls the wrapped pair's inner driver.
    engine::Task<crypto::AeadOutcome> crypt(kernel::Cpu& cpu, std::uint64_t len, std::uint64_t assoc,
                                            bool from_cryptd = false);
    // Opens packet `counter` from the channel at `where`; counts and reports (typed findings) an
    // authentication failure, or an authenticated packet that is not what was sent.
    bool open_packet(kernel::Cpu& cpu, const Packet& outer, bool clobbered, const char* where) {
        const std::uint64_t lost = env_.channel->payload_mismatches();
        const bool corrupt = outer.corrupt;
        const bool ok = env_.channel->open(env_.side, outer, clobbered || corrupt);
        const std::string packet = std::string(to_string(kind())) + " packet " + std::to_string(outer.counter);
        if (!ok) {
            ++stats_.auth_failures;
            cpu.report_finding(stats::FindingKind::AUTH_FAILURE,
                               clobbered ? "clobbered SIMD registers in the AEAD" : corrupt ? "corrupted frame" : "",
                               packet, where);
        } else if (env_.channel->payload_mismatches() != lost) {
            cpu.report_finding(stats::FindingKind::LOST_DATA, "", packet, where);
        }
        return ok;
    }
    TunnelEnv env_;
    TunnelStats stats_;
    // Packets made ready for the crypto path and not yet sent to it: the segments of a GSO skb
    // (wg_xmit's list spliced into peer->staged_packet_queue; xfrm_output_gso's segs).
    std::deque<Packet> staged_;
};

class WireGuard final : public TunnelBase {
public:
    static constexpr std::size_t MAX_QUEUED_PACKETS = 1024;
    static constexpr std::uint32_t MTU = 1420; // wg-quick's default
    explicit WireGuard(TunnelEnv env);
    TunnelKind kind() const override { return TunnelKind::WIREGUARD; }
    std::uint32_t inner_mtu() const override { return MTU; }
    engine::Task<> xmit(kernel::Cpu& cpu, Packet inner) override;
    engine::Task<> rcv(kernel::Cpu& cpu, const Packet& outer) override;
    bool gso_ok() const override { return true; }

private:
    enum class State : std::uint8_t { UNCRYPTED, CRYPTED, DEAD };
    struct Item {
        Packet p;
        State state = State::UNCRYPTED;
    };
    // a crypt queue: the device-wide ring and its per-CPU work items
    struct CryptQueue {
        std::deque<std::size_t> ring; // indices into the peer queue's items, by absolute number
        std::vector<kernel::WorkStruct> work;
        std::vector<std::unique_ptr<kernel::WorkerPool>>* pools = nullptr;
        std::size_t last_cpu = 0;
        WireGuard* wg = nullptr;
    };
    struct PeerQueue {
        std::deque<Item> items;
        std::uint64_t base = 0; // absolute number of items.front()
        Item& at(std::uint64_t n) { return items[static_cast<std::size_t>(n - base)]; }
    };
    struct WorkCtx {
        WireGuard* wg;
        std::size_t cpu;
    };
    engine::Task<> queue_to_crypt(kernel::Cpu& cpu, CryptQueue& q, PeerQueue& peer, const Packet& p);
    static engine::Task<std::optional<std::uint64_t>> ptr_ring_consume_bh(kernel::Cpu& cpu, CryptQueue& q);
    static engine::Task<> encrypt_worker(kernel::Cpu& cpu, void* ctx);
    static engine::Task<> decrypt_worker(kernel::Cpu& cpu, void* ctx);
    static engine::Task<> tx_worker(kernel::Cpu& cpu, void* ctx);
    static engine::Task<int> rx_poll(kernel::Cpu& cpu, void* ctx, int budget);

    std::vector<std::unique_ptr<kernel::WorkerPool>> enc_pool_, dec_pool_; // per CPU
    std::unique_ptr<kernel::WorkerPool> tx_pool_;                           // on tx_cpu_
    CryptQueue encrypt_, decrypt_;
    PeerQueue tx_, rx_;
    std::vector<WorkCtx> enc_ctx_, dec_ctx_;
    kernel::WorkStruct tx_work_;
    std::size_t tx_cpu_; // peer->serial_work_cpu
    NapiStruct napi_;
    std::uint64_t next_counter_ = 0;
};

class Esp final : public TunnelBase {
public:
    explicit Esp(TunnelEnv env);
    TunnelKind kind() const override { return TunnelKind::ESP; }
    std::uint32_t inner_mtu() const override;
    engine::Task<> xmit(kernel::Cpu& cpu, Packet inner) override;
    engine::Task<> rcv(kernel::Cpu& cpu, const Packet& outer) override;
    bool gso_ok() const override { return false; }
    const crypto::Cryptd& cryptd() const { return *cryptd_; }
    // The tunnel's counters, and its cryptd's under `s`/cryptd.
    void register_stats(const stats::Scope& s) const override;

private:
    // A request in cryptd: its packet, in a slot the completion frees.
    struct Request {
        Packet p;
        bool clobbered = false;
        bool input = false; // esp_input's decrypt (else esp_output's encrypt)
        mem::Addr src = 0;  // esp_output: where the plaintext's inner IP header lies
    };
    // esp_output of one (non-GSO) inner packet: xfrm_output's skb_checksum_help, then esp_output.
    engine::Task<> esp_output(kernel::Cpu& cpu, Packet inner);
    // The AEAD's lines with a hierarchy: esp_output's encrypt of the padded plaintext read from
    // `src` (the inner IP header's address) and written with its ICV into the outer frame
    // (in place when `src` is there); esp_input's in-place decrypt of the ciphertext and ICV (0
    // without an address). `work`: the AEAD's cycles, which consume what it reads.
    Cycles encrypt_lines(kernel::Cpu& cpu, const Packet& outer, Cycles work, mem::Addr src);
    Cycles decrypt_lines(kernel::Cpu& cpu, const Packet& outer, Cycles work);
    // crypto/simd.c's choice for a request of `tfm` in the running context.
    bool goes_async(kernel::Cpu& cpu, const crypto::CryptdTfm& tfm) const;
    engine::Task<> crypt_async(kernel::Cpu& cpu, crypto::CryptdTfm& tfm, const Packet& p, mem::Addr src = 0);
    static engine::Task<int> cryptd_crypt(kernel::Cpu& cpu, void* ctx, std::uint64_t slot);
    static engine::Task<> output_done(kernel::Cpu& cpu, void* ctx, std::uint64_t slot, int err);
    static engine::Task<> input_done(kernel::Cpu& cpu, void* ctx, std::uint64_t slot, int err);
    engine::Task<> output_finish(kernel::Cpu& cpu, const Packet& outer, bool clobbered);
    engine::Task<> input_finish(kernel::Cpu& cpu, const Packet& outer, bool clobbered);
    // The software verification of the decrypted inner packet's transport checksum (esp_input
    // left it CHECKSUM_NONE): [tunnel].csum_partial per byte of its transport header and payload,
    // its lines read with a hierarchy and an address.
    engine::Task<> rx_checksum(kernel::Cpu& cpu, const Packet& inner);

    std::unique_ptr<crypto::Cryptd> cryptd_;
    crypto::CryptdTfm output_tfm_, input_tfm_; // one per SA, as each xfrm_state has its aead
    std::vector<Request> requests_;
    std::vector<std::uint64_t> free_requests_;
    std::uint64_t next_seq_ = 0;
};

} // namespace kdsim::net
