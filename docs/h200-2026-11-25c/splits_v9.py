import torch, nvfp4_gemm
from nvfp4_gemm.testing import random_operands
from nvfp4_gemm.timing import time_cuda, time_kernels
cfg = "sm90_direct_16x128x128_splitk_bf16xnvfp4"
for m, n, k, splits in ((1, 2112, 7168, (8, 9, 12, 14, 16)), (16, 2112, 7168, (6, 9, 14)), (1, 8192, 28672, (4,)),
                        (16, 8192, 28672, (4,)), (1, 7168, 7168, (4, 9))):
    ops = random_operands(m, n, k, seed=0, device="cuda", format="bf16xnvfp4")
    row = []
    for s in splits:
        f = lambda: nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, config=cfg, split_k=s)
        row.append(f"s{s}: {time_cuda(f, iters=50).median_us:5.1f}/{time_kernels(f, iters=30).median_us:5.1f}")
    print(f"{m}x{n}x{k} events/span us: " + "  ".join(row), flush=True)
