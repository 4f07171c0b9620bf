"""A few small GEMMs with residues (M, N, K, L, split-K) for compute-sanitizer:
    compute-sanitizer --tool memcheck python benchmarks/sanitize_cases.py [--first N] [--config NAME]
With --config the cases that config takes run it pinned (split 1 and its largest split up to 3 where K allows), in
its row's format (weight-only rows: 16-bit activations), else the resolver's (NVFP4)."""

import sys

import torch

import nvfp4_gemm
from nvfp4_gemm.configs import load_table
from nvfp4_gemm.testing import check_against_reference, random_operands

CASES = [(1, 8, 32, None), (7, 24, 96, None), (129, 136, 288, None), (33, 264, 1056, 3), (128, 1024, 4096, None),
         (1, 72, 2080, 2)]


def _arg(flag):
    return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else None


count = int(_arg("--first") or len(CASES))
config = _arg("--config")
failed = 0
ran = 0
for i, (m, n, k, l) in enumerate(CASES[:count]):
    row = None if config is None else load_table().by_name(config)
    if row is not None and row.supports(m, n, k, l or 1, "bfloat16") is not None:
        continue  # e.g. the GEMV's M and K limits
    ran += 1
    fmt = "nvfp4" if row is None else row.format
    ops = random_operands(m, n, k, l, seed=i, device="cuda", with_alpha=True, padding_byte=0x38, format=fmt)
    if config is None:
        runs = [(None, nvfp4_gemm.resolve(m, n, k, l or 1, torch.bfloat16, "cuda", explain=True).split_k)]
    else:
        runs = [(config, s) for s in sorted({1, max(s for s in row.split_options(k) if s <= 3)})]
    for pinned, split in runs:
        if pinned is None:
            out = torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, torch.bfloat16)
        else:
            out = nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, torch.bfloat16,
                                  config=pinned, split_k=split)
        ok, summary = check_against_reference(out, ops, roundings=k // 16 + k // 128 + 2)
        failed += not ok
        print(f"M={m} N={n} K={k} L={l} {pinned or 'resolver'} split_k={split}: {'ok' if ok else 'MISMATCH'} ({summary})")
if not ran:
    sys.exit(f"{config} takes none of the cases")
sys.exit(1 if failed else 0)
