// The [memory] tables of a profile -> mem::MemoryConfig:
//
//   [memory]
//   levels = ["l1d", "l2"]              # nearest first; each names a table below
//   dma_write_allocate = false          # device writes allocate into the last shared level (DDIO)
//   [memory.l1d]                        # one table per level
//   size = { value, unit = "bytes", source }   ways = { ..., unit = "ways" }
//   latency = { ..., unit = "cycles" }  # load-to-use
//   shared = false                      # one per CPU, or one for all
//   replacement = "lru"                 # "lru", "round-robin" or "random"
//   [memory.dram]   latency = { ..., unit = "ns" }, bandwidth = { ..., unit = "bytes/s" },
//                   core_bandwidth = { ..., unit = "bytes/s" } (optional: one core's streaming limit)
//                   refresh_interval, refresh_time = { ..., unit = "ns" } (optional, together: tREFI
//                   and tRFC, the DRAM's periodic refresh; absent: none)
//   [memory.prefetch] streams = { ..., unit = "streams" }, trigger = { ..., unit = "lines" }
//   peer_latency = { ..., unit = "cycles" } # in [memory], optional: a line from another CPU's cache
//   fill_buffers = { ..., unit = "lines" } # in [memory], optional: demand misses one core has in
//                                       # flight (absent: 1, serialised)
//   [memory.prefetch] stride_trigger, stride_degree = { ..., unit = "lines" } (optional, together:
//                   the stride prefetcher; absent: none)
//   copy = { ..., unit = "cycles/byte" } # in [memory], optional: the warm copy loop; given, the
//                                       # network datapath runs on the hierarchy
//   [memory.l1i]    optional: each CPU's L1 instruction cache (mem/icache.h): size (bytes), ways,
//                   replacement, prefetch (lines requested with a demand miss), executed (fraction
//                   of a function's bytes its fast path runs), align (bytes, a function's start),
//                   code = "kernel/code-sizes-6.1.0-47-<build>.tsv" (below the data directory)
//
// The line size is [cpu].cache_line and whether DMA snoops is [dma].coherent. Figures are
// checked one by one as every figure is, then together (mem::check_config: L1 larger than L2,
// an associativity that does not divide the size, ...), each problem at its figure's value.
#include "scenario/figure_reader.h"

#include "mem/config.h"

#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <utility>

namespace kdsim::scenario::detail {

namespace {

struct Where {
    const toml::node* node = nullptr;
    std::string key;
};

// A figure of `t` read with its unit, with where its value is recorded under `problem_key`.
struct LocatedFigure {
    double value;
    const toml::node& node; // the figure's `value`
    std::string key;        // its dotted key
};
std::optional<LocatedFigure> located_figure(Reader& r, const toml::table& t, std::string_view name,
                                            const std::string& tkey, Unit unit, std::map<std::string, Where>& where,
                                            const std::string& problem_key) {
    const std::string key = join_key(tkey, name);
    auto d = read_figure(r, t, name, key, unit);
    if (!d) return std::nullopt;
    const toml::node& v = *t.get(name)->as_table()->get("value");
    where[problem_key] = {&v, join_key(key, "value")};
    return LocatedFigure{*d, v, join_key(key, "value")};
}

// A figure of `t`, rounded to an integer > 0; records where its value is.
std::optional<std::uint64_t> int_figure(Reader& r, const toml::table& t, std::string_view name, const std::string& tkey,
                                        Unit unit, std::map<std::string, Where>& where, const std::string& problem_key) {
    auto f = located_figure(r, t, name, tkey, unit, where, problem_key);
    if (!f) return std::nullopt;
    return to_integer_figure(r, f->node, f->key, f->value, unit, true);
}

std::optional<double> positive_figure(Reader& r, const toml::table& t, std::string_view name, const std::string& tkey,
                                      Unit unit, std::map<std::string, Where>& where, const std::string& problem_key) {
    auto f = located_figure(r, t, name, tkey, unit, where, problem_key);
    if (!f) return std::nullopt;
    if (f->value <= 0) {
        r.error(f->node, f->key, fmt::format("expected a positive {}, found {}", quantity(unit), describe(&f->node)));
        return std::nullopt;
    }
    return f->value;
}

// The build's code sizes (data/kernel/code-sizes-*.tsv, tools/kernel_code_sizes.py): `name` is a
// path below the data directory of the tree that holds the profile (the nearest directory at or
// above the profile's that is `data` or has one, and holds `name` there), else below kdsim's own
// (a private copy of a profile elsewhere reads the shipped tables).
void read_code_sizes(Reader& r, const toml::node& at, const std::string& name, const std::filesystem::path& file,
                     mem::L1iConfig& c) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path start = fs::absolute(file, ec).parent_path();
    fs::path path = start / "data" / name;
    for (fs::path d = start; !d.empty() && !name.empty(); d = d.parent_path()) {
        if (d.filename() == "data" && fs::is_regular_file(d / name, ec)) {
            path = d / name;
            break;
        }
        if (fs::is_regular_file(d / "data" / name, ec)) {
            path = d / "data" / name;
            break;
        }
        if (d == d.parent_path()) break;
    }
#ifdef KDSIM_SOURCE_DIR
    if (!name.empty() && !fs::is_regular_file(path, ec) && fs::is_regular_file(fs::path(KDSIM_SOURCE_DIR) / "data" / name, ec))
        path = fs::path(KDSIM_SOURCE_DIR) / "data" / name;
#endif
    std::ifstream in(path);
    if (name.empty() || name.find("..") != std::string::npos || !in) {
        r.error(at, "memory.l1i.code",
                fmt::format("expected a code-size table below the data directory (such as "
                            "\"kernel/code-sizes-6.1.0-47-arm64.tsv\"), found no readable file {}",
                            path.generic_string()));
        return;
    }
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.empty() || line[0] == '#' || line.starts_with("function\t")) continue;
        const std::size_t a = line.find('\t');
        const std::size_t b = a == std::string::npos ? a : line.find('\t', a + 1);
        const std::size_t e = b == std::string::npos ? b : line.find('\t', b + 1);
        std::uint64_t bytes = 0;
        const char* first = b == std::string::npos ? nullptr : line.data() + b + 1;
        const char* last = e == std::string::npos ? line.data() + line.size() : line.data() + e;
        const auto res = first ? std::from_chars(first, last, bytes) : std::from_chars_result{nullptr, std::errc::invalid_argument};
        if (a == 0 || a == std::string::npos || !first || res.ec != std::errc{} || res.ptr != last) {
            r.error(at, "memory.l1i.code",
                    fmt::format("{} line {}: expected function<TAB>kernel_file<TAB>bytes<TAB>..., found \"{}\"",
                                path.generic_string(), n, line.substr(0, 80)));
            return;
        }
        c.functions.push_back(mem::KernelFunction{line.substr(0, a), bytes});
    }
    c.code = name;
}

// [memory.l1i]: the L1 instruction cache and the kernel text it fetches.
void read_l1i(Reader& r, const toml::node& n, mem::L1iConfig& c, std::map<std::string, Where>& where,
              const std::filesystem::path& file) {
    const toml::table* lt = n.as_table();
    if (!lt) {
        r.error(n, "memory.l1i", fmt::format("expected a table [memory.l1i] of size, ways, replacement, prefetch, "
                                             "executed, align and code, found {}", describe(&n)));
        return;
    }
    const std::string k = "memory.l1i";
    r.check_keys(*lt, k, "[memory.l1i]", {"size", "ways", "replacement", "prefetch", "executed", "align", "code"});
    auto size = int_figure(r, *lt, "size", k, Unit::BYTES, where, "l1i.size");
    auto ways = int_figure(r, *lt, "ways", k, Unit::WAYS, where, "l1i.ways");
    auto align = int_figure(r, *lt, "align", k, Unit::BYTES, where, "l1i.align");
    auto executed = positive_figure(r, *lt, "executed", k, Unit::FRACTION, where, "l1i.executed");
    std::optional<std::uint64_t> prefetch;
    if (auto d = read_figure(r, *lt, "prefetch", join_key(k, "prefetch"), Unit::LINES))
        prefetch = to_integer_figure(r, *lt->get("prefetch")->as_table()->get("value"), join_key(k, "prefetch.value"), *d,
                                     Unit::LINES, false);
    auto repl = r.choice(*lt, "replacement", join_key(k, "replacement"), true, {"lru", "round-robin", "random"});
    const toml::node* code = lt->get("code");
    if (!code || !code->is_string()) {
        r.error(code ? *code : n, join_key(k, "code"),
                fmt::format("expected the name of the build's code-size table, such as "
                            "\"kernel/code-sizes-6.1.0-47-arm64.tsv\", found {}", describe(code)));
        return;
    }
    if (!size || !ways || !align || !executed || !prefetch || !repl) return;
    c.size = *size;
    c.ways = static_cast<std::uint32_t>(std::min<std::uint64_t>(*ways, UINT32_MAX));
    c.align = static_cast<std::uint32_t>(std::min<std::uint64_t>(*align, UINT32_MAX));
    c.executed = *executed;
    c.prefetch = static_cast<std::uint32_t>(std::min<std::uint64_t>(*prefetch, UINT32_MAX));
    c.replacement = static_cast<mem::Replacement>(*repl);
    read_code_sizes(r, *code, code->as_string()->get(), file, c);
}

} // namespace

void read_memory(Reader& r, const toml::table& root, system::Profile& p, const std::filesystem::path& file) {
    const toml::node* n = root.get("memory");
    if (!n) return;
    const toml::table* t = n->as_table();
    if (!t) {
        r.error(*n, "memory", fmt::format("expected a table [memory] with levels and its tables, found {}", describe(n)));
        return;
    }
    const std::size_t before = r.errors();
    std::map<std::string, Where> where;
    mem::MemoryConfig c;
    c.line = static_cast<std::uint32_t>(p.cache_line);
    c.dma_coherent = p.dma && p.dma->coherent;

    std::vector<std::string> names;
    std::vector<std::string_view> allowed = {"levels", "dma_write_allocate", "dram", "prefetch", "copy", "peer_latency", "fill_buffers", "l1i"};
    if (const toml::array* a = r.array(*t, "levels", "memory.levels", true, "an array of level names, nearest first")) {
        where["levels"] = {a, "memory.levels"};
        for (std::size_t i = 0; i < a->size(); ++i) {
            const toml::node& e = *a->get(i);
            if (!e.is_string() || e.as_string()->get().empty() || e.as_string()->get() == "dram" ||
                e.as_string()->get() == "prefetch" || e.as_string()->get() == "copy" ||
                e.as_string()->get() == "peer_latency" || e.as_string()->get() == "fill_buffers" ||
                e.as_string()->get() == "l1i") {
                r.error(e, index_key("memory.levels", i),
                        fmt::format("expected the name of a [memory.<level>] table, found {}", describe(&e)));
                continue;
            }
            names.push_back(e.as_string()->get());
        }
    }
    for (const auto& nm : names) allowed.push_back(nm);
    r.check_keys(*t, "memory", "[memory]", allowed);
    if (auto wa = r.boolean(*t, "dma_write_allocate", "memory.dma_write_allocate", true)) {
        c.dma_write_allocate = *wa;
        where["dma.write_allocate"] = {t->get("dma_write_allocate"), "memory.dma_write_allocate"};
    }
    where["line"] = {nullptr, "cpu.cache_line"};
    if (t->get("copy"))
        if (auto v = positive_figure(r, *t, "copy", "memory", Unit::CYCLES_PER_BYTE, where, "copy")) c.copy_warm = *v;
    if (t->get("peer_latency"))
        if (auto v = int_figure(r, *t, "peer_latency", "memory", Unit::CYCLES, where, "peer_latency"))
            c.peer_latency = static_cast<std::uint32_t>(std::min<std::uint64_t>(*v, UINT32_MAX));
    if (t->get("fill_buffers"))
        if (auto v = int_figure(r, *t, "fill_buffers", "memory", Unit::LINES, where, "fill_buffers"))
            c.fill_buffers = static_cast<std::uint32_t>(std::min<std::uint64_t>(*v, UINT32_MAX));

    for (const auto& nm : names) {
        const std::string tkey = join_key("memory", nm);
        const toml::table* lt = r.table(*t, nm, tkey, true, "a table of size, ways, latency, shared, replacement");
        if (!lt) continue;
        r.check_keys(*lt, tkey, fmt::format("[{}]", tkey), {"size", "ways", "latency", "shared", "replacement"});
        mem::CacheLevelConfig l;
        l.name = nm;
        auto size = int_figure(r, *lt, "size", tkey, Unit::BYTES, where, nm + ".size");
        auto ways = int_figure(r, *lt, "ways", tkey, Unit::WAYS, where, nm + ".ways");
        auto lat = int_figure(r, *lt, "latency", tkey, Unit::CYCLES, where, nm + ".latency");
        auto shared = r.boolean(*lt, "shared", join_key(tkey, "shared"), true);
        if (shared) where[nm + ".shared"] = {lt->get("shared"), join_key(tkey, "shared")};
        auto repl = r.choice(*lt, "replacement", join_key(tkey, "replacement"), true, {"lru", "round-robin", "random"});
        if (!size || !ways || !lat || !shared || !repl) continue;
        l.size = *size;
        l.ways = static_cast<std::uint32_t>(std::min<std::uint64_t>(*ways, UINT32_MAX));
        l.latency = static_cast<std::uint32_t>(std::min<std::uint64_t>(*lat, UINT32_MAX));
        l.shared = *shared;
        l.replacement = static_cast<mem::Replacement>(*repl);
        c.levels.push_back(l);
    }
    if (const toml::table* d = r.table(*t, "dram", "memory.dram", true, "a table of latency and bandwidth")) {
        r.check_keys(*d, "memory.dram", "[memory.dram]",
                     {"latency", "bandwidth", "core_bandwidth", "refresh_interval", "refresh_time"});
        if (auto v = positive_figure(r, *d, "latency", "memory.dram", Unit::NS, where, "dram.latency"))
            c.dram_latency_ns = *v;
        if (auto v = positive_figure(r, *d, "bandwidth", "memory.dram", Unit::BYTES_PER_SECOND, where, "dram.bandwidth"))
            c.dram_bandwidth = *v;
        if (d->get("core_bandwidth"))
            if (auto v = positive_figure(r, *d, "core_bandwidth", "memory.dram", Unit::BYTES_PER_SECOND, where,
                                         "dram.core_bandwidth"))
                c.core_bandwidth = *v;
        const std::pair<const char*, double*> refresh[] = {{"refresh_interval", &c.refresh_interval_ns},
                                                            {"refresh_time", &c.refresh_time_ns}};
        for (const auto& [k, dst] : refresh)
            if (d->get(k))
                if (auto v = positive_figure(r, *d, k, "memory.dram", Unit::NS, where, std::string("dram.") + k))
                    *dst = *v;
        if (d->get("refresh_interval") && !d->get("refresh_time"))
            r.error(*d->get("refresh_interval"), "memory.dram.refresh_time",
                    "expected refresh_time (tRFC) beside refresh_interval (tREFI)");
        else if (d->get("refresh_time") && !d->get("refresh_interval"))
            r.error(*d->get("refresh_time"), "memory.dram.refresh_interval",
                    "expected refresh_interval (tREFI) beside refresh_time (tRFC)");
    }
    if (const toml::table* pf = r.table(*t, "prefetch", "memory.prefetch", true, "a table of streams and trigger")) {
        r.check_keys(*pf, "memory.prefetch", "[memory.prefetch]",
                     {"streams", "trigger", "stride_trigger", "stride_degree"});
        const std::string k = "memory.prefetch";
        if (auto d = read_figure(r, *pf, "streams", join_key(k, "streams"), Unit::STREAMS))
            if (auto v = to_integer_figure(r, *pf->get("streams")->as_table()->get("value"),
                                           join_key(k, "streams.value"), *d, Unit::STREAMS, false))
                c.prefetch_streams = static_cast<std::uint32_t>(std::min<std::uint64_t>(*v, 64));
        if (auto v = int_figure(r, *pf, "trigger", k, Unit::LINES, where, "prefetch.trigger"))
            c.prefetch_trigger = static_cast<std::uint32_t>(std::min<std::uint64_t>(*v, UINT32_MAX));
        if (pf->get("stride_trigger") || pf->get("stride_degree")) { // the stride prefetcher: both figures
            if (auto v = int_figure(r, *pf, "stride_trigger", k, Unit::LINES, where, "prefetch.stride_trigger"))
                c.stride_trigger = static_cast<std::uint32_t>(std::min<std::uint64_t>(*v, UINT32_MAX));
            if (auto v = int_figure(r, *pf, "stride_degree", k, Unit::LINES, where, "prefetch.stride_degree"))
                c.stride_degree = static_cast<std::uint32_t>(std::min<std::uint64_t>(*v, UINT32_MAX));
        }
    }
    if (const toml::node* in = t->get("l1i")) read_l1i(r, *in, c.l1i, where, file);
    if (r.errors() != before) return;
    if (auto problem = mem::check_config(c)) {
        auto it = where.find(problem->key);
        if (it != where.end() && it->second.node)
            r.error(*it->second.node, it->second.key, problem->message);
        else
            r.error(*n, it != where.end() ? it->second.key : "memory", problem->message);
        return;
    }
    p.memory = c;
}

} // namespace kdsim::scenario::detail
