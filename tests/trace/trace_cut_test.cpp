// Cut traces (--trace-from/--trace-until, --trace-cpus, --trace-categories) held against the full
// trace of the same run: a cut keeps exactly the events the full trace has that match the cut,
// byte for byte, and nothing else. And gzip output inflates to the plain trace.
#include "scenario/load.h"
#include "system/system.h"
#include "report/gzip.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <set>
#include <string>

namespace kdsim {
namespace {

const std::filesystem::path ROOT = KDSIM_SOURCE_DIR;
const char* const SCENARIO = "scenarios/e1/esp-gcm-h2g-softirq.toml"; // two machines of two CPUs

std::string trace_of(const system::TraceRequest& req) {
    system::ScenarioConfig cfg = scenario::load_scenario(ROOT / SCENARIO, scenario::LoadOptions{});
    cfg.duration = 25 * engine::PS_PER_MS; // of its 100 ms: enough for a window at 20 ms
    system::System sys(cfg);
    EXPECT_TRUE(sys.enable_trace(req));
    sys.run();
    std::string out;
    sys.write_trace([&](std::string_view s) { out.append(s); });
    return out;
}

std::int64_t ps(const nlohmann::json& v) { return std::llround(v.get<double>() * 1e6); }

// The trace's timed events (not metadata), each as its JSON text, that `keep` accepts.
std::multiset<std::string> events(const std::string& trace, const std::function<bool(const nlohmann::json&)>& keep) {
    std::multiset<std::string> out;
    const nlohmann::json doc = nlohmann::json::parse(trace);
    for (const nlohmann::json& e : doc.at("traceEvents"))
        if (e.at("ph") != "M" && keep(e)) out.insert(e.dump());
    return out;
}

const std::string& full_trace() {
    static const std::string full = trace_of(system::TraceRequest{});
    return full;
}

TEST(TraceCut, AWindowKeepsExactlyTheSlicesOfTheFullTraceThatOverlapIt) {
    if constexpr (!kernel::TRACE_COMPILED) GTEST_SKIP() << "built with KDSIM_TRACE=OFF";
    system::TraceRequest req;
    req.filter.from = 20 * engine::PS_PER_MS;
    req.filter.until = 20 * engine::PS_PER_MS + 300 * engine::PS_PER_US;
    const std::string cut = trace_of(req);
    const std::int64_t from = static_cast<std::int64_t>(req.filter.from), until = static_cast<std::int64_t>(req.filter.until);
    const auto inside = [&](const nlohmann::json& e) {
        const std::int64_t ts = ps(e.at("ts"));
        if (e.at("ph") == "i") return ts >= from && ts < until;
        return ts < until && ts + ps(e.at("dur")) > from;
    };
    const auto want = events(full_trace(), inside);
    const auto got = events(cut, [](const nlohmann::json&) { return true; });
    EXPECT_GT(want.size(), 100u);
    EXPECT_LT(want.size(), events(full_trace(), [](const nlohmann::json&) { return true; }).size() / 10);
    EXPECT_TRUE(got == want) << got.size() << " events in the cut, " << want.size() << " expected";
    const nlohmann::json other = nlohmann::json::parse(cut).at("otherData");
    EXPECT_EQ(other.at("window_from_us"), 20000.0);
    EXPECT_EQ(other.at("window_until_us"), 20300.0);
}

TEST(TraceCut, CpusAndCategoriesKeepExactlyTheirEventsOfTheFullTrace) {
    if constexpr (!kernel::TRACE_COMPILED) GTEST_SKIP() << "built with KDSIM_TRACE=OFF";
    system::TraceRequest req;
    ASSERT_EQ(system::parse_trace_cpus("guest:0", req.cpus), "");
    ASSERT_EQ(system::parse_trace_categories("irq,exec:crypto", req.filter), "");
    const std::string cut = trace_of(req);
    // The guest is the scenario's first machine: pid 1, and its CPU 0 is tid 1000.
    const nlohmann::json full = nlohmann::json::parse(full_trace());
    ASSERT_EQ(full.at("traceEvents").at(0).at("args").at("name"), "guest");
    const auto wanted = [](const nlohmann::json& e) {
        if (e.at("pid") != 1 || e.at("tid") != 1000) return false;
        const bool hardirq = e.at("cat") == "irq";
        const bool crypto = e.contains("args") && e.at("args").contains("cycles") && e.at("name") == "crypto";
        return hardirq || crypto;
    };
    const auto want = events(full_trace(), wanted);
    EXPECT_GT(want.size(), 10u);
    EXPECT_TRUE(events(cut, [](const nlohmann::json&) { return true; }) == want);
}

std::string gunzip(const std::string& z) {
    z_stream s{};
    EXPECT_EQ(inflateInit2(&s, 15 + 16), Z_OK);
    s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(z.data()));
    s.avail_in = static_cast<uInt>(z.size());
    std::string out;
    char buf[65536];
    int rc;
    do {
        s.next_out = reinterpret_cast<Bytef*>(buf);
        s.avail_out = sizeof buf;
        rc = inflate(&s, Z_NO_FLUSH);
        out.append(buf, sizeof buf - s.avail_out);
    } while (rc == Z_OK);
    EXPECT_EQ(rc, Z_STREAM_END);
    inflateEnd(&s);
    return out;
}

TEST(TraceGzip, ACompressedTraceInflatesToThePlainOneAndHasNoTimeStamp) {
    const std::string& plain = full_trace();
    std::string z;
    report::GzipWriter gz([&](std::string_view s) { z.append(s); });
    for (std::size_t at = 0; at < plain.size(); at += 100'000) gz.write(std::string_view(plain).substr(at, 100'000));
    gz.finish();
    ASSERT_GE(z.size(), 18u);
    EXPECT_EQ(static_cast<unsigned char>(z[0]), 0x1f); // RFC 1952 magic
    EXPECT_EQ(static_cast<unsigned char>(z[1]), 0x8b);
    EXPECT_EQ(z.substr(4, 4), std::string(4, '\0')) << "MTIME must be 0 for byte-identical output";
    EXPECT_LT(z.size(), plain.size() / 5);
    EXPECT_TRUE(gunzip(z) == plain);
}

} // namespace
} // namespace kdsim
