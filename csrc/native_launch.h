// What the binding (pybind11, Python) and the C++ op (torch_op.cpp, torch's stable ABI only) share;
// the two never include each other's headers (torch's bundled pybind11 refuses stable-ABI builds).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nvfp4_gemm/kernel_entry.h"
#include "nvfp4_gemm/quantize/quantize.h"

namespace nvfp4_gemm {

// Throws std::runtime_error naming the kernel when the launch fails.
void launch_entry(const KernelEntry* entry, const GemmProblem& problem, int split_k, void* workspace,
                  std::size_t workspace_capacity, unsigned int* counters, std::size_t counter_capacity, int device,
                  cudaStream_t stream);

// Quantizes on `stream` of `device` (the problem already checked); throws std::runtime_error when the
// launch fails.
void launch_quantize(const quantize::QuantizeProblem& problem, OperandFormat format, quantize::InputDtype dtype,
                     int device, cudaStream_t stream);

// --- the C++ op's Python path (implemented in binding.cpp) ---------------------------------------

// What the Python path of one call answered.
struct FirstCallAnswer {
  std::vector<std::uintptr_t> out_handles;  // new AtenTensorHandles of the outputs, for the caller to own
  std::string error;                        // the Python exception's text (the call failed; nothing else is set)
  bool planned = false;                     // a kernel ran: `plan` serves the signature from now on
  std::vector<std::int64_t> plan;           // the op's plan, as integers in the order its module documents
};

// Calls the op's Python path, `module`._op_first_call, on `handles`: new AtenTensorHandles (0: None)
// that it takes over, in the order it documents, then `text` as a str where given. It returns (None,
// an output handle or a tuple of them; the plan or None). Keeps the Python exception for take_op_error.
FirstCallAnswer op_first_call(const char* module, const std::uintptr_t* handles, std::size_t count,
                              const std::string_view* text = nullptr);

// Signatures the C++ op serves without Python (implemented in torch_op.cpp).
std::size_t op_plan_count();

}  // namespace nvfp4_gemm
