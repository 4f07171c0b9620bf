// The OCP MX recipe (formats.quantize_mx_reference): x (rows, k) fp32/fp16/bf16 -> e2m1 (MXFP4, packed)
// or e4m3 (MXFP8) values and blocked ue8m0 scales per 32. No global scale (its output is 1) and no pass
// before the quantize pass; the block walk, loads and layout are quantize_common.cuh's.
#pragma once

#include <type_traits>

#include "nvfp4_gemm/quantize/quantize_common.cuh"

namespace nvfp4_gemm::quantize::detail {

template <OperandFormat F>
struct MxRecipe {
  using Block = typename OperandTraits<F>::Block;
  using Element = typename OperandTraits<F>::Element;
  using Rounding = typename MiniFloatOf<Element>::type;
  static_assert(std::is_same_v<Block, MxFormat>, "an MX operand format");
  static constexpr int kBlock = Block::kValuesPerScale;
  static constexpr int kCodeBits = Element::kBits;
  static constexpr bool kGlobalScale = false;
  static constexpr bool kScaleTable = false;
  static constexpr int kScaleBias = 127;  // a ue8m0 byte c is 2^(c - 127)
  static constexpr int kMinShared = -kScaleBias;
  struct Context {};

  NVFP4_HOST_DEVICE static Context context(float) { return {}; }

  // Per block: shared exponent e = max(floor(log2(amax)) - emax, -127), floor(log2) being amax's
  // exponent field (exact; 0 and subnormals give -127); the reference's upper clamp at 127 never binds
  // (floor(log2) <= 127 for a finite amax, emax >= 2). Scale byte e + 127; code_i = sign |
  // round(|x_i| * 2^-e), the multiply by a power of two exact (or far below the format's half step).
  // A non-finite block: NaN scale byte, codes 0.
  static constexpr int kWords = kBlock * kCodeBits / 32;
  NVFP4_HOST_DEVICE static std::uint32_t quantize(const float (&v)[kBlock], std::uint32_t amax_bits,
                                                  const std::uint32_t (&signs)[kWords], const Context&,
                                                  std::uint32_t (&words)[kWords]) {
    if (amax_bits > kMaxFiniteBits) return Block::kScaleNanCode;
    const int floor_log2 = static_cast<int>(amax_bits >> 23) - 127;  // amax_bits has no sign bit
    const int shared = floor_log2 - Element::kEmax > kMinShared ? floor_log2 - Element::kEmax : kMinShared;
    const float inverse = bits_float(static_cast<std::uint32_t>(127 - shared) << 23);  // exponent field 2..254
    // amax * inverse lies in [2^emax, 2^(emax + 1)): a quarter of the blocks reach the clamp, so no test
    encode_magnitudes<Rounding, kCodeBits, true>(v, inverse, signs, words);
    return static_cast<std::uint32_t>(shared + kScaleBias);
  }
};

}  // namespace nvfp4_gemm::quantize::detail
