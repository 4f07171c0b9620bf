"""EXPERIMENTS ONLY: device time of pinned (config, split) pairs WITHOUT verification, for kernel
variants that compute wrong results on purpose (a stage left out to see what it costs).
    python benchmarks/time_unverified.py MxNxK CONFIG:SPLIT ..."""
import sys

import torch

import nvfp4_gemm
from nvfp4_gemm.testing import random_operands
from nvfp4_gemm.timing import time_cuda

m, n, k = (int(x) for x in sys.argv[1].split("x"))
ops = random_operands(m, n, k, seed=0, device="cuda")
out = torch.empty((m, n), dtype=torch.float16, device="cuda")
for pair in sys.argv[2:]:
    name, _, split = pair.partition(":")
    call = lambda: nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out, config=name, split_k=int(split or 1))
    print(f"{m}x{n}x{k} {pair}: {time_cuda(call, iters=50).median_us:.2f} us", flush=True)
