p = "csrc/include/nvfp4_gemm/quantize/quantize_common.cuh"; s = open(p).read()
a = s.index("  std::uint32_t key = 0;\n  int step = 0;\n  for (; step + kLoadSteps <= first_kept; step += kLoadSteps) {")
b = s.index("  uint4 held[kHeldSteps][kV];")
s = s[:a] + """  std::uint32_t key = 0;
  for (int step = 0; step < first_held; step += kLoadSteps) {
    uint4 raw[kLoadSteps][kV];
#pragma unroll
    for (int s = 0; s < kLoadSteps; ++s) {
      const int at = step + s;
      if (at < first_kept) {
#pragma unroll
        for (int i = 0; i < kV; ++i) raw[s][i] = load_through_l1(source(at) + i);
      } else if (at < first_held) {
        load_last_use(at, raw[s]);
      } else {
#pragma unroll
        for (int i = 0; i < kV; ++i) raw[s][i] = make_uint4(0, 0, 0, 0);
      }
    }
    key = umax(key, run_finite_key<T>(reinterpret_cast<const uint4(&)[kLoadSteps * kV]>(raw)));
#pragma unroll
    for (int s = 0; s < kLoadSteps; ++s) {
      const int at = step + s;
      if (at >= first_kept && at < first_held) {
#pragma unroll
        for (int i = 0; i < kV; ++i) kept_slot(at, i) = raw[s][i];
      }
    }
  }
""" + s[b:]
open(p, "w").write(s)
