// Timing base, statistics, CPU detection and the in-process measurements of kdsim calibrate.
#include "calibrate/calibrate.h"
#include "calibrate/ciphers.h"
#include "calibrate/tsc.h"

#include <openssl/evp.h>

#include <cpuid.h>
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace kdsim::calibrate {

// ---- statistics -------------------------------------------------------------------------------

static double quantile(const std::vector<double>& s, double p) {
    if (s.empty()) return 0;
    double pos = p * static_cast<double>(s.size() - 1);
    auto lo = static_cast<std::size_t>(std::floor(pos));
    std::size_t hi = std::min(lo + 1, s.size() - 1);
    double frac = pos - static_cast<double>(lo);
    return s[lo] + (s[hi] - s[lo]) * frac;
}

Stats summarize(std::vector<double> v) {
    Stats st;
    st.n = v.size();
    if (v.empty()) return st;
    std::sort(v.begin(), v.end());
    st.median = quantile(v, 0.5);
    st.q1 = quantile(v, 0.25);
    st.q3 = quantile(v, 0.75);
    st.spread = st.median != 0 ? (st.q3 - st.q1) / std::fabs(st.median) : 0;
    return st;
}

LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y, std::vector<double> w) {
    if (x.size() != y.size() || (!w.empty() && w.size() != x.size()))
        throw std::invalid_argument("fit_line: x, y and w differ in length");
    if (w.empty()) w.assign(x.size(), 1.0);
    double sw = 0, sx = 0, sy = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        sw += w[i];
        sx += w[i] * x[i];
        sy += w[i] * y[i];
    }
    if (sw <= 0) throw std::invalid_argument("fit_line: no positive weight");
    double mx = sx / sw, my = sy / sw, sxx = 0, sxy = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        sxx += w[i] * (x[i] - mx) * (x[i] - mx);
        sxy += w[i] * (x[i] - mx) * (y[i] - my);
    }
    if (!(sxx > 0)) throw std::invalid_argument("fit_line: fewer than two distinct x");
    LineFit f;
    f.slope = sxy / sxx;
    f.intercept = my - f.slope * mx;
    return f;
}

Measured measure(const std::function<double()>& sample, int n, int warmup, double bound, int max_attempts) {
    Measured best;
    best.bound = bound;
    for (int i = 0; i < warmup; ++i) (void)sample();
    for (int attempt = 1; attempt <= std::max(1, max_attempts); ++attempt) {
        std::vector<double> v;
        v.reserve(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) v.push_back(sample());
        Stats st = summarize(std::move(v));
        if (attempt == 1 || st.spread < best.stats.spread) best.stats = st;
        best.attempts = attempt;
        if (best.stats.spread <= bound) break;
    }
    best.noisy = best.stats.spread > bound;
    return best;
}

// ---- TSC --------------------------------------------------------------------------------------

static double mono_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

static std::string cpuinfo_field(const std::string& name) {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(name, 0) == 0) {
            auto c = line.find(':');
            if (c == std::string::npos) continue;
            std::string v = line.substr(c + 1);
            v.erase(0, v.find_first_not_of(" \t"));
            return v;
        }
    }
    return "";
}

TscInfo measure_tsc(int windows, double window_s) {
    TscInfo t;
    std::vector<double> hz;
    for (int i = 0; i < windows; ++i) {
        double m0 = mono_s();
        std::uint64_t c0 = tsc_begin();
        double m1;
        do m1 = mono_s();
        while (m1 - m0 < window_s);
        std::uint64_t c1 = tsc_end();
        hz.push_back(static_cast<double>(c1 - c0) / (m1 - m0));
    }
    t.stats = summarize(hz);
    t.hz = t.stats.median;
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, nullptr) >= 0x15) {
        __cpuid_count(0x15, 0, a, b, c, d);
        if (a && b && c) t.cpuid_hz = static_cast<double>(c) * b / a;
    }
    std::string flags = " ";
    flags += cpuinfo_field("flags");
    flags += ' ';
    t.invariant = flags.find(" constant_tsc ") != std::string::npos && flags.find(" nonstop_tsc ") != std::string::npos;
    return t;
}

// ---- CPU --------------------------------------------------------------------------------------

CpuFeatures detect_cpu() {
    CpuFeatures f;
    unsigned a, b, c, d;
    __cpuid(0, a, b, c, d);
    unsigned maxleaf = a;
    char v[13];
    std::memcpy(v, &b, 4);
    std::memcpy(v + 4, &d, 4);
    std::memcpy(v + 8, &c, 4);
    v[12] = 0;
    f.vendor = v;
    f.model = cpuinfo_field("model name");
    if (f.model.empty()) f.model = f.vendor;
    __cpuid(1, a, b, c, d);
    f.leaf1_eax = a;
    f.leaf1_ecx = c;
    f.leaf1_edx = d;
    f.ssse3 = c & (1u << 9);
    f.pclmul = c & (1u << 1);
    f.movbe = c & (1u << 22);
    f.aes = c & (1u << 25);
    f.osxsave = c & (1u << 27);
    bool avx_bit = c & (1u << 28);
    f.clflush = d & (1u << 19);
    f.cache_line = ((b >> 8) & 0xff) * 8;
    if (f.osxsave) {
        unsigned lo, hi;
        asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        f.xcr0 = (static_cast<std::uint64_t>(hi) << 32) | lo;
    }
    bool ymm_os = (f.xcr0 & 6) == 6;
    f.avx = avx_bit && ymm_os;
    if (maxleaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        f.leaf7_ebx = b;
        f.leaf7_ecx = c;
        f.vaes = (c & (1u << 9)) && ymm_os;
        f.vpclmulqdq = (c & (1u << 10)) && ymm_os;
        f.bmi1 = b & (1u << 3);
        f.avx2 = (b & (1u << 5)) && ymm_os;
        f.bmi2 = b & (1u << 8);
        f.avx512f = (b & (1u << 16)) && (f.xcr0 & 0xe0) == 0xe0;
        f.clflushopt = b & (1u << 23);
        f.sha = b & (1u << 29);
    }
    if (maxleaf >= 0xd && f.osxsave) {
        __cpuid_count(0xd, 1, a, b, c, d);
        f.xsaveopt = a & 1;
        f.xsavec = a & 2;
    }
    __cpuid(0x80000000, a, b, c, d);
    if (a >= 0x80000001) {
        __cpuid(0x80000001, a, b, c, d);
        f.ext1_ecx = c;
        f.xop = c & (1u << 11);
    }
    return f;
}

std::optional<std::filesystem::path> find_in_tree(const std::filesystem::path& rel, const std::string& exe,
                                                  bool directory) {
    namespace fs = std::filesystem;
    std::error_code ec;
    std::vector<fs::path> starts = {fs::current_path(ec)};
    if (!exe.empty()) starts.push_back(fs::path(exe).parent_path());
#ifdef KDSIM_SOURCE_DIR
    starts.emplace_back(KDSIM_SOURCE_DIR);
#endif
    for (fs::path dir : starts) {
        for (; !dir.empty(); dir = dir.parent_path()) {
            const fs::path cand = dir / rel;
            if (directory ? fs::is_directory(cand, ec) : fs::is_regular_file(cand, ec)) return cand;
            if (dir == dir.parent_path()) break;
        }
    }
    return std::nullopt;
}

std::string utc_now(const char* format) {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[64];
    return std::strftime(buf, sizeof buf, format, &tm) ? buf : "";
}

bool pin_to_cpu(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return pthread_setaffinity_np(pthread_self(), sizeof s, &s) == 0;
}

std::vector<int> allowed_cpus() {
    cpu_set_t s;
    CPU_ZERO(&s);
    std::vector<int> out;
    if (sched_getaffinity(0, sizeof s, &s) != 0) return {0};
    for (int i = 0; i < CPU_SETSIZE; ++i)
        if (CPU_ISSET(i, &s)) out.push_back(i);
    return out;
}

// ---- hashes -----------------------------------------------------------------------------------

const char* const HASH_ALGS[3] = {"sha1", "sha256", "sha512"};
const char* const HASH_IMPLS[5] = {"generic", "ssse3", "avx", "avx2", "shani"};

// OpenSSL's capability vector: P0 = CPUID.1:EDX (bit 30 = "Intel CPU"), P1 = CPUID.1:ECX,
// P2 = CPUID.7.0:EBX, P3 = CPUID.7.0:ECX. OPENSSL_ia32cap="~A:~B" clears A from P0|P1<<32 and
// B from P2|P3<<32 (OpenSSL 3.0 crypto/cpuid.c, documented in OPENSSL_ia32cap(3)).
std::string ia32cap_mask(const std::string& impl) {
    const std::uint64_t SSSE3 = 1ull << (32 + 9), XOP = 1ull << (32 + 11), AVX = 1ull << (32 + 28);
    const std::uint64_t OTHER_SIMD0 = (1ull << 23) | (1ull << 25) | (1ull << 26) | // MMX SSE SSE2
                                      (1ull << 32) | (1ull << 33) | (1ull << (32 + 12)) | (1ull << (32 + 19)) |
                                      (1ull << (32 + 20)) | (1ull << (32 + 25)) | (1ull << (32 + 29));
    const std::uint64_t BMI1 = 1ull << 3, AVX2 = 1ull << 5, BMI2 = 1ull << 8, SHA = 1ull << 29;
    const std::uint64_t AVX512 = (1ull << 16) | (1ull << 17) | (1ull << 21) | (1ull << 26) | (1ull << 27) |
                                 (1ull << 28) | (1ull << 30) | (1ull << 31);
    const std::uint64_t VEC1 = (1ull << (32 + 9)) | (1ull << (32 + 10)) | (1ull << (32 + 11)); // P3: VAES VPCLMULQDQ AVX512-VNNI
    std::uint64_t m0 = 0, m1 = 0;
    if (impl == "generic") {
        m0 = SSSE3 | XOP | AVX | OTHER_SIMD0;
        m1 = BMI1 | AVX2 | BMI2 | SHA | AVX512 | VEC1;
    } else if (impl == "ssse3") {
        m0 = XOP | AVX;
        m1 = BMI1 | AVX2 | BMI2 | SHA | AVX512 | VEC1;
    } else if (impl == "avx") {
        m0 = XOP;
        m1 = BMI1 | AVX2 | BMI2 | SHA | AVX512 | VEC1;
    } else if (impl == "avx2") {
        m0 = XOP;
        m1 = SHA | AVX512;
    } else if (impl == "shani") {
        m0 = XOP;
        m1 = AVX512;
    } else {
        throw std::invalid_argument("unknown hash implementation '" + impl +
                                    "'; expected one of: generic, ssse3, avx, avx2, shani");
    }
    char buf[80];
    std::snprintf(buf, sizeof buf, "~0x%llx:~0x%llx", static_cast<unsigned long long>(m0),
                  static_cast<unsigned long long>(m1));
    return buf;
}

// The path OpenSSL 3.0's sha1-x86_64.pl / sha512-x86_64.pl dispatch picks with these features.
static std::string openssl_path(const std::string& alg, bool ssse3, bool avx, bool avx2bmi, bool sha, bool intel) {
    if (alg == "sha1") {
        if (!ssse3) return "generic";
        if (sha) return "shani";
        if (avx2bmi) return "avx2";
        if (avx && intel) return "avx";
        return "ssse3";
    }
    if (alg == "sha256") {
        if (sha) return "shani";
        if (avx2bmi) return "avx2";
        if (avx && ssse3 && intel) return "avx";
        if (ssse3) return "ssse3";
        return "generic";
    }
    // sha512: no SSSE3 and no SHA-NI path
    if (avx2bmi) return "avx2";
    if (avx && ssse3 && intel) return "avx";
    return "generic";
}

std::optional<std::string> hash_unavailable(const CpuFeatures& cpu, const std::string& alg, const std::string& impl) {
    if (impl == "ssse3" && !cpu.ssse3) return "the CPU lacks SSSE3";
    if (impl == "avx" && !cpu.avx) return "the CPU (or the OS, XCR0) lacks AVX";
    if (impl == "avx2" && !(cpu.avx2 && cpu.bmi1 && cpu.bmi2)) return "the CPU lacks AVX2+BMI1+BMI2";
    if (impl == "shani" && !cpu.sha) return "the CPU lacks the SHA extensions (sha_ni)";
    if (impl == "shani" && alg == "sha512") return "SHA-NI covers SHA-1 and SHA-256 only; no SHA-512 SHA-NI path";
    // The features left after the mask for `impl`.
    bool ssse3 = cpu.ssse3 && impl != "generic";
    bool avx = cpu.avx && impl != "generic" && impl != "ssse3";
    bool avx2bmi = cpu.avx2 && cpu.bmi1 && cpu.bmi2 && (impl == "avx2" || impl == "shani");
    bool sha = cpu.sha && impl == "shani";
    std::string path = openssl_path(alg, ssse3, avx, avx2bmi, sha, cpu.intel());
    if (path != impl) {
        std::string why = "OpenSSL 3.0 has no " + impl + " path for " + alg + " on this CPU: with " + impl +
                          " forced its dispatch runs the " + path + " code";
        if (impl == "avx" && !cpu.intel()) why += " (its AVX-only SHA paths are taken on Intel CPUs only)";
        if (impl == "ssse3" && alg == "sha512") why = "OpenSSL 3.0 has no SSSE3 SHA-512 code (it runs the generic code)";
        return why;
    }
    return std::nullopt;
}

static std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    std::istringstream in(s);
    while (std::getline(in, cur, sep)) out.push_back(cur);
    return out;
}

bool is_hash_alg(const std::string& name) {
    return std::find_if(std::begin(HASH_ALGS), std::end(HASH_ALGS), [&](const char* a) { return name == a; }) !=
           std::end(HASH_ALGS);
}

static std::string join_names(const char* const* b, const char* const* e) {
    std::string out;
    for (; b != e; ++b) out += std::string(out.empty() ? "" : ", ") + *b;
    return out;
}

static long long parse_int(const std::string& field, const std::string& what, long long lo, long long hi) {
    std::size_t used = 0;
    long long v = 0;
    try {
        v = std::stoll(field, &used, 10);
    } catch (const std::exception&) {
        used = 0;
    }
    if (field.empty() || used != field.size() || v < lo || v > hi)
        throw std::invalid_argument(what + " '" + field + "' is not an integer in " + std::to_string(lo) + ".." +
                                    std::to_string(hi));
    return v;
}

MeasureSpec parse_measure_spec(const std::string& spec) {
    auto parts = split(spec, ':');
    if (parts.size() != 5)
        throw std::invalid_argument("bad measurement spec '" + spec + "': expected alg:impl:len,len,...:samples:cpu");
    MeasureSpec m;
    m.alg = parts[0];
    m.impl = parts[1];
    if (is_hash_alg(m.alg)) {
        m.cipher = false;
        if (std::find_if(std::begin(HASH_IMPLS), std::end(HASH_IMPLS), [&](const char* i) { return m.impl == i; }) ==
            std::end(HASH_IMPLS))
            throw std::invalid_argument("unknown hash implementation '" + m.impl + "' for " + m.alg +
                                        "; expected one of: " + join_names(std::begin(HASH_IMPLS), std::end(HASH_IMPLS)));
    } else if (is_cipher_prim(m.alg)) {
        m.cipher = true;
        if (!is_cipher_impl(m.impl))
            throw std::invalid_argument("unknown cipher implementation '" + m.impl + "' for " + m.alg +
                                        "; expected one of: " +
                                        join_names(std::begin(CIPHER_IMPLS), std::end(CIPHER_IMPLS)));
    } else {
        throw std::invalid_argument("unknown algorithm '" + m.alg + "'; expected one of: " +
                                    join_names(std::begin(HASH_ALGS), std::end(HASH_ALGS)) + ", " +
                                    join_names(std::begin(CIPHER_PRIMS), std::end(CIPHER_PRIMS)));
    }
    for (const std::string& ls : split(parts[2], ','))
        m.sizes.push_back(static_cast<std::size_t>(parse_int(ls, "size", 1, 1 << 20)));
    if (m.sizes.empty()) throw std::invalid_argument("bad measurement spec '" + spec + "': no sizes");
    m.samples = static_cast<int>(parse_int(parts[3], "sample count", 1, 10000));
    m.cpu = static_cast<int>(parse_int(parts[4], "CPU number", 0, CPU_SETSIZE - 1));
    return m;
}

std::string spec_mask(const MeasureSpec& m) { return m.cipher ? cipher_ia32cap_mask(m.impl) : ia32cap_mask(m.impl); }

static int hash_child(const MeasureSpec& m) {
    const EVP_MD* md = m.alg == "sha1" ? EVP_sha1() : m.alg == "sha256" ? EVP_sha256() : EVP_sha512();
    pin_to_cpu(m.cpu);
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    unsigned char out[EVP_MAX_MD_SIZE];
    for (std::size_t len : m.sizes) {
        std::vector<unsigned char> buf(len);
        for (std::size_t i = 0; i < len; ++i) buf[i] = static_cast<unsigned char>(i * 131 + 7);
        auto sample = [&]() {
            return tsc_cycles_per_call(len, [&] {
                unsigned int ol = 0;
                if (EVP_DigestInit_ex(ctx.get(), md, nullptr) != 1 || EVP_DigestUpdate(ctx.get(), buf.data(), len) != 1 ||
                    EVP_DigestFinal_ex(ctx.get(), out, &ol) != 1)
                    throw std::runtime_error("OpenSSL digest failed");
                buf[0] ^= out[0]; // a data dependency between calls
            });
        };
        print_child_point(len, measure(sample, m.samples, 3, 0.05, 5));
    }
    std::fflush(stdout);
    return 0;
}

int internal_measure(const std::string& spec) {
    MeasureSpec m;
    try {
        m = parse_measure_spec(spec);
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "kdsim calibrate: --internal-measure: %s\n", e.what());
        return 2;
    }
    // The figures are labelled with the implementation name: refuse to measure under another mask.
    const std::string want = spec_mask(m);
    const char* have = std::getenv("OPENSSL_ia32cap");
    if (!have || want != have) {
        std::fprintf(stderr,
                     "kdsim calibrate: --internal-measure: %s %s must run with OPENSSL_ia32cap=%s (found %s); "
                     "OpenSSL reads it once, at start-up\n",
                     m.alg.c_str(), m.impl.c_str(), want.c_str(), have ? have : "it unset");
        return 2;
    }
    try {
        return m.cipher ? cipher_child(m) : hash_child(m);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kdsim calibrate: --internal-measure %s: %s\n", spec.c_str(), e.what());
        return 3;
    }
}

LineFit fit_hash(const std::vector<HashPoint>& points) {
    std::vector<double> x, y, w;
    for (const auto& p : points) {
        x.push_back(static_cast<double>(p.len));
        y.push_back(p.cycles.stats.median);
        w.push_back(1.0 / std::max(1.0, p.cycles.stats.median * p.cycles.stats.median));
    }
    return fit_line(x, y, w);
}

std::string run_measuring_child(const std::string& exe, const std::string& spec, const std::string& mask,
                                const std::string& what) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
    pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        setenv("OPENSSL_ia32cap", mask.c_str(), 1);
        execl(exe.c_str(), exe.c_str(), "calibrate", "--internal-measure", spec.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    close(fds[1]);
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw std::runtime_error("the measuring child process for " + what + " (" + exe + ") failed");
    return text;
}

void print_child_point(std::size_t len, const Measured& r) {
    std::printf("%zu %.6f %.6f %.6f %zu %d %d\n", len, r.stats.median, r.stats.q1, r.stats.q3, r.stats.n, r.attempts,
                r.noisy ? 1 : 0);
}

HashRun parse_child_points(const std::string& text, std::size_t n_sizes, const std::string& what,
                           std::string* check) {
    HashRun run;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("check ", 0) == 0) {
            if (check) *check = line.substr(6);
            continue;
        }
        std::istringstream ls(line);
        HashPoint p;
        int noisy = 0;
        if (!(ls >> p.len >> p.cycles.stats.median >> p.cycles.stats.q1 >> p.cycles.stats.q3 >> p.cycles.stats.n >>
              p.cycles.attempts >> noisy))
            throw std::runtime_error("the measuring child process for " + what + " printed '" + line + "'");
        p.cycles.noisy = noisy != 0;
        p.cycles.bound = 0.05;
        p.cycles.stats.spread =
            p.cycles.stats.median > 0 ? (p.cycles.stats.q3 - p.cycles.stats.q1) / p.cycles.stats.median : 0;
        run.points.push_back(p);
    }
    if (run.points.size() != n_sizes)
        throw std::runtime_error("the measuring child process for " + what + " gave incomplete output");
    if (run.points.size() >= 2) run.fit = fit_hash(run.points); // one size: points only
    return run;
}

static std::string spec_string(const std::string& alg, const std::string& impl, const std::vector<std::size_t>& sizes,
                               int samples, int cpu) {
    std::string lens;
    for (std::size_t s : sizes) {
        if (!lens.empty()) lens += ',';
        lens += std::to_string(s);
    }
    return alg + ":" + impl + ":" + lens + ":" + std::to_string(samples) + ":" + std::to_string(cpu);
}

HashRun spawn_hash_measurement(const std::string& exe, const std::string& alg, const std::string& impl,
                               const std::vector<std::size_t>& sizes, int samples, int cpu) {
    std::string what = alg + " " + impl;
    std::string text = run_measuring_child(exe, spec_string(alg, impl, sizes, samples, cpu), ia32cap_mask(impl), what);
    return parse_child_points(text, sizes.size(), what, nullptr);
}

HashRun spawn_cipher_measurement(const std::string& exe, const std::string& prim, const std::string& impl,
                                 const std::vector<std::size_t>& sizes, int samples, int cpu) {
    std::string what = prim + " " + impl;
    std::string text =
        run_measuring_child(exe, spec_string(prim, impl, sizes, samples, cpu), cipher_ia32cap_mask(impl), what);
    std::string check;
    HashRun r = parse_child_points(text, sizes.size(), what, &check);
    // The masked code path must compute what the unmasked one computes (a mask that left OpenSSL
    // with an inconsistent set of capabilities would show here).
    std::string want = cipher_reference_digest(prim);
    if (check != want)
        throw std::runtime_error("the " + what + " code path OpenSSL ran with OPENSSL_ia32cap=" +
                                 cipher_ia32cap_mask(impl) + " computed a different result (digest " +
                                 (check.empty() ? "missing" : check) + ", expected " + want + ")");
    return r;
}

/// Combines several child processes' runs of the same measurement: the median per size, the
/// spread the larger of the within-process spread and the range between processes.
HashRun combine_runs(const std::vector<HashRun>& rs) {
    if (rs.empty()) throw std::invalid_argument("combine_runs: no runs");
    HashRun out = rs.front();
    if (rs.size() == 1) return out;
    for (std::size_t k = 0; k < out.points.size(); ++k) {
        std::vector<double> med;
        double within = 0;
        bool noisy = false;
        int att = 1;
        for (auto& r : rs) {
            med.push_back(r.points.at(k).cycles.stats.median);
            within = std::max(within, r.points[k].cycles.stats.spread);
            noisy = noisy || r.points[k].cycles.noisy;
            att = std::max(att, r.points[k].cycles.attempts);
        }
        Stats between = summarize(med);
        double range =
            (*std::max_element(med.begin(), med.end()) - *std::min_element(med.begin(), med.end())) / between.median;
        auto& p = out.points[k].cycles;
        p.stats.median = between.median;
        p.stats.spread = std::max(within, range);
        p.stats.n = rs.front().points[k].cycles.stats.n * rs.size();
        p.attempts = att;
        p.noisy = noisy || range > 0.05;
    }
    if (out.points.size() >= 2) out.fit = fit_hash(out.points);
    return out;
}

// ---- XSAVE ------------------------------------------------------------------------------------

#define KDSIM_ALL_XMM "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
                      "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

XsaveResult measure_xsave(const CpuFeatures& cpu, int samples) {
    XsaveResult r;
    if (!cpu.osxsave) throw std::runtime_error("the OS has not enabled XSAVE (CPUID.1:ECX.OSXSAVE clear)");
    unsigned a, b, c, d;
    __cpuid_count(0xd, 0, a, b, c, d);
    r.state_size = b;
    __cpuid_count(0xd, 1, a, b, c, d);
    r.compact_size = b;
    std::size_t sz = (r.state_size + 63) / 64 * 64;
    auto* area = static_cast<unsigned char*>(std::aligned_alloc(64, sz));
    std::memset(area, 0, sz);
    unsigned lo = static_cast<unsigned>(cpu.xcr0), hi = static_cast<unsigned>(cpu.xcr0 >> 32);
    asm volatile("xsave64 (%0)" ::"r"(area), "a"(lo), "d"(hi) : "memory");
    bool opt = cpu.xsaveopt;
    r.save_insn = opt ? "XSAVEOPT" : "XSAVE";
    // Empty-bracket overhead of the fenced TSC reads, subtracted from every op.
    auto ovh_m = measure([] {
        double s = 0;
        for (int i = 0; i < 64; ++i) {
            std::uint64_t t0 = tsc_begin();
            std::uint64_t t1 = tsc_end();
            s += static_cast<double>(t1 - t0);
        }
        return s / 64;
    }, samples, 2, 1.0, 1);
    double ovh = ovh_m.stats.median;
    const int INNER = 32;
    double save_acc = 0, rest_acc = 0;
    auto one = [&]() {
        save_acc = rest_acc = 0;
        for (int i = 0; i < INNER; ++i) {
            std::uint64_t t0 = tsc_begin();
            asm volatile("xrstor64 (%0)" ::"r"(area), "a"(lo), "d"(hi) : "memory", KDSIM_ALL_XMM);
            std::uint64_t t1 = tsc_end();
            // The "user" state is live and modified, as when kernel_fpu_begin() saves it.
            if (cpu.avx)
                asm volatile("vpcmpeqd %%ymm1, %%ymm1, %%ymm1\n\tvpaddd %%ymm1, %%ymm0, %%ymm0\n\t"
                             "vpaddd %%ymm1, %%ymm8, %%ymm8" ::: "xmm0", "xmm1", "xmm8");
            else
                asm volatile("pcmpeqd %%xmm1, %%xmm1\n\tpaddd %%xmm1, %%xmm0" ::: "xmm0", "xmm1");
            std::uint64_t t2 = tsc_begin();
            if (opt)
                asm volatile("xsaveopt64 (%0)" ::"r"(area), "a"(lo), "d"(hi) : "memory");
            else
                asm volatile("xsave64 (%0)" ::"r"(area), "a"(lo), "d"(hi) : "memory");
            std::uint64_t t3 = tsc_end();
            rest_acc += static_cast<double>(t1 - t0) - ovh;
            save_acc += static_cast<double>(t3 - t2) - ovh;
        }
    };
    auto sample_pair = [&](bool want_save) {
        one();
        return (want_save ? save_acc : rest_acc) / INNER;
    };
    r.save = measure([&] { return sample_pair(true); }, samples, 3, 0.05, 3);
    r.restore = measure([&] { return sample_pair(false); }, samples, 3, 0.05, 3);
    std::free(area);
    return r;
}

} // namespace kdsim::calibrate
