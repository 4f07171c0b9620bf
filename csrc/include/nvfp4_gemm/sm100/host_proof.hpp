// Host-side proofs for a BlockScaledGemm: both hooks take the arguments the launcher builds
// (Kernel::make_arguments) and evaluate them on the CPU, so a wrong stride, scale layout or B
// orientation in the launcher shows up in a CPU test. No device is touched.
#pragma once

#include <cute/tensor.hpp>
#include <cutlass/util/reference/host/gett.hpp>

#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "nvfp4_gemm/kernel_entry.h"
#include "nvfp4_gemm/problem.h"
#include "nvfp4_gemm/sm100/weight_only_gemm.cuh"

namespace nvfp4_gemm::sm100 {

template <class Kernel>
void scale_offsets(ScaleOperand operand, int rows, int k, int l, std::int64_t* offsets) {
  // The other operand gets a different row count, so a launcher that mixed up M and N (or SFA and
  // SFB) would produce different offsets here.
  const int other_rows = 2 * rows + 136;
  GemmProblem p;
  p.m = operand == ScaleOperand::kA ? rows : other_rows;
  p.n = operand == ScaleOperand::kA ? other_rows : rows;
  p.k = k;
  p.l = l;
  const auto args = Kernel::make_arguments(p, /*device_id=*/0, /*sm_count=*/1, /*split_k=*/1);
  // For a swap-AB kernel the user's a scales are the kernel's SFB: the hook answers for the user's
  // operand, so the test's expectation is the same for every kernel.
  const auto& layout = Kernel::user_scale_layout(args, operand);
  constexpr int kBlock = Kernel::kValuesPerScale;
  const int k_blocks = k / kBlock;
  // The scale layouts are indexed by element coordinates (row, k, l) with stride 0 inside each
  // block of kBlock elements, so block c is read at k = kBlock * c.
  std::int64_t i = 0;
  for (int batch = 0; batch < l; ++batch)
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < k_blocks; ++c) offsets[i++] = layout(r, kBlock * c, batch);
}

template <class Kernel>
void host_reference(const GemmProblem& p, double alpha, double* out) {
  using namespace cute;
  using DataA = typename Kernel::ElementDataA;
  using DataB = typename Kernel::ElementDataB;
  const auto args = Kernel::make_arguments(p, /*device_id=*/0, /*sm_count=*/1, /*split_k=*/1);
  const auto& ml = args.mainloop;
  const auto& shape = args.problem_shape;  // the kernel's own (M, N, K, L): swapped for swap-AB
  const int m = cute::get<0>(shape), n = cute::get<1>(shape);

  // Everything below comes from the arguments the device would receive: pointers, strides, scale
  // layouts and the output stride; the user's problem is not consulted again.
  auto tensor_a = make_tensor(recast_ptr<DataA>(const_cast<DataA*>(ml.ptr_A)), make_layout(make_shape(m, p.k, p.l), ml.dA));
  auto tensor_b = make_tensor(recast_ptr<DataB>(const_cast<DataB*>(ml.ptr_B)), make_layout(make_shape(n, p.k, p.l), ml.dB));
  auto tensor_sfa = make_tensor(ml.ptr_SFA, ml.layout_SFA);
  auto tensor_sfb = make_tensor(ml.ptr_SFB, ml.layout_SFB);
  auto layout_d = make_layout(make_shape(m, n, p.l), args.epilogue.dD);
  // The kernel writes ElementOut through ptr_D; the reference writes float64 at the same element
  // offsets into `out` (the test's (l, m, n) buffer), so a wrong output stride moves the results.
  auto tensor_d = make_tensor(out, layout_d);
  // The kernel has no source tensor (ElementC = void); a null C keeps the reference from reading one.
  auto tensor_c = make_tensor(static_cast<double*>(nullptr), layout_d);

  // float64 accumulation: products of two dequantized NVFP4 values need 12 significant bits (MX: 6, times
  // powers of two), so the sums here are exact for the test data, and the Python side rounds once to the out dtype.
  cutlass::reference::host::GettBlockScalingMainloopParams<double, decltype(tensor_a), decltype(tensor_sfa),
                                                           decltype(tensor_b), decltype(tensor_sfb)>
      mainloop{tensor_a, tensor_sfa, tensor_b, tensor_sfb};
  // A per-column-alpha kernel: the sums first (alpha 1), then each element times the alpha the epilogue
  // arguments route to it (below).
  cutlass::reference::host::GettBlockScalingEpilogueParams<double, double, double, decltype(tensor_c),
                                                           decltype(tensor_d)>
      epilogue{Kernel::kColumnAlpha ? 1.0 : alpha, 0.0, tensor_c, tensor_d};
  cutlass::reference::host::Gemm3x(mainloop, epilogue);
  if constexpr (Kernel::kColumnAlpha) {
    // alpha from the arguments the device receives: its pointer (problem.alpha, a host pointer here) and
    // the broadcast strides over the kernel's (M, N, L), or, with a null pointer, the scalar the epilogue
    // falls back to; `alpha` is not consulted. A misrouted pointer or stride moves the factors.
    const auto& thread = args.epilogue.thread;
    const auto& stride = thread.dAlpha;
    for (int batch = 0; batch < p.l; ++batch)
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          const std::int64_t at = i * std::int64_t(get<0>(stride)) + j * std::int64_t(get<1>(stride)) +
                                  batch * std::int64_t(get<2>(stride));
          tensor_d(i, j, batch) *= double(thread.alpha_ptr != nullptr ? thread.alpha_ptr[at] : thread.alpha);
        }
  }
}

// The weight-only kernels (weight_only_gemm.cuh): the user's b scales pass through the launch's conversion
// (scale_source_offset) and then the kernel's own scale layout; the hook composes the two.
template <class Kernel>
void weight_only_scale_offsets(ScaleOperand operand, int rows, int k, int l, std::int64_t* offsets) {
  if (operand == ScaleOperand::kA) {
    throw std::invalid_argument("a weight-only kernel reads no a scales: its tokens are used as given");
  }
  GemmProblem p;
  p.m = 2 * rows + 136;  // another row count for the tokens, so that a mixed-up M and N shows
  p.n = rows;
  p.k = k;
  p.l = l;
  const auto args = Kernel::make_arguments(p, /*scales=*/nullptr, /*device_id=*/0, /*sm_count=*/1);
  const auto& layout = args.mainloop.layout_S;
  const int k_blocks = k / Kernel::kValuesPerScale;
  std::int64_t i = 0;
  for (int batch = 0; batch < l; ++batch)
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < k_blocks; ++c) {
        offsets[i++] = scale_source_offset(layout(r, Kernel::kValuesPerScale * c, batch), rows, k_blocks);
      }
}

// The weight-only GEMM over the launcher's own arguments on the CPU: the scales converted by the launch's
// own function into a host buffer, then every operand read through the arguments' pointers, strides and
// scale layout (the kernel's (M, N) being the user's (N, M)), float64 sums of the exact dequantized
// products (a 16-bit token times e2m1 times e4m3 needs at most 17 significant bits).
template <class Kernel>
void weight_only_host_reference(const GemmProblem& p, double alpha, double* out) {
  using namespace cute;
  const int k_blocks = p.k / Kernel::kValuesPerScale;
  const std::int64_t count = Kernel::scale_count(p);
  std::vector<typename Kernel::Scale> scales(count);
  const auto* blocked = static_cast<const std::uint8_t*>(p.b_scale_blocked);
  for (std::int64_t i = 0; i < count; ++i) {
    scales[i] = e4m3_to<typename Kernel::Scale>(blocked[scale_source_offset(i, p.n, k_blocks)]);
  }
  const auto args = Kernel::make_arguments(p, scales.data(), /*device_id=*/0, /*sm_count=*/1);
  const auto& ml = args.mainloop;
  const int kernel_m = get<0>(args.problem_shape), kernel_n = get<1>(args.problem_shape);
  using Weight = typename Kernel::Weight;
  // the argument's address as e2m1 elements (the collective types its pointer by its own storage type)
  auto weights = make_tensor(recast_ptr<Weight>(static_cast<Weight*>(const_cast<void*>(static_cast<const void*>(ml.ptr_A)))),
                             make_layout(make_shape(kernel_m, p.k, p.l), ml.dA));
  auto tokens = make_tensor(ml.ptr_B, make_layout(make_shape(kernel_n, p.k, p.l), ml.dB));
  auto scale = make_tensor(ml.ptr_S, ml.layout_S);
  auto result = make_tensor(out, make_layout(make_shape(kernel_m, kernel_n, p.l), args.epilogue.dD));
  for (int batch = 0; batch < p.l; ++batch)
    for (int i = 0; i < kernel_m; ++i)
      for (int j = 0; j < kernel_n; ++j) {
        double sum = 0.0;
        for (int kk = 0; kk < p.k; ++kk) {
          sum += double(float(Weight(weights(i, kk, batch)))) * double(float(scale(i, kk, batch))) *
                 double(float(tokens(j, kk, batch)));
        }
        result(i, j, batch) = alpha * sum;
      }
}

template <class Kernel, class = void>
struct IsWeightOnly : std::false_type {};
template <class Kernel>
struct IsWeightOnly<Kernel, std::void_t<decltype(Kernel::kWeightOnly)>> : std::bool_constant<Kernel::kWeightOnly> {};

// A kernel's two hooks: the weight-only ones or the block-scaled ones (only the chosen pair is instantiated).
template <class Kernel>
constexpr auto scale_offsets_hook() {
  if constexpr (IsWeightOnly<Kernel>::value) {
    return &weight_only_scale_offsets<Kernel>;
  } else {
    return &scale_offsets<Kernel>;
  }
}
template <class Kernel>
constexpr auto host_reference_hook() {
  if constexpr (IsWeightOnly<Kernel>::value) {
    return &weight_only_host_reference<Kernel>;
  } else {
    return &host_reference<Kernel>;
  }
}

// The registry entry for one instantiation; the generator emits one call per (config, out dtype), with
// the family's compute capability major (python/nvfp4_gemm/families.py).
template <class Kernel>
constexpr KernelEntry make_entry(const char* config_name, OutDtype out_dtype, int sm_major) {
  return KernelEntry{config_name,
                     out_dtype,
                     sm_major,
                     &Kernel::can_implement,
                     &Kernel::workspace_bytes,
                     &Kernel::counters_needed,
                     /*launch=*/nullptr,
                     scale_offsets_hook<Kernel>(),
                     host_reference_hook<Kernel>(),
                     Kernel::kPipelineStages,
                     &Kernel::prepare,
                     Kernel::kDynamicSmemBytes,
                     &Kernel::dynamic_smem_attribute,
                     Kernel::kColumnAlpha};
}

}  // namespace nvfp4_gemm::sm100
