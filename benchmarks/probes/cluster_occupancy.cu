// How many thread-block clusters of 2..8 CTAs (along z) a GPU keeps resident for a kernel shaped like the
// sm90 family's: the wgmma kernel (384 threads, one CTA per SM by its shared memory) and the direct kernel
// (256 threads, 64 KB, two per SM). The launcher takes the cluster split-K route where the grid's
// clusters all fit (launcher.cuh, cluster_split); the resolver's sm90 model needs the same count
// (python/nvfp4_gemm/sm90_model.py, CLUSTER_CTAS). cudaOccupancyMaxActiveClusters depends on the
// launch's resources only, so empty kernels with the same threads and shared memory answer for them.
//   nvcc -arch=sm_90a -o /tmp/cluster_occupancy benchmarks/probes/cluster_occupancy.cu && /tmp/cluster_occupancy
#include <cuda_runtime.h>

#include <cstdio>

__global__ void __launch_bounds__(384, 1) wgmma_shaped() { extern __shared__ char smem[]; smem[threadIdx.x] = 0; }
__global__ void __launch_bounds__(256, 2) direct_shaped() { extern __shared__ char smem[]; smem[threadIdx.x] = 0; }

template <class Kernel>
static void report(const char* name, Kernel kernel, int threads, int smem_bytes) {
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
  std::printf("%s (%d threads, %d bytes of shared memory): resident CTAs as clusters of", name, threads, smem_bytes);
  for (int split = 1; split <= 8; ++split) {
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(1, 1, split);
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = smem_bytes;
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim = {1, 1, static_cast<unsigned>(split)};
    config.attrs = &attribute;
    config.numAttrs = 1;
    int clusters = 0;
    const cudaError_t status = cudaOccupancyMaxActiveClusters(&clusters, kernel, &config);
    if (status != cudaSuccess) {
      std::printf(" %d: %s", split, cudaGetErrorString(status));
    } else {
      std::printf(" %d: %d", split, clusters * split);
    }
  }
  std::printf("\n");
}

int main() {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  // WgmmaShape's largest ring: 226 KB + 1 KB of realignment (csrc/include/nvfp4_gemm/sm90/wgmma_gemm.cuh)
  report("wgmma-shaped", wgmma_shaped, 384, 227 * 1024);
  report("direct-shaped", direct_shaped, 256, 64 * 1024);
  return 0;
}
