"""One variant's quantize times (us, median of 200, L2 flushed; every timed shape checked bit for bit against
the CPU op): NVFP4 bf16 dynamic by M at K=7168 (decode and large), fp32 dynamic, static 8192, MXFP4 8192, copy."""
import sys, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_cuda
label = sys.argv[1]
K = 7168
g = torch.Generator("cuda").manual_seed(0)
def t(m, dtype, gs=None, fmt="nvfp4", flush=True):
    x = (torch.randn(m, K, device="cuda", generator=g) * torch.rand(m, 1, device="cuda", generator=g)).to(dtype)
    out = nvfp4_gemm.quantize(x, gs, format=fmt)
    want = nvfp4_gemm.quantize(x.cpu(), None if gs is None else gs.cpu(), format=fmt)
    assert all(torch.equal(a.cpu().view(torch.uint8), b.view(torch.uint8)) for a, b in zip(out[:2], want[:2])), (label, m, fmt)
    return time_cuda(lambda: nvfp4_gemm.quantize(x, gs, out=out, format=fmt), iters=200, flush_l2=flush).median_us
cells = []
for m in (1, 16, 128, 1024, 4096, 8192):
    cells.append(f"bf16 {m}:{t(m, torch.bfloat16):7.2f}")
cells.append(f"fp16 8192:{t(8192, torch.float16):7.2f}")
cells.append(f"fp32 4096:{t(4096, torch.float32):7.2f}")
cells.append(f"static 8192:{t(8192, torch.bfloat16, torch.tensor([400.0], device='cuda')):7.2f}")

cells.append(f"mxfp4 8192:{t(8192, torch.bfloat16, fmt='mxfp4'):7.2f}")
nbytes = 2 * 8192 * K + 8192 * K // 2 + 8192 * K // 16
src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda"); dst = torch.empty_like(src)
cells.append(f"copy:{time_cuda(lambda: dst.copy_(src), iters=200).median_us:7.2f}")
print(f"{label:6s} " + " | ".join(cells), flush=True)
