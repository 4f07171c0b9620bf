// The framework-free description of one NVFP4 GEMM call: raw pointers and sizes.
// Nothing here knows torch or pybind11; the binding fills it from tensors.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nvfp4_gemm/dtypes.h"  // generated from python/nvfp4_gemm/dtypes.py: OutDtype, Nvfp4Format

namespace nvfp4_gemm {

// out[l, m, n] = alpha * sum_k deq(a)[l, m, k] * deq(b)[l, n, k] (alpha[n] with alpha_per_column),
// see docs/formats.md.
struct GemmProblem {
  int m = 0;  // rows of a and of out
  int n = 0;  // rows of b (the weight's output features), columns of out
  int k = 0;  // logical elements per row (bytes per row: k / 2 for FP4, k for FP8)
  int l = 1;  // batch count; every operand is packed, batch-major

  const void* a = nullptr;               // (l, m, k/2) FP4 bytes (or (l, m, k) FP8: MXFP8), K-major
  const void* b = nullptr;               // (l, n, k/2) FP4 bytes, K-major
  // l * round_up(rows,128) * round_up(k/block,4) scale bytes: e4m3 per 16 (NVFP4) or ue8m0 per 32 (MX)
  const void* a_scale_blocked = nullptr;
  const void* b_scale_blocked = nullptr;
  void* out = nullptr;                   // (l, m, n) row-major, element type per kernel
  const float* alpha = nullptr;          // device scalar, or nullptr for alpha = 1
  bool alpha_per_column = false;         // alpha holds n values, out[l, m, n] scaled by alpha[n]
};

// Which operand a scale-factor layout query is about.
enum class ScaleOperand : int { kA = 0, kB = 1 };

}  // namespace nvfp4_gemm
