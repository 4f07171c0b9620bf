// The sm90 wgmma kernel (the `sm90_wgmma_*_prepass_splitk` configs): raw FP4 weights dequantized in
// registers as wgmma's A operand, 16-bit tokens from the token prepass (token_prepass.cuh) by TMA as
// its shared-memory B operand: fp16 (NVFP4 tokens dequantized, or fp16 tokens) or bf16 (bf16 tokens,
// with bf16 weights and bf16 wgmmas).
#pragma once

#include "nvfp4_gemm/sm90/common.cuh"

namespace nvfp4_gemm::sm90 {

// `tokens_map`: the prepass's fp16 tokens as a 3D tensor (k, m, l), boxes of 64 x kTileM x 1 in the
// 128-byte swizzle, zeros outside; a parameter of its own (__grid_constant__, TMA reads it in parameter
// space): inside DequantGemmParams its 64-byte alignment changed the direct kernel's code, 5-9 % slower.
// One producer warpgroup (cp.async of raw weights and scales, TMA of the fp16 tokens, into a
// kSlots-deep ring with one full and one empty mbarrier per slot) and two consumer warpgroups. A CTA
// covers kTileN = 128 or 256 weight rows: consumer warp w owns rows 16 w + 128 t of m-tile t
// (t < kTileN / 128), so each warpgroup issues one m64nNk16 wgmma per m-tile and k16 step, N = the
// token tile. 256 rows halve the token bytes per MMA, which the large token tiles need (perf notes,
// "Hopper v6"). Per k32 quarter of a stage the consumers dequantize their weights into one of four
// fragment sets and issue one batch of wgmmas; the sets rotate, so a quarter's dequantization
// overlaps the two batches before it (wgmma.wait_group 2, never 0 in the loop; perf notes "Hopper v12":
// 1-2.6 % faster than halves with one batch in flight at 128 tokens, 0.4-2.6 % faster than three in
// flight at 64). No CTA-wide barrier in the main loop. Split-K: inside a thread-block cluster where the
// launcher makes one (finish_tile_in_cluster; the producers join its two cluster barriers), else through
// the partials.
template <int kTileM, int kTileN, int kScaleTiles = 2>
struct WgmmaShape {
  static_assert(kTileN == 128 || kTileN == 256, "weight tile is 128 or 256 rows");
  static_assert(kTileM == 64 || kTileM == 128 || (kTileM == 256 && kTileN == 128),
                "token tile is 64, 128 or (with 128 weight rows) 256: the accumulators must fit in registers");
  static constexpr int kMTiles = kTileN / 128;  // 64-row wgmma m-tiles per consumer warpgroup
  static constexpr int kProducerThreads = 128;
  static constexpr int kThreads = kProducerThreads + 256;
  // setmaxnreg budgets: 384 threads start at 168 registers; 128 x 72 + 256 x 216 = 64512 <= 65536,
  // or 128 x 40 + 256 x 232 for the 128 x 256 tile, whose 128 accumulators and two fragment sets of
  // 32 registers per thread need 232 (ptxas serializes the wgmmas below that, C7512).
  static constexpr bool kWideAccumulators = kTileM * kTileN >= 128 * 256;
  static constexpr int kProducerRegs = kWideAccumulators ? 40 : 72;
  static constexpr int kConsumerRegs = kWideAccumulators ? 232 : 216;
  static constexpr int kTokBytes = kTileM * detail::kStageK * 2;  // 16-bit tokens of one stage, 1 KB aligned
  static constexpr int kRawW = kTileN * detail::kStageBytes;
  // the stage's scale tiles (2 for NVFP4, 1 for MX) per 128-row block of the blocked layout
  static constexpr int kScaleBytes = kScaleTiles * detail::kScaleChunk;
  static constexpr int kScaleW = (kMTiles * kScaleBytes + 1023) / 1024 * 1024;  // slots stay 1 KB aligned (TMA swizzle)
  static constexpr int kSlotBytes = kTokBytes + kRawW + kScaleW;
  static_assert(kSlotBytes % 1024 == 0, "each slot's tokens start on a 128-byte swizzle atom");
  static constexpr int kEpilogueSmem = kTileM * detail::kEpiloguePitch<kTileN> * 4;
  static constexpr int kRingBudget = 226 * 1024;
  static constexpr int kSlots = kRingBudget / kSlotBytes > 8 ? 8 : kRingBudget / kSlotBytes;
  static constexpr int kMainSmem = kSlots * kSlotBytes;
  // + 1 KB: the ring is realigned to 1024 bytes (the 128-byte swizzle's atom).
  static constexpr int kSmemBytes = (kMainSmem > kEpilogueSmem ? kMainSmem : kEpilogueSmem) + 1024;
  static_assert(kSlots >= 3 && kSmemBytes <= 227 * 1024, "shared memory");
};

template <int kTileM, int kTileN, class ElementOut, class TokenT, class WeightBlock>
__global__ void __launch_bounds__(WgmmaShape<kTileM, kTileN>::kThreads, 1)
    wgmma_gemm_kernel(const __grid_constant__ DequantGemmParams p, const __grid_constant__ CUtensorMap tokens_map) {
  using namespace detail;
  using Mma = typename Tokens<TokenT>::Mma;
  using Element = MmaElement<Mma>;
  using W = Weights<WeightBlock, Mma>;
  constexpr int kScaleTiles = kScaleTilesPerStage<WeightBlock>;  // 2: NVFP4, 1: MX
  using S = WgmmaShape<kTileM, kTileN, kScaleTiles>;
  constexpr int kScaleBytes = S::kScaleBytes;
  constexpr int R = S::kSlots;
  constexpr int MT = S::kMTiles;
  extern __shared__ __align__(128) std::uint8_t smem_raw[];
  __shared__ __align__(8) std::uint64_t full[R], empty[R];

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  std::uint8_t* ring = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);

  const CtaWork work = cta_work<kTileM, kTileN>(p);
  const int n0 = work.n0, m0 = work.m0, batch = work.batch;
  const int stage_begin = work.stage_begin, num_stages = work.num_stages;

  if (tid == 0) {
#pragma unroll
    for (int i = 0; i < R; ++i) {
      // one cp.async-tracking arrival per producer thread, plus the token TMA's expect_tx arrival
      mbar_init(&full[i], S::kProducerThreads + 1);
      mbar_init(&empty[i], 256);  // one arrival per consumer thread
    }
  }
  __syncthreads();

  if (warp < S::kProducerThreads / 32) {
    // ---------------- producer warpgroup ----------------
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(S::kProducerRegs));
    const int k_bytes = p.k / 2;
    const std::uint8_t* b_batch = p.b + static_cast<long long>(batch) * p.n * k_bytes;
    const int scale_tiles_per_row_block = p.scale_cols_padded / 4;
    // the blocked scales of this CTA's first 128-row block; the next block follows a row block later
    const long long scale_row_block = static_cast<long long>(scale_tiles_per_row_block) * kScaleChunk;
    const std::uint8_t* b_scale_rows = p.b_scale + batch * p.b_scale_batch + (n0 / 128) * scale_row_block;
    const int row_blocks_left = (p.n - n0 + 127) / 128;  // 128-row scale blocks that exist from n0 on
    // Raw weights (kTileN rows x 64 bytes, chunks XOR-swizzled by row against ldmatrix bank conflicts)
    // and their scales (per 128-row block, the stage's 8 columns = 2 tiles of the blocked layout).
    auto load_weights = [&](int s, int slot) {
      std::uint8_t* base = ring + slot * S::kSlotBytes + S::kTokBytes;
      const int chunk = tid & 3;
      const int gk = s * kStageBytes + chunk * 16;
      const bool k_ok = gk < k_bytes;
#pragma unroll
      for (int j = 0; j < kTileN / 32; ++j) {
        const int row = (tid >> 2) + 32 * j;
        const bool ok = k_ok && (n0 + row < p.n);
        const std::uint8_t* src = ok ? b_batch + static_cast<long long>(n0 + row) * k_bytes + gk : b_batch;
        cp_async_16_prefetch(base + row * kStageBytes + ((chunk ^ ((row >> 1) & 3)) << 4), src, ok ? 16 : 0);
      }
      if (tid < MT * (kScaleBytes / 16)) {
        const int block = tid / (kScaleBytes / 16), offset = (tid % (kScaleBytes / 16)) * 16;
        const bool ok = block < row_blocks_left && kScaleTiles * s + (offset >> 9) < scale_tiles_per_row_block;
        const std::uint8_t* src =
            ok ? b_scale_rows + block * scale_row_block + static_cast<long long>(kScaleTiles * s) * kScaleChunk + offset
               : b_scale_rows;
        cp_async_16(base + S::kRawW + block * kScaleBytes + offset, src, ok ? 16 : 0);
      }
    };
    // fp16 tokens: two TMA boxes (K halves of 64) of kTileM rows x 128 bytes in the 128-byte swizzle =
    // the K-major wgmma B operand; one thread announces their bytes and issues them. Why TMA: cp.async
    // stores go through the load/store pipeline whose shared-memory bandwidth the wgmmas' B reads need
    // (perf notes, "Hopper v6").
    auto load_tokens = [&](int s, int slot) {
      if (tid != 0) return;
      std::uint8_t* tok = ring + slot * S::kSlotBytes;
      mbar_arrive_expect_tx(&full[slot], S::kTokBytes);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        tma_load_3d(tok + half * (kTileM * 128), &tokens_map, &full[slot], s * kStageK + half * 64, m0, batch);
      }
    };

    // The first slots' weights go out before the wait for the token prepass (they do not depend on it).
    const int prologue = num_stages < R ? num_stages : R;
    for (int i = 0; i < prologue; ++i) load_weights(stage_begin + i, i);
    wait_for_prerequisites();
    RingPos<R> pos;
    for (int i = 0; i < num_stages; ++i) {
      if (i >= R) {
        mbar_wait(&empty[pos.slot], pos.phase ^ 1u);  // the slot's previous use (stage i - R) released
        load_weights(stage_begin + i, pos.slot);
      }
      load_tokens(stage_begin + i, pos.slot);
      mbar_arrive_on_copies(&full[pos.slot]);
      pos.advance();
    }
    if (p.cluster_split > 1) cluster_barriers_of_epilogue();
  } else {
    // ---------------- consumer warpgroups ----------------
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(S::kConsumerRegs));
    const int cw = warp - S::kProducerThreads / 32;  // 0..7: 16 rows of each m-tile; warpgroup cw / 4
    const int g = lane >> 2, t = lane & 3;
    const int weight_row0 = cw * 16;  // in m-tile 0; m-tile mt adds 128 mt
    const int ld_row = weight_row0 + (lane & 7) + ((lane >> 3) & 1) * 8;  // ldmatrix source row
    const int ld_swz = (ld_row >> 1) & 3;  // the same for ld_row + 128
    const int row_g = weight_row0 + g, row_g8 = row_g + 8;
    const int sc_g = (row_g & 31) * 16 + (row_g >> 5) * 4, sc_g8 = (row_g8 & 31) * 16 + (row_g8 >> 5) * 4;
    // bytes t/2 and t/2 + 2 (scale columns of segments 2 half and 2 half + 1) of the words of rows g, g + 8
    const std::uint32_t scale_pick = (t >> 1) * 0x1111u + 0x6420u;
    float acc[MT][kTileM / 2];  // wgmma m64nNk16 accumulators per m-tile
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int i = 0; i < kTileM / 2; ++i) acc[mt][i] = 0.0f;
    std::uint32_t frag[4][MT][2][4];  // four sets (k32 quarters of a stage) x m-tiles x 2 k16 steps
    // Slot descriptors differ only in the start address (bits 0-13 of the low word, address / 16, which
    // never carries into bit 14): one 32-bit add per wgmma.
    const std::uint64_t desc_ring = sw128_descriptor(ring);
    const std::uint32_t desc_lo = static_cast<std::uint32_t>(desc_ring);
    const std::uint64_t desc_hi = desc_ring & 0xFFFFFFFF00000000ull;

#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int i = 0; i < kTileM / 2; ++i) cute::warpgroup_fence_operand(acc[mt][i]);
    RingPos<R> pos;
    int prev_slot = 0;
    for (int s = 0; s < num_stages; ++s) {
      const int slot = pos.slot;
      mbar_wait(&full[slot], pos.phase);
      const std::uint8_t* base = ring + slot * S::kSlotBytes + S::kTokBytes;
      const std::uint8_t* scale_b = base + S::kRawW;
      const std::uint32_t slot_desc_lo = desc_lo + static_cast<std::uint32_t>(slot * S::kSlotBytes) / 16;
      // Both k64 halves' raw weights and scale words are read from shared memory first, so that their
      // latency is not waited out in front of each half's dequantization.
      // raw: rows 0-7 / 8-15 of segments 2 half and 2 half + 1 of each m-tile; scale words: columns
      // 4 half .. + 3 of rows g, g + 8
      std::uint32_t raw[2][MT][4], scale_words[2][MT][2];
#pragma unroll
      for (int half = 0; half < 2; ++half)
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          ldmatrix_x4(raw[half][mt],
                      base + (ld_row + 128 * mt) * kStageBytes + (((2 * half + (lane >> 4)) ^ ld_swz) << 4));
          // NVFP4: tile `half` of the stage, bytes t / 2 and t / 2 + 2; MX: the stage's one tile, bytes 2 half
          // and 2 half + 1 (segments 2 half and 2 half + 1 have a scale each)
          const std::uint8_t* block = scale_b + mt * kScaleBytes + (kScaleTiles == 2 ? half * kScaleChunk : 0);
          scale_words[half][mt][0] = *reinterpret_cast<const std::uint32_t*>(block + sc_g);
          scale_words[half][mt][1] = *reinterpret_cast<const std::uint32_t*>(block + sc_g8);
        }
      // Each k32 quarter (segment 2 half + sub) is one batch of wgmmas: its fragment set is dequantized
      // while the two batches before it are in flight (wgmma.wait_group 2; the set it overwrites was
      // read by the batch four behind, complete), so the tensor pipe holds two batches' work while the
      // consumers issue one quarter's dequantization.
      typename Element::Pair sc[MT][2];  // the current half's scales: columns t / 2 and t / 2 + 2 of rows g, g + 8
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int half = q >> 1, sub = q & 1;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          if (sub == 0) {
            std::uint32_t picked = __byte_perm(scale_words[half][mt][0], scale_words[half][mt][1],
                                               kScaleTiles == 2 ? scale_pick : 0x5410u + 0x2222u * half);
            if constexpr (kScaleTiles == 1) {
              // segments past K (zero-filled weights) take scale 1, whatever the layout's padding holds: a
              // ue8m0 code 0 there would read as NaN (Weights<MxFormat>) and 0 x NaN is NaN
              const int segment_k = (stage_begin + s) * kStageK + half * 64;
              const std::uint32_t past_k =
                  (segment_k >= p.k ? 0x00FF00FFu : 0u) | (segment_k + 32 >= p.k ? 0xFF00FF00u : 0u);
              picked = (picked & ~past_k) | (0x7F7F7F7Fu & past_k);
            }
            sc[mt][0] = W::two_scales(picked);
            sc[mt][1] = W::two_scales(picked >> 16);
          }
          // segment 2 half + sub, scale column 2 (2 half + sub) + t / 2
          std::uint32_t h[2][4];
          W::dequant(raw[half][mt][2 * sub + 0], sub ? Element::high2(sc[mt][0]) : Element::low2(sc[mt][0]), h[0]);
          W::dequant(raw[half][mt][2 * sub + 1], sub ? Element::high2(sc[mt][1]) : Element::low2(sc[mt][1]), h[1]);
#pragma unroll
          for (int step = 0; step < 2; ++step) {
            std::uint32_t* f = frag[q][mt][step];
            f[0] = h[0][2 * step];
            f[1] = h[1][2 * step];
            f[2] = h[0][2 * step + 1];
            f[3] = h[1][2 * step + 1];
          }
        }
        // pin the fragments' definitions before wgmma.fence: a definition scheduled after it makes
        // ptxas serialize every wgmma (C7513)
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int j = 0; j < 2; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) cute::warpgroup_fence_operand(frag[q][mt][j][r]);
        cute::warpgroup_arrive();
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int step = 0; step < 2; ++step) {
            const int j = 2 * sub + step;
            const std::uint64_t b = desc_hi | (slot_desc_lo + (half * (kTileM * 128) + j * 32) / 16);
            wgmma_rs<kTileM, Mma>(frag[q][mt][step], b, acc[mt], std::make_index_sequence<kTileM / 2>{});
          }
        cute::warpgroup_commit_batch();
        // at most this quarter and the one before it stay in flight
        cute::warpgroup_wait<2>();
        if (q == 1 && s > 0) {
          // the last quarter of stage s - 1 has completed (two batches behind this one), and its raw
          // bytes were read long ago: release its slot. Every thread arrives for its own reads (a warp's
          // one arrival after __syncwarp orders them as well, but compute-sanitizer's racecheck follows
          // only a thread's own arrival).
          mbar_arrive(&empty[prev_slot]);
        }
      }
      prev_slot = slot;
      pos.advance();
    }
    cute::warpgroup_wait<0>();
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int i = 0; i < kTileM / 2; ++i) cute::warpgroup_fence_operand(acc[mt][i]);
    // Every copy the producers issued was consumed, so the ring is free for the FP32 tile.
    NamedSync<256>{}();
    float* tile = reinterpret_cast<float*>(ring);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kTileM / 8; ++nt)
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          const int weight = 128 * mt + weight_row0 + g + (c >> 1) * 8;
          const int token = nt * 8 + 2 * t + (c & 1);
          tile[token * kEpiloguePitch<kTileN> + weight] = acc[mt][nt * 4 + c];
        }
    NamedSync<256>{}();  // the FP32 tile is complete
    constexpr float kProductRescale = Tokens<TokenT>::kRescale * W::kRescale;
    if (p.cluster_split > 1) {
      finish_tile_in_cluster<kTileM, 256, ElementOut, kTileN>(p, tile, tid - S::kProducerThreads, kProductRescale);
    } else {
      finish_tile<kTileM, 256, ElementOut, NamedSync<256>, kTileN>(p, tile, tid - S::kProducerThreads, NamedSync<256>{},
                                                                  kProductRescale);
    }
  }
}

}  // namespace nvfp4_gemm::sm90
