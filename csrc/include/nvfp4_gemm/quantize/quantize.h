// NVFP4 quantization of a 16- or 32-bit tensor: the framework-free interface (raw pointers, sizes,
// a cudaStream_t). The recipe is docs/formats.md's, specified by formats.quantize_reference; the
// kernels are in nvfp4_quantize.cuh, instantiated in csrc/quantize.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "nvfp4_gemm/kernel_entry.h"

namespace nvfp4_gemm::quantize {

enum class InputDtype : int { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

// Scratch floats a dynamic-scale call needs in `amax_partials` (one per amax CTA).
constexpr int kMaxAmaxPartials = 1024;

struct QuantizeProblem {
  int rows = 0;  // product of x's leading dims
  int k = 0;     // elements per row, a positive multiple of 16

  const void* x = nullptr;                      // (rows, k) row-major, 16-byte aligned
  const float* global_scale = nullptr;          // the static global scale (device scalar); nullptr: dynamic
  const float* partner_global_scale = nullptr;  // the GEMM partner's global scale; nullptr: 1

  std::uint8_t* fp4 = nullptr;            // (rows, k/2): element 2j in the low nibble of byte j
  std::uint8_t* scale_blocked = nullptr;  // round_up(rows,128) * round_up(k/16,4) e4m3 bytes, padding zero
  float* global_scale_out = nullptr;      // the global scale used
  float* alpha_out = nullptr;             // 1 / (global scale * partner), rounded once from float64
  float* amax_partials = nullptr;         // dynamic: kMaxAmaxPartials floats of scratch
};

// On `stream` of the current device (`sm_count` multiprocessors): one pass over x, plus one amax
// pass before it when the global scale is dynamic. No host synchronization.
LaunchStatus launch_quantize(const QuantizeProblem& problem, InputDtype dtype, int device, int sm_count,
                             cudaStream_t stream);

// The kernels' own per-block arithmetic run on the host over host pointers (a test hook).
void quantize_on_host(const QuantizeProblem& problem, InputDtype dtype);

}  // namespace nvfp4_gemm::quantize
