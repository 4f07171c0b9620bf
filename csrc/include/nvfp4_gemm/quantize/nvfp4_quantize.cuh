// NVFP4 quantization kernels: x (rows, k) fp32/fp16/bf16 -> e2m1 codes, blocked e4m3 scales, and the
// global scale used. Plain CUDA (no architecture-specific instruction but the PDL controls of
// sm_90+), so the same source serves Hopper and Blackwell.
//
// Exactness by construction: every rounding is one IEEE fp32 operation with round-to-nearest-even,
// written with the _rn intrinsics (never contracted into an FMA), in the order of
// formats.quantize_reference; the rounding to e2m1 and e4m3 is itself one fp32 addition
// (round_magnitude). The per-block function runs unchanged on the host (quantize_on_host), so the
// CPU tests prove this arithmetic against the reference; the GPU tests compare the device's bytes.
//
// Work: thread (row, scale column) quantizes one block of 16 elements per step (one 32-byte read
// of bf16 x, an 8-byte code write, a scale byte), striding down the rows with the next step's block
// loaded ahead, so a warp reads 32 consecutive blocks of a row. Threads of the padding rows and
// columns write the zero scale bytes.
// The dynamic global scale takes one more pass: `amax_kernel` writes one partial max per CTA and
// the quantize kernel's CTAs reduce those few partials themselves (no atomics, no zeroed memory,
// deterministic). The amax pass walks x back to front, so the front of x, which the quantize pass
// reads first, is still in L2. Both kernels are launched with programmatic dependent launch and
// wait for their predecessor before touching memory.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "nvfp4_gemm/quantize/quantize.h"

#ifdef __CUDACC__
#define NVFP4_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define NVFP4_HOST_DEVICE inline
#endif

namespace nvfp4_gemm::quantize {

namespace detail {

constexpr int kThreads = 256;
constexpr int kBlock = 16;                        // elements per e4m3 scale
constexpr int kAmaxCtasPerSm = 4;                 // amax CTAs stay resident in one wave (4 x 256 <= 2048 threads)
constexpr float kGlobalScaleNumerator = 2688.0f;  // 448 * 6: amax maps onto the largest scale and code
constexpr std::uint32_t kE4M3Nan = 0x7F;
constexpr std::uint32_t kMagnitudeMask = 0x7FFFFFFFu;
constexpr std::uint32_t kExponentMask = 0x7F800000u;
constexpr std::uint32_t kMaxFiniteBits = 0x7F7FFFFFu;

NVFP4_HOST_DEVICE std::uint32_t float_bits(float v) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(v);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
#endif
}
NVFP4_HOST_DEVICE float bits_float(std::uint32_t bits) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits);
#else
  float v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
#endif
}

// One IEEE operation each, rounded to nearest even. On the device the intrinsics keep nvcc from
// fusing a multiply and an add into an FMA (one rounding where the recipe has two); the host side
// of the TU is compiled with -ffp-contract=off for the same reason.
NVFP4_HOST_DEVICE float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
NVFP4_HOST_DEVICE float add_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
NVFP4_HOST_DEVICE float sub_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
NVFP4_HOST_DEVICE float div_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
NVFP4_HOST_DEVICE std::uint32_t umax(std::uint32_t a, std::uint32_t b) { return a > b ? a : b; }
// min for operands that are never NaN where it is used (finite or +inf)
NVFP4_HOST_DEVICE float fmin_ordered(float a, float b) { return a < b ? a : b; }

// A small unsigned float format as data (formats.MiniFloat): stored mantissa bits, exponent of the
// smallest normal, largest finite magnitude code.
template <int kMantissaBits_, int kMinExponent, std::uint32_t kMaxCode>
struct MiniFloat {
  static constexpr int kMantissaBits = kMantissaBits_;
  static constexpr int kMaxExponent = kMinExponent + static_cast<int>(kMaxCode >> kMantissaBits) - 1;
  static constexpr std::uint32_t kFraction = kMaxCode & ((1u << kMantissaBits) - 1);
  static constexpr float kMaxValue =
      (1.0f + static_cast<float>(kFraction) / (1 << kMantissaBits)) * static_cast<float>(1u << kMaxExponent);
  static constexpr std::uint32_t kMinExponentBits = static_cast<std::uint32_t>(kMinExponent + 127) << 23;
};
using E2M1 = MiniFloat<1, 0, 0x7>;    // 0 .. 6
using E4M3 = MiniFloat<3, -6, 0x7E>;  // 0 .. 448 (0x7F is NaN)
static_assert(E2M1::kMaxValue == 6.0f && E4M3::kMaxValue == 448.0f, "format constants");

struct Rounded {
  std::uint32_t code;
  float value;
};

// formats.round_magnitude: `a` >= 0, finite or +inf, to nearest even in Format, saturating at its
// largest value (clamped to it first). With E = max(exponent of a, min exponent), a + 2^(E + 23 - m)
// lands in the binade whose fp32 spacing is the format's spacing at a: that one addition is the
// rounding (subnormals included), and the sum's low bits count its steps above the binade's start.
template <class Format>
NVFP4_HOST_DEVICE Rounded round_magnitude(float a) {
  constexpr int kShift = 23 - Format::kMantissaBits;
  a = fmin_ordered(a, Format::kMaxValue);
  const std::uint32_t exponent_bits = umax(float_bits(a) & kExponentMask, Format::kMinExponentBits);
  const std::uint32_t magic_bits = exponent_bits + (static_cast<std::uint32_t>(kShift) << 23);
  const float magic = bits_float(magic_bits);
  const float total = add_rn(a, magic);
  // (total - magic) steps + 2^m codes per binade above the smallest normal's, as one IADD3 and one
  // LEA: the exponent bits have no low bits, so (e - e_min) >> 23 << m == (e >> kShift) - (e_min >> kShift)
  const std::uint32_t code = (float_bits(total) - exponent_bits - ((static_cast<std::uint32_t>(kShift) << 23) +
                                                                   (Format::kMinExponentBits >> kShift))) +
                             (exponent_bits >> kShift);
  return {code, sub_rn(total, magic)};
}

// The global scale and what every block derives from it (formats.quantize_reference).
struct GlobalScale {
  float scale;
  float scale_over_6;  // fp32(gs / 6): a block's scale is e4m3(amax_block * scale_over_6)
  bool valid;          // positive and finite; otherwise every block is NaN
};

NVFP4_HOST_DEVICE GlobalScale make_global_scale(float gs) {
  return {gs, div_rn(gs, E2M1::kMaxValue), gs > 0.0f && gs <= FLT_MAX};
}

// formats.global_scale_from_amax: 2688 / amax, the largest finite fp32 where that overflows, 1 for amax 0.
NVFP4_HOST_DEVICE float global_scale_from_amax(float amax) {
  if (!(amax > 0.0f)) return 1.0f;
  return fmin_ordered(div_rn(kGlobalScaleNumerator, amax), FLT_MAX);
}

// formats.gemm_alpha: 1 / (gs * partner) in float64, rounded once to fp32.
NVFP4_HOST_DEVICE float gemm_alpha(float gs, float partner) {
  return static_cast<float>(1.0 / (static_cast<double>(gs) * static_cast<double>(partner)));
}

// Offset of scale (row, col) in the cuBLAS 128x4 blocked layout (docs/formats.md).
NVFP4_HOST_DEVICE std::size_t blocked_offset(int row, int col, int cols_padded) {
  return (static_cast<std::size_t>(row / 128) * (cols_padded / 4) + col / 4) * 512 + (row % 32) * 16 +
         ((row % 128) / 32) * 4 + col % 4;
}

// The quantize pass is x's last use: a streaming load on the device.
NVFP4_HOST_DEVICE uint4 load_last_use(const uint4* p) {
#ifdef __CUDA_ARCH__
  return __ldcs(p);
#else
  return *p;
#endif
}

// How a block of 16 elements of each input type becomes floats (exact: fp16 and bf16 values are
// fp32 values), and its largest finite magnitude as an order-preserving integer key.
template <class T>
struct Elements;

template <>
struct Elements<float> {
  static constexpr int kVectors = 4;  // uint4 per block
  NVFP4_HOST_DEVICE static void to_float(const uint4 (&raw)[kVectors], float (&v)[kBlock]) {
    for (int i = 0; i < kVectors; ++i) {
      v[4 * i + 0] = bits_float(raw[i].x);
      v[4 * i + 1] = bits_float(raw[i].y);
      v[4 * i + 2] = bits_float(raw[i].z);
      v[4 * i + 3] = bits_float(raw[i].w);
    }
  }
  NVFP4_HOST_DEVICE static std::uint32_t finite_key(const uint4& raw) {
    const std::uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
    std::uint32_t key = 0;
    for (std::uint32_t w : words) {
      const std::uint32_t magnitude = w & kMagnitudeMask;
      key = umax(key, magnitude <= kMaxFiniteBits ? magnitude : 0u);
    }
    return key;
  }
  NVFP4_HOST_DEVICE static float key_value(std::uint32_t key) { return bits_float(key); }
  // fp32 bits of the block's largest magnitude (NaN and inf above every finite value)
  NVFP4_HOST_DEVICE static std::uint32_t block_magnitude_bits(const uint4 (&raw)[kVectors]) {
    std::uint32_t bits = 0;
    for (int i = 0; i < kVectors; ++i) {
      bits = umax(umax(bits, raw[i].x & kMagnitudeMask), raw[i].y & kMagnitudeMask);
      bits = umax(umax(bits, raw[i].z & kMagnitudeMask), raw[i].w & kMagnitudeMask);
    }
    return bits;
  }
};

// Per-halfword unsigned max of two pairs of 16-bit values (one SIMD instruction on the device).
NVFP4_HOST_DEVICE std::uint32_t umax_halves(std::uint32_t a, std::uint32_t b) {
#ifdef __CUDA_ARCH__
  return __vmaxu2(a, b);
#else
  return umax(a & 0xFFFFu, b & 0xFFFFu) | (umax(a >> 16, b >> 16) << 16);
#endif
}

// bf16 and fp16 share the 16-bit handling; only their bits -> float conversion differs.
template <class Derived>
struct HalfElements {
  static constexpr int kVectors = 2;
  NVFP4_HOST_DEVICE static void to_float(const uint4 (&raw)[kVectors], float (&v)[kBlock]) {
    for (int i = 0; i < kVectors; ++i) {
      const std::uint32_t words[4] = {raw[i].x, raw[i].y, raw[i].z, raw[i].w};
      for (int j = 0; j < 4; ++j) {
        v[8 * i + 2 * j] = Derived::half_to_float(words[j] & 0xFFFFu);
        v[8 * i + 2 * j + 1] = Derived::half_to_float(words[j] >> 16);
      }
    }
  }
  // magnitude bits of the largest finite element: for 16-bit floats their order is the values' order
  NVFP4_HOST_DEVICE static std::uint32_t finite_key(const uint4& raw) {
    const std::uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
    std::uint32_t key = 0;
    for (std::uint32_t w : words) {
      const std::uint32_t low = w & 0x7FFFu, high = (w >> 16) & 0x7FFFu;
      key = umax(key, low < Derived::kNonFiniteBits ? low : 0u);
      key = umax(key, high < Derived::kNonFiniteBits ? high : 0u);
    }
    return key;
  }
  NVFP4_HOST_DEVICE static float key_value(std::uint32_t key) { return Derived::half_to_float(key); }
  NVFP4_HOST_DEVICE static std::uint32_t block_magnitude_bits(const uint4 (&raw)[kVectors]) {
    constexpr std::uint32_t kMagnitudes = 0x7FFF7FFFu;
    std::uint32_t pairs = 0;  // the halves' magnitude bits order like their values, NaN and inf on top
    for (int i = 0; i < kVectors; ++i) {
      pairs = umax_halves(pairs, umax_halves(raw[i].x & kMagnitudes, raw[i].y & kMagnitudes));
      pairs = umax_halves(pairs, umax_halves(raw[i].z & kMagnitudes, raw[i].w & kMagnitudes));
    }
    return float_bits(Derived::half_to_float(umax(pairs & 0xFFFFu, pairs >> 16)));
  }
};

template <>
struct Elements<__nv_bfloat16> : HalfElements<Elements<__nv_bfloat16>> {
  static constexpr std::uint32_t kNonFiniteBits = 0x7F80u;
  NVFP4_HOST_DEVICE static float half_to_float(std::uint32_t bits) { return bits_float(bits << 16); }
};

template <>
struct Elements<__half> : HalfElements<Elements<__half>> {
  static constexpr std::uint32_t kNonFiniteBits = 0x7C00u;
  NVFP4_HOST_DEVICE static float half_to_float(std::uint32_t bits) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
  }
};

// Block (row, col) of x: inside the tensor unless it is the layout's padding (rows past `rows`,
// columns past k/16), whose scale byte is zero and which has no codes.
NVFP4_HOST_DEVICE bool inside(const QuantizeProblem& p, int row, int col) { return row < p.rows && col < p.k / kBlock; }
NVFP4_HOST_DEVICE std::size_t first_element(const QuantizeProblem& p, int row, int col) {
  return static_cast<std::size_t>(row) * p.k + static_cast<std::size_t>(col) * kBlock;
}

template <class T>
NVFP4_HOST_DEVICE void load_block(const QuantizeProblem& p, int row, int col, uint4 (&raw)[Elements<T>::kVectors]) {
  if (!inside(p, row, col)) return;
  const uint4* src = reinterpret_cast<const uint4*>(static_cast<const T*>(p.x) + first_element(p, row, col));
  for (int i = 0; i < Elements<T>::kVectors; ++i) raw[i] = load_last_use(src + i);
}

// Quantize block (row, col) from its loaded bytes: the scale byte into the blocked layout and, inside
// the tensor, the 16 codes.
template <class T>
NVFP4_HOST_DEVICE void quantize_block(const QuantizeProblem& p, const GlobalScale& gs, int row, int col,
                                      int cols_padded, const uint4 (&raw)[Elements<T>::kVectors]) {
  std::uint32_t scale_byte = 0;
  if (inside(p, row, col)) {
    using E = Elements<T>;
    float v[kBlock];
    E::to_float(raw, v);
    const std::uint32_t amax_bits = E::block_magnitude_bits(raw);
    std::uint32_t words[2] = {0, 0};
    if (!gs.valid || amax_bits > kMaxFiniteBits) {
      scale_byte = kE4M3Nan;  // codes 0: the whole block dequantizes to NaN
    } else {
      const Rounded scale = round_magnitude<E4M3>(mul_rn(bits_float(amax_bits), gs.scale_over_6));
      scale_byte = scale.code;
      const float reciprocal = scale.value > 0.0f ? fmin_ordered(div_rn(gs.scale, scale.value), FLT_MAX) : 0.0f;
      for (int i = 0; i < kBlock; ++i) {
        const std::uint32_t sign = (float_bits(v[i]) >> 28) & 0x8u;
        const std::uint32_t code = round_magnitude<E2M1>(mul_rn(fabsf(v[i]), reciprocal)).code | sign;
        words[i / 8] |= code << (4 * (i % 8));
      }
    }
    *reinterpret_cast<uint2*>(p.fp4 + first_element(p, row, col) / 2) = make_uint2(words[0], words[1]);
  }
  p.scale_blocked[blocked_offset(row, col, cols_padded)] = static_cast<std::uint8_t>(scale_byte);
}

NVFP4_HOST_DEVICE int cols_padded_of(int k) { return (k / kBlock + 3) / 4 * 4; }
NVFP4_HOST_DEVICE int rows_padded_of(int rows) { return (rows + 127) / 128 * 128; }

#ifdef __CUDACC__

// Programmatic dependent launch: wait for the preceding grid's completion (and its memory) before
// touching memory; let the next grid start launching early (it waits in the same way).
__device__ __forceinline__ void wait_for_predecessor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void allow_successor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

__device__ __forceinline__ std::uint32_t warp_max(std::uint32_t v) {
  for (int offset = 16; offset > 0; offset /= 2) v = umax(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset));
  return v;
}

// One partial max |x| over finite elements per CTA, walking x's 16-byte vectors back to front.
template <class T>
__global__ void __launch_bounds__(kThreads) amax_kernel(const uint4* x, std::size_t vectors, float* partials) {
  wait_for_predecessor();
  allow_successor();
  __shared__ std::uint32_t warp_keys[kThreads / 32];
  std::uint32_t key = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * kThreads;
#pragma unroll 4
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * kThreads + threadIdx.x; i < vectors; i += stride) {
    key = umax(key, Elements<T>::finite_key(x[vectors - 1 - i]));
  }
  key = warp_max(key);
  if (threadIdx.x % 32 == 0) warp_keys[threadIdx.x / 32] = key;
  __syncthreads();
  if (threadIdx.x < 32) {
    key = warp_max(threadIdx.x < kThreads / 32 ? warp_keys[threadIdx.x] : 0u);
    if (threadIdx.x == 0) partials[blockIdx.x] = Elements<T>::key_value(key);
  }
}

// amax_partials > 0: the dynamic global scale from that many partials; 0: the static one.
template <class T>
__global__ void __launch_bounds__(kThreads)
    quantize_kernel(QuantizeProblem p, int amax_partials, int rows_per_step, int cols_padded, int rows_padded) {
  wait_for_predecessor();
  allow_successor();
  __shared__ float block_gs;
  if (threadIdx.x < 32) {
    float gs;
    if (amax_partials > 0) {
      std::uint32_t key = 0;  // the partials are non-negative floats: their bits order like their values
      for (int i = threadIdx.x; i < amax_partials; i += 32) key = umax(key, float_bits(p.amax_partials[i]));
      gs = global_scale_from_amax(bits_float(warp_max(key)));
    } else {
      gs = *p.global_scale;
    }
    if (threadIdx.x == 0) {
      block_gs = gs;
      if (blockIdx.x == 0) {
        *p.global_scale_out = gs;
        *p.alpha_out = gemm_alpha(gs, p.partner_global_scale != nullptr ? *p.partner_global_scale : 1.0f);
      }
    }
  }
  __syncthreads();
  const GlobalScale gs = make_global_scale(block_gs);
  const int t = blockIdx.x * kThreads + threadIdx.x;
  if (t >= rows_per_step * cols_padded) return;
  const int col = t % cols_padded;
  // The next step's block is loaded before this one is quantized: every warp keeps a load in flight
  // while it computes.
  uint4 raw[Elements<T>::kVectors] = {};
  int row = t / cols_padded;
  load_block<T>(p, row, col, raw);
  for (; row < rows_padded; row += rows_per_step) {
    uint4 next[Elements<T>::kVectors] = {};
    load_block<T>(p, row + rows_per_step, col, next);
    quantize_block<T>(p, gs, row, col, cols_padded, raw);
    for (int i = 0; i < Elements<T>::kVectors; ++i) raw[i] = next[i];
  }
}

template <class Kernel, class... Args>
cudaError_t launch_with_pdl(Kernel kernel, int grid, cudaStream_t stream, Args... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(kThreads);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, args...);
}

// Resident quantize CTAs per SM, asked once per device: the grid fills the GPU once and strides.
template <class T>
int quantize_ctas_per_sm(int device) {
  static int cache[64] = {};
  if (device < 0 || device >= 64) return 1;
  if (cache[device] == 0) {
    int ctas = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, quantize_kernel<T>, kThreads, 0) != cudaSuccess ||
        ctas < 1) {
      ctas = 1;
    }
    cache[device] = ctas;
  }
  return cache[device];
}

template <class T>
LaunchStatus launch(const QuantizeProblem& p, int device, int sm_count, cudaStream_t stream) {
  const int cols_padded = cols_padded_of(p.k);
  const int rows_padded = rows_padded_of(p.rows);
  const long long target_threads = static_cast<long long>(sm_count) * quantize_ctas_per_sm<T>(device) * kThreads;
  long long rows_per_step = target_threads / cols_padded;
  if (rows_per_step > rows_padded) rows_per_step = rows_padded;
  if (rows_per_step < 1) rows_per_step = 1;
  // as many steps as that needs, with the rows spread evenly over them (no short last step)
  const long long steps = (rows_padded + rows_per_step - 1) / rows_per_step;
  if (steps > 0) rows_per_step = (rows_padded + steps - 1) / steps;
  const int grid = static_cast<int>((rows_per_step * cols_padded + kThreads - 1) / kThreads);
  int partials = 0;
  if (p.global_scale == nullptr) {
    const std::size_t vectors = static_cast<std::size_t>(p.rows) * p.k * sizeof(T) / sizeof(uint4);
    std::size_t ctas = (vectors + kThreads - 1) / kThreads;
    const std::size_t resident = static_cast<std::size_t>(sm_count) * kAmaxCtasPerSm;
    if (ctas > resident) ctas = resident;
    if (ctas > static_cast<std::size_t>(kMaxAmaxPartials)) ctas = kMaxAmaxPartials;
    if (ctas < 1) ctas = 1;
    partials = static_cast<int>(ctas);
    const cudaError_t err =
        launch_with_pdl(amax_kernel<T>, partials, stream, static_cast<const uint4*>(p.x), vectors, p.amax_partials);
    if (err != cudaSuccess) return {false, cudaGetErrorString(err)};
  }
  const cudaError_t err = launch_with_pdl(quantize_kernel<T>, grid, stream, p, partials,
                                          static_cast<int>(rows_per_step), cols_padded, rows_padded);
  if (err != cudaSuccess) return {false, cudaGetErrorString(err)};
  return {};
}

#endif  // __CUDACC__

// The same blocks on the host: the global scale from the same keys, then every (row, col) in turn.
template <class T>
void quantize_on_host(const QuantizeProblem& p) {
  float gs;
  if (p.global_scale != nullptr) {
    gs = *p.global_scale;
  } else {
    const std::size_t vectors = static_cast<std::size_t>(p.rows) * p.k * sizeof(T) / sizeof(uint4);
    const uint4* x = static_cast<const uint4*>(p.x);
    std::uint32_t key = 0;
    for (std::size_t i = 0; i < vectors; ++i) key = umax(key, Elements<T>::finite_key(x[i]));
    gs = global_scale_from_amax(Elements<T>::key_value(key));
  }
  *p.global_scale_out = gs;
  *p.alpha_out = gemm_alpha(gs, p.partner_global_scale != nullptr ? *p.partner_global_scale : 1.0f);
  const GlobalScale scale = make_global_scale(gs);
  const int cols_padded = cols_padded_of(p.k);
  const int rows_padded = rows_padded_of(p.rows);
  for (int row = 0; row < rows_padded; ++row) {
    for (int col = 0; col < cols_padded; ++col) {
      uint4 raw[Elements<T>::kVectors];
      load_block<T>(p, row, col, raw);
      quantize_block<T>(p, scale, row, col, cols_padded, raw);
    }
  }
}

}  // namespace detail
}  // namespace nvfp4_gemm::quantize
