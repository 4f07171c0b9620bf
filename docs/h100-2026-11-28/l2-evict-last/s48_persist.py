"""Do evict-last lines outlive the kernel (and the benchmark's memset flush)? One process, override build:
bf16 4096x7168 (3 walked steps, 13 MB) timed at R = 0 and 3 in turn on the same x; then a plain read of a fresh
tensor y timed (flushed each call) before and after one protected quantize of y, and after one R0 quantize of y."""
import os, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_cuda
K, M = 7168, 4096
g = torch.Generator("cuda").manual_seed(0)
def make():
    return (torch.randn(M, K, device="cuda", generator=g) * torch.rand(M, 1, device="cuda", generator=g)).to(torch.bfloat16)
x = make(); out = nvfp4_gemm.quantize(x)
def q(r, t=x, o=out):
    os.environ["NVFP4_Q_PROTECT"] = str(r)
    return time_cuda(lambda: nvfp4_gemm.quantize(t, out=o), iters=100, flush_l2=True).median_us
print("quantize x, R sequence:", " ".join(f"R{r}:{q(r):.2f}" for r in (0, 0, 3, 3, 0, 0, 3, 0, 0, 0)), flush=True)
y = make(); oy = nvfp4_gemm.quantize(y) if False else None
def read_y():
    return time_cuda(lambda: y.view(torch.int32).max(), iters=100, flush_l2=True).median_us
def once(r):
    os.environ["NVFP4_Q_PROTECT"] = str(r)
    nvfp4_gemm.quantize(y); torch.cuda.synchronize()
r_before = [read_y() for _ in range(2)]
once(3)
r_after3 = [read_y() for _ in range(2)]
once(0)
r_after0 = [read_y() for _ in range(2)]
print(f"read of y (13 MB walked part protected by R3): before {r_before}, after one R3 quantize {r_after3}, "
      f"after one R0 quantize {r_after0}", flush=True)
