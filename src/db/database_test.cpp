// The results database: a run stored and read back keeps every figure and unit; the run's
// metadata and the filters; one transaction per add; files that are not kdsim's, or of a newer
// schema, are refused without being changed.
#include "db/database.h"
#include "db/export.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace kdsim::db {
namespace {

namespace fs = std::filesystem;

class DbTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("kdsim_db_test_" + std::to_string(::getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string file(const char* name) const { return (dir_ / name).string(); }
    // Runs raw SQL on a file outside the Database class (to prepare foreign or future files).
    static void raw(const std::string& path, const char* sql) {
        sqlite3* h = nullptr;
        ASSERT_EQ(sqlite3_open(path.c_str(), &h), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(h, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
        sqlite3_close(h);
    }
    fs::path dir_;
};

results::RunResults sample_run() {
    results::RunResults r;
    r.scenario = "e5-sample";
    r.scenario_path = "scenarios/e5/sample.toml";
    r.seed = 7;
    r.mode = "timing";
    r.simulated_us = 200000.5;
    r.events = 123456789;
    r.statistics.push_back({"board/netdev/eth0/rx_frames", "count", "frames received", 5692, true});
    r.statistics.push_back({"board/dma/cycles", "cycles", "cache maintenance", 1.5e9 + 1, true});
    r.statistics.push_back({"board/mem/dram/busy_fraction", "ratio", "", 0.1 + 0.2, false}); // not exactly 0.3
    results::WorkloadResult w;
    w.name = "iperf3";
    w.machine = "board";
    w.metrics.push_back({"receiver_mbit_s", 338.133989744, "Mbit/s"});
    r.workloads.push_back(w);
    results::MachineResult m;
    m.name = "board";
    results::CpuResult c;
    c.id = 1;
    c.busy_us = 12.25;
    c.idle_us = 3.5;
    c.cycles["task"]["crypto"] = 100;
    c.cycles["softirq"]["crypto"] = 23;
    c.cycles["hardirq"]["irq_entry_exit"] = 9;
    m.cpus.push_back(c);
    r.machines.push_back(m);
    return r;
}

RunInfo sample_info() { return RunInfo{"run", "", "abc", "0.1", {"link[0].rate=2.5Gbit/s"}, 1.25}; }

const Row* find(const std::vector<Row>& rows, const std::string& path) {
    for (const Row& r : rows)
        if (r.stat.path == path) return &r;
    return nullptr;
}

TEST_F(DbTest, EveryStatisticReadBackEqualsWhatWasStoredWithItsUnit) {
    const results::RunResults in = sample_run();
    const std::string path = file("r.sqlite");
    std::int64_t id = 0;
    {
        Database db(path);
        id = db.add(in, sample_info());
    }
    Database db(path); // reopened: the data is on disk
    const std::vector<Row> rows = db.rows(Filter{});
    for (const results::Statistic& s : in.statistics) {
        const Row* r = find(rows, s.path);
        ASSERT_NE(r, nullptr) << s.path;
        EXPECT_EQ(r->run_id, id);
        EXPECT_EQ(r->stat.unit, s.unit) << s.path;
        EXPECT_EQ(r->stat.value, s.value) << s.path; // bit for bit
        EXPECT_EQ(r->stat.integral, s.integral) << s.path;
        EXPECT_EQ(r->stat.description, s.description) << s.path;
    }
    const Row* mbit = find(rows, "workload.iperf3.receiver_mbit_s");
    ASSERT_NE(mbit, nullptr);
    EXPECT_EQ(mbit->stat.value, 338.133989744);
    EXPECT_EQ(mbit->stat.unit, "Mbit/s");
    const Row* crypto = find(rows, "board/cpu1/cycles/crypto"); // 100 in task + 23 in softirq
    ASSERT_NE(crypto, nullptr);
    EXPECT_EQ(crypto->stat.value, 123);
    EXPECT_EQ(crypto->stat.unit, "cycles");
    const Row* busy = find(rows, "board/cpu1/busy_us");
    ASSERT_NE(busy, nullptr);
    EXPECT_EQ(busy->stat.value, 12.25);
    // 3 statistics + 1 metric + busy, idle, longest span + 2 categories
    EXPECT_EQ(rows.size(), 3u + 1u + 3u + 2u);
}

TEST_F(DbTest, ARunKeepsItsScenarioHashSeedOverridesAndVerdict) {
    Database db(file("r.sqlite"));
    results::RunResults failed = sample_run();
    failed.failed = true;
    failed.failures = {"board: 1 stale DMA read"};
    db.add(failed, sample_info());
    const std::vector<StoredRun> runs = db.runs(Filter{});
    ASSERT_EQ(runs.size(), 1u);
    const StoredRun& r = runs[0];
    // SHA-256("abc"), FIPS 180-2 appendix B.1
    EXPECT_EQ(r.scenario_hash, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(r.seed, 7u);
    EXPECT_EQ(r.verdict, "failed");
    EXPECT_EQ(r.failures, std::vector<std::string>{"board: 1 stale DMA read"});
    EXPECT_EQ(r.overrides, std::vector<std::string>{"link[0].rate=2.5Gbit/s"});
    EXPECT_EQ(r.events, 123456789u);
    EXPECT_EQ(r.wall_s, 1.25);
    EXPECT_EQ(r.kdsim_version, "0.1");
    EXPECT_EQ(r.statistics, 9u);
}

TEST_F(DbTest, FiltersSelectByScenarioHashPrefixSeedAndPathGlob) {
    Database db(file("r.sqlite"));
    results::RunResults a = sample_run(), b = sample_run();
    b.scenario = "other";
    b.seed = 8;
    RunInfo ib = sample_info();
    ib.scenario_text = "xyz";
    db.add({Entry{&a, sample_info()}, Entry{&b, ib}});
    auto scenario = [](const char* s) {
        Filter f;
        f.scenario = s;
        return f;
    };
    Filter seed8, glob, seed7_workloads;
    seed8.seed = 8;
    glob.path_glob = "*/dma/*";
    seed7_workloads.seed = 7;
    seed7_workloads.path_glob = "workload.*";
    EXPECT_EQ(db.runs(scenario("other")).size(), 1u);
    EXPECT_EQ(db.runs(scenario("ba7816bf")).front().scenario, "e5-sample");
    EXPECT_EQ(db.runs(seed8).front().scenario, "other");
    EXPECT_TRUE(db.runs(scenario("ba78")).empty()); // a hash prefix needs 8 digits
    const std::vector<Row> dma = db.rows(glob);
    ASSERT_EQ(dma.size(), 2u); // one per run
    EXPECT_EQ(dma[0].stat.path, "board/dma/cycles");
    EXPECT_EQ(db.rows(seed7_workloads).size(), 1u);
}

TEST_F(DbTest, AFailedAddLeavesNothingHalfWritten) {
    const std::string path = file("r.sqlite");
    { Database db(path); }
    // a statistic that the file refuses, in the second of two runs
    raw(path, "CREATE TRIGGER refuse BEFORE INSERT ON statistics WHEN NEW.path = 'bad' BEGIN SELECT RAISE(ABORT, 'refused'); END;");
    Database db(path);
    results::RunResults a = sample_run(), b = sample_run();
    b.statistics.push_back({"bad", "count", "", 1, true});
    EXPECT_THROW(db.add({Entry{&a, sample_info()}, Entry{&b, sample_info()}}), DbError);
    EXPECT_TRUE(db.runs(Filter{}).empty());
    EXPECT_TRUE(db.rows(Filter{}).empty());
}

TEST_F(DbTest, AFileOfAnotherProgramIsRefusedAndLeftUnchanged) {
    const std::string path = file("other.sqlite");
    raw(path, "CREATE TABLE accounts (id INTEGER);");
    const auto size = fs::file_size(path);
    EXPECT_NE(check_database(path).find("another program"), std::string::npos) << check_database(path);
    EXPECT_THROW(Database{path}, DbError);
    EXPECT_EQ(fs::file_size(path), size);
}

TEST_F(DbTest, AFileThatIsNotSqliteIsRefused) {
    const std::string path = file("notes.sqlite");
    std::ofstream(path) << "these are my notes, not a database; they are long enough to have a header of sorts\n";
    EXPECT_NE(check_database(path).find("not an SQLite database"), std::string::npos) << check_database(path);
    EXPECT_THROW(Database{path}, DbError);
}

TEST_F(DbTest, ANewerSchemaIsRefused) {
    const std::string path = file("future.sqlite");
    { Database db(path); }
    raw(path, "PRAGMA user_version = 2;");
    EXPECT_NE(check_database(path).find("newer"), std::string::npos) << check_database(path);
    EXPECT_THROW(Database{path}, DbError);
}

TEST_F(DbTest, CheckingAnAbsentFileAcceptsItWithoutCreatingIt) {
    const std::string path = file("new.sqlite");
    EXPECT_EQ(check_database(path), "");
    EXPECT_FALSE(fs::exists(path));
}

TEST_F(DbTest, CsvExportQuotesFieldsAndKeepsEveryDigit) {
    std::vector<Row> rows{{3, "a,b", 1, {"p/x", "Mbit/s", "", 0.1 + 0.2, false}}};
    EXPECT_EQ(rows_csv(rows), "run_id,scenario,seed,path,value,unit,integral\n"
                              "3,\"a,b\",1,p/x,0.30000000000000004,Mbit/s,0\n");
    EXPECT_EQ(rows_json(rows)[0]["value"].get<double>(), 0.1 + 0.2);
}

} // namespace
} // namespace kdsim::db
