// Hopper (sm_90a) NVFP4 x NVFP4 GEMM: FP4 values and their e4m3 scales are turned into exact fp16
// in registers and fed to fp16 tensor-core MMAs with FP32 accumulation.
//
// Why it is exact: e2m1 x e4m3 has at most 6 significant bits and lies in [2^-10, 2688], so it is
// an fp16 value; so is that value times 2^-7 (>= 2^-17, a multiple of fp16's 2^-24 quantum). The
// tensor cores multiply fp16 pairs exactly into FP32. Only the summation order differs from the
// reference.
//
// Shape of the work (M tokens are few, N weights are many):
//   * the MMA's "A" operand (16 rows, from registers) is the weight tile b, the "B" operand (8
//     columns) the tokens a, so out^T tiles are computed and stored transposed;
//   * a CTA covers 128 weight rows x kTileM tokens; K runs in stages of 128 elements;
//   * weights are dequantized per warp straight from ldmatrix fragments of the raw bytes; tokens once
//     per CTA stage into an fp16 shared buffer that all weight warps read;
//   * inside a thread, the K order of the 8 elements of a 32-bit word is permuted (pairs (i, i+4)),
//     identically for both operands, so no shuffles are needed: a dot product does not care about
//     the order of its terms, only that both sides agree and each term has its own scale;
//   * two kernels: `dequant_gemm_kernel` (the `sm90_dequant_*` configs: 8 warps, `mma.sync.m16n8k16`,
//     a 4-deep cp.async pipeline with two CTA barriers per stage; 8 x 1 warps over weights x tokens
//     for small token tiles, 4 x 2 from 64 up) and `ws_wgmma_kernel` (the `sm90_wgmma_*` configs:
//     warp-specialized, one `wgmma.mma_async.m64nNk16` per consumer warpgroup and k16 step, weights
//     from registers, tokens from a 128-byte-swizzled K-major shared buffer; see its comment);
//   * split-K over gridDim.z with a deterministic reduction: every split writes its FP32 partial
//     tile to the scratch workspace; the last split to arrive (per-tile counter, in a zeroed
//     counter array of its own) adds them in split order and leaves the counter zero.
#pragma once

#include <cuda.h>  // CUtensorMap and the encoder's signature (called through the runtime: no libcuda link)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cute/arch/mma_sm90_desc.hpp>
#include <cute/arch/mma_sm90_gmma.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "nvfp4_gemm/kernel_entry.h"
#include "nvfp4_gemm/problem.h"

namespace nvfp4_gemm::sm90 {

namespace detail {

constexpr int kThreads = 256;
constexpr int kTileN = 128;         // weight rows per CTA
constexpr int kStageK = 128;        // FP4 elements per pipeline stage
constexpr int kStageBytes = 64;     // raw bytes per row per stage
constexpr int kScaleChunk = 512;    // one 128x4 tile of the blocked scale layout
constexpr int kScaleBytes = 2 * kScaleChunk;  // a stage spans 8 scale columns = 2 tiles
// The fp16 values carry a 2^-7 factor each (see dequant): 2^14 for the product, undone in the epilogue.
constexpr float kProductRescale = 16384.0f;

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte async copy; `bytes` < 16 zero-fills the rest (0 for rows past M or N, or K past the end).
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem), "r"(bytes));
}
// The same with an L2 prefetch of the surrounding aligned 256 bytes: a stage reads only 64 bytes of
// each K-major row, so the next stages' bytes of the row come in with the first one.
__device__ __forceinline__ void cp_async_16_prefetch(void* smem, const void* gmem, int bytes) {
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem),
               "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// mbarriers (warp-specialized wgmma kernel). Arrive releases and a completed wait acquires at CTA
// scope, so the data a phase guards is visible to the waiting threads.
__device__ __forceinline__ void mbar_init(std::uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
  asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(smem_addr(bar))
               : "memory");
}
// Arrives once every cp.async this thread issued so far has landed (counts as one expected arrival).
__device__ __forceinline__ void mbar_arrive_on_copies(std::uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}
// A waiting warp may sleep this long (it wakes when the phase completes): spinning warps would take
// issue slots from the producer that shares their scheduler.
#ifndef NVFP4_SM90_SUSPEND_NS
#define NVFP4_SM90_SUSPEND_NS 100000
#endif
constexpr unsigned kSuspendHintNs = NVFP4_SM90_SUSPEND_NS;
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred done;\n"
      "RETRY:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1, %2;\n"
      " @!done bra RETRY;\n}\n" ::"r"(smem_addr(bar)),
      "r"(parity), "n"(kSuspendHintNs)
      : "memory");
}

// Bulk tensor copy (TMA) of one box of a 3D tensor map into shared memory; its bytes complete a
// transaction on `bar`.
__device__ __forceinline__ void tma_load_3d(void* smem, const CUtensorMap* map, std::uint64_t* bar, int x, int y, int z) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(smem_addr(smem)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(x), "r"(y), "r"(z), "r"(smem_addr(bar))
      : "memory");
}
// Arrive on `bar` and announce `bytes` more transaction bytes for its current phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ uint4 lds128(const void* p) { return *reinterpret_cast<const uint4*>(p); }
__device__ __forceinline__ void sts128(void* p, std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint32_t d) {
  *reinterpret_cast<uint4*>(p) = make_uint4(a, b, c, d);
}

__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(smem)));
}

__device__ __forceinline__ void mma_f16(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                        std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two copies of one e4m3 scale byte in the low 16 bits -> fp16x2 (both lanes) of scale * 2^7. e4m3
// values are exact in fp16 and the product with 2^7 stays below 65504 (448 * 128 = 57344).
__device__ __forceinline__ std::uint32_t scale_pair_to_half2(std::uint32_t pair) {
  std::uint32_t h2;
  asm("{\n .reg .b16 s;\n cvt.u16.u32 s, %1;\n cvt.rn.f16x2.e4m3x2 %0, s;\n}\n" : "=r"(h2) : "r"(pair));
  const __half2 scaled = __hmul2(*reinterpret_cast<__half2*>(&h2), __half2half2(__ushort_as_half(0x5800)));
  return *reinterpret_cast<const std::uint32_t*>(&scaled);
}
__device__ __forceinline__ std::uint32_t scale_to_half2(std::uint32_t scale_byte) {
  return scale_pair_to_half2(scale_byte | (scale_byte << 8));
}
// Two different e4m3 scale bytes (low 16 bits) -> fp16x2 of (low byte, high byte) * 2^7: one
// conversion serves two scales; their halves are broadcast where used (an operand swizzle of HMUL2).
__device__ __forceinline__ __half2 two_scales_to_half2(std::uint32_t pair) {
  std::uint32_t h2;
  asm("{\n .reg .b16 s;\n cvt.u16.u32 s, %1;\n cvt.rn.f16x2.e4m3x2 %0, s;\n}\n" : "=r"(h2) : "r"(pair));
  return __hmul2(*reinterpret_cast<__half2*>(&h2), __half2half2(__ushort_as_half(0x5800)));
}

// Eight e2m1 codes in a 32-bit word (element i = nibble i) -> four fp16x2, pair i = (element i,
// element i + 4), each value = e2m1 * scale * 2^-7. The e2m1 bits (sign, 2 exponent, 1 mantissa)
// placed at fp16 bits 15 and 11..9 read as e2m1 * 2^-14, subnormal codes included; `scale2` holds
// scale * 2^7.
// Bit work, 11 operations per word: in `even` the even nibbles keep their magnitude and get their
// sign 3 bits higher (bits 3..5 above each even nibble are don't-cares), in `odd` the odd nibbles get
// their magnitude 3 bits lower and keep their sign. Each then needs one shift to put a nibble's
// magnitude at bits 9..11 and its sign at bit 15 of both halves, and one mask (each select is a LOP3).
// (a & kMask) | (b & ~kMask) as one LOP3 (the compiler splits the C++ form into two).
template <std::uint32_t kMask>
__device__ __forceinline__ std::uint32_t select_bits(std::uint32_t a, std::uint32_t b) {
  std::uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xE4;\n" : "=r"(d) : "r"(a), "r"(b), "n"(kMask));
  return d;
}
__device__ __forceinline__ void dequant8(std::uint32_t x, __half2 s, std::uint32_t (&out)[4]) {
  constexpr std::uint32_t kEvenMagnitude = 0x07070707u, kOddSign = 0x80808080u, kFp16Bits = 0x8E008E00u;
  const std::uint32_t even = select_bits<kEvenMagnitude>(x, x << 3);
  const std::uint32_t odd = select_bits<kOddSign>(x, x >> 3);
  const std::uint32_t bits[4] = {(even << 9) & kFp16Bits, (odd << 8) & kFp16Bits, (even << 1) & kFp16Bits,
                                 odd & kFp16Bits};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __half2 v = __hmul2(*reinterpret_cast<const __half2*>(&bits[i]), s);
    out[i] = *reinterpret_cast<const std::uint32_t*>(&v);
  }
}
__device__ __forceinline__ void dequant8(std::uint32_t x, std::uint32_t scale2, std::uint32_t (&out)[4]) {
  dequant8(x, *reinterpret_cast<const __half2*>(&scale2), out);
}

// Offset of a scale byte inside a stage's two 512-byte tiles (row 0..127 of the 128-row tile,
// column 0..7 of the stage): the cuBLAS 128x4 blocked layout.
__device__ __forceinline__ int stage_scale_offset(int row, int col) {
  return (col >> 2) * kScaleChunk + (row & 31) * 16 + (row >> 5) * 4 + (col & 3);
}

// wgmma m64nNk16 with A (weights) from registers and B (tokens) from shared memory, FP32 accumulate.
template <int N>
struct WgmmaAtom;
template <>
struct WgmmaAtom<16> {
  using type = cute::SM90::GMMA::MMA_64x16x16_F32F16F16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
};
template <>
struct WgmmaAtom<32> {
  using type = cute::SM90::GMMA::MMA_64x32x16_F32F16F16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
};
template <>
struct WgmmaAtom<64> {
  using type = cute::SM90::GMMA::MMA_64x64x16_F32F16F16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
};
template <>
struct WgmmaAtom<128> {
  using type = cute::SM90::GMMA::MMA_64x128x16_F32F16F16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
};

template <>
struct WgmmaAtom<256> {
  using type = cute::SM90::GMMA::MMA_64x256x16_F32F16F16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
};

template <int N, std::size_t... I>
__device__ __forceinline__ void wgmma_rs(const std::uint32_t (&a)[4], std::uint64_t desc_b, float* d,
                                         std::index_sequence<I...>) {
  WgmmaAtom<N>::type::fma(a[0], a[1], a[2], a[3], desc_b, d[I]..., cute::SM90::GMMA::ScaleOut::One);
}

// Descriptor of a K-major, 128-byte-swizzled B operand starting at `smem_ptr` (1024-byte aligned
// atoms of 8 rows x 128 bytes, 8-row groups 1024 bytes apart).
__device__ __forceinline__ std::uint64_t sw128_descriptor(const void* smem_ptr) {
  cute::GmmaDescriptor desc;
  desc.bitfield.start_address_ = static_cast<std::uint16_t>(smem_addr(smem_ptr) >> 4);
  desc.bitfield.leading_byte_offset_ = 1;  // unused for swizzled K-major layouts
  desc.bitfield.stride_byte_offset_ = 1024 >> 4;
  desc.bitfield.base_offset_ = 0;
  desc.bitfield.layout_type_ = static_cast<std::uint8_t>(cute::SM90::GMMA::LayoutType::B128);
  return desc.desc_;
}

template <class T>
__device__ __forceinline__ T convert_out(float v);
template <>
__device__ __forceinline__ __half convert_out<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 convert_out<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __forceinline__ float convert_out<float>(float v) { return v; }

}  // namespace detail

// Everything a launch needs, by value (kernel parameter).
struct DequantGemmParams {
  const std::uint8_t* a;
  const std::uint8_t* b;
  const std::uint8_t* a_scale;
  const std::uint8_t* b_scale;
  void* out;
  const float* alpha;
  const __half* tokens;     // prepass kernel: (l, m, k) fp16 tokens in the permuted K order (see below)
  float* partials;          // split_k > 1: [l][split][m][n] FP32
  unsigned int* counters;   // split_k > 1: one per output tile, zero between launches
  int m, n, k, l;
  int split_k;
  int stages_total;         // ceil(k / 128)
  long long a_scale_batch;  // bytes of blocked scales per batch
  long long b_scale_batch;
  int scale_cols_padded;    // round_up(k / 16, 4)
  // prepass kernel: the fp16 tokens as a 3D tensor (k, m, l) for TMA, boxes of 64 x tile M x 1 in
  // the 128-byte swizzle, zeros outside (the kernel takes the parameters __grid_constant__)
  CUtensorMap tokens_map;
};

// The output tile and the K stages one CTA owns: blockIdx = (weight tile, token tile, batch * split_k
// + split); splits cut the K stages as evenly as integers allow.
struct CtaWork {
  int n0, m0, batch, split, stage_begin, num_stages;
};

template <int kTileM, int kTileN = detail::kTileN>
__device__ __forceinline__ CtaWork cta_work(const DequantGemmParams& p) {
  CtaWork w;
  w.n0 = blockIdx.x * kTileN;
  w.m0 = blockIdx.y * kTileM;
  w.batch = blockIdx.z / p.split_k;
  w.split = blockIdx.z % p.split_k;
  w.stage_begin = static_cast<int>(static_cast<long long>(p.stages_total) * w.split / p.split_k);
  const int stage_end = static_cast<int>(static_cast<long long>(p.stages_total) * (w.split + 1) / p.split_k);
  w.num_stages = stage_end - w.stage_begin;
  return w;
}

// Barrier of the threads that run the epilogue: the whole CTA (mma.sync kernel) or named barrier 1
// of the consumer warpgroups (warp-specialized kernel, whose producers have left).
struct CtaSync {
  __device__ __forceinline__ void operator()() const { __syncthreads(); }
};
template <int kThreads>
struct NamedSync {
  __device__ __forceinline__ void operator()() const { asm volatile("bar.sync 1, %0;\n" ::"n"(kThreads) : "memory"); }
};

// Epilogue shared by both kernels: the CTA's FP32 tile [token][weight] (pitch kTileN + 4 floats,
// in shared memory, complete for every epilogue thread) -> split-K partials / reduction -> output.
// `tid` counts the kNumThreads epilogue threads from 0.
template <int kTileM, int kNumThreads, class ElementOut, class Sync, int kTileN = detail::kTileN>
__device__ __forceinline__ void finish_tile(const DequantGemmParams& p, float* tile, int tid, Sync sync) {
  using namespace detail;
  constexpr int kTilePitch_ = kTileN + 4;
  const CtaWork work = cta_work<kTileM, kTileN>(p);
  const int n0 = work.n0, m0 = work.m0, batch = work.batch, split = work.split;
  const float scale = (p.alpha != nullptr ? *p.alpha : 1.0f) * kProductRescale;
  ElementOut* out = static_cast<ElementOut*>(p.out) + static_cast<long long>(batch) * p.m * p.n;
  const int tile_id = (batch * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;

  if (p.split_k > 1) {
    // Publish this split's partial tile, then let the last split of the tile reduce all of them in
    // split order (the same order whatever order the splits finished in: bitwise reproducible).
    float* partial = p.partials + (static_cast<long long>(batch) * p.split_k + split) * p.m * p.n;
    for (int i = tid; i < kTileM * (kTileN / 4); i += kNumThreads) {
      const int token = i / (kTileN / 4), col = (i % (kTileN / 4)) * 4;
      if (m0 + token < p.m && n0 + col < p.n) {
        *reinterpret_cast<float4*>(partial + static_cast<long long>(m0 + token) * p.n + n0 + col) =
            *reinterpret_cast<const float4*>(tile + token * kTilePitch_ + col);
      }
    }
    __threadfence();
    sync();
    __shared__ unsigned int arrived;
    if (tid == 0) arrived = atomicAdd(p.counters + tile_id, 1u);
    sync();
    if (arrived != static_cast<unsigned int>(p.split_k - 1)) return;
    __threadfence();
    for (int i = tid; i < kTileM * (kTileN / 4); i += kNumThreads) {
      const int token = i / (kTileN / 4), col = (i % (kTileN / 4)) * 4;
      if (m0 + token < p.m && n0 + col < p.n) {
        float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int s = 0; s < p.split_k; ++s) {
          const float* src = p.partials + (static_cast<long long>(batch) * p.split_k + s) * p.m * p.n +
                             static_cast<long long>(m0 + token) * p.n + n0 + col;
          const float4 v = __ldcg(reinterpret_cast<const float4*>(src));
          sum.x += v.x;
          sum.y += v.y;
          sum.z += v.z;
          sum.w += v.w;
        }
        *reinterpret_cast<float4*>(tile + token * kTilePitch_ + col) = sum;
      }
    }
    if (tid == 0) p.counters[tile_id] = 0;  // ready for the next launch (and CUDA-graph replays)
    sync();
  }

  // FP32 tile -> output rows, 4 elements per thread per step (N is a multiple of 4 or 8).
  for (int i = tid; i < kTileM * (kTileN / 4); i += kNumThreads) {
    const int token = i / (kTileN / 4), col = (i % (kTileN / 4)) * 4;
    if (m0 + token < p.m && n0 + col < p.n) {
      const float* src = tile + token * kTilePitch_ + col;
      ElementOut* dst = out + static_cast<long long>(m0 + token) * p.n + n0 + col;
#pragma unroll
      for (int e = 0; e < 4; ++e) dst[e] = convert_out<ElementOut>(src[e] * scale);
    }
  }
}

template <int kTileM, int kStages, class ElementOut>
struct DequantGemmKernel {
  static_assert(kTileM == 16 || kTileM == 32 || kTileM == 64 || kTileM == 128, "token tile is 16, 32, 64 or 128");
  // Warps along the tokens: 1 for small token tiles (each warp owns 16 weight rows and all tokens, so
  // every weight is dequantized once), 2 from 64 tokens up (32 weight rows x half the tokens: halves
  // the token fragment loads and keeps the accumulators in registers). Measured on the H200,
  // 2026-11-21: 1 warp along tokens is 1.23x faster at M = 1..16 (36.3 -> 29.6 us, 1x7168x7168) and
  // 1.11x slower at M = 128 (169 -> 190 us, 128x7168x16384) than 2.
  static constexpr int kWarpsM = kTileM >= 64 ? 2 : 1;
  static constexpr int kMTiles = kWarpsM;  // m16 weight tiles per warp: 8 / (8 / kWarpsM) x 16 rows / 16
  static constexpr int kTokenTiles = kTileM / kWarpsM / 8;  // n8 MMA tiles per warp
  static constexpr int kRawW = detail::kTileN * detail::kStageBytes;
  static constexpr int kRawA = kTileM * detail::kStageBytes;
  static constexpr int kStageSmem = kRawW + kRawA + 2 * detail::kScaleBytes;
  static constexpr int kTokenBuffer = kTileM * detail::kStageK * 2;  // fp16 tokens of one stage
  static constexpr int kTilePitch = detail::kTileN + 4;  // floats per token row of the epilogue tile
  static constexpr int kEpilogueSmem = kTileM * kTilePitch * 4;  // FP32 tile, reuses the pipeline
  // + 1 KB: the wgmma token buffer is realigned to 1024 bytes (the 128-byte swizzle's atom).
  static constexpr int kMainSmem = kStages * kStageSmem + kTokenBuffer;
  static constexpr int kSmemBytes = kMainSmem > kEpilogueSmem ? kMainSmem : kEpilogueSmem;
};

template <int kTileM, int kStages, class ElementOut>
__global__ void __launch_bounds__(detail::kThreads, 2)
    dequant_gemm_kernel(const DequantGemmParams p) {
  using namespace detail;
  using K = DequantGemmKernel<kTileM, kStages, ElementOut>;
  extern __shared__ __align__(128) std::uint8_t smem[];

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int g = lane >> 2;  // MMA fragment row group
  const int t = lane & 3;   // MMA fragment thread-in-group

  const int weight_row0 = (warp % (8 / K::kWarpsM)) * 16 * K::kMTiles;  // this warp's first weight row
  const int token0 = (warp / (8 / K::kWarpsM)) * (kTileM / K::kWarpsM);  // and first token

  const CtaWork work = cta_work<kTileM>(p);
  const int n0 = work.n0, m0 = work.m0, batch = work.batch;
  const int stage_begin = work.stage_begin, num_stages = work.num_stages;

  const int k_bytes = p.k / 2;
  const std::uint8_t* a_batch = p.a + static_cast<long long>(batch) * p.m * k_bytes;
  const std::uint8_t* b_batch = p.b + static_cast<long long>(batch) * p.n * k_bytes;
  const int scale_tiles_per_row_block = p.scale_cols_padded / 4;
  // The 128-row tile of the blocked scales that holds this CTA's rows.
  const std::uint8_t* a_scale_rows =
      p.a_scale + batch * p.a_scale_batch + static_cast<long long>(m0 / 128) * scale_tiles_per_row_block * kScaleChunk;
  const std::uint8_t* b_scale_rows =
      p.b_scale + batch * p.b_scale_batch + static_cast<long long>(n0 / 128) * scale_tiles_per_row_block * kScaleChunk;
  const int a_scale_row0 = m0 % 128;  // first token row of this CTA inside its 128-row scale tile

  auto stage_ptr = [&](int slot) { return smem + slot * K::kStageSmem; };
  std::uint8_t* token_half = smem + kStages * K::kStageSmem;

  // Issue the copies of stage `s` (absolute) into pipeline slot `slot`.
  auto load_stage = [&](int s, int slot) {
    std::uint8_t* base = stage_ptr(slot);
    const int k_byte0 = s * kStageBytes;
    // weights: 128 rows x 4 chunks of 16 bytes; chunk index swizzled against ldmatrix bank conflicts
    for (int i = tid; i < kTileN * 4; i += kThreads) {
      const int row = i >> 2, chunk = i & 3;
      const int gk = k_byte0 + chunk * 16;
      const bool valid = (n0 + row < p.n) && (gk < k_bytes);
      const std::uint8_t* src = b_batch + (valid ? static_cast<long long>(n0 + row) * k_bytes + gk : 0);
      cp_async_16(base + row * kStageBytes + ((chunk ^ ((row >> 1) & 3)) << 4), src, valid ? 16 : 0);
    }
    std::uint8_t* raw_a = base + K::kRawW;
    for (int i = tid; i < kTileM * 4; i += kThreads) {
      const int row = i >> 2, chunk = i & 3;
      const int gk = k_byte0 + chunk * 16;
      const bool valid = (m0 + row < p.m) && (gk < k_bytes);
      const std::uint8_t* src = a_batch + (valid ? static_cast<long long>(m0 + row) * k_bytes + gk : 0);
      cp_async_16(raw_a + row * kStageBytes + chunk * 16, src, valid ? 16 : 0);
    }
    // scales: the stage's 8 columns are 2 consecutive 512-byte tiles (the second may lie past K)
    std::uint8_t* scale_b = raw_a + K::kRawA;
    std::uint8_t* scale_a = scale_b + kScaleBytes;
    for (int i = tid; i < 2 * (kScaleBytes / 16); i += kThreads) {
      const int which = i / (kScaleBytes / 16);  // 0: weights, 1: tokens
      const int offset = (i % (kScaleBytes / 16)) * 16;
      const int tile = 2 * s + offset / kScaleChunk;
      const bool valid = tile < scale_tiles_per_row_block;
      const std::uint8_t* rows = which == 0 ? b_scale_rows : a_scale_rows;
      const std::uint8_t* src = rows + (valid ? static_cast<long long>(2 * s) * kScaleChunk + offset : 0);
      cp_async_16((which == 0 ? scale_b : scale_a) + offset, src, valid ? 16 : 0);
    }
  };

  float acc[K::kMTiles][K::kTokenTiles][4];
#pragma unroll
  for (int i = 0; i < K::kMTiles; ++i)
#pragma unroll
    for (int j = 0; j < K::kTokenTiles; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[i][j][c] = 0.0f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < num_stages) load_stage(stage_begin + s, s);
    cp_async_commit();
  }

  for (int it = 0; it < num_stages; ++it) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // stage `it` landed for every thread; the token buffer's readers are done
    {
      const int next = it + kStages - 1;
      if (next < num_stages) load_stage(stage_begin + next, next % kStages);
      cp_async_commit();
    }
    const std::uint8_t* base = stage_ptr(it % kStages);
    const std::uint8_t* raw_a = base + K::kRawW;
    const std::uint8_t* scale_b = raw_a + K::kRawA;
    const std::uint8_t* scale_a = scale_b + kScaleBytes;

    // Tokens: raw 16-byte chunks -> fp16 in the permuted K order the weight fragments use, stored
    // row-major (tokens x 128) with 16-byte chunks swizzled by row for conflict-free ldmatrix.
    for (int i = tid; i < kTileM * 4; i += kThreads) {
      const int row = i >> 2, seg = i & 3;
      const uint4 raw = *reinterpret_cast<const uint4*>(raw_a + row * kStageBytes + seg * 16);
      const std::uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
      std::uint8_t* dst_row = token_half + row * (kStageK * 2);
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const int col = 2 * seg + (w >> 1);  // scale column of elements 32 seg + 8 w .. + 7
        const std::uint32_t scale2 = scale_to_half2(scale_a[stage_scale_offset(a_scale_row0 + row, col)]);
        std::uint32_t h[4];
        dequant8(words[w], scale2, h);
#pragma unroll
        for (int pair = 0; pair < 4; ++pair) {
          // virtual K position of pair `pair` of word `w` in segment `seg` (see the weights' loop)
          const int v = seg * 32 + (pair >> 1) * 16 + (pair & 1) * 8 + 2 * w;
          const int chunk = (v >> 3) ^ (row & 7);
          *reinterpret_cast<std::uint32_t*>(dst_row + chunk * 16 + (v & 7) * 2) = h[pair];
        }
      }
    }
    __syncthreads();  // token buffer ready

    {
#pragma unroll
      for (int seg_pair = 0; seg_pair < 2; ++seg_pair) {
        // Weights: per m16 tile one ldmatrix.x4 over raw bytes = rows 0-7 and 8-15 at 16-byte segments
        // 2 seg_pair and 2 seg_pair + 1; thread (g, t) gets bytes 4t..4t+3 = elements 32 seg + 8t .. + 7.
        std::uint32_t raw[K::kMTiles][4];
#pragma unroll
        for (int mt = 0; mt < K::kMTiles; ++mt) {
          const int row = weight_row0 + mt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
          const int seg = 2 * seg_pair + (lane >> 4);
          ldmatrix_x4(raw[mt], base + row * kStageBytes + ((seg ^ ((row >> 1) & 3)) << 4));
        }
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int seg = 2 * seg_pair + half;
          std::uint32_t h[K::kMTiles][2][4];  // [m16 tile][row half: rows g, rows g + 8][pair]
#pragma unroll
          for (int mt = 0; mt < K::kMTiles; ++mt)
#pragma unroll
            for (int rows = 0; rows < 2; ++rows) {
              const int row = weight_row0 + mt * 16 + rows * 8 + g;
              const int col = 2 * seg + (t >> 1);
              dequant8(raw[mt][2 * half + rows], scale_to_half2(scale_b[stage_scale_offset(row, col)]), h[mt][rows]);
            }
#pragma unroll
          for (int nt = 0; nt < K::kTokenTiles; ++nt) {
            // tokens: one ldmatrix.x4 = virtual k 0-7, 8-15 (step 0) and 16-23, 24-31 (step 1) of an n8 tile
            const int token = token0 + nt * 8 + (lane & 7);
            const int v = seg * 32 + (lane >> 3) * 8;
            std::uint32_t bfrag[4];
            ldmatrix_x4(bfrag, token_half + token * (kStageK * 2) + (((v >> 3) ^ (token & 7)) << 4));
#pragma unroll
            for (int step = 0; step < 2; ++step)
#pragma unroll
              for (int mt = 0; mt < K::kMTiles; ++mt) {
                // a0/a1 = pair 2*step (virtual k 2t, 2t+1) of rows g/g+8, a2/a3 = pair 2*step+1 (2t+8, 2t+9)
                const std::uint32_t a[4] = {h[mt][0][2 * step], h[mt][1][2 * step], h[mt][0][2 * step + 1],
                                            h[mt][1][2 * step + 1]};
                mma_f16(acc[mt][nt], a, bfrag[2 * step], bfrag[2 * step + 1]);
              }
          }
        }
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // pipeline drained; its shared memory becomes the epilogue tile

  // Accumulators -> FP32 tile [token][weight] in shared memory.
  float* tile = reinterpret_cast<float*>(smem);
  constexpr int kTilePitch = K::kTilePitch;
#pragma unroll
  for (int mt = 0; mt < K::kMTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < K::kTokenTiles; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int weight = weight_row0 + mt * 16 + g + (c >> 1) * 8;
        const int token = token0 + nt * 8 + 2 * t + (c & 1);
        tile[token * kTilePitch + weight] = acc[mt][nt][c];
      }
  __syncthreads();

  finish_tile<kTileM, kThreads, ElementOut>(p, tile, tid, CtaSync{});
}

// Position in a ring of kSlots mbarrier-guarded slots: the slot and the parity of its current use.
// Advanced by one per stage, so the loops need no divisions.
template <int kSlots>
struct RingPos {
  int slot = 0;
  unsigned phase = 0;
  __device__ __forceinline__ void advance() {
    if (++slot == kSlots) {
      slot = 0;
      phase ^= 1u;
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Warp-specialized wgmma kernel (the `sm90_wgmma_*` configs). 512 threads = 4 warpgroups:
//   * warpgroups 0 and 1 (producers): cp.async of raw weights, raw tokens and scales into a
//     kRawSlots-deep ring (completion tracked per slot by an mbarrier, no commit groups), and the
//     token dequantization into a kTokSlots-deep ring of fp16 wgmma B operands, kLookahead stages
//     behind their copies;
//   * warpgroups 2 and 3 (consumers): 64 weight rows each; per stage they dequantize their weights
//     into register A fragments and issue wgmma. Two fragment sets alternate, so one k64 half's
//     dequantization overlaps the other half's wgmmas (wgmma.wait_group 1, never 0 in the loop).
// No CTA-wide barrier in the main loop: slots are handed over by full/empty mbarriers. Why: the v2
// kernel serialized copy waits, token dequant, weight dequant and MMA behind two __syncthreads per
// stage and ran at ~1/4 of the tensor rate with the SMs mostly waiting on latency.
template <int kTileM>
struct WsShape {
  // Producer warpgroups: two, so that each scheduler runs two producer warps (the token
  // dequantization of a stage was the critical path with one: consumers waited on it).
  static constexpr int kProducerWarps = 8;
  static constexpr int kProducerThreads = 32 * kProducerWarps;
  static constexpr int kThreads = kProducerThreads + 256;
  // setmaxnreg budgets (512 threads start at 128 registers): producers give registers to consumers,
  // whose accumulators and two fragment sets need them. 256 x 88 + 256 x 168 = 65536.
  static constexpr int kProducerRegs = 88;
  static constexpr int kConsumerRegs = 168;
  static constexpr int kRawW = detail::kTileN * detail::kStageBytes;
  static constexpr int kRawA = kTileM * detail::kStageBytes;
  static constexpr int kRawStage = kRawW + kRawA + 2 * detail::kScaleBytes;
  static constexpr int kTokBytes = kTileM * detail::kStageK * 2;  // fp16 tokens of one stage
  static constexpr int kTokSlots = 3;
  static constexpr int kRawSlots = kTileM >= 128 ? 6 : 8;
  static constexpr int kLookahead = kRawSlots - 2;  // copies run this many stages ahead of token dequant
  static constexpr int kEpilogueSmem = kTileM * (detail::kTileN + 4) * 4;
  static constexpr int kMainSmem = kTokSlots * kTokBytes + kRawSlots * kRawStage;
  // + 1 KB: the token ring is realigned to 1024 bytes (the 128-byte swizzle's atom).
  static constexpr int kSmemBytes = (kMainSmem > kEpilogueSmem ? kMainSmem : kEpilogueSmem) + 1024;
  static_assert(kSmemBytes <= 227 * 1024, "shared memory");
};

template <int kTileM, class ElementOut>
__global__ void __launch_bounds__(512, 1) ws_wgmma_kernel(const DequantGemmParams p) {
  using namespace detail;
  using S = WsShape<kTileM>;
  constexpr int R = S::kRawSlots;
  constexpr int T = S::kTokSlots;
  extern __shared__ __align__(128) std::uint8_t smem_raw[];
  __shared__ __align__(8) std::uint64_t raw_full[R], raw_empty[R], tok_full[T], tok_empty[T];

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;

  std::uint8_t* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
  std::uint8_t* tok_ring = smem;
  std::uint8_t* raw_ring = smem + T * S::kTokBytes;

  const CtaWork work = cta_work<kTileM>(p);
  const int n0 = work.n0, m0 = work.m0, batch = work.batch;
  const int stage_begin = work.stage_begin, num_stages = work.num_stages;

  if (tid == 0) {
#pragma unroll
    for (int i = 0; i < R; ++i) {
      mbar_init(&raw_full[i], S::kProducerThreads);  // one cp.async-tracking arrival per producer thread
      mbar_init(&raw_empty[i], 8);   // one arrival per consumer warp
    }
#pragma unroll
    for (int i = 0; i < T; ++i) {
      mbar_init(&tok_full[i], S::kProducerThreads);  // every producer thread
      mbar_init(&tok_empty[i], 8);
    }
  }
  __syncthreads();

  const int a_scale_row0 = m0 % 128;  // first token row of this CTA inside its 128-row scale tile
  const std::uint8_t* a_scale_rows = p.a_scale + batch * p.a_scale_batch +
                                     static_cast<long long>(m0 / 128) * (p.scale_cols_padded / 4) * kScaleChunk;

  // Tokens of one stage (producer warps): raw chunk (row, seg) -> 4 words x 8 elements, stored in
  // the permuted K order the weight fragments use, as 16-byte chunks of the 128-byte-swizzled K-major B
  // operand (two K halves of 64, each kTileM rows x 128 bytes). A warp takes 8-row groups, lanes 8 rows
  // x 4 segments, so the raw reads and the swizzled stores each hit 8 distinct 16-byte bank groups.
  // All loads of a thread come first: one warp per scheduler runs this, so their latency must overlap.
  auto dequant_tokens = [&](const std::uint8_t* raw_stage, std::uint8_t* tok) {
    const std::uint8_t* raw_a = raw_stage + S::kRawW;
    const std::uint8_t* scale_a = raw_a + S::kRawA + kScaleBytes;
    const int seg = lane >> 3;
    constexpr int kGroups = (kTileM / 8 + S::kProducerWarps - 1) / S::kProducerWarps;  // 8-row groups per warp
    uint4 raw[kGroups];
    std::uint32_t sword[kGroups];
#pragma unroll
    for (int it = 0; it < kGroups; ++it) {
      const int row = (warp + S::kProducerWarps * it) * 8 + (lane & 7);
      if (row < kTileM) {
        raw[it] = lds128(raw_a + row * kStageBytes + ((seg ^ ((row >> 1) & 3)) << 4));
        // scale columns 2 seg and 2 seg + 1 of this row: bytes of one word of the blocked layout
        const int srow = a_scale_row0 + row;
        sword[it] = *reinterpret_cast<const std::uint32_t*>(scale_a + (seg >> 1) * kScaleChunk + (srow & 31) * 16 +
                                                            (srow >> 5) * 4);
      }
    }
#pragma unroll
    for (int it = 0; it < kGroups; ++it) {
      const int row = (warp + S::kProducerWarps * it) * 8 + (lane & 7);
      if (row < kTileM) {
        // scale columns 2 seg and 2 seg + 1: adjacent bytes of the word
        const __half2 sc = two_scales_to_half2(sword[it] >> ((seg & 1) * 16));
        std::uint32_t h[4][4];
        dequant8(raw[it].x, __low2half2(sc), h[0]);
        dequant8(raw[it].y, __low2half2(sc), h[1]);
        dequant8(raw[it].z, __high2half2(sc), h[2]);
        dequant8(raw[it].w, __high2half2(sc), h[3]);
        std::uint8_t* dst_row = tok + (seg >> 1) * (kTileM * 128) + row * 128;
#pragma unroll
        for (int pair = 0; pair < 4; ++pair) {
          // virtual K of (word w, pair) = seg 32 + (pair / 2) 16 + (pair % 2) 8 + 2 w: words 0..3 of a
          // pair fill one 16-byte chunk
          const int c = (seg & 1) * 4 + (pair >> 1) * 2 + (pair & 1);
          sts128(dst_row + ((c ^ (row & 7)) << 4), h[0][pair], h[1][pair], h[2][pair], h[3][pair]);
        }
      }
    }
  };

  if (warp < S::kProducerWarps) {
    // ---------------- producer warpgroups ----------------
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(S::kProducerRegs));
    const int k_bytes = p.k / 2;
    const std::uint8_t* a_batch = p.a + static_cast<long long>(batch) * p.m * k_bytes;
    const std::uint8_t* b_batch = p.b + static_cast<long long>(batch) * p.n * k_bytes;
    const int scale_tiles_per_row_block = p.scale_cols_padded / 4;
    const std::uint8_t* b_scale_rows = p.b_scale + batch * p.b_scale_batch +
                                       static_cast<long long>(n0 / 128) * scale_tiles_per_row_block * kScaleChunk;
    const int chunk = tid & 3;  // 16-byte chunk of a row's 64 stage bytes
    const int row_in = tid >> 2;  // 0 .. kProducerThreads / 4 - 1
    constexpr int kRowStep = S::kProducerThreads / 4;

    auto load_stage = [&](int s, int slot) {
      std::uint8_t* base = raw_ring + slot * S::kRawStage;
      const int gk = s * kStageBytes + chunk * 16;
      const bool k_ok = gk < k_bytes;
      // weights and tokens: rows row_in + kRowStep j, chunks XOR-swizzled by row against bank conflicts
#pragma unroll
      for (int j = 0; j < kTileN / kRowStep; ++j) {
        const int row = row_in + kRowStep * j;
        const bool ok = k_ok && (n0 + row < p.n);
        const std::uint8_t* src = ok ? b_batch + static_cast<long long>(n0 + row) * k_bytes + gk : b_batch;
        cp_async_16_prefetch(base + row * kStageBytes + ((chunk ^ ((row >> 1) & 3)) << 4), src, ok ? 16 : 0);
      }
      std::uint8_t* raw_a = base + S::kRawW;
#pragma unroll
      for (int j = 0; j < (kTileM + kRowStep - 1) / kRowStep; ++j) {
        const int row = row_in + kRowStep * j;
        if (row < kTileM) {
          const bool ok = k_ok && (m0 + row < p.m);
          const std::uint8_t* src = ok ? a_batch + static_cast<long long>(m0 + row) * k_bytes + gk : a_batch;
          cp_async_16_prefetch(raw_a + row * kStageBytes + ((chunk ^ ((row >> 1) & 3)) << 4), src, ok ? 16 : 0);
        }
      }
      // scales: the stage's 8 columns are 2 consecutive 512-byte tiles (the second may lie past K);
      // threads 0-63 copy the weights' 1 KB, 64-127 the tokens'
      if (tid < 128) {
        const int which = tid >> 6;
        const int offset = (tid & 63) * 16;
        const int tile = 2 * s + (offset >> 9);
        const bool ok = tile < scale_tiles_per_row_block;
        const std::uint8_t* rows = which == 0 ? b_scale_rows : a_scale_rows;
        const std::uint8_t* src = ok ? rows + static_cast<long long>(2 * s) * kScaleChunk + offset : rows;
        cp_async_16(raw_a + S::kRawA + which * kScaleBytes + offset, src, ok ? 16 : 0);
      }
    };

    RingPos<R> load_pos, read_pos;  // raw slot of stage i (copies), of stage j (token dequant)
    RingPos<T> tok_pos;              // token slot of stage j
    for (int i = 0; i < num_stages + S::kLookahead; ++i) {
      const int j = i - S::kLookahead;
      if (j >= 0) {
        // a slot's previous use (stage j - T) must be released first: the parity before this one
        if (j >= T) mbar_wait(&tok_empty[tok_pos.slot], tok_pos.phase ^ 1u);
        mbar_wait(&raw_full[read_pos.slot], read_pos.phase);
        dequant_tokens(raw_ring + read_pos.slot * S::kRawStage, tok_ring + tok_pos.slot * S::kTokBytes);
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // generic stores -> wgmma reads
        mbar_arrive(&tok_full[tok_pos.slot]);
        read_pos.advance();
        tok_pos.advance();
      }
      if (i < num_stages) {
        if (i >= R) mbar_wait(&raw_empty[load_pos.slot], load_pos.phase ^ 1u);
        load_stage(stage_begin + i, load_pos.slot);
        mbar_arrive_on_copies(&raw_full[load_pos.slot]);
        load_pos.advance();
      }
    }
  } else {
    // ---------------- consumer warpgroups ----------------
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(S::kConsumerRegs));
    const int cw = warp - S::kProducerWarps;  // 0..7: 16 weight rows each, warpgroup (cw / 4) covers 64
    const int g = lane >> 2, t = lane & 3;
    const int weight_row0 = cw * 16;
    const int ld_row = weight_row0 + (lane & 7) + ((lane >> 3) & 1) * 8;  // ldmatrix source row
    const int ld_swz = (ld_row >> 1) & 3;
    const int row_g = weight_row0 + g, row_g8 = row_g + 8;
    const int sc_g = (row_g & 31) * 16 + (row_g >> 5) * 4, sc_g8 = (row_g8 & 31) * 16 + (row_g8 >> 5) * 4;
    // bytes t/2 and t/2 + 2 (scale columns of segments 2 half and 2 half + 1) of the words of rows g, g + 8
    const std::uint32_t scale_pick = (t >> 1) * 0x1111u + 0x6420u;
    float acc[kTileM / 2];  // wgmma m64nNk16 accumulators
#pragma unroll
    for (int i = 0; i < kTileM / 2; ++i) acc[i] = 0.0f;
    std::uint32_t frag[2][4][4];  // two sets (k64 halves) x 4 k16 steps
    // Token-slot descriptors differ only in the start address (bits 0-13, address / 16): computed once.
    const std::uint64_t desc_ring = sw128_descriptor(tok_ring);

#pragma unroll
    for (int i = 0; i < kTileM / 2; ++i) cute::warpgroup_fence_operand(acc[i]);
    RingPos<R> raw_pos;
    RingPos<T> tok_pos;
    int prev_tslot = T - 1;  // token slot of stage s - 1
    for (int s = 0; s < num_stages; ++s) {
      const int slot = raw_pos.slot, tslot = tok_pos.slot;
      mbar_wait(&raw_full[slot], raw_pos.phase);
      const std::uint8_t* base = raw_ring + slot * S::kRawStage;
      const std::uint8_t* scale_b = base + S::kRawW + S::kRawA;
      // Both halves' raw bytes and scale words are loaded up front, so the second half's shared-memory
      // latency hides behind the first half's dequantization. raw: rows 0-7 / 8-15 of segments 2 half
      // and 2 half + 1 (elements 64 half .. + 63); scale words: columns 4 half .. + 3 of rows g, g + 8.
      std::uint32_t raws[2][4], wgs[2], wg8s[2];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        ldmatrix_x4(raws[half], base + ld_row * kStageBytes + (((2 * half + (lane >> 4)) ^ ld_swz) << 4));
        wgs[half] = *reinterpret_cast<const std::uint32_t*>(scale_b + half * kScaleChunk + sc_g);
        wg8s[half] = *reinterpret_cast<const std::uint32_t*>(scale_b + half * kScaleChunk + sc_g8);
      }
      mbar_wait(&tok_full[tslot], tok_pos.phase);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const std::uint32_t(&raw)[4] = raws[half];
        const std::uint32_t wg = wgs[half], wg8 = wg8s[half];
        const std::uint32_t picked = __byte_perm(wg, wg8, scale_pick);
        const __half2 sc_g = two_scales_to_half2(picked), sc_g8 = two_scales_to_half2(picked >> 16);
#pragma unroll
        for (int sub = 0; sub < 2; ++sub) {  // segment 2 half + sub, scale column 2 (2 half + sub) + t / 2
          std::uint32_t h[2][4];
          dequant8(raw[2 * sub + 0], sub ? __high2half2(sc_g) : __low2half2(sc_g), h[0]);
          dequant8(raw[2 * sub + 1], sub ? __high2half2(sc_g8) : __low2half2(sc_g8), h[1]);
#pragma unroll
          for (int step = 0; step < 2; ++step) {
            std::uint32_t* f = frag[half][2 * sub + step];
            f[0] = h[0][2 * step];
            f[1] = h[1][2 * step];
            f[2] = h[0][2 * step + 1];
            f[3] = h[1][2 * step + 1];
          }
        }
        if (half == 1) {
          // every raw byte and scale of this slot has been used: the producer may refill it
          __syncwarp();
          if (lane == 0) mbar_arrive(&raw_empty[slot]);
        }
        // pin the fragments' definitions before wgmma.fence: a definition scheduled after it makes
        // ptxas serialize every wgmma (C7513)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int r = 0; r < 4; ++r) cute::warpgroup_fence_operand(frag[half][j][r]);
        cute::warpgroup_arrive();
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          // k16 step 4 half + j: K half `half` of the token slot, 32 bytes per step inside the swizzle atom
          const std::uint64_t b = desc_ring + ((tslot * S::kTokBytes + half * (kTileM * 128) + j * 32) >> 4);
          wgmma_rs<kTileM>(frag[half][j], b, acc, std::make_index_sequence<kTileM / 2>{});
        }
        cute::warpgroup_commit_batch();
        // at most this k64 half's wgmmas stay in flight: the other fragment set is free again
        cute::warpgroup_wait<1>();
        if (half == 0 && s > 0) {
          // every wgmma of stage s - 1 has completed: its token slot may be rewritten
          __syncwarp();
          if (lane == 0) mbar_arrive(&tok_empty[prev_tslot]);
        }
      }
      prev_tslot = tslot;
      raw_pos.advance();
      tok_pos.advance();
    }
    cute::warpgroup_wait<0>();
#pragma unroll
    for (int i = 0; i < kTileM / 2; ++i) cute::warpgroup_fence_operand(acc[i]);
    // Both consumer warpgroups retired their wgmmas and ldmatrix reads; the producers finished before
    // the last stage's tokens were ready (every copy they issued was consumed). So the rings are free:
    // the FP32 tile may overwrite them. From here on only the consumers run (no CTA-wide barrier
    // after the role split).
    NamedSync<256>{}();
    // wgmma m64nN accumulators: warp cw owns weight rows 16 cw + g (+ 8), tokens 8 nt + 2 t (+ 1)
    float* tile = reinterpret_cast<float*>(smem);
#pragma unroll
    for (int nt = 0; nt < kTileM / 8; ++nt)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int weight = weight_row0 + g + (c >> 1) * 8;
        const int token = nt * 8 + 2 * t + (c & 1);
        tile[token * (kTileN + 4) + weight] = acc[nt * 4 + c];
      }
    NamedSync<256>{}();  // the FP32 tile is complete
    finish_tile<kTileM, 256, ElementOut>(p, tile, tid - S::kProducerThreads, NamedSync<256>{});
  }
}

// ---------------------------------------------------------------------------------------------
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
// matching terms (the order of a dot product's terms is free).
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

template <int kTileM, class ElementOut>
__global__ void __launch_bounds__(direct::kThreads, 2) direct_decode_kernel(const DequantGemmParams p) {
  using namespace detail;
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
    w_scale[r] = p.b_scale + batch * p.b_scale_batch + scale_row_base(w_ok[r] ? row : 0) + t;
  }
  // this thread's token records: token tid / 16 (of 16), sub-block t' = tid % 4, chunks (tid / 4) % 4 + 4 i
  const int rec_token = tid >> 4, rec_t = tid & 3, rec_chunk0 = (tid >> 2) & 3;
  const int a_row = m0 + rec_token;
  const bool a_ok = a_row < p.m;
  const std::uint8_t* a_src = p.a + (static_cast<long long>(batch) * p.m + (a_ok ? a_row : 0)) * k_bytes + 8 * rec_t;
  const std::uint8_t* a_scale = p.a_scale + batch * p.a_scale_batch + scale_row_base(a_ok ? a_row : 0) + rec_t;

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
        ws[u][r] = ok ? __ldg(w_scale[r] + static_cast<long long>(chunk) * kScaleChunk) : 0u;
      }
    }
  };

  for (int b0 = c_begin; b0 < c_end; b0 += direct::kBlockChunks) {
    const int b_end = min(b0 + direct::kBlockChunks, c_end);
    // the block's first weight loads go out before the token work, so their latency overlaps it
    load_weights(b0, b_end);
    // 1. the block's token records, dequantized once for all warps (a missing 16-element group, past K
    //    or past M, is zero and its scale is never read)
    __syncthreads();  // the previous block's records are no longer read
#pragma unroll
    for (int i = 0; i < direct::kBlockChunks / 4; ++i) {
      const int chunk = b0 + rec_chunk0 + 4 * i;
      const bool ok = a_ok && chunk < b_end && chunk * 4 + rec_t < kblocks;
      const uint2 raw = ok ? __ldg(reinterpret_cast<const uint2*>(a_src + chunk * direct::kChunkBytes)) : make_uint2(0, 0);
      const std::uint32_t sc = ok ? __ldg(a_scale + static_cast<long long>(chunk) * kScaleChunk) : 0u;
      std::uint32_t h[2][4];
      const std::uint32_t sc2 = scale_to_half2(sc);
      dequant8(raw.x, sc2, h[0]);
      dequant8(raw.y, sc2, h[1]);
      std::uint32_t* rec = tokens + (((chunk - b0) * 16 + rec_token) * 4 + rec_t) * direct::kRecordWords;
      sts128(rec, h[0][0], h[0][1], h[0][2], h[0][3]);
      sts128(rec + 4, h[1][0], h[1][1], h[1][2], h[1][3]);
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
          const std::uint32_t sc2 = scale_to_half2(ws[u][r]);
          dequant8(wv[u][r].x, sc2, wh[r][0]);
          dequant8(wv[u][r].y, sc2, wh[r][1]);
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
            mma_f16(acc[nt], a_frag, bf[2 * j], bf[2 * j + 1]);
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
  finish_tile<kTileM, direct::kThreads, ElementOut>(p, tile, tid, CtaSync{});
}

// ---------------------------------------------------------------------------------------------
// Token prepass + warp-specialized wgmma kernel (the `sm90_wgmma_*_prepass_splitk` configs, "Hopper v6").
// The in-CTA kernels above dequantize every token row again in each of the N / 128 CTAs along the
// weights, and at M = 128 that work took as many issue slots as the tensor cores had cycles
// (perf notes, "Hopper v4"). Here the tokens are dequantized once per call by a small kernel into an
// fp16 workspace, already in the permuted K order the weight fragments use, so the GEMM's producers
// only copy and its consumers only dequantize weights and issue wgmma.
//   Token workspace order: row-major (l, m, k); inside each 32-element segment, virtual position
// 8 p + 2 w + e (p = pair 0..3, w = word 0..3, e = 0..1) holds element 8 w + p + 4 e, i.e. 16-byte
// chunk p of the segment holds pair p of the segment's four 8-element words: exactly the chunks the
// in-CTA kernel writes into its shared-memory B operand.
#ifndef NVFP4_SM90_EXPERIMENT
#define NVFP4_SM90_EXPERIMENT 0
#endif
namespace prepass {
constexpr int kThreads = 256;
constexpr int kSegmentK = 32;  // FP4 elements per thread: 16 raw bytes in, 64 fp16 bytes out
}  // namespace prepass

// griddepcontrol (sm_90): the prepass lets its dependent GEMM launch at once; the GEMM's producers
// wait for the prepass's writes only before their first token copy (the weights need no wait).
__device__ __forceinline__ void launch_dependents() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }
__device__ __forceinline__ void wait_for_prerequisites() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

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
  uint4* dst = reinterpret_cast<uint4*>(const_cast<__half*>(p.tokens) + index * kSegmentK);
#pragma unroll
  for (int pair = 0; pair < 4; ++pair) dst[pair] = make_uint4(h[0][pair], h[1][pair], h[2][pair], h[3][pair]);
}

// One producer warpgroup (cp.async of raw weights, scales and fp16 tokens into a kSlots-deep ring,
// one full and one empty mbarrier per slot) and two consumer warpgroups. A CTA covers kTileN = 128 or
// 256 weight rows: consumer warp w owns rows 16 w + 128 t of m-tile t (t < kTileN / 128), so each
// warpgroup issues one m64nNk16 wgmma per m-tile and k16 step. Why 256: the fp16 tokens cost 4x the
// bytes of raw FP4 ones, and at kTileN = 128 the L2 -> shared-memory traffic alone took as long as the
// MMAs (perf notes, "Hopper v6"); a 256-row tile halves the token bytes per MMA.
// Per stage the consumers run kTileN / 64 batches of 4 wgmmas (k64 half x m-tile), two fragment sets
// alternating, so one batch's dequantization overlaps the previous batch's wgmmas.
template <int kTileM, int kTileN>
struct PrepassShape {
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
  static constexpr int kTokBytes = kTileM * detail::kStageK * 2;  // fp16 tokens of one stage, 1 KB aligned
  static constexpr int kRawW = kTileN * detail::kStageBytes;
  static constexpr int kScaleW = kMTiles * detail::kScaleBytes;  // 1 KB per 128-row block of the blocked layout
  static constexpr int kSlotBytes = kTokBytes + kRawW + kScaleW;
  static constexpr int kEpilogueSmem = kTileM * (kTileN + 4) * 4;
  static constexpr int kRingBudget = 226 * 1024;
  static constexpr int kSlots = kRingBudget / kSlotBytes > 8 ? 8 : kRingBudget / kSlotBytes;
  static constexpr int kMainSmem = kSlots * kSlotBytes;
  // + 1 KB: the ring is realigned to 1024 bytes (the 128-byte swizzle's atom).
  static constexpr int kSmemBytes = (kMainSmem > kEpilogueSmem ? kMainSmem : kEpilogueSmem) + 1024;
  static_assert(kSlots >= 3 && kSmemBytes <= 227 * 1024, "shared memory");
};

template <int kTileM, int kTileN, class ElementOut>
__global__ void __launch_bounds__(PrepassShape<kTileM, kTileN>::kThreads, 1)
    prepass_wgmma_kernel(const __grid_constant__ DequantGemmParams p) {
  using namespace detail;
  using S = PrepassShape<kTileM, kTileN>;
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
      mbar_init(&empty[i], 8);  // one arrival per consumer warp
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
        const bool ok = block < row_blocks_left && 2 * s + (offset >> 9) < scale_tiles_per_row_block;
        const std::uint8_t* src =
            ok ? b_scale_rows + block * scale_row_block + static_cast<long long>(2 * s) * kScaleChunk + offset
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
        tma_load_3d(tok + half * (kTileM * 128), &p.tokens_map, &full[slot], s * kStageK + half * 64, m0, batch);
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
#if NVFP4_SM90_EXPERIMENT != 2 && NVFP4_SM90_EXPERIMENT != 4
      load_tokens(stage_begin + i, pos.slot);
#endif
      mbar_arrive_on_copies(&full[pos.slot]);
      pos.advance();
    }
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
    std::uint32_t frag[2][MT][4][4];  // two sets (k64 halves) x m-tiles x 4 k16 steps
    // Slot descriptors differ only in the start address (bits 0-13, address / 16): computed once.
    const std::uint64_t desc_ring = sw128_descriptor(ring);

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
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        // raw: rows 0-7 / 8-15 of segments 2 half and 2 half + 1 of each m-tile; scale words: columns
        // 4 half .. + 3 of rows g, g + 8
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          std::uint32_t raw[4];
          ldmatrix_x4(raw, base + (ld_row + 128 * mt) * kStageBytes + (((2 * half + (lane >> 4)) ^ ld_swz) << 4));
          const std::uint8_t* block = scale_b + mt * kScaleBytes + half * kScaleChunk;
          const std::uint32_t wg = *reinterpret_cast<const std::uint32_t*>(block + sc_g);
          const std::uint32_t wg8 = *reinterpret_cast<const std::uint32_t*>(block + sc_g8);
          const std::uint32_t picked = __byte_perm(wg, wg8, scale_pick);
          const __half2 sc_lo = two_scales_to_half2(picked), sc_hi = two_scales_to_half2(picked >> 16);
#pragma unroll
          for (int sub = 0; sub < 2; ++sub) {  // segment 2 half + sub, scale column 2 (2 half + sub) + t / 2
            std::uint32_t h[2][4];
#if NVFP4_SM90_EXPERIMENT == 1 || NVFP4_SM90_EXPERIMENT == 4
            for (int q = 0; q < 4; ++q) { h[0][q] = raw[2 * sub] ^ q; h[1][q] = raw[2 * sub + 1] ^ q; }
#else
            dequant8(raw[2 * sub + 0], sub ? __high2half2(sc_lo) : __low2half2(sc_lo), h[0]);
            dequant8(raw[2 * sub + 1], sub ? __high2half2(sc_hi) : __low2half2(sc_hi), h[1]);
#endif
#pragma unroll
            for (int step = 0; step < 2; ++step) {
              std::uint32_t* f = frag[half][mt][2 * sub + step];
              f[0] = h[0][2 * step];
              f[1] = h[1][2 * step];
              f[2] = h[0][2 * step + 1];
              f[3] = h[1][2 * step + 1];
            }
          }
        }
        // pin the fragments' definitions before wgmma.fence (C7513, see ws_wgmma_kernel)
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) cute::warpgroup_fence_operand(frag[half][mt][j][r]);
        cute::warpgroup_arrive();
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const std::uint64_t b = desc_ring + ((slot * S::kSlotBytes + half * (kTileM * 128) + j * 32) >> 4);
#if NVFP4_SM90_EXPERIMENT != 3
            wgmma_rs<kTileM>(frag[half][mt][j], b, acc[mt], std::make_index_sequence<kTileM / 2>{});
#else
            acc[mt][j] += __uint_as_float(frag[half][mt][j][0] & 1) + (b & 1);
#endif
          }
        cute::warpgroup_commit_batch();
        // at most this k64 half's wgmmas stay in flight: the other fragment set is free again
        cute::warpgroup_wait<1>();
        if (half == 0 && s > 0) {
          // every wgmma of stage s - 1 has completed and its raw bytes were read long ago: release its slot
          __syncwarp();
          if (lane == 0) mbar_arrive(&empty[prev_slot]);
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
          tile[token * (kTileN + 4) + weight] = acc[mt][nt * 4 + c];
        }
    NamedSync<256>{}();  // the FP32 tile is complete
    finish_tile<kTileM, 256, ElementOut, NamedSync<256>, kTileN>(p, tile, tid - S::kProducerThreads, NamedSync<256>{});
  }
}

// Which kernel a config runs (the config table's `mma` and `tokens` fields).
enum class Kind { kMmaSync, kWgmma, kDirect, kWgmmaPrepass };

// Host side. The TMA tensor map of the prepass's fp16 tokens: dims (k, m, l), boxes of 64 x box_rows x 1
// in the 128-byte swizzle, zeros outside the tensor (rows past M, K past the end). The driver's encoder
// comes through the runtime (no link against libcuda), looked up once. Encoding takes host time and the
// workspace address is stable per (device, stream), so each thread keeps the last map it encoded.
inline bool tokens_tensor_map(CUtensorMap* map, const void* tokens, int k, int m, int l, int box_rows) {
  using Encode = decltype(&cuTensorMapEncodeTiled);
  static const Encode encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      return static_cast<Encode>(nullptr);
    }
    return reinterpret_cast<Encode>(fn);
  }();
  struct Cached {
    const void* tokens = nullptr;
    int k = 0, m = 0, l = 0, box_rows = 0;
    CUtensorMap map;
  };
  thread_local Cached cached;
  if (cached.tokens == tokens && cached.k == k && cached.m == m && cached.l == l && cached.box_rows == box_rows) {
    *map = cached.map;
    return true;
  }
  if (encode == nullptr) return false;
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(m), static_cast<cuuint64_t>(l)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(k) * 2, static_cast<cuuint64_t>(k) * 2 * m};
  const cuuint32_t box[3] = {64, static_cast<cuuint32_t>(box_rows), 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  if (encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, const_cast<void*>(tokens), dims, strides, box, element_strides,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
    return false;
  }
  cached = Cached{tokens, k, m, l, box_rows, *map};
  return true;
}

// The launcher and its registry hooks for one (token tile, out dtype, kernel).
template <int kTileM, class ElementOut, Kind kKind, int kTileN = detail::kTileN>
struct DequantGemm {
  static_assert(kTileN == detail::kTileN || kKind == Kind::kWgmmaPrepass, "only the prepass kernel has 256-row tiles");
  static constexpr int kStages = 4;
  // K per unit of split-K work: a pipeline stage, or a chunk of the direct kernel
  static constexpr int kSplitUnitK = kKind == Kind::kDirect ? direct::kChunkK : detail::kStageK;
  static constexpr bool kPrepass = kKind == Kind::kWgmmaPrepass;

  static int stages_total(const GemmProblem& p) { return (p.k + detail::kStageK - 1) / detail::kStageK; }
  static int tiles(const GemmProblem& p) {
    return ((p.n + kTileN - 1) / kTileN) * ((p.m + kTileM - 1) / kTileM) * p.l;
  }

  static LaunchStatus can_implement(const GemmProblem& p) {
    if (p.m < 1 || p.n < 1 || p.l < 1 || p.k < 32 || p.k % 32 != 0) {
      return {false, "needs M, N, L >= 1 and K a positive multiple of 32"};
    }
    if (p.n % 4 != 0) return {false, "needs N a multiple of 4"};
    return {};
  }

  // The prepass's fp16 tokens come first, then the split-K partials, each 256-byte aligned.
  static std::size_t token_bytes(const GemmProblem& p) {
    if (!kPrepass) return 0;
    return (static_cast<std::size_t>(p.l) * p.m * p.k * sizeof(__half) + 255) / 256 * 256;
  }
  static std::size_t workspace_bytes(const GemmProblem& p, int /*device_id*/, int /*sm_count*/, int split_k) {
    const std::size_t partials = split_k <= 1 ? 0 : static_cast<std::size_t>(p.l) * split_k * p.m * p.n * sizeof(float);
    return token_bytes(p) + partials;
  }

  static std::size_t counters_needed(const GemmProblem& p, int split_k) {
    return split_k <= 1 ? 0 : static_cast<std::size_t>(tiles(p));
  }

  static LaunchStatus launch(const GemmProblem& p, const LaunchContext& ctx) {
    LaunchStatus ok = can_implement(p);
    if (!ok.ok) return ok;
    if (ctx.split_k < 1) return {false, "split_k must be at least 1"};
    const int split_k = ctx.split_k;
    if (split_k > (p.k + kSplitUnitK - 1) / kSplitUnitK) {
      return {false, "split_k larger than the number of K stages (128 elements; 64 for the direct kernel)"};
    }
    if (workspace_bytes(p, ctx.device_id, ctx.sm_count, split_k) > ctx.workspace_capacity) {
      return {false, "workspace smaller than the kernel needs"};
    }
    if (counters_needed(p, split_k) > ctx.counter_capacity) return {false, "fewer split-K counters than tiles"};
    DequantGemmParams params{};
    params.a = static_cast<const std::uint8_t*>(p.a);
    params.b = static_cast<const std::uint8_t*>(p.b);
    params.a_scale = static_cast<const std::uint8_t*>(p.a_scale_blocked);
    params.b_scale = static_cast<const std::uint8_t*>(p.b_scale_blocked);
    params.out = p.out;
    params.alpha = p.alpha;
    params.m = p.m;
    params.n = p.n;
    params.k = p.k;
    params.l = p.l;
    params.split_k = split_k;
    params.stages_total = stages_total(p);
    params.scale_cols_padded = (p.k / 16 + 3) / 4 * 4;
    params.a_scale_batch = static_cast<long long>((p.m + 127) / 128 * 128) * params.scale_cols_padded;
    params.b_scale_batch = static_cast<long long>((p.n + 127) / 128 * 128) * params.scale_cols_padded;
    std::uint8_t* workspace = static_cast<std::uint8_t*>(ctx.workspace);
    if (kPrepass) params.tokens = reinterpret_cast<const __half*>(workspace);
    if (split_k > 1) {
      params.counters = ctx.counters;
      params.partials = reinterpret_cast<float*>(workspace + token_bytes(p));
    }
    void (*kernel)(DequantGemmParams) = nullptr;
    int threads = detail::kThreads, smem_bytes = 0;
    if constexpr (kKind == Kind::kWgmma) {
      kernel = ws_wgmma_kernel<kTileM, ElementOut>;
      threads = WsShape<kTileM>::kThreads;
      smem_bytes = WsShape<kTileM>::kSmemBytes;
    } else if constexpr (kKind == Kind::kWgmmaPrepass) {
      kernel = prepass_wgmma_kernel<kTileM, kTileN, ElementOut>;
      threads = PrepassShape<kTileM, kTileN>::kThreads;
      smem_bytes = PrepassShape<kTileM, kTileN>::kSmemBytes;
    } else if constexpr (kKind == Kind::kDirect) {
      kernel = direct_decode_kernel<kTileM, ElementOut>;
      threads = direct::kThreads;
      smem_bytes = direct::kSmemBytes;
    } else {
      kernel = dequant_gemm_kernel<kTileM, kStages, ElementOut>;
      smem_bytes = DequantGemmKernel<kTileM, kStages, ElementOut>::kSmemBytes;
    }
    // Above 48 KB a kernel must opt in to its dynamic shared memory; once per process is enough.
    static const cudaError_t attribute_status =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
    if (attribute_status != cudaSuccess) return {false, "cudaFuncSetAttribute(max dynamic shared memory) failed"};
    const dim3 grid((p.n + kTileN - 1) / kTileN, (p.m + kTileM - 1) / kTileM, p.l * split_k);
    if constexpr (kPrepass) {
      if (!tokens_tensor_map(&params.tokens_map, params.tokens, p.k, p.m, p.l, kTileM)) {
        return {false, "cuTensorMapEncodeTiled failed for the prepass's fp16 tokens"};
      }
      const long long segments = static_cast<long long>(p.l) * p.m * (p.k / prepass::kSegmentK);
      const unsigned blocks = static_cast<unsigned>((segments + prepass::kThreads - 1) / prepass::kThreads);
      dequant_tokens_kernel<prepass::kSegmentK><<<blocks, prepass::kThreads, 0, ctx.stream>>>(params);
      if (cudaGetLastError() != cudaSuccess) return {false, "token prepass launch failed"};
      // Programmatic dependent launch: the GEMM starts while the prepass runs and loads its first
      // weights; its producers wait (griddepcontrol.wait) before reading the tokens.
      cudaLaunchConfig_t config{};
      config.gridDim = grid;
      config.blockDim = dim3(threads);
      config.dynamicSmemBytes = smem_bytes;
      config.stream = ctx.stream;
      cudaLaunchAttribute attribute{};
      attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attribute.val.programmaticStreamSerializationAllowed = 1;
      config.attrs = &attribute;
      config.numAttrs = 1;
      if (cudaLaunchKernelEx(&config, kernel, params) != cudaSuccess) return {false, "kernel launch failed"};
      return {};
    }
    kernel<<<grid, threads, smem_bytes, ctx.stream>>>(params);
    if (cudaGetLastError() != cudaSuccess) return {false, "kernel launch failed"};
    return {};
  }
};

}  // namespace nvfp4_gemm::sm90

namespace nvfp4_gemm::sm90 {

template <class Kernel>
constexpr KernelEntry make_entry(const char* config_name, OutDtype out_dtype) {
  return KernelEntry{config_name,          out_dtype,       /*sm_major=*/9,
                     &Kernel::can_implement, &Kernel::workspace_bytes, &Kernel::counters_needed, &Kernel::launch,
                     /*scale_offsets=*/nullptr, /*host_reference=*/nullptr};
}

}  // namespace nvfp4_gemm::sm90
