// The quantize launcher and its host hook, instantiated for each operand format and input type.
#include "nvfp4_gemm/quantize/mx_quantize.cuh"
#include "nvfp4_gemm/quantize/nvfp4_quantize.cuh"

namespace nvfp4_gemm::quantize {

namespace {

// Calls visit(Recipe{}, T{}) with the recipe of `format` and the C++ type of `dtype`; false if unknown.
template <class Visit>
bool dispatch(OperandFormat format, InputDtype dtype, Visit&& visit) {
  auto with_type = [&](auto recipe) {
    switch (dtype) {
      case InputDtype::kFloat32:
        visit(recipe, float{});
        return true;
      case InputDtype::kFloat16:
        visit(recipe, __half{});
        return true;
      case InputDtype::kBFloat16:
        visit(recipe, __nv_bfloat16{});
        return true;
    }
    return false;
  };
  switch (format) {
    case OperandFormat::kNvfp4:
      return with_type(detail::Nvfp4Recipe{});
    case OperandFormat::kMxfp4:
      return with_type(detail::MxRecipe<OperandFormat::kMxfp4>{});
    case OperandFormat::kMxfp8:
      return with_type(detail::MxRecipe<OperandFormat::kMxfp8>{});
  }
  return false;
}

}  // namespace

LaunchStatus launch_quantize(const QuantizeProblem& problem, OperandFormat format, InputDtype dtype, int device,
                             int sm_count, cudaStream_t stream) {
  LaunchStatus status{false, "unknown operand format or input dtype"};
  dispatch(format, dtype, [&](auto recipe, auto type) {
    status = detail::launch<decltype(recipe), decltype(type)>(problem, device, sm_count, stream);
  });
  return status;
}

void quantize_on_host(const QuantizeProblem& problem, OperandFormat format, InputDtype dtype) {
  dispatch(format, dtype, [&](auto recipe, auto type) {
    detail::quantize_on_host<decltype(recipe), decltype(type)>(problem);
  });
}

}  // namespace nvfp4_gemm::quantize
