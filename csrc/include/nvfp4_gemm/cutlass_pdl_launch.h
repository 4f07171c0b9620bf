// The launch every CUTLASS plan (sm100, sm120) ends with: the kernel's shared-memory opt-in on its device (once
// per device), then CUTLASS's run with programmatic dependent launch (the kernel waits, griddepcontrol.wait, before
// its first global memory access).
#pragma once

#include <cuda_runtime_api.h>

#include <cutlass/cutlass.h>

#include "nvfp4_gemm/kernel_entry.h"

namespace nvfp4_gemm {

template <class Gemm, class Smem>
LaunchStatus run_with_pdl(typename Gemm::Params& params, int device_id, int smem_bytes, cudaStream_t stream) {
  if (!Smem::opt_in(device_id, smem_bytes)) {
    return {false, "cudaFuncSetAttribute(max dynamic shared memory) failed"};
  }
  if (Gemm::run(params, stream, /*cuda_adapter=*/nullptr, /*launch_with_pdl=*/true) != cutlass::Status::kSuccess) {
    return {false, "CUTLASS kernel launch failed"};
  }
  return {};
}

}  // namespace nvfp4_gemm
