"""Probe build only: %globaltimer at the resident kernel's phases, written by each CTA's thread 0 over the
first 128 bytes of its own codes after the CTA's last store (the outputs are then not the quantization: a
timing probe, never a result). argv[2] = "sleep<N>": also a __nanosleep(N) between the resident poll's rounds."""
import sys
p = sys.argv[1] + "/csrc/include/nvfp4_gemm/quantize/quantize_common.cuh"
mode = sys.argv[2] if len(sys.argv) > 2 else "probe"
s = open(p).read()
def sub(old, new):
    global s
    assert s.count(old) == 1, old
    s = s.replace(old, new)
if mode.startswith("cta1024"):
    sub("constexpr int kResidentThreads = 512;", "constexpr int kResidentThreads = 1024;")
    sub("constexpr int kResidentCtasPerSm = 2; ", "constexpr int kResidentCtasPerSm = 1; ")
    # one CTA per SM is already the smallest grid that spreads x over every SM
    sub("const long long grid = steps_over(full_grid / 2) > on_chip_steps ? full_grid : full_grid / 2;",
        "const long long grid = full_grid;")
    if mode == "cta1024":
        open(p, "w").write(s)
        sys.exit(0)
if mode.startswith("sleep"):
    ns = int(mode[5:])
    sub("    complete = __all_sync(0xFFFFFFFFu, complete);\n  }",
        "    complete = __all_sync(0xFFFFFFFFu, complete);\n"
        f"    if (kLoads == kResidentPollLoads && !complete) __nanosleep({ns});\n  }}")
    open(p, "w").write(s)
    sys.exit(0)
sub("constexpr int kPollLoads = 8;", """constexpr int kPollLoads = 8;
__shared__ unsigned long long probe_g[48];
__device__ __forceinline__ void probe_mark(int i) {
  unsigned long long g;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g) :: "memory");
  probe_g[i] = g;
}""")
sub("""    store_relaxed(&scratch->tagged[tagged_index(slot)], mine);
  }""", """    store_relaxed(&scratch->tagged[tagged_index(slot)], mine);
  }
  if (threadIdx.x == 0) probe_mark(3);""")
sub("""  // every CTA has read last_tag before it stored its slot, so the next call's tag can be set now""",
    """  if (threadIdx.x == 0) probe_mark(4);
  // every CTA has read last_tag before it stored its slot, so the next call's tag can be set now""")
sub("""  const unsigned blocks_per_row = static_cast<unsigned>(p.k / Io::kBlock);""",
    """  if (threadIdx.x == 0) probe_mark(0);
  const unsigned blocks_per_row = static_cast<unsigned>(p.k / Io::kBlock);""")
sub("""  key = cta_max<kResidentThreads, /*kAcrossWarpsByRedux=*/false>(key);""",
    """  if (threadIdx.x == 0 && key != 0xFFFFFFFFu) probe_mark(1);
  key = cta_max<kResidentThreads, /*kAcrossWarpsByRedux=*/false>(key);
  if (threadIdx.x == 0 && key != 0xFFFFFFFFu) probe_mark(2);""")
sub("""  // The quantize walk: the steps on chip back to front (held, then kept), and the re-read steps newest and""",
    """  if (threadIdx.x == 0 && context.scale > -1.0f) probe_mark(5);
  // The quantize walk: the steps on chip back to front (held, then kept), and the re-read steps newest and""")
sub("""  // the layout's padding blocks: zero scale bytes (columns past k / kBlock, then rows past x's)""",
    """  if (threadIdx.x == 0) probe_mark(6);
  if (threadIdx.x % 32 == 0) probe_mark(9 + threadIdx.x / 32);
  __syncthreads();
  if (threadIdx.x == 0) {
    probe_mark(7);
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    probe_g[8] = smid;
    unsigned long long* out = reinterpret_cast<unsigned long long*>(p.data + static_cast<std::size_t>(blockIdx.x) * kResidentThreads * 8);
    for (int i = 0; i < 9 + kResidentThreads / 32; ++i) out[i] = probe_g[i];
  }
  // the layout's padding blocks: zero scale bytes (columns past k / kBlock, then rows past x's)""")
open(p, "w").write(s)
