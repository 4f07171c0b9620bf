"""Diagnostic builds of the resident kernel (never exact: they stop early). argv[1]:
exchange  - returns after the exchange (the walk and the wait for every CTA's partial)
nowait    - returns before the exchange (the walk alone)
nosts     - the walk alone, the kept steps not stored to shared memory"""
import sys
p = "csrc/include/nvfp4_gemm/quantize/quantize_common.cuh"; s = open(p).read()
kind = sys.argv[1]
def rep(a, b):
    global s
    assert s.count(a) == 1, a
    s = s.replace(a, b)
if kind == "exchange":
    rep("  // The quantize walk, back to front: one cursor over the steps on chip",
        "  if (p.rows > 0) return;\n  // The quantize walk, back to front: one cursor over the steps on chip")
else:
    rep("  key = cta_max<kResidentThreads, /*kAcrossWarpsByRedux=*/false>(key);\n  const float gs = cta_global_scale<Recipe>([&](auto recipe) {\n    const std::uint32_t partial",
        "  key = cta_max<kResidentThreads, /*kAcrossWarpsByRedux=*/false>(key);\n  if (p.rows > 0) { if (key == 0x12345u) p.scale_blocked[0] = 1; return; }\n  const float gs = cta_global_scale<Recipe>([&](auto recipe) {\n    const std::uint32_t partial")
    if kind == "nosts":
        rep("      for (int i = 0; i < kV; ++i) kept_slot(step + s, i) = raw[s][i];", "      for (int i = 0; i < kV; ++i) (void)raw[s][i];")
        rep("    for (int i = 0; i < kV; ++i) kept_slot(step, i) = raw[i];", "    for (int i = 0; i < kV; ++i) (void)raw[i];")
open(p, "w").write(s)
