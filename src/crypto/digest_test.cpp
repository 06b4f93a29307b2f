// GoogleTest suite for kdsim::crypto digests. Expected digests are typed in
// from the published standards documents cited next to each test (FIPS 180-2
// appendices and NIST CAVP SHAVS vectors), never produced by the code under
// test; they were cross-checked against GNU coreutils sha1sum, sha256sum and
// sha512sum, an implementation independent of OpenSSL. Further tests cover
// chunked streaming against one-shot hashing, reset/move behaviour, the
// algorithm-name mapping and hex formatting.
#include "crypto/digest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kdsim::crypto {

// Lets GoogleTest print "sha256" instead of the enum's raw bytes.
void PrintTo(HashAlg alg, std::ostream* os) { *os << to_string(alg); }

namespace {

std::span<const std::uint8_t> bytes_of(std::string_view s) {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

std::string hex_digest(HashAlg alg, std::string_view msg) { return to_hex(digest(alg, bytes_of(msg))); }

constexpr std::string_view kAbc = "abc";
constexpr std::string_view kMsg448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
constexpr std::string_view kMsg896 =
    "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";

const std::string& million_a() {
    static const std::string s(1'000'000, 'a');
    return s;
}

// The vectors themselves are what they claim to be.
TEST(Digest, PublishedMessagesHaveTheirStatedBitLengths) {
    EXPECT_EQ(kMsg448.size() * 8, 448u);
    EXPECT_EQ(kMsg896.size() * 8, 896u);
}

// ---- SHA-1 -----------------------------------------------------------------

// FIPS 180-2, Appendix A.1 (SHA-1 example, one-block message "abc").
TEST(Digest, Sha1OfAbcMatchesFips180Example) {
    EXPECT_EQ(hex_digest(HashAlg::SHA1, kAbc), "a9993e364706816aba3e25717850c26c9cd0d89d");
}

// FIPS 180-2, Appendix A.2 (SHA-1 example, multi-block 448-bit message).
TEST(Digest, Sha1Of448BitMessageMatchesFips180Example) {
    EXPECT_EQ(hex_digest(HashAlg::SHA1, kMsg448), "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
}

// FIPS 180-2, Appendix A.3 (SHA-1 example, one million repetitions of 'a').
TEST(Digest, Sha1OfMillionAMatchesFips180Example) {
    EXPECT_EQ(hex_digest(HashAlg::SHA1, million_a()), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

// NIST CAVP SHAVS byte-oriented vectors, SHA1ShortMsg.rsp, Len = 0.
TEST(Digest, Sha1OfEmptyMessageMatchesCavpShortMsgLen0) {
    EXPECT_EQ(hex_digest(HashAlg::SHA1, ""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
}

// ---- SHA-256 ---------------------------------------------------------------

// FIPS 180-2, Appendix B.1 (SHA-256 example, one-block message "abc").
TEST(Digest, Sha256OfAbcMatchesFips180Example) {
    EXPECT_EQ(hex_digest(HashAlg::SHA256, kAbc),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// FIPS 180-2, Appendix B.2 (SHA-256 example, multi-block 448-bit message).
TEST(Digest, Sha256Of448BitMessageMatchesFips180Example) {
    EXPECT_EQ(hex_digest(HashAlg::SHA256, kMsg448),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

// FIPS 180-2, Appendix B.3 (SHA-256 example, one million repetitions of 'a').
TEST(Digest, Sha256OfMillionAMatchesFips180Example) {
    EXPECT_EQ(hex_digest(HashAlg::SHA256, million_a()),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// NIST CAVP SHAVS byte-oriented vectors, SHA256ShortMsg.rsp, Len = 0.
TEST(Digest, Sha256OfEmptyMessageMatchesCavpShortMsgLen0) {
    EXPECT_EQ(hex_digest(HashAlg::SHA256, ""),
              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

// ---- SHA-512 ---------------------------------------------------------------

// FIPS 180-2, Appendix C.1 (SHA-512 example, one-block message "abc").
TEST(Digest, Sha512OfAbcMatchesFips180Example) {
    EXPECT_EQ(hex_digest(HashAlg::SHA512, kAbc),
              "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
              "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
}

// FIPS 180-2, Appendix C.2 (SHA-512 example, multi-block 896-bit message).
TEST(Digest, Sha512Of896BitMessageMatchesFips180Example) {
    EXPECT_EQ(hex_digest(HashAlg::SHA512, kMsg896),
              "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018"
              "501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909");
}

// FIPS 180-2, Appendix C.3 (SHA-512 example, one million repetitions of 'a').
TEST(Digest, Sha512OfMillionAMatchesFips180Example) {
    EXPECT_EQ(hex_digest(HashAlg::SHA512, million_a()),
              "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973eb"
              "de0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b");
}

// NIST CAVP SHAVS byte-oriented vectors, SHA512ShortMsg.rsp, Len = 0.
TEST(Digest, Sha512OfEmptyMessageMatchesCavpShortMsgLen0) {
    EXPECT_EQ(hex_digest(HashAlg::SHA512, ""),
              "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
              "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e");
}

// ---- streaming -------------------------------------------------------------

// Chunk sizes straddle the 64-byte SHA-1/SHA-256 block and, with 127/128/129,
// the 128-byte SHA-512 block.
class DigestStreaming : public ::testing::TestWithParam<HashAlg> {};

TEST_P(DigestStreaming, ChunkedUpdatesEqualOneShot) {
    const HashAlg alg = GetParam();
    std::vector<std::uint8_t> msg(1000);
    for (std::size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<std::uint8_t>(i * 131 + 7);
    const auto expected = digest(alg, msg);
    ASSERT_EQ(expected.size(), digest_size(alg));

    for (std::size_t chunk : {1u, 63u, 64u, 65u, 127u, 128u, 129u}) {
        Digest d(alg);
        for (std::size_t off = 0; off < msg.size(); off += chunk) {
            d.update(std::span(msg).subspan(off, std::min(chunk, msg.size() - off)));
        }
        EXPECT_EQ(to_hex(d.final()), to_hex(expected)) << to_string(alg) << " chunk " << chunk;
    }
}

TEST_P(DigestStreaming, ChunkedMillionAEqualsOneShot) {
    const HashAlg alg = GetParam();
    const auto expected = digest(alg, bytes_of(million_a()));
    for (std::size_t chunk : {1u, 63u, 64u, 65u}) {
        Digest d(alg);
        const auto all = bytes_of(million_a());
        for (std::size_t off = 0; off < all.size(); off += chunk) {
            d.update(all.subspan(off, std::min(chunk, all.size() - off)));
        }
        EXPECT_EQ(d.final(), expected) << to_string(alg) << " chunk " << chunk;
    }
}

TEST_P(DigestStreaming, ResetAfterFinalStartsAFreshHash) {
    const HashAlg alg = GetParam();
    Digest d(alg);
    d.update(bytes_of("garbage that must not leak into the next hash"));
    (void)d.final();
    d.reset();
    d.update(bytes_of(kAbc));
    EXPECT_EQ(d.final(), digest(alg, bytes_of(kAbc)));
}

TEST_P(DigestStreaming, ResetMidStreamDiscardsEarlierInput) {
    const HashAlg alg = GetParam();
    Digest d(alg);
    d.update(bytes_of(kMsg448));
    d.reset();
    d.update(bytes_of(kAbc));
    EXPECT_EQ(d.final(), digest(alg, bytes_of(kAbc)));
}

TEST_P(DigestStreaming, UpdateOrFinalAfterFinalWithoutResetThrows) {
    Digest d(GetParam());
    (void)d.final();
    EXPECT_THROW(d.update(bytes_of(kAbc)), std::logic_error);
    EXPECT_THROW((void)d.final(), std::logic_error);
}

TEST_P(DigestStreaming, MovedDigestContinuesTheSameStream) {
    const HashAlg alg = GetParam();
    Digest a(alg);
    a.update(bytes_of("ab"));
    Digest b(std::move(a));
    b.update(bytes_of("c"));
    EXPECT_EQ(b.final(), digest(alg, bytes_of(kAbc)));

    EXPECT_THROW(a.update(bytes_of(kAbc)), std::logic_error);  // NOLINT(bugprone-use-after-move)
    a.reset();
    a.update(bytes_of(kAbc));
    EXPECT_EQ(a.final(), digest(alg, bytes_of(kAbc)));

    Digest c(HashAlg::SHA1);
    c = std::move(b);
    EXPECT_EQ(c.alg(), alg);
    c.reset();
    c.update(bytes_of(kAbc));
    EXPECT_EQ(c.final(), digest(alg, bytes_of(kAbc)));
}

INSTANTIATE_TEST_SUITE_P(AllAlgs, DigestStreaming,
                         ::testing::Values(HashAlg::SHA1, HashAlg::SHA256, HashAlg::SHA512),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// ---- names, sizes, hex -----------------------------------------------------

TEST(HashAlgNames, RoundTripThroughKernelStyleNames) {
    for (HashAlg alg : {HashAlg::SHA1, HashAlg::SHA256, HashAlg::SHA512}) {
        EXPECT_EQ(hash_alg_from_string(to_string(alg)), alg);
    }
    EXPECT_EQ(to_string(HashAlg::SHA1), "sha1");
    EXPECT_EQ(to_string(HashAlg::SHA256), "sha256");
    EXPECT_EQ(to_string(HashAlg::SHA512), "sha512");
}

TEST(HashAlgNames, UnknownOrDifferentlySpelledNamesAreRejected) {
    for (std::string_view bad : {"", "md5", "sha224", "SHA256", "sha-256", "sha256 ", "sha"}) {
        EXPECT_FALSE(hash_alg_from_string(bad).has_value()) << '"' << bad << '"';
    }
}

// Output and block sizes as specified in FIPS 180-2, Section 1, Figure 1.
TEST(HashAlgSizes, MatchFips180Figure1) {
    EXPECT_EQ(digest_size(HashAlg::SHA1), 20u);
    EXPECT_EQ(digest_size(HashAlg::SHA256), 32u);
    EXPECT_EQ(digest_size(HashAlg::SHA512), 64u);
    EXPECT_EQ(block_size(HashAlg::SHA1), 64u);
    EXPECT_EQ(block_size(HashAlg::SHA256), 64u);
    EXPECT_EQ(block_size(HashAlg::SHA512), 128u);
}

TEST(HashAlgSizes, OneShotOutputLengthEqualsDigestSize) {
    for (HashAlg alg : {HashAlg::SHA1, HashAlg::SHA256, HashAlg::SHA512}) {
        EXPECT_EQ(digest(alg, bytes_of(kAbc)).size(), digest_size(alg));
    }
}

TEST(ToHex, WritesTwoLowerCaseDigitsPerByte) {
    const std::array<std::uint8_t, 5> b{0x00, 0x0f, 0xa0, 0xff, 0x5c};
    EXPECT_EQ(to_hex(b), "000fa0ff5c");
    EXPECT_EQ(to_hex(std::span<const std::uint8_t>{}), "");
}

}  // namespace
}  // namespace kdsim::crypto
