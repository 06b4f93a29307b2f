// The AEAD calls of validate's receive loop on warm data, beside the call calibrate times.
//
// validate's real receive loop times `InPlaceOpener::open` around each packet (src/validate,
// "median N cycles" on stderr, `median_bracket_cycles` in its JSON). This program times the same
// OpenSSL call sequence on an L1-resident frame (EVP_DecryptInit_ex with the nonce, the 8-byte AAD
// update, the in-place update, SET_TAG, DecryptFinal_ex), and beside it the sequence that
// `kdsim calibrate` times for `[cipher.<aead>]` (EncryptInit_ex2 with the IV, update, final,
// GET_TAG: no AAD), so that the two can be held against the in-situ bracket.
//
// Build and run (docs/validation.md, "Session 24: the decryption call in situ and warm"):
//   g++ -O2 -std=c++20 docs/bench/aead-open-warm.cpp -lcrypto -o /tmp/aead-open-warm
//   taskset -c 1 /tmp/aead-open-warm [GAP]
// GAP: TSC cycles of scalar spinning (no vector instruction, no memory traffic) before each timed
// call, as the receive loop's polling between packets (default 0). Prints, per round, the median TSC cycles of 20,000 calls of each sequence at 64, 512 and 1,420
// bytes, for AES-128-GCM and ChaCha20-Poly1305, the configurations interleaved.
#include <openssl/evp.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

const EVP_CIPHER* cipher(int alg) { return alg == 0 ? EVP_aes_128_gcm() : EVP_chacha20_poly1305(); }

EVP_CIPHER_CTX* keyed(int alg, bool enc, const unsigned char* key) {
    EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
    if (!c || EVP_CipherInit_ex(c, cipher(alg), nullptr, nullptr, nullptr, enc) != 1 ||
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_IVLEN, 12, nullptr) != 1 ||
        EVP_CipherInit_ex(c, nullptr, nullptr, key, nullptr, enc) != 1) {
        std::fprintf(stderr, "cannot key the context\n");
        std::exit(1);
    }
    return c;
}

unsigned long median(std::vector<unsigned long> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
    const unsigned long gap = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 0;
    const unsigned char key[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                   17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
    const unsigned char nonce[12] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2};
    const unsigned char aad[8] = {0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1};
    const int sizes[] = {64, 512, 1420};
    constexpr int calls = 20000, rounds = 5;
    std::printf("gap %lu cycles\nround alg bytes open(decrypt+aad) calibrate(encrypt, no aad)\n", gap);
    for (int round = 0; round < rounds; ++round)
        for (int alg = 0; alg < 2; ++alg)
            for (int n : sizes) {
                EVP_CIPHER_CTX* e = keyed(alg, true, key);
                EVP_CIPHER_CTX* d = keyed(alg, false, key);
                std::vector<unsigned char> plain(static_cast<std::size_t>(n), 0x5a), sealed(plain.size()), frame(plain.size()),
                    out(plain.size() + 16);
                unsigned char tag[16];
                int len = 0, fin = 0;
                // the frame: the plaintext sealed with the AAD, as the device thread writes it
                if (EVP_EncryptInit_ex(e, nullptr, nullptr, nullptr, nonce) != 1 ||
                    EVP_EncryptUpdate(e, nullptr, &len, aad, 8) != 1 ||
                    EVP_EncryptUpdate(e, sealed.data(), &len, plain.data(), n) != 1 ||
                    EVP_EncryptFinal_ex(e, sealed.data() + len, &fin) != 1 ||
                    EVP_CIPHER_CTX_ctrl(e, EVP_CTRL_AEAD_GET_TAG, 16, tag) != 1)
                    return 1;
                std::vector<unsigned long> open_t, cal_t;
                open_t.reserve(calls);
                cal_t.reserve(calls);
                for (int i = 0; i < calls; ++i) {
                    std::memcpy(frame.data(), sealed.data(), frame.size()); // decrypted in place: restore it
                    for (const unsigned long g0 = __rdtsc(); __rdtsc() - g0 < gap;) {
                    }
                    unsigned long t0 = __rdtsc();
                    const bool ok = EVP_DecryptInit_ex(d, nullptr, nullptr, nullptr, nonce) == 1 &&
                                    EVP_DecryptUpdate(d, nullptr, &len, aad, 8) == 1 &&
                                    EVP_DecryptUpdate(d, frame.data(), &len, frame.data(), n) == 1 &&
                                    EVP_CIPHER_CTX_ctrl(d, EVP_CTRL_AEAD_SET_TAG, 16, tag) == 1 &&
                                    EVP_DecryptFinal_ex(d, frame.data() + len, &fin) > 0;
                    unsigned long t1 = __rdtsc();
                    if (!ok) {
                        std::fprintf(stderr, "authentication failed\n");
                        return 1;
                    }
                    open_t.push_back(t1 - t0);
                    t0 = __rdtsc();
                    if (EVP_EncryptInit_ex2(e, nullptr, nullptr, nonce, nullptr) != 1 ||
                        EVP_EncryptUpdate(e, out.data(), &len, plain.data(), n) != 1 ||
                        EVP_EncryptFinal_ex(e, out.data() + len, &fin) != 1 ||
                        EVP_CIPHER_CTX_ctrl(e, EVP_CTRL_AEAD_GET_TAG, 16, out.data() + n) != 1)
                        return 1;
                    t1 = __rdtsc();
                    cal_t.push_back(t1 - t0);
                }
                std::printf("%d %s %d %lu %lu\n", round, alg == 0 ? "aes-128-gcm" : "chacha20-poly1305", n,
                            median(open_t), median(cal_t));
                EVP_CIPHER_CTX_free(e);
                EVP_CIPHER_CTX_free(d);
            }
}
