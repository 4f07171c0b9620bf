p = "csrc/include/nvfp4_gemm/quantize/quantize_common.cuh"; s = open(p).read()
def rep(a, b):
    global s
    assert s.count(a) == 1, a
    s = s.replace(a, b)
rep("quantize_resident_kernel(QuantizeProblem p, int cols_padded, int rows_padded, int kept_steps) {",
    "quantize_resident_kernel(QuantizeProblem p, int cols_padded, int rows_padded, int kept_steps, int l2_steps) {")
rep("""  std::uint32_t key = 0;
  int step = 0;
  for (; step + kLoadSteps <= first_kept; step += kLoadSteps) {""",
"""  std::uint32_t key = 0;
  int step = 0;
  const int first_l2 = max(0, first_kept - l2_steps);
  for (; step + kLoadSteps <= first_l2; step += kLoadSteps) {
    uint4 raw[kLoadSteps * kV];
#pragma unroll
    for (int s = 0; s < kLoadSteps; ++s) load_last_use(step + s, reinterpret_cast<uint4(&)[kV]>(raw[s * kV]));
    key = umax(key, run_finite_key<T>(raw));
  }
  for (; step + kLoadSteps <= first_kept; step += kLoadSteps) {""")
rep("""                                        cols_padded, rows_padded, kept_steps);""",
"""                                        cols_padded, rows_padded, kept_steps,
                                        std::getenv("NVFP4_Q_L2_STEPS") ? std::atoi(std::getenv("NVFP4_Q_L2_STEPS")) : 1 << 30);""")
if "#include <cstdlib>" not in s:
    s = s.replace("#pragma once\n", "#pragma once\n#include <cstdlib>\n", 1)
open(p, "w").write(s)
