// Quantization of a 16- or 32-bit tensor to a block-scaled operand format (NVFP4, MXFP4, MXFP8): the
// framework-free interface (raw pointers, sizes, a cudaStream_t). The recipes are docs/formats.md's,
// specified by formats.quantize_reference (NVFP4) and formats.quantize_mx_reference (MX); the kernels
// are in nvfp4_quantize.cuh and mx_quantize.cuh over quantize_common.cuh, instantiated in csrc/quantize.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "nvfp4_gemm/dtypes.h"
#include "nvfp4_gemm/kernel_entry.h"

namespace nvfp4_gemm::quantize {

enum class InputDtype : int { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

// Partial maxima a dynamic-scale call may write (one per CTA of its amax pass or one-pass kernel).
constexpr int kMaxAmaxPartials = 1024;

// The scratch of NVFP4's dynamic global scale, zero-filled before its first use and kept per stream by
// the caller: the amax pass's partial maxima, and the one-pass kernel's, each tagged with its call's
// number (one more than `last_tag`), so that a CTA can wait for every other CTA's partial by reading the
// partials themselves: no barrier counter, no reset. Every one-pass call rewrites all the tagged slots, so
// none holds a tag other than `last_tag` after it and the next call's tag matches no old slot, even
// after the 32-bit tag wraps.
// The tagged slots lie 16 to a 128-byte line, one line per 1 KiB: the lines a call's CTAs store to and poll
// never share a 1 KiB-aligned chunk. Packed, the decode span followed where the scratch fell (H200, M = 128:
// 4.74-5.10 us over 33 placements, slowest with the 7 polled lines in one chunk); so spread, 4.64-4.74 (perf
// notes "The decode exchange's slots, one line per 1 KiB").
constexpr int kTaggedSlotsPerLine = 16;
constexpr int kTaggedLineStride = 128;  // uint64 words from one line of slots to the next: 1 KiB
constexpr int tagged_index(int slot) {
  return slot / kTaggedSlotsPerLine * kTaggedLineStride + slot % kTaggedSlotsPerLine;
}
struct AmaxScratch {
  std::uint64_t tagged[kMaxAmaxPartials / kTaggedSlotsPerLine * kTaggedLineStride];  // (tag << 32) | fp32 bits
  float partials[kMaxAmaxPartials];
  std::uint32_t last_tag;
};
constexpr int kAmaxScratchBytes = static_cast<int>(sizeof(AmaxScratch));

// What the launcher's guards need of a format: values per scale (k is a multiple of it), the blocked
// layout's tile, and whether it has a global scale (NVFP4's e4m3 scales are relative to one; MX's
// power-of-two scales stand alone: global scale 1).
struct FormatShape {
  int values_per_scale;
  int tile_rows;
  int tile_cols;
  bool global_scale;
};

template <OperandFormat F>
constexpr FormatShape format_shape() {
  using Block = typename OperandTraits<F>::Block;
  return {Block::kValuesPerScale, Block::kScaleTileRows, Block::kScaleTileCols, std::is_same_v<Block, Nvfp4Format>};
}

constexpr FormatShape format_shape(OperandFormat format) {
  switch (format) {
    case OperandFormat::kMxfp4:
      return format_shape<OperandFormat::kMxfp4>();
    case OperandFormat::kMxfp8:
      return format_shape<OperandFormat::kMxfp8>();
    default:
      return format_shape<OperandFormat::kNvfp4>();
  }
}

struct QuantizeProblem {
  int rows = 0;  // product of x's leading dims
  int k = 0;     // elements per row, a positive multiple of the format's values per scale

  const void* x = nullptr;                      // (rows, k) row-major, 16-byte aligned
  const float* global_scale = nullptr;          // NVFP4's static global scale (device scalar); nullptr: dynamic
                                                // (MX, which has none: nullptr)
  const float* partner_global_scale = nullptr;  // the GEMM partner's global scale; nullptr: 1

  // (rows, k * bits / 8), 16-byte aligned: packed e2m1 (element 2j in the low nibble of byte j) or e4m3 bytes
  std::uint8_t* data = nullptr;
  std::uint8_t* scale_blocked = nullptr;  // round_up(rows,128) * round_up(k/block,4) scale bytes, padding zero
  float* global_scale_out = nullptr;      // the global scale used (MX: 1)
  float* alpha_out = nullptr;             // 1 / (global scale * partner), rounded once from float64
  AmaxScratch* amax_scratch = nullptr;   // NVFP4, dynamic: kAmaxScratchBytes, zero-filled before first use
};

// On `stream` of the current device (`sm_count` multiprocessors): one pass over x, plus one amax
// pass before it when NVFP4's global scale is dynamic. No host synchronization.
LaunchStatus launch_quantize(const QuantizeProblem& problem, OperandFormat format, InputDtype dtype, int device,
                             int sm_count, cudaStream_t stream);

// The kernels' own per-block arithmetic run on the host over host pointers (a test hook).
void quantize_on_host(const QuantizeProblem& problem, OperandFormat format, InputDtype dtype);

}  // namespace nvfp4_gemm::quantize
