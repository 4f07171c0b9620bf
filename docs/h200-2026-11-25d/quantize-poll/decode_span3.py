import sys, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_kernels
label = sys.argv[1]
row = []
for m in [1, 8, 16, 32, 64, 96, 128]:
    x = torch.randn(m, 7168, device="cuda", dtype=torch.bfloat16)
    out = nvfp4_gemm.quantize(x)
    ref = nvfp4_gemm.quantize(x.cpu())
    assert all(torch.equal(a.cpu().reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8)) for a, b in zip(out, ref)), m
    fn = lambda: nvfp4_gemm.quantize(x, out=out)
    row.append(f"M={m} {time_kernels(fn).median_us:.2f}")
print(f"{label}: span " + "  ".join(row), flush=True)
