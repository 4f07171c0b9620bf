import sys, torch, nvfp4_gemm
from nvfp4_gemm.timing import time_kernels
label = sys.argv[1]
for m in [1, 16, 64, 128]:
    x = torch.randn(m, 7168, device="cuda", dtype=torch.bfloat16)
    out = nvfp4_gemm.quantize(x)
    fn = lambda: nvfp4_gemm.quantize(x, out=out)
    print(f"{label} M={m}: span {time_kernels(fn).median_us:.2f} us", flush=True)
