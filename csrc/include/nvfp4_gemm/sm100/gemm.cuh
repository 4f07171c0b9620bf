// The sm100 family's kernel type for one config row (python/nvfp4_gemm/families.py writes this template):
// block-scaled operands on both sides run BlockScaledGemm; 16-bit activations as given (a weight-only
// format: OperandA is cutlass::bfloat16_t or cutlass::half_t) run WeightOnlyGemm, whose rows are swap-AB,
// data-parallel, one alpha, NVFP4 weights (configs.py checks the rows; the asserts below the types).
#pragma once

#include <type_traits>

#include "nvfp4_gemm/sm100/blockscaled_gemm.cuh"
#include "nvfp4_gemm/sm100/weight_only_gemm.cuh"

namespace nvfp4_gemm::sm100 {

template <class OperandA>
inline constexpr bool kTokensAsGiven =
    std::is_same_v<OperandA, cutlass::bfloat16_t> || std::is_same_v<OperandA, cutlass::half_t>;

template <int TileM, int TileN, int TileK, int ClusterM, int ClusterN, class ElementOut, bool StreamK, bool SwapAB,
          class OperandA, class OperandB, bool PerColumnAlpha, bool WeightOnly = kTokensAsGiven<OperandA>>
struct GemmSelect {
  using type = BlockScaledGemm<TileM, TileN, TileK, ClusterM, ClusterN, ElementOut, StreamK, SwapAB, OperandA,
                               OperandB, PerColumnAlpha>;
};

template <int TileM, int TileN, int TileK, int ClusterM, int ClusterN, class ElementOut, bool StreamK, bool SwapAB,
          class OperandA, class OperandB, bool PerColumnAlpha>
struct GemmSelect<TileM, TileN, TileK, ClusterM, ClusterN, ElementOut, StreamK, SwapAB, OperandA, OperandB,
                  PerColumnAlpha, /*WeightOnly=*/true> {
  static_assert(SwapAB && !StreamK && !PerColumnAlpha, "weight-only sm100 rows are swap-AB, data-parallel, one alpha");
  static_assert(std::is_same_v<OperandB, cutlass::nv_float4_t<cutlass::float_e2m1_t>>, "NVFP4 weights");
  using type = WeightOnlyGemm<TileM, TileN, TileK, ClusterM, ClusterN, ElementOut, OperandA>;
};

template <int TileM, int TileN, int TileK, int ClusterM, int ClusterN, class ElementOut, bool StreamK, bool SwapAB,
          class OperandA, class OperandB, bool PerColumnAlpha>
using Gemm = typename GemmSelect<TileM, TileN, TileK, ClusterM, ClusterN, ElementOut, StreamK, SwapAB, OperandA,
                                 OperandB, PerColumnAlpha>::type;

}  // namespace nvfp4_gemm::sm100
