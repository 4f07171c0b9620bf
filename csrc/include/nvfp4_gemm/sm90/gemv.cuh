// Weight-only GEMV of the sm90 family (the `sm90_gemv_*` configs): one to four 16-bit tokens against FP4
// weights on the CUDA cores, for decode calls whose layers are small enough that the direct kernel's fixed
// costs (token staging, split-K reduction) weigh more than its tensor cores save (perf notes, "A CUDA-core
// W4A16 GEMV at M = 1" and "The weight-only GEMV in the library").
//
// Work: a CTA of 128 threads owns kRows weight rows and the whole K; thread t takes the 32-element chunks
// t, t + 128, ... of each row (one 16-byte load per row and chunk: a warp reads 512 contiguous bytes of a
// row). A chunk's four words are dequantized to 16-bit pairs exactly as the MMA kernels do (Weights<...>,
// pair i = elements i, i + 4 of a word), each pair unpacked to FP32 and multiplied into the tokens with
// FFMA: every product 16-bit x (e2m1 x scale) is exact in FP32. No split-K: the warps' sums meet through
// shuffles and shared memory in a fixed order (deterministic).
//
// The FP32 chain of one output: 32 FFMA per chunk a thread owns (ceil(K / 4096) chunks), five shuffle
// additions, the 4-warp sum (two on any path) and alpha: 32 ceil(K / 4096) + 8 roundings. The earned
// tolerance counts K / 16 + K / 128 + 2 (tools/testing.py fp32_roundings), which covers it from
// K = kMinK on; below it a thread's 32 products in a row are a longer chain than the tolerance's, so the
// config refuses such K (python/nvfp4_gemm/families.py, gemv_min_k, says the same).
#pragma once

#include "nvfp4_gemm/sm90/common.cuh"

#include <type_traits>

namespace nvfp4_gemm::sm90 {

namespace gemv {
constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kChunkK = 32;              // elements per thread, row and step
constexpr int kChunkBytes = kChunkK / 2;  // one 16-byte load
constexpr int kMinK = 544;               // the smallest K whose chain the earned tolerance covers (above)

// A pair of 16-bit values (low half = first element) -> two FP32 values, exactly.
__device__ __forceinline__ float2 to_float2(std::uint32_t pair, __nv_bfloat16) {
  return make_float2(__uint_as_float(pair << 16), __uint_as_float(pair & 0xFFFF0000u));
}
__device__ __forceinline__ float2 to_float2(std::uint32_t pair, __half) {
  return __half22float2(*reinterpret_cast<const __half2*>(&pair));
}
}  // namespace gemv

template <int kTileM, int kRows, class ElementOut, class TokenT, class WeightBlock>
__global__ void __launch_bounds__(gemv::kThreads) gemv_kernel(const DequantGemmParams p) {
  using namespace detail;
  static_assert(std::is_same_v<TokenT, __half> || std::is_same_v<TokenT, __nv_bfloat16>,
                "the GEMV takes 16-bit tokens as given (weight-only formats)");
  static_assert(kRows == 4, "N is a multiple of 4 (the op's rule): whole CTAs of 4 rows, one output group");
  using W = Weights<WeightBlock, TokenT>;
  using Element = MmaElement<TokenT>;
  constexpr bool kMx = WeightBlock::kValuesPerScale == 32;
  static_assert(kMx || WeightBlock::kValuesPerScale == 16, "NVFP4 or MX weights");
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int n0 = blockIdx.x * kRows, batch = blockIdx.z;
  const int chunks = p.k / gemv::kChunkK;
  const long long k_bytes = p.k / 2;
  const int tile_cols = p.scale_cols_padded / 4;  // 512-byte scale tiles per 128-row block

  const std::uint8_t* w_row[kRows];
  const std::uint8_t* s_row[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int row = n0 + r;  // < N: N % 4 == 0 and the grid has N / 4 CTAs
    w_row[r] = p.b + (static_cast<long long>(batch) * p.n + row) * k_bytes;
    s_row[r] = p.b_scale + batch * p.b_scale_batch +
               static_cast<long long>(row >> 7) * tile_cols * kScaleChunk + (row & 31) * 16 + ((row >> 5) & 3) * 4;
  }
  const TokenT* x = reinterpret_cast<const TokenT*>(p.a) + static_cast<long long>(batch) * p.m * p.k;
  const int tokens = p.m;  // <= kTileM (can_implement)

  float acc[kTileM][kRows];
#pragma unroll
  for (int j = 0; j < kTileM; ++j)
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[j][r] = 0.0f;

  for (int c = tid; c < chunks; c += gemv::kThreads) {
    // the chunk's weights (streamed: read once) and scales: NVFP4 columns 2c, 2c + 1 (adjacent bytes of one
    // blocked tile), MX column c
    uint4 words[kRows];
    typename Element::Pair scales[kRows];
    const int col = kMx ? c : 2 * c;
    const long long scale_offset = static_cast<long long>(col >> 2) * kScaleChunk + (col & 3);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      words[r] = __ldcs(reinterpret_cast<const uint4*>(w_row[r] + static_cast<long long>(c) * gemv::kChunkBytes));
      std::uint32_t pair;
      if constexpr (kMx) {
        const std::uint32_t code = __ldg(s_row[r] + scale_offset);
        pair = code | (code << 8);
      } else {
        pair = __ldg(reinterpret_cast<const unsigned short*>(s_row[r] + scale_offset));
      }
      scales[r] = W::two_scales(pair);
    }
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      // elements 8w .. 8w + 7 of the chunk, each token's as FP32 (the tokens stay in L1: every CTA reads them)
      float xf[kTileM][8];
#pragma unroll
      for (int j = 0; j < kTileM; ++j) {
        if (j < tokens) {
          const uint4 v = __ldg(reinterpret_cast<const uint4*>(x + static_cast<long long>(j) * p.k + c * gemv::kChunkK + 8 * w));
          const std::uint32_t pairs[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float2 f = gemv::to_float2(pairs[e], TokenT{});
            xf[j][2 * e] = f.x;
            xf[j][2 * e + 1] = f.y;
          }
        }
      }
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const std::uint32_t word = w == 0 ? words[r].x : w == 1 ? words[r].y : w == 2 ? words[r].z : words[r].w;
        // words 0, 1 hold the first 16 elements (scale column 2c), words 2, 3 the next (2c + 1)
        std::uint32_t values[4];
        W::dequant(word, w < 2 ? Element::low2(scales[r]) : Element::high2(scales[r]), values);
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const float2 wf = gemv::to_float2(values[q], TokenT{});  // elements q and q + 4 of the word
#pragma unroll
          for (int j = 0; j < kTileM; ++j) {
            if (j < tokens) {
              acc[j][r] = fmaf(xf[j][q], wf.x, acc[j][r]);
              acc[j][r] = fmaf(xf[j][q + 4], wf.y, acc[j][r]);
            }
          }
        }
      }
    }
  }

  // warp sums, then the four warps' in a fixed order, into the epilogue's FP32 tile [token][row]
  constexpr int kPitch = kEpiloguePitch<kRows>;
  __shared__ float warp_sums[gemv::kWarps][kTileM][kRows];
  __shared__ __align__(16) float tile[kTileM * kPitch];
#pragma unroll
  for (int j = 0; j < kTileM; ++j)
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float v = acc[j][r];
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
      if (lane == 0) warp_sums[warp][j][r] = v;
    }
  __syncthreads();
  if (tid < kTileM * kRows) {
    const int j = tid / kRows, r = tid % kRows;
    tile[j * kPitch + r] = (warp_sums[0][j][r] + warp_sums[1][j][r]) + (warp_sums[2][j][r] + warp_sums[3][j][r]);
  }
  __syncthreads();
  finish_tile<kTileM, gemv::kThreads, ElementOut, CtaSync, kRows>(p, tile, tid, CtaSync{},
                                                                  W::kRescale * Tokens<TokenT>::kRescale);
}

}  // namespace nvfp4_gemm::sm90
