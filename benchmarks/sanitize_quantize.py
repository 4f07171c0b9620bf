"""Small quantize cases (formats, dtypes, static and dynamic NVFP4 global scale: one pass on small x, one
resident walk beyond it; rows and K with residues)
for compute-sanitizer; each is compared bit for bit (every output byte) with the CPU op, the reference.
Exit status 1 on a mismatch. --cases picks cases by index (comma-separated).
    compute-sanitizer --tool memcheck python benchmarks/sanitize_quantize.py
    compute-sanitizer --tool racecheck python benchmarks/sanitize_quantize.py --cases 0,1,6,7"""

import sys

import torch

import nvfp4_gemm

CASES = [  # (shape, dtype, format, static global scale or None (NVFP4 only))
    ((1, 16), torch.bfloat16, "nvfp4", None),
    ((7, 48), torch.float16, "nvfp4", 0.5),
    ((129, 96), torch.float32, "nvfp4", None),
    ((2, 3, 160), torch.bfloat16, "nvfp4", 2.0),
    ((128, 7168), torch.bfloat16, "nvfp4", None),  # one pass, 512 threads per CTA (more CTAs than SMs at 256)
    ((300, 7168), torch.bfloat16, "nvfp4", None),
    # dynamic beyond the one-pass grid (132 SMs): the resident kernel, its last step ragged
    ((1100, 4096), torch.bfloat16, "nvfp4", None),
    ((700, 7168), torch.float32, "nvfp4", None),  # steps held in registers and kept in shared memory
    ((4096, 7168), torch.bfloat16, "nvfp4", None),  # and steps walked, then re-read (one 1024-thread CTA per SM)
    ((1, 32), torch.bfloat16, "mxfp4", None),
    ((129, 96), torch.float32, "mxfp8", None),
    ((2, 3, 160), torch.float16, "mxfp4", None),
    ((300, 7168), torch.bfloat16, "mxfp8", None),
    ((8192, 7168), torch.bfloat16, "nvfp4", None),  # the resident kernel with most of its steps re-read (17 of 28)
]


def as_bytes(t: torch.Tensor) -> torch.Tensor:
    return t.cpu().reshape(-1).view(torch.uint8)


picked = (
    [int(i) for i in sys.argv[sys.argv.index("--cases") + 1].split(",")] if "--cases" in sys.argv else range(len(CASES))
)
failed = False
for i in picked:
    shape, dtype, fmt, global_scale = CASES[i]
    x = (torch.randn(shape, generator=torch.Generator().manual_seed(i)) * 3).to(dtype)
    gs = None if global_scale is None else torch.tensor([global_scale])
    want = nvfp4_gemm.quantize(x, gs, format=fmt)
    got = nvfp4_gemm.quantize(x.cuda(), None if gs is None else gs.cuda(), format=fmt)
    same = all(torch.equal(as_bytes(g), as_bytes(w)) for g, w in zip(got, want))
    failed |= not same
    mode = "static" if gs is not None else "dynamic" if fmt == "nvfp4" else "no global scale"
    print(f"quantize {fmt} {tuple(shape)} {dtype} {mode}: {'ok' if same else 'MISMATCH'}")
sys.exit(1 if failed else 0)
