// Host-side proofs for a BlockScaledGemm: both hooks take the arguments the launcher builds
// (Kernel::make_arguments) and evaluate them on the CPU, so a wrong stride, scale layout or B
// orientation in the launcher shows up in a CPU test. No device is touched.
#pragma once

#include <cute/tensor.hpp>
#include <cutlass/util/reference/host/gett.hpp>

#include <cstdint>

#include "nvfp4_gemm/kernel_entry.h"
#include "nvfp4_gemm/problem.h"

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
  const auto args = Kernel::make_arguments(p, /*device_id=*/0, /*sm_count=*/1);
  const int k_blocks = k / 16;
  auto walk = [&](const auto& layout) {
    std::int64_t i = 0;
    // The scale layouts are indexed by element coordinates (row, k, l) with stride 0 inside each
    // 16-element block, so block c is read at k = 16 * c.
    for (int batch = 0; batch < l; ++batch)
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < k_blocks; ++c) offsets[i++] = layout(r, 16 * c, batch);
  };
  if (operand == ScaleOperand::kA) {
    walk(args.mainloop.layout_SFA);
  } else {
    walk(args.mainloop.layout_SFB);
  }
}

template <class Kernel>
void host_reference(const GemmProblem& p, double alpha, double* out) {
  using namespace cute;
  using Data = typename Kernel::ElementData;
  using Scale = typename Kernel::ElementScale;
  const auto args = Kernel::make_arguments(p, /*device_id=*/0, /*sm_count=*/1);
  const auto& ml = args.mainloop;

  auto tensor_a = make_tensor(recast_ptr<Data>(const_cast<void*>(p.a)),
                              make_layout(make_shape(p.m, p.k, p.l), ml.dA));
  auto tensor_b = make_tensor(recast_ptr<Data>(const_cast<void*>(p.b)),
                              make_layout(make_shape(p.n, p.k, p.l), ml.dB));
  auto tensor_sfa = make_tensor(static_cast<const Scale*>(p.a_scale_blocked), ml.layout_SFA);
  auto tensor_sfb = make_tensor(static_cast<const Scale*>(p.b_scale_blocked), ml.layout_SFB);
  auto layout_d = make_layout(make_shape(p.m, p.n, p.l), args.epilogue.dD);
  auto tensor_d = make_tensor(out, layout_d);
  // The kernel has no source tensor (ElementC = void); a null C keeps the reference from reading one.
  auto tensor_c = make_tensor(static_cast<double*>(nullptr), layout_d);

  // float64 accumulation: products of two dequantized NVFP4 values need 12 significant bits, so
  // the sums here are exact for the test data, and the Python side rounds once to the out dtype.
  cutlass::reference::host::GettBlockScalingMainloopParams<double, decltype(tensor_a), decltype(tensor_sfa),
                                                           decltype(tensor_b), decltype(tensor_sfb)>
      mainloop{tensor_a, tensor_sfa, tensor_b, tensor_sfb};
  cutlass::reference::host::GettBlockScalingEpilogueParams<double, double, double, decltype(tensor_c),
                                                           decltype(tensor_d)>
      epilogue{alpha, 0.0, tensor_c, tensor_d};
  cutlass::reference::host::Gemm3x(mainloop, epilogue);
}

// The registry entry for one instantiation; the generator emits one call per (config, out dtype).
template <class Kernel>
constexpr KernelEntry make_entry(const char* config_name, OutDtype out_dtype) {
  return KernelEntry{config_name,
                     out_dtype,
                     /*sm_major=*/10,
                     &Kernel::can_implement,
                     &Kernel::workspace_bytes,
                     &Kernel::counters_needed,
                     &Kernel::launch,
                     &scale_offsets<Kernel>,
                     &host_reference<Kernel>};
}

}  // namespace nvfp4_gemm::sm100
