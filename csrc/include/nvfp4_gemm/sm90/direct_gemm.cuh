// Direct decode kernel of the sm90 family (the `sm90_direct_*` configs).
#pragma once

#include "nvfp4_gemm/sm90/common.cuh"

namespace nvfp4_gemm::sm90 {

// Direct decode kernel (the `sm90_direct_*` configs, 16 tokens per CTA). At decode sizes the weights
// are read once and the MMAs are few: the kernel is a stream of weight bytes, and its speed is the
// number of bytes it keeps in flight. A producer warp streams each stage's weight rows (one bulk copy
// per row, no registers held) and the stage's blocked scale tiles (one bulk copy) into a ring of shared
// memory, completing on the stage's mbarrier; 8 consumer warps of 16 weight rows each read their mma.sync
// A fragments from the ring, dequantize them in registers and release the slot. The few tokens are
// dequantized once per CTA and block of K into shared memory, in the order the B fragments are read,
// while the producer keeps filling the ring. K runs in chunks of 64 elements (32 bytes per row).
//   Fragment ownership: lane (g, t) holds bytes 8t .. 8t + 7 of every chunk (elements 16t .. 16t + 15
// = exactly scale block 4 chunk + t) of weight rows g and g + 8. dequant8 turns each 32-bit word into
// 4 fp16 pairs; k16 step j of the chunk takes pairs 2j and 2j + 1 of the two words' 8 pairs. The
// token record (chunk, token, t) holds the same 8 pairs of that token, so the lanes of one t pair
// matching terms (the order of a dot product's terms is free). 16-bit tokens (weight-only, W4A16) are
// staged the same way, as given: only their pairing into records (pair_tokens16).
namespace direct {
constexpr int kConsumerWarps = 8;
constexpr int kConsumers = 32 * kConsumerWarps;
constexpr int kThreads = kConsumers + 32;   // + the producer warp
constexpr int kChunkK = 64;                 // FP4 elements per chunk
constexpr int kChunkBytes = kChunkK / 2;
constexpr int kStageChunks = 4;             // chunks per ring slot: 128 bytes of each weight row
constexpr int kStages = 3;                  // ring slots: up to 3 x 22.5 KB in flight per CTA, 2 CTAs per SM
// Row pitch 160 bytes: the 4 rows a half-warp reads (g = 0..3 or 4..7) start 32 bytes apart in the 128
// banks' bytes, so its 8-byte fragment loads are free of bank conflicts.
constexpr int kRowPitch = kStageChunks * kChunkBytes + 32;
constexpr int kScaleTilesPerSlot = kStageChunks;  // NVFP4: one 512-byte tile per chunk (MX: one per two)
constexpr int kSlotBytes = detail::kTileN * kRowPitch + kScaleTilesPerSlot * detail::kScaleChunk;
constexpr int kBlockChunks = 16;            // chunks per token block in shared memory
constexpr int kRecordWords = 8;             // fp16 pairs of one (chunk, token, t) record
constexpr int kTokenBlockWords = kBlockChunks * 16 * 4 * kRecordWords;
constexpr int kTokenBytes = kTokenBlockWords * 4;  // 32 KB
constexpr int kSmemBytes = kTokenBytes + kStages * kSlotBytes + 2 * kStages * 8;  // ~98 KB: two CTAs per SM
constexpr int kTilePitch = detail::kTileN + 4;  // floats per token row of the epilogue tile
static_assert(kBlockChunks % kStageChunks == 0, "token blocks start on slot boundaries");
static_assert(kTokenBytes % 16 == 0 && kSlotBytes % 16 == 0 && kRowPitch % 16 == 0, "bulk copies land 16-byte aligned");
}  // namespace direct

namespace detail {
// One bulk copy (no tensor map) of `bytes` (a multiple of 16, 16-byte aligned both sides) from global
// into shared memory, its bytes completing a transaction on `bar`.
__device__ __forceinline__ void bulk_copy(void* smem, const void* gmem, unsigned bytes, std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(smem_addr(smem)),
      "l"(reinterpret_cast<std::uint64_t>(gmem)), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}
}  // namespace detail

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
  // token records of one block, then the ring's slots (rows, scale tiles), then its mbarriers; the
  // epilogue's FP32 tile reuses the token records' space
  extern __shared__ __align__(128) std::uint8_t smem[];
  std::uint32_t* tokens = reinterpret_cast<std::uint32_t*>(smem);
  std::uint8_t* ring = smem + direct::kTokenBytes;
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(ring + direct::kStages * direct::kSlotBytes);
  std::uint64_t* empty = full + direct::kStages;
  static_assert(kTileM * direct::kTilePitch * 4 <= direct::kTokenBytes, "epilogue tile fits");
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int n0 = blockIdx.x * kTileN, m0 = blockIdx.y * kTileM;
  const int batch = blockIdx.z / p.split_k, split = blockIdx.z % p.split_k;
  const int k_bytes = p.k / 2;
  const int chunks = (p.k + direct::kChunkK - 1) / direct::kChunkK;
  const int c_begin = static_cast<int>(static_cast<long long>(chunks) * split / p.split_k);
  const int c_end = static_cast<int>(static_cast<long long>(chunks) * (split + 1) / p.split_k);
  const int tile_cols = p.scale_cols_padded / 4;  // 512-byte scale tiles per 128-row block
  // the blocked scale tile holding chunk c's scales: NVFP4 one per chunk, MX one per two chunks
  auto scale_tile = [](int chunk) { return kMx ? chunk >> 1 : chunk; };

  if (tid == 0) {
    for (int s = 0; s < direct::kStages; ++s) {
      mbar_init(&full[s], 1);                          // the producer's arrival (+ the copies' bytes)
      mbar_init(&empty[s], direct::kConsumerWarps);    // one arrival per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warp == direct::kConsumerWarps) {
    // Producer: slot by slot, the CTA's weight rows (one bulk copy each, rows past N skipped) and the
    // slot's scale tiles (one bulk copy), as soon as the consumers have released the slot.
    const int rows = min(kTileN, p.n - n0);
    const std::uint8_t* w_rows = p.b + (static_cast<long long>(batch) * p.n + n0) * k_bytes;
    const std::uint8_t* w_tiles = p.b_scale + batch * p.b_scale_batch + static_cast<long long>(n0 >> 7) * tile_cols * kScaleChunk;
    RingPos<direct::kStages> pos;
    for (int c0 = c_begin; c0 < c_end; c0 += direct::kStageChunks) {
      const int c1 = min(c0 + direct::kStageChunks, c_end);
      const unsigned row_bytes = static_cast<unsigned>(min(c1 * direct::kChunkBytes, k_bytes) - c0 * direct::kChunkBytes);
      const int first_tile = scale_tile(c0), last_tile = scale_tile(c1 - 1);
      const unsigned tile_bytes = static_cast<unsigned>(last_tile - first_tile + 1) * kScaleChunk;
      mbar_wait(&empty[pos.slot], pos.phase ^ 1u);  // a fresh slot passes at once
      std::uint8_t* slot = ring + pos.slot * direct::kSlotBytes;
      if (lane == 0) mbar_arrive_expect_tx(&full[pos.slot], rows * row_bytes + tile_bytes);
      __syncwarp();
      for (int r = lane; r < rows; r += 32) {
        bulk_copy(slot + r * direct::kRowPitch, w_rows + static_cast<long long>(r) * k_bytes + c0 * direct::kChunkBytes,
                  row_bytes, &full[pos.slot]);
      }
      if (lane == 0) {
        bulk_copy(slot + kTileN * direct::kRowPitch, w_tiles + static_cast<long long>(first_tile) * kScaleChunk,
                  tile_bytes, &full[pos.slot]);
      }
      pos.advance();
    }
    return;  // the consumers wait on every copy this warp issued
  }

  // Consumers. MX tokens: the launch depends on the MX prepass (launcher.cuh), whose bf16 tokens are
  // complete and visible past this wait (the producer's weight copies already overlap it); without a
  // programmatic dependency it returns at once.
  wait_for_prerequisites();
  const int g = lane >> 2, t = lane & 3;
  const int kblocks = p.k / 16;
  const bool two_token_tiles = p.m - m0 > 8;  // CTA-uniform
  const NamedSync<direct::kConsumers> consumers_sync;
  // this lane's weight rows g and g + 8 of the warp's 16: their byte offsets in a slot, the offsets of
  // their scale bytes inside a 512-byte tile (cuBLAS 128x4 blocked: row part + column), whether they exist
  int w_row_off[2], w_scale_off[2];
  bool w_ok[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = warp * 16 + g + 8 * r;  // within the tile
    w_ok[r] = n0 + row < p.n;
    w_row_off[r] = row * direct::kRowPitch + 8 * t;
    w_scale_off[r] = kTileN * direct::kRowPitch + (row & 31) * 16 + ((row >> 5) & 3) * 4;
  }
  // Offset of scale byte (row, col) = row part + (col / 4) * 512 + col % 4 (cuBLAS 128x4 blocked).
  auto scale_row_base = [&](int row) {
    return static_cast<long long>(row >> 7) * tile_cols * kScaleChunk + (row & 31) * 16 + ((row >> 5) & 3) * 4;
  };
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

  RingPos<direct::kStages> pos;
  for (int b0 = c_begin; b0 < c_end; b0 += direct::kBlockChunks) {
    const int b_end = min(b0 + direct::kBlockChunks, c_end);
    // 1. the block's token records, dequantized once for all warps (a missing 16-element group, past K
    //    or past M, is zero and its scale is never read)
    consumers_sync();  // the previous block's records are no longer read
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
    consumers_sync();
    // 2. the block's slots, as the producer fills them
    for (int c0 = b0; c0 < b_end; c0 += direct::kStageChunks) {
      mbar_wait(&full[pos.slot], pos.phase);
      const std::uint8_t* slot = ring + pos.slot * direct::kSlotBytes;
      const int first_tile = scale_tile(c0);
#pragma unroll
      for (int u = 0; u < direct::kStageChunks; ++u) {
        const int chunk = c0 + u;
        if (chunk >= b_end) break;
        // a group past K, or a row past N, is zero whatever the slot holds (stale bytes of an earlier
        // stage); its scale is 0 (NVFP4) or 1 (MX: ue8m0 code 0 would read as NaN: Weights<MxFormat>)
        const bool k_ok = chunk * 4 + t < kblocks;
        const int scale_col = kMx ? (2 * (chunk & 1) + (t >> 1)) : t;
        std::uint32_t wh[2][2][4];  // [row g / g + 8][word][pair]
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const bool ok = k_ok && w_ok[r];
          const uint2 wv = ok ? *reinterpret_cast<const uint2*>(slot + w_row_off[r] + u * direct::kChunkBytes)
                              : make_uint2(0, 0);
          const std::uint32_t ws =
              ok ? slot[w_scale_off[r] + (scale_tile(chunk) - first_tile) * kScaleChunk + scale_col] : (kMx ? 127u : 0u);
          const auto sc2 = Element::low2(W::two_scales(ws));
          W::dequant(wv.x, sc2, wh[r][0]);
          W::dequant(wv.y, sc2, wh[r][1]);
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
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[pos.slot]);  // this warp has read the slot
      pos.advance();
    }
  }

  // Accumulators -> FP32 tile [token][weight] in shared memory, then the shared epilogue.
  consumers_sync();  // the last block's records are no longer read
  float* tile = reinterpret_cast<float*>(tokens);
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int weight = warp * 16 + g + (c >> 1) * 8;
      const int token = nt * 8 + 2 * t + (c & 1);
      tile[token * direct::kTilePitch + weight] = acc[nt][c];
    }
  consumers_sync();
  finish_tile<kTileM, direct::kConsumers, ElementOut>(p, tile, tid, consumers_sync,
                                                      Tokens<TokenT>::kRescale * W::kRescale);
}

}  // namespace nvfp4_gemm::sm90
