// kdsim calibrate: measures this machine's primitives (x86-64 Linux, user space) and writes a
// complete kdsim profile. docs/calibration.md describes what is measured and how.
//
// Timing base: the TSC (RDTSC/RDTSCP fenced with LFENCE), its frequency established against
// CLOCK_MONOTONIC; the measuring thread pinned to one CPU; warm-up, repeated samples, median and
// spread = IQR / median; a spread above a bound repeats the measurement, then warns and marks the
// figure's source.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kdsim::calibrate {

// ---- statistics -------------------------------------------------------------------------------

struct Stats {
    double median = 0;
    double q1 = 0;
    double q3 = 0;
    double spread = 0; // (q3 - q1) / median; 0 when the median is 0
    std::size_t n = 0;
};
// Quartiles by linear interpolation between order statistics (type 7). Empty input: all zero.
Stats summarize(std::vector<double> samples);

struct LineFit {
    double intercept = 0;
    double slope = 0;
};
// Weighted least squares fit of y = intercept + slope * x (weights default to 1). Throws
// std::invalid_argument for fewer than two distinct x or mismatched lengths.
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y, std::vector<double> w = {});

// A measured figure: samples summarised, how many times the measurement was taken, and whether
// its spread stayed above the bound after all repeats.
struct Measured {
    Stats stats;
    int attempts = 1;
    bool noisy = false;
    double bound = 0;
};
// Calls sample() `warmup` times, then `n` times; when the spread exceeds `bound`, measures again
// (up to `max_attempts` in all) and keeps the attempt with the smallest spread.
Measured measure(const std::function<double()>& sample, int n, int warmup, double bound, int max_attempts);

// ---- machine ----------------------------------------------------------------------------------

struct CpuFeatures {
    std::string vendor;
    std::string model; // /proc/cpuinfo "model name"
    bool ssse3 = false, avx = false, avx2 = false, bmi1 = false, bmi2 = false, sha = false, xop = false;
    bool osxsave = false, xsaveopt = false, xsavec = false, clflush = false, clflushopt = false;
    bool avx512f = false;
    bool aes = false, pclmul = false, movbe = false, vaes = false, vpclmulqdq = false;
    unsigned cache_line = 0; // CPUID.1:EBX[15:8] * 8
    std::uint64_t xcr0 = 0;
    // The raw CPUID words OpenSSL builds its capability vector from (OPENSSL_ia32_cpuid):
    // leaf 1 EAX (signature), ECX, EDX; leaf 7.0 EBX, ECX; leaf 0x80000001 ECX (AMD XOP).
    std::uint32_t leaf1_eax = 0, leaf1_ecx = 0, leaf1_edx = 0, leaf7_ebx = 0, leaf7_ecx = 0, ext1_ecx = 0;
    bool intel() const { return vendor == "GenuineIntel"; }
};
CpuFeatures detect_cpu();

struct TscInfo {
    double hz = 0;          // measured against CLOCK_MONOTONIC
    double cpuid_hz = 0;    // CPUID 0x15 when it states it, else 0
    bool invariant = false; // constant_tsc + nonstop_tsc
    Stats stats;
};
TscInfo measure_tsc(int windows, double window_s);

// Pins the calling thread to `cpu`; false when the kernel refuses.
bool pin_to_cpu(int cpu);
// The CPUs this process may run on.
std::vector<int> allowed_cpus();
// `rel` (a file, or a directory when `directory`) below the first directory at or above the
// working directory, then the binary `exe`, then the source tree, that holds it.
std::optional<std::filesystem::path> find_in_tree(const std::filesystem::path& rel, const std::string& exe,
                                                  bool directory);
// The time now in UTC, as strftime `format` writes it ("%Y-%m-%d").
std::string utc_now(const char* format);

// ---- hashes (run in a child process so that OPENSSL_ia32cap is read at OpenSSL's start) --------

extern const char* const HASH_ALGS[3];  // sha1 sha256 sha512
extern const char* const HASH_IMPLS[5]; // generic ssse3 avx avx2 shani

// The OPENSSL_ia32cap value that forces `impl` (OpenSSL 3.0 format "~0x<P0|P1>:~0x<P2|P3>").
std::string ia32cap_mask(const std::string& impl);
// Why OpenSSL cannot run `impl` of `alg` on this CPU, or nullopt when it can: the CPU lacks the
// instructions, or OpenSSL 3.0's dispatch (sha*-x86_64.pl) would pick another path.
std::optional<std::string> hash_unavailable(const CpuFeatures& cpu, const std::string& alg, const std::string& impl);

struct HashPoint {
    std::size_t len = 0;
    Measured cycles; // per call
};
struct HashRun {
    std::vector<HashPoint> points;
    LineFit fit; // cycles(len) = per_call + per_byte * len, weighted by 1/cycles^2 (relative error);
                 // left zero when only one size was measured
};
bool is_hash_alg(const std::string& name);

// A child measurement: "alg:impl:len,len,...:samples:cpu". `alg` is a hash (HASH_ALGS, impl one of
// HASH_IMPLS) or a cipher primitive (CIPHER_PRIMS in ciphers.h, impl one of CIPHER_IMPLS).
struct MeasureSpec {
    std::string alg, impl;
    std::vector<std::size_t> sizes; // 1 B .. 1 MiB each
    int samples = 0;
    int cpu = 0;
    bool cipher = false;
};
// Throws std::invalid_argument with a message naming what is wrong (unknown algorithm, unknown
// implementation name for that algorithm's family, a bad size, count or CPU number).
MeasureSpec parse_measure_spec(const std::string& spec);
// The OPENSSL_ia32cap value the child for this spec runs with (ia32cap_mask or cipher_ia32cap_mask).
std::string spec_mask(const MeasureSpec& m);

// Child side (`kdsim calibrate --internal-measure SPEC`): rejects a bad spec, or an OPENSSL_ia32cap
// that is not spec_mask(spec), with exit status 2; then measures each size (hashes: EVP
// init/update/final on one reused context; ciphers: see ciphers.h) and prints one line per size,
// "len median q1 q3 n attempts noisy" (cipher children first print "check <hex digest>").
int internal_measure(const std::string& spec);
// Parent side: runs `exe calibrate --internal-measure SPEC` with OPENSSL_ia32cap=mask and returns
// what it printed. Throws std::runtime_error when the child fails.
std::string run_measuring_child(const std::string& exe, const std::string& spec, const std::string& mask,
                                const std::string& what);
// Child side: prints the point line for one size that parse_child_points reads back.
void print_child_point(std::size_t len, const Measured& r);
// Parses a child's output (n_sizes point lines; a "check" line goes to *check when given).
HashRun parse_child_points(const std::string& text, std::size_t n_sizes, const std::string& what, std::string* check);
HashRun spawn_hash_measurement(const std::string& exe, const std::string& alg, const std::string& impl,
                               const std::vector<std::size_t>& sizes, int samples, int cpu);
// Fits the line to measured points.
LineFit fit_hash(const std::vector<HashPoint>& points);
// Several child processes' runs of one measurement: median per size; spread = the larger of the
// within-process spread and the range between processes (NOISY above 5 %); fit redone.
HashRun combine_runs(const std::vector<HashRun>& runs);

// ---- the other primitives ---------------------------------------------------------------------

struct XsaveResult {
    std::uint32_t state_size = 0; // CPUID 0xD.0:EBX (standard format, XCR0 components)
    std::uint32_t compact_size = 0; // CPUID 0xD.1:EBX (compacted, XCR0|XSS)
    Measured save, restore;
    std::string save_insn;
};
XsaveResult measure_xsave(const CpuFeatures& cpu, int samples);

// ---- the command ------------------------------------------------------------------------------

struct Options {
    std::string out = "calibrated.toml";
    bool quick = false;
    std::string base = "x86/intel-icelake-server";
    std::string exe; // this binary, for the child processes
    // Also write one profile per round of the [memory] measurements beside `out`
    // (<stem>.round<k>.toml): the same profile with that round's [memory] figures alone
    // (kdsim validate's prediction range).
    bool round_profiles = false;
};
// The file round k (from 1) of `out` goes to with Options::round_profiles: <stem>.round<k>.toml.
std::filesystem::path round_profile_path(const std::filesystem::path& out, int k);
// Exit status: 0 written, 2 bad input (unwritable path, unknown base), 3 internal error.
int run(const Options& o);

} // namespace kdsim::calibrate
