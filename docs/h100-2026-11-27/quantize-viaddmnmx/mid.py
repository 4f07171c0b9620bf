"""One variant's quantize times (us, median, L2 flushed): bf16 dynamic by M at K=7168, fp32 dynamic, static 8192."""
import sys, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_cuda
label = sys.argv[1]
K = 7168
g = torch.Generator("cuda").manual_seed(0)
row = []
def t(m, dtype, gs=None):
    x = torch.randn(m, K, device="cuda", dtype=dtype, generator=g)
    out = nvfp4_gemm.quantize(x, gs)
    want = nvfp4_gemm.quantize(x.cpu(), None if gs is None else gs.cpu())
    assert all(torch.equal(a.cpu().view(torch.uint8), b.view(torch.uint8)) for a, b in zip(out[:2], want[:2])), (label, m)
    return time_cuda(lambda: nvfp4_gemm.quantize(x, gs, out=out), iters=200).median_us
cells = []
for m in (64, 256, 1024, 2048, 4096, 8192, 16384):
    cells.append(f"bf16 {m}:{t(m, torch.bfloat16):7.2f}")
for m in (2048, 4096):
    cells.append(f"fp32 {m}:{t(m, torch.float32):7.2f}")
cells.append(f"static 8192:{t(8192, torch.bfloat16, torch.tensor([400.0], device='cuda')):7.2f}")
nbytes = 2 * 8192 * K + 8192 * K // 2 + 8192 * K // 16
src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda"); dst = torch.empty_like(src)
cells.append(f"copy:{time_cuda(lambda: dst.copy_(src), iters=200).median_us:7.2f}")
print(f"{label:6s} " + " | ".join(cells), flush=True)
