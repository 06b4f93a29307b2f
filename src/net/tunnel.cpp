#include "net/tunnel.h"

#include "kernel/irqflags.h"
#include "kernel/preempt.h"
#include "kernel/sched.h"
#include "kernel/softirq.h"
#include "net/tcp.h"

#include <algorithm>
#include <stdexcept>

namespace kdsim::net {

using kernel::Cat;

std::string_view to_string(TunnelKind k) { return k == TunnelKind::WIREGUARD ? "wireguard" : "esp"; }

crypto::AeadDriverChoice tunnel_aead_driver(TunnelKind kind, arch::SimdPolicy policy, crypto::AeadAlg alg,
                                            const crypto::CipherCostTable& t) {
    if (kind == TunnelKind::WIREGUARD) return {crypto::AeadDriver::LIB_CHACHAPOLY, false};
    return crypto::select_esp_driver(policy, alg, t);
}

// ---- common ----------------------------------------------------------------------------------

engine::Task<crypto::AeadOutcome> TunnelBase::crypt(kernel::Cpu& cpu, std::uint64_t len, std::uint64_t assoc,
                                                     bool from_cryptd) {
    co_await cpu.exec(env_.costs.aead_request, Cat::CRYPTO);
    co_return co_await crypto::aead_crypt(*on(cpu).simd, *env_.cipher, env_.driver, env_.channel->alg(), len, assoc,
                                          stats_.aead, env_.driver_internal || from_cryptd);
}

namespace {
std::uint32_t pad_to(std::uint32_t n, std::uint32_t a) { return (n + a - 1) / a * a; }
constexpr std::uint32_t IP_UDP = 28;
constexpr std::uint32_t IP_HEADER = 20;
constexpr std::uint32_t WG_HEADER = 16; // type, receiver index, counter
constexpr std::uint32_t TAG = 16;
// The headroom before the IP header of a TCP skb's head: MAX_TCP_HEADER (320: L1_CACHE_ALIGN(128 +
// MAX_HEADER)) less the 52 bytes of IP and TCP headers; pskb_expand_head(skb, 0, ...) keeps it.
constexpr std::uint32_t TCP_HEADROOM = 320 - 52;
} // namespace

// ---- WireGuard -------------------------------------------------------------------------------

WireGuard::WireGuard(TunnelEnv env) : TunnelBase(std::move(env)), tx_cpu_(env_.peer_id % env_.cpus.size()) {
    const std::size_t n = env_.cpus.size();
    encrypt_.wg = decrypt_.wg = this;
    enc_ctx_.reserve(n);
    dec_ctx_.reserve(n);
    encrypt_.work.resize(n);
    decrypt_.work.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        enc_ctx_.push_back({this, i});
        dec_ctx_.push_back({this, i});
        encrypt_.work[i] = kernel::WorkStruct{&WireGuard::encrypt_worker, &enc_ctx_[i], false};
        decrypt_.work[i] = kernel::WorkStruct{&WireGuard::decrypt_worker, &dec_ctx_[i], false};
    }
    tx_work_ = kernel::WorkStruct{&WireGuard::tx_worker, this, false};
    for (std::size_t i = 0; i < n; ++i) {
        kernel::Cpu& c = *env_.cpus[i].cpu;
        enc_pool_.push_back(std::make_unique<kernel::WorkerPool>(c, env_.costs.workqueue, "kworker/" + std::to_string(i) + ":wg-enc"));
        dec_pool_.push_back(std::make_unique<kernel::WorkerPool>(c, env_.costs.workqueue, "kworker/" + std::to_string(i) + ":wg-dec"));
    }
    tx_pool_ = std::make_unique<kernel::WorkerPool>(*env_.cpus[tx_cpu_].cpu, env_.costs.workqueue,
                                                    "kworker/" + std::to_string(tx_cpu_) + ":wg-tx");
    encrypt_.pools = &enc_pool_;
    decrypt_.pools = &dec_pool_;
    napi_.poll = &WireGuard::rx_poll;
    napi_.ctx = this;
    // the round-robin cursors start at the last CPU, so the first pick is CPU 0
    encrypt_.last_cpu = decrypt_.last_cpu = n - 1;
}

// wg_queue_enqueue_per_device_and_peer: the peer's ordered queue, the device ring, a worker.
// Models: wg_queue_enqueue_per_device_and_peer() (drivers/net/wireguard/queueing.h)
engine::Task<> WireGuard::queue_to_crypt(kernel::Cpu& cpu, CryptQueue& q, PeerQueue& peer, const Packet& p) {
    if (q.ring.size() >= MAX_QUEUED_PACKETS) {
        ++stats_.ring_drops; // ptr_ring_produce_bh fails: the packet is freed
        co_return;
    }
    peer.items.push_back(Item{p, State::UNCRYPTED});
    q.ring.push_back(peer.base + peer.items.size() - 1);
    q.last_cpu = (q.last_cpu + 1) % env_.cpus.size(); // wg_cpumask_next_online
    co_await (*q.pools)[q.last_cpu]->queue_work(cpu, q.work[q.last_cpu]);
}

// A GSO skb is segmented here, on the sending CPU (skb_gso_segment(skb, 0): every segment copied
// and checksummed); the packets are staged, and wg_packet_send_staged_packets gives each its nonce
// and puts it on the crypt queue. [tunnel].wg_xmit is charged per packet sent.
// Models: wg_xmit() (drivers/net/wireguard/device.c)
engine::Task<> WireGuard::xmit(kernel::Cpu& cpu, Packet skb) {
    if (skb.gso_segs > 1) co_await skb_gso_segment(cpu, skb);
    else staged_.push_back(skb);
    while (!staged_.empty()) {
        const Packet inner = staged_.front();
        staged_.pop_front();
        ++stats_.tx_packets;
        co_await cpu.exec(env_.costs.wg_xmit, Cat::PROTOCOL);
        const std::uint32_t ip_len = inner.len - ETH_HEADER;
        const Packet outer = encapsulate(inner, FrameKind::WG_DATA, next_counter_++,
                                         ETH_HEADER + IP_UDP + WG_HEADER + pad_to(ip_len, 16) + TAG);
        co_await queue_to_crypt(cpu, encrypt_, tx_, outer);
    }
}

// skb_segment with features 0 (neither NETIF_F_SG nor a checksum feature): every segment is a
// new linear skb (__alloc_skb of headroom + headers + its payload: a head from the slab, with
// the GSO skb's headroom), its headers copied from the GSO skb's head and its payload out of the
// page frags by skb_copy_and_csum_bits, which checksums what it copies: arm64 and arm have no
// combined routine, csum_partial_copy_nocheck is memcpy then csum_partial over the destination
// (include/net/checksum.h); x86's csum_partial_copy_generic does both in one loop, which the
// model charges as the two (the copy loop's cycles are an overcount there). The segment is
// CHECKSUM_NONE. Without a hierarchy the copy costs TunnelEnv::copy_per_byte.
// Models: skb_segment() (net/core/skbuff.c)
engine::Task<> TunnelBase::skb_gso_segment(kernel::Cpu& cpu, const Packet& skb) {
    Stack& st = *env_.stack;
    co_await cpu.exec(*st.nic().costs().gso_segment * skb.gso_segs, Cat::PROTOCOL);
    for (std::uint32_t i = 0; i < skb.gso_segs; ++i) {
        Packet s = gso_segment_of(skb, i);
        s.csum_none = true;
        const std::uint32_t headers = s.len - ETH_HEADER - s.payload; // IP and TCP
        const Cycles csum = per_byte(env_.costs.csum_partial, s.payload);
        if (st.memory() && st.skb_slab() && s.data) {
            const mem::Addr head = st.skb_slab()->alloc() + TCP_HEADROOM;
            co_await cpu.exec(st.kernel_copy(cpu, s.data + ETH_HEADER, head, headers + s.payload), Cat::COPY);
            co_await cpu.exec(csum + st.touch(cpu, head + headers, s.payload, 0, csum), Cat::PROTOCOL);
            s.data = head - ETH_HEADER;
        } else {
            co_await cpu.exec(per_byte(env_.copy_per_byte, s.payload), Cat::COPY);
            co_await cpu.exec(csum, Cat::PROTOCOL);
        }
        staged_.push_back(s);
    }
}

// A locally built TCP or UDP skb is CHECKSUM_PARTIAL (tcp_stream_alloc_skb, __tcp_v4_send_check;
// __ip_append_data on a device with NETIF_F_HW_CSUM): the checksum from the transport header to
// the end, over the head and the page frags. A TCP clone's head is then made private
// (skb_ensure_writable -> pskb_expand_head: a copy of the headroom and headers, left out).
// Models: skb_checksum_help() (net/core/dev.c)
engine::Task<> TunnelBase::skb_checksum_help(kernel::Cpu& cpu, const Packet& p, std::uint32_t ip_len) {
    if (p.csum_none || ip_len <= IP_HEADER) co_return;
    const std::uint32_t l4 = ip_len - IP_HEADER;
    const Cycles csum = per_byte(env_.costs.csum_partial, l4);
    const mem::Addr at = p.data ? p.data + ETH_HEADER + IP_HEADER : 0;
    co_await cpu.exec(csum + (at ? env_.stack->touch(cpu, at, l4, 0, csum) : 0), Cat::PROTOCOL);
}

// encrypt_packet's skb_cow_data with a memory hierarchy: the address of the inner IP header the
// cipher then works on in place (0: no hierarchy, or a packet without an address). A TCP skb
// that was not GSO (one segment's data) is a clone (__tcp_transmit_skb's skb_clone) whose payload
// lies in page frags, so skb_cow_data's (skb_cloned(skb) || nr_frags) test takes
// __pskb_pull_tail(skb, __skb_pagelen(skb)): pskb_expand_head gives the skb a new head
// (kmalloc_reserve of headroom + headers + the payload + 128 bytes + skb_shared_info: ~2.2 KB,
// kmalloc-4k) and copies the headers, skb_copy_bits then copies the payload from the frags
// behind them. Any other packet is linear and not cloned (a segment wg_xmit made, an ACK:
// __tcp_send_ack does not clone, a UDP datagram), and skb_cow_data leaves it where it is. Then
// skb_cow_head finds the headroom for the WireGuard, UDP and IP headers (and the Ethernet header
// the device pushes) in the same buffer: the outer frame starts that much before the inner IP
// header. Read from the Linux 6.1 source (net/core/skbuff.c skb_cow_data, __pskb_pull_tail,
// pskb_expand_head; drivers/net/wireguard/send.c encrypt_packet).
// Models: skb_cow_data() (net/core/skbuff.c)
engine::Task<mem::Addr> TunnelBase::skb_cow_data(kernel::Cpu& cpu, Packet& p, std::uint32_t outer) {
    Stack& st = *env_.stack;
    if (!st.memory() || p.data == 0) co_return 0;
    const mem::Addr ip = p.data + ETH_HEADER;
    if (p.inner != FrameKind::TCP_DATA || p.csum_none || !st.skb_slab()) {
        p.data = ip - outer - ETH_HEADER;
        co_return ip;
    }
    const mem::Addr head = st.skb_slab()->alloc() + TCP_HEADROOM;
    p.data = head - outer - ETH_HEADER;
    co_await cpu.exec(st.kernel_copy(cpu, ip, head, p.inner_len - ETH_HEADER), Cat::COPY);
    co_return head;
}

// ptr_ring_consume_bh on a crypt ring: the next packet's number, or none when it is empty.
// Models: ptr_ring_consume_bh() (include/linux/ptr_ring.h)
engine::Task<std::optional<std::uint64_t>> WireGuard::ptr_ring_consume_bh(kernel::Cpu& cpu, CryptQueue& q) {
    co_await kernel::local_bh_disable(cpu);
    std::optional<std::uint64_t> n;
    if (!q.ring.empty()) {
        n = q.ring.front();
        q.ring.pop_front();
    }
    co_await kernel::local_bh_enable(cpu);
    co_return n;
}

// wg_packet_encrypt_worker: drain the device ring in task context.
// Models: wg_packet_encrypt_worker() (drivers/net/wireguard/send.c)
engine::Task<> WireGuard::encrypt_worker(kernel::Cpu& cpu, void* ctx) {
    WireGuard& wg = *static_cast<WorkCtx*>(ctx)->wg;
    for (;;) {
        const std::optional<std::uint64_t> next = co_await ptr_ring_consume_bh(cpu, wg.encrypt_);
        if (!next) break;
        const std::uint64_t n = *next;
        Item& it = wg.tx_.at(n);
        co_await cpu.exec(wg.env_.costs.wg_encrypt, Cat::PROTOCOL);
        const std::uint32_t plain = pad_to(it.p.inner_len - ETH_HEADER, 16);
        // encrypt_packet: skb_checksum_help for a CHECKSUM_PARTIAL packet, then skb_cow_data
        co_await wg.skb_checksum_help(cpu, wg.tx_.at(n).p, wg.tx_.at(n).p.inner_len - ETH_HEADER);
        const mem::Addr ip = co_await wg.skb_cow_data(cpu, wg.tx_.at(n).p, WG_HEADER + IP_UDP);
        // skb_push of the message_data header (type, receiver index, counter) into the headroom
        if (ip) co_await cpu.exec(wg.env_.stack->touch(cpu, ip - WG_HEADER, 0, WG_HEADER), Cat::PROTOCOL);
        const crypto::AeadOutcome o = co_await wg.crypt(cpu, plain, 0);
        // chacha20poly1305_encrypt_sg_inplace: every line of the padded plaintext read (as the
        // cipher consumes it: its fetch overlaps the cipher's cycles) and written back, then the
        // tag written behind it (the cipher's figures are warm compute)
        if (ip) co_await cpu.exec(wg.env_.stack->touch(cpu, ip, plain, plain + TAG, o.work), Cat::CRYPTO);
        wg.env_.channel->seal(wg.env_.side, wg.tx_.at(n).p, o.clobbered);
        ++wg.stats_.encrypted;
        wg.tx_.at(n).state = State::CRYPTED; // wg_queue_enqueue_per_peer_tx
        co_await wg.tx_pool_->queue_work(cpu, wg.tx_work_);
        co_await kernel::cond_resched(cpu);
    }
}

// wg_packet_tx_worker: send the encrypted in-order prefix of the peer's queue.
// Models: wg_packet_tx_worker() (drivers/net/wireguard/send.c)
engine::Task<> WireGuard::tx_worker(kernel::Cpu& cpu, void* ctx) {
    WireGuard& wg = *static_cast<WireGuard*>(ctx);
    while (!wg.tx_.items.empty() && wg.tx_.items.front().state != State::UNCRYPTED) {
        Packet p = wg.tx_.items.front().p;
        wg.tx_.items.pop_front();
        ++wg.tx_.base;
        // send4 -> udp_tunnel_xmit_skb pushes the UDP and IP headers, neigh_hh_output the Ethernet
        // header: written into the same buffer's headroom, in front of the WireGuard header
        co_await cpu.exec(wg.env_.costs.wg_tx + wg.env_.stack->touch(cpu, p.data, 0, ETH_HEADER + IP_UDP), Cat::PROTOCOL);
        ++wg.stats_.tx_sent;
        co_await wg.env_.stack->dev_queue_xmit(cpu, p);
        co_await kernel::cond_resched(cpu);
    }
}

// Models: wg_packet_receive() (drivers/net/wireguard/receive.c)
engine::Task<> WireGuard::rcv(kernel::Cpu& cpu, const Packet& outer) {
    ++stats_.rx_packets;
    // the outer IP and UDP headers and the WireGuard header (with a hierarchy and an address)
    co_await cpu.exec(env_.costs.wg_rx + env_.stack->frame_read(cpu, outer, 0, ETH_HEADER + IP_UDP + WG_HEADER),
                      Cat::PROTOCOL);
    co_await queue_to_crypt(cpu, decrypt_, rx_, outer);
}

// wg_packet_decrypt_worker
// Models: wg_packet_decrypt_worker() (drivers/net/wireguard/receive.c)
engine::Task<> WireGuard::decrypt_worker(kernel::Cpu& cpu, void* ctx) {
    WireGuard& wg = *static_cast<WorkCtx*>(ctx)->wg;
    for (;;) {
        // pending NET_RX (raised by napi_schedule below) runs at the consume's local_bh_enable
        const std::optional<std::uint64_t> next = co_await ptr_ring_consume_bh(cpu, wg.decrypt_);
        if (!next) break;
        const std::uint64_t n = *next;
        co_await cpu.exec(wg.env_.costs.wg_decrypt, Cat::PROTOCOL);
        const Packet& p = wg.rx_.at(n).p;
        const std::uint32_t plain = pad_to(p.inner_len - ETH_HEADER, 16);
        const crypto::AeadOutcome o = co_await wg.crypt(cpu, plain, 0);
        // decrypt_packet: skb_cow_data leaves a received skb (linear, not cloned) where it is;
        // chacha20poly1305_decrypt_sg_inplace reads the ciphertext and tag as it decrypts them
        // and writes the plaintext
        if (p.data)
            co_await cpu.exec(wg.env_.stack->touch(cpu, p.data + ETH_HEADER + IP_UDP + WG_HEADER, plain + TAG, plain,
                                                   o.work),
                              Cat::CRYPTO);
        const bool ok = wg.open_packet(cpu, p, o.clobbered, "wg_packet_decrypt_worker");
        ++wg.stats_.decrypted;
        wg.rx_.at(n).state = ok ? State::CRYPTED : State::DEAD;
        co_await wg.on(cpu).softnet->napi_schedule(wg.napi_); // wg_queue_enqueue_per_peer_rx
        co_await kernel::cond_resched(cpu);
    }
}

// wg_packet_rx_poll: in order; stop at the first packet still being decrypted.
// Models: wg_packet_rx_poll() (drivers/net/wireguard/receive.c)
engine::Task<int> WireGuard::rx_poll(kernel::Cpu& cpu, void* ctx, int budget) {
    WireGuard& wg = *static_cast<WireGuard*>(ctx);
    int done = 0;
    while (done < budget && !wg.rx_.items.empty()) {
        Item& it = wg.rx_.items.front();
        if (it.state == State::UNCRYPTED) {
            ++wg.stats_.reordered_waits;
            break;
        }
        const bool ok = it.state == State::CRYPTED;
        Packet inner = it.p;
        wg.rx_.items.pop_front();
        ++wg.rx_.base;
        ++done;
        if (!ok) continue;
        co_await cpu.exec(wg.env_.costs.wg_rx_poll, Cat::PROTOCOL);
        inner.kind = inner.inner;
        inner.len = inner.inner_len;
        if (inner.data) inner.data += IP_UDP + WG_HEADER; // the inner IP header follows the WireGuard header
        ++wg.stats_.delivered;
        co_await wg.env_.stack->ip_local_deliver(cpu, inner);
    }
    if (done < budget) napi_complete_done(wg.napi_);
    co_return done;
}

// ---- ESP -----------------------------------------------------------------------------------

namespace {
constexpr std::uint32_t ESP_HEADER = 8, ESP_IV = 8, ESP_TRAILER = 2, OUTER_IP = 20;
} // namespace

Esp::Esp(TunnelEnv env) : TunnelBase(std::move(env)) {
    std::vector<kernel::Cpu*> cpus;
    for (const TunnelCpu& c : env_.cpus) cpus.push_back(c.cpu);
    cryptd_ = std::make_unique<crypto::Cryptd>(cpus, crypto::CryptdCosts{env_.costs.cryptd_enqueue, env_.costs.workqueue, env_.costs.cryptd_complete});
    output_tfm_ = crypto::CryptdTfm{&Esp::cryptd_crypt, &Esp::output_done, this};
    input_tfm_ = crypto::CryptdTfm{&Esp::cryptd_crypt, &Esp::input_done, this};
}

void Esp::register_stats(const stats::Scope& s) const {
    TunnelBase::register_stats(s);
    cryptd_->register_stats(s.sub("cryptd"));
}

std::uint32_t Esp::inner_mtu() const { return tunnel_inner_mtu(TunnelKind::ESP); }

// WireGuard: wg-quick's default; ESP: esp4_get_mtu for a tunnel-mode SA on a 1500-byte device
// with a 4-byte block and 16-byte ICV.
std::uint32_t tunnel_inner_mtu(TunnelKind k) {
    if (k == TunnelKind::WIREGUARD) return WireGuard::MTU;
    return ((1500 - OUTER_IP - ESP_HEADER - ESP_IV - TAG) & ~3u) - ESP_TRAILER;
}

// simd_aead_encrypt/decrypt: cryptd when !crypto_simd_usable(), or when in_atomic() and this
// transform has requests in cryptd (cryptd_aead_queued: keep their order).
// Models: simd_aead_encrypt(), simd_aead_decrypt() (crypto/simd.c)
bool Esp::goes_async(kernel::Cpu& cpu, const crypto::CryptdTfm& tfm) const {
    if (!env_.driver_async) return false;
    const auto& me = env_.cpus[static_cast<std::size_t>(cpu.id())];
    if (!arch::crypto_simd_usable(*me.simd)) return true;
    return cpu.preempt_count() != 0 && crypto::cryptd_queued(tfm);
}

// The request goes to cryptd (esp's callback flags are 0: no backlog, a full queue refuses it
// with -ENOSPC and esp drops the packet).
engine::Task<> Esp::crypt_async(kernel::Cpu& cpu, crypto::CryptdTfm& tfm, const Packet& p, mem::Addr src) {
    ++stats_.async_crypts;
    std::uint64_t slot;
    if (free_requests_.empty()) {
        slot = requests_.size();
        requests_.emplace_back();
    } else {
        slot = free_requests_.back();
        free_requests_.pop_back();
    }
    requests_[slot] = Request{p, false, &tfm == &input_tfm_, src};
    const int err = co_await cryptd_->cryptd_enqueue_request(cpu, crypto::CryptoAsyncRequest{&tfm, slot, 0});
    if (err == -ENOSPC) {
        ++stats_.ring_drops;
        free_requests_.push_back(slot);
    }
}

// cryptd_aead_crypt's child call: the AEAD in the cryptd worker's task context.
engine::Task<int> Esp::cryptd_crypt(kernel::Cpu& cpu, void* ctx, std::uint64_t slot) {
    Esp& esp = *static_cast<Esp*>(ctx);
    const std::uint32_t len = esp.requests_[slot].p.inner_len - ETH_HEADER;
    const crypto::AeadOutcome o = co_await esp.crypt(cpu, len, ESP_HEADER, true);
    const Request& r = esp.requests_[slot];
    if (r.p.data)
        co_await cpu.exec(r.input ? esp.decrypt_lines(cpu, r.p, o.work) : esp.encrypt_lines(cpu, r.p, o.work, r.src), Cat::CRYPTO);
    esp.requests_[slot].clobbered = o.clobbered;
    co_return 0;
}

// crypto_aead_encrypt: the padded plaintext (inner packet + padding + pad length + next header)
// read from `src` and written into the outer frame, the ICV behind it (in place when `src` is
// the frame's, esp->inplace; out of place into x->xfrag's page otherwise); the ESP header and IV
// (the associated data and the nonce) were just written in front. The cipher's figures are warm
// compute; its reads are consumed by them (their fetch overlaps the cipher's work).
Cycles Esp::encrypt_lines(kernel::Cpu& cpu, const Packet& outer, Cycles work, mem::Addr src) {
    const mem::Addr ip = outer.data + ETH_HEADER + OUTER_IP + ESP_HEADER + ESP_IV;
    const std::uint32_t plain = pad_to(outer.inner_len - ETH_HEADER + ESP_TRAILER, 4);
    return env_.stack->touch(cpu, src ? src : ip, plain, ip, plain + TAG, work);
}

// crypto_aead_decrypt in place: the ciphertext and ICV read, the plaintext written over it.
Cycles Esp::decrypt_lines(kernel::Cpu& cpu, const Packet& outer, Cycles work) {
    const mem::Addr ct = outer.data + ETH_HEADER + OUTER_IP + ESP_HEADER + ESP_IV;
    const std::uint32_t plain = pad_to(outer.inner_len - ETH_HEADER + ESP_TRAILER, 4);
    return env_.stack->touch(cpu, ct, plain + TAG, plain, work);
}

// esp_output_done / esp_input_done, BH disabled.
// Models: esp_output_done() (net/ipv4/esp4.c)
engine::Task<> Esp::output_done(kernel::Cpu& cpu, void* ctx, std::uint64_t slot, int err) {
    Esp& esp = *static_cast<Esp*>(ctx);
    if (err == -EINPROGRESS) co_return;
    const Request r = esp.requests_[slot];
    esp.free_requests_.push_back(slot);
    co_await esp.output_finish(cpu, r.p, r.clobbered);
}

// Models: esp_input_done() (net/ipv4/esp4.c)
engine::Task<> Esp::input_done(kernel::Cpu& cpu, void* ctx, std::uint64_t slot, int err) {
    Esp& esp = *static_cast<Esp*>(ctx);
    if (err == -EINPROGRESS) co_return;
    const Request r = esp.requests_[slot];
    esp.free_requests_.push_back(slot);
    co_await esp.input_finish(cpu, r.p, r.clobbered);
}

// A GSO skb is segmented first (xfrm_output_gso: skb_gso_segment(skb, 0), every segment copied
// and checksummed), each segment then output in turn. TCP sends none over an xfrm route
// (Esp::gso_ok): its skbs come one segment each, CHECKSUM_PARTIAL.
// Models: xfrm_output() (net/xfrm/xfrm_output.c)
engine::Task<> Esp::xmit(kernel::Cpu& cpu, Packet skb) {
    if (skb.gso_segs <= 1) {
        co_await esp_output(cpu, skb);
        co_return;
    }
    co_await skb_gso_segment(cpu, skb);
    while (!staged_.empty()) {
        const Packet s = staged_.front();
        staged_.pop_front();
        co_await esp_output(cpu, s);
    }
}

// xfrm_output's skb_checksum_help of a CHECKSUM_PARTIAL skb, then esp_output. A UDP datagram on an
// xfrm route is CHECKSUM_NONE, checksummed as udp_sendmsg copied it (__ip_append_data: no
// NETIF_F_HW_ESP_TX_CSUM; csum_and_copy_from_iter, on arm64 the copy then csum_partial over the
// bytes just written): charged here instead, the same pass on the same CPU in the same call.
// With a hierarchy, esp_output_head: a TCP skb (skb_checksum_help's pskb_expand_head left it
// private, its payload in page frags, no tailroom) gets its trailer in a page of x->xfrag and
// esp->inplace = false: esp_output_tail allocates the destination from x->xfrag (a head from
// the slab here) and the AEAD reads the frags and writes there; nothing is pulled. A linear
// packet (a segment skb_segment made, an ACK, a UDP datagram: room for the trailer, dst
// trailer_len) is encrypted in place. The trailer (padding, pad length, next header) goes behind
// the inner packet, the ESP header and IV (esp_output_tail) and the outer IP header (xfrm4's
// tunnel mode output) in front.
// Models: esp_output() (net/ipv4/esp4.c)
engine::Task<> Esp::esp_output(kernel::Cpu& cpu, Packet inner) {
    ++stats_.tx_packets;
    co_await cpu.exec(env_.costs.esp_output, Cat::PROTOCOL);
    const std::uint32_t ip_len = inner.len - ETH_HEADER;
    co_await skb_checksum_help(cpu, inner, ip_len);
    const std::uint32_t plain = pad_to(ip_len + ESP_TRAILER, 4);
    Packet outer = encapsulate(inner, FrameKind::ESP, next_seq_++, ETH_HEADER + OUTER_IP + ESP_HEADER + ESP_IV + plain + TAG);
    Stack& st = *env_.stack;
    mem::Addr src = 0;
    if (st.memory() && inner.data) {
        src = inner.data + ETH_HEADER;
        const bool frags = inner.kind == FrameKind::TCP_DATA && !inner.csum_none && st.skb_slab();
        const mem::Addr ip = frags ? st.skb_slab()->alloc() + TCP_HEADROOM : src;
        outer.data = ip - (OUTER_IP + ESP_HEADER + ESP_IV) - ETH_HEADER;
        co_await cpu.exec(st.touch(cpu, ip + ip_len, 0, plain - ip_len), Cat::PROTOCOL);
        co_await cpu.exec(st.touch(cpu, outer.data + ETH_HEADER, 0, OUTER_IP + ESP_HEADER + ESP_IV), Cat::PROTOCOL);
    }
    if (goes_async(cpu, output_tfm_)) {
        co_await crypt_async(cpu, output_tfm_, outer, src);
        co_return;
    }
    ++stats_.sync_crypts;
    if (env_.driver_async) co_await cpu.exec(env_.costs.simd_wrapper, Cat::CRYPTO);
    const crypto::AeadOutcome o = co_await crypt(cpu, ip_len, ESP_HEADER);
    if (outer.data) co_await cpu.exec(encrypt_lines(cpu, outer, o.work, src), Cat::CRYPTO);
    co_await output_finish(cpu, outer, o.clobbered);
}

// esp_output_done -> xfrm_output_resume: the frame leaves through the device.
// Models: xfrm_output_resume() (net/xfrm/xfrm_output.c)
engine::Task<> Esp::output_finish(kernel::Cpu& cpu, const Packet& outer, bool clobbered) {
    env_.channel->seal(env_.side, outer, clobbered);
    ++stats_.encrypted;
    ++stats_.tx_sent;
    // neigh_hh_output's Ethernet header, in front of the outer IP header (with a hierarchy)
    if (outer.data) co_await cpu.exec(env_.stack->touch(cpu, outer.data, 0, ETH_HEADER), Cat::PROTOCOL);
    co_await env_.stack->dev_queue_xmit(cpu, outer);
}

// Models: esp_input() (net/ipv4/esp4.c)
engine::Task<> Esp::rcv(kernel::Cpu& cpu, const Packet& outer) {
    ++stats_.rx_packets;
    // xfrm4_rcv -> xfrm_input: the outer IP and ESP headers (SPI, sequence number) and the IV
    // (with a hierarchy and an address)
    co_await cpu.exec(env_.costs.esp_input + env_.stack->frame_read(cpu, outer, 0, ETH_HEADER + OUTER_IP + ESP_HEADER + ESP_IV),
                      Cat::PROTOCOL);
    if (goes_async(cpu, input_tfm_)) {
        co_await crypt_async(cpu, input_tfm_, outer);
        co_return;
    }
    ++stats_.sync_crypts;
    if (env_.driver_async) co_await cpu.exec(env_.costs.simd_wrapper, Cat::CRYPTO);
    const crypto::AeadOutcome o = co_await crypt(cpu, outer.inner_len - ETH_HEADER, ESP_HEADER);
    // esp_input: a received skb, linear and not cloned, is decrypted where it lies (no skb_cow_data copy)
    if (outer.data) co_await cpu.exec(decrypt_lines(cpu, outer, o.work), Cat::CRYPTO);
    co_await input_finish(cpu, outer, o.clobbered);
}

// esp_input set the skb CHECKSUM_NONE before decrypting (unlike WireGuard, whose
// wg_packet_rx_poll marks an authenticated packet CHECKSUM_UNNECESSARY at every level), so the
// inner TCP segment or UDP datagram gets its transport checksum verified in software over its
// transport header and payload: xfrm_input hands the decapsulated skb to gro_cells_receive, whose
// NAPI on this CPU runs tcp4_gro_receive / udp4_gro_receive -> skb_gro_checksum_validate ->
// __skb_gro_checksum_complete -> skb_checksum (csum_partial), which leaves it
// CHECKSUM_UNNECESSARY; with GRO elided, tcp_v4_rcv's skb_checksum_init then tcp_rcv_established's
// tcp_checksum_complete do the same pass before the segment is queued (6.1 has no checksum folded
// into the copy to user for TCP; udp_recvmsg's skb_copy_and_csum_datagram_msg is taken only for a
// datagram still unverified, which GRO's validation leaves none of). [tunnel].csum_partial per
// byte, the same routine as the transmit side's, the lines read as the checksum consumes them
// (cached: the AEAD just wrote them). Charged on the CPU and in the context that completes the
// decrypt: NET_RX, or cryptd's kworker with BH off, where the model delivers the inner packet.
// Models: __skb_gro_checksum_complete() (net/core/gro.c)
// Models: tcp_checksum_complete() (net/ipv4/tcp_input.c)
engine::Task<> Esp::rx_checksum(kernel::Cpu& cpu, const Packet& inner) {
    const std::uint32_t ip_len = inner.len - ETH_HEADER;
    if (ip_len <= IP_HEADER) co_return;
    const std::uint32_t l4 = ip_len - IP_HEADER;
    const Cycles csum = per_byte(env_.costs.csum_partial, l4);
    const mem::Addr at = inner.data ? inner.data + ETH_HEADER + IP_HEADER : 0;
    co_await cpu.exec(csum + (at ? env_.stack->touch(cpu, at, l4, 0, csum) : 0), Cat::PROTOCOL);
}

// esp_input_done2 -> xfrm_input_resume: the inner packet goes up the stack, its checksum
// verified in software on the way (rx_checksum).
// Models: esp_input_done2() (net/ipv4/esp4.c)
// Models: xfrm_input_resume() (net/xfrm/xfrm_input.c)
engine::Task<> Esp::input_finish(kernel::Cpu& cpu, const Packet& outer, bool clobbered) {
    const bool ok = open_packet(cpu, outer, clobbered, "esp_input_done2");
    ++stats_.decrypted;
    if (!ok) co_return;
    Packet inner = outer;
    inner.kind = outer.inner;
    inner.len = outer.inner_len;
    if (inner.data) inner.data += OUTER_IP + ESP_HEADER + ESP_IV; // the inner IP header follows the IV
    co_await rx_checksum(cpu, inner);
    ++stats_.delivered;
    co_await env_.stack->ip_local_deliver(cpu, inner);
}

} // namespace kdsim::net
