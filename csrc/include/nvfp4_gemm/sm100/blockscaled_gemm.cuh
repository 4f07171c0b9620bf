// Blackwell (sm_100 family) block-scaled GEMM through CUTLASS's block-scaled GemmUniversal: NVFP4 x NVFP4,
// MXFP4 x MXFP4 or MXFP8 x MXFP4 (the operand types OperandA / OperandB, CUTLASS's nv_float4_t / mx_float4_t /
// mx_float8_t, written by the generator from the config's format; docs/formats.md).
//
// Operand mapping (shared/spec/nvfp4.md): a is (L, M, K/2) K-major -> CUTLASS A row-major;
// b is (L, N, K/2) K-major, the nn.Linear weight -> CUTLASS B column-major ((K, N) with K
// contiguous), so the kernel computes a @ b.T with no transpose in memory. Scales arrive in the
// cuBLAS 128x4 blocked layout, which is exactly CUTLASS's Sm1xxBlkScaledConfig atom for a
// 16-element (NVFP4) or 32-element (MX) scale vector: the pointers go to the kernel as given.
//
// Swap-AB variants compute out.T = b @ a.T instead: the weights fill the 128/256-row MMA M side,
// the few tokens a narrow N tile, and D is written column-major with leading dimension N, which is
// the user's row-major (M, N) output. Both operands stay K-major and both scale tensors keep their
// blocked layout (SFA and SFB share one atom), so nothing is copied or transposed.
//
// Per-column-alpha variants (rows marked per_column_alpha) scale out[l, m, n] by alpha[n], an (N,) fp32
// vector shared by every batch (fused projections: each partition keeps its own global scale), through
// CUTLASS's per-column (swap-AB: per-row, the kernel's M being the user's N) alpha epilogue with no
// source and no bias: alpha[n] * acc is one fp32 operation, then the conversion to the output, as the
// single-alpha epilogue's fp32 multiply. They take a vector alpha only.
//
// Stream-K variants use CUTLASS's stream-K tile scheduler: split_k = 1 spreads the K iterations of
// all tiles evenly over the SMs (stream-K), split_k > 1 cuts every tile's K range into that many
// splits; both reduce deterministically (partials summed in a fixed order) in the workspace.
//
// Every kernel is launched with programmatic dependent launch: it may start while the previous
// kernel on the stream finishes, and waits (griddepcontrol.wait, compiled in through
// CUTLASS_ENABLE_GDC_FOR_SM100) before its first global memory access.
//
// Launches are prepared once per plan (`prepare`, see prepared_launch.h): arguments built,
// can_implement and the workspace size asked once; kernel parameters (the TMA descriptors, which
// embed addresses) built again only for addresses not seen before; the shared-memory attribute set
// once per device. Per call: the workspace initialisation (stream-K barriers) and the launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/detail/sm100_blockscaled_layout.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/operations.hpp>
#include <cutlass/epilogue/thread/activation.h>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include <memory>
#include <type_traits>

#include "nvfp4_gemm/cutlass_pdl_launch.h"
#include "nvfp4_gemm/dynamic_smem.h"
#include "nvfp4_gemm/kernel_entry.h"
#include "nvfp4_gemm/prepared_launch.h"
#include "nvfp4_gemm/problem.h"

namespace nvfp4_gemm::sm100 {

// The MMA kind of a pair of block-scaled operand types: both 4-bit -> mxf4nvf4 (NVFP4 with e4m3 scales, MXFP4
// with ue8m0 ones), otherwise mxf8f6f4 (MXFP8 x MXFP4).
template <class OperandA, class OperandB, bool TwoSm>
struct BlockScaledSchedule {
  static constexpr bool kFp4 = cutlass::sizeof_bits<typename OperandA::DataType>::value == 4 &&
                               cutlass::sizeof_bits<typename OperandB::DataType>::value == 4;
  static constexpr bool kNvfp4 = std::is_same_v<typename OperandA::ScaleFactorType, cutlass::float_ue4m3_t>;
  using OneSm = std::conditional_t<kFp4,
                                   std::conditional_t<kNvfp4, cutlass::gemm::KernelTmaWarpSpecialized1SmNvf4Sm100,
                                                      cutlass::gemm::KernelTmaWarpSpecialized1SmMxf4Sm100>,
                                   cutlass::gemm::KernelTmaWarpSpecialized1SmMxf8f6f4Sm100>;
  using TwoSmSchedule = std::conditional_t<kFp4,
                                           std::conditional_t<kNvfp4, cutlass::gemm::KernelTmaWarpSpecialized2SmNvf4Sm100,
                                                              cutlass::gemm::KernelTmaWarpSpecialized2SmMxf4Sm100>,
                                           cutlass::gemm::KernelTmaWarpSpecialized2SmMxf8f6f4Sm100>;
  using Mainloop = std::conditional_t<TwoSm, TwoSmSchedule, OneSm>;
  // Row alignment in elements: 16 bytes (TMA's minimum: 32 FP4 or 16 FP8 values), except that the
  // mxf8f6f4 kind reads a 4-bit operand with 128-element alignment (CUTLASS's sm1xx_blockscaled_gemm_is_aligned).
  template <class Operand>
  static constexpr int alignment() {
    constexpr int bits = cutlass::sizeof_bits<typename Operand::DataType>::value;
    return (!kFp4 && bits == 4) ? 128 : 128 / bits;
  }
};

template <int TileM, int TileN, int TileK, int ClusterM, int ClusterN, class ElementOut, bool StreamK,
          bool SwapAB, class OperandA, class OperandB, bool PerColumnAlpha>
struct BlockScaledGemm {
  static constexpr bool kColumnAlpha = PerColumnAlpha;
  // CUTLASS 4.2: a 1SM MMA tile has M = 128, a 2SM tile (a CTA pair) has M = 256.
  static constexpr bool kTwoSm = TileM == 256;
  static_assert(TileM == 128 || TileM == 256, "sm100 block-scaled MMA tile M is 128 (1SM) or 256 (2SM)");
  static_assert(!kTwoSm || ClusterM % 2 == 0, "a 2SM tile needs an even cluster M");

  // The kernel's own operands: the user's a and b, or their swap.
  using KernelA = std::conditional_t<SwapAB, OperandB, OperandA>;
  using KernelB = std::conditional_t<SwapAB, OperandA, OperandB>;
  using Schedule = BlockScaledSchedule<KernelA, KernelB, kTwoSm>;
  using ElementAccumulator = float;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;
  // The user's (M, N) row-major output is (N, M) column-major for the swapped problem.
  using LayoutD = std::conditional_t<SwapAB, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  // 32 FP4 elements = 16 bytes, TMA's minimum row alignment: this is why K must be a multiple of 32
  // (128 for MXFP8 x MXFP4: BlockScaledSchedule::alignment).
  static constexpr int kAlignmentA = Schedule::template alignment<KernelA>();
  static constexpr int kAlignmentB = Schedule::template alignment<KernelB>();
  // 16 bytes of output per row: N a multiple of 8 (fp16/bf16) or 4 (fp32), in both orientations
  // (the swapped problem's contiguous output dimension is its M, the user's N).
  static constexpr int kAlignmentD = 128 / cutlass::sizeof_bits<ElementOut>::value;

  using MmaTileShape = cute::Shape<cute::Int<TileM>, cute::Int<TileN>, cute::Int<TileK>>;
  using ClusterShape = cute::Shape<cute::Int<ClusterM>, cute::Int<ClusterN>, cute::_1>;
  using MainloopSchedule = typename Schedule::Mainloop;
  using EpilogueSchedule = std::conditional_t<kTwoSm, cutlass::epilogue::TmaWarpSpecialized2Sm,
                                              cutlass::epilogue::TmaWarpSpecialized1Sm>;

  // ElementC = void: D = alpha * acc, no source tensor is read. One alpha: the builder's default
  // LinearCombination. Per column: the user's N is the kernel's N (a row vector broadcast down the
  // tile's rows) or, swapped, the kernel's M (a column vector); the bias pointer stays null (zero).
  using OneAlpha = cutlass::epilogue::fusion::LinearCombination<ElementOut, ElementAccumulator, void, ElementAccumulator>;
  using ColumnAlpha = std::conditional_t<
      SwapAB,
      cutlass::epilogue::fusion::PerRowLinCombPerRowBiasEltAct<cutlass::epilogue::thread::Identity, ElementOut,
                                                               ElementAccumulator, ElementOut, void, ElementAccumulator>,
      cutlass::epilogue::fusion::PerColLinCombPerColBiasEltAct<cutlass::epilogue::thread::Identity, ElementOut,
                                                               ElementAccumulator, ElementOut, void, ElementAccumulator>>;
  using FusionOp = std::conditional_t<PerColumnAlpha, ColumnAlpha, OneAlpha>;
  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm100, cutlass::arch::OpClassBlockScaledTensorOp, MmaTileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementAccumulator,
      void, LayoutD, kAlignmentD, ElementOut, LayoutD, kAlignmentD, EpilogueSchedule, FusionOp>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm100, cutlass::arch::OpClassBlockScaledTensorOp, KernelA, LayoutA,
      kAlignmentA, KernelB, LayoutB, kAlignmentB, ElementAccumulator, MmaTileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;

  using TileScheduler = std::conditional_t<StreamK, cutlass::gemm::StreamKScheduler, void>;
  using GemmKernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, CollectiveMainloop,
                                                          CollectiveEpilogue, TileScheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;
  using Arguments = typename Gemm::Arguments;
  using ScaleConfig = typename CollectiveMainloop::Sm1xxBlkScaledConfig;
  using ElementDataA = typename KernelA::DataType;  // the kernel's A (the user's b if swapped)
  using ElementDataB = typename KernelB::DataType;
  using ElementScale = typename KernelA::ScaleFactorType;
  static_assert(std::is_same_v<ElementScale, typename KernelB::ScaleFactorType>, "one scale type for both operands");
  static constexpr int kValuesPerScale = CollectiveMainloop::SFVecSize;
  static constexpr int kPipelineStages = CollectiveMainloop::DispatchPolicy::Stages;

  // The single place that turns a GemmProblem into kernel arguments. The launch and both test
  // hooks (scale offsets, host reference) call it, so the tests prove what the device receives.
  // Host-only callers pass sm_count = 1: it keeps CUTLASS from querying a device (there may be none);
  // it sizes only the persistent grid and the stream-K work split, never a shape or a stride.
  static Arguments make_arguments(const GemmProblem& p, int device_id, int sm_count, int split_k) {
    using StrideA = typename GemmKernel::StrideA;
    using StrideB = typename GemmKernel::StrideB;
    using StrideC = typename GemmKernel::StrideC;
    using StrideD = typename GemmKernel::StrideD;
    // The kernel's own (M, N) and operands: the user's, or their swap.
    const int kernel_m = SwapAB ? p.n : p.m;
    const int kernel_n = SwapAB ? p.m : p.n;
    const auto problem_mnkl = cute::make_shape(kernel_m, kernel_n, p.k, p.l);

    Arguments args{};
    args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
    args.problem_shape = {kernel_m, kernel_n, p.k, p.l};
    args.mainloop.dA = cutlass::make_cute_packed_stride(StrideA{}, cute::make_shape(kernel_m, p.k, p.l));
    args.mainloop.dB = cutlass::make_cute_packed_stride(StrideB{}, cute::make_shape(kernel_n, p.k, p.l));
    args.mainloop.layout_SFA = ScaleConfig::tile_atom_to_shape_SFA(problem_mnkl);
    args.mainloop.layout_SFB = ScaleConfig::tile_atom_to_shape_SFB(problem_mnkl);

    args.epilogue.ptr_C = nullptr;
    args.epilogue.dC = cutlass::make_cute_packed_stride(StrideC{}, cute::make_shape(kernel_m, kernel_n, p.l));
    args.epilogue.dD = cutlass::make_cute_packed_stride(StrideD{}, cute::make_shape(kernel_m, kernel_n, p.l));
    args.epilogue.thread.alpha = 1.0f;  // used only when alpha_ptr is null
    args.epilogue.thread.beta = 0.0f;
    if constexpr (PerColumnAlpha) {
      // alpha_ptr holds the user's N values, one per output column; batch stride 0: every batch shares them
      if constexpr (SwapAB) {
        args.epilogue.thread.dAlpha = {true, cute::_0{}, 0};
      } else {
        args.epilogue.thread.dAlpha = {cute::_0{}, true, 0};
      }
    }
    set_addresses(args, p);

    if constexpr (StreamK) {
      using Decomposition = typename GemmKernel::TileScheduler::Params::DecompositionMode;
      using Reduction = typename GemmKernel::TileScheduler::Params::ReductionMode;
      args.scheduler.splits = split_k;
      args.scheduler.decomposition_mode = split_k > 1 ? Decomposition::SplitK : Decomposition::StreamK;
      args.scheduler.reduction_mode = Reduction::Deterministic;
    }

    args.hw_info.device_id = device_id;
    args.hw_info.sm_count = sm_count;
    return args;
  }

  // The addresses in `args`: the user's operands, or their swap. The only part of the arguments a
  // prepared launch changes per call.
  static void set_addresses(Arguments& args, const GemmProblem& p) {
    args.mainloop.ptr_A = static_cast<const ElementDataA*>(SwapAB ? p.b : p.a);
    args.mainloop.ptr_B = static_cast<const ElementDataB*>(SwapAB ? p.a : p.b);
    args.mainloop.ptr_SFA = static_cast<const ElementScale*>(SwapAB ? p.b_scale_blocked : p.a_scale_blocked);
    args.mainloop.ptr_SFB = static_cast<const ElementScale*>(SwapAB ? p.a_scale_blocked : p.b_scale_blocked);
    args.epilogue.ptr_D = static_cast<ElementOut*>(p.out);
    args.epilogue.thread.alpha_ptr = p.alpha;
  }

  // The scale layout the kernel reads the user's a (or b) scales through.
  template <class Args>
  static const auto& user_scale_layout(const Args& args, ScaleOperand operand_of_user) {
    const bool kernel_a = (operand_of_user == ScaleOperand::kA) != SwapAB;
    if constexpr (std::is_same_v<decltype(args.mainloop.layout_SFA), decltype(args.mainloop.layout_SFB)>) {
      return kernel_a ? args.mainloop.layout_SFA : args.mainloop.layout_SFB;
    } else {
      static_assert(sizeof(Args) == 0, "SFA and SFB layouts differ in type: walk them separately");
    }
  }

  static LaunchStatus can_implement(const GemmProblem& p) {
    Arguments args = make_arguments(p, /*device_id=*/0, /*sm_count=*/1, /*split_k=*/1);
    if (Gemm::can_implement(args) != cutlass::Status::kSuccess) {
      return {false, "CUTLASS can_implement rejected the problem (alignment or shape)"};
    }
    return {};
  }

  // Stream-K partials and barriers (zero for data-parallel kernels); sized with the device's SM count.
  static std::size_t workspace_bytes(const GemmProblem& p, int device_id, int sm_count, int split_k) {
    return Gemm::get_workspace_size(make_arguments(p, device_id, sm_count, split_k));
  }

  static std::size_t counters_needed(const GemmProblem&, int /*split_k*/) { return 0; }

  // The shared-memory opt-in of this kernel, per device (nvfp4_gemm/dynamic_smem.h).
  using Smem = DynamicSmem<cutlass::device_kernel<GemmKernel>>;
  static constexpr int kDynamicSmemBytes = GemmKernel::SharedStorageSize;
  static int dynamic_smem_attribute() { return Smem::attribute(); }

  // What a plan fixes: the arguments of its sizes, split and device (addresses patched in when
  // parameters are built), its workspace size and device. The policy of AddressKeyedLaunch.
  class Plan {
   public:
    using Params = typename GemmKernel::Params;

    Plan(const Arguments& args, std::size_t workspace_bytes, int device_id)
        : args_(args), workspace_bytes_(workspace_bytes), device_id_(device_id) {}

    std::size_t workspace_bytes() const { return workspace_bytes_; }

    // TMA descriptors for these addresses (cuTensorMapEncodeTiled on the host, no device work).
    LaunchStatus build_params(const GemmProblem& p, void* workspace, Params* params) {
      set_addresses(args_, p);
      *params = GemmKernel::to_underlying_arguments(args_, workspace);
      return {};
    }

    // Stream-K: the reduction barriers are zeroed (cudaMemsetAsync on the launch stream).
    LaunchStatus init_workspace(void* workspace, cudaStream_t stream) const {
      if (GemmKernel::initialize_workspace(args_, workspace, stream) != cutlass::Status::kSuccess) {
        return {false, "CUTLASS could not initialise the workspace (stream-K barrier clear)"};
      }
      return {};
    }

    LaunchStatus launch(Params& params, const GemmProblem&, const LaunchContext& ctx) const {
      return run_with_pdl<Gemm, Smem>(params, device_id_, kDynamicSmemBytes, ctx.stream);
    }

   private:
    Arguments args_;
    std::size_t workspace_bytes_;
    int device_id_;
  };

  static std::unique_ptr<PreparedLaunch> prepare(const GemmProblem& shape, const LaunchContext& ctx,
                                                 LaunchStatus* status) {
    if (ctx.split_k < 1) {
      *status = {false, "split_k must be at least 1"};
      return nullptr;
    }
    if (!StreamK && ctx.split_k != 1) {
      *status = {false, "this data-parallel kernel takes split_k = 1 only"};
      return nullptr;
    }
    const Arguments args = make_arguments(shape, ctx.device_id, ctx.sm_count, ctx.split_k);
    if (Gemm::can_implement(args) != cutlass::Status::kSuccess) {
      *status = {false, "CUTLASS can_implement rejected the problem (alignment or shape)"};
      return nullptr;
    }
    return std::make_unique<AddressKeyedLaunch<Plan>>(Plan(args, Gemm::get_workspace_size(args), ctx.device_id));
  }
};

}  // namespace nvfp4_gemm::sm100
