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

}  // namespace nvfp4_gemm
