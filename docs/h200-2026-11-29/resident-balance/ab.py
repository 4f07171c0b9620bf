"""One variant's dynamic quantize times (us, median of 200, memset L2 flush; every timed shape checked bit for
bit against the CPU op first), and a same-run copy of the 8192x7168 quantize's bytes."""
import sys, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_cuda
label = sys.argv[1]
K = 7168
g = torch.Generator("cuda").manual_seed(0)
def t(m, dtype):
    x = (torch.randn(m, K, device="cuda", generator=g) * torch.rand(m, 1, device="cuda", generator=g)).to(dtype)
    out = nvfp4_gemm.quantize(x)
    want = nvfp4_gemm.quantize(x.cpu())
    assert all(torch.equal(a.cpu().view(torch.uint8), b.view(torch.uint8)) for a, b in zip(out[:2], want[:2])), (label, m)
    return time_cuda(lambda: nvfp4_gemm.quantize(x, out=out), iters=200).median_us
cells = [f"bf16 {m}:{t(m, torch.bfloat16):7.2f}" for m in (128, 1024, 2048, 4096, 8192)]
cells.append(f"fp16 8192:{t(8192, torch.float16):7.2f}")
cells.append(f"fp32 4096:{t(4096, torch.float32):7.2f}")
nbytes = 2 * 8192 * K + 8192 * K // 2 + 8192 * K // 16
src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda"); dst = torch.empty_like(src)
cells.append(f"copy:{time_cuda(lambda: dst.copy_(src), iters=200).median_us:7.2f}")
print(f"{label:9s} " + " | ".join(cells), flush=True)
