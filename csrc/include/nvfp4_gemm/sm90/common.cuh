// Hopper (sm_90a) NVFP4 x NVFP4 GEMM, the parts every sm90 kernel shares: FP4 and e4m3 -> exact fp16
// in registers, the MMA and copy primitives, the launch parameters, the CTA's share of the work and
// the split-K epilogue.
//
// Why it is exact: e2m1 x e4m3 has at most 6 significant bits and lies in [2^-10, 2688], so it is
// an fp16 value; so is that value times 2^-7 (>= 2^-17, a multiple of fp16's 2^-24 quantum). The
// tensor cores multiply fp16 pairs exactly into FP32. Only the summation order differs from the
// reference.
//
// Shape of the work (M tokens are few, N weights are many):
//   * the MMA's "A" operand (rows from registers) is the weight tile b, the "B" operand the tokens a,
//     so out^T tiles are computed and stored transposed;
//   * weights are dequantized per warp straight from their raw bytes into MMA fragments;
//   * inside a thread, the K order of the 8 elements of a 32-bit word is permuted (pairs (i, i+4)),
//     identically for both operands, so no shuffles are needed: a dot product does not care about
//     the order of its terms, only that both sides agree and each term has its own scale;
//   * split-K over gridDim.z with a deterministic reduction: every split writes its FP32 partial
//     tile to the scratch workspace; the last split to arrive (per-tile counter, in a zeroed
//     counter array of its own) adds them in split order and leaves the counter zero. (Splits of
//     2..8 add the same sums in the same order inside a thread-block cluster where the grid's
//     clusters fit: finish_tile_in_cluster.)
// The kernels: direct_gemm.cuh (decode), token_prepass.cuh + wgmma_gemm.cuh (everything larger);
// launcher.cuh runs them.
#pragma once

#include <cuda.h>  // CUtensorMap and the encoder's signature (called through the runtime: no libcuda link)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>  // __nv_fp8_e4m3: the MXFP8 tokens' type (token_prepass.cuh)
#include <cuda_runtime_api.h>

#include "nvfp4_gemm/dtypes.h"  // the block formats' constants (generated from python/nvfp4_gemm/dtypes.py)

#include <cute/arch/mma_sm90_desc.hpp>
#include <cute/arch/mma_sm90_gmma.hpp>

#include <cooperative_groups.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace nvfp4_gemm::sm90 {

namespace detail {

constexpr int kTileN = 128;         // weight rows per CTA
constexpr int kStageK = 128;        // FP4 elements per pipeline stage
constexpr int kStageBytes = 64;     // raw bytes per row per stage
constexpr int kScaleChunk = 512;    // one 128x4 tile of the blocked scale layout
// Floats per token row of the epilogue's FP32 tile [token][weight] in shared memory (4 past the weight
// rows: the kernels' fragment stores spread over the banks).
template <int kTileN>
constexpr int kEpiloguePitch = kTileN + 4;

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

// Eight e2m1 codes -> four bf16x2 in dequant8's pairing (pair i = elements i, i + 4), each value =
// e2m1 * scale * 2^-8; `s` holds scale * 2^118 (exact: e4m3's 3 mantissa bits, and 448 * 2^118 < bf16's
// largest). The e2m1 bits placed at bf16 bits 15 and 8..6 read as e2m1 * 2^-126 (subnormal codes too:
// bf16's smallest normal is 2^-126, its subnormals keep the same spacing), so one multiply gives the value
// with at most 6 significant bits, >= 2^-18: exact. Per pair the low half takes element i and the high
// half element i + 4, 16 bits higher, so one shift serves both.
// Bit work, 11 operations per word (15 with two shifts per pair): a bf16 pair needs its sign 7 bits above
// its magnitude's top bit, a nibble has it 1 bit above. In `low` nibbles 0, 1 of each half keep their
// magnitude and take their sign from x << 6 (9 bits above the magnitude's lowest bit); in `high` nibbles
// 2, 3 keep their sign and take their magnitude from x >> 6. Then one shift per pair (none for nibble 3)
// puts a magnitude at bits 8..6 and its sign at bit 15, and one mask clears the rest.
__device__ __forceinline__ void dequant8(std::uint32_t x, __nv_bfloat162 s, std::uint32_t (&out)[4]) {
  constexpr std::uint32_t kLowMagnitudes = 0x00770077u, kHighSigns = 0x88008800u, kBf16Bits = 0x81C081C0u;
  const std::uint32_t low = select_bits<kLowMagnitudes>(x, x << 6);
  const std::uint32_t high = select_bits<kHighSigns>(x, x >> 6);
  const std::uint32_t bits[4] = {(low << 6) & kBf16Bits, (low << 2) & kBf16Bits, (high << 4) & kBf16Bits,
                                 high & kBf16Bits};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __nv_bfloat162 v = __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&bits[i]), s);
    out[i] = *reinterpret_cast<const std::uint32_t*>(&v);
  }
}

// The MMA operands per kind of token (the GEMM's `a`): NVFP4 tokens (dequantized to fp16 * 2^-7 by the
// token prepass or the direct kernel's staging) and fp16 tokens meet fp16 weights; bf16 tokens meet bf16
// weights (fp16 cannot hold every bf16 value; bf16 holds every e2m1 x e4m3 value and every e2m1 x 2^e,
// |e| <= 125). `kRescale` undoes the tokens' power-of-two factor in the epilogue.
template <class TokenT>
struct Tokens {  // 16-bit tokens (__half, __nv_bfloat16) as given
  using Mma = TokenT;  // the element both MMA operands hold
  static constexpr bool kQuantized = false;
  static constexpr float kRescale = 1.0f;
};
template <>
struct Tokens<std::uint8_t> {  // packed NVFP4 tokens with blocked e4m3 scales
  using Mma = __half;
  static constexpr bool kQuantized = true;
  static constexpr float kRescale = 128.0f;  // 2^7
};

// Per MMA element type: the pair type and the TMA element type of the token workspace.
template <class T>
struct MmaElement;
template <>
struct MmaElement<__half> {
  using Pair = __half2;
  static __device__ __forceinline__ Pair low2(Pair p) { return __low2half2(p); }
  static __device__ __forceinline__ Pair high2(Pair p) { return __high2half2(p); }
  static constexpr CUtensorMapDataType kTmaType = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
};
template <>
struct MmaElement<__nv_bfloat16> {
  using Pair = __nv_bfloat162;
  static __device__ __forceinline__ Pair low2(Pair p) { return __low2bfloat162(p); }
  static __device__ __forceinline__ Pair high2(Pair p) { return __high2bfloat162(p); }
  static constexpr CUtensorMapDataType kTmaType = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
};

// The weights' dequantization per block format and MMA element type: two scale bytes (low 16 bits) ->
// a scale pair (low byte, high byte) in the factor `dequant` expects, eight e2m1 codes -> four pairs in
// dequant8's pairing, and the power of two the values carry (undone by `kRescale` in the epilogue).
template <class Block, class Mma>
struct Weights;
template <>
struct Weights<Nvfp4Format, __half> {  // e2m1 * e4m3 * 2^-7
  static constexpr float kRescale = 128.0f;
  static __device__ __forceinline__ __half2 two_scales(std::uint32_t pair) { return two_scales_to_half2(pair); }
  static __device__ __forceinline__ void dequant(std::uint32_t x, __half2 s, std::uint32_t (&out)[4]) {
    dequant8(x, s, out);
  }
};
template <>
struct Weights<Nvfp4Format, __nv_bfloat16> {  // e2m1 * e4m3 * 2^-8
  static constexpr float kRescale = 256.0f;
  // e4m3 -> bf16 * 2^118 through fp16 and fp32 (exact at every step; once per 16 weights)
  static __device__ __forceinline__ __nv_bfloat162 two_scales(std::uint32_t pair) {
    std::uint32_t h2;
    asm("{\n .reg .b16 s;\n cvt.u16.u32 s, %1;\n cvt.rn.f16x2.e4m3x2 %0, s;\n}\n" : "=r"(h2) : "r"(pair));
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h2));
    constexpr float k2Pow118 = 0x1p118f;
    return __floats2bfloat162_rn(f.x * k2Pow118, f.y * k2Pow118);
  }
  static __device__ __forceinline__ void dequant(std::uint32_t x, __nv_bfloat162 s, std::uint32_t (&out)[4]) {
    dequant8(x, s, out);
  }
};
// MXFP4 weights (ue8m0 scales, 2^(code - 127)): e2m1 * 2^(code - 127) exactly, for codes 2..252 (the
// exponents -125..125 whose products with every e2m1 value are normal bf16 values); a scale outside them
// becomes NaN, so the outputs it feeds are NaN (visible, never a flushed or overflowed value; code 255 is
// NaN by definition).
template <>
struct Weights<MxFormat, __nv_bfloat16> {
  static constexpr float kRescale = 1.0f;
  static __device__ __forceinline__ std::uint32_t scale_bits(std::uint32_t code) {
    return code >= 2 && code <= 252 ? code << 7 : 0x7FC0u;
  }
  static __device__ __forceinline__ __nv_bfloat162 two_scales(std::uint32_t pair) {
    const std::uint32_t bits = scale_bits(pair & 0xFF) | (scale_bits((pair >> 8) & 0xFF) << 16);
    return *reinterpret_cast<const __nv_bfloat162*>(&bits);
  }
  // e2m1 * 2^-126 (the bf16 bit placement) * 2^126 = e2m1 exactly, then one multiply by the scale
  static __device__ __forceinline__ void dequant(std::uint32_t x, __nv_bfloat162 s, std::uint32_t (&out)[4]) {
    constexpr std::uint32_t k2Pow126 = 0x7E807E80u;  // bf16x2 of 2^126
    dequant8(x, *reinterpret_cast<const __nv_bfloat162*>(&k2Pow126), out);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const __nv_bfloat162 v = __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&out[i]), s);
      out[i] = *reinterpret_cast<const std::uint32_t*>(&v);
    }
  }
};

// Blocked-layout scale tiles (128 rows x 4 columns) per pipeline stage of kStageK values: 2 for NVFP4
// (16 values per scale), 1 for MX (32).
template <class Block>
constexpr int kScaleTilesPerStage = kStageK / (Block::kValuesPerScale * Block::kScaleTileCols);

// mma.sync m16n8k16 (direct kernel), FP32 accumulate, in the MMA element type.
__device__ __forceinline__ void mma_m16n8k16(__half, float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                             std::uint32_t b1) {
  mma_f16(c, a, b0, b1);
}
__device__ __forceinline__ void mma_m16n8k16(__nv_bfloat16, float (&c)[4], const std::uint32_t (&a)[4],
                                             std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Sixteen consecutive 16-bit tokens (two 16-byte vectors, elements 0-7 and 8-15) -> the eight pairs in
// dequant8's order: pairs 0-3 = (e_i, e_{i+4}) of elements 0-7, pairs 4-7 the same of elements 8-15.
__device__ __forceinline__ void pair_tokens16(uint4 lo, uint4 hi, std::uint32_t (&out)[8]) {
  out[0] = __byte_perm(lo.x, lo.z, 0x5410);
  out[1] = __byte_perm(lo.x, lo.z, 0x7632);
  out[2] = __byte_perm(lo.y, lo.w, 0x5410);
  out[3] = __byte_perm(lo.y, lo.w, 0x7632);
  out[4] = __byte_perm(hi.x, hi.z, 0x5410);
  out[5] = __byte_perm(hi.x, hi.z, 0x7632);
  out[6] = __byte_perm(hi.y, hi.w, 0x5410);
  out[7] = __byte_perm(hi.y, hi.w, 0x7632);
}

// wgmma m64nNk16 with A (weights) from registers and B (tokens) from shared memory, FP32 accumulate, in
// the MMA element type T.
template <int N, class T>
struct WgmmaAtom;
template <>
struct WgmmaAtom<64, __half> {
  using type = cute::SM90::GMMA::MMA_64x64x16_F32F16F16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
};
template <>
struct WgmmaAtom<128, __half> {
  using type = cute::SM90::GMMA::MMA_64x128x16_F32F16F16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
};
template <>
struct WgmmaAtom<256, __half> {
  using type = cute::SM90::GMMA::MMA_64x256x16_F32F16F16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
};
template <>
struct WgmmaAtom<64, __nv_bfloat16> {
  using type = cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
};
template <>
struct WgmmaAtom<128, __nv_bfloat16> {
  using type =
      cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
};
template <>
struct WgmmaAtom<256, __nv_bfloat16> {
  using type =
      cute::SM90::GMMA::MMA_64x256x16_F32BF16BF16_RS<cute::SM90::GMMA::Major::K, cute::SM90::GMMA::Major::K>;
};

template <int N, class T, std::size_t... I>
__device__ __forceinline__ void wgmma_rs(const std::uint32_t (&a)[4], std::uint64_t desc_b, float* d,
                                         std::index_sequence<I...>) {
  WgmmaAtom<N, T>::type::fma(a[0], a[1], a[2], a[3], desc_b, d[I]..., cute::SM90::GMMA::ScaleOut::One);
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
  int alpha_stride;         // 0: one alpha; 1: alpha[n] per output column
  const void* tokens;       // wgmma kernel: the prepass's (l, m, k) 16-bit tokens in the permuted K order
  float* partials;          // split_k > 1: [l][split][m][n] FP32
  unsigned int* counters;   // split_k > 1: one per output tile, zero between launches
  int m, n, k, l;
  int split_k;
  int stages_total;         // ceil(k / 128)
  long long a_scale_batch;  // bytes of blocked scales per batch
  long long b_scale_batch;
  int scale_cols_padded;    // round_up(k / 16, 4)
  int cluster_split;        // > 1: the split_k CTAs of a tile are one thread-block cluster and add
                            // their tiles through distributed shared memory (no partials)
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

// The factor every output takes where alpha is one value: alpha times the products' rescale (a power of
// two: exact, so a column's factor is alpha's own).
__device__ __forceinline__ float output_scale(const DequantGemmParams& p, float product_rescale) {
  return (p.alpha != nullptr && p.alpha_stride == 0 ? *p.alpha : 1.0f) * product_rescale;
}

// One split's four FP32 partial sums into a running float4 sum (the split-K reductions' step).
__device__ __forceinline__ void add4(float4& sum, float4 v) {
  sum.x += v.x;
  sum.y += v.y;
  sum.z += v.z;
  sum.w += v.w;
}

// Four FP32 sums of output row `row_out` at columns col .. col + 3 -> the output: alpha (one value,
// folded into `scale`, or alpha[n] per column) times the products' rescale, one rounding.
template <class ElementOut>
__device__ __forceinline__ void store_out4(const DequantGemmParams& p, ElementOut* row_out, int col, float4 v,
                                           float scale, float product_rescale) {
  using detail::convert_out;
  ElementOut* dst = row_out + col;
  if (p.alpha_stride != 0) {
    const float4 column_alpha = __ldg(reinterpret_cast<const float4*>(p.alpha + col));
    dst[0] = convert_out<ElementOut>(v.x * (column_alpha.x * product_rescale));
    dst[1] = convert_out<ElementOut>(v.y * (column_alpha.y * product_rescale));
    dst[2] = convert_out<ElementOut>(v.z * (column_alpha.z * product_rescale));
    dst[3] = convert_out<ElementOut>(v.w * (column_alpha.w * product_rescale));
  } else {
    dst[0] = convert_out<ElementOut>(v.x * scale);
    dst[1] = convert_out<ElementOut>(v.y * scale);
    dst[2] = convert_out<ElementOut>(v.z * scale);
    dst[3] = convert_out<ElementOut>(v.w * scale);
  }
}

// Epilogue shared by both kernels: the CTA's FP32 tile [token][weight] (pitch kEpiloguePitch floats,
// in shared memory, complete for every epilogue thread) -> split-K partials / reduction -> output.
// `tid` counts the kNumThreads epilogue threads from 0; `product_rescale` undoes the operands' factors
// (Tokens<...>::kRescale x Weights<...>::kRescale).
template <int kTileM, int kNumThreads, class ElementOut, class Sync, int kTileN = detail::kTileN>
__device__ __forceinline__ void finish_tile(const DequantGemmParams& p, float* tile, int tid, Sync sync,
                                            float product_rescale) {
  using namespace detail;
  constexpr int kPitch = kEpiloguePitch<kTileN>;
  const CtaWork work = cta_work<kTileM, kTileN>(p);
  const int n0 = work.n0, m0 = work.m0, batch = work.batch, split = work.split;
  const float scale = output_scale(p, product_rescale);
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
            *reinterpret_cast<const float4*>(tile + token * kPitch + col);
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
          add4(sum, __ldcg(reinterpret_cast<const float4*>(src)));
        }
        *reinterpret_cast<float4*>(tile + token * kPitch + col) = sum;
      }
    }
    if (tid == 0) p.counters[tile_id] = 0;  // ready for the next launch (and CUDA-graph replays)
    sync();
  }

  // FP32 tile -> output rows, 4 elements per thread per step (N is a multiple of 4 or 8).
  for (int i = tid; i < kTileM * (kTileN / 4); i += kNumThreads) {
    const int token = i / (kTileN / 4), col = (i % (kTileN / 4)) * 4;
    if (m0 + token < p.m && n0 + col < p.n) {
      store_out4<ElementOut>(p, out + static_cast<long long>(m0 + token) * p.n, n0 + col,
                             *reinterpret_cast<const float4*>(tile + token * kPitch + col), scale, product_rescale);
    }
  }
}

// The largest split the cluster route takes: the portable thread-block cluster size.
constexpr int kMaxClusterSplit = 8;

// Split-K epilogue of a tile whose p.cluster_split CTAs form one thread-block cluster: every CTA's FP32
// tile [token][weight] (pitch kEpiloguePitch) stays in its shared memory; each CTA adds its share of the
// tile's 4-column groups over all the cluster's tiles in split order (the order of the global
// reduction: bitwise the same sums) and writes them out. Two cluster barriers replace the partials'
// write, fence, counter and read-back through L2. Every thread of every CTA of the cluster calls it
// (or the two barriers: cluster_barriers_of_epilogue).
template <int kTileM, int kNumThreads, class ElementOut, int kTileN = detail::kTileN>
__device__ __forceinline__ void finish_tile_in_cluster(const DequantGemmParams& p, const float* tile, int tid,
                                                       float product_rescale) {
  namespace cg = cooperative_groups;
  constexpr int kGroups = kTileN / 4;
  constexpr int kPitch = detail::kEpiloguePitch<kTileN>;
  cg::cluster_group cluster = cg::this_cluster();
  const CtaWork work = cta_work<kTileM, kTileN>(p);
  const int splits = p.cluster_split, rank = static_cast<int>(cluster.block_rank());
  const float scale = output_scale(p, product_rescale);
  ElementOut* out = static_cast<ElementOut*>(p.out) + static_cast<long long>(work.batch) * p.m * p.n;
  cluster.sync();  // every split's tile is complete and visible to the cluster
  const int g0 = rank * kGroups / splits, groups = (rank + 1) * kGroups / splits - g0;
  for (int i = tid; i < kTileM * groups; i += kNumThreads) {
    const int token = i / groups, col = (g0 + i % groups) * 4;
    if (work.m0 + token < p.m && work.n0 + col < p.n) {
      float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
      for (int s = 0; s < splits; ++s) {
        add4(sum, *reinterpret_cast<const float4*>(cluster.map_shared_rank(tile, s) + token * kPitch + col));
      }
      store_out4<ElementOut>(p, out + static_cast<long long>(work.m0 + token) * p.n, work.n0 + col, sum, scale,
                             product_rescale);
    }
  }
  cluster.sync();  // no CTA leaves (its shared memory) while another still reads its tile
}

// The cluster barriers of finish_tile_in_cluster, for threads of the CTA that take no share of the sums
// (the wgmma kernel's producer warpgroup): a cluster barrier counts every thread of the cluster.
__device__ __forceinline__ void cluster_barriers_of_epilogue() {
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  cluster.sync();
}

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


// griddepcontrol (sm_90): the token prepass lets its dependent GEMM launch at once; the GEMM's
// producers wait for the prepass's writes only before their first token copy.
__device__ __forceinline__ void launch_dependents() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }
__device__ __forceinline__ void wait_for_prerequisites() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

}  // namespace nvfp4_gemm::sm90
