// Shared by the weight-stream probes (weight_access_probe.cu, weight_tma_probe.cu): loads folded into a
// value the compiler cannot drop, the direct kernel's register-load access, a plain streaming read and the
// event timers (time_us: L2 flushed by a 256 MB memset before every timed launch, median after 5 warm-ups).
#pragma once

#include <cstdint>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

__device__ unsigned fold(uint2 v) { return v.x + v.y * 3; }
__device__ unsigned fold(uint4 v) { return v.x + v.y * 3 + v.z * 5 + v.w * 7; }

// rowmajor: lane (g,t) of warp w loads one Vec (8 or 16 B) at rows n0+16w+g and +8, byte
// 4*sizeof(Vec)*chunk + sizeof(Vec)*t: 8 rows x 32 B (uint2, v5) or 8 rows x 64 B (uint4, v7) per warp
// load; kIn chunks in flight
template <class Vec, int kIn>
__global__ void __launch_bounds__(256, 2) rowmajor(const uint8_t* b, int n, int kbytes, int split, unsigned* sink) {
  constexpr int kChunkBytes = 4 * sizeof(Vec);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int chunks = kbytes / kChunkBytes;
  const int c0 = chunks * blockIdx.y / split, c1 = chunks * (blockIdx.y + 1) / split;
  const uint8_t* r0 = b + (long long)(blockIdx.x * 128 + warp * 16 + g) * kbytes + sizeof(Vec) * t;
  const uint8_t* r1 = r0 + 8LL * kbytes;
  unsigned acc = 0;
  for (int c = c0; c < c1; c += kIn) {
    Vec v[kIn][2];
#pragma unroll
    for (int u = 0; u < kIn; ++u) {
      const bool ok = c + u < c1;
      v[u][0] = ok ? __ldcs(reinterpret_cast<const Vec*>(r0 + (c + u) * kChunkBytes)) : Vec{};
      v[u][1] = ok ? __ldcs(reinterpret_cast<const Vec*>(r1 + (c + u) * kChunkBytes)) : Vec{};
    }
#pragma unroll
    for (int u = 0; u < kIn; ++u) acc ^= fold(v[u][0]) + fold(v[u][1]) * 5;
  }
  if (acc == 0x12345678u) *sink = acc;
}

__global__ void stream_read(const uint4* b, long long n16, unsigned* sink) {
  unsigned acc = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n16; i += (long long)gridDim.x * blockDim.x) {
    uint4 v = __ldcs(b + i);
    acc ^= fold(v);
  }
  if (acc == 0x12345678u) *sink = acc;
}

// Median of `iters` event-timed calls of f after `warmups` more, each after flush(i) (the L2 flush of the caller's
// choice, enqueued before the start event)
template <class F, class Flush>
float time_us_after(F f, Flush flush, int iters = 20, int warmups = 5) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> ts;
  for (int i = 0; i < iters + warmups; ++i) {
    flush(i);
    cudaEventRecord(e0);
    f();
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    if (i >= warmups) ts.push_back(ms * 1000);
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}
// the weight probes' timer: a 256 MB memset flush, median of 20 after 5 warm-ups
template <class F>
float time_us(F f, uint8_t* flush, size_t flush_bytes) {
  return time_us_after(f, [&](int i) { cudaMemsetAsync(flush, i, flush_bytes); });
}

// The probes' buffers: the largest layer's weights (28672 x 8192 FP4 bytes), the L2 flush, the loads' sink.
struct ProbeBuffers {
  static constexpr size_t kWeightBytes = 28672LL * 8192 / 2;
  static constexpr size_t kFlushBytes = 256 << 20;
  uint8_t* b = nullptr;
  uint8_t* flush = nullptr;
  unsigned* sink = nullptr;
  ProbeBuffers() {
    cudaMalloc(&b, kWeightBytes);
    cudaMemset(b, 1, kWeightBytes);
    cudaMalloc(&flush, kFlushBytes);
    cudaMalloc(&sink, 4);
  }
};
