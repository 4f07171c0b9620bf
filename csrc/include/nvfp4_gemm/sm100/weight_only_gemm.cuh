// Blackwell (sm_100 family) weight-only GEMM (W4A16: fp16/bf16 activations as given x NVFP4 weights) through
// CUTLASS's sm100 mixed-input GemmUniversal (KernelTmaWarpSpecialized1SmMixedInputSm100, CUTLASS 4.2; its
// example 86 shows the int4 case): out = alpha * a @ dequant(b).T, FP32 accumulation, one rounding.
//
// Operand mapping: the mixed-input collective converts its A operand in registers, so the kernel's A is
// the user's b (the weights, (L, N, K/2) e2m1, K-major = row-major (N, K)) and its B the user's a (the
// tokens, (L, M, K) 16-bit, K-major = column-major (K, M)); D = A B^T is (N, M) column-major, the user's
// row-major (M, N) output (the swap-AB orientation of blockscaled_gemm.cuh, always).
//
// Exactness: CUTLASS converts each e2m1 value to the tokens' type and multiplies it by its scale in that
// type (mixed_input_utils.hpp, dequantize_A_kblock_for_transform: __hmul2 for bf16); every e2m1 x e4m3
// product is a normal fp16 and bf16 value (at most 6 significant bits, magnitudes 2^-10 .. 2688), so the
// weights the MMA sees are the exact dequantized values, and the fp32 accumulation and the epilogue's
// alpha * acc are those of the block-scaled kernels. That path scales only when the scale type is the
// tokens' type, which is the scale type here.
//
// Scales: the collective reads one scale per (weight row, 16 K values) through its own plain layout
// (Sm100MixedInputBlockwiseScaleConfig<1, 16>, N contiguous: N % 8 keeps its rows TMA-aligned), not the
// cuBLAS 128x4 blocked layout, and in the tokens' type. So every launch first converts the user's blocked
// e4m3 bytes into that layout in the workspace (relayout_scales_kernel: L x K/16 x N values, 2 bytes each;
// a weight of N x K reads K N / 16 bytes and writes K N / 8 there). The mapping is one function
// (scale_source_offset) that the kernel and the host proof both use.
#pragma once

#include <cuda_runtime_api.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/detail/sm100_mixed_dtype_blockwise_layout.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>

#include "nvfp4_gemm/blocked_layout.h"
#include "nvfp4_gemm/cutlass_pdl_launch.h"
#include "nvfp4_gemm/dynamic_smem.h"
#include "nvfp4_gemm/kernel_entry.h"
#include "nvfp4_gemm/prepared_launch.h"
#include "nvfp4_gemm/problem.h"

namespace nvfp4_gemm::sm100 {

// An e4m3 scale byte as a value of the tokens' type, exactly (e4m3 has 4 significant bits and exponents
// -9 .. 8, inside fp16's and bf16's normal range; 0x7f / 0xff, e4m3's NaN, stay NaN).
template <class Value>
CUTLASS_HOST_DEVICE Value e4m3_to(std::uint8_t bits) {
  const int exponent = (bits >> 3) & 0xf, mantissa = bits & 7;
  float magnitude;
  if (exponent == 0xf && mantissa == 7) {
    magnitude = std::numeric_limits<float>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = static_cast<float>(mantissa) * 0x1p-9f;
  } else {
    magnitude = static_cast<float>(8 + mantissa) * static_cast<float>(1 << exponent) * 0x1p-10f;
  }
  return Value((bits & 0x80) ? -magnitude : magnitude);
}

// Where scale (l, k_block, n) of the converted layout (index (l * k_blocks + k_block) * n_rows + n) comes from
// in the user's blocked bytes: batch l's (round_up(N, 128), round_up(K/16, 4)) 128x4-blocked matrix.
CUTLASS_HOST_DEVICE std::int64_t scale_source_offset(std::int64_t index, int n_rows, int k_blocks) {
  const std::int64_t n = index % n_rows, k_block = (index / n_rows) % k_blocks, l = index / (std::int64_t(n_rows) * k_blocks);
  const int cols_padded = (k_blocks + 3) / 4 * 4;
  const std::int64_t rows_padded = (n_rows + 127) / 128 * 128;
  return l * rows_padded * cols_padded +
         static_cast<std::int64_t>(blocked_offset(static_cast<int>(n), static_cast<int>(k_block), cols_padded));
}

template <class Value>
__global__ void relayout_scales_kernel(const std::uint8_t* blocked, Value* converted, std::int64_t count, int n_rows,
                                       int k_blocks) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    converted[i] = e4m3_to<Value>(blocked[scale_source_offset(i, n_rows, k_blocks)]);
  }
}

template <int TileM, int TileN, int TileK, int ClusterM, int ClusterN, class ElementOut, class Tokens>
struct WeightOnlyGemm {
  static constexpr bool kWeightOnly = true;
  static constexpr bool kColumnAlpha = false;
  static constexpr int kValuesPerScale = 16;
  static_assert(TileM == 128, "the sm100 mixed-input kernels here are 1SM: tile M (weight rows) = 128");
  static_assert(TileN <= 128, "CUTLASS 4.2's mixed-input builder takes tile N (tokens) <= 128");
  static_assert(std::is_same_v<Tokens, cutlass::bfloat16_t> || std::is_same_v<Tokens, cutlass::half_t>,
                "weight-only tokens are fp16 or bf16");

  using Weight = cutlass::float_e2m1_t;
  using Scale = Tokens;  // the collective scales only in the tokens' type (above)
  using ElementAccumulator = float;
  using ScaleConfig = cutlass::detail::Sm100MixedInputBlockwiseScaleConfig<1, kValuesPerScale>;
  using LayoutScale = decltype(ScaleConfig::deduce_layout_scale());
  // 16 bytes per row for TMA: 32 e2m1 weights (K % 32), 8 tokens, 8 outputs of 16 bits (N % 8; fp32: 4)
  static constexpr int kAlignmentWeight = 32;
  static constexpr int kAlignmentTokens = 8;
  static constexpr int kAlignmentD = 128 / cutlass::sizeof_bits<ElementOut>::value;

  using MmaTileShape = cute::Shape<cute::Int<TileM>, cute::Int<TileN>, cute::Int<TileK>>;
  using ClusterShape = cute::Shape<cute::Int<ClusterM>, cute::Int<ClusterN>, cute::_1>;
  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm100, cutlass::arch::OpClassTensorOp, MmaTileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementAccumulator, void,
      cutlass::layout::ColumnMajor, kAlignmentD, ElementOut, cutlass::layout::ColumnMajor, kAlignmentD,
      cutlass::epilogue::TmaWarpSpecialized1Sm>::CollectiveOp;
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm100, cutlass::arch::OpClassTensorOp, cute::tuple<Weight, Scale>,
      cute::tuple<cutlass::layout::RowMajor, LayoutScale>, kAlignmentWeight, Tokens, cutlass::layout::ColumnMajor,
      kAlignmentTokens, ElementAccumulator, MmaTileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      cutlass::gemm::KernelTmaWarpSpecialized1SmMixedInputSm100>::CollectiveOp;
  using GemmKernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, CollectiveMainloop,
                                                          CollectiveEpilogue>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;
  using Arguments = typename Gemm::Arguments;
  static constexpr int kPipelineStages = CollectiveMainloop::DispatchPolicy::Load2TransformPipelineStageCount;

  // The converted scales (L x K/16 x N) at the workspace's start, CUTLASS's own workspace after them.
  static std::int64_t scale_count(const GemmProblem& p) { return std::int64_t(p.l) * (p.k / kValuesPerScale) * p.n; }
  static std::size_t scale_bytes(const GemmProblem& p) {
    const std::size_t bytes = scale_count(p) * sizeof(Scale);
    return (bytes + 255) / 256 * 256;
  }

  // The single place that turns a GemmProblem into kernel arguments (the launch and both host hooks).
  // `scales`: the converted scales (the workspace on the device, a host copy in the proofs).
  static Arguments make_arguments(const GemmProblem& p, const void* scales, int device_id, int sm_count) {
    using StrideA = typename GemmKernel::StrideA;
    using StrideB = typename GemmKernel::StrideB;
    using StrideD = typename GemmKernel::StrideD;
    Arguments args{};
    args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
    args.problem_shape = {p.n, p.m, p.k, p.l};  // the kernel's (M, N) = the user's (N, M)
    args.mainloop.dA = cutlass::make_cute_packed_stride(StrideA{}, cute::make_shape(p.n, p.k, p.l));
    args.mainloop.dB = cutlass::make_cute_packed_stride(StrideB{}, cute::make_shape(p.m, p.k, p.l));
    args.mainloop.layout_S = ScaleConfig::tile_atom_to_shape_scale(cute::make_shape(p.n, p.k, p.l));
    args.epilogue.ptr_C = nullptr;
    args.epilogue.dC = cutlass::make_cute_packed_stride(StrideD{}, cute::make_shape(p.n, p.m, p.l));
    args.epilogue.dD = args.epilogue.dC;
    args.epilogue.thread.alpha = 1.0f;  // used only when alpha_ptr is null
    args.epilogue.thread.beta = 0.0f;
    set_addresses(args, p, scales);
    args.hw_info.device_id = device_id;
    args.hw_info.sm_count = sm_count;
    return args;
  }

  static void set_addresses(Arguments& args, const GemmProblem& p, const void* scales) {
    args.mainloop.ptr_A = static_cast<const Weight*>(p.b);
    args.mainloop.ptr_B = static_cast<const Tokens*>(p.a);
    args.mainloop.ptr_S = static_cast<const Scale*>(scales);
    args.epilogue.ptr_D = static_cast<ElementOut*>(p.out);
    args.epilogue.thread.alpha_ptr = p.alpha;
  }

  // Host checks (the problem's sizes only: its addresses may be null) stand a placeholder in for the converted
  // scales, which CUTLASS's check asks only to be present.
  static LaunchStatus can_implement(const GemmProblem& p) {
    static const Scale placeholder{};
    if (p.k % kValuesPerScale) return {false, "K must be a multiple of 16 (one e4m3 scale per 16 weights)"};
    if (Gemm::can_implement(make_arguments(p, &placeholder, 0, 1)) != cutlass::Status::kSuccess) {
      return {false, "CUTLASS can_implement rejected the problem (alignment or shape)"};
    }
    return {};
  }

  static std::size_t workspace_bytes(const GemmProblem& p, int device_id, int sm_count, int /*split_k*/) {
    return scale_bytes(p) + Gemm::get_workspace_size(make_arguments(p, nullptr, device_id, sm_count));
  }
  static std::size_t counters_needed(const GemmProblem&, int) { return 0; }

  using Smem = DynamicSmem<cutlass::device_kernel<GemmKernel>>;
  static constexpr int kDynamicSmemBytes = GemmKernel::SharedStorageSize;
  static int dynamic_smem_attribute() { return Smem::attribute(); }

  class Plan {
   public:
    using Params = typename GemmKernel::Params;

    Plan(const Arguments& args, const GemmProblem& shape, std::size_t workspace_bytes, int device_id)
        : args_(args), shape_(shape), workspace_bytes_(workspace_bytes), device_id_(device_id) {}

    std::size_t workspace_bytes() const { return workspace_bytes_; }

    LaunchStatus build_params(const GemmProblem& p, void* workspace, Params* params) {
      set_addresses(args_, p, workspace);
      *params = GemmKernel::to_underlying_arguments(args_, static_cast<std::uint8_t*>(workspace) + scale_bytes(shape_));
      return {};
    }

    LaunchStatus init_workspace(void* workspace, cudaStream_t stream) const {
      if (GemmKernel::initialize_workspace(args_, static_cast<std::uint8_t*>(workspace) + scale_bytes(shape_), stream) !=
          cutlass::Status::kSuccess) {
        return {false, "CUTLASS could not initialise the workspace"};
      }
      return {};
    }

    // The scales converted into the workspace, then the GEMM (programmatic launch: it waits for the
    // conversion before its first global read).
    LaunchStatus launch(Params& params, const GemmProblem& p, const LaunchContext& ctx) const {
      const std::int64_t count = scale_count(p);
      const int threads = 256;
      const int blocks = static_cast<int>(std::min<std::int64_t>((count + threads - 1) / threads, 8 * 1024));
      relayout_scales_kernel<Scale><<<blocks, threads, 0, ctx.stream>>>(
          static_cast<const std::uint8_t*>(p.b_scale_blocked), static_cast<Scale*>(ctx.workspace), count, p.n,
          p.k / kValuesPerScale);
      if (cudaGetLastError() != cudaSuccess) return {false, "the weight-only scale conversion failed to launch"};
      return run_with_pdl<Gemm, Smem>(params, device_id_, kDynamicSmemBytes, ctx.stream);
    }

   private:
    Arguments args_;
    GemmProblem shape_;
    std::size_t workspace_bytes_;
    int device_id_;
  };

  static std::unique_ptr<PreparedLaunch> prepare(const GemmProblem& shape, const LaunchContext& ctx,
                                                 LaunchStatus* status) {
    if (ctx.split_k != 1) {
      *status = {false, "the sm100 weight-only kernels take split_k = 1 only"};
      return nullptr;
    }
    const LaunchStatus implementable = can_implement(shape);
    if (!implementable.ok) {
      *status = implementable;
      return nullptr;
    }
    const Arguments args = make_arguments(shape, nullptr, ctx.device_id, ctx.sm_count);  // addresses: build_params
    return std::make_unique<AddressKeyedLaunch<Plan>>(
        Plan(args, shape, workspace_bytes(shape, ctx.device_id, ctx.sm_count, 1), ctx.device_id));
  }
};

}  // namespace nvfp4_gemm::sm100
