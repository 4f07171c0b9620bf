// How many thread-block clusters of 2..8 CTAs (along z) a GPU keeps resident for a kernel shaped like the
// sm90 wgmma kernel (384 threads, one CTA per SM by its shared memory). The launcher takes the cluster
// split-K route where the grid's clusters all fit (launcher.cuh, cluster_split, asking the GPU the same
// question through resident_clusters); the resolver's sm90 model needs the counts ahead of time
// (python/nvfp4_gemm/sm90_model.py, WGMMA_CLUSTER_CTAS_132). With one CTA per SM set by shared memory, an
// empty kernel of the same threads and shared memory answers for the real one.
//   nvcc -arch=sm_90a -Icsrc/include -o /tmp/cluster_occupancy benchmarks/probes/cluster_occupancy.cu && /tmp/cluster_occupancy
#include <cuda_runtime.h>

#include "nvfp4_gemm/launch_kernel.h"  // resident_clusters: the launcher's own query

#include <cstdio>

__global__ void __launch_bounds__(384, 1) wgmma_shaped() { extern __shared__ char smem[]; smem[threadIdx.x] = 0; }

template <class Kernel>
static void report(const char* name, Kernel kernel, int threads, int smem_bytes) {
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
  std::printf("%s (%d threads, %d bytes of shared memory): resident CTAs as clusters of", name, threads, smem_bytes);
  for (int split = 1; split <= 8; ++split) {
    std::printf(" %d: %d", split, nvfp4_gemm::resident_clusters(kernel, threads, smem_bytes, split) * split);
  }
  std::printf("\n");
}

int main() {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  // WgmmaShape's largest ring: 226 KB + 1 KB of realignment (csrc/include/nvfp4_gemm/sm90/wgmma_gemm.cuh)
  report("wgmma-shaped", wgmma_shaped, 384, 227 * 1024);
  return 0;
}
