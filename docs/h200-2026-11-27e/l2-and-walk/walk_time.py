"""bf16 8192x7168 dynamic quantize (whatever build is on the path), CUDA events, median of 200, after the benchmark's
dirty flush and after a clean one; two medians each. No exactness check (the diagnostic builds stop early)."""
import sys, statistics, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_cuda
label = sys.argv[1]
flush = torch.empty(64 * 1024 * 1024, dtype=torch.int32, device="cuda")
def time_clean(fn, iters=200):
    for _ in range(10): fn()
    s = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]; e = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for a, b in zip(s, e):
        flush.sum(); a.record(); fn(); b.record()
    torch.cuda.synchronize()
    return statistics.median(x.elapsed_time(y) * 1000 for x, y in zip(s, e))
x = torch.randn(8192, 7168, device="cuda", dtype=torch.bfloat16, generator=torch.Generator("cuda").manual_seed(0))
out = nvfp4_gemm.quantize(x)
fn = lambda: nvfp4_gemm.quantize(x, out=out)
d = [time_cuda(fn, iters=200).median_us for _ in range(2)]
c = [time_clean(fn) for _ in range(2)]
print(f"{label:9s} dirty {d[0]:6.2f} {d[1]:6.2f}  clean {c[0]:6.2f} {c[1]:6.2f} us", flush=True)
