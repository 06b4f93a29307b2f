#include "validate/configs.h"

namespace kdsim::validate {

std::string to_string(Kind k) {
    switch (k) {
    case Kind::INLINE: return "inline decrypt";
    case Kind::CRYPTD: return "cryptd hand-off";
    case Kind::FLUSH: return "non-coherent sync stand-in";
    case Kind::HASH: return "hashing load + probe";
    }
    return "?";
}

std::vector<std::uint64_t> hash_size_pattern() {
    std::vector<std::uint64_t> kib = {512, 64, 256, 1024, 128, 768, 32, 384, 16, 896, 192, 640, 48, 320, 96, 1024};
    for (auto& k : kib) k *= 1024;
    return kib;
}

namespace {

std::string alg_tag(crypto::AeadAlg a) { return std::string(crypto::to_string(a)); }

Config rx_config(Kind kind, crypto::AeadAlg alg, std::size_t payload, std::size_t buffer, Flush flush, bool quick) {
    Config c;
    c.kind = kind;
    c.quick = quick;
    c.rx.alg = alg;
    c.rx.payload = payload;
    c.rx.buffer_size = buffer;
    c.rx.flush = flush;
    c.rx.cryptd = kind == Kind::CRYPTD;
    const std::string a = alg_tag(alg);
    switch (kind) {
    case Kind::INLINE:
        c.name = "rx-inline-" + std::to_string(payload) + "-" + a;
        c.description = std::to_string(payload) + "-byte ESP payloads, " + a + ", decrypted in the NET_RX softirq";
        break;
    case Kind::CRYPTD:
        c.name = "rx-cryptd-" + std::to_string(payload) + "-" + a;
        c.description = std::to_string(payload) + "-byte ESP payloads, " + a +
                        ", each handed from NET_RX to a cryptd-like worker on the same CPU";
        break;
    case Kind::FLUSH: {
        const std::string b = buffer == 9216 ? "9k" : std::to_string(buffer);
        c.name = "rx-flush-" + b + (flush == Flush::FULL_BUFFER ? "-full" : "-rxlen");
        c.description = std::to_string(payload) + "-byte ESP payloads, " + a + ", " + std::to_string(buffer) +
                        "-byte rx buffers, CLFLUSHOPT of the " + to_string(flush) + " before the CPU reads it";
        break;
    }
    case Kind::HASH: break;
    }
    return c;
}

Config hash_config(Bracketing policy, bool quick) {
    Config c;
    c.kind = Kind::HASH;
    c.quick = quick;
    c.name = policy == Bracketing::FIXED ? "hash-fixed-4k" : "hash-yield-4k";
    c.hash.sizes = hash_size_pattern();
    c.hash.passes = 80;
    c.quick_passes = 20;
    c.hash.chunk = 4096;
    c.hash.policy = policy;
    c.hash.probe_period_ns = 1'000'000;
    c.hash.probe_priority = 95;
    c.hash.user_simd_live = true;
    c.description = policy == Bracketing::FIXED
                        ? "a user process hashing 16 KiB..1 MiB buffers with SHA-256 in its system calls, one "
                          "bracket per 4 KiB (PREEMPT_VOLUNTARY), with a 1 ms cyclictest-like probe"
                        : "a user process hashing 16 KiB..1 MiB buffers with SHA-256 in its system calls, "
                          "need_resched checked every 4 KiB (PREEMPT_VOLUNTARY), with a 1 ms cyclictest-like probe";
    return c;
}

std::vector<Config> build() {
    using crypto::AeadAlg;
    std::vector<Config> v;
    for (AeadAlg a : {AeadAlg::AES_128_GCM, AeadAlg::CHACHA20_POLY1305})
        for (std::size_t p : {64, 512, 1420})
            v.push_back(rx_config(Kind::INLINE, a, p, 1536, Flush::NONE, a == AeadAlg::AES_128_GCM && p == 1420));
    for (AeadAlg a : {AeadAlg::AES_128_GCM, AeadAlg::CHACHA20_POLY1305})
        v.push_back(rx_config(Kind::CRYPTD, a, 1420, 1536, Flush::NONE, a == AeadAlg::AES_128_GCM));
    v.push_back(rx_config(Kind::FLUSH, AeadAlg::AES_128_GCM, 1420, 9216, Flush::FULL_BUFFER, true));
    v.push_back(rx_config(Kind::FLUSH, AeadAlg::AES_128_GCM, 1420, 9216, Flush::RECEIVED_LENGTH, false));
    v.push_back(rx_config(Kind::FLUSH, AeadAlg::AES_128_GCM, 1420, 1536, Flush::FULL_BUFFER, false));
    v.push_back(rx_config(Kind::FLUSH, AeadAlg::AES_128_GCM, 1420, 1536, Flush::RECEIVED_LENGTH, false));
    v.push_back(hash_config(Bracketing::FIXED, false));
    v.push_back(hash_config(Bracketing::YIELD, true));
    return v;
}

} // namespace

const std::vector<Config>& configurations() {
    static const std::vector<Config> all = build();
    return all;
}

} // namespace kdsim::validate
