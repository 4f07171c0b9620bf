import sys, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_cuda, time_kernels
m, k = int(sys.argv[1]), 7168
x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
out = nvfp4_gemm.quantize(x)
fn = lambda: nvfp4_gemm.quantize(x, out=out)
ev = time_cuda(fn).median_us
sp = time_kernels(fn).median_us
print(f"{sys.argv[2]} M={m}: events {ev:.1f} us, span {sp:.1f} us", flush=True)
