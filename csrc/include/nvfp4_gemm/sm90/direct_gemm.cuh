// Direct decode kernel of the sm90 family (the `sm90_direct_*` configs).
#pragma once

#include "nvfp4_gemm/sm90/common.cuh"

namespace nvfp4_gemm::sm90 {

// Direct decode kernel (the `sm90_direct_*` configs, 16 tokens per CTA). At decode sizes the weights
// are read once and the MMAs are few, so a shared-memory ring for them only adds latency: every lane
// loads the bytes of its own mma.sync A fragments straight from global memory into registers and
// dequantizes them there. The few tokens are dequantized once per CTA and block of K into shared
// memory, in the order the B fragments are read. 8 warps x 16 weight rows per CTA; K runs in chunks
// of 64 elements (32 bytes per row), blocks of kBlockChunks chunks.
//   Fragment ownership: lane (g, t) holds bytes 8t .. 8t + 7 of every chunk (elements 16t .. 16t + 15
// = exactly scale block 4 chunk + t) of weight rows g and g + 8. dequant8 turns each 32-bit word into
// 4 fp16 pairs; k16 step j of the chunk takes pairs 2j and 2j + 1 of the two words' 8 pairs. The
// token record (chunk, token, t) holds the same 8 pairs of that token, so the lanes of one t pair
// matching terms (the order of a dot product's terms is free). 16-bit tokens (weight-only, W4A16) are
// staged the same way, as given: only their pairing into records (pair_tokens16).
namespace direct {
constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kChunkK = 64;                 // FP4 elements per chunk
constexpr int kChunkBytes = kChunkK / 2;
constexpr int kChunksInFlight = 4;          // weight loads issued before the first of them is used
constexpr int kBlockChunks = 32;            // chunks per token block in shared memory
constexpr int kRecordWords = 8;             // fp16 pairs of one (chunk, token, t) record
constexpr int kTokenBlockWords = kBlockChunks * 16 * 4 * kRecordWords;
constexpr int kSmemBytes = kTokenBlockWords * 4;  // 64 KB: two CTAs per SM
constexpr int kTilePitch = detail::kTileN + 4;  // floats per token row of the epilogue tile
}  // namespace direct

template <int kTileM, class ElementOut, class TokenT, class WeightBlock>
__global__ void __launch_bounds__(direct::kThreads, 2) direct_decode_kernel(const DequantGemmParams p) {
  using namespace detail;
  using Mma = typename Tokens<TokenT>::Mma;
  using Element = MmaElement<Mma>;
  using W = Weights<WeightBlock, Mma>;
  // a lane's 16 elements of a chunk share one scale: NVFP4 column 4 chunk + t, MX column 2 chunk + t / 2
  constexpr bool kMx = WeightBlock::kValuesPerScale == 32;
  static_assert(kMx || WeightBlock::kValuesPerScale == 16, "NVFP4 or MX weights");
  static_assert(kTileM == 16, "the direct kernel covers 16 tokens per CTA (two n8 MMA tiles)");
  // token records of one block (dynamic shared memory); the epilogue's FP32 tile reuses the space
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
  const int kblocks = p.k / 16;
  const int tile_cols = p.scale_cols_padded / 4;  // 512-byte scale tiles per 128-row block
  const bool two_token_tiles = p.m - m0 > 8;      // CTA-uniform

  // Offset of scale byte (row, 4 chunk + sub) = row part + chunk * 512 + sub (cuBLAS 128x4 blocked).
  auto scale_row_base = [&](int row) {
    return static_cast<long long>(row >> 7) * tile_cols * kScaleChunk + (row & 31) * 16 + ((row >> 5) & 3) * 4;
  };

  // this lane's weight rows g and g + 8 of the warp's 16
  const std::uint8_t* w_src[2];
  const std::uint8_t* w_scale[2];
  bool w_ok[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = n0 + warp * 16 + g + 8 * r;
    w_ok[r] = row < p.n;
    w_src[r] = p.b + (static_cast<long long>(batch) * p.n + (w_ok[r] ? row : 0)) * k_bytes + 8 * t;
    w_scale[r] = p.b_scale + batch * p.b_scale_batch + scale_row_base(w_ok[r] ? row : 0) + (kMx ? t >> 1 : t);
  }
  // this thread's token records: token tid / 16 (of 16), sub-block t' = tid % 4, chunks (tid / 4) % 4 + 4 i
  const int rec_token = tid >> 4, rec_t = tid & 3, rec_chunk0 = (tid >> 2) & 3;
  const int a_row = m0 + rec_token;
  const bool a_ok = a_row < p.m;
  // packed FP4 tokens: 8 bytes per record; 16-bit tokens: 16 elements
  const std::uint8_t* a_src = p.a + (static_cast<long long>(batch) * p.m + (a_ok ? a_row : 0)) *
                                        (Tokens<TokenT>::kQuantized ? k_bytes : 2LL * p.k) +
                              (Tokens<TokenT>::kQuantized ? 8 : 32) * rec_t;
  const std::uint8_t* a_scale = Tokens<TokenT>::kQuantized
                                    ? p.a_scale + batch * p.a_scale_batch + scale_row_base(a_ok ? a_row : 0) + rec_t
                                    : nullptr;

  float acc[2][4];
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[nt][c] = 0.0f;

  uint2 wv[direct::kChunksInFlight][2];
  std::uint32_t ws[direct::kChunksInFlight][2];
  // Weight bytes and scale bytes of chunks c0 .. c0 + kChunksInFlight - 1 (zeros past the block's end,
  // past K or past N; a missing scale reads as 0, so padding scale bytes never meet the zeros).
  auto load_weights = [&](int c0, int b_end) {
#pragma unroll
    for (int u = 0; u < direct::kChunksInFlight; ++u) {
      const int chunk = c0 + u;
      const bool k_ok = chunk < b_end && chunk * 4 + t < kblocks;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const bool ok = k_ok && w_ok[r];
        wv[u][r] = ok ? __ldcs(reinterpret_cast<const uint2*>(w_src[r] + chunk * direct::kChunkBytes)) : make_uint2(0, 0);
        const long long scale_offset =
            kMx ? static_cast<long long>(chunk >> 1) * kScaleChunk + ((chunk & 1) << 1) : static_cast<long long>(chunk) * kScaleChunk;
        // a missing chunk's zero weights take a scale of 1 (ue8m0 code 0 would read as NaN: Weights<MxFormat>)
        ws[u][r] = ok ? __ldg(w_scale[r] + scale_offset) : (kMx ? 127u : 0u);
      }
    }
  };

  bool tokens_ready = false;
  for (int b0 = c_begin; b0 < c_end; b0 += direct::kBlockChunks) {
    const int b_end = min(b0 + direct::kBlockChunks, c_end);
    // the block's first weight loads go out before the token work, so their latency overlaps it
    load_weights(b0, b_end);
    if (!tokens_ready) {
      // MX tokens: the launch depends on the MX prepass (launcher.cuh), whose bf16 tokens are complete
      // and visible past this wait (the first weight loads already overlap it); without a programmatic
      // dependency it returns at once.
      wait_for_prerequisites();
      tokens_ready = true;
    }
    // 1. the block's token records, dequantized once for all warps (a missing 16-element group, past K
    //    or past M, is zero and its scale is never read)
    __syncthreads();  // the previous block's records are no longer read
#pragma unroll
    for (int i = 0; i < direct::kBlockChunks / 4; ++i) {
      const int chunk = b0 + rec_chunk0 + 4 * i;
      const bool ok = a_ok && chunk < b_end && chunk * 4 + rec_t < kblocks;
      std::uint32_t h[8];
      if constexpr (Tokens<TokenT>::kQuantized) {
        const uint2 raw = ok ? __ldg(reinterpret_cast<const uint2*>(a_src + chunk * direct::kChunkBytes)) : make_uint2(0, 0);
        const std::uint32_t sc = ok ? __ldg(a_scale + static_cast<long long>(chunk) * kScaleChunk) : 0u;
        const std::uint32_t sc2 = scale_to_half2(sc);
        std::uint32_t word0[4], word1[4];
        dequant8(raw.x, sc2, word0);
        dequant8(raw.y, sc2, word1);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          h[e] = word0[e];
          h[4 + e] = word1[e];
        }
      } else {
        const uint4* src = reinterpret_cast<const uint4*>(a_src + chunk * (2 * direct::kChunkK));
        const uint4 zero = make_uint4(0, 0, 0, 0);
        pair_tokens16(ok ? __ldg(src) : zero, ok ? __ldg(src + 1) : zero, h);
      }
      std::uint32_t* rec = tokens + (((chunk - b0) * 16 + rec_token) * 4 + rec_t) * direct::kRecordWords;
      sts128(rec, h[0], h[1], h[2], h[3]);
      sts128(rec + 4, h[4], h[5], h[6], h[7]);
    }
    __syncthreads();
    // 2. the block's weight chunks, kChunksInFlight at a time straight into registers
    for (int c0 = b0; c0 < b_end; c0 += direct::kChunksInFlight) {
      if (c0 != b0) load_weights(c0, b_end);
#pragma unroll
      for (int u = 0; u < direct::kChunksInFlight; ++u) {
        const int chunk = c0 + u;
        if (chunk >= b_end) break;
        std::uint32_t wh[2][2][4];  // [row g / g + 8][word][pair]
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const auto sc2 = Element::low2(W::two_scales(ws[u][r]));
          W::dequant(wv[u][r].x, sc2, wh[r][0]);
          W::dequant(wv[u][r].y, sc2, wh[r][1]);
        }
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {  // token tiles g and g + 8
          if (nt == 1 && !two_token_tiles) break;
          const std::uint32_t* rec = tokens + (((chunk - b0) * 16 + g + 8 * nt) * 4 + t) * direct::kRecordWords;
          const uint4 lo = *reinterpret_cast<const uint4*>(rec), hi = *reinterpret_cast<const uint4*>(rec + 4);
          const std::uint32_t bf[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            // k16 step j: pairs 2j, 2j + 1 of the sequence (word 0 pairs 0-3, word 1 pairs 4-7)
            const int word = j >> 1, pair = (j & 1) * 2;
            const std::uint32_t a_frag[4] = {wh[0][word][pair], wh[1][word][pair], wh[0][word][pair + 1],
                                             wh[1][word][pair + 1]};
            mma_m16n8k16(Mma{}, acc[nt], a_frag, bf[2 * j], bf[2 * j + 1]);
          }
        }
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
  finish_tile<kTileM, direct::kThreads, ElementOut>(p, tile, tid, CtaSync{}, Tokens<TokenT>::kRescale * W::kRescale);
}

}  // namespace nvfp4_gemm::sm90
