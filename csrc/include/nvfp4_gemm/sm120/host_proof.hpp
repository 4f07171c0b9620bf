// Host-side proofs and the registry entry for an sm120 BlockScaledGemm. The proof hooks are the
// sm100 family's, unchanged: they are written against the launcher's interface (make_arguments,
// user_scale_layout, ElementData, ElementScale), not against a family, and evaluate the arguments
// the sm120 launcher builds on the CPU. No device is touched.
#pragma once

#include "nvfp4_gemm/kernel_entry.h"
#include "nvfp4_gemm/problem.h"
#include "nvfp4_gemm/sm100/host_proof.hpp"

namespace nvfp4_gemm::sm120 {

template <class Kernel>
void scale_offsets(ScaleOperand operand, int rows, int k, int l, std::int64_t* offsets) {
  sm100::scale_offsets<Kernel>(operand, rows, k, l, offsets);
}

template <class Kernel>
void host_reference(const GemmProblem& p, double alpha, double* out) {
  sm100::host_reference<Kernel>(p, alpha, out);
}

// The registry entry for one instantiation; the generator emits one call per (config, out dtype), with
// the family's compute capability major (12: 12.0 and 12.1 run the same sm_120f cubins).
template <class Kernel>
constexpr KernelEntry make_entry(const char* config_name, OutDtype out_dtype, int sm_major) {
  return KernelEntry{config_name,
                     out_dtype,
                     sm_major,
                     &Kernel::can_implement,
                     &Kernel::workspace_bytes,
                     &Kernel::counters_needed,
                     /*launch=*/nullptr,
                     &scale_offsets<Kernel>,
                     &host_reference<Kernel>,
                     Kernel::kPipelineStages,
                     &Kernel::prepare,
                     Kernel::kDynamicSmemBytes,
                     &Kernel::dynamic_smem_attribute};
}

}  // namespace nvfp4_gemm::sm120
