"""The example script examples/e5_throughput.py reproduces E5's plot: it runs, writes a PNG, and
the picture is a real plot (not empty, not one flat colour)."""

import os
import subprocess
import sys

import matplotlib.image

ROOT = os.environ["KDSIM_ROOT"]
OUT = os.environ.get("KDSIM_TEST_OUT", ".")


def test_the_e5_example_writes_a_png_of_the_plot():
    png = os.path.join(OUT, "e5-throughput.png")
    if os.path.exists(png):
        os.remove(png)
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples/e5_throughput.py"), png],
                          capture_output=True, text=True, env=dict(os.environ, MPLBACKEND="Agg"))
    assert proc.returncode == 0, proc.stderr
    assert "rx Mbit/s" in proc.stdout  # it printed the experiment's table
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(png) > 20_000
    pixels = matplotlib.image.imread(png)
    assert pixels.shape[0] >= 400 and pixels.shape[1] >= 1000  # 10 x 4 in at 120 dpi
    colours = {tuple(p) for p in pixels.reshape(-1, pixels.shape[2])[::97]}
    assert len(colours) > 20  # bars, text and axes, not a blank canvas
