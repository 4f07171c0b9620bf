"""Dynamic quantize (bf16/fp16 8192x7168, bf16 4096x7168) by NVFP4_Q_L2_STEPS (walked steps loaded with normal L2
priority; the earlier ones evict-first), CUDA events, median of 200, after the benchmark's dirty flush (zero_ of
256 MB) and after a clean one (a read of it); the copy of the quantize's bytes beside. Outputs checked bit for bit
against the CPU op first."""
import os, sys, statistics, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_cuda
label = sys.argv[1]
K = 7168
g = torch.Generator("cuda").manual_seed(0)
flush = torch.empty(64 * 1024 * 1024, dtype=torch.int32, device="cuda")
def time_clean(fn, iters=200):
    for _ in range(10): fn()
    s = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]; e = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for a, b in zip(s, e):
        flush.sum(); a.record(); fn(); b.record()
    torch.cuda.synchronize()
    return statistics.median(x.elapsed_time(y) * 1000 for x, y in zip(s, e))
xs = {}
for m, dt in ((8192, torch.bfloat16), (8192, torch.float16), (4096, torch.bfloat16)):
    x = (torch.randn(m, K, device="cuda", generator=g) * torch.rand(m, 1, device="cuda", generator=g)).to(dt)
    xs[(m, dt)] = (x, nvfp4_gemm.quantize(x.cpu()))
nbytes = 2 * 8192 * K + 8192 * K // 2 + 8192 * K // 16
src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda"); dst = torch.empty_like(src)
cells = [f"copy {time_cuda(lambda: dst.copy_(src), iters=200).median_us:6.2f}/{time_clean(lambda: dst.copy_(src)):6.2f}"]
for (m, dt), (x, want) in xs.items():
    out = nvfp4_gemm.quantize(x)
    assert all(torch.equal(a.cpu().view(torch.uint8), b.view(torch.uint8)) for a, b in zip(out[:2], want[:2])), (label, m, dt)
    fn = lambda: nvfp4_gemm.quantize(x, out=out)
    cells.append(f"{str(dt)[6:]} {m} {time_cuda(fn, iters=200).median_us:6.2f}/{time_clean(fn):6.2f}")
print(f"{label:10s} (dirty/clean us) " + " | ".join(cells), flush=True)
