// What every quantize recipe shares: exact fp32 arithmetic, rounding to a small float format, the
// blocked scale layout, loads of x, the kernel that walks the blocks, its launch shape, and the same
// walk on the host. A recipe (nvfp4_quantize.cuh, mx_quantize.cuh) says how one block becomes a scale
// byte and codes, and whether a global scale comes first. Plain CUDA (no architecture-specific
// instruction but the PDL controls of sm_90+ and sm_89+'s e4m3 conversion), so the same source serves
// Hopper and Blackwell.
//
// Exactness by construction: every rounding is one IEEE fp32 operation with round-to-nearest-even,
// written with the _rn intrinsics (never contracted into an FMA), in the order of the Python
// reference; the rounding to e2m1 and e4m3 is itself one fp32 addition (round_magnitude; for the e2m1
// codes one FMA and one addition, e2m1_value_over_64, whose exact values the e4m3 conversion turns into
// codes). The per-block functions run unchanged on the host (quantize_on_host), so the CPU tests prove
// this arithmetic against the reference; the GPU tests compare the device's bytes. Device-only steps:
// the e4m3 conversion instructions (the host rounds with round_magnitude<E4M3>), and NVFP4's reciprocal
// of the block scale, a lookup in a per-CTA table (the host divides), which the GPU tests' ties and
// subnormal scales compare too.
//
// Work: thread (row, scale column) quantizes one block per step (e.g. one 32-byte read of a bf16
// NVFP4 block of 16, an 8-byte code write, a scale byte), striding down the rows with the next step's
// block loaded ahead, so a warp reads 32 consecutive blocks of a row. Threads of the padding rows and
// columns write the zero scale bytes. The kernel is launched with programmatic dependent launch and
// waits for its predecessor before touching memory.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "nvfp4_gemm/blocked_layout.h"  // blocked_offset, and NVFP4_HOST_DEVICE
#include "nvfp4_gemm/launch_kernel.h"
#include "nvfp4_gemm/quantize/quantize.h"

namespace nvfp4_gemm::quantize::detail {

constexpr int kThreads = 256;
// Resident grids' worth of CTAs the quantize pass launches: CTAs on SMs that finish early pick up more
// (H200, bf16 8192x7168: NVFP4 static 1 -> 4 waves 81 -> 82 % of a copy's bandwidth, mxfp4 80 -> 84 %,
// mxfp8 78 -> 85 %; 8 waves: 81, 85, 88 %; the dynamic pass after an amax pass keeps 1: 49 -> 48 -> 47 %).
constexpr int kQuantizeWaves = 4;
constexpr std::uint32_t kMagnitudeMask = 0x7FFFFFFFu;
constexpr std::uint32_t kExponentMask = 0x7F800000u;
constexpr std::uint32_t kMaxFiniteBits = 0x7F7FFFFFu;

NVFP4_HOST_DEVICE std::uint32_t float_bits(float v) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(v);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
#endif
}
NVFP4_HOST_DEVICE float bits_float(std::uint32_t bits) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits);
#else
  float v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
#endif
}

// One IEEE operation each, rounded to nearest even. On the device the intrinsics keep nvcc from
// fusing a multiply and an add into an FMA (one rounding where the recipe has two); the host side
// of the TU is compiled with -ffp-contract=off for the same reason.
NVFP4_HOST_DEVICE float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
NVFP4_HOST_DEVICE float add_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
NVFP4_HOST_DEVICE float sub_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
NVFP4_HOST_DEVICE float fma_rn(float a, float b, float c) {  // a * b + c, rounded once
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
NVFP4_HOST_DEVICE float div_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
NVFP4_HOST_DEVICE std::uint32_t umax(std::uint32_t a, std::uint32_t b) { return a > b ? a : b; }
// min for operands that are never NaN where it is used (finite or +inf)
NVFP4_HOST_DEVICE float fmin_ordered(float a, float b) { return a < b ? a : b; }

// A small unsigned float format as data (formats.MiniFloat): stored mantissa bits, exponent of the
// smallest normal, largest finite magnitude code.
template <int kMantissaBits_, int kMinExponent_, std::uint32_t kMaxCode>
struct MiniFloat {
  static constexpr int kMantissaBits = kMantissaBits_;
  static constexpr int kMinExponent = kMinExponent_;
  static constexpr int kMaxExponent = kMinExponent + static_cast<int>(kMaxCode >> kMantissaBits) - 1;
  static constexpr std::uint32_t kFraction = kMaxCode & ((1u << kMantissaBits) - 1);
  static constexpr float kMaxValue =
      (1.0f + static_cast<float>(kFraction) / (1 << kMantissaBits)) * static_cast<float>(1u << kMaxExponent);
  static constexpr std::uint32_t kMinExponentBits = static_cast<std::uint32_t>(kMinExponent + 127) << 23;
  // the largest value plus half its spacing: magnitudes below it round to at most kMaxValue
  static constexpr float kRoundsAboveMax =
      kMaxValue + static_cast<float>(1u << (kMaxExponent - kMantissaBits)) / 2.0f;
};
using E2M1 = MiniFloat<1, 0, 0x7>;    // 0 .. 6
using E4M3 = MiniFloat<3, -6, 0x7E>;  // 0 .. 448 (0x7F is NaN)
static_assert(E2M1::kMaxValue == 6.0f && E4M3::kMaxValue == 448.0f, "format constants");
static_assert(E2M1::kRoundsAboveMax == 7.0f && E4M3::kRoundsAboveMax == 464.0f, "format constants");

// The rounding of each element format of dtypes.py (its emax is the MiniFloat's largest exponent).
template <class Element>
struct MiniFloatOf;
template <>
struct MiniFloatOf<E2m1Element> {
  using type = E2M1;
};
template <>
struct MiniFloatOf<E4m3Element> {
  using type = E4M3;
};
static_assert(E2M1::kMaxExponent == E2m1Element::kEmax && E4M3::kMaxExponent == E4m3Element::kEmax,
              "dtypes.py's emax is the rounding format's largest exponent");

struct Rounded {
  std::uint32_t code;
  float value;
};

// formats.round_magnitude: `a` >= 0, finite or +inf, to nearest even in Format, saturating at its
// largest value (clamped to it first; kSaturate = false skips the clamp for an `a` known to be below
// Format::kRoundsAboveMax, which rounds the same). With E = max(exponent of a, min exponent), a + 2^(E + 23 - m)
// lands in the binade whose fp32 spacing is the format's spacing at a: that one addition is the
// rounding (subnormals included), and the sum's low bits count its steps above the binade's start.
template <class Format, bool kSaturate = true>
NVFP4_HOST_DEVICE Rounded round_magnitude(float a) {
  constexpr int kShift = 23 - Format::kMantissaBits;
  constexpr std::uint32_t kMagicExponent = static_cast<std::uint32_t>(kShift) << 23;  // adds kShift to an exponent
  constexpr std::uint32_t kMinMagicBits = Format::kMinExponentBits + kMagicExponent;
  if constexpr (kSaturate) a = fmin_ordered(a, Format::kMaxValue);
  // the magic number 2^(E + kShift) as max(exponent bits + kMagicExponent, kMinMagicBits): one VIADDMNMX
  // on sm_90 where the max before the addition took two (a <= Format::kRoundsAboveMax here: no overflow)
  const std::uint32_t magic_bits = umax((float_bits(a) & kExponentMask) + kMagicExponent, kMinMagicBits);
  const float magic = bits_float(magic_bits);
  const float total = add_rn(a, magic);
  // (total - magic) steps + 2^m codes per binade above the smallest normal's, as one IADD3 and one
  // LEA: the magic's bits have no low bits, so (E - E_min) >> 23 << m == (magic >> kShift) - (min magic >> kShift)
  const std::uint32_t code =
      (float_bits(total) - magic_bits - (kMinMagicBits >> kShift)) + (magic_bits >> kShift);
  return {code, sub_rn(total, magic)};
}

// The value of a non-negative code of Format (exact: the code's bits placed in an fp32).
template <class Format>
NVFP4_HOST_DEVICE float minifloat_value(std::uint32_t code) {
  constexpr std::uint32_t kMantissaMask = (1u << Format::kMantissaBits) - 1;
  const std::uint32_t exponent = code >> Format::kMantissaBits, mantissa = code & kMantissaMask;
  constexpr int kSubnormalExponent = Format::kMinExponent - Format::kMantissaBits;  // of the mantissa's unit
  if (exponent == 0) return static_cast<float>(mantissa) * bits_float(static_cast<std::uint32_t>(kSubnormalExponent + 127) << 23);
  return bits_float((static_cast<std::uint32_t>(Format::kMinExponent + static_cast<int>(exponent) - 1 + 127) << 23) |
                    (mantissa << (23 - Format::kMantissaBits)));
}

#ifdef __CUDA_ARCH__
// A float at a 32-bit shared-memory address (cvta.to.shared) of a table written before a barrier and
// read after it: volatile, so that the compiler keeps it after the barrier (its address may be known
// before), with no memory clobber, so that it does not order the global loads and stores around it
__device__ __forceinline__ float load_shared(std::uint32_t address) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(address));
  return v;
}
// e4m3 code of a >= 0 (finite or +inf) to nearest even, saturating at 448: one conversion (sm_89 and up)
__device__ __forceinline__ std::uint32_t e4m3_code_satfinite(float a) {
  // into a 32-bit register whose upper half is zero: the conversion's own merge with the zero register,
  // where a 16-bit result took a mask to widen it on every block
  std::uint32_t code;
  asm("{\n .reg .b16 lo, hi;\n cvt.rn.satfinite.e4m3x2.f32 lo, %1, %2;\n mov.b16 hi, 0;\n mov.b32 %0, {lo, hi};\n}\n"
      : "=r"(code)
      : "f"(0.0f), "f"(a));
  return code;  // the high byte, 0.0's code, is 0: no mask
}
#endif

// round_magnitude<E2M1>(a).value / 64, the same rounding, in one integer instruction and two fp32 ones:
// the magic number m is a * 2^16 plus two units in its last place (its bits: a's plus a constant, one
// VIADDMNMX with the floor of the codes below 1, 2^16 plus two units), whose unit is a's e2m1 step / 64.
// m - a / 64, rounded once inside an FMA, lands in m's binade (so its step is that unit), and m is an
// even number of units at every tie (a tie's mantissa is even): m minus the rounded difference is
// a / 64 rounded to nearest even. Every such value is an e4m3 value whose code is the e2m1 code shifted
// left by 2 (e2m1 0.5 -> 2^-7, e4m3's subnormal 0x04; 1 -> 2^-6, 0x08; 6 -> 0x1C). Proved against
// round_magnitude on every non-negative float up to +inf (tests/exhaustive_e2m1_rounding.cpp, run by
// test_quantize.py; an odd offset, or none, fails there on ties and binade ends).
template <bool kSaturate>
NVFP4_HOST_DEVICE float e2m1_value_over_64(float a) {
  constexpr int kShift = 23 - E2M1::kMantissaBits;
  constexpr std::uint32_t kTwoUnits = 2;
  constexpr std::uint32_t kMagicOffset = (static_cast<std::uint32_t>(kShift - 6) << 23) + kTwoUnits;
  constexpr std::uint32_t kMinMagicBits = E2M1::kMinExponentBits + kMagicOffset;
  if constexpr (kSaturate) a = fmin_ordered(a, E2M1::kMaxValue);
  const float magic = bits_float(umax(float_bits(a) + kMagicOffset, kMinMagicBits));
  return add_rn(fma_rn(a, 1.0f / 64, -magic), magic);
}
// Four such values -> their e4m3 codes in bytes 0..3 (exact conversions): on the device two conversion
// instructions into one register
NVFP4_HOST_DEVICE std::uint32_t e4m3_codes(float b0, float b1, float b2, float b3) {
#ifdef __CUDA_ARCH__
  std::uint32_t codes;
  asm("{\n .reg .b16 lo, hi;\n cvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\n cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n"
      " mov.b32 %0, {lo, hi};\n}\n"
      : "=r"(codes)
      : "f"(b0), "f"(b1), "f"(b2), "f"(b3));
  return codes;
#else
  return round_magnitude<E4M3>(b0).code | round_magnitude<E4M3>(b1).code << 8 | round_magnitude<E4M3>(b2).code << 16 |
         round_magnitude<E4M3>(b3).code << 24;
#endif
}

// A block's codes: code i = sign_i | Format(|v_i| * factor), kCodeBits each, packed little-endian into
// words (element i of word w at bit kCodeBits * i); `signs` holds the sign bits already in place.
// One multiply and one rounding per element; the clamp at the format's largest value is skipped when
// the block's largest magnitude times the factor stays below Format::kRoundsAboveMax (the products are
// rounded monotonically, so every element's does too), which is almost every block.
template <class Format, int kCodeBits, bool kSaturate, int kCount, int kWords>
NVFP4_HOST_DEVICE void encode_magnitudes(const float (&v)[kCount], float factor, const std::uint32_t (&signs)[kWords],
                                         std::uint32_t (&words)[kWords]) {
  constexpr int kPerWord = 32 / kCodeBits;
  static_assert(kCount == kPerWord * kWords, "whole words of codes");
  if constexpr (std::is_same_v<Format, E2M1> && kCodeBits == 4) {
    // e2m1 codes by the e4m3 conversion, two per instruction on the device, instead of integer arithmetic
    // on each rounded sum: the even elements' codes (<< 2) in one word's bytes, the odd ones' in another,
    // and one shift each puts them at their nibbles (perf notes: "Quantize: e2m1 codes by the e4m3
    // conversion")
    for (int w = 0; w < kWords; ++w) {
      float r[kPerWord];
      for (int i = 0; i < kPerWord; ++i) r[i] = e2m1_value_over_64<kSaturate>(mul_rn(fabsf(v[w * kPerWord + i]), factor));
      const std::uint32_t even = e4m3_codes(r[0], r[2], r[4], r[6]), odd = e4m3_codes(r[1], r[3], r[5], r[7]);
      words[w] = (even >> 2) | (odd << 2) | signs[w];
    }
  } else {
    for (int w = 0; w < kWords; ++w) {
      std::uint32_t packed = 0;  // element i lands kCodeBits * i higher: shift-and-add from the last one
      for (int i = kPerWord - 1; i >= 0; --i) {
        packed = (packed << kCodeBits) + round_magnitude<Format, kSaturate>(mul_rn(fabsf(v[w * kPerWord + i]), factor)).code;
      }
      words[w] = packed | signs[w];
    }
  }
}
template <class Format, int kCodeBits, int kCount, int kWords>
NVFP4_HOST_DEVICE void encode_block(const float (&v)[kCount], float factor, float amax,
                                    const std::uint32_t (&signs)[kWords], std::uint32_t (&words)[kWords]) {
  if (mul_rn(amax, factor) < Format::kRoundsAboveMax) {
    encode_magnitudes<Format, kCodeBits, false>(v, factor, signs, words);
  } else {
    encode_magnitudes<Format, kCodeBits, true>(v, factor, signs, words);
  }
}

// formats.gemm_alpha: 1 / (gs * partner) in float64, rounded once to fp32.
NVFP4_HOST_DEVICE float gemm_alpha(float gs, float partner) {
  return static_cast<float>(1.0 / (static_cast<double>(gs) * static_cast<double>(partner)));
}
// The partner's global scale in alpha: 1 when none is given.
NVFP4_HOST_DEVICE float partner_or_one(const QuantizeProblem& p) {
  return p.partner_global_scale != nullptr ? *p.partner_global_scale : 1.0f;
}

// The same offset as sums of products, for a layout under 2^32 bytes: (row % 32) * 16 = 16 row - 512 (row / 32),
// (row % 128) / 32 * 4 = 4 (row / 32) - 16 (row / 128), col / 4 * 512 + col % 4 = col + 508 (col / 4): three
// shifts and four multiply-adds, most of them on the FMA pipe, where the masks and shifts above take the ALU's.
// Checked against blocked_offset on the host (tests/resident_block_position.cpp).
NVFP4_HOST_DEVICE std::uint32_t blocked_offset32(std::uint32_t row, std::uint32_t col, std::uint32_t cols_padded) {
  return 16 * row + col + 508 * (col / 4) - 508 * (row / 32) + (128 * cols_padded - 16) * (row / 128);
}

// n / d for every n < 2^30 by one 32 x 32 -> 64-bit product and one shift: m = ceil(2^k / d) with k = 30 + ceil(log2 d)
// (m <= 2^31 + 1), whose error n (m d - 2^k) / (d 2^k) < n / 2^k <= 2^-ceil(log2 d) <= 1 / d never reaches the next
// integer. Checked against the division on the host (tests/resident_block_position.cpp).
struct RowDivider {
  std::uint32_t magic;
  std::uint32_t shift;
  std::uint32_t minus_divisor;  // 2^32 - d: n - q d as one multiply-add by a kernel parameter
  static RowDivider of(std::uint32_t d) {
    std::uint32_t log2_ceil = 0;
    while ((1ull << log2_ceil) < d) ++log2_ceil;
    const std::uint32_t k = 30 + log2_ceil;
    return {static_cast<std::uint32_t>(((1ull << k) + d - 1) / d), k, 0u - d};
  }
  NVFP4_HOST_DEVICE std::uint32_t remainder(std::uint32_t n, std::uint32_t quotient) const {
    return n + quotient * minus_divisor;
  }
  NVFP4_HOST_DEVICE std::uint32_t operator()(std::uint32_t n) const {
#ifdef __CUDA_ARCH__
    std::uint64_t product;  // one 32 x 32 -> 64-bit multiply (the C++ form adds a zero high part)
    asm("mul.wide.u32 %0, %1, %2;\n" : "=l"(product) : "r"(n), "r"(magic));
    return static_cast<std::uint32_t>(product >> shift);
#else
    return static_cast<std::uint32_t>((static_cast<std::uint64_t>(n) * magic) >> shift);
#endif
  }
};

// A thread reads its block as two or four 16-byte vectors of the same 32-byte sectors: the read-only
// path keeps each sector in L1 between them, where a streaming load (__ldcs) fetched it from L2 twice
// (measured on H200: static NVFP4 quantize 73-76 % of a copy's bandwidth with __ldcs, 79 % with __ldg).
NVFP4_HOST_DEVICE uint4 load_through_l1(const uint4* p) {
#ifdef __CUDA_ARCH__
  return __ldg(p);
#else
  return *p;
#endif
}

NVFP4_HOST_DEVICE std::uint32_t vector_word(const uint4& v, int j) {
  return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
}

// How 16-byte vectors of each input type become floats (exact: fp16 and bf16 values are fp32
// values), a block's largest magnitude, and (for the dynamic global scale) a vector's largest finite
// magnitude as an order-preserving integer key, and the elements' sign bits placed where the codes'
// signs go (sign_bits: element i of code word w at bit kCodeBits * (i + 1) - 1).
template <class T>
struct Elements;

template <>
struct Elements<float> {
  static constexpr int kPerVector = 4;
  template <int kVectors>
  NVFP4_HOST_DEVICE static void to_float(const uint4 (&raw)[kVectors], float (&v)[kVectors * kPerVector]) {
    for (int i = 0; i < kVectors; ++i) {
      v[4 * i + 0] = bits_float(raw[i].x);
      v[4 * i + 1] = bits_float(raw[i].y);
      v[4 * i + 2] = bits_float(raw[i].z);
      v[4 * i + 3] = bits_float(raw[i].w);
    }
  }
  NVFP4_HOST_DEVICE static std::uint32_t finite_key(const uint4& raw) {
    const std::uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
    std::uint32_t key = 0;
    for (std::uint32_t w : words) {
      const std::uint32_t magnitude = w & kMagnitudeMask;
      key = umax(key, magnitude <= kMaxFiniteBits ? magnitude : 0u);
    }
    return key;
  }
  NVFP4_HOST_DEVICE static float key_value(std::uint32_t key) { return bits_float(key); }
  template <int kCodeBits, int kVectors, int kWords>
  NVFP4_HOST_DEVICE static void sign_bits(const uint4 (&raw)[kVectors], std::uint32_t (&signs)[kWords]) {
    constexpr int kPerWord = 32 / kCodeBits;
    for (int w = 0; w < kWords; ++w) {
      std::uint32_t bits = 0;
      for (int i = 0; i < kPerWord; ++i) {
        const int e = w * kPerWord + i;
        bits |= (vector_word(raw[e / 4], e % 4) >> 31) << (kCodeBits * (i + 1) - 1);
      }
      signs[w] = bits;
    }
  }
  // fp32 bits of the block's largest magnitude (NaN and inf above every finite value)
  template <int kVectors>
  NVFP4_HOST_DEVICE static std::uint32_t block_magnitude_bits(const uint4 (&raw)[kVectors]) {
    std::uint32_t bits = 0;
    for (int i = 0; i < kVectors; ++i) {
      bits = umax(umax(bits, raw[i].x & kMagnitudeMask), raw[i].y & kMagnitudeMask);
      bits = umax(umax(bits, raw[i].z & kMagnitudeMask), raw[i].w & kMagnitudeMask);
    }
    return bits;
  }
};

// Per-halfword unsigned max of two pairs of 16-bit values (one SIMD instruction on the device).
NVFP4_HOST_DEVICE std::uint32_t umax_halves(std::uint32_t a, std::uint32_t b) {
#ifdef __CUDA_ARCH__
  return __vmaxu2(a, b);
#else
  return umax(a & 0xFFFFu, b & 0xFFFFu) | (umax(a >> 16, b >> 16) << 16);
#endif
}

// bf16 and fp16 share the 16-bit handling; only their bits -> float conversion differs.
template <class Derived>
struct HalfElements {
  static constexpr int kPerVector = 8;
  template <int kVectors>
  NVFP4_HOST_DEVICE static void to_float(const uint4 (&raw)[kVectors], float (&v)[kVectors * kPerVector]) {
    for (int i = 0; i < kVectors; ++i) {
      const std::uint32_t words[4] = {raw[i].x, raw[i].y, raw[i].z, raw[i].w};
      for (int j = 0; j < 4; ++j) {
        v[8 * i + 2 * j] = Derived::half_to_float(words[j] & 0xFFFFu);
        v[8 * i + 2 * j + 1] = Derived::half_to_float(words[j] >> 16);
      }
    }
  }
  // magnitude bits of the largest finite element: for 16-bit floats their order is the values' order
  NVFP4_HOST_DEVICE static std::uint32_t finite_key(const uint4& raw) {
    const std::uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
    std::uint32_t key = 0;
    for (std::uint32_t w : words) {
      const std::uint32_t low = w & 0x7FFFu, high = (w >> 16) & 0x7FFFu;
      key = umax(key, low < Derived::kNonFiniteBits ? low : 0u);
      key = umax(key, high < Derived::kNonFiniteBits ? high : 0u);
    }
    return key;
  }
  NVFP4_HOST_DEVICE static float key_value(std::uint32_t key) { return Derived::half_to_float(key); }
  // A 32-bit word holds elements 2j (bits 0-15) and 2j + 1 (bits 16-31): their signs are bits 15 and 31.
  template <int kCodeBits, int kVectors, int kWords>
  NVFP4_HOST_DEVICE static void sign_bits(const uint4 (&raw)[kVectors], std::uint32_t (&signs)[kWords]) {
#ifdef __CUDA_ARCH__
    if constexpr (kCodeBits == 4 && kWords == kVectors) {
      // a vector's 8 elements are one word of codes: byte k of it takes the signs of elements 2k and 2k + 1,
      // the top bits of bytes 1 and 3 of the vector's word k; four byte permutes gather them
      for (int w = 0; w < kWords; ++w) {
        const std::uint32_t low = __byte_perm(raw[w].x, raw[w].y, 0x7351), high = __byte_perm(raw[w].z, raw[w].w, 0x7351);
        const std::uint32_t even = __byte_perm(low, high, 0x5410), odd = __byte_perm(low, high, 0x7632);
        signs[w] = ((even >> 4) & 0x08080808u) | (odd & 0x80808080u);
      }
      return;
    }
#endif
    constexpr int kPerWord = 32 / kCodeBits;
    for (int w = 0; w < kWords; ++w) {
      std::uint32_t bits = 0;
      for (int i = 0; i < kPerWord; ++i) {
        const int e = w * kPerWord + i;
        bits |= ((vector_word(raw[e / 8], (e % 8) / 2) >> (16 * (e % 2) + 15)) & 1u) << (kCodeBits * (i + 1) - 1);
      }
      signs[w] = bits;
    }
  }
  template <int kVectors>
  NVFP4_HOST_DEVICE static std::uint32_t block_magnitude_bits(const uint4 (&raw)[kVectors]) {
#ifdef __CUDA_ARCH__
    // one float max per two pairs: the larger magnitude exactly (subnormals kept), NaN where either is one,
    // so inf and NaN still end above every finite value; the sign bits it leaves are masked last (NVFP4:
    // 10 instructions where the integer masks and maxima below take 16)
    auto vector_max = [](const uint4& v) {
      return Derived::max_magnitudes(Derived::max_magnitudes(v.x, v.y), Derived::max_magnitudes(v.z, v.w));
    };
    std::uint32_t halves = vector_max(raw[0]);
    for (int i = 1; i < kVectors; ++i) halves = Derived::max_magnitudes(halves, vector_max(raw[i]));
    return Derived::high_magnitude_bits(Derived::max_magnitudes(halves, __byte_perm(halves, 0, 0x1032)));
#else
    constexpr std::uint32_t kMagnitudes = 0x7FFF7FFFu;
    std::uint32_t pairs = 0;  // the halves' magnitude bits order like their values, NaN and inf on top
    for (int i = 0; i < kVectors; ++i) {
      pairs = umax_halves(pairs, umax_halves(raw[i].x & kMagnitudes, raw[i].y & kMagnitudes));
      pairs = umax_halves(pairs, umax_halves(raw[i].z & kMagnitudes, raw[i].w & kMagnitudes));
    }
    return float_bits(Derived::half_to_float(umax(pairs & 0xFFFFu, pairs >> 16)));
#endif
  }
};

// Per half of two pairs: the larger magnitude, NaN if either is NaN, the sign the xor of theirs
// (max.NaN.xorsign.abs, sm_86 and up); and fp32 bits of a pair's high half's magnitude.
template <>
struct Elements<__nv_bfloat16> : HalfElements<Elements<__nv_bfloat16>> {
  static constexpr std::uint32_t kNonFiniteBits = 0x7F80u;
  NVFP4_HOST_DEVICE static float half_to_float(std::uint32_t bits) { return bits_float(bits << 16); }
#ifdef __CUDA_ARCH__
  __device__ static std::uint32_t max_magnitudes(std::uint32_t a, std::uint32_t b) {
    std::uint32_t d;
    asm("max.NaN.xorsign.abs.bf16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
    return d;
  }
  __device__ static std::uint32_t high_magnitude_bits(std::uint32_t pair) { return pair & 0x7FFF0000u; }
#endif
};

template <>
struct Elements<__half> : HalfElements<Elements<__half>> {
  static constexpr std::uint32_t kNonFiniteBits = 0x7C00u;
  NVFP4_HOST_DEVICE static float half_to_float(std::uint32_t bits) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
  }
#ifdef __CUDA_ARCH__
  __device__ static std::uint32_t max_magnitudes(std::uint32_t a, std::uint32_t b) {
    std::uint32_t d;
    asm("max.NaN.xorsign.abs.f16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
    return d;
  }
  __device__ static std::uint32_t high_magnitude_bits(std::uint32_t pair) {
    return float_bits(half_to_float((pair >> 16) & 0x7FFFu));
  }
#endif
};

// One block of a recipe's format over input type T: its loaded bytes, where it lies, where its codes go.
//
// A Recipe has: kBlock (values per scale), kCodeBits, Block (dtypes.h block format), kGlobalScale
// (whether a global scale is computed or read first), Context (what every block derives from the
// global scale) and context(gs), and quantize(v, amax_bits, signs, context, words) -> the scale byte, with the
// codes packed into words (code i at bit kCodeBits * i of the block's bytes, little-endian).
template <class Recipe, class T>
struct BlockIo {
  using E = Elements<T>;
  static constexpr int kBlock = Recipe::kBlock;
  static constexpr int kVectors = kBlock / E::kPerVector;  // uint4 loads per block
  static constexpr int kWords = kBlock * Recipe::kCodeBits / 32;
  static_assert(kBlock % E::kPerVector == 0 && (kWords == 2 || kWords % 4 == 0), "whole vectors per block");

  // Block (row, col): inside the tensor unless it is the layout's padding (rows past `rows`, columns
  // past k / kBlock), whose scale byte is zero and which has no codes.
  NVFP4_HOST_DEVICE static bool inside(const QuantizeProblem& p, int row, int col) {
    return row < p.rows && col < p.k / kBlock;
  }
  NVFP4_HOST_DEVICE static std::size_t first_element(const QuantizeProblem& p, int row, int col) {
    return static_cast<std::size_t>(row) * p.k + static_cast<std::size_t>(col) * kBlock;
  }
  // A block's bytes of x (loaded only inside the tensor) and of the codes, by its first element.
  NVFP4_HOST_DEVICE static const uint4* source(const QuantizeProblem& p, std::size_t element) {
    return reinterpret_cast<const uint4*>(static_cast<const T*>(p.x) + element);
  }
  NVFP4_HOST_DEVICE static std::uint8_t* codes(const QuantizeProblem& p, std::size_t element) {
    return p.data + element * Recipe::kCodeBits / 8;
  }
  NVFP4_HOST_DEVICE static void load(const uint4* src, uint4 (&raw)[kVectors]) {
    for (int i = 0; i < kVectors; ++i) raw[i] = load_through_l1(src + i);
  }
  NVFP4_HOST_DEVICE static void load(const QuantizeProblem& p, int row, int col, uint4 (&raw)[kVectors]) {
    if (inside(p, row, col)) load(source(p, first_element(p, row, col)), raw);
  }
  // 8 bytes (NVFP4) or whole 16-byte vectors (MX) of codes; streaming: first out of L2 (st.global.cs)
  template <bool kStreaming = false, class V>
  NVFP4_HOST_DEVICE static void store_vector(V* dst, V v) {
#ifdef __CUDA_ARCH__
    if constexpr (kStreaming) {
      __stcs(dst, v);
      return;
    }
#endif
    *dst = v;
  }
  template <bool kStreaming = false>
  NVFP4_HOST_DEVICE static void store(std::uint8_t* dst, const std::uint32_t (&w)[kWords]) {
    if constexpr (kWords == 2) {
      store_vector<kStreaming>(reinterpret_cast<uint2*>(dst), make_uint2(w[0], w[1]));
    } else {
      for (int i = 0; i < kWords / 4; ++i) {
        store_vector<kStreaming>(reinterpret_cast<uint4*>(dst) + i,
                                 make_uint4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]));
      }
    }
  }

  // Block (row, col) from its loaded bytes or from prepare()'s Prepared
  template <class Context, class Block>
  NVFP4_HOST_DEVICE static void quantize(const QuantizeProblem& p, const Context& context, int row,
                                         int col, int cols_padded, const Block& block) {
    quantize(context, inside(p, row, col), block, codes(p, first_element(p, row, col)),
             p.scale_blocked + blocked_offset(row, col, cols_padded));
  }

  // A block's bytes with the part of its quantization that needs no global scale: the sign bits in place
  // and its largest magnitude (the one-pass kernel takes them while it waits for the global scale).
  struct Prepared {
    uint4 raw[kVectors];
    std::uint32_t signs[kWords];
    std::uint32_t amax_bits;
  };
  NVFP4_HOST_DEVICE static Prepared prepare(const uint4 (&raw)[kVectors]) {
    Prepared block;
    for (int i = 0; i < kVectors; ++i) block.raw[i] = raw[i];
    E::template sign_bits<Recipe::kCodeBits>(raw, block.signs);
    block.amax_bits = E::block_magnitude_bits(raw);
    return block;
  }

  // Quantize a block from its loaded bytes or from prepare()'s Prepared: the scale byte to `scale` and,
  // inside the tensor, the codes to `dst`; a padding block's scale byte is zero.
  template <bool kStreaming = false, class Context, class Source>
  NVFP4_HOST_DEVICE static void quantize(const Context& context, bool is_inside, const Source& source,
                                         std::uint8_t* dst, std::uint8_t* scale) {
    std::uint32_t scale_byte = 0;
    if (is_inside) {
      float v[kBlock];
      std::uint32_t signs[kWords], amax_bits;
      if constexpr (std::is_same_v<Source, Prepared>) {
        E::to_float(source.raw, v);
        for (int w = 0; w < kWords; ++w) signs[w] = source.signs[w];
        amax_bits = source.amax_bits;
      } else {
        E::to_float(source, v);
        E::template sign_bits<Recipe::kCodeBits>(source, signs);
        amax_bits = E::block_magnitude_bits(source);
      }
      std::uint32_t words[kWords] = {};
      scale_byte = Recipe::quantize(v, amax_bits, signs, context, words);
      store<kStreaming>(dst, words);
    }
    store_vector<kStreaming>(scale, static_cast<std::uint8_t>(scale_byte));
  }
};

template <class Recipe>
NVFP4_HOST_DEVICE int cols_padded_of(int k) {
  constexpr int kTile = Recipe::Block::kScaleTileCols;
  return (k / Recipe::kBlock + kTile - 1) / kTile * kTile;
}
template <class Recipe>
NVFP4_HOST_DEVICE int rows_padded_of(int rows) {
  constexpr int kTile = Recipe::Block::kScaleTileRows;
  return (rows + kTile - 1) / kTile * kTile;
}

#ifdef __CUDACC__

// Programmatic dependent launch: wait for the preceding grid's completion (and its memory) before
// touching memory; let the next grid start launching early (it waits in the same way).
__device__ __forceinline__ void wait_for_predecessor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void allow_successor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// One warp-wide reduction instruction (sm_80 and up) where five shuffle-and-max rounds took their latency
// five times over: on the decode kernel's path twice before a CTA publishes its partial and once after the
// last partial is seen (H100: decode spans 0.2 us shorter with the publication below moved).
__device__ __forceinline__ std::uint32_t warp_max(std::uint32_t v) { return __reduce_max_sync(0xFFFFFFFFu, v); }
__device__ __forceinline__ std::uint32_t warp_max_by_shuffles(std::uint32_t v) {
  for (int offset = 16; offset > 0; offset /= 2) v = umax(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset));
  return v;
}

// Named barrier `id` over `threads` threads (whole warps): sync waits for all of them, arrive counts the
// calling warp in without waiting.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// One CTA's max of its threads' keys, in every lane of warp 0. The warps' maxima are taken by shuffles
// where kAcrossWarpsByRedux is false: the resident kernel's, whose fp32 instance the reduction instruction
// there took from 64 to 96 bytes of spills (H100: fp32 4096x7168 1.5 % slower), for a latency it pays once.
template <int kCtaThreads = kThreads, bool kAcrossWarpsByRedux = true>
__device__ __forceinline__ std::uint32_t cta_max(std::uint32_t key) {
  __shared__ std::uint32_t warp_keys[kCtaThreads / 32];
  key = warp_max(key);
  if (threadIdx.x % 32 == 0) warp_keys[threadIdx.x / 32] = key;
  __syncthreads();
  if (threadIdx.x >= 32) return 0u;
  const std::uint32_t warp_key = threadIdx.x < kCtaThreads / 32 ? warp_keys[threadIdx.x] : 0u;
  return kAcrossWarpsByRedux ? warp_max(warp_key) : warp_max_by_shuffles(warp_key);
}

// Relaxed loads and stores at GPU scope: through L2, where every SM sees them, and never kept in a
// register across a poll.
__device__ __forceinline__ std::uint32_t load_relaxed(const std::uint32_t* p) {
  std::uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ std::uint64_t load_relaxed(const std::uint64_t* p) {
  std::uint64_t v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];\n" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_relaxed(std::uint32_t* p, std::uint32_t v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void store_relaxed(std::uint64_t* p, std::uint64_t v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;\n" ::"l"(p), "l"(v) : "memory");
}

// The global scale in every thread of the CTA: warp 0's `global_scale(Recipe{})` (every lane returns it; a
// generic lambda, instantiated only for a recipe that has one), else 1 (MX).
template <class Recipe, class GlobalScale>
__device__ float cta_global_scale(GlobalScale global_scale) {
  float gs = 1.0f;
  if constexpr (Recipe::kGlobalScale) {
    __shared__ float block_gs;
    if (threadIdx.x < 32) {
      gs = global_scale(Recipe{});
      if (threadIdx.x == 0) block_gs = gs;
    }
    __syncthreads();
    gs = block_gs;
  }
  return gs;
}

// The partner's global scale (1 if none), read by the thread that publishes: CTA 0's thread 0.
__device__ __forceinline__ float partner_global_scale(const QuantizeProblem& p) {
  return blockIdx.x == 0 && threadIdx.x == 0 ? partner_or_one(p) : 1.0f;
}
// gs and alpha out, by CTA 0's thread 0.
__device__ __forceinline__ void publish_global_scale(const QuantizeProblem& p, float gs, float partner) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *p.global_scale_out = gs;
    *p.alpha_out = gemm_alpha(gs, partner);
  }
}

// What every block of the CTA derives from the global scale, as a Context: the recipe's own, with the
// reciprocal table when the recipe has one, or its OneBlockContext (a CTA that quantizes one block per
// thread divides instead: a table costs it 127 divisions and a barrier).
template <class Recipe, class Context = typename Recipe::Context>
__device__ Context cta_context(float gs) {
  Context context{Recipe::context(gs)};
  if constexpr (Recipe::kScaleTable && std::is_same_v<Context, typename Recipe::Context>) {
    __shared__ float reciprocals[Recipe::kScaleCodes];
    for (int code = threadIdx.x; code < Recipe::kScaleCodes; code += kThreads) {
      reciprocals[code] = Recipe::reciprocal_of_code(context, code);
    }
    __syncthreads();
    // through a register move the compiler cannot see into, so that the address is computed once (it
    // rebuilt the constant from the CTA's shared window, four uniform instructions, on every block)
    std::uint32_t table;
    asm("mov.b32 %0, %1;\n" : "=r"(table) : "r"(static_cast<std::uint32_t>(__cvta_generic_to_shared(reciprocals))));
    context.reciprocal_table = table;
  }
  return context;
}

// The quantize pass: a grid of kQuantizeWaves resident grids' worth of CTAs (one after an amax pass)
// striding over the rows, one block per thread and step. amax_partials > 0: the global scale is
// dynamic, from that many partials of the amax pass.
template <class Recipe, class T>
__global__ void __launch_bounds__(kThreads)
    quantize_kernel(QuantizeProblem p, int amax_partials, int rows_per_step, int cols_padded, int rows_padded) {
  using Io = BlockIo<Recipe, T>;
  wait_for_predecessor();
  allow_successor();
  const unsigned t = blockIdx.x * kThreads + threadIdx.x;
  const bool active = t < static_cast<unsigned>(rows_per_step) * cols_padded;
  // The thread's column, walked down by pointer steps: only the scale's row offset is computed per block.
  const unsigned col = t % cols_padded;
  const bool col_inside = active && col < static_cast<unsigned>(p.k / Io::kBlock);
  unsigned row = t / cols_padded;
  std::size_t element = Io::first_element(p, row, col);
  const std::size_t step = static_cast<std::size_t>(rows_per_step) * p.k;
  std::uint8_t* const scale_col = p.scale_blocked + blocked_col_offset(col);
  // The first block is loaded before the CTA derives its context from the global scale (a dependent
  // read, and NVFP4's reciprocal table), and the next step's block before this one is quantized: every
  // warp keeps a load in flight while it computes.
  uint4 raw[Io::kVectors] = {};
  if (col_inside && row < static_cast<unsigned>(p.rows)) Io::load(Io::source(p, element), raw);
  const float gs =
      cta_global_scale<Recipe>([&](auto recipe) { return decltype(recipe)::device_global_scale(p, amax_partials); });
  publish_global_scale(p, gs, partner_global_scale(p));
  const typename Recipe::Context context = cta_context<Recipe>(gs);
  if (!active) return;
  for (; row < static_cast<unsigned>(rows_padded); row += rows_per_step, element += step) {
    uint4 next[Io::kVectors] = {};
    if (col_inside && row + rows_per_step < static_cast<unsigned>(p.rows)) {
      Io::load(Io::source(p, element + step), next);
    }
    Io::quantize(context, col_inside && row < static_cast<unsigned>(p.rows), raw, Io::codes(p, element),
                 scale_col + blocked_row_offset(row, cols_padded));
    for (int i = 0; i < Io::kVectors; ++i) raw[i] = next[i];
  }
}

// The dynamic global scale inside one kernel: each CTA publishes its partial max in the scratch's slots
// tagged with the call's number (AmaxScratch) and its warp 0 polls the slots of every CTA that holds x
// until all carry this call's tag: one trip through L2 after the last CTA's store, where a grid barrier
// and a read of the partials after it took three (H200, K = 7168: 0.6-1.4 us less at M = 1..128).
// Slots a lane reads per batch: the one-pass kernel's grids (at most 256 CTAs at decode sizes) in one trip with
// 8; the resident kernel's whole resident grid (2 CTAs per SM: 264 on 132 SMs) takes 10, up to 320 CTAs per
// trip, where 8 took two trips per poll round (H200, bf16 8192x7168: 0.3-0.5 us less; perf notes).
constexpr int kPollLoads = 8;
constexpr int kResidentPollLoads = 10;

// This call's tag (warp 0, before the CTA's partial is published).
__device__ __forceinline__ std::uint32_t call_tag(AmaxScratch* scratch) { return load_relaxed(&scratch->last_tag) + 1u; }

// Warp 0 of each of `ctas` CTAs: publish this CTA's partial (fp32 bits) under `tag`, wait for every
// CTA's, return the largest partial's bits in every lane. `while_first_poll` (if given) runs once in the
// whole warp, after the publication, while the first poll's loads are in flight.
struct NothingWhilePolling {
  __device__ void operator()() const {}
};
template <int kLoads = kPollLoads, class WhileFirstPoll = NothingWhilePolling>
__device__ __forceinline__ std::uint32_t await_partials(AmaxScratch* scratch, std::uint32_t tag,
                                                        std::uint32_t partial_bits, int ctas,
                                                        WhileFirstPoll while_first_poll = {}) {
  // with a callback every lane walks the same batches (a lane past the last slot loads none), so that
  // the callback runs in the whole warp
  constexpr bool kUniformBatches = !std::is_same_v<WhileFirstPoll, NothingWhilePolling>;
  const std::uint64_t mine = (static_cast<std::uint64_t>(tag) << 32) | partial_bits;
  // this CTA's slot and every ctas-th one after it: all slots carry this call's tag afterwards
  for (int slot = blockIdx.x + threadIdx.x * ctas; slot < kMaxAmaxPartials; slot += 32 * ctas) {
    store_relaxed(&scratch->tagged[tagged_index(slot)], mine);
  }
  std::uint32_t max_bits = 0;  // non-negative floats: their bits order like their values
  bool complete = false, first_poll = true;
  while (!complete) {
    complete = true;
    max_bits = 0;
    // kLoads loads in flight per lane before any is compared: one trip through L2 per batch
    for (int first = kUniformBatches ? 0 : static_cast<int>(threadIdx.x); first < ctas; first += 32 * kLoads) {
      std::uint64_t v[kLoads];
#pragma unroll
      for (int j = 0; j < kLoads; ++j) {
        const int slot = first + (kUniformBatches ? static_cast<int>(threadIdx.x) : 0) + 32 * j;
        v[j] = slot < ctas ? load_relaxed(&scratch->tagged[tagged_index(slot)]) : mine;
      }
      if constexpr (kUniformBatches) {
        if (first_poll) {
          first_poll = false;
          while_first_poll();
        }
      }
#pragma unroll
      for (int j = 0; j < kLoads; ++j) {
        complete &= static_cast<std::uint32_t>(v[j] >> 32) == tag;
        max_bits = umax(max_bits, static_cast<std::uint32_t>(v[j]));
      }
    }
    complete = __all_sync(0xFFFFFFFFu, complete);
  }
  // every CTA has read last_tag before it stored its slot, so the next call's tag can be set now
  if (blockIdx.x == 0 && threadIdx.x == 0) store_relaxed(&scratch->last_tag, tag);
  return warp_max(max_bits);
}

// A dynamic global scale over an x with no more blocks than a co-resident grid has threads (decode
// batches): every thread loads its block, the CTAs exchange partials (await_partials), and every thread
// quantizes the block it holds in registers: x read once.
// Threads per CTA: kOnePassThreads while x's CTAs are no more than the SMs, kWideOnePassThreads beyond:
// fewer CTAs spread x over fewer SMs, more CTAs poll more slots (H200, K = 7168, span at M = 1 / 128:
// 256 threads 3.4 / 5.3 us; 512: 3.9 / 5.2; 128: 3.6 / 6.1; 1024: 3.9 / 5.9; 2026-11-25, same session:
// 512 at M = 96 / 128 only, 4.91-4.96 / 5.28-5.38 us where 256 took 5.10-5.12 / 5.38-5.46).
constexpr int kOnePassThreads = 256;
constexpr int kWideOnePassThreads = 512;
// The launcher takes the one-pass kernel while twice its grid, padding rows included, fits the resident
// CTAs (launch_one_pass): at M = 1 that is 224 CTAs of 256 threads, at M = 128 112 of 512 on 132 SMs, so the
// kernel must fit 4 / 2 CTAs per SM, i.e. stay within 64 registers (68 sent every decode call of an H100 to
// the resident kernel, 0.5-0.75 us slower: perf notes, "Quantize at decode: where the one-pass kernel's
// time goes").
template <int kCtaThreads>
constexpr int kOnePassMinCtasPerSm = 1024 / kCtaThreads;
template <class Recipe, class T, int kCtaThreads>
__global__ void __launch_bounds__(kCtaThreads, kOnePassMinCtasPerSm<kCtaThreads>)
    quantize_one_pass_kernel(QuantizeProblem p, int cols_padded, int rows_padded) {
  using Io = BlockIo<Recipe, T>;
  wait_for_predecessor();
  allow_successor();
  const int t = blockIdx.x * kCtaThreads + threadIdx.x;
  const int row = t / cols_padded;
  const int col = t % cols_padded;
  // CTAs past x's last block hold only padding rows (zero scale bytes): they neither need the global
  // scale nor hold it up. CTA 0 always takes part (it writes gs and alpha, also for an empty x).
  const int data_ctas = max(1, (p.rows * cols_padded + kCtaThreads - 1) / kCtaThreads);
  if (static_cast<int>(blockIdx.x) >= data_ctas) {
    if (row < rows_padded) p.scale_blocked[blocked_offset(row, col, cols_padded)] = 0;
    return;
  }
  const std::uint32_t tag = threadIdx.x < 32 ? call_tag(p.amax_scratch) : 0u;
  uint4 raw[Io::kVectors] = {};
  Io::load(p, row, col, raw);  // zeros outside x (padding rows and columns, the grid's last threads)
  // gs and alpha go out after the codes, the partner's scale read now: off the path from the last partial
  // to the stores (alpha is a float64 division; the partner, at a layer's call, a read from DRAM)
  const float partner = partner_global_scale(p);
  std::uint32_t key = 0;
  for (int i = 0; i < Io::kVectors; ++i) key = umax(key, Elements<T>::finite_key(raw[i]));
  key = cta_max<kCtaThreads>(key);
  // The block's sign bits and largest magnitude while warp 0 waits for the other CTAs' partials, off the
  // path from the last partial's arrival to the stores: warps 1.. once warp 0 has published (named barrier
  // 1, so that they do not delay the publication), warp 0 while its first poll is in flight (H100: decode
  // spans 3-5 % shorter at M = 1..128).
  typename Io::Prepared block;
  if (threadIdx.x >= 32) {
    named_barrier_sync(1, kCtaThreads);
    block = Io::prepare(raw);
  }
  const float gs = cta_global_scale<Recipe>([&](auto recipe) {
    const std::uint32_t partial = float_bits(Elements<T>::key_value(key));
    return decltype(recipe)::global_scale_from_amax(
        bits_float(await_partials(p.amax_scratch, tag, partial, data_ctas, [&] {
          named_barrier_arrive(1, kCtaThreads);
          block = Io::prepare(raw);
        })));
  });
  const auto context = cta_context<Recipe, typename Recipe::OneBlockContext>(gs);
  if (row < rows_padded) Io::quantize(p, context, row, col, cols_padded, block);
  publish_global_scale(p, gs, partner);
}

// Resident CTAs per SM of kernel, asked once per device.
template <auto kKernel, int kBlock = kThreads>
int resident_ctas_per_sm(int device) {
  static int cache[64] = {};
  if (device < 0 || device >= 64) return 1;
  if (cache[device] == 0) {
    int ctas = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kKernel, kBlock, 0) != cudaSuccess || ctas < 1) {
      ctas = 1;
    }
    cache[device] = ctas;
  }
  return cache[device];
}

// The one-pass kernel at kCtaThreads threads per CTA, if its grid is small enough for its CTAs to wait on
// each other (below); otherwise false, nothing launched.
template <class Recipe, class T, int kCtaThreads>
bool launch_one_pass(const QuantizeProblem& p, int cols_padded, int rows_padded, int device, int sm_count,
                     cudaStream_t stream, LaunchStatus* status) {
  constexpr auto kKernel = quantize_one_pass_kernel<Recipe, T, kCtaThreads>;
  const long long blocks = static_cast<long long>(rows_padded) * cols_padded;
  // rows 0: one CTA still writes gs and alpha
  const long long grid = blocks > 0 ? (blocks + kCtaThreads - 1) / kCtaThreads : 1;
  // at most half the grid that could be resident (the decode sizes it was measured at; larger x goes to
  // the resident kernel)
  const long long resident = static_cast<long long>(sm_count) * resident_ctas_per_sm<kKernel, kCtaThreads>(device);
  if (grid > kMaxAmaxPartials || 2 * grid > resident) return false;
  // cooperative: the CTAs wait for each other's partials, and a cooperative grid starts only whole, never
  // in part beside another stream's kernel (NCCL's under tensor parallel) that holds the room some of its
  // CTAs need (measured: benchmarks/probes/cooperative_start_probe.cu)
  const cudaError_t err = launch_kernel(kKernel, dim3(static_cast<unsigned>(grid)), dim3(kCtaThreads), 0, stream,
                                        LaunchAttributes{/*programmatic=*/true, /*cooperative=*/true}, p, cols_padded,
                                        rows_padded);
  *status = err == cudaSuccess ? LaunchStatus{} : LaunchStatus{false, cudaGetErrorString(err)};
  return true;
}

// A dynamic global scale over an x too large for the one-pass kernel (quantize_resident_kernel): a
// co-resident grid walks x once for the max, keeping the steps it reads last on chip (the very last in
// registers, those before in shared memory), exchanges partials (await_partials), then quantizes what it
// kept while it re-reads the other steps, those read last (likeliest still in L2) and those read first in
// turn (the quantize walk, below). Everything kept or re-read is read for the last time, and the codes and
// scales are stored, with an L2 evict-first policy, so that the walked steps keep the L2.
// Its CTA (threads; CTAs per SM, each taking that share of the SM's shared memory), at 64 registers: one half-SM
// CTA per SM where that keeps all of x on chip (fewer CTAs to wait for: M <= 1659 at bf16 K = 7168 on 132 SMs, and
// room beside another stream's kernels: set_quantize_sms), else the whole SM: one CTA of 1024 threads for 16-bit
// x, two of 512 for fp32. Two CTAs of an SM do not finish together: the warp scheduler favours the older one's
// warps, which ended both walks 4-7 us sooner. One CTA of 1024 threads took 0.6-3.3 % less time for bf16 and fp16
// at M = 2048 .. 8192, K = 7168, but 1.2 % more for fp32 4096x7168 (H200; perf notes, "The resident kernel's CTAs
// by SM"). (H100, bf16 8192x7168: two half-SM CTAs per SM 6 % faster than one.)
template <int kThreads_, int kPerSm_>
struct ResidentCta {
  static constexpr int kThreads = kThreads_;
  static constexpr int kPerSm = kPerSm_;
};
using HalfSmCta = ResidentCta<512, 2>;
using WholeSmCta = ResidentCta<1024, 1>;
template <class T>
using WholeSmCtasOf = std::conditional_t<sizeof(T) == 2, WholeSmCta, HalfSmCta>;
constexpr int kResidentLoadBytes = 128;  // max walk: bytes of x a thread loads before it takes their max
constexpr int kResidentAheadBytes = 64;  // quantize walk: bytes of re-read steps in flight per thread
// The resident kernel takes x while what it keeps on chip is at least 1 / kResidentMinKeptShare of x's
// steps (H100, bf16 (M, 7168), against the two passes: M = 256 .. 8192 8-16 % faster, 12288 5 %, 16384 (a
// fifth of x on chip) 1 %; M = 24576 takes the two passes).
constexpr int kResidentMinKeptShare = 6;
// A step of the resident kernel: one block of x per thread of a CTA (bytes a CTA keeps per kept step), and
// the steps a thread loads at once in the max walk, the last of which it holds in registers.
template <class Recipe, class T, class Cta>
struct ResidentSteps {
  static constexpr int kBlockBytes = BlockIo<Recipe, T>::kVectors * 16;
  static constexpr int kStepBytes = Cta::kThreads * kBlockBytes;
  static constexpr int kHeldSteps = kResidentLoadBytes / kBlockBytes;
  // re-read steps in flight: 2 for 16-bit x, 1 for fp32 (its 64-byte blocks in three rotating buffers
  // spill 288 bytes at 64 registers, two buffers 64 bytes; H100: 2-3 % faster than two ahead with copies)
  static constexpr int kAheadSteps = kResidentAheadBytes / kBlockBytes;
  static_assert(kAheadSteps >= 1, "a block is at most kResidentAheadBytes");
};

// The largest finite magnitude key (Elements<T>::finite_key) of a run of vectors in fewer instructions:
// the magnitudes' max (per 16-bit half, or per word), exact while it is below the format's non-finite
// bits; a run that holds an inf or NaN takes finite_key vector by vector.
template <class T, int kCount>
__device__ __forceinline__ std::uint32_t run_finite_key(const uint4 (&v)[kCount]) {
  if constexpr (std::is_same_v<T, float>) {
    std::uint32_t m = 0;
#pragma unroll
    for (int i = 0; i < kCount; ++i) {
      m = umax(m, umax(umax(v[i].x & kMagnitudeMask, v[i].y & kMagnitudeMask),
                       umax(v[i].z & kMagnitudeMask, v[i].w & kMagnitudeMask)));
    }
    if (m <= kMaxFiniteBits) return m;
  } else {
    constexpr std::uint32_t kMagnitudes = 0x7FFF7FFFu;
    std::uint32_t m = 0;
#pragma unroll
    for (int i = 0; i < kCount; ++i) {
      m = umax_halves(m, umax_halves(umax_halves(v[i].x & kMagnitudes, v[i].y & kMagnitudes),
                                     umax_halves(v[i].z & kMagnitudes, v[i].w & kMagnitudes)));
    }
    constexpr std::uint32_t kBound = Elements<T>::kNonFiniteBits * 0x10001u;
    if (__vcmpgeu2(m, kBound) == 0) return umax(m & 0xFFFFu, m >> 16);
  }
  std::uint32_t key = 0;
  for (int i = 0; i < kCount; ++i) key = umax(key, Elements<T>::finite_key(v[i]));
  return key;
}

__device__ __forceinline__ std::uint64_t l2_evict_first_policy() {
  std::uint64_t policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ uint4 load_hinted(const uint4* p, std::uint64_t policy) {
  uint4 v;
  asm("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;\n"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p), "l"(policy));
  return v;
}

template <class Recipe, class T, class Cta>
__global__ void __launch_bounds__(Cta::kThreads, Cta::kPerSm)
    quantize_resident_kernel(QuantizeProblem p, int cols_padded, int rows_padded, int kept_steps, RowDivider rows_of) {
  using Io = BlockIo<Recipe, T>;
  constexpr int kV = Io::kVectors;
  constexpr int kCtaThreads = Cta::kThreads;
  constexpr int kLoadSteps = ResidentSteps<Recipe, T, Cta>::kHeldSteps;  // steps loaded at once in the max walk
  constexpr int kHeldSteps = kLoadSteps;                                  // the last ones, kept in registers
  extern __shared__ uint4 kept[];  // [kept step][vector][thread]
  wait_for_predecessor();
  allow_successor();
  const unsigned blocks_per_row = static_cast<unsigned>(p.k / Io::kBlock);
  const unsigned x_blocks = static_cast<unsigned>(p.rows) * blocks_per_row;  // < 2^30 (launcher)
  const unsigned stride = gridDim.x * kCtaThreads;
  const unsigned first = blockIdx.x * kCtaThreads + threadIdx.x;
  // Step s is block first + s * stride of every thread. Steps [0, first_kept) are walked for the max and
  // re-read; [first_kept, first_held) kept in shared memory; [first_held, steps) held in registers. Only
  // the last step can be ragged, and it is held.
  const int steps = static_cast<int>((x_blocks + stride - 1) / stride);
  const int first_held = max(0, steps - kHeldSteps);
  const int first_kept = max(0, first_held - kept_steps);
  const std::uint32_t tag = threadIdx.x < 32 ? call_tag(p.amax_scratch) : 0u;
  // What is kept on chip, and what the quantize walk re-reads, is read for the last time: first out of L2,
  // so that the walked steps read last stay there for the re-read.
  const std::uint64_t last_use = l2_evict_first_policy();
  auto source = [&](int step) {
    return static_cast<const uint4*>(p.x) + static_cast<std::size_t>(first + static_cast<unsigned>(step) * stride) * kV;
  };
  auto load_last_use = [&](int step, uint4 (&raw)[kV]) {
#pragma unroll
    for (int i = 0; i < kV; ++i) raw[i] = load_hinted(source(step) + i, last_use);
  };
  auto kept_slot = [&](int step, int i) -> uint4& {
    return kept[((step - first_kept) * kV + i) * kCtaThreads + threadIdx.x];
  };

  // The max walk before the held steps, kLoadSteps steps per batch whatever their kind (walked ones read through
  // L1 with the L2's default priority, for the re-read; kept ones read for the last time and stored to shared
  // memory), so that every batch has all its loads in flight: no batch of one step where the kinds meet
  std::uint32_t key = 0;
  for (int step = 0; step < first_held; step += kLoadSteps) {
    uint4 raw[kLoadSteps][kV];
#pragma unroll
    for (int s = 0; s < kLoadSteps; ++s) {
      const int at = step + s;
      if (at < first_kept) {
        Io::load(source(at), raw[s]);
      } else if (at < first_held) {
        load_last_use(at, raw[s]);
      } else {
#pragma unroll
        for (int i = 0; i < kV; ++i) raw[s][i] = make_uint4(0, 0, 0, 0);  // past the batch's last step: no max
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
  uint4 held[kHeldSteps][kV];
#pragma unroll
  for (int h = 0; h < kHeldSteps; ++h) {
#pragma unroll
    for (int i = 0; i < kV; ++i) held[h][i] = make_uint4(0, 0, 0, 0);
    if (first_held + h < steps && first + static_cast<unsigned>(first_held + h) * stride < x_blocks) {
      load_last_use(first_held + h, held[h]);
    }
  }
  key = umax(key, run_finite_key<T>(reinterpret_cast<const uint4(&)[kHeldSteps * kV]>(held)));

  key = cta_max<kCtaThreads, /*kAcrossWarpsByRedux=*/false>(key);
  const float gs = cta_global_scale<Recipe>([&](auto recipe) {
    const std::uint32_t partial = float_bits(Elements<T>::key_value(key));
    return decltype(recipe)::global_scale_from_amax(
        bits_float(await_partials<kResidentPollLoads>(p.amax_scratch, tag, partial, static_cast<int>(gridDim.x))));
  });
  publish_global_scale(p, gs, partner_global_scale(p));
  const typename Recipe::Context context = cta_context<Recipe>(gs);

  // The quantize walk: the steps on chip back to front (held, then kept), and the re-read steps newest and
  // oldest in turn (step first_kept - 1, 0, first_kept - 2, 1, ...), the kept steps spread evenly among them.
  // So the re-reads the L2 no longer holds (the oldest) stream through the whole walk beside the ones it does
  // hold and the steps on chip; taken back to front, one kept step per re-read, they came last, with nothing on
  // chip left to quantize while they streamed (H200, bf16 8192x7168: 69.6 -> 68.7 us, 12288 105.8 -> 103.9; perf
  // notes). A block's row by the divider's product and shift, its scale's place by blocked_offset32 (the
  // layout is under 2^32 bytes: launch_resident): where a cursor stepping row and column took about twice their
  // instructions.
  struct Cursor {
    int at;
    unsigned block;
  };
  auto cursor_at = [&](int at) { return Cursor{at, first + static_cast<unsigned>(at) * stride}; };
  auto step_back = [&](Cursor& c) {
    --c.at;
    c.block -= stride;
  };
  auto quantize_at = [&](const Cursor& c, const uint4 (&raw)[kV]) {
    const unsigned row = rows_of(c.block), col = rows_of.remainder(c.block, row);
    Io::template quantize</*kStreaming=*/true>(
        context, true, raw, Io::codes(p, static_cast<std::size_t>(c.block) * Io::kBlock),
        p.scale_blocked + blocked_offset32(row, col, static_cast<unsigned>(cols_padded)));
  };
  // Re-read n (step reread_step(n)) lives in buffer n % kBuffers: the loop below is unrolled by kBuffers, so
  // each buffer keeps a name of its own and no registers are copied between them (shifting them took 8 moves
  // per 16-bit re-read step, 8 % of the quantize walk's instructions; on the H100 16-bit x ran no faster
  // without them, fp32 2-3 % faster: perf notes).
  constexpr int kAhead = ResidentSteps<Recipe, T, Cta>::kAheadSteps;
  constexpr int kBuffers = kAhead + 1;
  uint4 rereads[kBuffers][kV];
  auto reread_step = [&](int n) { return (n & 1) ? n >> 1 : first_kept - 1 - (n >> 1); };
  auto load_reread = [&](int n, uint4 (&raw)[kV]) { load_last_use(reread_step(n), raw); };
  auto issue_ahead = [&]() {
#pragma unroll
    for (int a = 0; a < kAhead; ++a) {
      if (a < first_kept) load_reread(a, rereads[a]);
    }
  };
  Cursor on_chip = cursor_at(first_held + kHeldSteps - 1);
  // the held steps; the first re-reads go out once as many held steps' registers are free
#pragma unroll
  for (int h = kHeldSteps - 1; h >= 0; --h) {
    if (kHeldSteps - 1 - h == kAhead) issue_ahead();
    if (on_chip.at < steps && on_chip.block < x_blocks) quantize_at(on_chip, held[h]);
    if (h > 0) step_back(on_chip);
  }
  if (kHeldSteps <= kAhead) issue_ahead();
  // a kept step after every first_kept / kept_total re-reads: each re-read earns kept_total, a kept step costs
  // first_kept (whole steps, no division)
  const int kept_total = first_held - first_kept;
  int n_read = 0, credit = 0;
  while (n_read < first_kept || on_chip.at > first_kept) {
#pragma unroll
    for (int j = 0; j < kBuffers; ++j) {
      if (n_read < first_kept) {
        // into the buffer consumed one step ago: kAhead re-reads in flight while this one is quantized
        if (n_read + kAhead < first_kept) load_reread(n_read + kAhead, rereads[(j + kAhead) % kBuffers]);
        quantize_at(cursor_at(reread_step(n_read)), rereads[j]);
        ++n_read;
        credit += kept_total;
      } else {
        credit = first_kept;  // no re-read left: a kept step every turn
      }
      if (on_chip.at > first_kept && credit >= first_kept) {
        credit -= first_kept;
        step_back(on_chip);
        uint4 raw[kV];
#pragma unroll
        for (int i = 0; i < kV; ++i) raw[i] = kept_slot(on_chip.at, i);
        quantize_at(on_chip, raw);
      }
    }
  }

  // the layout's padding blocks: zero scale bytes (columns past k / kBlock, then rows past x's)
  const unsigned pad_cols = static_cast<unsigned>(cols_padded) - blocks_per_row;
  for (unsigned i = first; i < static_cast<unsigned>(p.rows) * pad_cols; i += stride) {
    p.scale_blocked[blocked_offset(static_cast<int>(i / pad_cols), static_cast<int>(blocks_per_row + i % pad_cols),
                                   cols_padded)] = 0;
  }
  const unsigned pad_rows_blocks = static_cast<unsigned>(rows_padded - p.rows) * static_cast<unsigned>(cols_padded);
  for (unsigned i = first; i < pad_rows_blocks; i += stride) {
    p.scale_blocked[blocked_offset(p.rows + static_cast<int>(i / cols_padded), static_cast<int>(i % cols_padded),
                                   cols_padded)] = 0;
  }
}

// Dynamic shared memory per CTA of the resident kernel on `device` (its kept steps: as many whole steps
// as its share of an SM's shared memory holds, so that Cta::kPerSm CTAs fit an SM), 0 where not even one step does.
template <class Recipe, class T, class Cta>
int resident_kept_bytes(int device) {
  static int cache[64] = {};
  if (device < 0 || device >= 64) return 0;
  if (cache[device] == 0) {
    constexpr auto kKernel = quantize_resident_kernel<Recipe, T, Cta>;
    constexpr int kStepBytes = ResidentSteps<Recipe, T, Cta>::kStepBytes;
    int sm_bytes = 0, block_optin = 0, reserved = 0, ctas = 0;
    cudaFuncAttributes attributes{};
    int bytes = -1;
    if (cudaDeviceGetAttribute(&sm_bytes, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device) == cudaSuccess &&
        cudaDeviceGetAttribute(&block_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) == cudaSuccess &&
        cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device) == cudaSuccess &&
        cudaFuncGetAttributes(&attributes, kKernel) == cudaSuccess) {
      const int per_cta = min(sm_bytes / Cta::kPerSm - reserved, block_optin) -
                          static_cast<int>(attributes.sharedSizeBytes);
      bytes = per_cta / kStepBytes * kStepBytes;
      if (bytes <= 0 ||
          cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) != cudaSuccess ||
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kKernel, Cta::kThreads, bytes) != cudaSuccess ||
          ctas < Cta::kPerSm) {
        bytes = -1;
      }
    }
    cudaGetLastError();  // a failed query leaves the two-pass path, not a sticky error
    cache[device] = bytes;
  }
  return cache[device] > 0 ? cache[device] : 0;
}

// The resident kernel on CTAs of Cta, if x suits them; otherwise false, nothing launched. `one_per_sm`: one CTA per
// SM, which must keep all of x's steps on chip; else Cta::kPerSm per SM, which must keep at least
// 1 / kResidentMinKeptShare of them.
template <class Recipe, class T, class Cta>
bool launch_resident_as(const QuantizeProblem& p, int cols_padded, int rows_padded, int device, int sm_count,
                        bool one_per_sm, cudaStream_t stream, LaunchStatus* status) {
  using Steps = ResidentSteps<Recipe, T, Cta>;
  const long long x_blocks = static_cast<long long>(p.rows) * (p.k / Recipe::kBlock);
  const int kept_bytes = resident_kept_bytes<Recipe, T, Cta>(device);
  const long long grid = static_cast<long long>(sm_count) * (one_per_sm ? 1 : Cta::kPerSm);
  if (kept_bytes == 0 || grid > kMaxAmaxPartials || x_blocks >= (1ll << 30)) return false;
  const int kept_steps = kept_bytes / Steps::kStepBytes, on_chip_steps = kept_steps + Steps::kHeldSteps;
  const long long steps = (x_blocks + grid * Cta::kThreads - 1) / (grid * Cta::kThreads);
  if (steps > static_cast<long long>(on_chip_steps) * (one_per_sm ? 1 : kResidentMinKeptShare)) return false;
  // the kernel places scales by 32-bit offsets (blocked_offset32): true of every x it takes (at most a few
  // million blocks: 8.9 M on 132 SMs), checked all the same
  if (static_cast<long long>(rows_padded) * cols_padded >= (1ll << 32)) return false;
  // cooperative: the CTAs wait for each other's partials; the grid starts only whole (launch_one_pass)
  const cudaError_t err = launch_kernel(quantize_resident_kernel<Recipe, T, Cta>, dim3(static_cast<unsigned>(grid)),
                                        dim3(Cta::kThreads), kept_bytes, stream,
                                        LaunchAttributes{/*programmatic=*/true, /*cooperative=*/true}, p,
                                        cols_padded, rows_padded, kept_steps,
                                        RowDivider::of(static_cast<std::uint32_t>(p.k / Recipe::kBlock)));
  *status = err == cudaSuccess ? LaunchStatus{} : LaunchStatus{false, cudaGetErrorString(err)};
  return true;
}

// The resident kernel, if x suits it; otherwise false, nothing launched. One half-SM CTA per SM while that keeps all
// of x on chip, else the whole SM (ResidentCta).
template <class Recipe, class T>
bool launch_resident(const QuantizeProblem& p, int cols_padded, int rows_padded, int device, int sm_count,
                     cudaStream_t stream, LaunchStatus* status) {
  return launch_resident_as<Recipe, T, HalfSmCta>(p, cols_padded, rows_padded, device, sm_count,
                                                  /*one_per_sm=*/true, stream, status) ||
         launch_resident_as<Recipe, T, WholeSmCtasOf<T>>(p, cols_padded, rows_padded, device, sm_count,
                                                         /*one_per_sm=*/false, stream, status);
}

// The quantize pass, after the recipe's own pass before it (Recipe::launch_prepass: NVFP4's dynamic
// amax, returning its partial count; 0 when there is none), or both in one kernel when a dynamic global
// scale meets an x whose blocks a co-resident grid covers (quantize_one_pass_kernel) or whose steps it
// keeps enough of on chip (quantize_resident_kernel).
template <class Recipe, class T>
LaunchStatus launch(const QuantizeProblem& p, int device, int sm_count, cudaStream_t stream) {
  const int cols_padded = cols_padded_of<Recipe>(p.k);
  const int rows_padded = rows_padded_of<Recipe>(p.rows);
  if constexpr (Recipe::kGlobalScale) {
    if (p.global_scale == nullptr) {
      LaunchStatus status;
      // x's own blocks count (the padding rows' CTAs only write zeros and leave)
      const long long x_blocks = static_cast<long long>(p.rows) * cols_padded;
      const bool wide = (x_blocks + kOnePassThreads - 1) / kOnePassThreads > sm_count;
      if (wide ? launch_one_pass<Recipe, T, kWideOnePassThreads>(p, cols_padded, rows_padded, device, sm_count, stream,
                                                                  &status)
               : launch_one_pass<Recipe, T, kOnePassThreads>(p, cols_padded, rows_padded, device, sm_count, stream,
                                                             &status)) {
        return status;
      }
      if (launch_resident<Recipe, T>(p, cols_padded, rows_padded, device, sm_count, stream, &status)) return status;
    }
  }
  const long long target_threads =
      static_cast<long long>(sm_count) * resident_ctas_per_sm<quantize_kernel<Recipe, T>>(device) * kThreads;
  // rows per step: kQuantizeWaves grids' worth, or one grid after an amax pass, so that the grid sweeps x
  // front to back together and meets the front of x that the pass (walking back to front) left in L2
  const bool after_amax = Recipe::kGlobalScale && p.global_scale == nullptr;
  long long rows_per_step = target_threads * (after_amax ? 1 : kQuantizeWaves) / cols_padded;
  if (rows_per_step > rows_padded) rows_per_step = rows_padded;
  if (rows_per_step < 1) rows_per_step = 1;
  // as many steps as that needs, with the rows spread evenly over them (no short last step)
  const long long steps = (rows_padded + rows_per_step - 1) / rows_per_step;
  if (steps > 0) rows_per_step = (rows_padded + steps - 1) / steps;
  const int grid = static_cast<int>((rows_per_step * cols_padded + kThreads - 1) / kThreads);
  int partials = 0;
  if constexpr (Recipe::kGlobalScale) {
    const cudaError_t err = Recipe::template launch_prepass<T>(p, sm_count, stream, &partials);
    if (err != cudaSuccess) return {false, cudaGetErrorString(err)};
  }
  // programmatic, as every quantize kernel: it may start while the kernel before it runs, and the GEMM
  // after it while it runs (both wait before they read what the kernel before them writes)
  const cudaError_t err = launch_kernel(quantize_kernel<Recipe, T>, dim3(grid), dim3(kThreads), 0, stream,
                                        kProgrammaticLaunch, p, partials, static_cast<int>(rows_per_step), cols_padded,
                                        rows_padded);
  if (err != cudaSuccess) return {false, cudaGetErrorString(err)};
  return {};
}

#endif  // __CUDACC__

// The same blocks on the host: the global scale (Recipe::host_global_scale), then every (row, col) in turn.
template <class Recipe, class T>
void quantize_on_host(const QuantizeProblem& p) {
  using Io = BlockIo<Recipe, T>;
  float gs = 1.0f;
  if constexpr (Recipe::kGlobalScale) gs = Recipe::template host_global_scale<T>(p);
  *p.global_scale_out = gs;
  *p.alpha_out = gemm_alpha(gs, partner_or_one(p));
  const typename Recipe::Context context = Recipe::context(gs);
  const int cols_padded = cols_padded_of<Recipe>(p.k);
  const int rows_padded = rows_padded_of<Recipe>(p.rows);
  for (int row = 0; row < rows_padded; ++row) {
    for (int col = 0; col < cols_padded; ++col) {
      uint4 raw[Io::kVectors];
      Io::load(p, row, col, raw);
      Io::quantize(p, context, row, col, cols_padded, raw);
    }
  }
}

}  // namespace nvfp4_gemm::quantize::detail
