"""Where a direct-kernel CTA spends its time: per-CTA phase stamps of the sm90 direct decode kernel.

Instruments a copy of csrc/include/nvfp4_gemm/sm90/direct_gemm.cuh (never the committed file itself): thread 0
and thread 224 (warps 0 and 7) of every CTA read %globaltimer and clock64 at the kernel's start, after the
first token block is staged (its second barrier), after the weight loop and at the end, and printf them
with the CTA's coordinates and SM. Then runs pinned weight-only (bf16 x NVFP4) calls after an L2 flush and
summarises the stamps of the last of four calls per shape. Three steps, the build between them:

    python benchmarks/probes/direct_phase_trace.py instrument csrc/include/nvfp4_gemm/sm90/direct_gemm.cuh OUT.cuh
    cp OUT.cuh csrc/include/nvfp4_gemm/sm90/direct_gemm.cuh && source benchmarks/device_build.sh 90a
    python benchmarks/probes/direct_phase_trace.py run 1x2112x7168x14 1x28672x8192x1 > trace.txt   # M x N x K x split
    python benchmarks/probes/direct_phase_trace.py parse trace.txt

(docs/perf_notes.md, "Hopper direct kernel: phases of a CTA", has its H200 output.)
"""

from __future__ import annotations

import sys

CONFIG = "sm90_direct_16x128x128_splitk_bf16xnvfp4"
CLOCK_GHZ = 1.98  # H200 SM clock, for the clock64 columns only
STAMPED_THREADS = (0, 224)


def instrument(source: str, destination: str) -> None:
    text = open(source).read()

    def replace(old: str, new: str) -> None:
        nonlocal text
        if text.count(old) != 1:
            raise SystemExit(f"direct_gemm.cuh changed: expected one {old.splitlines()[0]!r}, found {text.count(old)}")
        text = text.replace(old, new)

    replace("#include <type_traits>", "#include <type_traits>\n#include <cstdio>")
    replace("namespace direct {\nconstexpr int kWarps", (
        "__device__ __forceinline__ unsigned long long trace_now() {\n"
        "  unsigned long long v;\n"
        '  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(v));\n'
        "  return v;\n"
        "}\n"
        "namespace direct {\nconstexpr int kWarps"))
    replace("  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;\n", (
        "  const unsigned long long tr0 = trace_now();\n"
        "  const long long cl0 = clock64();\n"
        "  unsigned long long tr1 = 0, tr2 = 0;\n"
        "  long long cl1 = 0, cl2 = 0;\n"
        "  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;\n"))
    replace("    // 2. the block's weight chunks", (
        "    if (tr1 == 0) { tr1 = trace_now(); cl1 = clock64(); }\n"
        "    // 2. the block's weight chunks"))
    replace("  // Accumulators -> FP32 tile [token][weight] in shared memory, then the shared epilogue.\n  __syncthreads();", (
        "  // Accumulators -> FP32 tile [token][weight] in shared memory, then the shared epilogue.\n"
        "  tr2 = trace_now(); cl2 = clock64();\n"
        "  __syncthreads();"))
    replace("CtaSync{}, Tokens<TokenT>::kRescale * W::kRescale);\n  }\n}", (
        "CtaSync{}, Tokens<TokenT>::kRescale * W::kRescale);\n  }\n"
        "  const unsigned long long tr3 = trace_now();\n"
        "  const long long cl3 = clock64();\n"
        "  unsigned smid;\n"
        '  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));\n'
        f"  if (tid == {STAMPED_THREADS[0]} || tid == {STAMPED_THREADS[1]}) {{\n"
        '    printf("TRACE %d %d %d %d %u %llu %llu %llu %llu %lld %lld %lld\\n", blockIdx.x, blockIdx.y, blockIdx.z, tid,\n'
        "           smid, tr0, tr1, tr2, tr3, cl1 - cl0, cl2 - cl1, cl3 - cl2);\n"
        "  }\n}"))
    open(destination, "w").write(text)


def run(shapes: list[str]) -> None:
    import torch

    import nvfp4_gemm
    from nvfp4_gemm.testing import random_operands
    from nvfp4_gemm.timing import l2_flush_buffer

    flush = l2_flush_buffer()
    for shape in shapes:
        m, n, k, split = (int(v) for v in shape.split("x"))
        ops = random_operands(m, n, k, seed=0, device="cuda", format="bf16xnvfp4")
        for i in range(4):
            flush.zero_()
            torch.cuda.synchronize()
            nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, config=CONFIG, split_k=split)
            torch.cuda.synchronize()  # flushes the device's printf lines before this one
            print(f"RUN {m}x{n}x{k} split {split} call {i}", flush=True)


def _spread(values: list[float]) -> str:
    values = sorted(values)
    return f"{values[0] / 1e3:6.2f} {values[len(values) // 2] / 1e3:6.2f} {values[-1] / 1e3:6.2f}"


def _summarise(title: str, rows: list[list[int]]) -> None:
    # row: x y z tid smid t_start t_staged t_loop_end t_end clk_staged clk_loop clk_epilogue
    warp0 = [r for r in rows if r[3] == STAMPED_THREADS[0]]
    warp7 = [r for r in rows if r[3] == STAMPED_THREADS[1]]
    first = min(r[5] for r in warp0)
    last = max(r[8] for r in warp0)
    print(f"{title}: {len(warp0)} CTAs on {len({r[4] for r in warp0})} SMs, span {(last - first) / 1e3:.2f} us; "
          "min / median / max over CTAs, us:")
    print(f"  start after the first CTA's      {_spread([r[5] - first for r in warp0])}")
    print(f"  start -> first block staged      {_spread([r[6] - r[5] for r in warp0])}  (clock {_spread([r[9] / CLOCK_GHZ for r in warp0])})")
    print(f"  weight loop, warp 0              {_spread([r[7] - r[6] for r in warp0])}  (clock {_spread([r[10] / CLOCK_GHZ for r in warp0])})")
    print(f"  weight loop, warp 7              {_spread([r[7] - r[6] for r in warp7])}")
    print(f"  warp 0's loop end -> CTA's end   {_spread([r[8] - r[7] for r in warp0])}  (clock {_spread([r[11] / CLOCK_GHZ for r in warp0])})")
    print(f"  end after the first CTA's start  {_spread([r[8] - first for r in warp0])}")


def parse(path: str) -> None:
    stamps: list[list[int]] = []
    for line in open(path):
        if line.startswith("TRACE"):
            stamps.append([int(v) for v in line.split()[1:]])
        elif line.startswith("RUN"):
            if line.rstrip().endswith("call 3"):
                _summarise(line.split(" call")[0][4:], stamps)
            stamps = []


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("instrument", "run", "parse"):
        raise SystemExit(__doc__)
    {"instrument": lambda a: instrument(*a), "run": run, "parse": lambda a: parse(*a)}[sys.argv[1]](sys.argv[2:])
