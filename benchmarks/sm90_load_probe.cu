// Load-path probe for the Hopper kernel: how fast can one CTA per SM stream its 128 weight rows and
// the 128 token rows through a shared-memory ring of mbarrier-guarded slots, with no compute at all?
// The kernel's own "loads + barriers only" variant ran at ~1.5 TB/s (docs/perf_notes.md, v3), a
// third of the copy ceiling, so the load path bounds every shape before any dequantization. The
// variants differ in the bytes each K-major row contributes to one slot (64 = the kernel's stage
// today) and in the copy engine: 16-byte cp.async per thread (the kernel today) or one
// cp.async.bulk per row that completes on the slot's mbarrier (the bulk-copy engine).
//
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o /tmp/probe benchmarks/sm90_load_probe.cu
//   /tmp/probe            (prints one line per shape, split and variant, then the copy ceiling)
//   /tmp/probe general    (the second table: tokens or not, address order, rows per CTA, CTAs per SM)
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                       \
  do {                                                                                    \
    cudaError_t err_ = (call);                                                            \
    if (err_ != cudaSuccess) {                                                            \
      std::printf("%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_));           \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

namespace {

constexpr int kRows = 128;  // weight rows per CTA; the token tile has as many rows
constexpr int kProducerThreads = 256;
constexpr int kConsumerWarps = 8;

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(std::uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
  asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint64_t* bar, unsigned bytes) {
  asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred done;\n"
      "RETRY:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      " @!done bra RETRY;\n}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, std::uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}

// Both ring kernels: this CTA's share [x, y) of `steps` slot fills (split along gridDim.z), after its
// barriers are initialized (full: one arrival per producer thread; empty: one per consumer warp).
template <int kSlots>
__device__ int2 ring_setup(int steps, int split, std::uint64_t* full, std::uint64_t* empty) {
  if (threadIdx.x == 0) {
    for (int i = 0; i < kSlots; ++i) {
      mbar_init(&full[i], kProducerThreads);
      mbar_init(&empty[i], kConsumerWarps);
    }
  }
  __syncthreads();
  return make_int2(static_cast<int>(static_cast<long long>(steps) * blockIdx.z / split),
                   static_cast<int>(static_cast<long long>(steps) * (blockIdx.z + 1) / split));
}

// The consumer warps of both ring kernels: read every byte of each landed slot, release it.
template <int kSlots>
__device__ void consume_slots(const std::uint8_t* ring, int slot_bytes, std::uint64_t* full, std::uint64_t* empty,
                              int steps, int ct, unsigned* sink) {
  unsigned x = 0;
  for (int i = 0; i < steps; ++i) {
    const int slot = i % kSlots;
    mbar_wait(&full[slot], (i / kSlots) & 1);
    const std::uint8_t* base = ring + slot * slot_bytes;
    for (int j = ct; j < slot_bytes / 16; j += 256) {
      const uint4 v = *reinterpret_cast<const uint4*>(base + j * 16);
      x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    __syncwarp();
    if ((ct & 31) == 0) mbar_arrive(&empty[slot]);
  }
  atomicXor(sink, x);
}

// First table, bulk-copy variants: grid = (N / 128, 1, split); block = 256 producer threads + 8
// consumer warps. Producer thread r < 128 copies weight row r, thread 128 + r token row r, kRowBytes
// per slot with one cp.async.bulk each (the cp.async variants of the table run stream_general).
template <int kRowBytes, int kSlots>
__global__ void __launch_bounds__(512, 1)
    stream_rows_bulk(const std::uint8_t* __restrict__ w, const std::uint8_t* __restrict__ a, int n, int k_bytes,
                     int split, unsigned* sink) {
  extern __shared__ __align__(128) std::uint8_t ring[];
  __shared__ __align__(8) std::uint64_t full[kSlots], empty[kSlots];
  constexpr int kSlotBytes = 2 * kRows * kRowBytes;
  const int tid = threadIdx.x;
  const int n0 = blockIdx.x * kRows;
  const int2 range = ring_setup<kSlots>((k_bytes + kRowBytes - 1) / kRowBytes, split, full, empty);
  const int s_begin = range.x, s_end = range.y;

  if (tid < kProducerThreads) {
    for (int s = s_begin; s < s_end; ++s) {
      const int i = s - s_begin, slot = i % kSlots;
      if (i >= kSlots) mbar_wait(&empty[slot], ((i / kSlots) - 1) & 1);
      const int kb = s * kRowBytes;
      const int bytes = min(kRowBytes, k_bytes - kb);
      const int row = tid & (kRows - 1);
      const bool weight = tid < kRows;
      const bool ok = !weight || n0 + row < n;
      const std::uint8_t* src = weight ? w + static_cast<long long>(n0 + row) * k_bytes + kb
                                       : a + static_cast<long long>(row) * k_bytes + kb;
      mbar_arrive_expect_tx(&full[slot], ok ? bytes : 0);
      if (ok) bulk_copy(ring + slot * kSlotBytes + tid * kRowBytes, src, bytes, &full[slot]);
    }
  } else {
    consume_slots<kSlots>(ring, kSlotBytes, full, empty, s_end - s_begin, tid - kProducerThreads, sink);
  }
}

// The second table's kernel: kWRows weight rows and kTRows token rows per CTA (kTRows = 0: weights
// only), cp.async only. kContig = true reads the same bytes per CTA in address order (slot i = the
// next kSlotBytes of the CTA's contiguous rows), which tells DRAM locality apart from per-SM limits.
// kMinBlocks = 2 lets two CTAs share an SM.
template <int kWRows, int kTRows, int kRowBytes, int kSlots, bool kContig, int kMinBlocks>
__global__ void __launch_bounds__(512, kMinBlocks)
    stream_general(const std::uint8_t* __restrict__ w, const std::uint8_t* __restrict__ a, int n, int k_bytes,
                   int split, unsigned* sink) {
  extern __shared__ __align__(128) std::uint8_t ring[];
  __shared__ __align__(8) std::uint64_t full[kSlots], empty[kSlots];
  constexpr int kRowsAll = kWRows + kTRows;
  constexpr int kSlotBytes = kRowsAll * kRowBytes;
  constexpr int kChunks = kRowBytes / 16;
  const int tid = threadIdx.x;
  const int n0 = blockIdx.x * kWRows;
  const int2 range = ring_setup<kSlots>((k_bytes + kRowBytes - 1) / kRowBytes, split, full, empty);
  const int s_begin = range.x, s_end = range.y;
  if (tid < kProducerThreads) {
    for (int s = s_begin; s < s_end; ++s) {
      const int i = s - s_begin, slot = i % kSlots;
      if (i >= kSlots) mbar_wait(&empty[slot], ((i / kSlots) - 1) & 1);
      std::uint8_t* base = ring + slot * kSlotBytes;
      for (int c = tid; c < kRowsAll * kChunks; c += kProducerThreads) {
        const int r = c / kChunks, chunk = c % kChunks;
        const bool weight = r < kWRows;
        const int row = weight ? r : r - kWRows;
        const std::uint8_t* src;
        bool ok;
        if constexpr (kContig) {
          // slot s holds bytes [s kRowBytes kRows, ...) of the CTA's rows taken as one block
          const long long rows_here = weight ? kWRows : kTRows;
          const long long off = (static_cast<long long>(s) * rows_here + row) * kRowBytes + chunk * 16;
          ok = off < rows_here * k_bytes && (!weight || n0 < n);
          src = weight ? w + static_cast<long long>(n0) * k_bytes + off : a + off;
        } else {
          const int kb = s * kRowBytes + chunk * 16;
          ok = kb < k_bytes && (!weight || n0 + row < n);
          src = weight ? w + static_cast<long long>(n0 + row) * k_bytes + kb : a + static_cast<long long>(row) * k_bytes + kb;
        }
        cp_async_16(base + r * kRowBytes + chunk * 16, ok ? src : w, ok ? 16 : 0);
      }
      asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(&full[slot])) : "memory");
    }
  } else {
    consume_slots<kSlots>(ring, kSlotBytes, full, empty, s_end - s_begin, tid - kProducerThreads, sink);
  }
}

// Third table: no shared memory at all. Each warp owns 16 weight rows; lane (g, t) loads 8 bytes of
// rows g and g + 8 at byte 8 t of every 32-byte K chunk (the mma.sync A-fragment ownership of a
// decode kernel that dequantizes straight from registers), kUnroll chunks in flight per row.
template <int kWarps, int kUnroll, int kMinBlocks>
__global__ void __launch_bounds__(32 * kWarps, kMinBlocks)
    stream_registers(const std::uint8_t* __restrict__ w, int n, int k_bytes, int split, unsigned* sink) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int row0 = (blockIdx.x * kWarps + warp) * 16 + g;
  const int chunks = k_bytes / 32;
  const int c_begin = static_cast<int>(static_cast<long long>(chunks) * blockIdx.z / split);
  const int c_end = static_cast<int>(static_cast<long long>(chunks) * (blockIdx.z + 1) / split);
  const bool ok0 = row0 < n, ok8 = row0 + 8 < n;
  const std::uint8_t* r0 = w + static_cast<long long>(ok0 ? row0 : 0) * k_bytes + 8 * t;
  const std::uint8_t* r8 = w + static_cast<long long>(ok8 ? row0 + 8 : 0) * k_bytes + 8 * t;
  unsigned x = 0;
  for (int c = c_begin; c < c_end; c += kUnroll) {
    uint2 v0[kUnroll], v8[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const bool in = c + u < c_end;
      v0[u] = in && ok0 ? __ldcs(reinterpret_cast<const uint2*>(r0 + (c + u) * 32)) : make_uint2(0, 0);
      v8[u] = in && ok8 ? __ldcs(reinterpret_cast<const uint2*>(r8 + (c + u) * 32)) : make_uint2(0, 0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) x ^= v0[u].x ^ v0[u].y ^ v8[u].x ^ v8[u].y;
  }
  if (x == 0x12345678u) atomicXor(sink, x);  // keeps the loads; practically never taken
}

__global__ void fill_random(std::uint32_t* p, std::size_t words, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint32_t x = static_cast<std::uint32_t>(i) * 2654435761u + seed;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    p[i] = x;
  }
}

struct Buffers {
  std::uint8_t* w;
  std::uint8_t* a;
  std::uint8_t* flush;
  unsigned* sink;
};
constexpr std::size_t kFlushBytes = 256u << 20;

template <class Launch>
float median_us(const Buffers& buf, Launch launch, int iters = 30) {
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::vector<float> t;
  for (int i = 0; i < iters + 5; ++i) {
    CHECK(cudaMemsetAsync(buf.flush, i & 0xff, kFlushBytes));
    CHECK(cudaEventRecord(e0));
    launch();
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    CHECK(cudaGetLastError());
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (i >= 5) t.push_back(ms * 1000.0f);
  }
  std::sort(t.begin(), t.end());
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  return t[t.size() / 2];
}

template <int kRowBytes, int kSlots>
void run_bulk(const Buffers& buf, int n, int k, int split) {
  const int k_bytes = k / 2;
  constexpr int kSmem = kSlots * 2 * kRows * kRowBytes;
  auto kernel = stream_rows_bulk<kRowBytes, kSlots>;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  const dim3 grid((n + kRows - 1) / kRows, 1, split);
  const float us = median_us(buf, [&] { kernel<<<grid, 512, kSmem>>>(buf.w, buf.a, n, k_bytes, split, buf.sink); });
  const double bytes = static_cast<double>(n + kRows) * k_bytes;  // each byte once from DRAM
  std::printf("N=%d K=%d split %d  bulk copy per row, %3d B/row/slot %2d slots (%3d KB)  %7.2f us  %5.2f TB/s\n", n,
              k, split, kRowBytes, kSlots, kSmem / 1024, us, bytes / us * 1e-6);
}

template <int kWRows, int kTRows, int kRowBytes, int kSlots, bool kContig, int kMinBlocks>
void run_general(const Buffers& buf, int n, int k, int split, const char* what) {
  const int k_bytes = k / 2;
  constexpr int kSmem = kSlots * (kWRows + kTRows) * kRowBytes;
  auto kernel = stream_general<kWRows, kTRows, kRowBytes, kSlots, kContig, kMinBlocks>;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 512, kSmem));
  const dim3 grid((n + kWRows - 1) / kWRows, 1, split);
  const float us = median_us(buf, [&] { kernel<<<grid, 512, kSmem>>>(buf.w, buf.a, n, k_bytes, split, buf.sink); });
  const double bytes = static_cast<double>(n + kTRows) * k_bytes;
  std::printf("N=%d K=%d split %d  %-34s w%3d t%3d %3d B x %2d slots %s, %d CTA/SM, %4d CTAs  %7.2f us  %5.2f TB/s\n", n,
              k, split, what, kWRows, kTRows, kRowBytes, kSlots, kContig ? "contig" : "rows  ", per_sm,
              grid.x * grid.z, us, bytes / us * 1e-6);
}

template <int kWarps, int kUnroll, int kMinBlocks>
void run_registers(const Buffers& buf, int n, int k, int split) {
  const int k_bytes = k / 2;
  auto kernel = stream_registers<kWarps, kUnroll, kMinBlocks>;
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 32 * kWarps, 0));
  const dim3 grid((n + 16 * kWarps - 1) / (16 * kWarps), 1, split);
  const float us = median_us(buf, [&] { kernel<<<grid, 32 * kWarps>>>(buf.w, n, k_bytes, split, buf.sink); });
  std::printf("N=%d K=%d split %2d  registers: %2d warps x 16 rows, %d chunks in flight, %2d CTA/SM, %5d CTAs  %7.2f us  %5.2f TB/s\n",
              n, k, split, kWarps, kUnroll, per_sm, grid.x * grid.z, us, static_cast<double>(n) * k_bytes / us * 1e-6);
}

}  // namespace

int main(int argc, char** argv) {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  const std::size_t max_w = 7168ull * 8192;
  Buffers buf{};
  CHECK(cudaMalloc(&buf.w, max_w));
  CHECK(cudaMalloc(&buf.a, kRows * 8192));
  CHECK(cudaMalloc(&buf.flush, kFlushBytes));
  CHECK(cudaMalloc(&buf.sink, sizeof(unsigned)));
  fill_random<<<1024, 256>>>(reinterpret_cast<std::uint32_t*>(buf.w), max_w / 4, 1);
  fill_random<<<64, 256>>>(reinterpret_cast<std::uint32_t*>(buf.a), kRows * 8192 / 4, 2);
  CHECK(cudaDeviceSynchronize());

  struct Case {
    int n, k, split;
  };
  const Case cases[] = {{7168, 16384, 2}, {7168, 16384, 1}, {7168, 16384, 4}, {4096, 7168, 4},
                        {4096, 7168, 2},  {7168, 2048, 1},  {7168, 2048, 2}};
  // `probe general`: the second table only (what limits the load path)
  const bool general_only = argc > 1 && std::string(argv[1]) == "general";
  if (argc > 1 && std::string(argv[1]) == "registers") {
    const Case shapes[] = {{7168, 7168, 1}, {7168, 7168, 2}, {7168, 7168, 4}, {7168, 16384, 2}, {4096, 7168, 4}};
    for (const Case& c : shapes) {
      run_registers<8, 4, 2>(buf, c.n, c.k, c.split);
      run_registers<8, 8, 2>(buf, c.n, c.k, c.split);
      run_registers<4, 8, 4>(buf, c.n, c.k, c.split);
      run_registers<8, 16, 2>(buf, c.n, c.k, c.split);
      run_registers<4, 16, 4>(buf, c.n, c.k, c.split);
    }
    return 0;
  }
  if (general_only) {
    const Case general[] = {{7168, 16384, 2}, {7168, 7168, 2}, {7168, 7168, 4}};
    for (const Case& c : general) {
      run_general<128, 128, 64, 6, false, 1>(buf, c.n, c.k, c.split, "kernel today (tile 128)");
      run_general<128, 0, 64, 6, false, 1>(buf, c.n, c.k, c.split, "weights only");
      run_general<128, 128, 64, 6, true, 1>(buf, c.n, c.k, c.split, "same bytes, address order");
      run_general<128, 0, 64, 6, true, 1>(buf, c.n, c.k, c.split, "weights only, address order");
      run_general<128, 16, 64, 8, false, 1>(buf, c.n, c.k, c.split, "decode tile (16 tokens)");
      run_general<128, 16, 128, 8, false, 1>(buf, c.n, c.k, c.split, "decode tile, 128 B rows");
      run_general<128, 16, 256, 6, false, 1>(buf, c.n, c.k, c.split, "decode tile, 256 B rows");
      run_general<64, 16, 64, 8, false, 2>(buf, c.n, c.k, c.split, "64 weight rows, 2 CTAs/SM");
      run_general<64, 16, 128, 8, false, 2>(buf, c.n, c.k, c.split, "64 rows, 128 B, 2 CTAs/SM");
      run_general<128, 0, 64, 6, false, 2>(buf, c.n, c.k, c.split, "weights only, 2 CTAs/SM");
    }
  }
  for (const Case& c : cases) {
    if (general_only) break;
    run_general<128, 128, 64, 6, false, 1>(buf, c.n, c.k, c.split, "cp.async (the kernel today)");
    run_general<128, 128, 64, 12, false, 1>(buf, c.n, c.k, c.split, "cp.async");
    run_general<128, 128, 128, 6, false, 1>(buf, c.n, c.k, c.split, "cp.async");
    run_general<128, 128, 256, 3, false, 1>(buf, c.n, c.k, c.split, "cp.async");
    run_bulk<64, 6>(buf, c.n, c.k, c.split);
    run_bulk<64, 12>(buf, c.n, c.k, c.split);
    run_bulk<128, 3>(buf, c.n, c.k, c.split);
    run_bulk<128, 6>(buf, c.n, c.k, c.split);
    run_bulk<256, 3>(buf, c.n, c.k, c.split);
  }
  // The copy ceiling of the same run: bytes read + bytes written by a 1 GiB device-to-device copy.
  std::uint8_t *src, *dst;
  const std::size_t copy_bytes = 1ull << 30;
  CHECK(cudaMalloc(&src, copy_bytes));
  CHECK(cudaMalloc(&dst, copy_bytes));
  const float us = median_us(buf, [&] { CHECK(cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice)); }, 10);
  std::printf("copy ceiling: %.2f TB/s (1 GiB device-to-device, read + write)\n", 2.0 * copy_bytes / us * 1e-6);
  return 0;
}
