// Probe: would the direct decode kernel stream its weights faster through a shared-memory ring filled by
// TMA boxes (one producer thread, no registers held by loads in flight) than by its per-lane 16-byte loads
// into registers? Same grids as the kernel (128 weight rows per CTA and two CTAs per SM, or 256 rows and
// one), no arithmetic: consumers read their fragment bytes from the slot, fold them and release it; the
// register loads are weight_stream.cuh's `rowmajor` (uint4: the kernel's access since Hopper v7).
// Build and run on a Hopper GPU (the mbarrier and TMA primitives are the sm90 kernels' own, common.cuh):
//   nvcc -O3 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -Icsrc/include -I<build>/generated/include \
//        -I<cutlass>/include -o /tmp/weight_tma_probe benchmarks/probes/weight_tma_probe.cu && /tmp/weight_tma_probe
// (<build>/generated/include: the package build's generated dtypes.h; <cutlass>: the nvidia-cutlass wheel's
// cutlass_library/source/include). docs/perf_notes.md "Hopper v13" has its output
// (docs/h200-2026-11-26/direct-ring/tma_probe.txt, docs/h100-2026-11-26/direct-ring/tma_probe.txt).
#include "nvfp4_gemm/sm90/common.cuh"
#include "weight_stream.cuh"

using namespace nvfp4_gemm::sm90::detail;

// kRows weight rows per CTA (kRows / 16 consumer warps and one producer warp), a ring of kSlots boxes of
// kRows x 128 bytes (two 128-element chunks of every row) in the 128-byte swizzle. Lane (g, t) of consumer
// warp w reads its kernel fragments: bytes 64 u + 16 t of rows 16 w + g and + 8, chunks u = 0, 1.
template <int kRows, int kSlots>
__global__ void tma_ring(const __grid_constant__ CUtensorMap map, int kbytes, int split, unsigned* sink) {
  constexpr int kConsumers = kRows / 16;
  constexpr int kSlotBytes = kRows * 128;
  extern __shared__ __align__(128) std::uint8_t smem_raw[];
  std::uint8_t* ring = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);  // the swizzle's 1 KB atom
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(ring + kSlots * kSlotBytes);
  std::uint64_t* empty = full + kSlots;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int boxes = kbytes / 128;
  const int b0 = boxes * blockIdx.y / split, b1 = boxes * (blockIdx.y + 1) / split;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kSlots; ++s) {
      mbar_init(full + s, 1);
      mbar_init(empty + s, kConsumers);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (warp == kConsumers) {
    if (lane == 0) {
      for (int b = b0; b < b1; ++b) {
        const int i = b - b0, s = i % kSlots;
        if (i >= kSlots) mbar_wait(empty + s, ((i / kSlots) - 1) & 1);
        mbar_arrive_expect_tx(full + s, kSlotBytes);
        tma_load_3d(ring + s * kSlotBytes, &map, full + s, b * 128, blockIdx.x * kRows, 0);
      }
    }
    return;
  }
  const int g = lane >> 2, t = lane & 3;
  unsigned acc = 0;
  for (int b = b0; b < b1; ++b) {
    const int i = b - b0, s = i % kSlots;
    mbar_wait(full + s, (i / kSlots) & 1);
    const std::uint8_t* slot = ring + s * kSlotBytes;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = warp * 16 + g + 8 * r;
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int unit = (4 * u + t) ^ (row & 7);
        acc ^= fold(*reinterpret_cast<const uint4*>(slot + row * 128 + unit * 16)) * (r + 1);
      }
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(empty + s);
  }
  if (acc == 0x12345678u) *sink = acc;
}

using Encode = decltype(&cuTensorMapEncodeTiled);

CUtensorMap weight_map(Encode encode, std::uint8_t* b, int n, int kbytes, int rows) {
  CUtensorMap map;
  // 3D with one batch: tma_load_3d, the kernels' own copy
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(kbytes), static_cast<cuuint64_t>(n), 1};
  const cuuint64_t strides[2] = {static_cast<cuuint64_t>(kbytes), static_cast<cuuint64_t>(kbytes) * n};
  const cuuint32_t box[3] = {128, static_cast<cuuint32_t>(rows), 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  if (encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, b, dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
             CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
    std::printf("tensor map encode failed\n");
  }
  return map;
}

template <int kRows, int kSlots>
float time_ring(Encode encode, std::uint8_t* b, int n, int kbytes, int split, unsigned* sink, std::uint8_t* flush) {
  const int smem = kSlots * kRows * 128 + 1024 + 2 * kSlots * 8;  // + the realignment
  cudaFuncSetAttribute(tma_ring<kRows, kSlots>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  const CUtensorMap map = weight_map(encode, b, n, kbytes, kRows);
  const dim3 grid((n + kRows - 1) / kRows, split);
  return time_us([&] { tma_ring<kRows, kSlots><<<grid, kRows * 2 + 32, smem>>>(map, kbytes, split, sink); }, flush, 256 << 20);
}

int main() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
  const Encode encode = reinterpret_cast<Encode>(fn);
  const ProbeBuffers buffers;
  uint8_t* const b = buffers.b;
  uint8_t* const flush = buffers.flush;
  unsigned* const sink = buffers.sink;
  // (N, K, split at 128 rows per CTA, split at 256 rows per CTA): the resolver's one-wave splits
  const int shapes[][4] = {{28672, 8192, 1, 1}, {8192, 28672, 4, 4}, {7168, 7168, 4, 4}, {14336, 4096, 2, 2}, {2112, 7168, 8, 14}};
  std::printf("TB/s of weight bytes (us): the kernel's register loads vs TMA rings (rows per CTA x slots of rows x 128 B)\n");
  for (auto& s : shapes) {
    const int n = s[0], k = s[1], kbytes = k / 2, split128 = s[2], split256 = s[3];
    const double bytes = double(n) * kbytes;
    auto rate = [&](float us) { return bytes / us / 1e6; };
    const float copy = time_us([&] { stream_read<<<132 * 8, 256>>>(reinterpret_cast<const uint4*>(b), (long long)(bytes / 16), sink); }, flush, 256 << 20);
    const dim3 grid((n + 127) / 128, split128);
    const float reg2 = time_us([&] { rowmajor<uint4, 2><<<grid, 256>>>(b, n, kbytes, split128, sink); }, flush, 256 << 20);
    const float reg4 = time_us([&] { rowmajor<uint4, 4><<<grid, 256>>>(b, n, kbytes, split128, sink); }, flush, 256 << 20);
    const float a = time_ring<128, 2>(encode, b, n, kbytes, split128, sink, flush);
    const float c = time_ring<128, 3>(encode, b, n, kbytes, split128, sink, flush);
    const float d = time_ring<128, 6>(encode, b, n, kbytes, split128, sink, flush);
    const float e = time_ring<256, 3>(encode, b, n, kbytes, split256, sink, flush);
    const float f = time_ring<256, 5>(encode, b, n, kbytes, split256, sink, flush);
    std::printf("%5dx%-5d %6.1f MB  copy %.2f (%.1f) | registers 2 chunks %.2f (%.1f), 4 chunks %.2f (%.1f) | ring 128x2 %.2f (%.1f) 128x3 %.2f (%.1f) 128x6 %.2f (%.1f) 256x3 %.2f (%.1f) 256x5 %.2f (%.1f)\n",
                n, k, bytes / 1e6, rate(copy), copy, rate(reg2), reg2, rate(reg4), reg4, rate(a), a, rate(c), c, rate(d), d,
                rate(e), e, rate(f), f);
  }
  std::printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
}
