"""What the W4A16 decode bar allows under each L2 flush: for each model layer, a plain read of the bytes any
W4A16 kernel must read (the packed FP4 weights and their e4m3 scales, one int32 max reduction over one buffer
holding both) against cuBLAS bf16 at M = 1 (nn.Linear), in the same run, CUDA events, median of 100.
bf16 / read is the ratio a W4A16 kernel at the speed of that read would reach. Interleaved flush kinds."""

import os
import sys

import torch

sys.path.insert(0, "benchmarks")
from sweep_hopper import MODEL_LAYERS  # noqa: E402

from nvfp4_gemm.timing import geomean, time_cuda  # noqa: E402

rows = {}
for rnd in (1, 2):
    for kind in ("dirty", "clean"):
        os.environ["NVFP4_L2_FLUSH"] = kind
        ratios = []
        for n, k in MODEL_LAYERS:
            weights = torch.randint(-2**31, 2**31 - 1, ((n * k // 2 + n * k // 16) // 4,), dtype=torch.int32, device="cuda")
            linear = torch.nn.Linear(k, n, bias=False, dtype=torch.bfloat16, device="cuda")
            x = torch.randn(1, k, dtype=torch.bfloat16, device="cuda")
            with torch.no_grad():
                bf16 = time_cuda(lambda: linear(x)).median_us
            read = time_cuda(weights.max).median_us
            ratios.append(bf16 / read)
            print(f"round {rnd} {kind:5} 1x{n}x{k}: cuBLAS bf16 {bf16:6.1f} us, read of packed weights + scales "
                  f"({weights.numel() * 4 / 1e6:.1f} MB) {read:5.1f} us, ratio {bf16 / read:.2f}", flush=True)
            del weights, linear
        print(f"round {rnd} {kind:5} geomean ceiling {geomean(ratios):.2f}x", flush=True)
