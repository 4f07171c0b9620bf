// What the binding (pybind11, Python) and the C++ op (torch_op.cpp, torch's stable ABI only) share;
// the two never include each other's headers (torch's bundled pybind11 refuses stable-ABI builds).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nvfp4_gemm/kernel_entry.h"

namespace nvfp4_gemm {

// Throws std::runtime_error naming the kernel when the launch fails.
void launch_entry(const KernelEntry* entry, const GemmProblem& problem, int split_k, void* workspace,
                  std::size_t workspace_capacity, unsigned int* counters, std::size_t counter_capacity, int device,
                  cudaStream_t stream);

// --- the C++ op's Python path (implemented in binding.cpp) ---------------------------------------

// The plan the Python path made for one signature: what a later call of it launches.
struct OpPlan {
  const KernelEntry* entry = nullptr;
  int m = 0, n = 0, k = 0, l = 0, split_k = 1;
  std::size_t workspace_bytes = 0;
  std::size_t counters = 0;
  std::vector<std::int64_t> out_sizes;
};

// What the Python path of one call answered.
struct FirstCallAnswer {
  std::uintptr_t out_handle = 0;  // a new AtenTensorHandle of the output, for the caller to own (0: none)
  std::string error;              // the Python exception's text (the call failed; nothing else is set)
  bool planned = false;           // a kernel ran: `plan` serves the signature from now on
  OpPlan plan;
};

// Calls the op's Python path, `module`._op_first_call, on `handles`: new AtenTensorHandles (0: None)
// that it takes over, in the order it documents. It returns (an output handle or None, the plan or
// None). Keeps the Python exception for take_op_error.
FirstCallAnswer op_first_call(const char* module, const std::uintptr_t* handles, std::size_t count);

// Signatures the C++ op serves without Python (implemented in torch_op.cpp).
std::size_t op_plan_count();

}  // namespace nvfp4_gemm
