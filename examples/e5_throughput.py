# %% [markdown]
# # E5 from Python: receive throughput before and after, per platform
#
# Reproduces the plot of experiment E5 (scenarios/e5): an iperf3 TCP stream into three boards,
# lan743x with 9 KiB rx buffers synced whole ("before") versus MTU-sized buffers synced over the
# received length ("after"). Left: receive throughput; right: the cycles per packet spent in
# cache maintenance, the mechanism behind the difference on the non-coherent ARM boards.
#
# Run it as a script (`PYTHONPATH=build/python /usr/bin/python3 examples/e5_throughput.py out.png`)
# or cell by cell in an editor that knows `# %%` cells (VS Code, Spyder, Jupytext).

# %%
import os
import sys

import matplotlib

if "MPLBACKEND" not in os.environ and not os.environ.get("DISPLAY"):
    matplotlib.use("Agg")
import matplotlib.pyplot as plt

import kdsim

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = sys.argv[1] if len(sys.argv) > 1 else "e5-throughput.png"

# %% Run the experiment set: one Run per scenario, and the table `kdsim experiments` prints.
e5 = kdsim.experiment(os.path.join(ROOT, "scenarios", "e5"))
print(e5.title)
print(e5.table[["rx Mbit/s", "cache-maint cyc/pkt", "verdict"]].to_string())

# %% Pair each platform's "before" scenario (<platform>-9k-full-sync) with its "after".
pairs = [(s, s.replace("-9k-full-sync", "-mtu-partial-sync")) for s in e5.runs if s.endswith("-9k-full-sync")]
platforms = [before.split("-")[0] for before, _ in pairs]
rx = {kind: [e5.runs[p[i]].metric("iperf3.receiver_mbit_s") for p in pairs] for i, kind in enumerate(("before", "after"))}
maint = {kind: [e5.table.loc[p[i], "cache-maint cyc/pkt"] for p in pairs] for i, kind in enumerate(("before", "after"))}
unit = e5.runs[pairs[0][0]].metrics.set_index("metric").loc["receiver_mbit_s", "unit"]

# %% Plot: grouped bars, before and after, per platform.
fig, (ax_rx, ax_maint) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
x = range(len(platforms))
width = 0.38
for offset, kind, label in ((-width / 2, "before", "9 KiB buffers, full sync"),
                            (width / 2, "after", "MTU buffers, partial sync")):
    ax_rx.bar([i + offset for i in x], rx[kind], width, label=label)
    ax_maint.bar([i + offset for i in x], maint[kind], width, label=label)
ax_rx.set_title("iperf3 receive throughput")
ax_rx.set_ylabel(unit)
ax_maint.set_title("cache maintenance per packet")
ax_maint.set_ylabel("cycles / packet")
for ax in (ax_rx, ax_maint):
    ax.set_xticks(list(x))
    ax.set_xticklabels(platforms)
    ax.grid(axis="y", alpha=0.3)
ax_maint.legend(loc="upper right", fontsize="small")
fig.suptitle(f"{e5.id}: {e5.title}", fontsize="medium")
fig.savefig(OUT, dpi=120)
print(f"wrote {OUT}")
