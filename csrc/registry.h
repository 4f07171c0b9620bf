// The kernel registry: every compiled (config, out dtype) entry, found by stable name.
// The entries themselves are generated from csrc/configs.toml (kernel_table.cpp in the build dir).
#pragma once

#include <cstddef>
#include <string_view>

#include "nvfp4_gemm/kernel_entry.h"

namespace nvfp4_gemm {

// Generated: kKernelTableSize entries followed by a nullptr sentinel.
extern const KernelEntry* const kKernelTable[];
extern const std::size_t kKernelTableSize;

// nullptr when the wheel carries no such kernel.
const KernelEntry* find_kernel(std::string_view config_name, OutDtype out_dtype);

}  // namespace nvfp4_gemm
