"""Quantize with a partner global scale (NVFP4Linear's call: alpha = 1 / (gs * the weight's gs)), dynamic and static:
kernel span (us, median of 50, L2 flushed) per M at K = 7168, each shape checked bit for bit against the CPU op first."""
import sys, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_kernels
label = sys.argv[1]
partner = torch.tensor([37.0], device="cuda")
cells = []
for m, static in ((1, False), (16, False), (128, False), (1024, False), (8192, False), (1, True), (8192, True)):
    x = torch.randn(m, 7168, device="cuda", dtype=torch.bfloat16, generator=torch.Generator("cuda").manual_seed(m))
    gs = torch.tensor([3.0], device="cuda") if static else None
    out = nvfp4_gemm.quantize(x, gs, partner_global_scale=partner)
    want = nvfp4_gemm.quantize(x.cpu(), None if gs is None else gs.cpu(), partner_global_scale=partner.cpu())
    assert all(torch.equal(a.cpu().view(torch.uint8), b.view(torch.uint8)) for a, b in zip(out[:2], want[:2])), (label, m)
    assert all(torch.equal(a.cpu(), b) for a, b in zip(out[2:], want[2:])), (label, m, "gs/alpha")
    span = time_kernels(lambda: nvfp4_gemm.quantize(x, gs, partner_global_scale=partner, out=out)).median_us
    cells.append(f"{'s' if static else 'd'}{m}:{span:.2f}")
print(f"{label} partner spans " + " ".join(cells), flush=True)
