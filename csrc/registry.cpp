#include "registry.h"

namespace nvfp4_gemm {

const KernelEntry* find_kernel(std::string_view config_name, OutDtype out_dtype) {
  // Linear scan: called when a config is resolved, never per GEMM call, and the table is small.
  for (std::size_t i = 0; i < kKernelTableSize; ++i) {
    const KernelEntry* entry = kKernelTable[i];
    if (entry->out_dtype == out_dtype && config_name == entry->config_name) return entry;
  }
  return nullptr;
}

}  // namespace nvfp4_gemm
