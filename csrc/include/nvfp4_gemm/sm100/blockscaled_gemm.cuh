// Blackwell (sm_100 family) NVFP4 x NVFP4 GEMM through CUTLASS's block-scaled GemmUniversal.
//
// Operand mapping (shared/spec/nvfp4.md): a is (L, M, K/2) K-major -> CUTLASS A row-major;
// b is (L, N, K/2) K-major, the nn.Linear weight -> CUTLASS B column-major ((K, N) with K
// contiguous), so the kernel computes a @ b.T with no transpose in memory. Scales arrive in the
// cuBLAS 128x4 blocked layout, which is exactly CUTLASS's Sm1xxBlkScaledConfig atom for a
// 16-element scale vector: the pointers go to the kernel as given.
#pragma once

#include <cuda_runtime_api.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/detail/sm100_blockscaled_layout.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include <type_traits>

#include "nvfp4_gemm/kernel_entry.h"
#include "nvfp4_gemm/problem.h"

namespace nvfp4_gemm::sm100 {

template <int TileM, int TileN, int TileK, int ClusterM, int ClusterN, class ElementOut>
struct BlockScaledGemm {
  // CUTLASS 4.2: a 1SM MMA tile has M = 128, a 2SM tile (a CTA pair) has M = 256.
  static constexpr bool kTwoSm = TileM == 256;
  static_assert(TileM == 128 || TileM == 256, "sm100 block-scaled MMA tile M is 128 (1SM) or 256 (2SM)");
  static_assert(!kTwoSm || ClusterM % 2 == 0, "a 2SM tile needs an even cluster M");

  using ElementAB = cutlass::nv_float4_t<cutlass::float_e2m1_t>;
  using ElementAccumulator = float;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;
  using LayoutD = cutlass::layout::RowMajor;
  // 32 FP4 elements = 16 bytes, TMA's minimum row alignment: this is why K must be a multiple of 32.
  static constexpr int kAlignmentAB = 32;
  // 16 bytes of output per row: N a multiple of 8 (fp16/bf16) or 4 (fp32).
  static constexpr int kAlignmentD = 128 / cutlass::sizeof_bits<ElementOut>::value;

  using MmaTileShape = cute::Shape<cute::Int<TileM>, cute::Int<TileN>, cute::Int<TileK>>;
  using ClusterShape = cute::Shape<cute::Int<ClusterM>, cute::Int<ClusterN>, cute::_1>;
  using MainloopSchedule =
      std::conditional_t<kTwoSm, cutlass::gemm::KernelTmaWarpSpecialized2SmNvf4Sm100,
                         cutlass::gemm::KernelTmaWarpSpecialized1SmNvf4Sm100>;
  using EpilogueSchedule = std::conditional_t<kTwoSm, cutlass::epilogue::TmaWarpSpecialized2Sm,
                                              cutlass::epilogue::TmaWarpSpecialized1Sm>;

  // ElementC = void: D = alpha * acc, no source tensor is read.
  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm100, cutlass::arch::OpClassBlockScaledTensorOp, MmaTileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementAccumulator,
      void, LayoutD, kAlignmentD, ElementOut, LayoutD, kAlignmentD, EpilogueSchedule>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm100, cutlass::arch::OpClassBlockScaledTensorOp, ElementAB, LayoutA,
      kAlignmentAB, ElementAB, LayoutB, kAlignmentAB, ElementAccumulator, MmaTileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;

  using GemmKernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>,
                                                          CollectiveMainloop, CollectiveEpilogue, void>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;
  using Arguments = typename Gemm::Arguments;
  using ScaleConfig = typename CollectiveMainloop::Sm1xxBlkScaledConfig;
  using ElementData = typename ElementAB::DataType;
  using ElementScale = typename ElementAB::ScaleFactorType;

  // The single place that turns a GemmProblem into kernel arguments. The launch and both test
  // hooks (scale offsets, host reference) call it, so the tests prove what the device receives.
  // Host-only callers pass sm_count = 1: it keeps CUTLASS from querying a device (there may be none);
  // no shape or stride depends on it for this data-parallel kernel.
  static Arguments make_arguments(const GemmProblem& p, int device_id, int sm_count) {
    using StrideA = typename GemmKernel::StrideA;
    using StrideB = typename GemmKernel::StrideB;
    using StrideC = typename GemmKernel::StrideC;
    using StrideD = typename GemmKernel::StrideD;
    const auto problem_mnkl = cute::make_shape(p.m, p.n, p.k, p.l);

    Arguments args{};
    args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
    args.problem_shape = {p.m, p.n, p.k, p.l};
    args.mainloop.ptr_A = static_cast<const ElementData*>(p.a);
    args.mainloop.dA = cutlass::make_cute_packed_stride(StrideA{}, cute::make_shape(p.m, p.k, p.l));
    args.mainloop.ptr_B = static_cast<const ElementData*>(p.b);
    args.mainloop.dB = cutlass::make_cute_packed_stride(StrideB{}, cute::make_shape(p.n, p.k, p.l));
    args.mainloop.ptr_SFA = static_cast<const ElementScale*>(p.a_scale_blocked);
    args.mainloop.layout_SFA = ScaleConfig::tile_atom_to_shape_SFA(problem_mnkl);
    args.mainloop.ptr_SFB = static_cast<const ElementScale*>(p.b_scale_blocked);
    args.mainloop.layout_SFB = ScaleConfig::tile_atom_to_shape_SFB(problem_mnkl);

    args.epilogue.ptr_C = nullptr;
    args.epilogue.dC = cutlass::make_cute_packed_stride(StrideC{}, cute::make_shape(p.m, p.n, p.l));
    args.epilogue.ptr_D = static_cast<ElementOut*>(p.out);
    args.epilogue.dD = cutlass::make_cute_packed_stride(StrideD{}, cute::make_shape(p.m, p.n, p.l));
    args.epilogue.thread.alpha = 1.0f;  // used only when alpha_ptr is null
    args.epilogue.thread.alpha_ptr = p.alpha;
    args.epilogue.thread.beta = 0.0f;

    args.hw_info.device_id = device_id;
    args.hw_info.sm_count = sm_count;
    return args;
  }

  static LaunchStatus can_implement(const GemmProblem& p) {
    Arguments args = make_arguments(p, /*device_id=*/0, /*sm_count=*/1);
    if (Gemm::can_implement(args) != cutlass::Status::kSuccess) {
      return {false, "CUTLASS can_implement rejected the problem (alignment or shape)"};
    }
    return {};
  }

  static std::size_t workspace_bytes(const GemmProblem& p, int device_id, int sm_count, int /*split_k*/) {
    return Gemm::get_workspace_size(make_arguments(p, device_id, sm_count));
  }

  static std::size_t counters_needed(const GemmProblem&, int /*split_k*/) { return 0; }

  static LaunchStatus launch(const GemmProblem& p, const LaunchContext& ctx) {
    if (ctx.split_k != 1) return {false, "this data-parallel kernel takes split_k = 1 only"};
    Arguments args = make_arguments(p, ctx.device_id, ctx.sm_count);
    if (Gemm::can_implement(args) != cutlass::Status::kSuccess) {
      return {false, "CUTLASS can_implement rejected the problem (alignment or shape)"};
    }
    if (Gemm::get_workspace_size(args) > ctx.workspace_capacity) {
      return {false, "workspace smaller than the kernel needs"};
    }
    Gemm gemm;
    if (gemm.initialize(args, ctx.workspace, ctx.stream) != cutlass::Status::kSuccess) {
      return {false, "CUTLASS initialize failed (TMA descriptor or shared-memory attribute)"};
    }
    if (gemm.run(ctx.stream) != cutlass::Status::kSuccess) {
      return {false, "CUTLASS kernel launch failed"};
    }
    return {};
  }
};

}  // namespace nvfp4_gemm::sm100
