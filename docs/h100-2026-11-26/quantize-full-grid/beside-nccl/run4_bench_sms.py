import sys, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_cuda
sys.path.insert(0, "benchmarks")
from test_bench_quantize import quantize_bytes
sms = int(sys.argv[1]) if sys.argv[1] != "all" else None
nvfp4_gemm.set_quantize_sms(sms)
for m in [16, 128, 1024, 2048, 8192]:
    x = torch.randn(m, 7168, device="cuda", dtype=torch.bfloat16)
    nbytes = quantize_bytes(m, 7168)
    src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda"); dst = torch.empty_like(src)
    copy_us = time_cuda(lambda: dst.copy_(src)).median_us
    out = nvfp4_gemm.quantize(x)
    dyn = time_cuda(lambda: nvfp4_gemm.quantize(x, out=out)).median_us
    print(f"sms={sys.argv[1]} M={m}: dynamic {dyn:.1f} us ({100*copy_us/dyn:.1f} % of copy), copy {copy_us:.1f} us", flush=True)
