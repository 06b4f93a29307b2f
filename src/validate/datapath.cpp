// The real datapath of kdsim validate (see datapath.h for the arrangement of threads and why).
#include "validate/datapath.h"
#include "validate/datapath_threads.h"

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

using namespace detail;

namespace {

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

} // namespace kdsim::validate
