// Probe: does the direct kernel's weight access pattern (8 rows x 32 B per warp load, rows K/2 apart)
// cap DRAM throughput, and would a fragment-ordered layout (a warp's chunk = 512 contiguous bytes) fix it?
// Build and run on a Hopper GPU: nvcc -O3 -arch=sm_90a -std=c++17 -o probe weight_access_probe.cu && ./probe
// (docs/perf_notes.md "Hopper v7" has its H200 output).
#include "weight_stream.cuh"


// tiled: the warp's 16 rows x 32 B of a chunk are 512 contiguous bytes, lane's 16 B = its two rows' 8 B
template <int kIn>
__global__ void __launch_bounds__(256, 2) tiled(const uint8_t* b, int n, int kbytes, int split, unsigned* sink) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int chunks = kbytes / 32;
  const int c0 = chunks * blockIdx.y / split, c1 = chunks * (blockIdx.y + 1) / split;
  const uint8_t* base = b + (long long)(blockIdx.x * 8 + warp) * 16 * kbytes + lane * 16;
  unsigned acc = 0;
  for (int c = c0; c < c1; c += kIn) {
    uint4 v[kIn];
#pragma unroll
    for (int u = 0; u < kIn; ++u) {
      const bool ok = c + u < c1;
      v[u] = ok ? __ldcs(reinterpret_cast<const uint4*>(base + (c + u) * 512LL)) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kIn; ++u) acc ^= fold(v[u]);
  }
  if (acc == 0x12345678u) *sink = acc;
}


int main() {
  const ProbeBuffers buffers;
  uint8_t* const b = buffers.b;
  uint8_t* const flush = buffers.flush;
  unsigned* const sink = buffers.sink;
  const int shapes[][2] = {{7168, 7168}, {28672, 8192}, {8192, 28672}, {2112, 7168}};
  for (auto& s : shapes) {
    const int n = s[0], k = s[1], kbytes = k / 2;
    const double bytes = double(n) * kbytes;
    const float copy = time_us([&] { stream_read<<<132 * 8, 256>>>(reinterpret_cast<const uint4*>(b), (long long)(bytes / 16), sink); }, flush, 256 << 20);
    printf("%dx%d  %.1f MB  stream %.1f us (%.2f TB/s)\n", n, k, bytes / 1e6, copy, bytes / copy / 1e6);
    for (int split : {1, 2, 4, 8}) {
      dim3 grid(n / 128, split);
      const float r4 = time_us([&] { rowmajor<uint2, 4><<<grid, 256>>>(b, n, kbytes, split, sink); }, flush, 256 << 20);
      const float r8 = time_us([&] { rowmajor<uint2, 8><<<grid, 256>>>(b, n, kbytes, split, sink); }, flush, 256 << 20);
      const float t4 = time_us([&] { tiled<4><<<grid, 256>>>(b, n, kbytes, split, sink); }, flush, 256 << 20);
      const float t8 = time_us([&] { tiled<8><<<grid, 256>>>(b, n, kbytes, split, sink); }, flush, 256 << 20);
      const float q2 = time_us([&] { rowmajor<uint4, 2><<<grid, 256>>>(b, n, kbytes, split, sink); }, flush, 256 << 20);
      const float q4 = time_us([&] { rowmajor<uint4, 4><<<grid, 256>>>(b, n, kbytes, split, sink); }, flush, 256 << 20);
      printf("  split %d: rowmajor16x2 %.1f (%.2f)  rowmajor16x4 %.1f (%.2f)\n", split, q2, bytes / q2 / 1e6, q4, bytes / q4 / 1e6);
      printf("  split %d: rowmajor4 %.1f (%.2f)  rowmajor8 %.1f (%.2f)  tiled4 %.1f (%.2f)  tiled8 %.1f (%.2f)\n", split,
             r4, bytes / r4 / 1e6, r8, bytes / r8 / 1e6, t4, bytes / t4 / 1e6, t8, bytes / t8 / 1e6);
    }
  }
  printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
}
