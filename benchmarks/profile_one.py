"""Run one shape a few times through torch.ops.nvfp4.gemm (or a pinned config), for a profiler to attach to:
    ncu --clock-control none --kernel-name regex:"wgmma_gemm|direct_decode" --launch-skip 2 --launch-count 1 \\
        python benchmarks/profile_one.py 128x7168x2048 [CONFIG[:SPLIT_K]] [--format=bf16xnvfp4]"""

import sys

import torch

import nvfp4_gemm
from nvfp4_gemm.testing import random_operands

formats = [arg.partition("=")[2] for arg in sys.argv[2:] if arg.startswith("--format=")]
args = [arg for arg in sys.argv[1:] if not arg.startswith("--format=")]
m, n, k = (int(x) for x in args[0].split("x"))
ops = random_operands(m, n, k, seed=0, device="cuda", format=formats[-1] if formats else "nvfp4")
for _ in range(4):
    if len(args) > 1:
        name, _, split = args[1].partition(":")
        nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, config=name, split_k=int(split or 1))
    else:
        torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale)
torch.cuda.synchronize()
