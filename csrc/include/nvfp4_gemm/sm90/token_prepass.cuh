// The sm90 token prepass: packed FP4 tokens and their blocked e4m3 scales -> exact fp16 (times 2^-7, see
// common.cuh), or 16-bit tokens as given, in a workspace in the weights' K order, once per call, for the
// wgmma kernel (wgmma_gemm.cuh); MX tokens (MXFP4, MXFP8) -> exact bf16 for either kernel.
#pragma once

#include <type_traits>

#include "nvfp4_gemm/sm90/common.cuh"

namespace nvfp4_gemm::sm90 {

// Why a prepass: a wgmma CTA covers 128 or 256 weight rows, so dequantizing the tokens inside every
// CTA (Hopper v3-v5) repeated that work N / 128 times, and at M = 128 it took as many issue slots as the
// tensor cores had cycles (perf notes, "Hopper v4"). Once per call it is one pass over `a`.
//   Workspace order: row-major (l, m, k); inside each 32-element segment, virtual position
// 8 p + 2 w + e (p = pair 0..3, w = word 0..3, e = 0..1) holds element 8 w + p + 4 e, i.e. 16-byte
// chunk p of the segment holds pair p of the segment's four 8-element words: the K order in which
// dequant8 hands the weights' elements to the wgmma A fragments.
namespace prepass {
constexpr int kThreads = 256;
constexpr int kSegmentK = 32;  // FP4 elements per thread: 16 raw bytes in, 64 fp16 bytes out

// The segment a thread owns: `index` counts the (l, m, k / 32) segments; false past the last.
struct Segment {
  long long index;
  int batch, row, seg;
};
__device__ __forceinline__ bool own_segment(const DequantGemmParams& p, Segment& s) {
  const long long per_row = p.k / kSegmentK;
  s.index = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (s.index >= static_cast<long long>(p.l) * p.m * per_row) return false;
  const long long row_global = s.index / per_row;  // l * m + row
  s.seg = static_cast<int>(s.index % per_row);
  s.batch = static_cast<int>(row_global / p.m);
  s.row = static_cast<int>(row_global % p.m);
  return true;
}
// The segment row's scale column `col` in `a`'s blocked (cuBLAS 128x4) layout.
__device__ __forceinline__ const std::uint8_t* token_scale(const DequantGemmParams& p, const Segment& s, int col) {
  return p.a_scale + s.batch * p.a_scale_batch +
         (static_cast<long long>(s.row >> 7) * (p.scale_cols_padded / 4) + (col >> 2)) * detail::kScaleChunk +
         (s.row & 31) * 16 + ((s.row >> 5) & 3) * 4 + (col & 3);
}
}  // namespace prepass

// (A template so that every translation unit including this header shares one weak definition.)
template <int kSegmentK>
__global__ void __launch_bounds__(prepass::kThreads) dequant_tokens_kernel(const DequantGemmParams p) {
  using namespace detail;
  launch_dependents();
  static_assert(kSegmentK == prepass::kSegmentK, "one thread turns 16 raw bytes into 64 fp16 bytes");
  prepass::Segment segment;
  if (!prepass::own_segment(p, segment)) return;
  const long long index = segment.index;
  const uint4 raw = __ldcs(reinterpret_cast<const uint4*>(p.a + index * 16));
  // scale columns 2 seg and 2 seg + 1: adjacent bytes of one 4-column group of the blocked layout
  const std::uint8_t* scale = prepass::token_scale(p, segment, 2 * segment.seg);
  const __half2 sc = two_scales_to_half2(*reinterpret_cast<const std::uint16_t*>(scale));
  std::uint32_t h[4][4];
  dequant8(raw.x, __low2half2(sc), h[0]);
  dequant8(raw.y, __low2half2(sc), h[1]);
  dequant8(raw.z, __high2half2(sc), h[2]);
  dequant8(raw.w, __high2half2(sc), h[3]);
  uint4* dst = reinterpret_cast<uint4*>(static_cast<__half*>(const_cast<void*>(p.tokens)) + index * kSegmentK);
#pragma unroll
  for (int pair = 0; pair < 4; ++pair) dst[pair] = make_uint4(h[0][pair], h[1][pair], h[2][pair], h[3][pair]);
}

// The same workspace order for 16-bit tokens (weight-only, W4A16): x's values as given, only permuted
// (pair_tokens16), so the wgmma kernel reads them with the same K order as the weights' fragments.
template <class TokenT>
__global__ void __launch_bounds__(prepass::kThreads) permute_tokens_kernel(const DequantGemmParams p) {
  using namespace detail;
  static_assert(sizeof(TokenT) == 2, "16-bit tokens");
  launch_dependents();
  constexpr int kSegmentK = prepass::kSegmentK;  // 64 bytes in, 64 bytes out per thread
  const long long segments = static_cast<long long>(p.l) * p.m * (p.k / kSegmentK);
  const long long index = static_cast<long long>(blockIdx.x) * prepass::kThreads + threadIdx.x;
  if (index >= segments) return;
  const uint4* src = reinterpret_cast<const uint4*>(p.a) + index * 4;
  std::uint32_t words01[8], words23[8];
  pair_tokens16(__ldcs(src), __ldcs(src + 1), words01);
  pair_tokens16(__ldcs(src + 2), __ldcs(src + 3), words23);
  uint4* dst = reinterpret_cast<uint4*>(static_cast<TokenT*>(const_cast<void*>(p.tokens)) + index * kSegmentK);
#pragma unroll
  for (int pair = 0; pair < 4; ++pair) dst[pair] = make_uint4(words01[pair], words01[4 + pair], words23[pair], words23[4 + pair]);
}

// MX tokens (MXFP4: packed e2m1, MXFP8: e4m3; one ue8m0 scale per 32 = one segment) -> exact bf16, so that
// MXFP4 x MXFP4 and MXFP8 x MXFP4 run the weight-only bf16 x MXFP4 kernels unchanged (launcher.cuh). A
// value e2m1 x 2^e or e4m3 x 2^e has at most 4 significant bits: a bf16 value while it is a normal one.
// The codes whose every value is (MXFP4 2..252 as for the weights: Weights<MxFormat>; MXFP8 10..246:
// 2^-9 x 2^-117 = 2^-126 up to 448 x 2^119 < bf16's largest) are exact; any other code (255 included) makes
// its 32 tokens NaN, so the outputs it feeds are NaN, never a flushed or overflowed value.
template <class TokenT>
struct MxTokens;
template <>
struct MxTokens<std::uint8_t> {  // 16 bytes of packed e2m1 per segment
  // h[w][i] = pair i (elements 8 w + i, 8 w + i + 4) of the segment's 8-element word w, bf16x2
  static __device__ __forceinline__ void dequant(const std::uint8_t* segment, std::uint32_t code,
                                                 std::uint32_t (&h)[4][4]) {
    using W = detail::Weights<MxFormat, __nv_bfloat16>;
    const __nv_bfloat162 scale = W::two_scales(code | (code << 8));
    const uint4 raw = __ldcs(reinterpret_cast<const uint4*>(segment));
    W::dequant(raw.x, scale, h[0]);
    W::dequant(raw.y, scale, h[1]);
    W::dequant(raw.z, scale, h[2]);
    W::dequant(raw.w, scale, h[3]);
  }
};
template <>
struct MxTokens<__nv_fp8_e4m3> {  // 32 bytes of e4m3 per segment
  static __device__ __forceinline__ void dequant(const std::uint8_t* segment, std::uint32_t code,
                                                 std::uint32_t (&h)[4][4]) {
    // 2^(code - 127) as an fp32 bit pattern; e4m3 -> fp16 -> fp32 and the product are exact
    const float scale = code >= 10 && code <= 246 ? __uint_as_float(code << 23) : __uint_as_float(0x7FC00000u);
    const uint4 lo = __ldcs(reinterpret_cast<const uint4*>(segment));
    const uint4 hi = __ldcs(reinterpret_cast<const uint4*>(segment) + 1);
    const std::uint32_t words[4][2] = {{lo.x, lo.y}, {lo.z, lo.w}, {hi.x, hi.y}, {hi.z, hi.w}};  // elements 0-3, 4-7
#pragma unroll
    for (int w = 0; w < 4; ++w)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        // byte i of each half: (element 8 w + i, element 8 w + i + 4) as e4m3x2 -> fp16x2 (low byte low)
        const std::uint32_t pair = __byte_perm(words[w][0], words[w][1], i | ((i + 4) << 4));
        std::uint32_t h2;
        asm("{\n .reg .b16 s;\n cvt.u16.u32 s, %1;\n cvt.rn.f16x2.e4m3x2 %0, s;\n}\n" : "=r"(h2) : "r"(pair));
        const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h2));
        const __nv_bfloat162 v = __floats2bfloat162_rn(f.x * scale, f.y * scale);
        h[w][i] = *reinterpret_cast<const std::uint32_t*>(&v);
      }
  }
};

// kPermuted: the wgmma kernel's workspace order above (its 16-bit permute pass is not needed); otherwise
// (l, m, k) as given, which the direct kernel stages like weight-only bf16 tokens. One thread per segment;
// only scale columns < K/32 of rows < M are read, never the blocked layout's padding.
template <class TokenT, bool kPermuted>
__global__ void __launch_bounds__(prepass::kThreads) mx_tokens_kernel(const DequantGemmParams p) {
  using namespace detail;
  launch_dependents();
  constexpr int kSegmentK = prepass::kSegmentK;
  static_assert(kSegmentK == MxFormat::kValuesPerScale, "one scale per segment");
  prepass::Segment segment;
  if (!prepass::own_segment(p, segment)) return;
  const long long index = segment.index;
  const std::uint32_t code = __ldg(prepass::token_scale(p, segment, segment.seg));
  constexpr int kSegmentBytes = kSegmentK * sizeof(TokenT) / (std::is_same_v<TokenT, std::uint8_t> ? 2 : 1);
  std::uint32_t h[4][4];
  MxTokens<TokenT>::dequant(p.a + index * kSegmentBytes, code, h);
  uint4* dst = reinterpret_cast<uint4*>(static_cast<__nv_bfloat16*>(const_cast<void*>(p.tokens)) + index * kSegmentK);
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    if constexpr (kPermuted) {
      dst[q] = make_uint4(h[0][q], h[1][q], h[2][q], h[3][q]);  // 16-byte chunk q: pair q of every word
    } else {  // word q's elements 0-7: the low halves of its pairs, then the high halves
      dst[q] = make_uint4(__byte_perm(h[q][0], h[q][1], 0x5410), __byte_perm(h[q][2], h[q][3], 0x5410),
                          __byte_perm(h[q][0], h[q][1], 0x7632), __byte_perm(h[q][2], h[q][3], 0x7632));
    }
  }
}

}  // namespace nvfp4_gemm::sm90
