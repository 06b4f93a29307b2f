// kdsim sweep: a scenario run at every point of a grid or list of values (scenario/sweep.h),
// optionally over several seeds, on the local cores (-j) and, under mpirun, spread over the MPI
// ranks with the outcomes gathered on rank 0. Every point is loaded before anything runs: a
// value no point can use (an unknown key, a wrong unit, a value out of range) is bad input
// (exit 2, nothing written); a point that fails on its own combination, or violates an
// invariant, is kept in the summary as such and the others go on.
#include "cli/commands.h"
#include "cli/db_store.h"
#include "cli/sweep.h"

#include "report/output_file.h"
#include "report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace kdsim::cli {

namespace fs = std::filesystem;

bool sweep::mpi::launched() {
    for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
        if (std::getenv(v)) return true;
    return false;
}

namespace {

// MPI for the command's lifetime, when mpirun started it.
struct MpiSession {
    sweep::mpi::World world;
    bool active = false;
    MpiSession() {
#if KDSIM_HAVE_MPI
        if (sweep::mpi::launched()) {
            world = sweep::mpi::init();
            active = true;
        }
#endif
    }
    ~MpiSession() {
#if KDSIM_HAVE_MPI
        if (active) sweep::mpi::finalize();
#endif
    }
    // Rank 0's verdict on every rank.
    int agree(int rc) const {
#if KDSIM_HAVE_MPI
        if (active) return sweep::mpi::broadcast(rc);
#endif
        return rc;
    }
};

using Definition = runner::SweepDefinition;

// The sweep from --set (or the scenario's [sweep]), --list and --seeds. Throws InputError.
Definition define(const SweepOptions& o) {
    std::vector<scenario::SweepAxis> axes;
    for (const std::string& a : o.set) axes.push_back(scenario::parse_set_argument(a));
    auto bad = [](std::string origin, std::string message) {
        return scenario::InputError({scenario::Diagnostic{std::move(origin), 0, 0, "", std::move(message)}});
    };
    std::optional<std::vector<std::uint64_t>> seeds;
    if (!o.seeds.empty()) {
        if (o.common.seed) throw bad("--seeds", "give either --seed (one seed for every point) or --seeds, not both");
        std::string why;
        seeds = scenario::parse_seeds(o.seeds, why);
        if (!seeds) throw bad("--seeds " + o.seeds, why);
    }
    return runner::define_sweep(o.scenario, load_options(o.common), std::move(axes), o.list, seeds);
}

// "point-007.json": numbered with as many digits as the last point needs.
std::string point_file(std::size_t index, std::size_t count) {
    return fmt::format("point-{:0{}}.json", index, std::to_string(count > 0 ? count - 1 : 0).size());
}

// Writes each run's JSON and sweep.json into `dir`. Returns "" or why it could not.
std::string write_out(const fs::path& dir, const SweepOptions& o, const Definition& d,
                      const std::vector<sweep::Outcome>& outcomes) {
    std::vector<std::string> files(d.points.size());
    try {
        for (const auto& oc : outcomes) {
            if (oc.json.empty()) continue;
            files[oc.index] = point_file(oc.index, d.points.size());
            report::AtomicFile f(dir / files[oc.index]);
            f.write(oc.json);
            f.close();
            f.commit();
        }
        report::AtomicFile f(dir / "sweep.json");
        f.write(sweep::index_json(o.scenario, d.spec, d.points, outcomes, files));
        f.close();
        f.commit();
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

// Stores every point that ran in the --db database, with its values as "key=value" overrides.
bool store(const SweepOptions& o, const Definition& d, const std::vector<sweep::Outcome>& outcomes) {
    std::vector<results::RunResults> runs;
    std::vector<const sweep::Outcome*> ran;
    for (const auto& oc : outcomes)
        if (!oc.json.empty()) {
            runs.push_back(report::from_json(nlohmann::json::parse(oc.json)));
            ran.push_back(&oc);
        }
    std::vector<db::Entry> entries;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        std::vector<std::string> overrides;
        for (const auto& a : d.points[ran[i]->index].set) overrides.push_back(a.key + "=" + a.value);
        entries.push_back(db::Entry{&runs[i], run_info("sweep", o.scenario, ran[i]->wall_s, "", std::move(overrides))});
    }
    return store_runs(o.db, entries);
}

} // namespace

int cmd_sweep(const SweepOptions& o) {
    MpiSession mpi;
    const bool root = mpi.world.rank == 0;
    auto refuse = [&](const std::string& message) {
        if (root) std::fprintf(stderr, "kdsim: %s\nkdsim: nothing was run or written\n", message.c_str());
        return EXIT_BAD_INPUT;
    };
#if !KDSIM_HAVE_MPI
    if (sweep::mpi::launched())
        if (const char* n = std::getenv("OMPI_COMM_WORLD_SIZE"); n && std::string(n) != "1")
            return refuse("started by mpirun, but this kdsim was built without MPI (install libopenmpi-dev and rebuild)");
#endif
    const auto ranks = static_cast<std::size_t>(mpi.world.size);
    const unsigned jobs = o.jobs ? o.jobs : ranks > 1 ? 1u : std::max(1u, std::thread::hardware_concurrency());
    Definition d;
    std::vector<sweep::Loaded> loaded;
    try {
        d = define(o);
        if (auto bad = runner::load_points(o.scenario, load_options(o.common), d, jobs, loaded); !bad.empty()) throw scenario::InputError(std::move(bad));
    } catch (const scenario::InputError& e) {
        if (root) print_input_error(e);
        return EXIT_BAD_INPUT;
    }
    if (ranks > d.points.size())
        return refuse(fmt::format("mpirun started {} ranks for {} point(s): every rank needs a point; run with "
                                  "-np {} or fewer",
                                  ranks, d.points.size(), d.points.size()));
    std::string db_refusal = root && !o.db.empty() ? database_refusal(o.db) : "";
    if (mpi.agree(db_refusal.empty() ? EXIT_OK : EXIT_BAD_INPUT) != EXIT_OK)
        return refuse(fmt::format("--db {}: {}", o.db, db_refusal));
    if (root && !o.out.empty()) {
        std::error_code ec;
        fs::create_directories(o.out, ec);
        if (ec || !fs::is_directory(o.out))
            std::fprintf(stderr, "kdsim: --out %s: %s\n", o.out.c_str(),
                         ec ? ec.message().c_str() : "exists and is not a directory");
    }
    if (mpi.agree(!o.out.empty() && !fs::is_directory(o.out) ? EXIT_BAD_INPUT : EXIT_OK) != EXIT_OK)
        return refuse("--out: cannot write into that folder");

    std::vector<std::size_t> mine; // the points of this rank: MPI decides who runs what by rank
    for (std::size_t i = static_cast<std::size_t>(mpi.world.rank); i < d.points.size(); i += ranks) mine.push_back(i);
    ProgressLine line(root && progress_wanted(o.quiet));
    std::vector<sweep::Outcome> outcomes = sweep::run_points(d.points, loaded, mine, jobs, line);
#if KDSIM_HAVE_MPI
    if (mpi.active && ranks > 1) {
        std::vector<std::string> parts = sweep::mpi::gather(sweep::encode(outcomes));
        outcomes.clear();
        for (const std::string& p : parts)
            for (auto& oc : sweep::decode(p)) outcomes.push_back(std::move(oc));
        std::sort(outcomes.begin(), outcomes.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
    }
#endif
    int rc = EXIT_OK;
    if (root) {
        const auto metrics = sweep::metric_columns(outcomes, o.metrics);
        std::fputs(sweep::summary(o.scenario, d.spec, d.points, outcomes, metrics).c_str(), stdout);
        std::fflush(stdout);
        if (!o.out.empty())
            if (std::string why = write_out(o.out, o, d, outcomes); !why.empty()) {
                std::fprintf(stderr, "kdsim: --out: %s\n", why.c_str());
                rc = EXIT_INTERNAL;
            }
        if (rc == EXIT_OK && !o.db.empty() && !store(o, d, outcomes)) rc = EXIT_BAD_INPUT;
        if (rc == EXIT_OK && std::any_of(outcomes.begin(), outcomes.end(), [](const auto& oc) { return oc.status != "ok"; }))
            rc = EXIT_FINDINGS;
    }
    return mpi.agree(rc);
}

} // namespace kdsim::cli
