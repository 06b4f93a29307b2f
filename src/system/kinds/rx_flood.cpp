// rx_flood (workloads/rxflood.h): a flood of ESP-like packets decrypted on one CPU, the twin of
// kdsim validate's user-space datapath.
#include "system/workload_kind.h"
#include "workloads/rxflood.h"

#include <fmt/format.h>

#include <array>
#include <cmath>

namespace kdsim::system {

namespace {

using workloads::RxFloodWorkload;
using workloads::RxFlush;

crypto::CipherPrim aead_prim(crypto::AeadAlg a) {
    switch (a) {
    case crypto::AeadAlg::CHACHA20_POLY1305: return crypto::CipherPrim::CHACHA20_POLY1305;
    case crypto::AeadAlg::AES_128_GCM: return crypto::CipherPrim::AES128_GCM;
    case crypto::AeadAlg::AES_256_GCM: return crypto::CipherPrim::AES256_GCM;
    }
    return crypto::CipherPrim::AES128_GCM;
}

// The fused AEAD primitive's fastest implementation in the profile: SIMD, else scalar.
std::optional<crypto::CipherImpl> best_impl(const Profile& p, crypto::CipherPrim prim) {
    if (auto impl = p.cipher.best(prim, true)) return impl;
    return p.cipher.best(prim, false);
}

void read(ParamReader& r, RxFloodWorkload& x) {
    const auto a = r.choice("alg", false, {"aes-128-gcm", "chacha20-poly1305", "aes-256-gcm"});
    if (a)
        x.alg = std::array{crypto::AeadAlg::AES_128_GCM, crypto::AeadAlg::CHACHA20_POLY1305,
                           crypto::AeadAlg::AES_256_GCM}[*a];
    if (const Profile* p = r.profile(); p && (a || !r.has("alg")) && !best_impl(*p, aead_prim(x.alg)))
        r.error("alg", fmt::format("rx_flood decrypts with a [cipher.{}.<impl>] table of profile {}, which has none",
                                   crypto::to_string(aead_prim(x.alg)), p->name));
    if (auto b = r.bytes("payload", false, true)) {
        if (*b > 65535) r.error("payload", fmt::format("expected at most 65535 bytes, found {}", *b));
        else x.payload = *b;
    }
    if (auto b = r.bytes("buffer", false, true)) {
        if (*b % 64 != 0)
            r.error("buffer", fmt::format("expected a multiple of 64 bytes (whole cache lines), found {}", *b));
        else x.buffer = *b;
    }
    // the frame is written with 16-byte stores: it must fit the buffer rounded up to 16
    if ((workloads::rx_frame_len(x.payload) + 15) / 16 * 16 > x.buffer)
        r.error(r.has("buffer") ? "buffer" : "payload",
                fmt::format("a frame of {} bytes (payload {} + 66 bytes of headers and ICV, rounded up to 16) does not "
                            "fit a {}-byte buffer",
                            (workloads::rx_frame_len(x.payload) + 15) / 16 * 16, x.payload, x.buffer));
    if (auto f = r.choice("flush", false, {"none", "full", "rxlen"})) {
        x.flush = std::array{RxFlush::NONE, RxFlush::FULL_BUFFER, RxFlush::RECEIVED_LENGTH}[*f];
        const Profile* profile = r.profile();
        if (x.flush != RxFlush::NONE && profile && !profile->flush && (!profile->dma || profile->dma->coherent))
            r.error("flush", fmt::format("flush = \"{}\" is charged with a [flush] table (kdsim calibrate's stand-in) or "
                                         "the [dma] inner_inv_line of a non-coherent platform; profile {} has no [flush] "
                                         "and {}",
                                         *f == 1 ? "full" : "rxlen", profile->name,
                                         profile->dma ? "has a coherent [dma] (coherent = true)" : "has no [dma]"));
    }
    if (auto b = r.boolean("cryptd", false)) x.cryptd = *b;
    if (auto v = r.integer("cryptd_qlen", false, 1, 1'000'000)) {
        x.cryptd_qlen = static_cast<std::uint64_t>(*v);
        if (!x.cryptd) r.error("cryptd_qlen", "cryptd_qlen bounds the queue of cryptd = true only");
    }
    if (auto v = r.integer("weight", false, 1, 4096)) x.weight = static_cast<int>(*v);
    if (auto v = r.integer("budget", false, 1, 1'000'000)) x.budget = static_cast<int>(*v);
    if (auto v = r.integer("priority", false, 0, 99)) x.priority = static_cast<int>(*v);
}

// The per-packet costs from the machine's profile: the fused AEAD primitive (the fastest SIMD
// implementation, else the fastest scalar one) and, with a flush, the [flush] or [dma] per-line
// figures; without a flush, the profile's memory hierarchy when it has one, and with a flush too
// when [flush] gives the re-read's fixed cost apart (the hierarchy then gives the re-read).
workloads::RxFloodCosts costs(const MachineConfig& mc, const RxFloodWorkload& x) {
    const Profile& p = mc.profile;
    workloads::RxFloodCosts c;
    const crypto::CipherPrim prim = aead_prim(x.alg);
    const std::optional<crypto::CipherImpl> impl = best_impl(p, prim);
    // the loader checks the scenario's profile; kdsim validate swaps in a calibrated one
    require(impl.has_value(), "rx_flood '" + x.name + "' needs a [cipher." + std::string(crypto::to_string(prim)) +
                                  ".<impl>] table in profile " + p.name + ", which has none");
    c.decrypt = p.cipher.call_cycles(prim, *impl, x.payload);
    c.impl = std::string(crypto::to_string(prim)) + "." + std::string(crypto::to_string(*impl));
    if (x.flush == RxFlush::NONE) {
        // with [memory], the loop's descriptor and frame accesses pay the hierarchy's stalls
        c.memory = p.memory;
        c.clock_hz = p.clock_hz;
        return c;
    }
    const std::uint64_t line = p.cache_line ? p.cache_line : 64;
    const std::uint64_t bytes = x.flush == RxFlush::FULL_BUFFER ? x.buffer : workloads::rx_frame_len(x.payload);
    c.flush_lines = (bytes + line - 1) / line;
    if (p.flush && p.memory && p.flush->reread_per_call) {
        // the flush's own figures; the re-read of the frame is the hierarchy's (the flushed lines
        // are dropped from it)
        c.flush_per_packet = p.flush->per_call + static_cast<engine::Cycles>(std::llround(
                                                     static_cast<double>(c.flush_lines) * p.flush->dirty_line));
        c.memory = p.memory;
        c.clock_hz = p.clock_hz;
    } else if (p.flush) {
        // the user-space stand-in measured by kdsim calibrate: CLFLUSHOPT of the flushed lines,
        // then the CPU reads the received frame's lines back from memory
        const std::uint64_t read_lines = (workloads::rx_frame_len(x.payload) + line - 1) / line;
        c.flush_per_packet = p.flush->per_call + p.flush->reread_per_call.value_or(0) +
                             static_cast<engine::Cycles>(std::llround(
                                 static_cast<double>(c.flush_lines) * p.flush->dirty_line +
                                 static_cast<double>(read_lines) * p.flush->reread_line));
    } else {
        require(p.dma && !p.dma->coherent, "rx_flood '" + x.name +
                                               "' flush needs a non-coherent [dma] (inner_inv_line) or a [flush] "
                                               "table in profile " + p.name);
        c.flush_per_packet = static_cast<engine::Cycles>(c.flush_lines) * p.dma->inner_inv_line + p.dma->barrier;
    }
    return c;
}

std::unique_ptr<workloads::Workload> build(const RxFloodWorkload& x, BuildContext& b) {
    return std::make_unique<workloads::RxFlood>(b.env, x, costs(b.machine(), x));
}

} // namespace

extern const WorkloadKind rx_flood_kind = WorkloadKind::of<RxFloodWorkload>(
    "rx_flood", {"alg", "payload", "buffer", "flush", "cryptd", "cryptd_qlen", "weight", "budget", "priority"}, false,
    read, build);

} // namespace kdsim::system
