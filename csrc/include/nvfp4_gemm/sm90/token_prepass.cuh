// The sm90 token prepass: packed FP4 tokens and their blocked e4m3 scales -> exact fp16 (times 2^-7, see
// common.cuh), or 16-bit tokens as given, in a workspace in the weights' K order, once per call, for the
// wgmma kernel (wgmma_gemm.cuh).
#pragma once

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
}  // namespace prepass

// (A template so that every translation unit including this header shares one weak definition.)
template <int kSegmentK>
__global__ void __launch_bounds__(prepass::kThreads) dequant_tokens_kernel(const DequantGemmParams p) {
  using namespace detail;
  launch_dependents();
  static_assert(kSegmentK == 32, "one thread turns 16 raw bytes into 64 fp16 bytes");
  const long long segments_per_row = p.k / kSegmentK;
  const long long index = static_cast<long long>(blockIdx.x) * prepass::kThreads + threadIdx.x;
  if (index >= static_cast<long long>(p.l) * p.m * segments_per_row) return;
  const long long row_global = index / segments_per_row;  // l * m + row
  const int seg = static_cast<int>(index % segments_per_row);
  const int batch = static_cast<int>(row_global / p.m), row = static_cast<int>(row_global % p.m);
  const uint4 raw = __ldcs(reinterpret_cast<const uint4*>(p.a + index * 16));
  // scale columns 2 seg and 2 seg + 1: adjacent bytes of one 4-column group of the blocked layout
  const int col = 2 * seg;
  const std::uint8_t* scale = p.a_scale + batch * p.a_scale_batch +
                              (static_cast<long long>(row >> 7) * (p.scale_cols_padded / 4) + (col >> 2)) * kScaleChunk +
                              (row & 31) * 16 + ((row >> 5) & 3) * 4 + (col & 3);
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

}  // namespace nvfp4_gemm::sm90
