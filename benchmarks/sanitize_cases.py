"""A few small GEMMs with residues (M, N, K, L, split-K) for compute-sanitizer:
    compute-sanitizer --tool memcheck python benchmarks/sanitize_cases.py [--first N]"""

import sys

import torch

import nvfp4_gemm
from nvfp4_gemm.testing import check_against_reference, random_operands

CASES = [(1, 8, 32, None), (7, 24, 96, None), (129, 136, 288, None), (33, 264, 1056, 3), (128, 1024, 4096, None)]

count = int(sys.argv[sys.argv.index("--first") + 1]) if "--first" in sys.argv else len(CASES)
for i, (m, n, k, l) in enumerate(CASES[:count]):
    ops = random_operands(m, n, k, l, seed=i, device="cuda", with_alpha=True, padding_byte=0x38)
    out = torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, torch.bfloat16)
    ok, summary = check_against_reference(out, ops, roundings=k // 16 + k // 128 + 2)
    split = nvfp4_gemm.resolve(m, n, k, l or 1, torch.bfloat16, "cuda", explain=True).split_k
    print(f"M={m} N={n} K={k} L={l} split_k={split}: {'ok' if ok else 'MISMATCH'} ({summary})")
