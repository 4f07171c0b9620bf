"""Does the direct kernel's time follow its CTAs per SM? One weight-only (bf16 x NVFP4) GEMM M x (128 tiles)
x K at split 1 per tile count, so the grid is `tiles` CTAs (two fit per SM): kernel span (profiler records,
L2 flushed) and CUDA events, medians. Run on a Hopper GPU:
    python benchmarks/probes/direct_grid_probe.py [--m 1,16] [--tiles 66,132,198,224,264] [--k 8192]
(docs/perf_notes.md "Hopper v8" has its H200 output.)"""

import argparse

import nvfp4_gemm
from nvfp4_gemm.testing import random_operands
from nvfp4_gemm.timing import time_cuda, time_kernels

CONFIG = "sm90_direct_16x128x128_splitk_bf16xnvfp4"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--m", default="1,16")
    parser.add_argument("--tiles", default="66,132,198,224,264")
    parser.add_argument("--k", type=int, default=8192)
    args = parser.parse_args()
    for m in (int(v) for v in args.m.split(",")):
        for tiles in (int(v) for v in args.tiles.split(",")):
            n, k = 128 * tiles, args.k
            ops = random_operands(m, n, k, seed=0, device="cuda", format="bf16xnvfp4")

            def call():
                return nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, config=CONFIG, split_k=1)

            events = time_cuda(call, iters=50).median_us
            span = time_kernels(call, iters=30).median_us
            weight_bytes = n * k // 2 + n * k // 16
            print(f"M={m:3d} tiles={tiles:4d} N={n:6d}: events {events:6.1f} us, span {span:6.1f} us, "
                  f"{weight_bytes / span / 1e6:5.2f} TB/s of weights by span, {span / tiles * 1e3:6.1f} ns per tile",
                  flush=True)


if __name__ == "__main__":
    main()
