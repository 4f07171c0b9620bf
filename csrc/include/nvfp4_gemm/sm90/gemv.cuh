// Weight-only GEMV of the sm90 family (the `sm90_gemv_*` configs): up to the row's tile M of 16-bit tokens
// against FP4 weights on the CUDA cores, for decode calls whose layers are small enough that the direct
// kernel's fixed costs (token staging, split-K reduction) weigh more than its tensor cores save (perf notes,
// "A CUDA-core W4A16 GEMV at M = 1" and "The weight-only GEMV in the library"). The table has one-token rows
// only: rows of 2 and 4 tokens were built and measured slower than the direct kernel on every layer.
//
// Work: a CTA of 128 threads (4 warps) forms groups of `split` warps (1, 2 or 4: the launch's split_k, the
// K split inside the CTA); a group owns kRows = 4 weight rows and the whole K, and lane l of its warp w takes
// the 32-element chunks 32 w + l, + 32 split, ... of each row (one 16-byte load per row and chunk: a warp reads
// 512 contiguous bytes of a row). A chunk's four words are dequantized to 16-bit pairs exactly as the MMA
// kernels do (Weights<...>, pair i = elements i, i + 4 of a word), each pair unpacked to FP32 and multiplied
// into the tokens with FFMA: every product 16-bit x (e2m1 x scale) is exact in FP32. The group's warps meet in
// shared memory in a fixed order (deterministic); no partials leave the CTA.
//
// The FP32 chain of one output: 32 FFMA per chunk a lane owns (ceil(K / (1024 split)) chunks), five shuffle
// additions, log2(split) in the group's warp sum and alpha. The earned tolerance counts K / 16 + K / 128 + 2
// (tools/testing.py fp32_roundings), which covers it for every split from K = kMinK on (tests/test_gemv.py
// checks every K); below it a lane's 32 products in a row are a longer chain than the tolerance's, so the
// rows refuse such K (python/nvfp4_gemm/families.py, the gemv KindLimits, says the same).
#pragma once

#include "nvfp4_gemm/sm90/common.cuh"

#include <type_traits>

namespace nvfp4_gemm::sm90 {

namespace gemv {
constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxSplit = kWarps;         // warps of one group (split_k 1, 2, 4)
constexpr int kChunkK = 32;               // elements per lane, row and step
constexpr int kChunkBytes = kChunkK / 2;  // one 16-byte load
constexpr int kMinK = 544;                // the smallest K whose chain the earned tolerance covers (above)

// A pair of 16-bit values (low half = first element) -> two FP32 values, exactly.
__device__ __forceinline__ float2 to_float2(std::uint32_t pair, __nv_bfloat16) {
  return make_float2(__uint_as_float(pair << 16), __uint_as_float(pair & 0xFFFF0000u));
}
__device__ __forceinline__ float2 to_float2(std::uint32_t pair, __half) {
  return __half22float2(*reinterpret_cast<const __half2*>(&pair));
}
}  // namespace gemv

// Weight rows per CTA at a split: kRows per group, kWarps / split groups.
template <int kRows>
__host__ __device__ constexpr int gemv_rows_per_cta(int split) {
  return kRows * (gemv::kWarps / split);
}

template <int kTileM, int kRows, class ElementOut, class TokenT, class WeightBlock>
__global__ void __launch_bounds__(gemv::kThreads) gemv_kernel(const DequantGemmParams p) {
  using namespace detail;
  static_assert(std::is_same_v<TokenT, __half> || std::is_same_v<TokenT, __nv_bfloat16>,
                "the GEMV takes 16-bit tokens as given (weight-only formats)");
  static_assert(kRows == 4, "N is a multiple of 4 (the op's rule): whole groups of 4 rows, one output float4");
  using W = Weights<WeightBlock, TokenT>;
  using Element = MmaElement<TokenT>;
  constexpr bool kMx = WeightBlock::kValuesPerScale == 32;
  static_assert(kMx || WeightBlock::kValuesPerScale == 16, "NVFP4 or MX weights");
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int split = p.split_k, groups = gemv::kWarps / split;
  const int group = warp / split, k_lane = (warp % split) * 32 + lane, k_lanes = 32 * split;
  const int n0 = (blockIdx.x * groups + group) * kRows;
  const bool active = n0 < p.n;  // warp-uniform: a last CTA's groups past N only meet the barrier
  const int batch = blockIdx.z;
  const int chunks = p.k / gemv::kChunkK;
  const long long k_bytes = p.k / 2;
  const int tile_cols = p.scale_cols_padded / 4;  // 512-byte scale tiles per 128-row block

  const std::uint8_t* w_row[kRows];
  const std::uint8_t* s_row[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int row = active ? n0 + r : 0;  // n0 + r < N: N % 4 == 0
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

  for (int c = active ? k_lane : chunks; c < chunks; c += k_lanes) {
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

  // warp sums; then per (token, group) one thread adds the group's warps in a fixed tree order and stores
  // the group's 4 outputs (alpha and the weights' power of two, one rounding)
  __shared__ float warp_sums[gemv::kWarps][kTileM][kRows];
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
  if (tid >= kTileM * groups) return;
  const int j = tid / groups, g = tid % groups;
  const int out_n0 = (blockIdx.x * groups + g) * kRows;
  if (j >= tokens || out_n0 >= p.n) return;
  float sums[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int w0 = g * split;
    float v = warp_sums[w0][j][r];
    if (split == 2) v += warp_sums[w0 + 1][j][r];
    if (split == 4) v = (v + warp_sums[w0 + 1][j][r]) + (warp_sums[w0 + 2][j][r] + warp_sums[w0 + 3][j][r]);
    sums[r] = v;
  }
  const float product_rescale = W::kRescale * Tokens<TokenT>::kRescale;
  ElementOut* out = static_cast<ElementOut*>(p.out) + (static_cast<long long>(batch) * p.m + j) * p.n;
  store_out4<ElementOut>(p, out, out_n0, make_float4(sums[0], sums[1], sums[2], sums[3]),
                         output_scale(p, product_rescale), product_rescale);
}

}  // namespace nvfp4_gemm::sm90
