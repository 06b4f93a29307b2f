// Cipher and AEAD primitives of kdsim calibrate (docs/calibration.md, "Ciphers"): which OpenSSL 3.0
// x86-64 code path each implementation name selects, the OPENSSL_ia32cap masks that force them, and
// the measurement in a child process (the variable is read once, when libcrypto starts).
//
// Primitives: the EVP AEADs chacha20-poly1305, aes128-gcm, aes256-gcm (encryption including the
// tag), the EVP stream ciphers chacha20 and aes128-ctr, and Poly1305 through EVP_MAC "POLY1305".
// Implementation names: generic, ssse3, avx, avx2, avx512, aesni, vaes. No cipher is implemented here:
// every byte goes through OpenSSL.
#pragma once

#include "calibrate/calibrate.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kdsim::calibrate {

extern const char* const CIPHER_PRIMS[6]; // chacha20 poly1305 chacha20-poly1305 aes128-ctr aes128-gcm aes256-gcm
extern const char* const CIPHER_IMPLS[7]; // generic ssse3 avx avx2 avx512 aesni vaes
bool is_cipher_prim(const std::string& name);
bool is_cipher_impl(const std::string& name);

// The OPENSSL_ia32cap value that forces `impl` for the cipher primitives (OpenSSL 3.0 format
// "~0x<bits of P0|P1<<32>:~0x<bits of P2|P3<<32>"); std::invalid_argument for another name.
//   generic: every SIMD/crypto extension cleared (the same mask as the hashes' generic)
//   ssse3:   PCLMULQDQ, AES-NI, AVX and everything VEX/EVEX-encoded, SHA, BMI cleared
//   aesni:   AVX and everything VEX/EVEX-encoded, SHA, BMI cleared (AES-NI, PCLMULQDQ, SSSE3 kept)
//   avx2:    XOP, AVX-512 and VAES/VPCLMULQDQ cleared
//   vaes:    XOP and AVX-512 cleared (VEX-encoded VAES/VPCLMULQDQ kept)
//   avx512:  XOP cleared only
std::string cipher_ia32cap_mask(const std::string& impl);

// OpenSSL 3.0's capability vector OPENSSL_ia32cap_P[0..3] as OPENSSL_ia32_cpuid
// (crypto/x86_64cpuid.pl) computes it from the CPU's CPUID words and XCR0.
struct Ia32Cap {
    std::uint32_t p[4] = {0, 0, 0, 0};
    bool bit(int vec, int n) const { return (p[vec] >> n) & 1u; }
};
Ia32Cap openssl_capabilities(const CpuFeatures& cpu);
// Applies an OPENSSL_ia32cap value as crypto/cpuid.c does ("~A:~B" clears, "A:B" replaces; without
// ":B", P2 and P3 are zeroed). Throws std::invalid_argument when it is not of that form.
Ia32Cap apply_ia32cap(Ia32Cap caps, const std::string& value);

// The code path OpenSSL 3.0's x86-64 dispatch runs for `prim` with these capabilities: one of
// CIPHER_IMPLS, or a label without a [cipher] name ("avx", "xop", "aesni+4bit-ghash", ...).
// Mirrors chacha-x86_64.pl (ChaCha20_ctr32), poly1305-x86_64.pl (poly1305_init), gcm128.c
// (CRYPTO_gcm128_init), providers' cipher_aes_hw.c / cipher_aes_gcm_hw.c (AESNI_CAPABLE,
// BSAES_CAPABLE) and AES_GCM_ASM (aesni-gcm-x86_64.pl).
std::string openssl_cipher_path(const Ia32Cap& caps, const std::string& prim);
// What that path is, in words (for sources and messages).
std::string describe_cipher_path(const std::string& prim, const std::string& path);
// The path `impl`'s mask makes OpenSSL run for `prim` on this CPU.
std::string forced_cipher_path(const CpuFeatures& cpu, const std::string& prim, const std::string& impl);
// Why `impl` of `prim` cannot be measured on this CPU with this OpenSSL, or nullopt when its mask
// makes OpenSSL run exactly that code: the CPU lacks the instructions, or the dispatch runs another
// path (then the message names it).
std::optional<std::string> cipher_unavailable(const CpuFeatures& cpu, const std::string& prim, const std::string& impl);

// Child side of a cipher measurement: prints "check <digest>" (cipher_reference_digest), then per
// size "len median q1 q3 n attempts noisy", cycles per call. A call is: the IV (nonce) set on the
// keyed context, EVP_EncryptUpdate over len bytes, EVP_EncryptFinal_ex, and for AEADs the 16-byte
// tag read; for Poly1305 EVP_MAC_init with a fresh one-time key, update, final. The key schedule is
// set once per context (as a kernel sets a key once per SA), not per call. No AAD.
int cipher_child(const MeasureSpec& spec);
// Hex SHA-256 over the outputs (ciphertext and tag, or the MAC) of `prim` on fixed keys, nonces and
// inputs of 16, 100, 129, 300, 1000, 4100 and 65536 bytes: the same in every process whose code
// path is correct. Runs in this process with its capabilities.
std::string cipher_reference_digest(const std::string& prim);
// Parent side: runs the child with cipher_ia32cap_mask(impl) and checks its digest against this
// process's. Throws std::runtime_error when the child fails or computes a different result.
HashRun spawn_cipher_measurement(const std::string& exe, const std::string& prim, const std::string& impl,
                                 const std::vector<std::size_t>& sizes, int samples, int cpu);

// ---- the whole set, as `kdsim calibrate` runs it --------------------------------------------------

struct CipherMeasurement {
    std::string prim, impl; // impl: the [cipher] name, or (named == false) the mask that ran `path`
    std::string path;       // openssl_cipher_path under that mask
    HashRun run;            // points per size (combined over the child processes) and the fit
    bool named = true;      // false: a path without a [cipher] name (e.g. AES-GCM's AVX code), kept for comments
};
struct CipherPlan {
    std::string exe;
    std::vector<std::size_t> sizes;
    int samples = 11;
    int runs = 1; // child processes per implementation (median per size, their range in the spread)
    int cpu = 0;
};
// For every primitive (in CIPHER_PRIMS order) and implementation name: measures it when its mask
// makes OpenSSL run that path (cipher_unavailable), else appends "cipher.<prim>.<impl>: <why>" to
// *unavailable; a path without a [cipher] name that a mask selects is measured once, unnamed.
// `progress` is called once per primitive, `report` after each measurement (both may be empty).
std::vector<CipherMeasurement> measure_ciphers(const CpuFeatures& cpu, const CipherPlan& plan,
                                               std::vector<std::string>* unavailable,
                                               const std::function<void(const std::string&)>& progress,
                                               const std::function<void(const CipherMeasurement&)>& report);

// The profile text for the named measurements: per primitive (generic first) a table
//   [cipher.<prim>.<impl>]
//   cycles_per_byte = { value = <float>, unit = "cycles/byte", source = "<cpu>, <date>, measured by kdsim calibrate: ..." }
//   cycles_per_call = { value = <integer>, unit = "cycles", source = "..." }
//   curve = { value = [[<bytes>, <integer cycles>], ...], unit = "cycles", source = "..." }
// (curve: the median of every measured size, as measured),
// per-byte carrying the spread at the largest size, per-call the spread at the smallest; a negative
// fitted intercept is written as 0 and said so. Throws std::logic_error when a primitive that has a
// named measurement lacks its generic one.
std::string cipher_tables_toml(const std::vector<CipherMeasurement>& ms, const std::string& cpu_model,
                               const std::string& date, bool quick);
// Comment lines ("# measured: ...") for the unnamed paths.
std::vector<std::string> cipher_unnamed_notes(const std::vector<CipherMeasurement>& ms);

} // namespace kdsim::calibrate
