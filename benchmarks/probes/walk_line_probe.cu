// Probe: is the 1.2 us that the resident quantize kernel's shared memory costs its walk (perf notes, "The dynamic
// quantize's walk against plain reads of x") the L1 it leaves? A thread reads its 32-byte block as two 16-byte
// loads ("pairs"): the second finds the sector in L1 only while the L1 still holds it, and with 113 KB of shared
// memory per CTA (two CTAs per SM) the L1 is ~28 KB against ~128 KB of loads in flight per SM. The same bytes read
// so that every load instruction covers whole lines ("lines": a warp's 1 KB of 32 blocks as two 512-byte loads,
// lane l taking vectors l and 32 + l) need no L1 hit. x = bf16 8192x7168 (117.4 MB), 264 CTAs of 512 threads
// striding over it, 4 blocks per thread in flight; CUDA events, median of 50, after a dirty flush (a 256 MB memset,
// as nvfp4_gemm.tools.timing) and after a clean one (a read of 256 MB).
//   nvcc -O3 -std=c++17 -arch=sm_90a benchmarks/probes/walk_line_probe.cu -o /tmp/walk_line_probe
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "weight_stream.cuh"  // fold, time_us_after


// The two 16-byte vectors a thread reads for block b (of 32 bytes): its own block's halves, or (lines) vector
// lane and 32 + lane of its warp's 32 blocks.
template <bool kLines>
__device__ __forceinline__ std::size_t first_vector(unsigned b) {
  if constexpr (kLines) {
    const unsigned lane = threadIdx.x & 31u;
    return 2ull * (b - lane) + lane;
  }
  return 2ull * b;
}
template <bool kLines>
constexpr unsigned kSecondOffset = kLines ? 32u : 1u;

template <bool kLines, bool kBarrier>
__global__ void __launch_bounds__(512, 2)
    walk(const uint4* x, unsigned blocks, unsigned* sink, unsigned* counter, unsigned target) {
  const unsigned stride = gridDim.x * 512u;
  unsigned acc = 0;
  unsigned b = blockIdx.x * 512u + threadIdx.x;
  for (; b + 3 * stride < blocks; b += 4 * stride) {
    uint4 v[8];
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const std::size_t at = first_vector<kLines>(b + s * stride);
      v[2 * s] = __ldg(x + at);
      v[2 * s + 1] = __ldg(x + at + kSecondOffset<kLines>);
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) acc ^= fold(v[i]);
  }
  for (; b < blocks; b += stride) {
    const std::size_t at = first_vector<kLines>(b);
    acc ^= fold(__ldg(x + at)) ^ fold(__ldg(x + at + kSecondOffset<kLines>));
  }
  if constexpr (kBarrier) {  // the resident kernel's exchange as a grid barrier: one arrival per CTA
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      atomicAdd(counter, 1u);
      unsigned seen;
      do {
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
      } while (seen < target);
    }
    __syncthreads();
  }
  if (acc == 0x12345678u) *sink = acc;
}

__global__ void read_all(const uint4* p, std::size_t n, unsigned* sink) {
  unsigned acc = 0;
  for (std::size_t i = blockIdx.x * 256ull + threadIdx.x; i < n; i += gridDim.x * 256ull) acc ^= fold(__ldcg(p + i));
  if (acc == 0x12345678u) *sink = acc;
}

int main() {
  const std::size_t x_bytes = 8192ull * 7168 * 2, flush_bytes = 256ull << 20;
  const std::size_t copy_bytes = (2ull * 8192 * 7168 + 8192ull * 7168 / 2 + 8192ull * 7168 / 16) / 2;
  std::uint8_t *x, *flush, *src, *dst;
  unsigned *sink, *counter;
  cudaMalloc(&x, x_bytes);
  cudaMalloc(&flush, flush_bytes);
  cudaMalloc(&src, copy_bytes);
  cudaMalloc(&dst, copy_bytes);
  cudaMalloc(&sink, 4);
  cudaMalloc(&counter, 4);
  cudaMemset(x, 1, x_bytes);
  cudaMemset(src, 2, copy_bytes);
  cudaMemset(counter, 0, 4);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const unsigned blocks = static_cast<unsigned>(x_bytes / 32);  // a multiple of 32: whole warps' lines
  const int smem = 113 * 1024;
  // 50 timed calls after 10, each after a dirty flush (memset, as nvfp4_gemm.tools.timing) or a clean one (a read)
  auto time = [&](auto f, bool dirty) {
    return time_us_after(
        f,
        [&](int) {
          if (dirty) {
            cudaMemsetAsync(flush, 0, flush_bytes);
          } else {
            read_all<<<sms * 8, 256>>>(reinterpret_cast<const uint4*>(flush), flush_bytes / 16, sink);
          }
        },
        50, 10);
  };
  unsigned target = 0;
  // plain launches, or cooperative with the grid barrier (as the resident kernel); dyn: shared memory per CTA
  auto run = [&](auto kernel, int dyn, bool barrier) {
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn);
    const uint4* xp = reinterpret_cast<const uint4*>(x);
    if (!barrier) {
      kernel<<<sms * 2, 512, dyn>>>(xp, blocks, sink, counter, 0u);
      return;
    }
    target += sms * 2;
    unsigned tg = target;
    unsigned b = blocks;
    void* args[] = {&xp, &b, &sink, &counter, &tg};
    cudaLaunchCooperativeKernel(reinterpret_cast<void*>(kernel), sms * 2, 512, args, dyn, 0);
  };
  for (int dirty = 1; dirty >= 0; --dirty) {
    std::printf("== flush: %s\n", dirty ? "dirty (memset 256 MB)" : "clean (read of 256 MB)");
    std::printf("copy of the quantize's bytes (%.1f MB moved)        %.2f us\n", 2e-6 * copy_bytes,
                time([&] { cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice); }, dirty));
    for (int dyn : {0, smem}) {
      std::printf("smem %3d KB per CTA, plain launch:    pairs %.2f us  lines %.2f us\n", dyn / 1024,
                  time([&] { run(walk<false, false>, dyn, false); }, dirty),
                  time([&] { run(walk<true, false>, dyn, false); }, dirty));
      std::printf("smem %3d KB per CTA, coop + barrier:  pairs %.2f us  lines %.2f us\n", dyn / 1024,
                  time([&] { run(walk<false, true>, dyn, true); }, dirty),
                  time([&] { run(walk<true, true>, dyn, true); }, dirty));
    }
  }
  std::printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
}
