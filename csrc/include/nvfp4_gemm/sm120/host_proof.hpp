// Host-side proofs and the registry entry for an sm120 BlockScaledGemm: the sm100 family's, unchanged. The
// hooks are written against the launcher's interface (make_arguments, user_scale_layout, ElementDataA/B,
// ElementScale; cutlass_blockscaled_host.h), not against a family, and evaluate the arguments the sm120
// launcher builds on the CPU. No device is touched. The generator emits sm120::make_entry per (config, out
// dtype) with the family's compute capability major (12: 12.0 and 12.1 run the same sm_120f cubins).
#pragma once

#include "nvfp4_gemm/sm100/host_proof.hpp"

namespace nvfp4_gemm::sm120 {

using sm100::make_entry;

}  // namespace nvfp4_gemm::sm120
