// The sm90 family's launcher and registry hooks: one DequantGemm<token tile, out dtype, kernel, weight
// tile, token type, weight block format> per config table row and output dtype (instantiated by the
// generated translation units). Token type: std::uint8_t = packed NVFP4 tokens with blocked scales;
// __half or __nv_bfloat16 = 16-bit tokens used as given (weight-only, W4A16). Weight block format:
// Nvfp4Format, or MxFormat (MXFP4 weights). With MX weights, std::uint8_t = packed MXFP4 tokens and
// __nv_fp8_e4m3 = MXFP8 tokens (ue8m0 scales): dequantized exactly to bf16 by a prepass, then the bf16 x
// MXFP4 kernels. Both follow the row's format.
#pragma once

#include <type_traits>

#include "nvfp4_gemm/dynamic_smem.h"
#include "nvfp4_gemm/kernel_entry.h"
#include "nvfp4_gemm/launch_kernel.h"
#include "nvfp4_gemm/problem.h"
#include "nvfp4_gemm/sm90/direct_gemm.cuh"
#include "nvfp4_gemm/sm90/gemv.cuh"
#include "nvfp4_gemm/sm90/token_prepass.cuh"
#include "nvfp4_gemm/sm90/wgmma_gemm.cuh"

namespace nvfp4_gemm::sm90 {

// Which kernel a config runs (the config table's `mma` field).
enum class Kind { kWgmma, kDirect, kGemv };

// Host side. The TMA tensor map of the prepass's 16-bit tokens: dims (k, m, l), boxes of 64 x box_rows x 1
// in the 128-byte swizzle, zeros outside the tensor (rows past M, K past the end). The driver's encoder
// comes through the runtime (no link against libcuda), looked up once. Encoding takes host time and the
// workspace address is stable per (device, stream), so each thread keeps the last map it encoded.
inline bool tokens_tensor_map(CUtensorMap* map, CUtensorMapDataType data_type, const void* tokens, int k, int m, int l,
                              int box_rows) {
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
    CUtensorMapDataType data_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    int k = 0, m = 0, l = 0, box_rows = 0;
    CUtensorMap map;
  };
  thread_local Cached cached;
  if (cached.tokens == tokens && cached.data_type == data_type && cached.k == k && cached.m == m && cached.l == l &&
      cached.box_rows == box_rows) {
    *map = cached.map;
    return true;
  }
  if (encode == nullptr) return false;
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(m), static_cast<cuuint64_t>(l)};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(k) * 2, static_cast<cuuint64_t>(k) * 2 * m};
  const cuuint32_t box[3] = {64, static_cast<cuuint32_t>(box_rows), 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  if (encode(map, data_type, 3, const_cast<void*>(tokens), dims, strides, box, element_strides,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
    return false;
  }
  cached = Cached{tokens, data_type, k, m, l, box_rows, *map};
  return true;
}

// The GEMM kernel of one (token tile, weight tile, out dtype, kind), named only for its own kind (naming
// the other kind's kernel would instantiate it for tiles it does not support).
template <int kTileM, int kTileN, class ElementOut, Kind kKind, class TokenT, class WeightBlock>
struct GemmKernelOf;

template <int kTileM, int kTileN, class ElementOut, class TokenT, class WeightBlock>
struct GemmKernelOf<kTileM, kTileN, ElementOut, Kind::kWgmma, TokenT, WeightBlock> {
  using Shape = WgmmaShape<kTileM, kTileN, detail::kScaleTilesPerStage<WeightBlock>>;
  using Smem = DynamicSmem<wgmma_gemm_kernel<kTileM, kTileN, ElementOut, TokenT, WeightBlock>>;
  static constexpr int kSmemBytes = Shape::kSmemBytes;
};

template <int kTileM, int kTileN, class ElementOut, class TokenT, class WeightBlock>
struct GemmKernelOf<kTileM, kTileN, ElementOut, Kind::kDirect, TokenT, WeightBlock> {
  using Smem = DynamicSmem<direct_decode_kernel<kTileM, ElementOut, TokenT, WeightBlock>>;
  static constexpr int kSmemBytes = direct::kSmemBytes;
};

template <int kTileM, int kTileN, class ElementOut, class TokenT, class WeightBlock>
struct GemmKernelOf<kTileM, kTileN, ElementOut, Kind::kGemv, TokenT, WeightBlock> {
  using Smem = DynamicSmem<gemv_kernel<kTileM, kTileN, ElementOut, TokenT, WeightBlock>>;
  static constexpr int kSmemBytes = 0;  // static shared memory only
};

// The launcher and its registry hooks for one (token tile, out dtype, kernel, weight tile, token type,
// weight block format).
template <int kTileM, class ElementOut, Kind kKind, int kTileN = detail::kTileN, class TokenT = std::uint8_t,
          class WeightBlock = Nvfp4Format>
struct DequantGemm {
  static_assert(kTileN == detail::kTileN || kKind != Kind::kDirect, "the direct kernel has 128-row tiles");
  // K per unit of split-K work: a pipeline stage, a chunk of the direct kernel, a warp's sweep of the GEMV
  static constexpr int kSplitUnitK = kKind == Kind::kDirect ? direct::kChunkK
                                     : kKind == Kind::kGemv ? 32 * gemv::kChunkK
                                                            : detail::kStageK;
  // MX tokens (MXFP4 x MXFP4, MXFP8 x MXFP4): the GEMM kernel is the weight-only bf16 x MXFP4 one, reading
  // the prepass's exact bf16 tokens (mx_tokens_kernel)
  static constexpr bool kMxTokens = std::is_same_v<WeightBlock, MxFormat> &&
                                    (std::is_same_v<TokenT, std::uint8_t> || std::is_same_v<TokenT, __nv_fp8_e4m3>);
  using GemmTokenT = std::conditional_t<kMxTokens, __nv_bfloat16, TokenT>;
  // the wgmma kernel reads the prepass's 16-bit tokens; the direct kernel reads MX tokens' bf16 from it
  static constexpr bool kPrepass = kKind == Kind::kWgmma || kMxTokens;
  using TokenKind = detail::Tokens<GemmTokenT>;
  static_assert(!TokenKind::kQuantized || std::is_same_v<WeightBlock, Nvfp4Format>, "FP4 tokens are NVFP4 x NVFP4");
  static constexpr bool kScaledTokens = TokenKind::kQuantized || kMxTokens;  // a_scale given
  static_assert(kKind != Kind::kGemv || !kScaledTokens, "the GEMV takes 16-bit tokens as given (weight-only)");

  static int stages_total(const GemmProblem& p) { return (p.k + detail::kStageK - 1) / detail::kStageK; }
  static int tiles(const GemmProblem& p) {
    return ((p.n + kTileN - 1) / kTileN) * ((p.m + kTileM - 1) / kTileM) * p.l;
  }

  static LaunchStatus can_implement(const GemmProblem& p) {
    static_assert(WeightBlock::kKAlignment == 32, "the message below names the K alignment");
    if (p.m < 1 || p.n < 1 || p.l < 1 || p.k < WeightBlock::kKAlignment || p.k % WeightBlock::kKAlignment != 0) {
      return {false, "needs M, N, L >= 1 and K a positive multiple of 32"};
    }
    if (p.n % 4 != 0) return {false, "needs N a multiple of 4"};
    if constexpr (kKind == Kind::kGemv) {
      if (p.m > kTileM) return {false, "the GEMV takes at most its tile's tokens (M <= tile M)"};
      if (p.k < gemv::kMinK) {
        return {false, "the GEMV's FP32 chain needs K >= 544 (the earned tolerance's rounding count)"};
      }
    }
    return {};
  }

  // split_k 2..8: the splits of a tile form one thread-block cluster and reduce through distributed
  // shared memory (finish_tile_in_cluster) where every cluster of the grid can be resident at once
  // (cudaOccupancyMaxActiveClusters, asked once per device, kernel and split); otherwise, as for larger
  // splits, through the global partials (the workspace always holds them). Clusters placed per GPC hold
  // fewer CTAs than the SMs' slots: the direct kernel's 8192x28672 at split 4 (256 CTAs) ran 48.7 -> 73.6
  // us as clusters, 7168x7168 (224 CTAs) 16.2 -> 15.5 us (docs/perf_notes.md, "Hopper v8"); the wgmma
  // kernel's global route costs ~7 us per call (the sm90 model's split term; "Hopper v9").
  template <class Kernel>
  static bool cluster_split(Kernel kernel, const dim3& grid, int threads, int smem_bytes, int split_k, int device) {
    if (split_k < 2 || split_k > kMaxClusterSplit || device < 0 || device >= 64) return false;
    static int fitting[64][kMaxClusterSplit + 1] = {};  // resident clusters + 1 (0: not asked yet)
    int& cached = fitting[device][split_k];
    // a failed query counts as no cluster resident: the global reduction serves
    if (cached == 0) cached = resident_clusters(kernel, threads, smem_bytes, split_k) + 1;
    const long long ctas = static_cast<long long>(grid.x) * grid.y * grid.z;
    return ctas <= static_cast<long long>(cached - 1) * split_k;
  }

  // The prepass's 16-bit tokens come first, then the split-K partials, each 256-byte aligned.
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

  // The GEMM kernel this instantiation launches (after the prepass, if any) and its shared memory.
  using KernelOf = GemmKernelOf<kTileM, kTileN, ElementOut, kKind, GemmTokenT, WeightBlock>;
  using Smem = typename KernelOf::Smem;
  static constexpr int kDynamicSmemBytes = KernelOf::kSmemBytes;
  static int dynamic_smem_attribute() { return Smem::attribute(); }

  // The token prepass into the workspace (params.tokens): one thread per 32-token segment.
  static bool launch_prepass(const DequantGemmParams& params, const GemmProblem& p, cudaStream_t stream) {
    const long long segments = static_cast<long long>(p.l) * p.m * (p.k / prepass::kSegmentK);
    const unsigned blocks = static_cast<unsigned>((segments + prepass::kThreads - 1) / prepass::kThreads);
    if constexpr (kMxTokens) {
      mx_tokens_kernel<TokenT, kKind == Kind::kWgmma><<<blocks, prepass::kThreads, 0, stream>>>(params);
    } else if constexpr (TokenKind::kQuantized) {
      dequant_tokens_kernel<prepass::kSegmentK><<<blocks, prepass::kThreads, 0, stream>>>(params);
    } else {
      permute_tokens_kernel<TokenT><<<blocks, prepass::kThreads, 0, stream>>>(params);
    }
    return cudaGetLastError() == cudaSuccess;
  }

  static LaunchStatus launch(const GemmProblem& p, const LaunchContext& ctx) {
    LaunchStatus ok = can_implement(p);
    if (!ok.ok) return ok;
    if (ctx.split_k < 1) return {false, "split_k must be at least 1"};
    if (kScaledTokens != (p.a_scale_blocked != nullptr)) {
      return {false, kScaledTokens ? "block-scaled tokens need a_scale" : "16-bit tokens take no a_scale"};
    }
    const int split_k = ctx.split_k;
    if (kKind == Kind::kGemv && (split_k > gemv::kMaxSplit || (split_k & (split_k - 1)) != 0)) {
      return {false, "the GEMV splits K over 1, 2 or 4 warps of a CTA (split_k 1, 2 or 4)"};
    }
    if (split_k > (p.k + kSplitUnitK - 1) / kSplitUnitK) {
      return {false, "split_k larger than the number of K split units (128 elements; the GEMV's 1024)"};
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
    params.alpha_stride = p.alpha_per_column ? 1 : 0;
    params.m = p.m;
    params.n = p.n;
    params.k = p.k;
    params.l = p.l;
    params.split_k = split_k;
    params.stages_total = stages_total(p);
    using Format = WeightBlock;  // scaled tokens share it (static_asserts above)
    params.scale_cols_padded =
        (p.k / Format::kValuesPerScale + Format::kScaleTileCols - 1) / Format::kScaleTileCols * Format::kScaleTileCols;
    const auto padded_rows = [](int rows) {
      return static_cast<long long>((rows + Format::kScaleTileRows - 1) / Format::kScaleTileRows) *
             Format::kScaleTileRows;
    };
    params.a_scale_batch = padded_rows(p.m) * params.scale_cols_padded;
    params.b_scale_batch = padded_rows(p.n) * params.scale_cols_padded;
    std::uint8_t* workspace = static_cast<std::uint8_t*>(ctx.workspace);
    if (kPrepass) params.tokens = workspace;
    if (split_k > 1) {
      params.counters = ctx.counters;
      params.partials = reinterpret_cast<float*>(workspace + token_bytes(p));
    }
    // Above 48 KB the kernel opts in to its dynamic shared memory, once per device (dynamic_smem.h).
    if (!Smem::opt_in(ctx.device_id, kDynamicSmemBytes)) {
      return {false, "cudaFuncSetAttribute(max dynamic shared memory) failed"};
    }
    const dim3 grid((p.n + kTileN - 1) / kTileN, (p.m + kTileM - 1) / kTileM, p.l * split_k);
    if constexpr (kKind == Kind::kWgmma) {
      using Shape = typename KernelOf::Shape;
      auto kernel = wgmma_gemm_kernel<kTileM, kTileN, ElementOut, GemmTokenT, WeightBlock>;
      CUtensorMap tokens_map;
      if (!tokens_tensor_map(&tokens_map, detail::MmaElement<typename TokenKind::Mma>::kTmaType, params.tokens, p.k, p.m, p.l,
                             kTileM)) {
        return {false, "cuTensorMapEncodeTiled failed for the prepass's 16-bit tokens"};
      }
      params.cluster_split =
          cluster_split(kernel, grid, Shape::kThreads, Shape::kSmemBytes, split_k, ctx.device_id) ? split_k : 0;
      if (!launch_prepass(params, p, ctx.stream)) return {false, "token prepass launch failed"};
      // programmatic: it starts while the prepass runs and waits for its tokens before the first token copy
      const LaunchAttributes attributes{/*programmatic=*/true, /*cooperative=*/false, params.cluster_split};
      if (launch_kernel(kernel, grid, dim3(Shape::kThreads), Shape::kSmemBytes, ctx.stream, attributes, params,
                        tokens_map) != cudaSuccess) {
        return {false, "kernel launch failed"};
      }
    } else if constexpr (kKind == Kind::kGemv) {
      // 16-bit tokens from any kernel: a plain launch, like the direct kernel's weight-only rows
      // (the grid: groups of 4 rows, 4 / split_k per CTA; one token tile (M <= tile M); L batches)
      const LaunchAttributes attributes{/*programmatic=*/false, /*cooperative=*/false, /*cluster_z=*/1};
      const int rows_per_cta = gemv_rows_per_cta<kTileN>(split_k);
      const dim3 gemv_grid((p.n + rows_per_cta - 1) / rows_per_cta, 1, p.l);
      if (launch_kernel(gemv_kernel<kTileM, kTileN, ElementOut, TokenT, WeightBlock>, gemv_grid, dim3(gemv::kThreads), 0,
                        ctx.stream, attributes, params) != cudaSuccess) {
        return {false, "kernel launch failed"};
      }
    } else {
      auto kernel = direct_decode_kernel<kTileM, ElementOut, GemmTokenT, WeightBlock>;
      params.cluster_split =
          cluster_split(kernel, grid, direct::kThreads, direct::kSmemBytes, split_k, ctx.device_id) ? split_k : 0;
      if constexpr (kMxTokens) {  // the direct kernel stages the prepass's bf16 tokens
        if (!launch_prepass(params, p, ctx.stream)) return {false, "token prepass launch failed"};
        params.a = static_cast<const std::uint8_t*>(params.tokens);
      }
      // NVFP4 tokens come from the quantize op, which lets its dependents launch at its start: launched
      // programmatically, this grid is resident and waiting when the quantize ends (the kernel reads its
      // weights after the wait: any kernel may have written them). 16-bit tokens (weight-only) come from
      // any kernel: a plain launch, whose first weight loads go before a wait that returns at once.
      const bool programmatic = kMxTokens || TokenKind::kQuantized;
      // cluster_split > 1: the splits of a tile are one thread-block cluster along z
      const LaunchAttributes attributes{programmatic, /*cooperative=*/false, params.cluster_split};
      if (launch_kernel(kernel, grid, dim3(direct::kThreads), direct::kSmemBytes, ctx.stream, attributes, params) !=
          cudaSuccess) {
        return {false, "kernel launch failed"};
      }
    }
    return {};
  }
};

}  // namespace nvfp4_gemm::sm90

namespace nvfp4_gemm::sm90 {

// The registry entry for one instantiation; the generator emits one call per (config, out dtype), with
// the family's compute capability major (python/nvfp4_gemm/families.py).
template <class Kernel>
constexpr KernelEntry make_entry(const char* config_name, OutDtype out_dtype, int sm_major) {
  return KernelEntry{config_name,          out_dtype,       sm_major,
                     &Kernel::can_implement, &Kernel::workspace_bytes, &Kernel::counters_needed, &Kernel::launch,
                     /*scale_offsets=*/nullptr, /*host_reference=*/nullptr, /*pipeline_stages=*/0,
                     /*prepare=*/nullptr,  Kernel::kDynamicSmemBytes, &Kernel::dynamic_smem_attribute};
}

}  // namespace nvfp4_gemm::sm90
