"""Decode quantize with a partner global scale (NVFP4Linear's call: alpha = 1 / (gs * the weight's gs)):
kernel span (us, median) per M at K = 7168, each shape checked bit for bit against the CPU op first."""
import sys, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_kernels
label = sys.argv[1]
partner = torch.tensor([37.0], device="cuda")
cells = []
for m in (1, 16, 128):
    x = torch.randn(m, 7168, device="cuda", dtype=torch.bfloat16, generator=torch.Generator("cuda").manual_seed(m))
    out = nvfp4_gemm.quantize(x, partner_global_scale=partner)
    want = nvfp4_gemm.quantize(x.cpu(), partner_global_scale=partner.cpu())
    assert all(torch.equal(a.cpu().view(torch.uint8), b.view(torch.uint8)) for a, b in zip(out[:2], want[:2])), (label, m)
    assert all(torch.equal(a.cpu(), b) for a, b in zip(out[2:], want[2:])), (label, m, "gs/alpha")
    cells.append(f"{m}:{time_kernels(lambda: nvfp4_gemm.quantize(x, partner_global_scale=partner, out=out)).median_us:.2f}")
print(f"{label} partner spans " + " ".join(cells), flush=True)
