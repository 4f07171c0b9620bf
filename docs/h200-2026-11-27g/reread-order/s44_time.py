"""Large dynamic quantize times of one build (us, median of 200, L2 flushed); every timed shape checked bit for
bit against the CPU op unless the label starts with "l2" (timing-only builds) or argv[2] is 'timed' (a later round)."""
import sys, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_cuda
label = sys.argv[1]
K = 7168
g = torch.Generator("cuda").manual_seed(0)
def t(m, dtype, gs=None):
    x = (torch.randn(m, K, device="cuda", generator=g) * torch.rand(m, 1, device="cuda", generator=g)).to(dtype)
    out = nvfp4_gemm.quantize(x, gs)
    if not label.startswith("l2") and "walk" not in label and sys.argv[2:] != ["timed"]:
        want = nvfp4_gemm.quantize(x.cpu(), None if gs is None else gs.cpu())
        assert all(torch.equal(a.cpu().view(torch.uint8), b.view(torch.uint8)) for a, b in zip(out[:2], want[:2])), (label, m)
    return time_cuda(lambda: nvfp4_gemm.quantize(x, gs, out=out), iters=200, flush_l2=True).median_us
cells = [f"bf16 {m}:{t(m, torch.bfloat16):7.2f}" for m in (2048, 4096, 8192, 12288)]
cells.append(f"fp16 8192:{t(8192, torch.float16):7.2f}")
cells.append(f"fp32 4096:{t(4096, torch.float32):7.2f}")
nbytes = 2 * 8192 * K + 8192 * K // 2 + 8192 * K // 16
src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda"); dst = torch.empty_like(src)
cells.append(f"copy:{time_cuda(lambda: dst.copy_(src), iters=200).median_us:7.2f}")
print(f"{label:8s} " + " | ".join(cells), flush=True)
