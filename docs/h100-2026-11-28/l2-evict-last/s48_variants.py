"""Walk-order / L2-priority variants of the resident kernel's max walk (argv[1]); the tree's header patched in place.
kfirst - the kept steps' loads first, then the walked (re-read) steps, then the held ones: the walked steps read
         last before the exchange are the newest lines in L2 when the quantize walk starts (exact)
elast  - the last 6 walked steps (26 MB at bf16 8192x7168) loaded with an L2 evict-last policy, so that the kept,
         held and re-read-miss lines (all evict-first) and the stores do not push them out (exact)
both   - the two together"""
import sys
p = "csrc/include/nvfp4_gemm/quantize/quantize_common.cuh"; s = open(p).read()
kind = sys.argv[1]
def rep(a, b, count=1):
    global s
    assert s.count(a) == count, (a, s.count(a))
    s = s.replace(a, b)
if kind in ("kfirst", "both"):
    rep("""  std::uint32_t key = 0;
  for (int step = 0; step < first_held; step += kLoadSteps) {""",
        """  std::uint32_t key = 0;
  const int kept_count = first_held - first_kept;
  auto walk_order = [&](int i) { return i >= first_held ? i : (i < kept_count ? first_kept + i : i - kept_count); };
  for (int step = 0; step < first_held; step += kLoadSteps) {""")
    rep("      const int at = step + s;\n", "      const int at = walk_order(step + s);\n", count=2)
if kind in ("elast", "both"):
    rep("""      if (at < first_kept) {
        Io::load(source(at), raw[s]);
      }""", """      if (at < first_kept - 6) {
        Io::load(source(at), raw[s]);
      } else if (at < first_kept) {
#pragma unroll
        for (int i = 0; i < kV; ++i) raw[s][i] = load_hinted(source(at) + i, keep_policy);
      }""")
    rep("""  const std::uint64_t last_use = l2_evict_first_policy();
""", """  const std::uint64_t last_use = l2_evict_first_policy();
  std::uint64_t keep_policy;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\\n" : "=l"(keep_policy));
""")
open(p, "w").write(s)
print("patched", kind)
