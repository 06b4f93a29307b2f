// kdsim command line: run a scenario, sweep it over values, compare two runs, check input files, run the reference
// experiments. Exit status: 0 success, 1 the simulation found a violated invariant (a SIMD
// register clobber, a digest that did not verify), 2 bad input (nothing is written),
// 3 internal error.
#include "cli/commands.h"
#include "cli/db_store.h"
#include "cli/precision.h"

#include "report/output_file.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
    using namespace kdsim::cli;
    kdsim::report::remove_temporary_files_on_signals(); // a signal leaves no hidden temporary output file
    CLI::App app{"kdsim - the kernel datapath simulator: what does this kernel policy cost on that CPU?"};
    app.set_version_flag("--version", std::string("kdsim ") + KDSIM_VERSION_TEXT);
    app.require_subcommand(1);

    RunOptions run_opts;
    auto* run = app.add_subcommand("run", "Simulate one scenario and print its summary");
    run->add_option("scenario", run_opts.scenario, "Scenario file (TOML)")->required();
    add_common_options(*run, run_opts.common);
    add_set_option(*run, run_opts.common);
    run->add_option("--json", run_opts.json, "Write all results as JSON to this file");
    run->add_option("--csv", run_opts.csv, "Write all metrics as CSV to this file");
    run->add_option("--trace", run_opts.trace,
                    "Write a trace of the run (Chrome Trace Event Format JSON: open it in ui.perfetto.dev or chrome://tracing)");
    run->add_option("--trace-limit", run_opts.trace_limit,
                    "Keep at most this many trace records; a longer run's trace ends early and says so")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{UINT32_MAX}))
        ->capture_default_str();
    run->add_option("--trace-from", run_opts.trace_from,
                    "Trace from this simulated time on (e.g. 100ms): slices that overlap the window are kept whole");
    run->add_option("--trace-until", run_opts.trace_until, "Trace until this simulated time (e.g. 120ms)");
    run->add_option("--trace-cpus", run_opts.trace_cpus,
                    "Trace only these CPUs: N, N-M (of every machine), MACHINE or MACHINE:N-M, comma-separated");
    run->add_option("--trace-categories", run_opts.trace_categories,
                    "Trace only these records: sched, softirq, irq, nmi, simd, exec, exec:<cost category>, tcp "
                    "(e.g. exec:crypto), comma-separated");
    run->add_option("--trace-format", run_opts.trace_format,
                    "json (Perfetto), ftrace (trace-cmd report text) or auto: ftrace for a *.txt path; "
                    "a path ending in .gz is gzip-compressed")
        ->check(CLI::IsMember({"auto", "json", "ftrace"}))
        ->capture_default_str();
    run->add_flag("-q,--quiet", run_opts.quiet, "Print only the verdict line, and no progress line");
    run->add_option("--precision", run_opts.precision,
                    "Run until every workload rate metric's 95% confidence interval (batch means after an MSER-5 "
                    "warm-up) is within this relative half-width (0.01% to 50%, e.g. 1%), or the scenario ends")
        ->check(CLI::Validator(
            [](std::string& s) {
                std::string why;
                return parse_precision(s, why) ? std::string() : why;
            },
            "PERCENT"));
    run->add_option("--db", run_opts.db, "Store the run and its figures in this SQLite results database (created if absent)");
    run->add_option("--pcap", run_opts.pcap,
                    "Write the frames of every network device into DIR/<machine>-<ifname>.pcap (libpcap, nanosecond "
                    "simulated time; ESP keys in DIR/esp_sa for Wireshark); functional mode only (docs/pcap.md)")
        ->type_name("DIR");

    SweepOptions swp_opts;
    auto* swp = app.add_subcommand("sweep", "Run a scenario at every point of a grid or list of values, in parallel "
                                            "(and over MPI ranks under mpirun)");
    swp->add_option("scenario", swp_opts.scenario, "Scenario file (TOML); its [sweep] table unless --set is given")
        ->required();
    add_common_options(*swp, swp_opts.common);
    swp->add_option("--set", swp_opts.set,
                    "KEY=V1,V2,...: values of a scenario key or profile figure, e.g. machine[0].nic.rx_buffer=1536B,9KiB "
                    "or machine.board.overrides.simd.save=250,300 (repeatable; every combination)");
    swp->add_flag("--list", swp_opts.list, "Take the i-th value of every --set together instead of every combination");
    swp->add_option("--seeds", swp_opts.seeds, "Run every point with each of these seeds: 1..5 or 1,2,7");
    swp->add_option("-j,--jobs", swp_opts.jobs, "Points run at once here (default: one per core; 1 per MPI rank)")
        ->check(CLI::Range(1u, 1024u));
    swp->add_option("--out", swp_opts.out, "Write each point's results JSON and sweep.json into this folder");
    swp->add_option("--metric", swp_opts.metrics,
                    "Summary column WORKLOAD.METRIC (repeatable; default: each workload's first metric)");
    swp->add_option("--db", swp_opts.db,
                    "Store every point that ran, with its values, in this SQLite results database (created if absent)");
    swp->add_flag("-q,--quiet", swp_opts.quiet, "No progress line");

    CompareOptions cmp_opts;
    auto* cmp = app.add_subcommand("compare", "Run (or load) two scenarios and print them side by side with ratios");
    cmp->add_option("before", cmp_opts.a, "Scenario (TOML) or saved results (JSON): the baseline")->required();
    cmp->add_option("after", cmp_opts.b, "Scenario (TOML) or saved results (JSON): the change")->required();
    add_common_options(*cmp, cmp_opts.common);
    add_set_option(*cmp, cmp_opts.common);
    cmp->add_option("--json", cmp_opts.json, "Write the comparison as JSON to this file");

    CheckOptions chk_opts;
    auto* chk = app.add_subcommand("check", "Validate scenario or profile files without running them");
    chk->add_option("files", chk_opts.files, "Scenario or profile files (TOML)")->required();
    chk->add_option("--root", chk_opts.root, "Repository root holding data/ (default: found from the file)");

    ExperimentsOptions exp_opts;
    auto* exp = app.add_subcommand("experiments", "Run the shipped reference experiments and print their summaries");
    exp->add_option("--dir", exp_opts.dir, "Folder holding one sub-folder per experiment")->capture_default_str();
    exp->add_option("--only", exp_opts.only, "Run only these experiments (e.g. e2)");
    exp->add_option("--out", exp_opts.out, "Write each run's JSON into this folder");
    exp->add_flag("--brief", exp_opts.brief, "Print only the experiment tables, not every run's summary");
    add_common_options(*exp, exp_opts.common);
    exp->add_option("--db", exp_opts.db, "Store every run in this SQLite results database (one transaction at the end)");

    DbOptions db_opts;
    auto* dbc = add_db_command(app, db_opts);
    ReportOptions report_opts;
    auto* rep = add_report_command(app, report_opts);

    CalibrateOptions cal_opts;
    auto* cal = app.add_subcommand("calibrate", "Measure this machine (x86-64 Linux) into a complete profile");
    cal->add_option("--out", cal_opts.out, "Profile file to write (atomically)")->capture_default_str();
    cal->add_flag("--quick", cal_opts.quick, "Fewer sizes and samples: under a minute");
    cal->add_option("--base", cal_opts.base,
                    "Profile (name under data/profiles, or file) giving the figures user space cannot measure")
        ->capture_default_str();
    cal->add_flag("--round-profiles", cal_opts.round_profiles,
                  "Also write <stem>.round<k>.toml beside --out: the profile with one [memory] round's figures alone");
    cal->add_option("--internal-measure", cal_opts.internal_measure, "(internal: child measurement)")->group("");

    ValidateOptions val_opts;
    auto* val = app.add_subcommand("validate", "Run real datapath configurations here and compare them with their simulation");
    val->add_flag("--quick", val_opts.quick, "One tiny configuration per kind, one repeat, quick calibration");
    val->add_option("--max-error", val_opts.max_error, "Exit 1 when any compared error exceeds this percentage")
        ->check(CLI::NonNegativeNumber);
    val->add_option("--profile", val_opts.profile, "Profile file to simulate with (default: calibrate this machine now)");
    val->add_option("--out", val_opts.out, "Write the comparison as JSON to this file (atomically)");
    val->add_option("--scenarios", val_opts.scenarios, "Folder of the simulated twins (default: scenarios/validate)");
    val->add_option("--only", val_opts.only, "Run only these configurations");
    val->add_option("--calibrations", val_opts.calibrations,
                    "Calibrate N times and give each prediction's range over the N profiles (default 1: over the "
                    "[memory] rounds of the one calibration)")
        ->check(CLI::Range(1, 20));

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int rc = app.exit(e);
        return rc == 0 ? 0 : EXIT_BAD_INPUT;
    }

    try {
        if (*run) return cmd_run(run_opts);
        if (*swp) return cmd_sweep(swp_opts);
        if (*cmp) return cmd_compare(cmp_opts);
        if (*chk) return cmd_check(chk_opts);
        if (*exp) return cmd_experiments(exp_opts);
        if (*cal) return cmd_calibrate(cal_opts);
        if (*val) return cmd_validate(val_opts);
        if (*dbc) return cmd_db(db_opts);
        if (*rep) return cmd_report(report_opts);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kdsim: internal error: %s\n", e.what());
        return EXIT_INTERNAL;
    }
    return EXIT_INTERNAL;
}
