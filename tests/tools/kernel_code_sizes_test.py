#!/usr/bin/env python3
"""tools/kernel_code_sizes.py and tools/code_footprint.py on a readelf listing written by hand:
the sizes expected below are added up by hand from the listing's Size column."""
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from code_footprint import footprint  # noqa: E402
from kernel_code_sizes import for_arch, parse_readelf, read_paths, table  # noqa: E402

# `readelf -sW` lines: Num: Value Size Type Bind Vis Ndx Name
LISTING = """
Symbol table '.symtab' contains 12 entries:
   Num:    Value          Size Type    Bind   Vis      Ndx Name
     1: ffff800008b4ba90  3428 FUNC    GLOBAL DEFAULT    2 tcp_v4_rcv
     2: ffff800008b4c800   200 FUNC    LOCAL  DEFAULT    2 tcp_v4_rcv.part.0
     3: ffff800008b4c900   0x40 FUNC   LOCAL  DEFAULT    2 tcp_v4_rcv.cold
     4: ffff800008b4ba90  3428 FUNC    LOCAL  DEFAULT    2 tcp_v4_rcv.localalias
     5: ffff800008a00000   120 FUNC    LOCAL  DEFAULT    2 ip_rcv_finish_core.constprop.0.isra.0
     6: ffff800008a10000   300 FUNC    LOCAL  DEFAULT    2 may_use_simd
     7: ffff800008a20000   500 FUNC    LOCAL  DEFAULT    2 may_use_simd
     8: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND kmem_cache_alloc
     9: ffff800008a30000    64 OBJECT  LOCAL  DEFAULT    3 tcp_ack
    10: ffff800008a40000     0 FUNC    LOCAL  DEFAULT    2 empty_fn
"""


def check(cond, what):
    if not cond:
        print("FAILED:", what)
        sys.exit(1)


sizes = {}
parse_readelf(LISTING, "vmlinux", sizes)
# the symbol 3428 + its .part clone 200; the .cold part (0x40 = 64) apart; the .localalias not again
check(sizes["tcp_v4_rcv"].hot == 3628, "tcp_v4_rcv: 3428 + 200 hot bytes")
check(sizes["tcp_v4_rcv"].cold == 64, "tcp_v4_rcv: 64 cold bytes (0x40)")
check(sizes["tcp_v4_rcv"].definitions == 1, "tcp_v4_rcv: one definition (the alias is not one)")
check(sizes["ip_rcv_finish_core"].hot == 120 and sizes["ip_rcv_finish_core"].definitions == 0,
      "a function present only as a .constprop.isra clone")
check("kmem_cache_alloc" not in sizes, "an undefined symbol has no code here")
check("tcp_ack" not in sizes, "an OBJECT is no function")
check("empty_fn" not in sizes, "a zero-size symbol is skipped")

rows = {r[0]: r for r in table([("tcp_v4_rcv", "net/ipv4/tcp_ipv4.c"), ("may_use_simd", "arch/arm64/include/asm/simd.h"),
                                ("gro_normal_list", "include/net/gro.h")], {"vmlinux": LISTING})}
check(rows["tcp_v4_rcv"][2:4] == (3628, 64), "tcp_v4_rcv's row: 3628 bytes, 64 cold")
check(rows["may_use_simd"][2] == 500 and rows["may_use_simd"][5].startswith("ambiguous: 2"),
      "two static definitions of one name: the larger (500) taken and the row says so")
check(rows["gro_normal_list"][2] == 0 and rows["gro_normal_list"][5] == "inlined or not built",
      "a function with no symbol: 0 bytes, inlined")

listed = [("kernel_neon_begin", "arch/arm/kernel/neon.c"), ("kernel_neon_begin", "arch/arm64/kernel/fpsimd.c"),
          ("tcp_v4_rcv", "net/ipv4/tcp_ipv4.c")]
check(for_arch(listed, "arm64") == listed[1:], "arm64 keeps its own arch/ functions and the generic ones")

with tempfile.TemporaryDirectory() as d:
    p = Path(d) / "paths.txt"
    p.write_text("# comment\nrx: a receive\n    tcp_v4_rcv missing_fn\n    a_x86|ip_rcv_finish_core\n")
    paths = read_paths(p)
    check(paths == {"rx": ("a receive", ["tcp_v4_rcv", "missing_fn", "a_x86|ip_rcv_finish_core"])}, "paths file read")
    # 3628 + 0 (inlined) + 120 (the second name of the alternative); 2 of 3 with code
    check(footprint(paths["rx"][1], {"tcp_v4_rcv": 3628, "missing_fn": 0, "ip_rcv_finish_core": 120}) == (3748, 2, 3),
          "a path's footprint: 3628 + 120 bytes, 2 of 3 functions with code")
print("kernel_code_sizes: all checks passed")
