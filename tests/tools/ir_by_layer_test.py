#!/usr/bin/env python3
"""tools/ir_by_layer.py on a callgrind_annotate listing written by hand: the layer sums and the
per-event figures expected below are added up by hand from the listing."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from ir_by_layer import layer_of, parse, table  # noqa: E402

LISTING = """
--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
1,000,000 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                   file:function
--------------------------------------------------------------------------------
400,000 (40.00%)  ???:unsigned long kdsim::mem::MemorySystem::read_unheld_n<2ul>(int, unsigned long) [/b/kdsim]
250,000 (25.00%)  ???:kdsim::kernel::Cpu::run() [clone .part.0] [/b/kdsim]
150,000 (15.00%)  ???:kdsim::engine::Task kdsim::net::Stack::ip_output(kdsim::engine::Task (*)(kdsim::mem::X&)) [/b/kdsim]
100,000 (10.00%)  ???:unsigned long kdsim::devices::(anonymous namespace)::maintain<kdsim::mem::Y>(int) [/b/kdsim]
 60,000 ( 6.00%)  ???:kdsim::mem::drop_shared_run(unsigned short*) [/b/kdsim]
 40,000 ( 4.00%)  ???:__memcpy_avx_unaligned_erms [/usr/lib/libc.so.6]
"""


def check(cond, what):
    if not cond:
        print("FAILED:", what)
        sys.exit(1)


# the layer is the namespace of the function itself, not of its return type or its arguments
check(layer_of("kdsim::engine::Task kdsim::net::Stack::ip_output(kdsim::mem::X&)") == "net", "return type skipped")
check(layer_of("unsigned long kdsim::devices::(anonymous namespace)::maintain<kdsim::mem::Y>(int)") == "devices",
      "anonymous namespace: the layer before it")
check(layer_of("__memcpy_avx_unaligned_erms") == "other", "outside kdsim: other")

total, pairs = parse(LISTING)
check(total == 1_000_000, "PROGRAM TOTALS read apart")
check(len(pairs) == 6, "six functions")
text, listed = table(total, pairs, 2_000, 0)
check(listed == 1_000_000, "the functions sum to the total")
# mem: 400,000 + 60,000 = 460,000 over 2,000 events = 230.0 per event, 46.0 % of all
check("| mem | 460,000 | 230.0 | 46.0 % |" in text, "mem row: " + text)
check("| kernel | 250,000 | 125.0 | 25.0 % |" in text, "kernel row")
check("| net | 150,000 | 75.0 | 15.0 % |" in text, "net row (not engine, its return type)")
check("| devices | 100,000 | 50.0 | 10.0 % |" in text, "devices row")
check("| other | 40,000 | 20.0 | 4.0 % |" in text, "other row")
check("| **all** | 1,000,000 | **500.0** | 100 % |" in text, "total row: 1,000,000 / 2,000 = 500.0")
# rows in falling order of Ir
check(text.index("| mem |") < text.index("| kernel |") < text.index("| net |") < text.index("| devices |"),
      "rows sorted by Ir")
print("ok")
