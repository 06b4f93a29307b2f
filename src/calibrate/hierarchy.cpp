// The memory hierarchy of this machine: the cache levels the kernel reports in sysfs
// (/sys/devices/system/cpu/cpu<N>/cache/index*/) or, where a guest's kernel lists none, CPUID
// reports, the load-to-use latency of each by pointer
// chasing a randomly ordered cycle of lines over a working set of half its size (so it fits in
// that level and not the one above), DRAM latency over a set four times the last level (at
// least 64 MiB), and copy bandwidth (memcpy between two such sets, mostly cold). memory_tables
// turns them and the rounds of the device-written lines (device_lines.cpp) into [memory]: each
// figure the median of the rounds' own figures, with the rounds and their range in its source.
#include "calibrate/primitives.h"
#include "calibrate/tsc.h"
#include "mem/config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cpuid.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>

namespace kdsim::calibrate {

namespace {

std::string read_line(const std::string& path) {
    std::ifstream in(path);
    std::string s;
    std::getline(in, s);
    return s;
}

// "48K", "1280K", "32M" -> bytes.
std::uint64_t parse_size(const std::string& s) {
    if (s.empty()) return 0;
    std::uint64_t v = std::strtoull(s.c_str(), nullptr, 10);
    switch (s.back()) {
    case 'K': return v << 10;
    case 'M': return v << 20;
    case 'G': return v << 30;
    default: return v;
    }
}

// How many CPUs a sysfs cpu list names ("0-3,8").
int count_cpus(const std::string& list) {
    int n = 0;
    std::stringstream ss(list);
    std::string part;
    while (std::getline(ss, part, ',')) {
        if (part.empty()) continue;
        auto dash = part.find('-');
        if (dash == std::string::npos) ++n;
        else n += std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
    }
    return n;
}

// TSC cycles per dependent load, chasing a random cycle through every line of `bytes`.
Measured chase(std::size_t bytes, std::size_t line, int samples) {
    const std::size_t n = std::max<std::size_t>(2, bytes / line);
    const std::size_t stride = line / sizeof(void*);
    // 2 MiB-aligned and advised to transparent huge pages, so that the chase measures the caches
    // and DRAM rather than 4 KiB TLB misses (where THP is off, those stay in the figure)
    const std::size_t bytes_alloc = ((n * stride * sizeof(void*)) + (2u << 20) - 1) & ~std::size_t((2u << 20) - 1);
    std::unique_ptr<void*[], decltype(&std::free)> mem(static_cast<void**>(std::aligned_alloc(2u << 20, bytes_alloc)),
                                                        &std::free);
    if (!mem) throw std::bad_alloc();
    madvise(mem.get(), bytes_alloc, MADV_HUGEPAGE);
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin() + 1, order.end(), std::mt19937_64(12345)); // fixed seed: same walk every run
    for (std::size_t i = 0; i < n; ++i) mem[order[i] * stride] = &mem[order[(i + 1) % n] * stride];
    const std::size_t loads = std::clamp<std::size_t>(2 * n, 200'000, 1'000'000);
    void** p = &mem[0];
    auto sample = [&] {
        const std::uint64_t t0 = tsc_begin();
        for (std::size_t i = 0; i < loads; ++i) p = static_cast<void**>(*p);
        const std::uint64_t t1 = tsc_end();
        return static_cast<double>(t1 - t0) / static_cast<double>(loads);
    };
    Measured m = measure(sample, samples, 1, 0.10, 3);
    volatile void* sink = p;
    (void)sink;
    return m;
}

} // namespace

std::vector<CacheLevelInfo> read_cache_levels(int cpu) {
    std::vector<CacheLevelInfo> out;
    const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cache/index";
    int l1_sharers = 1;
    for (int i = 0; i < 16; ++i) {
        const std::string d = base + std::to_string(i) + "/";
        const std::string type = read_line(d + "type");
        if (type.empty()) break;
        if (type != "Data" && type != "Unified") continue;
        CacheLevelInfo c;
        c.level = std::atoi(read_line(d + "level").c_str());
        c.size = parse_size(read_line(d + "size"));
        c.ways = static_cast<unsigned>(std::atoi(read_line(d + "ways_of_associativity").c_str()));
        c.line = static_cast<unsigned>(std::atoi(read_line(d + "coherency_line_size").c_str()));
        c.sharers = count_cpus(read_line(d + "shared_cpu_list"));
        c.size_source = "sysfs " + d + "size";
        c.ways_source = "sysfs " + d + "ways_of_associativity";
        if (c.level == 1) l1_sharers = std::max(1, c.sharers);
        out.push_back(c);
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.level < b.level; });
    for (auto& c : out) c.shared = c.sharers > l1_sharers; // beyond the SMT siblings of one core
    if (out.empty()) return cpuid_cache_levels(read_cpuid_cache_regs());
    return out;
}

CpuidCacheRegs read_cpuid_cache_regs() {
    CpuidCacheRegs r;
    unsigned a = 0, b = 0, c = 0, d = 0;
    __cpuid(0, a, b, c, d);
    const unsigned max_leaf = a;
    r.amd = (b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163) || // "AuthenticAMD"
            (b == 0x6f677948 && d == 0x6e65476e && c == 0x656e6975);   // "HygonGenuine"
    __cpuid(0x80000000, a, b, c, d);
    const unsigned max_ext = a;
    unsigned det_leaf = 0;
    if (!r.amd && max_leaf >= 4) det_leaf = 4;
    if (r.amd && max_ext >= 0x80000001) {
        __cpuid(0x80000001, a, b, c, d);
        if (((c >> 22) & 1) && max_ext >= 0x8000001D) det_leaf = 0x8000001D; // TOPOEXT
    }
    for (unsigned i = 0; det_leaf && i < 16; ++i) {
        __cpuid_count(det_leaf, i, a, b, c, d);
        if ((a & 31) == 0) break;
        r.deterministic.push_back({a, b, c});
    }
    if (r.amd && max_ext >= 0x80000006) {
        __cpuid(0x80000005, a, b, c, d);
        r.l1d_ecx = c;
        __cpuid(0x80000006, a, b, c, d);
        r.l2_ecx = c;
        r.l3_edx = d;
    }
    return r;
}

namespace {
// AMD's L2/L3 associativity codes (APM vol. 3, CPUID Fn8000_0006): 0 = disabled; 9 = "see
// Fn8000_001D"; the others a number of ways (0xF fully associative: no set to model, left out).
unsigned amd_assoc(unsigned code) {
    static constexpr unsigned ways[16] = {0, 1, 2, 3, 4, 6, 8, 0, 16, 0, 32, 48, 64, 96, 128, 0};
    return ways[code & 0xF];
}
} // namespace

std::vector<CacheLevelInfo> cpuid_cache_levels(const CpuidCacheRegs& r) {
    std::vector<CacheLevelInfo> out;
    for (const auto& s : r.deterministic) {
        const unsigned type = s[0] & 31; // 1 data, 2 instruction, 3 unified
        if (type != 1 && type != 3) continue;
        CacheLevelInfo c;
        c.level = static_cast<int>((s[0] >> 5) & 7);
        c.line = (s[1] & 0xFFF) + 1;
        c.ways = ((s[1] >> 22) & 0x3FF) + 1;
        const std::uint64_t partitions = ((s[1] >> 12) & 0x3FF) + 1, sets = std::uint64_t(s[2]) + 1;
        c.size = std::uint64_t(c.ways) * partitions * c.line * sets;
        c.sharers = static_cast<int>(((s[0] >> 14) & 0xFFF) + 1);
        c.shared = c.level >= 3;
        const std::string leaf = r.amd ? "CPUID Fn8000_001D" : "CPUID leaf 4";
        c.size_source = leaf + " (no sysfs cache folders): ways x partitions x line x sets";
        c.ways_source = leaf + " EBX[31:22] + 1 (no sysfs cache folders)";
        out.push_back(c);
    }
    if (out.empty() && r.amd) {
        const unsigned l1_kb = r.l1d_ecx >> 24, l1_ways = (r.l1d_ecx >> 16) & 0xFF, l1_line = r.l1d_ecx & 0xFF;
        if (l1_kb && l1_ways && l1_ways != 0xFF && l1_line)
            out.push_back({1, std::uint64_t(l1_kb) << 10, l1_ways, l1_line, 1, false,
                           "CPUID Fn8000_0005 ECX[31:24] KiB (no sysfs cache folders)",
                           "CPUID Fn8000_0005 ECX[23:16] (no sysfs cache folders)"});
        const unsigned l2_kb = r.l2_ecx >> 16, l2_ways = amd_assoc(r.l2_ecx >> 12), l2_line = r.l2_ecx & 0xFF;
        if (l2_kb && l2_ways && l2_line)
            out.push_back({2, std::uint64_t(l2_kb) << 10, l2_ways, l2_line, 1, false,
                           "CPUID Fn8000_0006 ECX[31:16] KiB (no sysfs cache folders)",
                           fmt::format("CPUID Fn8000_0006 ECX[15:12] = {:X}h (no sysfs cache folders)", (r.l2_ecx >> 12) & 0xF)});
        const unsigned l3_units = r.l3_edx >> 18, l3_ways = amd_assoc(r.l3_edx >> 12), l3_line = r.l3_edx & 0xFF;
        if (l3_units && l3_ways && l3_line)
            out.push_back({3, std::uint64_t(l3_units) << 19, l3_ways, l3_line, 2, true,
                           "CPUID Fn8000_0006 EDX[31:18] x 512 KiB (no sysfs cache folders)",
                           fmt::format("CPUID Fn8000_0006 EDX[15:12] = {:X}h (no sysfs cache folders)", (r.l3_edx >> 12) & 0xF)});
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.level < b.level; });
    return out;
}

std::uint64_t copy_working_set(const std::vector<CacheLevelInfo>& levels) {
    std::uint64_t last = 0;
    for (const auto& c : levels) last = std::max(last, c.size);
    return std::max<std::uint64_t>(64ull << 20, 4 * last);
}

CopyBuffers::CopyBuffers(std::size_t n) : bytes(n), src(new char[n]), dst(new char[n]) {
    std::memset(src.get(), 1, n);
    std::memset(dst.get(), 2, n);
}

Measured measure_copy(CopyBuffers& b, int samples) {
    auto sample = [&] {
        const std::uint64_t t0 = tsc_begin();
        std::memcpy(b.dst.get(), b.src.get(), b.bytes);
        const std::uint64_t t1 = tsc_end();
        return static_cast<double>(t1 - t0) / static_cast<double>(b.bytes);
    };
    Measured m = measure(sample, samples, 1, 0.10, 3);
    volatile char sink = b.dst[b.bytes / 2];
    (void)sink;
    return m;
}

HierarchyResult measure_hierarchy(const std::vector<CacheLevelInfo>& levels, std::size_t line, int samples, bool copy) {
    HierarchyResult r;
    r.levels = levels;
    for (const auto& c : levels) {
        r.latency.push_back(chase(c.size / 2, line, samples));
        r.working_set.push_back(c.size / 2);
    }
    r.dram_working_set = copy_working_set(levels);
    r.dram_latency = chase(r.dram_working_set, line, samples);
    // copy bandwidth: memcpy of one set into another, each 4x the last level, so at most a quarter
    // of them is still cached from the previous sample; TSC cycles per byte copied
    if (copy) {
        CopyBuffers b(r.dram_working_set);
        r.copy_cycles_per_byte = measure_copy(b, std::max(3, samples / 2));
        r.copy_bytes = b.bytes;
    }
    return r;
}

} // namespace kdsim::calibrate

namespace kdsim::calibrate {

RoundSpread combine_rounds(const std::vector<double>& values, double bound) {
    RoundSpread s;
    s.values = values;
    s.bound = bound;
    if (values.empty()) return s;
    s.median = summarize(values).median;
    const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    s.low = *lo;
    s.high = *hi;
    if (s.high > s.low)
        s.range = s.median != 0 ? (s.high - s.low) / std::fabs(s.median) : std::numeric_limits<double>::infinity();
    s.disagree = s.range > bound;
    return s;
}

MemoryFigures round_figures(const MemoryRound& r, double tsc_hz, std::size_t line) {
    MemoryFigures f;
    const DeviceLinesResult& dev = r.dev;
    // DRAM load-to-use: the chase through lines another core wrote with non-temporal stores, in a
    // region whose pages stay in the TLB (src/mem has no TLB; the large chase pays page walks)
    f.dram_cycles = dev.chase.stats.median;
    f.copy_cycles_per_byte = r.copy.stats.median;
    // bytes copied per second x 3: read, write-allocate, write-back on the one channel of src/mem
    f.dram_bandwidth = f.copy_cycles_per_byte > 0 ? 3 * tsc_hz / f.copy_cycles_per_byte : 0;
    // the frame's first touch: one exposed miss per `trigger` lines, then a stream at one core's rate
    f.prefetch_trigger = f.dram_cycles > 0 ? std::max(1.0, std::round(dev.seq_fit.intercept / f.dram_cycles)) : 1;
    f.stream_bps = dev.seq_fit.slope > 0 ? static_cast<double>(line) * tsc_hz / dev.seq_fit.slope : 0;
    // memory-level parallelism: the cost per load of one chase over the cheapest of K in turn
    if (!dev.parallel.empty()) {
        f.par_one = f.par_best = dev.parallel[0].stats.median;
        for (std::size_t i = 0; i < dev.parallel.size(); ++i)
            if (dev.parallel[i].stats.median < f.par_best) {
                f.par_best = dev.parallel[i].stats.median;
                f.par_k = static_cast<double>(DeviceLinesResult::CHAINS[i]);
            }
        if (f.par_best > 0)
            f.fill_buffers = static_cast<double>(
                std::clamp<long long>(std::llround(f.par_one / f.par_best), 1, mem::MAX_FILL_BUFFERS));
    }
    // the stride prefetcher: the first ring position whose line comes cheap (under half a miss),
    // after p - 1 steps at the stride; degree: the farthest skip still cheap
    for (std::size_t p = 0; p < dev.stride_position.size() && f.stride_first_cheap < 0; ++p)
        if (dev.stride_position[p] < f.dram_cycles / 2) f.stride_first_cheap = static_cast<double>(p);
    if (f.stride_first_cheap >= 2) {
        f.stride_trigger = f.stride_first_cheap - 1;
        f.stride_degree = 1;
        for (std::size_t k = 1; k < dev.stride_skip.size() && dev.stride_skip[k] < f.dram_cycles / 2; ++k)
            f.stride_degree = static_cast<double>(k + 1);
    }
    if (dev.two_cpus) f.peer_cycles = dev.peer.stats.median;
    return f;
}

std::string memory_tables(const HierarchyResult& h, const DeviceLinesResult& dev, double tsc_hz, std::size_t line,
                          const std::string& prefix, std::string& problem) {
    return memory_tables(h, std::vector<MemoryRound>{MemoryRound{dev, h.copy_cycles_per_byte, 0}}, tsc_hz, line, prefix,
                         problem);
}

std::string memory_tables(const HierarchyResult& h, const std::vector<MemoryRound>& rounds, double tsc_hz,
                          std::size_t line, const std::string& prefix, std::string& problem) {
    if (rounds.empty()) {
        problem = "no round of the memory measurements";
        return {};
    }
    const std::size_t n_rounds = rounds.size();
    std::vector<MemoryFigures> figs;
    for (const auto& r : rounds) figs.push_back(round_figures(r, tsc_hz, line));
    auto over = [&](double MemoryFigures::*field) {
        std::vector<double> v;
        for (const auto& f : figs) v.push_back(f.*field);
        return combine_rounds(v, ROUNDS_BOUND);
    };
    const RoundSpread dram = over(&MemoryFigures::dram_cycles), bw = over(&MemoryFigures::dram_bandwidth),
                      stream = over(&MemoryFigures::stream_bps), trig = over(&MemoryFigures::prefetch_trigger),
                      fill = over(&MemoryFigures::fill_buffers), s_trig = over(&MemoryFigures::stride_trigger),
                      s_deg = over(&MemoryFigures::stride_degree), peer = over(&MemoryFigures::peer_cycles),
                      copy = over(&MemoryFigures::copy_cycles_per_byte);
    const bool two_cpus = rounds.front().dev.two_cpus;
    const bool has_parallel = !rounds.front().dev.parallel.empty();
    const bool has_stride = !rounds.front().dev.stride_position.empty();

    mem::MemoryConfig c;
    c.line = static_cast<std::uint32_t>(line);
    const double dram_cycles = dram.median;
    std::vector<std::string> names, dropped;
    std::vector<std::size_t> kept;
    for (std::size_t i = 0; i < h.levels.size(); ++i) {
        const auto& l = h.levels[i];
        const std::string name = i == 0 ? "l1d" : fmt::format("l{}", l.level);
        // a level whose own chase costs as much as a line from memory serves nothing here
        if (i > 0 && h.latency[i].stats.median >= dram_cycles) {
            dropped.push_back(fmt::format("{} ({} B, chase over {} B: {:.1f} cycles per load, not below the {:.1f} of a "
                                          "line from memory)",
                                          name, l.size, h.working_set[i], h.latency[i].stats.median, dram_cycles));
            continue;
        }
        mem::CacheLevelConfig m;
        m.name = name;
        m.size = l.size;
        m.ways = l.ways;
        m.latency = static_cast<std::uint32_t>(std::llround(h.latency[i].stats.median));
        m.shared = l.shared;
        c.levels.push_back(m);
        kept.push_back(i);
        names.push_back(fmt::format("\"{}\"", m.name));
    }
    const double ns_per_cycle = 1e9 / tsc_hz;
    c.dram_latency_ns = dram_cycles * ns_per_cycle;
    c.dram_bandwidth = bw.median;
    c.prefetch_streams = 1;
    c.prefetch_trigger = static_cast<std::uint32_t>(std::max(1.0, std::round(trig.median)));
    c.core_bandwidth = stream.median > 0 ? std::min(stream.median, c.dram_bandwidth) : 0;
    if (has_parallel) c.fill_buffers = static_cast<std::uint32_t>(std::max(1.0, std::round(fill.median)));
    if (std::round(s_trig.median) >= 1) {
        c.stride_trigger = static_cast<std::uint32_t>(std::round(s_trig.median));
        c.stride_degree = static_cast<std::uint32_t>(std::max(1.0, std::round(s_deg.median)));
    }
    // another core's modified line: the line bounced between the two CPUs (none with one CPU)
    if (two_cpus && !c.levels.empty() && peer.median > c.levels[0].latency)
        c.peer_latency = static_cast<std::uint32_t>(std::llround(peer.median));
    if (auto p = mem::check_config(c)) {
        problem = p->key + ": " + p->message;
        return {};
    }

    auto spread = [](const Measured& m) {
        return fmt::format("median of {}, spread {:.1f}%{}", m.stats.n, m.stats.spread * 100, m.noisy ? ", NOISY" : "");
    };
    // "median of R round(s) ...: a / b / c <unit>; range x% of the median[, ROUNDS DISAGREE ...]"
    auto rounds_note = [&](const RoundSpread& s, const char* format, const std::string& unit) {
        std::string v;
        for (std::size_t i = 0; i < s.values.size(); ++i)
            v += (i ? " / " : "") + fmt::format(fmt::runtime(format), s.values[i]);
        const std::string range = std::isfinite(s.range) ? fmt::format("{:.0f}%", s.range * 100) : std::string("unbounded");
        return fmt::format("median of {} round(s) spread over the calibration, each on fresh regions: {}{}{}; range {} "
                           "of the median{}",
                           s.values.size(), v, unit.empty() ? "" : " ", unit, range,
                           s.disagree ? fmt::format(", ROUNDS DISAGREE (above {:.0f}%)", s.bound * 100) : "");
    };
    const std::string writer = two_cpus ? "another CPU" : "a thread on the same CPU (one CPU allowed)";
    std::string t = "\n# [memory]: measured by kdsim calibrate (pointer chases, lines written by " + writer +
                    " with non-temporal stores, memcpy); docs/profiles-memory.md\n";
    t += fmt::format("# measured: the device-written lines and the cold copy in {} round(s) spread over the calibration, "
                     "each on its own regions (all made before the first); each figure below is the median of the "
                     "rounds' figures, ROUNDS DISAGREE where their range is above {:.0f}% of it\n",
                     n_rounds, ROUNDS_BOUND * 100);
    for (const auto& d : dropped) t += "# measured: level left out: " + d + "\n";
    t += fmt::format("# measured: pointer chase over {} B: {:.1f} TSC cycles per load ({}; pays page walks: not the "
                     "DRAM figure of a model without TLB)\n",
                     h.dram_working_set, h.dram_latency.stats.median, spread(h.dram_latency));
    for (std::size_t k = 0; k < n_rounds; ++k) {
        const DeviceLinesResult& dev = rounds[k].dev;
        const std::string round = fmt::format("round {} of {} (at {:.1f} s)", k + 1, n_rounds, rounds[k].at_s);
        t += fmt::format("# measured: {}: chase through device-written lines over {} B: {:.1f} TSC cycles per load ({}); "
                         "memcpy of {} B between cold buffers: {:.3f} TSC cycles per byte ({})\n",
                         round, DeviceLinesResult::CHASE_BYTES, dev.chase.stats.median, spread(dev.chase), h.copy_bytes,
                         rounds[k].copy.stats.median, spread(rounds[k].copy));
        for (const auto& pt : dev.seq)
            t += fmt::format("# measured: {}: first {} line(s) of each buffer of a 128 x 1536 B ring written by {} with "
                             "non-temporal stores, read in ring order: {:.1f} TSC cycles per buffer ({})\n",
                             round, pt.lines, writer, pt.net, spread(pt.cycles));
        for (std::size_t i = 0; i < dev.parallel.size(); ++i)
            t += fmt::format("# measured: {}: {} independent chase(s) through lines written by {} with non-temporal "
                             "stores, walked in turn over {} B: {:.1f} TSC cycles per load ({})\n",
                             round, DeviceLinesResult::CHAINS[i], writer, DeviceLinesResult::PARALLEL_BYTES,
                             dev.parallel[i].stats.median, spread(dev.parallel[i]));
        if (!dev.stride_position.empty())
            t += fmt::format("# measured: {}: line 0 of ring buffers 0..{} read in ring order, {} cycles' pause before "
                             "each: {:.0f} TSC cycles; after {} such reads, one {} buffer(s) ahead: {:.0f}\n",
                             round, dev.stride_position.size() - 1, DeviceLinesResult::STRIDE_PAUSE,
                             fmt::join(dev.stride_position, " / "), DeviceLinesResult::STRIDE_TRAIN,
                             fmt::format("1..{}", dev.stride_skip.size()), fmt::join(dev.stride_skip, " / "));
        if (two_cpus)
            t += fmt::format("# measured: {}: a line bounced between the two CPUs, half a round trip: {:.1f} TSC cycles "
                             "({})\n",
                             round, dev.peer.stats.median, spread(dev.peer));
    }
    if (has_stride && !c.stride_trigger)
        t += fmt::format("# measured: no stride prefetcher written: the median of the rounds' stride triggers is 0 (a "
                         "round gives 0 when no ring position's line came under half a miss, or when the first reads "
                         "were already cheap: another prefetcher, not a stride followed after steps); first cheap "
                         "position per round: {}\n",
                         [&] {
                             std::string v;
                             for (std::size_t k = 0; k < figs.size(); ++k)
                                 v += (k ? " / " : "") + (figs[k].stride_first_cheap < 0
                                                              ? std::string("none")
                                                              : fmt::format("{:.0f}", figs[k].stride_first_cheap));
                             return v;
                         }());
    t += "[memory]\n";
    t += fmt::format("levels = [{}]\ndma_write_allocate = false\n", fmt::join(names, ", "));
    if (c.peer_latency)
        t += fmt::format("peer_latency = {{ value = {}, unit = \"cycles\", source = \"{}: a line bounced between the two "
                         "CPUs (each stores, the other loads it back), half a round trip, TSC cycles per transfer; {}\" "
                         "}}\n",
                         c.peer_latency, prefix, rounds_note(peer, "{:.1f}", "cycles"));
    if (has_parallel)
        t += fmt::format("fill_buffers = {{ value = {}, unit = \"lines\", source = \"{}: independent chases through lines "
                         "written by {} with non-temporal stores, walked in turn (1..{} chases): the cost per load with "
                         "one chase over the cheapest, rounded: the misses one core keeps in flight (fill buffers, or "
                         "the channel where it binds first); {}\" }}\n",
                         c.fill_buffers, prefix, writer, DeviceLinesResult::CHAINS[std::size(DeviceLinesResult::CHAINS) - 1],
                         rounds_note(fill, "{:.0f}", "lines"));
    for (std::size_t j = 0; j < kept.size(); ++j) {
        const std::size_t i = kept[j];
        const auto& l = h.levels[i];
        const auto& m = c.levels[j];
        t += fmt::format("\n[memory.{}]\n", m.name);
        t += fmt::format("size = {{ value = {}, unit = \"bytes\", source = \"{}\" }}\n", l.size, l.size_source);
        t += fmt::format("ways = {{ value = {}, unit = \"ways\", source = \"{}\" }}\n", l.ways, l.ways_source);
        t += fmt::format("latency = {{ value = {}, unit = \"cycles\", source = \"{}: pointer chase of a random cycle of "
                         "{} B lines over {} B, TSC cycles per dependent load ({:.2f}), {} (one round: a chase within a "
                         "cache level does not move with the host's page placement)\" }}\n",
                         m.latency, prefix, line, h.working_set[i], h.latency[i].stats.median, spread(h.latency[i]));
        t += fmt::format("shared = {}\nreplacement = \"lru\"\n", l.shared ? "true" : "false");
    }
    std::vector<double> dram_ns;
    for (double v : dram.values) dram_ns.push_back(v * ns_per_cycle);
    t += "\n[memory.dram]\n";
    t += fmt::format("latency = {{ value = {:.1f}, unit = \"ns\", source = \"{}: lines written by {} with non-temporal "
                     "stores + SFENCE (kdsim validate's device thread), then a pointer chase of a random cycle through "
                     "them over {} B (TLB-resident), TSC cycles per dependent load at {:.4g} GHz; {}\" }}\n",
                     c.dram_latency_ns, prefix, writer, DeviceLinesResult::CHASE_BYTES, tsc_hz / 1e9,
                     rounds_note(combine_rounds(dram_ns, ROUNDS_BOUND), "{:.1f}", "ns"));
    t += fmt::format("bandwidth = {{ value = {:.4g}, unit = \"bytes/s\", source = \"{}: memcpy of {} B between cold "
                     "buffers ({:.3f} TSC cycles per byte at the median), bytes copied per second x 3 (read, "
                     "write-allocate, write-back on the one channel of src/mem); {}\" }}\n",
                     c.dram_bandwidth, prefix, h.copy_bytes, copy.median, rounds_note(bw, "{:.4g}", "bytes/s"));
    const std::string seq_src = fmt::format(
        "{}: the first N = 2..{} lines of each buffer of a 128 x 1536 B ring written by {} with non-temporal stores, "
        "read one load per line in ring order: intercept + slope x N TSC cycles per buffer (least squares)",
        prefix, DeviceLinesResult::SEQ_LINES[std::size(DeviceLinesResult::SEQ_LINES) - 1], writer);
    if (c.core_bandwidth > 0)
        t += fmt::format("core_bandwidth = {{ value = {:.4g}, unit = \"bytes/s\", source = \"{}: a {} B line per slope "
                         "cycles; {}{}\" }}\n",
                         c.core_bandwidth, seq_src, line, rounds_note(stream, "{:.4g}", "bytes/s"),
                         stream.median > c.dram_bandwidth ? "; above the shared bandwidth: written as that" : "");
    t += "\n[memory.prefetch]\n";
    t += "streams = { value = 1, unit = \"streams\", source = \"kdsim calibrate: one sequential stream measured (the "
         "frame's read); how many the CPU tracks at once is not measured\" }\n";
    t += fmt::format("trigger = {{ value = {}, unit = \"lines\", source = \"{}: the intercept over the load-to-use of a "
                     "line from memory (the chase above), rounded (at least 1): the misses a buffer exposes before the "
                     "rest streams; {}\" }}\n",
                     c.prefetch_trigger, seq_src, rounds_note(trig, "{:.0f}", "lines"));
    if (c.stride_trigger) {
        const std::string stride_src = fmt::format(
            "{}: line 0 of each buffer of a 128 x 1536 B ring written by {} with non-temporal stores, read in ring order "
            "from one load instruction with a {}-cycle pause before each read; a read under half the round's miss (the "
            "chase above) was fetched ahead",
            prefix, writer, DeviceLinesResult::STRIDE_PAUSE);
        t += fmt::format("stride_trigger = {{ value = {}, unit = \"lines\", source = \"{}: the first such read is at ring "
                         "position trigger + 1 (from 0), after trigger steps at the stride (0: no such position from 2 "
                         "on in that round); {}\" }}\n",
                         c.stride_trigger, stride_src, rounds_note(s_trig, "{:.0f}", "lines"));
        t += fmt::format("stride_degree = {{ value = {}, unit = \"lines\", source = \"{}: after {} reads at the stride, "
                         "the farthest read ahead (in strides) that was such a read (0: no stride prefetcher in that "
                         "round); {}\" }}\n",
                         c.stride_degree, stride_src, DeviceLinesResult::STRIDE_TRAIN, rounds_note(s_deg, "{:.0f}", "lines"));
    }
    return t;
}

} // namespace kdsim::calibrate
