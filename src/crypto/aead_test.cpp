// GoogleTest suite for kdsim::crypto AEADs. Expected ciphertexts and tags are
// typed in from the published documents cited next to each vector (RFC 8439
// section 2.8.2 and appendix A.5 for ChaCha20-Poly1305; McGrew & Viega, "The
// Galois/Counter Mode of Operation (GCM)", test cases 1-4 and 13-16, the
// 96-bit-IV cases, for AES-GCM), never produced by the code under test or by
// OpenSSL's command line. Further tests cover seal/open round trips for
// random sizes, rejection of any single flipped bit in ciphertext, tag, AAD
// or nonce, size checking, and the algorithm-name mapping.
#include "crypto/aead.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kdsim::crypto {

// Lets GoogleTest print "aes-128-gcm" instead of the enum's raw bytes.
void PrintTo(AeadAlg alg, std::ostream* os) { *os << to_string(alg); }

namespace {

constexpr AeadAlg kAllAlgs[] = {AeadAlg::CHACHA20_POLY1305, AeadAlg::AES_128_GCM, AeadAlg::AES_256_GCM};

using Bytes = std::vector<std::uint8_t>;

// Parses hex, ignoring spaces and colons so vectors can be typed as printed.
Bytes from_hex(std::string_view hex) {
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        throw std::invalid_argument("bad hex digit in test vector");
    };
    Bytes out;
    int hi = -1;
    for (char c : hex) {
        if (c == ' ' || c == ':' || c == '\n') continue;
        if (hi < 0) {
            hi = nibble(c);
        } else {
            out.push_back(static_cast<std::uint8_t>(hi << 4 | nibble(c)));
            hi = -1;
        }
    }
    if (hi >= 0) throw std::invalid_argument("odd number of hex digits in test vector");
    return out;
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    for (std::uint8_t b : bytes) {
        out.push_back(kDigits[b >> 4]);
        out.push_back(kDigits[b & 0x0f]);
    }
    return out;
}

Bytes bytes_of(std::string_view s) { return Bytes(s.begin(), s.end()); }

Bytes concat(const Bytes& a, const Bytes& b) {
    Bytes out = a;
    out.insert(out.end(), b.begin(), b.end());
    return out;
}

Bytes random_bytes(std::mt19937& rng, std::size_t n) {
    std::uniform_int_distribution<int> byte(0, 255);
    Bytes out(n);
    for (auto& b : out) b = static_cast<std::uint8_t>(byte(rng));
    return out;
}

std::string param_name(AeadAlg alg) {
    std::string s(to_string(alg));
    for (char& c : s) {
        if (c == '-') c = '_';
    }
    return s;
}

// ---- published vectors -----------------------------------------------------

struct Vector {
    const char* name;
    AeadAlg alg;
    Bytes key, nonce, aad, plaintext, ciphertext, tag;
};

void PrintTo(const Vector& v, std::ostream* os) { *os << v.name; }

// RFC 8439, section 2.8.2: the "sunscreen" plaintext is 114 bytes.
constexpr std::string_view kSunscreen =
    "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, "
    "sunscreen would be it.";

// RFC 8439, appendix A.5: the decrypted Internet-Draft boilerplate, 265 bytes,
// with UTF-8 curly quotes (e2 80 9c / e2 80 9d) around "work in progress./".
constexpr std::string_view kDraftBoilerplate =
    "Internet-Drafts are draft documents valid for a maximum of six months and may be updated, replaced, "
    "or obsoleted by other documents at any time. It is inappropriate to use Internet-Drafts as reference "
    "material or to cite them other than as /\xe2\x80\x9cwork in progress./\xe2\x80\x9d";

// McGrew & Viega GCM test cases 3/4 and 15/16 share this plaintext (4 blocks;
// cases 4 and 16 drop the last 4 bytes) and this IV and AAD.
constexpr std::string_view kGcmPlaintext =
    "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
    "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255";
constexpr std::string_view kGcmIv = "cafebabefacedbaddecaf888";
constexpr std::string_view kGcmAad = "feedfacedeadbeeffeedfacedeadbeefabaddad2";

std::vector<Vector> published_vectors() {
    const Bytes zero12(12, 0), zero16(16, 0), zero32(32, 0);
    const Bytes gcm_pt = from_hex(kGcmPlaintext);
    const Bytes gcm_pt60(gcm_pt.begin(), gcm_pt.begin() + 60);
    return {
        {"Rfc8439Section2_8_2", AeadAlg::CHACHA20_POLY1305,
         from_hex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"),
         from_hex("07000000 4041424344454647"), from_hex("50515253c0c1c2c3c4c5c6c7"), bytes_of(kSunscreen),
         from_hex("d31a8d34648e60db7b86afbc53ef7ec2 a4aded51296e08fea9e2b5a736ee62d6"
                  "3dbea45e8ca9671282fafb69da92728b 1a71de0a9e060b2905d6a5b67ecd3b36"
                  "92ddbd7f2d778b8c9803aee328091b58 fab324e4fad675945585808b4831d7bc"
                  "3ff4def08e4b7a9de576d26586cec64b 6116"),
         from_hex("1a:e1:0b:59:4f:09:e2:6a:7e:90:2e:cb:d0:60:06:91")},
        {"Rfc8439AppendixA5", AeadAlg::CHACHA20_POLY1305,
         from_hex("1c9240a5eb55d38af333888604f6b5f0 473917c1402b80099dca5cbc207075c0"),
         from_hex("000000000102030405060708"), from_hex("f33388860000000000004e91"), bytes_of(kDraftBoilerplate),
         from_hex("64a0861575861af460f062c79be643bd 5e805cfd345cf389f108670ac76c8cb2"
                  "4c6cfc18755d43eea09ee94e382d26b0 bdb7b73c321b0100d4f03b7f355894cf"
                  "332f830e710b97ce98c8a84abd0b9481 14ad176e008d33bd60f982b1ff37c855"
                  "9797a06ef4f0ef61c186324e2b350638 3606907b6a7c02b0f9f6157b53c867e4"
                  "b9166c767b804d46a59b5216cde7a4e9 9040c5a40433225ee282a1b0a06c523e"
                  "af4534d7f83fa1155b0047718cbc546a 0d072b04b3564eea1b422273f548271a"
                  "0bb2316053fa76991955ebd63159434e cebb4e466dae5a1073a6727627097a10"
                  "49e617d91d361094fa68f0ff77987130 305beaba2eda04df997b714d6c6f2c29"
                  "a6ad5cb4022b02709b"),
         from_hex("eead9d67890cbb22392336fea1851f38")},
        {"GcmSpecTestCase1", AeadAlg::AES_128_GCM, zero16, zero12, {}, {}, {},
         from_hex("58e2fccefa7e3061367f1d57a4e7455a")},
        {"GcmSpecTestCase2", AeadAlg::AES_128_GCM, zero16, zero12, {}, zero16,
         from_hex("0388dace60b6a392f328c2b971b2fe78"), from_hex("ab6e47d42cec13bdf53a67b21257bddf")},
        {"GcmSpecTestCase3", AeadAlg::AES_128_GCM, from_hex("feffe9928665731c6d6a8f9467308308"),
         from_hex(kGcmIv), {}, gcm_pt,
         from_hex("42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
                  "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985"),
         from_hex("4d5c2af327cd64a62cf35abd2ba6fab4")},
        {"GcmSpecTestCase4", AeadAlg::AES_128_GCM, from_hex("feffe9928665731c6d6a8f9467308308"),
         from_hex(kGcmIv), from_hex(kGcmAad), gcm_pt60,
         from_hex("42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
                  "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091"),
         from_hex("5bc94fbc3221a5db94fae95ae7121a47")},
        {"GcmSpecTestCase13", AeadAlg::AES_256_GCM, zero32, zero12, {}, {}, {},
         from_hex("530f8afbc74536b9a963b4f1c4cb738b")},
        {"GcmSpecTestCase14", AeadAlg::AES_256_GCM, zero32, zero12, {}, zero16,
         from_hex("cea7403d4d606b6e074ec5d3baf39d18"), from_hex("d0d1c8a799996bf0265b98b5d48ab919")},
        {"GcmSpecTestCase15", AeadAlg::AES_256_GCM,
         from_hex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"), from_hex(kGcmIv), {},
         gcm_pt,
         from_hex("522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
                  "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad"),
         from_hex("b094dac5d93471bdec1a502270e3cc6c")},
        {"GcmSpecTestCase16", AeadAlg::AES_256_GCM,
         from_hex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"), from_hex(kGcmIv),
         from_hex(kGcmAad), gcm_pt60,
         from_hex("522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
                  "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"),
         from_hex("76fc6ece0f4e1768cddf8853bb2d551b")},
    };
}

// The typed vectors have the shapes their documents state.
TEST(AeadVectors, PublishedVectorsHaveTheirStatedLengths) {
    EXPECT_EQ(kSunscreen.size(), 114u);
    EXPECT_EQ(kDraftBoilerplate.size(), 265u);
    for (const Vector& v : published_vectors()) {
        SCOPED_TRACE(v.name);
        EXPECT_EQ(v.key.size(), key_size(v.alg));
        EXPECT_EQ(v.nonce.size(), nonce_size(v.alg));
        EXPECT_EQ(v.ciphertext.size(), v.plaintext.size());
        EXPECT_EQ(v.tag.size(), tag_size);
    }
}

class AeadPublished : public ::testing::TestWithParam<Vector> {};

TEST_P(AeadPublished, SealMatchesPublishedCiphertextAndTag) {
    const Vector& v = GetParam();
    const Bytes sealed = aead_seal(v.alg, v.key, v.nonce, v.aad, v.plaintext);
    ASSERT_EQ(sealed.size(), v.plaintext.size() + tag_size);
    EXPECT_EQ(to_hex(std::span(sealed).first(v.plaintext.size())), to_hex(v.ciphertext));
    EXPECT_EQ(to_hex(std::span(sealed).last(tag_size)), to_hex(v.tag));
}

TEST_P(AeadPublished, OpenOfPublishedCiphertextAndTagRecoversPlaintext) {
    const Vector& v = GetParam();
    const auto opened = aead_open(v.alg, v.key, v.nonce, v.aad, concat(v.ciphertext, v.tag));
    ASSERT_TRUE(opened.has_value());
    EXPECT_EQ(to_hex(*opened), to_hex(v.plaintext));
}

TEST_P(AeadPublished, AReusedKeyObjectSealsAndOpensThePublishedVectorTwiceInARow) {
    const Vector& v = GetParam();
    AeadKey k(v.alg, v.key);
    Bytes out, plain;
    for (int round = 0; round < 2; ++round) { // the second message reuses the contexts and buffers
        k.seal(v.nonce, v.aad, v.plaintext, out);
        EXPECT_EQ(to_hex(std::span(out).first(v.plaintext.size())), to_hex(v.ciphertext)) << round;
        EXPECT_EQ(to_hex(std::span(out).last(tag_size)), to_hex(v.tag)) << round;
        ASSERT_TRUE(k.open(v.nonce, v.aad, concat(v.ciphertext, v.tag), plain)) << round;
        EXPECT_EQ(to_hex(plain), to_hex(v.plaintext)) << round;
    }
    Bytes bad = concat(v.ciphertext, v.tag);
    bad.front() ^= 0x01;
    EXPECT_FALSE(k.open(v.nonce, v.aad, bad, plain));
    EXPECT_TRUE(plain.empty());
    // and a good message after the failure still opens
    EXPECT_TRUE(k.open(v.nonce, v.aad, concat(v.ciphertext, v.tag), plain));
}

TEST_P(AeadPublished, OpenOfPublishedCiphertextWithFlippedTagBitFails) {
    const Vector& v = GetParam();
    Bytes input = concat(v.ciphertext, v.tag);
    input.back() ^= 0x80;
    EXPECT_EQ(aead_open(v.alg, v.key, v.nonce, v.aad, input), std::nullopt);
}

INSTANTIATE_TEST_SUITE_P(Published, AeadPublished, ::testing::ValuesIn(published_vectors()),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- properties per algorithm ----------------------------------------------

class AeadProperties : public ::testing::TestWithParam<AeadAlg> {
public:
    struct Sealed {
        Bytes key, nonce, aad, plaintext, sealed;
    };
    Sealed make(std::mt19937& rng, std::size_t pt_len, std::size_t aad_len) const {
        const AeadAlg alg = GetParam();
        Sealed s{random_bytes(rng, key_size(alg)), random_bytes(rng, nonce_size(alg)), random_bytes(rng, aad_len),
                 random_bytes(rng, pt_len), {}};
        s.sealed = aead_seal(alg, s.key, s.nonce, s.aad, s.plaintext);
        return s;
    }
};

TEST_P(AeadProperties, RoundTripRecoversPlaintextForRandomSizes0To2048) {
    const AeadAlg alg = GetParam();
    std::mt19937 rng(0x6b647369);
    std::vector<std::size_t> sizes;
    for (std::size_t n = 0; n <= 80; ++n) sizes.push_back(n);  // every size around the 16/64-byte blocks
    std::uniform_int_distribution<std::size_t> any_size(0, 2048);
    for (int i = 0; i < 200; ++i) sizes.push_back(any_size(rng));
    sizes.push_back(2047);
    sizes.push_back(2048);

    for (std::size_t n : sizes) {
        SCOPED_TRACE("plaintext size " + std::to_string(n));
        const auto s = make(rng, n, any_size(rng) % 64);
        ASSERT_EQ(s.sealed.size(), n + tag_size);
        const auto opened = aead_open(alg, s.key, s.nonce, s.aad, s.sealed);
        ASSERT_TRUE(opened.has_value());
        EXPECT_EQ(*opened, s.plaintext);
    }
}

// Flips each bit of the input `which` picks (one at a time) and expects aead_open to refuse.
void expect_every_bit_flip_fails(AeadAlg alg, const AeadProperties::Sealed& s, Bytes AeadProperties::Sealed::*which) {
    for (std::size_t bit = 0; bit < (s.*which).size() * 8; ++bit) {
        AeadProperties::Sealed bad = s;
        (bad.*which)[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        EXPECT_EQ(aead_open(alg, bad.key, bad.nonce, bad.aad, bad.sealed), std::nullopt) << "flipped bit " << bit;
    }
}

TEST_P(AeadProperties, FlippingAnySingleCiphertextOrTagBitMakesOpenFail) {
    std::mt19937 rng(1);
    expect_every_bit_flip_fails(GetParam(), make(rng, 37, 11), &Sealed::sealed);
}

TEST_P(AeadProperties, FlippingAnySingleAadBitMakesOpenFail) {
    std::mt19937 rng(2);
    expect_every_bit_flip_fails(GetParam(), make(rng, 37, 20), &Sealed::aad);
}

TEST_P(AeadProperties, FlippingAnySingleNonceBitMakesOpenFail) {
    std::mt19937 rng(3);
    expect_every_bit_flip_fails(GetParam(), make(rng, 37, 11), &Sealed::nonce);
}

TEST_P(AeadProperties, OpenWithADifferentKeyFails) {
    const AeadAlg alg = GetParam();
    std::mt19937 rng(4);
    const auto s = make(rng, 100, 8);
    Bytes other = s.key;
    other[0] ^= 1;
    EXPECT_EQ(aead_open(alg, other, s.nonce, s.aad, s.sealed), std::nullopt);
}

TEST_P(AeadProperties, OpenOfInputShorterThanTagReturnsNulloptWithoutThrowing) {
    const AeadAlg alg = GetParam();
    const Bytes key(key_size(alg), 7), nonce(nonce_size(alg), 9);
    for (std::size_t n = 0; n < tag_size; ++n) {
        EXPECT_EQ(aead_open(alg, key, nonce, {}, Bytes(n, 0)), std::nullopt) << "input size " << n;
    }
}

TEST_P(AeadProperties, WrongKeySizeThrowsInvalidArgument) {
    const AeadAlg alg = GetParam();
    const Bytes nonce(nonce_size(alg), 0), pt(10, 1), sealed(10 + tag_size, 0);
    for (std::size_t n : {std::size_t{0}, key_size(alg) - 1, key_size(alg) + 1, std::size_t{24}}) {
        const Bytes key(n, 0);
        EXPECT_THROW(aead_seal(alg, key, nonce, {}, pt), std::invalid_argument) << "key size " << n;
        EXPECT_THROW(aead_open(alg, key, nonce, {}, sealed), std::invalid_argument) << "key size " << n;
    }
}

TEST_P(AeadProperties, WrongNonceSizeThrowsInvalidArgument) {
    const AeadAlg alg = GetParam();
    const Bytes key(key_size(alg), 0), pt(10, 1), sealed(10 + tag_size, 0);
    for (std::size_t n : {std::size_t{0}, std::size_t{8}, std::size_t{11}, std::size_t{13}, std::size_t{16}}) {
        const Bytes nonce(n, 0);
        EXPECT_THROW(aead_seal(alg, key, nonce, {}, pt), std::invalid_argument) << "nonce size " << n;
        EXPECT_THROW(aead_open(alg, key, nonce, {}, sealed), std::invalid_argument) << "nonce size " << n;
    }
}

INSTANTIATE_TEST_SUITE_P(AllAlgs, AeadProperties, ::testing::ValuesIn(kAllAlgs),
                         [](const auto& info) { return param_name(info.param); });

// ---- names and sizes -------------------------------------------------------

TEST(AeadAlgNames, RoundTripThroughKernelStyleNames) {
    EXPECT_EQ(to_string(AeadAlg::CHACHA20_POLY1305), "chacha20-poly1305");
    EXPECT_EQ(to_string(AeadAlg::AES_128_GCM), "aes-128-gcm");
    EXPECT_EQ(to_string(AeadAlg::AES_256_GCM), "aes-256-gcm");
    for (AeadAlg alg : kAllAlgs) EXPECT_EQ(aead_alg_from_string(to_string(alg)), alg);
}

TEST(AeadAlgNames, UnknownOrDifferentlySpelledNamesAreRejected) {
    for (std::string_view name : {"", "chacha20", "CHACHA20-POLY1305", "aes128-gcm", "aes-128-gcm ", "gcm(aes)",
                                  "rfc7539(chacha20,poly1305)", "aes-192-gcm"}) {
        EXPECT_EQ(aead_alg_from_string(name), std::nullopt) << name;
    }
}

TEST(AeadAlgSizes, MatchRfc8439AndNistSp800_38d) {
    EXPECT_EQ(key_size(AeadAlg::CHACHA20_POLY1305), 32u);
    EXPECT_EQ(key_size(AeadAlg::AES_128_GCM), 16u);
    EXPECT_EQ(key_size(AeadAlg::AES_256_GCM), 32u);
    for (AeadAlg alg : kAllAlgs) EXPECT_EQ(nonce_size(alg), 12u);
    EXPECT_EQ(tag_size, 16u);
}

}  // namespace
}  // namespace kdsim::crypto
