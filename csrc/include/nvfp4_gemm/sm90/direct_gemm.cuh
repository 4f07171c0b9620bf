// Direct decode kernel of the sm90 family (the `sm90_direct_*` configs).
#pragma once

#include "nvfp4_gemm/sm90/common.cuh"

#include <type_traits>

namespace nvfp4_gemm::sm90 {

// Direct decode kernel (the `sm90_direct_*` configs, 16 tokens per CTA). At decode sizes the weights
// are read once and the MMAs are few, so a shared-memory ring for them only adds latency: every lane
// loads the bytes of its own mma.sync A fragments straight from global memory into registers and
// dequantizes them there. The few tokens are dequantized once per CTA and block of K into shared
// memory, in the order the B fragments are read. 8 warps x 16 weight rows per CTA; K runs in chunks
// of 128 elements (64 bytes per row), blocks of kBlockChunks chunks.
//   Fragment ownership: lane (g, t) loads bytes 16t .. 16t + 15 of every chunk (elements 32t .. 32t + 31:
// NVFP4 scale columns 8 chunk + 2t and + 1, one MX column 4 chunk + t) of weight rows g and g + 8, one
// 16-byte load per row, so a warp's load covers 8 rows x 64 contiguous bytes (16-byte loads over 64-byte
// row pieces stream ~1.3x faster than 8-byte loads over 32-byte pieces: perf notes, "Hopper v7").
// dequant8 turns each of the 4 words into 4 fp16 pairs; k16 steps 2w and 2w + 1 of the chunk take pairs
// 0, 1 and 2, 3 of word w. The token quad (chunk, w, token, t) holds the same 4 pairs of that token, so
// the lanes of one t pair matching terms (the order of a dot product's terms is free). 16-bit tokens
// (weight-only, W4A16) are staged the same way, as given: only their pairing into quads (pair_tokens16).
namespace direct {
constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kChunkK = 128;                    // FP4 elements per chunk
constexpr int kChunkBytes = kChunkK / 2;
constexpr int kLaneBytes = kChunkBytes / 4;     // one 16-byte load per lane, weight row and chunk
constexpr int kLaneK = kChunkK / 4;             // elements per lane and chunk
constexpr int kWords = kLaneBytes / 4;          // e2m1 words per lane, row and chunk
constexpr int kChunksPerSet = 2;                // chunks per register set of weight loads (two sets)
constexpr int kBlockChunks = 16;                // chunks per token block in shared memory
constexpr int kQuadWords = 4;                   // fp16 pairs of one (chunk, word, token, t) quad
constexpr int kTokenBlockWords = kBlockChunks * kWords * 16 * 4 * kQuadWords;
constexpr int kSmemBytes = kTokenBlockWords * 4;  // 64 KB: two CTAs per SM
constexpr int kTilePitch = detail::kEpiloguePitch<detail::kTileN>;
// Quads of one (chunk, word) are 16 tokens x 4 lanes x 16 bytes in lane order: a warp's reads of one
// word, and a staging warp's writes, cover contiguous bytes (no bank conflicts).
__device__ __forceinline__ int quad_offset(int chunk, int word, int token, int t) {
  return (((chunk * kWords + word) * 16 + token) * 4 + t) * kQuadWords;
}
}  // namespace direct

template <int kTileM, class ElementOut, class TokenT, class WeightBlock>
__global__ void __launch_bounds__(direct::kThreads, 2) direct_decode_kernel(const DequantGemmParams p) {
  using namespace detail;
  using Mma = typename Tokens<TokenT>::Mma;
  using Element = MmaElement<Mma>;
  using W = Weights<WeightBlock, Mma>;
  // a lane's 32 elements of a chunk: NVFP4 scale columns 8 chunk + 2t and + 1 (adjacent bytes of one
  // blocked tile, 2 tiles per chunk), MX column 4 chunk + t (1 tile per chunk)
  constexpr bool kMx = WeightBlock::kValuesPerScale == 32;
  static_assert(kMx || WeightBlock::kValuesPerScale == 16, "NVFP4 or MX weights");
  static_assert(kTileM == 16, "the direct kernel covers 16 tokens per CTA (two n8 MMA tiles)");
  // token quads of one block (dynamic shared memory); the epilogue's FP32 tile reuses the space
  extern __shared__ __align__(16) std::uint32_t tokens[];
  static_assert(kTileM * direct::kTilePitch <= direct::kTokenBlockWords, "epilogue tile fits");
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;
  const int n0 = blockIdx.x * kTileN, m0 = blockIdx.y * kTileM;
  const int batch = blockIdx.z / p.split_k, split = blockIdx.z % p.split_k;
  const int k_bytes = p.k / 2;
  const int chunks = (p.k + direct::kChunkK - 1) / direct::kChunkK;
  const int c_begin = static_cast<int>(static_cast<long long>(chunks) * split / p.split_k);
  const int c_end = static_cast<int>(static_cast<long long>(chunks) * (split + 1) / p.split_k);
  const int k_lanes = p.k / direct::kLaneK;  // 32-element lane pieces inside K (K is a multiple of 32)
  const int tile_cols = p.scale_cols_padded / 4;  // 512-byte scale tiles per 128-row block
  const bool two_token_tiles = p.m - m0 > 8;      // CTA-uniform: the loop is compiled for one and for two
  // a lane's scale bytes: NVFP4 tile 2 chunk + t / 2, bytes 2 (t % 2) and + 1; MX tile chunk, byte t
  constexpr int kScaleStride = kMx ? kScaleChunk : 2 * kScaleChunk;  // bytes per chunk
  const int lane_scale = kMx ? t : (t >> 1) * kScaleChunk + 2 * (t & 1);

  // Offset of the scale bytes of `row` in its 128-row block (cuBLAS 128x4 blocked).
  auto scale_row_base = [&](int row) {
    return static_cast<long long>(row >> 7) * tile_cols * kScaleChunk + (row & 31) * 16 + ((row >> 5) & 3) * 4;
  };
  // the scale bytes of a lane's piece (low 16 bits, NVFP4 (column 2t, 2t + 1); MX the one column twice)
  auto load_scales = [&](const std::uint8_t* src) -> std::uint32_t {
    if constexpr (kMx) {
      const std::uint32_t code = __ldg(src);
      return code | (code << 8);
    } else {
      return __ldg(reinterpret_cast<const unsigned short*>(src));
    }
  };

  // this lane's weight rows g and g + 8 of the warp's 16
  const std::uint8_t* w_src[2];
  const std::uint8_t* w_scale[2];
  bool w_ok[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = n0 + warp * 16 + g + 8 * r;
    w_ok[r] = row < p.n;
    w_src[r] = p.b + (static_cast<long long>(batch) * p.n + (w_ok[r] ? row : 0)) * k_bytes + direct::kLaneBytes * t;
    w_scale[r] = p.b_scale + batch * p.b_scale_batch + scale_row_base(w_ok[r] ? row : 0) + lane_scale;
  }
  // this thread's token quads: lane piece t' = tid % 4 of token (tid / 4) % 16, chunks tid / 64 + 4 i (a
  // staging warp writes 512 contiguous bytes per word)
  const int rec_t = tid & 3, rec_token = (tid >> 2) & 15, rec_chunk0 = tid >> 6;
  const int a_row = m0 + rec_token;
  const bool a_ok = a_row < p.m;
  // packed FP4 tokens: 16 bytes per lane piece; 16-bit tokens: 32 elements
  constexpr int kTokenLaneBytes = Tokens<TokenT>::kQuantized ? direct::kLaneBytes : 2 * direct::kLaneK;
  const std::uint8_t* a_src = p.a + (static_cast<long long>(batch) * p.m + (a_ok ? a_row : 0)) *
                                        (Tokens<TokenT>::kQuantized ? k_bytes : 2LL * p.k) +
                              kTokenLaneBytes * rec_t;
  const std::uint8_t* a_scale = Tokens<TokenT>::kQuantized ? p.a_scale + batch * p.a_scale_batch +
                                                                 scale_row_base(a_ok ? a_row : 0) +
                                                                 (rec_t >> 1) * kScaleChunk + 2 * (rec_t & 1)
                                                           : nullptr;

  float acc[2][4];
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[nt][c] = 0.0f;

  // Two register sets of kChunksPerSet chunks: one set's loads are in flight while the other's chunks
  // are dequantized and multiplied.
  using WeightBytes = uint4[direct::kChunksPerSet][2];
  using WeightScales = std::uint32_t[direct::kChunksPerSet][2];
  uint4 wv0[direct::kChunksPerSet][2], wv1[direct::kChunksPerSet][2];
  std::uint32_t ws0[direct::kChunksPerSet][2], ws1[direct::kChunksPerSet][2];
  // Weight bytes and scale bytes of chunks c0 .. c0 + kChunksPerSet - 1 before b_end. Checked (a tile
  // that ends past N or a block that ends past K): zeros past K or past N (a missing NVFP4 scale reads
  // as 0, so padding scale bytes never meet the zeros). Unchecked (CTA-uniform: every row and element of
  // the block exists): no per-lane tests and one address per row and set, the chunks at fixed offsets;
  // chunks past b_end are not loaded (nor multiplied).
  auto load_weights = [&](auto checked, WeightBytes& wv, WeightScales& ws, int c0, int b_end) {
    if constexpr (decltype(checked)::value) {
#pragma unroll
      for (int u = 0; u < direct::kChunksPerSet; ++u) {
        const int chunk = c0 + u;
        const bool k_ok = chunk < b_end && chunk * 4 + t < k_lanes;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const bool ok = k_ok && w_ok[r];
          wv[u][r] = ok ? __ldcs(reinterpret_cast<const uint4*>(w_src[r] + chunk * direct::kChunkBytes))
                        : make_uint4(0, 0, 0, 0);
          // a missing piece's zero weights take a scale of 1 (ue8m0 code 0 would read as NaN: Weights<MxFormat>)
          ws[u][r] = ok ? load_scales(w_scale[r] + static_cast<long long>(chunk) * kScaleStride) : (kMx ? 0x7F7Fu : 0u);
        }
      }
    } else {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const uint4* bytes = reinterpret_cast<const uint4*>(w_src[r] + c0 * direct::kChunkBytes);
        const std::uint8_t* scales = w_scale[r] + static_cast<long long>(c0) * kScaleStride;
#pragma unroll
        for (int u = 0; u < direct::kChunksPerSet; ++u) {
          if (c0 + u < b_end) {
            wv[u][r] = __ldcs(bytes + u * (direct::kChunkBytes / 16));
            ws[u][r] = load_scales(scales + u * kScaleStride);
          }
        }
      }
    }
  };
  // Chunks c0 .. of one set, those before b_end, into the accumulators of `token_tiles` n8 token tiles
  // (a loop for one tile issues no MMAs and shared loads of an absent second tile: M <= 8 is 9 % fewer
  // instructions).
  auto multiply = [&](auto token_tiles, const WeightBytes& wv, const WeightScales& ws, int c0, int b0, int b_end) {
#pragma unroll
    for (int u = 0; u < direct::kChunksPerSet; ++u) {
      const int chunk = c0 + u;
      if (chunk >= b_end) break;
      // scale pairs per row: words 0, 1 take the low one, words 2, 3 the high one (MX: the same twice)
      typename Element::Pair sc[2][2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const auto both = W::two_scales(ws[u][r]);
        sc[r][0] = Element::low2(both);
        sc[r][1] = Element::high2(both);
      }
#pragma unroll
      for (int w = 0; w < direct::kWords; ++w) {
        std::uint32_t wh[2][4];  // [row g / g + 8][pair]
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const std::uint32_t word = w == 0 ? wv[u][r].x : w == 1 ? wv[u][r].y : w == 2 ? wv[u][r].z : wv[u][r].w;
          W::dequant(word, sc[r][w >> 1], wh[r]);
        }
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {  // token tiles g and g + 8
          if (nt == decltype(token_tiles)::value) break;
          const uint4 q = *reinterpret_cast<const uint4*>(tokens + direct::quad_offset(chunk - b0, w, g + 8 * nt, t));
          const std::uint32_t bf[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            // k16 step 2w + j: pairs 2j, 2j + 1 of word w
            const std::uint32_t a_frag[4] = {wh[0][2 * j], wh[1][2 * j], wh[0][2 * j + 1], wh[1][2 * j + 1]};
            mma_m16n8k16(Mma{}, acc[nt], a_frag, bf[2 * j], bf[2 * j + 1]);
          }
        }
      }
    }
  };

  // every weight row of the tile exists (CTA-uniform; a block must also end inside K to go unchecked)
  const bool rows_inside = n0 + kTileN <= p.n;
  // NVFP4 tokens: launched programmatically after any kernel (launcher.cuh), which may be the one that
  // writes the weights, so no global read comes before the wait
  if constexpr (Tokens<TokenT>::kQuantized) wait_for_prerequisites();
  bool tokens_ready = false;
  for (int b0 = c_begin; b0 < c_end; b0 += direct::kBlockChunks) {
    const int b_end = min(b0 + direct::kBlockChunks, c_end);
    const bool unchecked = rows_inside && b_end * direct::kChunkK <= p.k;
    // the block's first weight loads go out before the token work, so their latency overlaps it
    if (unchecked) {
      load_weights(std::false_type{}, wv0, ws0, b0, b_end);
    } else {
      load_weights(std::true_type{}, wv0, ws0, b0, b_end);
    }
    if (!tokens_ready) {
      // MX tokens: after the MX prepass (launcher.cuh), whose bf16 tokens are complete and visible past
      // this wait, the first weight loads overlap it; 16-bit tokens: a plain launch, it returns at once;
      // NVFP4 tokens: it returns at once after the wait above.
      wait_for_prerequisites();
      tokens_ready = true;
    }
    // 1. the block's token quads, dequantized once for all warps (a missing 32-element piece, past K
    //    or past M, is zero and its scales are never read)
    __syncthreads();  // the previous block's quads are no longer read
#pragma unroll
    for (int i = 0; i < direct::kBlockChunks / 4; ++i) {
      const int chunk = b0 + rec_chunk0 + 4 * i;
      const bool ok = a_ok && chunk < b_end && chunk * 4 + rec_t < k_lanes;
      std::uint32_t h[4 * direct::kWords];
      if constexpr (Tokens<TokenT>::kQuantized) {
        const uint4 raw = ok ? __ldg(reinterpret_cast<const uint4*>(a_src + chunk * direct::kChunkBytes)) : make_uint4(0, 0, 0, 0);
        const std::uint32_t sc = ok ? __ldg(reinterpret_cast<const unsigned short*>(a_scale + static_cast<long long>(chunk) * 2 * kScaleChunk)) : 0u;
        const __half2 sc2 = two_scales_to_half2(sc);
        const std::uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
        for (int w = 0; w < direct::kWords; ++w) {
          std::uint32_t q[4];
          dequant8(words[w], w < 2 ? __low2half2(sc2) : __high2half2(sc2), q);
#pragma unroll
          for (int e = 0; e < 4; ++e) h[4 * w + e] = q[e];
        }
      } else {
        const uint4* src = reinterpret_cast<const uint4*>(a_src + chunk * (2 * direct::kChunkK));
        const uint4 zero = make_uint4(0, 0, 0, 0);
        std::uint32_t lo[8], hi[8];
        pair_tokens16(ok ? __ldg(src) : zero, ok ? __ldg(src + 1) : zero, lo);
        pair_tokens16(ok ? __ldg(src + 2) : zero, ok ? __ldg(src + 3) : zero, hi);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          h[e] = lo[e];
          h[8 + e] = hi[e];
        }
      }
#pragma unroll
      for (int w = 0; w < direct::kWords; ++w) {
        sts128(tokens + direct::quad_offset(chunk - b0, w, rec_token, rec_t), h[4 * w], h[4 * w + 1], h[4 * w + 2],
               h[4 * w + 3]);
      }
    }
    __syncthreads();
    // 2. the block's weight chunks, the two register sets in turn: the next set's loads go out before
    //    the current set is multiplied
    auto weight_chunks = [&](auto checked, auto token_tiles) {
      constexpr int kSet = direct::kChunksPerSet;
      for (int c0 = b0; c0 < b_end; c0 += 2 * kSet) {
        load_weights(checked, wv1, ws1, c0 + kSet, b_end);
        multiply(token_tiles, wv0, ws0, c0, b0, b_end);
        if (c0 + 2 * kSet < b_end) load_weights(checked, wv0, ws0, c0 + 2 * kSet, b_end);
        multiply(token_tiles, wv1, ws1, c0 + kSet, b0, b_end);
      }
    };
    using One = std::integral_constant<int, 1>;
    using Two = std::integral_constant<int, 2>;
    if (unchecked) {
      if (two_token_tiles) {
        weight_chunks(std::false_type{}, Two{});
      } else {
        weight_chunks(std::false_type{}, One{});
      }
    } else {
      if (two_token_tiles) {
        weight_chunks(std::true_type{}, Two{});
      } else {
        weight_chunks(std::true_type{}, One{});
      }
    }
  }

  // Accumulators -> FP32 tile [token][weight] in shared memory, then the shared epilogue.
  __syncthreads();  // the last block's records are no longer read
  float* tile = reinterpret_cast<float*>(tokens);
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int weight = warp * 16 + g + (c >> 1) * 8;
      const int token = nt * 8 + 2 * t + (c & 1);
      tile[token * direct::kTilePitch + weight] = acc[nt][c];
    }
  __syncthreads();
  if (p.cluster_split > 1) {
    finish_tile_in_cluster<kTileM, direct::kThreads, ElementOut>(p, tile, tid, Tokens<TokenT>::kRescale * W::kRescale);
  } else {
    finish_tile<kTileM, direct::kThreads, ElementOut>(p, tile, tid, CtaSync{}, Tokens<TokenT>::kRescale * W::kRescale);
  }
}

}  // namespace nvfp4_gemm::sm90
