"""Evict-last walked steps (NVFP4_Q_PROTECT=R) by shape: us, median of 200, L2 flushed; argv[1] = label, argv[2] =
'checked' to check each shape bit for bit against the CPU op (at the largest R) first."""
import os, sys, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_cuda
K = 7168
label, checked = sys.argv[1], sys.argv[2:] == ["checked"]
g = torch.Generator("cuda").manual_seed(0)
STEP = 264 * 512  # blocks per step of the whole resident grid (132 SMs x 2 CTAs)
def walked(m, dtype):
    esize = torch.finfo(dtype).bits // 8
    on_chip = {2: 7 + 4, 4: 3 + 2}[esize]
    steps = -(-m * (K // 16) // STEP)
    return max(0, steps - on_chip)
rows = []
for dtype, ms in ((torch.bfloat16, (3584, 4096, 4608, 5120, 6144, 8192, 12288)), (torch.float16, (4096,)), (torch.float32, (2048, 3072))):
    for m in ms:
        x = (torch.randn(m, K, device="cuda", generator=g) * torch.rand(m, 1, device="cuda", generator=g)).to(dtype)
        w = walked(m, dtype)
        rs = sorted({r for r in (0, 1, 2, 3, 4, 6, 8, 12, w) if r <= w})
        out = nvfp4_gemm.quantize(x)
        if checked:
            os.environ["NVFP4_Q_PROTECT"] = str(w)
            out = nvfp4_gemm.quantize(x)
            want = nvfp4_gemm.quantize(x.cpu())
            assert all(torch.equal(a.cpu().view(torch.uint8), b.view(torch.uint8)) for a, b in zip(out[:2], want[:2])), (m, dtype)
        cells = []
        for r in rs:
            os.environ["NVFP4_Q_PROTECT"] = str(r)
            cells.append(f"R{r}:{time_cuda(lambda: nvfp4_gemm.quantize(x, out=out), iters=200, flush_l2=True).median_us:7.2f}")
        os.environ.pop("NVFP4_Q_PROTECT")
        rule = time_cuda(lambda: nvfp4_gemm.quantize(x, out=out), iters=200, flush_l2=True).median_us
        print(f"{label} {str(dtype)[6:]:8s} {m:6d} walked {w:2d} | " + " ".join(cells) + f" | rule:{rule:7.2f}", flush=True)
