// One kernel launch through cudaLaunchKernelEx with the attributes the package's own kernels ask for
// (quantize and the sm90 family; CUTLASS launches its kernels itself). Framework-free: the CUDA runtime only.
#pragma once

#include <cuda_runtime.h>  // cudaLaunchKernelEx's C++ template

#include <cstddef>

namespace nvfp4_gemm {

// What a launch asks beyond its grid, block, dynamic shared memory and stream.
struct LaunchAttributes {
  // programmatic dependent launch: the grid may start while the kernel before it in the stream runs, and
  // waits (griddepcontrol.wait) before it reads what that kernel writes
  bool programmatic = false;
  // every CTA resident at once: for CTAs that wait for each other
  bool cooperative = false;
  // > 1: thread-block clusters of that many CTAs along z
  int cluster_z = 1;
};
constexpr LaunchAttributes kProgrammaticLaunch{/*programmatic=*/true};

template <class Kernel, class... Args>
cudaError_t launch_kernel(Kernel kernel, dim3 grid, dim3 block, int dynamic_smem_bytes, cudaStream_t stream,
                          LaunchAttributes wanted, Args... args) {
  cudaLaunchAttribute attributes[3] = {};
  unsigned count = 0;
  if (wanted.programmatic) {
    attributes[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[count++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (wanted.cooperative) {
    attributes[count].id = cudaLaunchAttributeCooperative;
    attributes[count++].val.cooperative = 1;
  }
  if (wanted.cluster_z > 1) {
    attributes[count].id = cudaLaunchAttributeClusterDimension;
    attributes[count++].val.clusterDim = {1, 1, static_cast<unsigned>(wanted.cluster_z)};
  }
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = static_cast<std::size_t>(dynamic_smem_bytes);
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = count;
  return cudaLaunchKernelEx(&config, kernel, args...);
}

// Thread-block clusters of `cluster_z` CTAs (along z) of `kernel` that the GPU keeps resident at once, at
// `threads` per CTA and `dynamic_smem_bytes` (above 48 KB the kernel must have opted in first); 0 where the
// query fails (its error cleared).
template <class Kernel>
int resident_clusters(Kernel kernel, int threads, int dynamic_smem_bytes, int cluster_z) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1, 1, static_cast<unsigned>(cluster_z));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = static_cast<std::size_t>(dynamic_smem_bytes);
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim = {1, 1, static_cast<unsigned>(cluster_z)};
  config.attrs = &attribute;
  config.numAttrs = 1;
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return clusters;
}

}  // namespace nvfp4_gemm
