// The dynamic shared-memory opt-in every family's launcher makes, once per kernel and device.
// Framework-free: the CUDA runtime only.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>

#include "nvfp4_gemm/kernel_entry.h"

namespace nvfp4_gemm {

// Above 48 KB a kernel must opt in to its dynamic shared memory. The attribute belongs to the kernel in
// one device's context, so it is set on the first launch on each device (the caller made that device
// current) and remembered in one flag per device: a second GPU in the process gets its own opt-in.
template <auto kKernel>
struct DynamicSmem {
  static bool opt_in(int device_id, int smem_bytes) {
    static std::array<std::atomic<bool>, kMaxDevices> done{};
    if (device_id < 0 || device_id >= kMaxDevices) return false;
    if (smem_bytes < (48 << 10) || done[device_id].load(std::memory_order_acquire)) return true;
    if (cudaFuncSetAttribute(reinterpret_cast<const void*>(kKernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                             smem_bytes) != cudaSuccess) {
      (void)cudaGetLastError();  // not sticky: clear it so that later calls see their own errors
      return false;
    }
    done[device_id].store(true, std::memory_order_release);
    return true;
  }

  // The attribute as the current device's context holds it (-1 if it cannot be read): a test hook.
  static int attribute() {
    cudaFuncAttributes attributes{};
    if (cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kKernel)) != cudaSuccess) {
      (void)cudaGetLastError();
      return -1;
    }
    return attributes.maxDynamicSharedSizeBytes;
  }
};

}  // namespace nvfp4_gemm
