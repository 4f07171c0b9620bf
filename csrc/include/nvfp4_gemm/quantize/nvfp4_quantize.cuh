// The NVFP4 recipe (formats.quantize_reference): x (rows, k) fp32/fp16/bf16 -> e2m1 codes, blocked e4m3
// scales per 16, and the global scale used. The block walk, loads and layout are quantize_common.cuh's.
//
// The dynamic global scale takes one more pass: `amax_kernel` writes one partial max per CTA and
// the quantize kernel's CTAs reduce those few partials themselves (no atomics, deterministic). The
// amax pass walks x back to front, so the front of x, which the quantize pass reads first, is still
// in L2. It is launched with programmatic dependent launch too. An x that one co-resident grid covers
// at one block per thread (decode) takes quantize_one_pass_kernel instead: partials tagged with the
// call's number, polled until every CTA's has arrived, x read once; a larger x whose last-read part the
// grid can keep on chip takes quantize_resident_kernel: one walk for the max, the same partials, then
// the kept part quantized and the rest re-read (quantize_common.cuh).
#pragma once

#include <type_traits>

#include "nvfp4_gemm/quantize/quantize_common.cuh"

namespace nvfp4_gemm::quantize::detail {

constexpr int kAmaxCtasPerSm = 8;                 // amax CTAs stay resident in one wave (8 x 256 <= 2048 threads)
constexpr int kAmaxLoadsInFlight = 4;             // 8 x 256 x 4 x 16 B = 128 KB of reads in flight per SM
constexpr float kGlobalScaleNumerator = 2688.0f;  // 448 * 6: amax maps onto the largest scale and code

// The global scale and what every block derives from it (formats.quantize_reference).
struct GlobalScale {
  float scale;
  float scale_over_6;  // fp32(gs / 6): a block's scale is e4m3(amax_block * scale_over_6)
  bool valid;          // positive and finite; otherwise every block is NaN
  // On the device: the shared-memory address of a block's reciprocal r per e4m3 scale code, filled once per
  // CTA by cta_context (a table lookup instead of a division per block); unused on the host, where r is
  // divided out per block. A 32-bit shared address, so that the compiler does not rebuild the table's
  // generic address from the CTA's shared window on every block.
  std::uint32_t reciprocal_table = 0;
};
// The one-pass kernel's: one block per thread, so r is divided out there too (no table to fill first).
struct DividingGlobalScale : GlobalScale {};

// formats.global_scale_from_amax: 2688 / amax, the largest finite fp32 where that overflows, 1 for amax 0.
NVFP4_HOST_DEVICE float global_scale_from_amax(float amax) {
  if (!(amax > 0.0f)) return 1.0f;
  return fmin_ordered(div_rn(kGlobalScaleNumerator, amax), FLT_MAX);
}

#ifdef __CUDACC__
// One partial max |x| over finite elements per CTA, walking x's 16-byte vectors back to front,
// kAmaxLoadsInFlight loads issued per thread before their keys are taken.
template <class T>
__global__ void __launch_bounds__(kThreads) amax_kernel(const uint4* x, std::size_t vectors, float* partials) {
  wait_for_predecessor();
  allow_successor();
  std::uint32_t key = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * kThreads;
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * kThreads + threadIdx.x;
  for (; i + (kAmaxLoadsInFlight - 1) * stride < vectors; i += kAmaxLoadsInFlight * stride) {
    uint4 v[kAmaxLoadsInFlight];
#pragma unroll
    for (int j = 0; j < kAmaxLoadsInFlight; ++j) v[j] = x[vectors - 1 - (i + j * stride)];
#pragma unroll
    for (int j = 0; j < kAmaxLoadsInFlight; ++j) key = umax(key, Elements<T>::finite_key(v[j]));
  }
  for (; i < vectors; i += stride) key = umax(key, Elements<T>::finite_key(x[vectors - 1 - i]));
  key = cta_max(key);
  if (threadIdx.x == 0) partials[blockIdx.x] = Elements<T>::key_value(key);
}
#endif  // __CUDACC__

struct Nvfp4Recipe {
  using Block = OperandTraits<OperandFormat::kNvfp4>::Block;
  using Rounding = MiniFloatOf<OperandTraits<OperandFormat::kNvfp4>::Element>::type;
  static constexpr int kBlock = Block::kValuesPerScale;
  static constexpr int kCodeBits = OperandTraits<OperandFormat::kNvfp4>::Element::kBits;
  static constexpr bool kGlobalScale = true;
  static constexpr bool kScaleTable = true;
  static constexpr int kScaleCodes = 127;  // e4m3 codes 0..126: every finite non-negative scale (0x7F is NaN)
  using Context = GlobalScale;
  using OneBlockContext = DividingGlobalScale;

  NVFP4_HOST_DEVICE static float global_scale_from_amax(float amax) { return detail::global_scale_from_amax(amax); }
  NVFP4_HOST_DEVICE static GlobalScale context(float gs) {
    return {gs, div_rn(gs, Rounding::kMaxValue), gs > 0.0f && gs <= FLT_MAX};
  }
  // r = min(gs / scale, FLT_MAX), 0 when the scale is 0
  NVFP4_HOST_DEVICE static float reciprocal(const GlobalScale& gs, float scale) {
    return scale > 0.0f ? fmin_ordered(div_rn(gs.scale, scale), FLT_MAX) : 0.0f;
  }
  NVFP4_HOST_DEVICE static float reciprocal_of_code(const GlobalScale& gs, std::uint32_t code) {
    return reciprocal(gs, minifloat_value<E4M3>(code));
  }

  // Per block of 16: scale = e4m3(amax * fp32(gs / 6)); r = min(gs / scale, FLT_MAX), 0 when the scale is 0;
  // code_i = sign | e2m1(|x_i| * r). A non-finite block, or any block under an invalid gs: NaN scale, codes 0.
  template <class Context>
  NVFP4_HOST_DEVICE static std::uint32_t quantize(const float (&v)[kBlock], std::uint32_t amax_bits,
                                                  const std::uint32_t (&signs)[2], const Context& gs,
                                                  std::uint32_t (&words)[2]) {
    if (!gs.valid || amax_bits > kMaxFiniteBits) return Block::kScaleNanCode;
    const float amax = bits_float(amax_bits);
    const float scaled = mul_rn(amax, gs.scale_over_6);
#ifdef __CUDA_ARCH__
    // the hardware conversion rounds as round_magnitude<E4M3> does (nearest even, subnormals, 448 for
    // everything above); the GPU tests compare these bytes with the host's
    const std::uint32_t code = e4m3_code_satfinite(scaled);
    float r;
    if constexpr (std::is_same_v<Context, DividingGlobalScale>) {
      r = reciprocal_of_code(gs, code);
    } else {
      r = load_shared(gs.reciprocal_table + code * static_cast<std::uint32_t>(sizeof(float)));
    }
#else
    const Rounded scale = round_magnitude<E4M3>(scaled);
    const std::uint32_t code = scale.code;
    const float r = reciprocal(gs, scale.value);
#endif
    encode_block<Rounding, kCodeBits>(v, r, amax, signs, words);
    return code;
  }

#ifdef __CUDACC__
  // Warp 0 of every CTA: the static global scale, or the dynamic one from the amax partials.
  __device__ static float device_global_scale(const QuantizeProblem& p, int amax_partials) {
    if (amax_partials == 0) return *p.global_scale;
    std::uint32_t key = 0;  // the partials are non-negative floats: their bits order like their values
    for (int i = threadIdx.x; i < amax_partials; i += 32) {
      key = umax(key, float_bits(__ldcg(p.amax_scratch->partials + i)));
    }
    return global_scale_from_amax(bits_float(warp_max(key)));
  }

  // The amax pass when the global scale is dynamic; *partials: its partial count (0: static).
  template <class T>
  static cudaError_t launch_prepass(const QuantizeProblem& p, int sm_count, cudaStream_t stream, int* partials) {
    *partials = 0;
    if (p.global_scale != nullptr) return cudaSuccess;
    const std::size_t vectors = static_cast<std::size_t>(p.rows) * p.k * sizeof(T) / sizeof(uint4);
    std::size_t ctas = (vectors + kThreads - 1) / kThreads;
    const std::size_t resident = static_cast<std::size_t>(sm_count) * kAmaxCtasPerSm;
    if (ctas > resident) ctas = resident;
    if (ctas > static_cast<std::size_t>(kMaxAmaxPartials)) ctas = kMaxAmaxPartials;
    if (ctas < 1) ctas = 1;
    *partials = static_cast<int>(ctas);
    return launch_kernel(amax_kernel<T>, dim3(static_cast<unsigned>(ctas)), dim3(kThreads), 0, stream,
                         kProgrammaticLaunch, static_cast<const uint4*>(p.x), vectors, p.amax_scratch->partials);
  }
#endif  // __CUDACC__

  // The same global scale on the host, from the same keys.
  template <class T>
  static float host_global_scale(const QuantizeProblem& p) {
    if (p.global_scale != nullptr) return *p.global_scale;
    const std::size_t vectors = static_cast<std::size_t>(p.rows) * p.k * sizeof(T) / sizeof(uint4);
    const uint4* x = static_cast<const uint4*>(p.x);
    std::uint32_t key = 0;
    for (std::size_t i = 0; i < vectors; ++i) key = umax(key, Elements<T>::finite_key(x[i]));
    return global_scale_from_amax(Elements<T>::key_value(key));
  }
};

}  // namespace nvfp4_gemm::quantize::detail
