// GeForce / workstation Blackwell (sm_120: RTX 50, RTX PRO 6000; sm_121: DGX Spark GB10) NVFP4 x
// NVFP4 GEMM through CUTLASS's Sm120 block-scaled GemmUniversal.
//
// The sm_120 family has no tensor memory and no tcgen05: its block-scaled MMA is a warp-level
// mma.sync (m16n8k64, e2m1 x e2m1 with one ue4m3 scale per 16 elements, FP32 accumulation) fed from
// registers. CUTLASS's Sm120 mainloop loads A, B and both scale tensors by TMA into a shared-memory
// ring, copies them into registers with ldmatrix / lds and issues the MMA from two consumer
// warpgroups (cooperative: both on one tile) or one warpgroup per tile (ping-pong: two tiles in
// flight, one in its mainloop while the other stores). Clusters are 1x1 (no TMA multicast on this
// family) and a block gets at most 99 KB of shared memory (cutlass::arch::sm120_smem_capacity_bytes
// = 101376), which bounds the tile and the pipeline depth.
//
// Operand mapping and scales are those of the sm100 launcher (shared/spec/nvfp4.md): a is (L, M, K/2)
// K-major -> CUTLASS A row-major; b is (L, N, K/2) K-major -> CUTLASS B column-major; the collective
// reads the scales through cutlass::detail::Sm1xxBlockScaledConfig<16>, the same 128x4 atom as
// sm100, i.e. the cuBLAS blocked layout our to_blocked writes (tests/test_sm120_host_proofs.py
// proves the offsets). No swap-AB variant: the collective's scale atom makes 128 the narrowest
// tile N, so swapping would put the tokens on a 128-wide N side instead of a 128-high M side, the
// same padding (docs/sm120_integration.md).
//
// Alignment CUTLASS really requires (Sm120 collective can_implement and the Sm90 TMA epilogue it
// reuses): every row of A and B a multiple of 128 bits = 32 FP4 elements (K % 32), the output's
// row a multiple of 128 bits (N % 8 for fp16/bf16, N % 4 for fp32); M, N, K residues past the
// tile are TMA bounds (zero fill on load, clipped stores), L any.
//
// Programmatic dependent launch: every launch asks for it. CUTLASS compiles griddepcontrol.wait
// (before the first global access) into the kernel for __CUDA_ARCH__ 1200 (family or 'a') and 1210
// when CUTLASS_ENABLE_GDC_FOR_SM100 is defined (cutlass/arch/grid_dependency_control.h), which the
// build does for every CUTLASS TU. The early trigger for the next kernel
// (griddepcontrol.launch_dependents) is not there: the Sm90 kernel layer the Sm120 collectives run
// in compiles it only under CUTLASS_ENABLE_GDC_FOR_SM90, and then asks the tile scheduler for
// is_last_tile, which sm120's default scheduler (PersistentTileSchedulerSm100) lacks in CUTLASS 4.2
// (compile error). Without the trigger the next kernel starts when this one exits; this kernel
// still overlaps its prologue with the previous kernel's tail.
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

#include <type_traits>

#include "nvfp4_gemm/cutlass_blockscaled_host.h"

namespace nvfp4_gemm::sm120 {

namespace detail {
// The same layout with every static leaf a cute::C<int>. CUTLASS 4.2's Sm120 block-scaled builder
// writes its shared-memory scale atoms with cute::Int<SFVectorSize> where SFVectorSize is a
// uint32_t; nvcc's front end converts that argument to int (cute::Int's parameter type), GCC 12
// keeps cute::C<16u>. The kernel's host stub, which nvcc spells out for the host compiler, then
// names a type GCC does not recognise ("template-id '__wrapper__device_stub_device_kernel<...>'
// does not match any template declaration"). Rebuilding the two atoms with int leaves gives both
// compilers one type; the values, hence the kernel, are unchanged (tests/test_sm120_sass.py
// compares the SASS with and without this step).
template <class T>
struct IntLeaves {
  using type = T;
};
template <auto V>
struct IntLeaves<cute::C<V>> {
  using type = std::conditional_t<std::is_integral_v<decltype(V)> && !std::is_same_v<decltype(V), bool>,
                                  cute::C<static_cast<int>(V)>, cute::C<V>>;
};
template <class... Ts>
struct IntLeaves<cute::tuple<Ts...>> {
  using type = cute::tuple<typename IntLeaves<Ts>::type...>;
};
template <class Shape, class Stride>
struct IntLeaves<cute::Layout<Shape, Stride>> {
  using type = cute::Layout<typename IntLeaves<Shape>::type, typename IntLeaves<Stride>::type>;
};

// The builder's collective with its scale atoms rebuilt by IntLeaves; everything else as built.
template <class Built>
using WithIntScaleAtoms = cutlass::gemm::collective::CollectiveMma<
    typename Built::DispatchPolicy, typename Built::TileShape, typename Built::ElementPairA,
    typename Built::StridePairA, typename Built::ElementPairB, typename Built::StridePairB,
    typename Built::TiledMma, typename Built::GmemTiledCopyPairA,
    cute::tuple<typename Built::SmemLayoutAtomA, typename IntLeaves<typename Built::SmemLayoutAtomSFA>::type>,
    typename Built::SmemCopyAtomsA, typename Built::TransformA, typename Built::GmemTiledCopyPairB,
    cute::tuple<typename Built::SmemLayoutAtomB, typename IntLeaves<typename Built::SmemLayoutAtomSFB>::type>,
    typename Built::SmemCopyAtomsB, typename Built::TransformB>;
}  // namespace detail

// Cooperative: 2 consumer warpgroups share one tile (tile M >= 128); ping-pong: each consumer
// warpgroup owns a tile and the two alternate mainloop and epilogue (no stream-K in CUTLASS 4.2).
enum class Schedule { kCooperative, kPingpong };

// The kernel a config names; the host side that launches it is the sm100 family's (CutlassBlockScaledHost).
template <int TileM, int TileN, int TileK, class ElementOut, Schedule Sched, bool StreamK>
struct BlockScaledKernel {
  static_assert(!(StreamK && Sched == Schedule::kPingpong), "CUTLASS 4.2's ping-pong kernel has no stream-K");
  static constexpr bool kSwapAB = false;       // the collective's scale atom makes 128 the narrowest tile N (above)
  static constexpr bool kColumnAlpha = false;  // one alpha per call: no per-column epilogue in this family
  static constexpr bool kStreamK = StreamK;
  using ElementD = ElementOut;

  using ElementAB = cutlass::nv_float4_t<cutlass::float_e2m1_t>;
  using ElementAccumulator = float;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;
  using LayoutD = cutlass::layout::RowMajor;
  // 32 FP4 elements = 16 bytes: the TMA row alignment the Sm120 collective checks (K % 32).
  static constexpr int kAlignmentAB = 32;
  // 16 bytes of output per row: N % 8 (fp16/bf16) or N % 4 (fp32).
  static constexpr int kAlignmentD = 128 / cutlass::sizeof_bits<ElementOut>::value;

  using TileShape = cute::Shape<cute::Int<TileM>, cute::Int<TileN>, cute::Int<TileK>>;
  using ClusterShape = cute::Shape<cute::_1, cute::_1, cute::_1>;
  // The explicit NVFP4 schedules pin the ue4m3 / 16-element scale MMA (KernelScheduleAuto would
  // infer it from nv_float4_t as well; naming it keeps an MX element type from slipping through).
  using MainloopSchedule = std::conditional_t<Sched == Schedule::kPingpong,
                                              cutlass::gemm::KernelTmaWarpSpecializedPingpongNvf4Sm120,
                                              cutlass::gemm::KernelTmaWarpSpecializedNvf4Sm120>;

  // ElementC = void: D = alpha * acc, no source tensor is read.
  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm120, cutlass::arch::OpClassBlockScaledTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementAccumulator, void, LayoutD,
      kAlignmentD, ElementOut, LayoutD, kAlignmentD,
      cutlass::epilogue::collective::EpilogueScheduleAuto>::CollectiveOp;

  using BuiltMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm120, cutlass::arch::OpClassBlockScaledTensorOp, ElementAB, LayoutA, kAlignmentAB,
      ElementAB, LayoutB, kAlignmentAB, ElementAccumulator, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;
#ifdef NVFP4_GEMM_SM120_BUILDER_SCALE_ATOMS  // the builder's types as they are: for the SASS comparison only
  using CollectiveMainloop = BuiltMainloop;
#else
  using CollectiveMainloop = detail::WithIntScaleAtoms<BuiltMainloop>;
#endif

  using TileScheduler = std::conditional_t<StreamK, cutlass::gemm::StreamKScheduler, void>;
  using GemmKernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, CollectiveMainloop,
                                                          CollectiveEpilogue, TileScheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;
  using Arguments = typename Gemm::Arguments;
  using ScaleConfig = typename CollectiveMainloop::Sm1xxBlkScaledConfig;
  using ElementScale = typename ElementAB::ScaleFactorType;
  // What the shared host side and host-proof hooks read of every block-scaled kernel: each operand's data type
  // (NVFP4 here for both) and the values per scale.
  using ElementDataA = typename ElementAB::DataType;
  using ElementDataB = typename ElementAB::DataType;
  static constexpr int kValuesPerScale = ScaleConfig::SFVecSize;
  static constexpr int kPipelineStages = CollectiveMainloop::DispatchPolicy::Stages;
  static constexpr int kSharedMemoryBytes = GemmKernel::SharedStorageSize;
  static_assert(kSharedMemoryBytes <= cutlass::arch::sm120_smem_capacity_bytes,
                "the tile's pipeline and epilogue do not fit in the sm_120 family's 99 KB of shared memory");
};

template <int TileM, int TileN, int TileK, class ElementOut, Schedule Sched, bool StreamK>
using BlockScaledGemm = CutlassBlockScaledHost<BlockScaledKernel<TileM, TileN, TileK, ElementOut, Sched, StreamK>>;

}  // namespace nvfp4_gemm::sm120
