"""Small quantize cases (dtypes, static and dynamic global scale, rows and K with residues) for
compute-sanitizer; each is compared bit for bit with the CPU reference. Exit status 1 on a mismatch.
    compute-sanitizer --tool memcheck python benchmarks/sanitize_quantize.py
    compute-sanitizer --tool racecheck python benchmarks/sanitize_quantize.py --first 2"""

import sys

import torch

import nvfp4_gemm
from nvfp4_gemm import formats

CASES = [  # (shape, dtype, static global scale or None)
    ((1, 16), torch.bfloat16, None),
    ((7, 48), torch.float16, 0.5),
    ((129, 96), torch.float32, None),
    ((2, 3, 160), torch.bfloat16, 2.0),
    ((300, 7168), torch.bfloat16, None),
]

count = int(sys.argv[sys.argv.index("--first") + 1]) if "--first" in sys.argv else len(CASES)
failed = False
for i, (shape, dtype, global_scale) in enumerate(CASES[:count]):
    x = (torch.randn(shape, generator=torch.Generator().manual_seed(i)) * 3).to(dtype)
    gs = None if global_scale is None else torch.tensor([global_scale])
    want = formats.quantize_reference(x, gs)
    got = nvfp4_gemm.quantize(x.cuda(), None if gs is None else gs.cuda())
    same = all(
        torch.equal(g.cpu().view(torch.uint8).reshape(-1), w.view(torch.uint8).reshape(-1))
        for g, w in zip(got[:2], want[:2])
    ) and torch.equal(got.global_scale.cpu(), want[2])
    failed |= not same
    print(f"quantize {tuple(shape)} {dtype} {'static' if gs is not None else 'dynamic'}: {'ok' if same else 'MISMATCH'}")
sys.exit(1 if failed else 0)
