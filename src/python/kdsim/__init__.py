"""kdsim from Python: load a scenario, override its keys and profile figures, run it, and read
the results as pandas DataFrames (docs/python.md).

    import kdsim
    sc = kdsim.Scenario("scenarios/e5/x86-9k-full-sync.toml").set("link[0].rate", "2.5 Gbit/s")
    run = sc.run(seed=2, duration="20 ms")
    run.metrics            # one row per workload metric, with its unit
    run.statistics         # every statistic: path, machine, cpu, context, category, value, unit
    run.json()             # the text `kdsim run --json` writes, byte for byte
    sweep = sc.sweep({"machine[0].nic.rx_buffer": ["1536 B", "9 KiB"]}, seeds=[1, 2])
    sweep.frame            # one row per point, the swept keys as columns

Runs happen in the C++ core (kdsim._kdsim) through the same code as the kdsim binary, without
holding the GIL. Bad input raises ScenarioError, whose message is the CLI's
"file:line:col: error: key: ..." lines and whose .diagnostics lists them as tuples.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import pandas as pd

from . import _kdsim
from ._kdsim import RESULTS_FORMAT_VERSION, ScenarioError

__all__ = [
    "Scenario", "Run", "Sweep", "Experiment", "ScenarioError", "load", "run", "sweep", "experiment",
    "read_json", "CONTEXTS", "CATEGORIES", "RESULTS_FORMAT_VERSION",
]

# The kernel's execution contexts and the cost categories every cycle is charged to.
CONTEXTS: tuple = tuple(_kdsim.CONTEXTS)
CATEGORIES: tuple = tuple(_kdsim.CATEGORIES)

PathLike = Union[str, "os.PathLike[str]"]


def _value_text(value: Any) -> str:
    """A Python value as a scenario value: booleans and numbers as TOML, strings as given (so
    "9 KiB" and "1536" read as they do after `kdsim sweep --set`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return value
    raise TypeError(f"a scenario value must be a str, int, float or bool, found {type(value).__name__}")


class Scenario:
    """A scenario file (or TOML text) with the overrides to apply before it is loaded. Scenarios
    are immutable: set() and override() return a new one."""

    def __init__(self, path: PathLike, *, root: Optional[PathLike] = None,
                 _text: Optional[str] = None, _set: Sequence[tuple] = ()):
        self.path = os.fspath(path)
        self.root = os.fspath(root) if root is not None else None
        self.text = _text
        self.overrides: tuple = tuple(_set)

    @classmethod
    def from_text(cls, text: str, *, name: str = "<text>", root: Optional[PathLike] = None) -> "Scenario":
        """A scenario given as TOML text; errors name it `name`. Profiles and data files are found
        under `root`, by default the repository this package was built from."""
        return cls(name, root=root, _text=text)

    def _source(self):
        return _kdsim.Source(self.path, self.text, self.root or "")

    def set(self, key: Union[str, Mapping[str, Any]], value: Any = None) -> "Scenario":
        """Sets a scenario key as `kdsim sweep --set` does ("link[0].rate", "machine[0].nic.rx_buffer",
        "machine.dut.overrides.simd.save"); a mapping sets several."""
        pairs = list(key.items()) if isinstance(key, Mapping) else [(key, value)]
        added = tuple((str(k), _value_text(v)) for k, v in pairs)
        return Scenario(self.path, root=self.root, _text=self.text, _set=self.overrides + added)

    def override(self, figure: str, value: Union[int, float], machine: Union[int, str] = 0) -> "Scenario":
        """Replaces a profile figure ("simd.save", "hash.sha256.avx2.cycles_per_byte") for one
        machine (its index or name), in the figure's unit, as [machine.overrides] does."""
        where = f"machine[{machine}]" if isinstance(machine, int) else f"machine.{machine}"
        return self.set(f"{where}.overrides.{figure}", value)

    def _with_duration(self, duration: Optional[str]) -> "Scenario":
        return self if duration is None else self.set("scenario.duration", duration)

    def check(self) -> dict:
        """Loads and assembles the scenario without running it: its name and sizes."""
        name, machines, workloads = _kdsim.check(self._source(), list(self.overrides))
        return {"name": name, "machines": machines, "workloads": workloads}

    def run(self, *, seed: Optional[int] = None, mode: Optional[str] = None,
            duration: Optional[str] = None) -> "Run":
        """Runs it once, as `kdsim run` does. seed and mode ("timing" or "functional") replace the
        scenario's, duration ("20 ms") its [scenario] duration."""
        sc = self._with_duration(duration)
        return Run(_kdsim.run(sc._source(), seed, mode or "", list(sc.overrides)))

    def sweep(self, grid: Mapping[str, Sequence[Any]], *, seeds: Union[None, str, Iterable[int]] = None,
              combine: str = "grid", jobs: Optional[int] = None, seed: Optional[int] = None,
              mode: Optional[str] = None, duration: Optional[str] = None) -> "Sweep":
        """Runs it at every point of a grid (or, with combine="list", the i-th values together) of
        values per key, each over `seeds` ("1..5" or a list) when given, on `jobs` threads, as
        `kdsim sweep` does. An empty grid takes the scenario's own [sweep] table."""
        if combine not in ("grid", "list"):
            raise ValueError(f'combine: expected "grid" or "list", found {combine!r}')
        if seeds is not None and seed is not None:
            raise ValueError("give either seed (one seed for every point) or seeds, not both")
        if isinstance(seeds, str):
            seed_list = _kdsim.parse_seeds(seeds)
        elif seeds is not None:
            seed_list = [int(s) for s in seeds]
        else:
            seed_list = None
        sc = self._with_duration(duration)
        axes = [(str(k), [_value_text(v) for v in vs]) for k, vs in grid.items()]
        originals = {str(k): {_value_text(v): v for v in vs} for k, vs in grid.items()}
        keys, points = _kdsim.sweep(sc._source(), seed, mode or "", list(sc.overrides), axes,
                                    combine == "list", seed_list, jobs or 0)
        return Sweep(keys, points, originals, seed_list is not None)

    def __repr__(self) -> str:
        sets = "".join(f", {k}={v}" for k, v in self.overrides)
        return f"Scenario({self.path!r}{sets})"


def _frame(rows: list, columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame.from_records(rows, columns=list(columns))


def _parse_path(path: str, machines: set) -> tuple:
    """(machine, cpu, context, category) of a statistic path, None where the path has none: the
    machine is its first part when that names a machine, the CPU a part cpu<N>, the context and
    category those of a <machine>/cpu<N>/cycles/<context>/<category> path."""
    parts = path.split("/")
    machine = parts[0] if parts[0] in machines else None
    cpu = context = category = None
    for i, p in enumerate(parts):
        if cpu is None and p.startswith("cpu") and p[3:].isdigit():
            cpu = int(p[3:])
        if p == "cycles" and i > 0 and cpu is not None:
            rest = parts[i + 1:]
            if len(rest) == 2 and rest[0] in CONTEXTS:
                context, category = rest
            elif len(rest) == 1 and rest[0] in CATEGORIES:
                category = rest[0]
    return machine, cpu, context, category


class Run:
    """The results of one run (or of a results JSON file read back)."""

    def __init__(self, results: "_kdsim.Results"):
        self._r = results

    scenario = property(lambda self: self._r.scenario, doc="The scenario's name")
    scenario_path = property(lambda self: self._r.scenario_path)
    seed = property(lambda self: self._r.seed)
    mode = property(lambda self: self._r.mode)
    simulated_us = property(lambda self: self._r.simulated_us)
    events = property(lambda self: self._r.events)
    failed = property(lambda self: self._r.failed, doc="True when an invariant was violated (findings)")
    failures = property(lambda self: list(self._r.failures))

    def json(self) -> str:
        """The results JSON, as `kdsim run --json` writes it (format RESULTS_FORMAT_VERSION)."""
        return self._r.json()

    def csv(self) -> str:
        return self._r.csv()

    def summary(self) -> str:
        """The summary `kdsim run` prints."""
        return self._r.summary()

    @property
    def statistics(self) -> pd.DataFrame:
        """Every figure of the run by path: the registered statistics, then each CPU's own figures
        (busy_us, idle_us, ..., cycles/<category> and cycles/<context>/<category>), with the
        machine, cpu, context and category parsed from the path where it has them."""
        rows = [(path, unit, value, integral, description, "statistic")
                for path, unit, value, integral, description in self._r.statistics()]
        rows += [(path, unit, value, integral, description, "cpu")
                 for path, unit, value, integral, description in self._r.cpu_figures()]
        machines = {m[0] for m in self._r.machines()}
        parsed = [_parse_path(r[0], machines) for r in rows]
        df = pd.DataFrame({
            "path": [r[0] for r in rows],
            "machine": [p[0] for p in parsed],
            "cpu": pd.array([p[1] for p in parsed], dtype="Int64"),
            "context": [p[2] for p in parsed],
            "category": [p[3] for p in parsed],
            "value": [r[2] for r in rows],
            "unit": [r[1] for r in rows],
            "integral": [r[3] for r in rows],
            "source": [r[5] for r in rows],
            "description": [r[4] for r in rows],
        })
        return df

    @property
    def metrics(self) -> pd.DataFrame:
        """One row per workload metric: workload, kind, machine, cpu, metric, value, unit."""
        return _frame(self._r.metrics(), ["workload", "kind", "machine", "cpu", "metric", "value", "unit"])

    @property
    def findings(self) -> pd.DataFrame:
        """The violated invariants kept (the first few of each kind per machine)."""
        return _frame(self._r.findings(), ["kind", "machine", "cpu", "time_us", "culprit", "victim", "where"])

    @property
    def finding_counts(self) -> pd.DataFrame:
        """Every finding counted, per machine and kind."""
        return _frame(self._r.finding_counts(), ["kind", "machine", "count"])

    @property
    def cycles(self) -> pd.DataFrame:
        """CPU cycles per machine, cpu, context and cost category (non-zero entries)."""
        return _frame(self._r.cycles(), ["machine", "cpu", "context", "category", "cycles"])

    @property
    def machines(self) -> pd.DataFrame:
        return _frame(self._r.machines(),
                      ["machine", "profile", "arch", "clock_hz", "preempt", "simd_policy", "cpus", "overrides"])

    def value(self, path: str) -> Optional[float]:
        """A figure by results path, as experiment tables name them: "dut/cpu0/busy_us",
        "workload.iperf3.receiver_mbit_s", "@iperf3/dma/cycles", "host/cpu*/softnet/time_squeeze"
        (a * sums), several joined by " + "; None when absent."""
        return self._r.resolve(path)

    def metric(self, name: str) -> float:
        """A workload metric "<workload>.<metric>"; KeyError when the run has none."""
        v = self._r.resolve("workload." + name)
        if v is None:
            raise KeyError(name)
        return v

    def __repr__(self) -> str:
        verdict = "FAILED" if self.failed else "ok"
        return f"<kdsim.Run {self.scenario} seed={self.seed} {self.mode} {self.simulated_us:.0f} us {verdict}>"


class Sweep:
    """The points of a sweep: `frame` has one row per point with the swept keys (as given), the
    seed (when the sweep has seeds), status, message and every workload metric as columns;
    `units` gives each metric column's unit; `runs` holds each point's Run (None if it failed)."""

    def __init__(self, keys: list, points: list, originals: dict, has_seeds: bool):
        self.keys = list(keys)
        self.runs: list = []
        self._json = [text for _, _, _, _, _, text in points]
        rows, self.units = [], {}
        for index, values, seed, status, message, text in points:
            run = Run(_kdsim.results_from_json(text)) if text else None
            self.runs.append(run)
            row = {"point": index}
            for key, value in values:
                row[key] = originals.get(key, {}).get(value, value)
            if has_seeds:
                row["seed"] = seed
            row["status"], row["message"] = status, message
            if run is not None:
                for workload, _, _, _, metric, value, unit in run._r.metrics():
                    row[f"{workload}.{metric}"] = value
                    self.units.setdefault(f"{workload}.{metric}", unit)
            rows.append(row)
        self.frame = pd.DataFrame(rows).set_index("point")
        self.frame.attrs["units"] = dict(self.units)

    def json(self, point: int) -> str:
        """A point's results JSON, as `kdsim sweep --out` writes it ("" when the point failed)."""
        return self._json[point]

    def _long(self, attr: str) -> pd.DataFrame:
        parts = []
        head = self.frame[[c for c in self.frame.columns if c in self.keys or c == "seed"]]
        for point, run in zip(self.frame.index, self.runs):
            if run is None:
                continue
            df = getattr(run, attr)
            for col in reversed(head.columns):
                df.insert(0, col, [head.at[point, col]] * len(df))
            df.insert(0, "point", point)
            parts.append(df)
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()

    def statistics(self) -> pd.DataFrame:
        """Every point's statistics in one long frame, the point and its swept values first."""
        return self._long("statistics")

    def metrics(self) -> pd.DataFrame:
        """Every point's workload metrics in one long frame, the point and its swept values first."""
        return self._long("metrics")

    def value(self, path: str) -> pd.Series:
        """A results path (Run.value) at every point, NaN where a point has none."""
        return pd.Series([r.value(path) if r is not None else None for r in self.runs],
                         index=self.frame.index, name=path, dtype="float64")


class Experiment:
    """An experiment set (scenarios/<eN>/experiment.toml) run: `table` has one row per scenario
    with the manifest's columns and the verdict, as `kdsim experiments` prints it; `runs` maps
    each scenario's file stem to its Run."""

    def __init__(self, info: dict, runs: dict):
        self.id, self.title, self.question = info["id"], info["title"], info["question"]
        self.expect = info["expect"]
        self.columns = list(info["columns"])
        self.compares = list(info["compares"])
        self.runs = runs
        rows = []
        for stem, run in runs.items():
            row = {"scenario": stem}
            for label, metric, per in self.columns:
                row[label] = run._r.column(metric, per)
            row["verdict"] = "FAILED" if run.failed else "ok"
            rows.append(row)
        self.table = pd.DataFrame(rows).set_index("scenario")


def load(scenario: Union[PathLike, str], **kwargs) -> Scenario:
    """A Scenario from a path, or from TOML text when the string holds a newline."""
    if isinstance(scenario, str) and "\n" in scenario:
        return Scenario.from_text(scenario, **kwargs)
    return Scenario(scenario, **kwargs)


def run(scenario: Union[Scenario, PathLike], *, set: Optional[Mapping[str, Any]] = None, **kwargs) -> Run:
    """kdsim.load(scenario).set(set).run(**kwargs)"""
    sc = scenario if isinstance(scenario, Scenario) else load(scenario)
    return (sc.set(set) if set else sc).run(**kwargs)


def sweep(scenario: Union[Scenario, PathLike], grid: Optional[Mapping[str, Sequence[Any]]] = None,
          *, set: Optional[Mapping[str, Any]] = None, **kwargs) -> Sweep:
    """kdsim.load(scenario).set(set).sweep(grid, **kwargs); no grid: the scenario's [sweep] table."""
    sc = scenario if isinstance(scenario, Scenario) else load(scenario)
    return (sc.set(set) if set else sc).sweep(grid or {}, **kwargs)


def experiment(manifest: PathLike, *, seed: Optional[int] = None, mode: Optional[str] = None,
               root: Optional[PathLike] = None) -> Experiment:
    """Runs every scenario of an experiment set (its experiment.toml, or the folder holding it)."""
    manifest = os.fspath(manifest)
    if os.path.isdir(manifest):
        manifest = os.path.join(manifest, "experiment.toml")
    info = _kdsim.experiment(manifest)
    runs = {}
    for path in info["scenarios"]:
        stem = os.path.splitext(os.path.basename(os.fspath(path)))[0]
        runs[stem] = Scenario(path, root=root).run(seed=seed, mode=mode)
    return Experiment(info, runs)


def read_json(path: PathLike) -> Run:
    """A results JSON file (`kdsim run --json`, `kdsim sweep --out`) read back as a Run."""
    with open(path, encoding="utf-8") as f:
        return Run(_kdsim.results_from_json(f.read()))
