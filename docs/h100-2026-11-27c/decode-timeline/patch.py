"""Probe build only: timestamps (globaltimer and clock64) at the one-pass kernel's phases, written by each
CTA's thread 0 over the first 128 bytes of its own codes after the CTA's last store (the outputs are then
not the quantization: a timing probe, never a result)."""
import sys
p = sys.argv[1] + "/csrc/include/nvfp4_gemm/quantize/quantize_common.cuh"
s = open(p).read()
def sub(old, new):
    global s
    assert s.count(old) == 1, old
    s = s.replace(old, new)
sub("constexpr int kPollLoads = 8;", """constexpr int kPollLoads = 8;
__shared__ unsigned long long probe_g[8];
__shared__ long long probe_c[8];
__device__ __forceinline__ void probe_mark(int i) {
  unsigned long long g;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g) :: "memory");
  probe_g[i] = g;
  probe_c[i] = clock64();
}""")
sub("""    store_relaxed(&scratch->tagged[slot], mine);
  }""", """    store_relaxed(&scratch->tagged[slot], mine);
  }
  if (threadIdx.x == 0) probe_mark(3);""")
sub("""  // every CTA has read last_tag before it stored its slot, so the next call's tag can be set now""",
    """  if (threadIdx.x == 0) probe_mark(4);
  // every CTA has read last_tag before it stored its slot, so the next call's tag can be set now""")
sub("""  using Io = BlockIo<Recipe, T>;
  wait_for_predecessor();
  allow_successor();
  const int t = blockIdx.x * kCtaThreads + threadIdx.x;""", """  using Io = BlockIo<Recipe, T>;
  wait_for_predecessor();
  allow_successor();
  if (threadIdx.x == 0) probe_mark(0);
  const int t = blockIdx.x * kCtaThreads + threadIdx.x;""")
sub("""  for (int i = 0; i < Io::kVectors; ++i) key = umax(key, Elements<T>::finite_key(raw[i]));
  key = cta_max<kCtaThreads>(key);""", """  for (int i = 0; i < Io::kVectors; ++i) key = umax(key, Elements<T>::finite_key(raw[i]));
  if (threadIdx.x == 0 && key != 0xFFFFFFFFu) probe_mark(1);
  key = cta_max<kCtaThreads>(key);
  if (threadIdx.x == 0 && key != 0xFFFFFFFFu) probe_mark(2);""")
sub("""  if (row < rows_padded) Io::quantize(p, context, row, col, cols_padded, raw);
}""", """  if (threadIdx.x == 0 && context.scale > -1.0f) probe_mark(5);
  if (row < rows_padded) Io::quantize(p, context, row, col, cols_padded, raw);
  __syncthreads();
  if (threadIdx.x == 0) {
    probe_mark(6);
    unsigned long long* out = reinterpret_cast<unsigned long long*>(p.data + static_cast<std::size_t>(blockIdx.x) * kCtaThreads * 8);
    for (int i = 0; i < 8; ++i) { out[i] = probe_g[i]; out[8 + i] = static_cast<unsigned long long>(probe_c[i]); }
  }
}""")
open(p, "w").write(s)
