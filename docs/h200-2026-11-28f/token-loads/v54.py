"""Rewrite a copy of the tree as a timing-only variant of the wgmma kernel's token loads (wrong values on purpose).
usage: python v54.py TREE {notok|halftok}
notok: the producer announces no token bytes and issues no token TMA (the slot's tokens are stale).
halftok: only the first K half's box (half the token bytes a stage moves from L2), what each CTA of a
two-CTA multicast pair would issue."""
import sys
tree, kind = sys.argv[1], sys.argv[2]
path = f"{tree}/csrc/include/nvfp4_gemm/sm90/wgmma_gemm.cuh"
src = open(path).read()
expect = "mbar_arrive_expect_tx(&full[slot], S::kTokBytes);"
loop = "for (int half = 0; half < 2; ++half) {\n        tma_load_3d"
assert src.count(expect) == 1 and src.count(loop) == 1
if kind == "notok":
    src = src.replace(expect, "mbar_arrive_expect_tx(&full[slot], 0u);\n      return;")
elif kind == "halftok":
    src = src.replace(expect, "mbar_arrive_expect_tx(&full[slot], S::kTokBytes / 2);")
    src = src.replace(loop, "for (int half = 0; half < 1; ++half) {\n        tma_load_3d")
else:
    raise SystemExit(f"unknown variant {kind}")
open(path, "w").write(src)
print(f"{tree}: timing-only variant {kind}")
