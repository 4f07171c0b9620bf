"""A few small GEMMs with residues (M, N, K, L, split-K) for compute-sanitizer:
    compute-sanitizer --tool memcheck python benchmarks/sanitize_cases.py [--first N] [--config NAME]
With --config the cases run that config pinned (split 1 and 3 where K allows), in its row's format (weight-only
rows: 16-bit activations), else the resolver's (NVFP4)."""

import sys

import torch

import nvfp4_gemm
from nvfp4_gemm.configs import load_table
from nvfp4_gemm.testing import check_against_reference, random_operands

CASES = [(1, 8, 32, None), (7, 24, 96, None), (129, 136, 288, None), (33, 264, 1056, 3), (128, 1024, 4096, None)]


def _arg(flag):
    return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else None


count = int(_arg("--first") or len(CASES))
config = _arg("--config")
failed = 0
for i, (m, n, k, l) in enumerate(CASES[:count]):
    fmt = "nvfp4" if config is None else load_table().by_name(config).format
    ops = random_operands(m, n, k, l, seed=i, device="cuda", with_alpha=True, padding_byte=0x38, format=fmt)
    if config is None:
        runs = [(None, nvfp4_gemm.resolve(m, n, k, l or 1, torch.bfloat16, "cuda", explain=True).split_k)]
    else:
        runs = [(config, s) for s in sorted({1, min(3, load_table().by_name(config).max_split_k(k))})]
    for pinned, split in runs:
        if pinned is None:
            out = torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, torch.bfloat16)
        else:
            out = nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, torch.bfloat16,
                                  config=pinned, split_k=split)
        ok, summary = check_against_reference(out, ops, roundings=k // 16 + k // 128 + 2)
        failed += not ok
        print(f"M={m} N={n} K={k} L={l} {pinned or 'resolver'} split_k={split}: {'ok' if ok else 'MISMATCH'} ({summary})")
sys.exit(1 if failed else 0)
