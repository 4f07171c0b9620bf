// Probe: does a cooperative grid start in part while another stream's kernel holds the room some of its
// CTAs need? The quantize kernels whose CTAs wait for each other's partials (one-pass, resident) rely on
// the launch's cooperative attribute for that: if such a grid could start in part, its first CTAs would
// spin on CTAs that a kernel of another stream (NCCL's, waiting on a peer) keeps out.
//
// A "hog" kernel on stream 1 holds one CTA per SM with more than half an SM's shared memory, spinning on a
// flag in host-mapped memory. Then a grid of two CTAs per SM (each under half an SM's shared memory: one
// fits beside the hog, two only once it leaves) is launched on stream 2 through the package's own
// launch_kernel, with and without the cooperative attribute. Each CTA counts its start in mapped memory.
// While the hog holds, a plain grid's CTAs run beside it, one per SM at a time (the control: the probe
// sees a grid start in part; as its CTAs end at once, all of them pass through); a cooperative grid that
// starts only whole starts none. Then the hog is released and every grid must finish whole. Output:
// docs/h100-2026-11-26/quantize-full-grid/cooperative_start_probe.txt.
// Build and run on the GPU:
//   nvcc -O3 -std=c++17 -arch=sm_90a -Icsrc/include -o /tmp/cooperative_start_probe \
//        benchmarks/probes/cooperative_start_probe.cu && /tmp/cooperative_start_probe
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "nvfp4_gemm/launch_kernel.h"

#define CHECK(call)                                                                        \
  do {                                                                                     \
    const cudaError_t err_ = (call);                                                       \
    if (err_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

__global__ void hog(const volatile int* release, int* started) {
  extern __shared__ int hog_smem[];
  if (threadIdx.x == 0) {
    atomicAdd_system(started, 1);
    while (*release == 0) __nanosleep(2000);
  }
  __syncthreads();
  hog_smem[threadIdx.x] = threadIdx.x;
}

__global__ void waiter(int* started, int* finished) {
  extern __shared__ int waiter_smem[];
  if (threadIdx.x == 0) atomicAdd_system(started, 1);
  waiter_smem[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd_system(finished, 1);
}

int main() {
  int device = 0, sms = 0, sm_smem = 0, optin = 0, reserved = 0;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CHECK(cudaDeviceGetAttribute(&sm_smem, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, device));
  // hog: over half an SM; waiter: one beside the hog, two per SM without it
  const int hog_bytes = sm_smem / 2 + 8 * 1024;
  const int waiter_bytes = (sm_smem - hog_bytes) - 2 * reserved - 1024;
  CHECK(cudaFuncSetAttribute(hog, cudaFuncAttributeMaxDynamicSharedMemorySize, hog_bytes));
  CHECK(cudaFuncSetAttribute(waiter, cudaFuncAttributeMaxDynamicSharedMemorySize, waiter_bytes));
  // both at the largest shared-memory carve-out: an SM runs CTAs of one carve-out at a time, and the
  // smallest one that fits the hog leaves no room beside it
  CHECK(cudaFuncSetAttribute(hog, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  CHECK(cudaFuncSetAttribute(waiter, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, waiter, 512, waiter_bytes));
  std::printf("%s, %d SMs, %d B shared memory per SM (opt-in %d per CTA); hog %d B x 1 CTA per SM, "
              "waiter %d B x %d CTAs per SM\n",
              prop.name, sms, sm_smem, optin, hog_bytes, waiter_bytes, per_sm);
  if (per_sm < 2) {
    std::printf("waiter does not fit twice per SM: no probe\n");
    return 1;
  }
  int* mapped = nullptr;  // [0] release, [1] hog started, [2] waiter started, [3] waiter finished
  CHECK(cudaHostAlloc(&mapped, 4 * sizeof(int), cudaHostAllocMapped));
  int* dev = nullptr;
  CHECK(cudaHostGetDevicePointer(&dev, mapped, 0));
  cudaStream_t hog_stream, waiter_stream;
  CHECK(cudaStreamCreateWithFlags(&hog_stream, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&waiter_stream, cudaStreamNonBlocking));
  volatile int* flags = mapped;

  struct Case {
    const char* name;
    nvfp4_gemm::LaunchAttributes attributes;
  };
  const Case cases[] = {
      {"plain", {}},
      {"cooperative", {/*programmatic=*/false, /*cooperative=*/true}},
      {"cooperative + programmatic (the quantize kernels')", {/*programmatic=*/true, /*cooperative=*/true}},
  };
  bool as_expected = true;
  for (int round = 0; round < 3; ++round) {
    for (const Case& c : cases) {
      for (int i = 0; i < 4; ++i) flags[i] = 0;
      CHECK(nvfp4_gemm::launch_kernel(hog, dim3(sms), dim3(128), hog_bytes, hog_stream, {}, dev, dev + 1));
      while (flags[1] < sms) {
      }
      const int grid = sms * per_sm;
      CHECK(nvfp4_gemm::launch_kernel(waiter, dim3(grid), dim3(512), waiter_bytes, waiter_stream, c.attributes,
                                      dev + 2, dev + 3));
      usleep(200 * 1000);
      const int started_beside = flags[2];
      flags[0] = 1;
      CHECK(cudaStreamSynchronize(hog_stream));
      CHECK(cudaStreamSynchronize(waiter_stream));
      const bool whole = flags[3] == grid;
      std::printf("round %d, %-52s grid %d: %4d CTAs started while the hog held its SMs; %d finished\n", round,
                  c.name, grid, started_beside, flags[3]);
      as_expected = as_expected && whole && (c.attributes.cooperative ? started_beside == 0 : started_beside > 0);
    }
  }
  std::printf("%s\n", as_expected ? "as expected: plain grids start in part, cooperative grids only whole"
                                  : "NOT as expected (see the rows above)");
  return as_expected ? 0 : 2;
}
