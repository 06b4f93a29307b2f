"""The Python package kdsim (docs/python.md) against the kdsim binary: a run from Python gives the
CLI's results JSON byte for byte, the DataFrames keep every figure with its unit, overrides move
figures by the amounts the profile's own formulas give, and bad input raises with file:line.

Run by CTest (tests/python/CMakeLists.txt) with KDSIM_BIN and KDSIM_ROOT set and the built
package on PYTHONPATH."""

import json
import os
import subprocess

import pandas as pd
import pytest

import kdsim

ROOT = os.environ["KDSIM_ROOT"]
KDSIM = os.environ["KDSIM_BIN"]

TCRYPT = os.path.join(ROOT, "scenarios/e3/tcrypt-sha1-generic.toml")      # 1 s of tcrypt sha1-generic, 2 KiB blocks
PINGPONG = os.path.join(ROOT, "scenarios/seeds/arp-pingpong-irq-jitter.toml")  # seeds change its round trips
UNSAFE = os.path.join(ROOT, "scenarios/unsafe/arm32-softirq-neon-no-bh.toml")  # must be caught clobbering
INVALID = os.path.join(ROOT, "tests/scenarios/invalid/bad-duration-unit.toml")

# The e500v2 profile's sha1-generic figures (data/profiles/powerpc/p1014-e500v2.toml) and clock.
CLOCK_HZ = 800e6
SHA1_CYCLES_PER_CALL = 1860
BLOCK = 2048


def cli_json(tmp_path, scenario, *args):
    out = tmp_path / "cli.json"
    proc = subprocess.run([KDSIM, "run", scenario, "--quiet", "--json", str(out), *args],
                          capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    return out.read_text()


def test_a_run_from_python_writes_the_json_text_of_kdsim_run(tmp_path):
    assert kdsim.Scenario(TCRYPT).run().json() == cli_json(tmp_path, TCRYPT)


def test_seed_and_mode_give_the_json_of_kdsim_run_with_the_same_options(tmp_path):
    from_python = kdsim.run(PINGPONG, seed=7, mode="functional").json()
    assert from_python == cli_json(tmp_path, PINGPONG, "--seed", "7", "--mode", "functional")
    assert json.loads(from_python)["seed"] == 7
    assert kdsim.run(PINGPONG, seed=8).json() != from_python  # the seed matters here


def test_a_run_with_findings_gives_the_cli_json_too(tmp_path):
    run = kdsim.run(UNSAFE)
    assert run.failed
    assert run.json() == cli_json(tmp_path, UNSAFE)


def test_statistics_keep_every_statistic_with_its_unit_and_value(tmp_path):
    stats = kdsim.run(TCRYPT).statistics
    cli = json.loads(cli_json(tmp_path, TCRYPT))["statistics"]
    registered = stats[stats.source == "statistic"]
    assert list(registered.path) == [s["path"] for s in cli]
    assert list(registered.unit) == [s["unit"] for s in cli]
    assert list(registered.value) == [s["value"] for s in cli]
    row = stats.set_index("path").loc["board/cpu0/softirq/runs"]
    assert (row.machine, row.cpu, row.unit) == ("board", 0, "count")


def test_cycles_by_context_and_category_are_statistics_with_parsed_columns(tmp_path):
    run = kdsim.run(TCRYPT)
    cpu0 = json.loads(cli_json(tmp_path, TCRYPT))["machines"][0]["cpus"][0]["cycles"]
    stats = run.statistics.set_index("path")
    for context, categories in cpu0.items():
        for category, n in categories.items():
            row = stats.loc[f"board/cpu0/cycles/{context}/{category}"]
            assert (row.machine, row.cpu, row.context, row.category) == ("board", 0, context, category)
            assert (row.value, row.unit) == (n, "cycles")
    # the per-category figure sums the contexts: timer cycles here are all hardirq ones
    assert stats.loc["board/cpu0/cycles/timer"].value == cpu0["hardirq"]["timer"]
    assert pd.isna(stats.loc["board/cpu0/cycles/timer"].context)
    assert run.value("board/cpu0/cycles/task/crypto") == cpu0["task"]["crypto"]
    cycles = run.cycles
    assert cycles.cycles.sum() == sum(n for cats in cpu0.values() for n in cats.values())


def test_metrics_have_units_and_equal_the_clis():
    metrics = kdsim.run(TCRYPT).metrics.set_index("metric")
    assert metrics.loc["mb_per_s", "unit"] == "MB/s"
    assert metrics.loc["block_size", ["value", "unit"]].tolist() == [BLOCK, "bytes"]
    # one op hashes a 2 KiB block: 2048 x 21.3 cycles/byte + 1860 cycles per call, whole cycles, at 800 MHz
    assert metrics.loc["us_per_op_p50", "value"] == pytest.approx(
        round(BLOCK * 21.3 + SHA1_CYCLES_PER_CALL) / CLOCK_HZ * 1e6)


def test_a_profile_override_moves_the_time_per_op_by_the_hand_computed_amount():
    base = kdsim.Scenario(TCRYPT)
    faster = base.override("hash.sha1.generic.cycles_per_byte", 10)
    run = faster.run()
    assert run.metric("tcrypt.us_per_op_p50") == pytest.approx((BLOCK * 10 + SHA1_CYCLES_PER_CALL) / CLOCK_HZ * 1e6)
    assert run.metric("tcrypt.us_per_op_p50") < base.run().metric("tcrypt.us_per_op_p50")
    assert any("hash.sha1.generic.cycles_per_byte" in o for o in run.machines.overrides[0])
    assert base.overrides == ()  # scenarios are immutable


def test_set_and_duration_change_scenario_keys():
    run = kdsim.Scenario(TCRYPT).set("machine[0].workload[0].block_size", "1 KiB").run(duration="100 ms")
    assert run.simulated_us == pytest.approx(100_000)
    assert run.metric("tcrypt.block_size") == 1024


def test_a_scenario_given_as_text_runs_like_its_file(tmp_path):
    with open(TCRYPT) as f:
        text = f.read()
    run = kdsim.Scenario.from_text(text, name="tcrypt.toml").run()
    cli = json.loads(cli_json(tmp_path, TCRYPT))
    mine = json.loads(run.json())
    assert mine["scenario_path"] == "tcrypt.toml"
    mine["scenario_path"] = cli["scenario_path"]
    assert mine == cli


def test_findings_are_a_dataframe_with_the_counts_of_the_json(tmp_path):
    run = kdsim.run(UNSAFE)
    cli = json.loads(cli_json(tmp_path, UNSAFE))
    findings = run.findings
    assert len(findings) == len(cli["findings"]) > 0
    assert set(findings.kind) <= {"simd_clobber", "digest_mismatch"}
    assert "simd_clobber" in set(findings.kind)
    counts = run.finding_counts.set_index("kind")["count"]
    assert counts.sum() == sum(c["count"] for c in cli["finding_counts"])


def test_bad_input_in_a_file_raises_with_file_line_and_key():
    with pytest.raises(kdsim.ScenarioError) as e:
        kdsim.run(INVALID)
    assert "bad-duration-unit.toml:13:" in str(e.value)
    assert "machine[0].workload[0].period" in str(e.value)
    file, line, column, key, message = e.value.diagnostics[0]
    assert (file.endswith("bad-duration-unit.toml"), line, key) == (True, 13, "machine[0].workload[0].period")
    assert isinstance(e.value, ValueError)


def test_bad_input_in_text_names_the_text_and_its_line():
    text = '[scenario]\nname = "t"\nduration = "3 parsecs"\n'
    with pytest.raises(kdsim.ScenarioError, match=r"my\.toml:3:\d+: error: scenario\.duration"):
        kdsim.Scenario.from_text(text, name="my.toml").check()


def test_a_bad_override_names_the_key_it_came_from():
    with pytest.raises(kdsim.ScenarioError, match=r"set machine\[0\]\.workload\[0\]\.block_size=lots"):
        kdsim.Scenario(TCRYPT).set("machine[0].workload[0].block_size", "lots").run()
    with pytest.raises(kdsim.ScenarioError, match="timing"):
        kdsim.run(TCRYPT, mode="fast")


def test_a_sweep_is_one_dataframe_with_the_swept_keys_as_columns():
    sweep = kdsim.Scenario(TCRYPT).sweep({"machine[0].overrides.hash.sha1.generic.cycles_per_byte": [10, 20]},
                                          seeds=[1, 2], duration="50 ms", jobs=2)
    key = "machine[0].overrides.hash.sha1.generic.cycles_per_byte"
    df = sweep.frame
    assert list(df[key]) == [10, 10, 20, 20]
    assert list(df.seed) == [1, 2, 1, 2]
    assert list(df.status) == ["ok"] * 4
    assert sweep.units["tcrypt.us_per_op_p50"] == "us"
    expected = [(BLOCK * c + SHA1_CYCLES_PER_CALL) / CLOCK_HZ * 1e6 for c in (10, 10, 20, 20)]
    assert list(df["tcrypt.us_per_op_p50"]) == pytest.approx(expected)
    long = sweep.metrics()
    assert set(long.columns[:3]) == {"point", key, "seed"}
    assert len(long) == 4 * len(sweep.runs[0].metrics)


def test_a_sweep_point_gives_the_json_of_kdsim_sweep(tmp_path):
    key = "machine[0].workload[0].block_size"
    sweep = kdsim.sweep(TCRYPT, {key: ["1 KiB", "4 KiB"], "scenario.duration": ["20 ms"]}, jobs=2)
    subprocess.run([KDSIM, "sweep", TCRYPT, "--quiet", "-j", "1", "--set", f"{key}=1 KiB,4 KiB",
                    "--set", "scenario.duration=20 ms", "--out", str(tmp_path)], check=True, capture_output=True)
    assert len(sweep.runs) == 2
    for i in range(2):
        assert sweep.json(i) == (tmp_path / f"point-{i}.json").read_text()
    assert list(sweep.frame[key]) == ["1 KiB", "4 KiB"]
    assert list(sweep.frame["tcrypt.block_size"]) == [1024, 4096]


def test_an_empty_grid_takes_the_scenarios_own_sweep_table():
    with open(TCRYPT) as f:
        text = f.read()
    text = text.replace('duration = "1 s"', 'duration = "10 ms"') + (
        '\n[sweep]\ncombine = "list"\n[sweep.set]\n"machine[0].workload[0].block_size" = ["512 B", "1 KiB"]\n'
        '"machine[0].overrides.hash.sha1.generic.cycles_per_byte" = [10, 20]\n')
    sweep = kdsim.Scenario.from_text(text).sweep({})
    df = sweep.frame
    assert len(df) == 2  # a list: the i-th values together
    expected = [(512 * 10 + SHA1_CYCLES_PER_CALL) / CLOCK_HZ * 1e6, (1024 * 20 + SHA1_CYCLES_PER_CALL) / CLOCK_HZ * 1e6]
    assert list(df["tcrypt.us_per_op_p50"]) == pytest.approx(expected)


def test_a_sweep_over_no_values_is_bad_input():
    with pytest.raises(kdsim.ScenarioError, match="empty"):
        kdsim.sweep(TCRYPT, {"machine[0].workload[0].block_size": []})


def test_read_json_gives_back_the_run(tmp_path):
    text = cli_json(tmp_path, TCRYPT)
    back = kdsim.read_json(tmp_path / "cli.json")
    assert back.json() == text
    assert back.metric("tcrypt.block_size") == BLOCK


def test_an_experiment_set_gives_the_table_of_kdsim_experiments():
    x = kdsim.experiment(os.path.join(ROOT, "scenarios/e4"))
    assert x.id == "E4"
    assert list(x.table.index) == [os.path.splitext(os.path.basename(s))[0]
                                   for s in kdsim._kdsim.experiment(os.path.join(ROOT, "scenarios/e4/experiment.toml"))["scenarios"]]
    assert set(x.table.verdict) == {"ok"}
    for label, metric, per in x.columns:
        for stem, run in x.runs.items():
            value = run.value(metric)
            if per and value is not None:
                value = value / run.value(per) if run.value(per) else None
            if value is None:
                assert pd.isna(x.table.loc[stem, label])
            else:
                assert x.table.loc[stem, label] == pytest.approx(value)
