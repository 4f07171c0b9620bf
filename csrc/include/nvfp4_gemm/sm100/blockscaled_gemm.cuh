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
// once per device. Per call: the workspace initialisation (stream-K barriers) and the launch. That host
// side is the sm120 family's too (cutlass_blockscaled_host.h); this file says which kernel it launches.
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

#include <type_traits>

#include "nvfp4_gemm/cutlass_blockscaled_host.h"

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

// The kernel a config names (the host side that launches it: CutlassBlockScaledHost, below).
template <int TileM, int TileN, int TileK, int ClusterM, int ClusterN, class ElementOut, bool StreamK,
          bool SwapAB, class OperandA, class OperandB, bool PerColumnAlpha>
struct BlockScaledKernel {
  static constexpr bool kSwapAB = SwapAB;
  static constexpr bool kColumnAlpha = PerColumnAlpha;
  static constexpr bool kStreamK = StreamK;
  using ElementD = ElementOut;
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
};

template <int TileM, int TileN, int TileK, int ClusterM, int ClusterN, class ElementOut, bool StreamK,
          bool SwapAB, class OperandA, class OperandB, bool PerColumnAlpha>
using BlockScaledGemm = CutlassBlockScaledHost<BlockScaledKernel<TileM, TileN, TileK, ClusterM, ClusterN, ElementOut,
                                                                 StreamK, SwapAB, OperandA, OperandB, PerColumnAlpha>>;

}  // namespace nvfp4_gemm::sm100
