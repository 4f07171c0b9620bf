"""Repeated medians of the dynamic bf16 quantize at M = 512 / 1024 / 2048, K = 7168 (events, L2 flushed, 200 calls
each, a fresh x per repetition): is a slow median (stop 37: 32.9 us, stop 40: 60.4 us at M = 1024, against ~18)
a state that comes and goes, and on which tree?"""
import sys, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_cuda
label = sys.argv[1]
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 8
g = torch.Generator("cuda").manual_seed(0)
for m in (512, 1024, 2048):
    cells = []
    for _ in range(reps):
        x = (torch.randn(m, 7168, device="cuda", generator=g) * torch.rand(m, 1, device="cuda", generator=g)).to(torch.bfloat16)
        out = nvfp4_gemm.quantize(x)
        cells.append(time_cuda(lambda: nvfp4_gemm.quantize(x, out=out), iters=200).median_us)
    print(f"{label} M={m}: " + " ".join(f"{c:.1f}" for c in cells), flush=True)
