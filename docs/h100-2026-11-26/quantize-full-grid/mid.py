"""Dynamic NVFP4 quantize of bf16 (M, 7168) by events, L2 flushed, against a copy of the same bytes."""
import sys, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_cuda
sys.path.insert(0, "benchmarks")
from test_bench_quantize import quantize_bytes
label = sys.argv[1]
k = 7168
for m in [256, 1024, 2048, 4096, 8192, 12288, 16384, 24576]:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    nbytes = quantize_bytes(m, k)
    src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda"); dst = torch.empty_like(src)
    copy_us = time_cuda(lambda: dst.copy_(src)).median_us
    out = nvfp4_gemm.quantize(x)
    dyn = time_cuda(lambda: nvfp4_gemm.quantize(x, out=out)).median_us
    print(f"{label} M={m}: dynamic {dyn:.1f} us ({100*copy_us/dyn:.0f} % of copy), copy {copy_us:.1f} us", flush=True)
for m in [2048, 4096]:
    x = torch.randn(m, k, device="cuda", dtype=torch.float32)
    out = nvfp4_gemm.quantize(x)
    print(f"{label} fp32 {m}x7168 dynamic {time_cuda(lambda: nvfp4_gemm.quantize(x, out=out)).median_us:.1f} us", flush=True)
