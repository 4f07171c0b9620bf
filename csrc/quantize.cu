// The quantize launcher and its host hook, instantiated for each input type.
#include "nvfp4_gemm/quantize/nvfp4_quantize.cuh"

namespace nvfp4_gemm::quantize {

LaunchStatus launch_quantize(const QuantizeProblem& problem, InputDtype dtype, int device, int sm_count,
                             cudaStream_t stream) {
  switch (dtype) {
    case InputDtype::kFloat32:
      return detail::launch<float>(problem, device, sm_count, stream);
    case InputDtype::kFloat16:
      return detail::launch<__half>(problem, device, sm_count, stream);
    case InputDtype::kBFloat16:
      return detail::launch<__nv_bfloat16>(problem, device, sm_count, stream);
  }
  return {false, "unknown input dtype"};
}

void quantize_on_host(const QuantizeProblem& problem, InputDtype dtype) {
  switch (dtype) {
    case InputDtype::kFloat32:
      return detail::quantize_on_host<float>(problem);
    case InputDtype::kFloat16:
      return detail::quantize_on_host<__half>(problem);
    case InputDtype::kBFloat16:
      return detail::quantize_on_host<__nv_bfloat16>(problem);
  }
}

}  // namespace nvfp4_gemm::quantize
