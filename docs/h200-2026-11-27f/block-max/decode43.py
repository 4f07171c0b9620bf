"""Decode quantize (NVFP4 bf16 dynamic, K = 7168) per M: CUDA events (median of 300, L2 flushed) and the kernel
span (profiler records, median of 50), every shape checked bit for bit against the CPU op first."""
import sys, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_cuda, time_kernels
label = sys.argv[1]
cells = []
for m in (1, 4, 16, 32, 64, 128):
    x = torch.randn(m, 7168, device="cuda", dtype=torch.bfloat16, generator=torch.Generator("cuda").manual_seed(m))
    out = nvfp4_gemm.quantize(x)
    want = nvfp4_gemm.quantize(x.cpu())
    assert all(torch.equal(a.cpu().view(torch.uint8), b.view(torch.uint8)) for a, b in zip(out[:2], want[:2])), (label, m)
    ev = time_cuda(lambda: nvfp4_gemm.quantize(x, out=out), iters=300, flush_l2=True).median_us
    span = time_kernels(lambda: nvfp4_gemm.quantize(x, out=out)).median_us
    cells.append(f"{m}:{ev:5.2f}/{span:4.2f}")
print(f"{label:4s} decode ev/span " + " ".join(cells), flush=True)
