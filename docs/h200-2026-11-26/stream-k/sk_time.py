import sys, torch
from nvfp4_gemm.configs import load_table
from nvfp4_gemm.tools.testing import random_operands
from nvfp4_gemm.tools.tune import verify_and_time
table = load_table()
names = {c.name for c in table.configs}
CASES = [((128, 14336, 4096), ["sm90_wgmma_128x128x128_prepass_splitk_bf16xnvfp4:1", "sm90_wgmma_128x128x128_prepass_splitk_streamk_bf16xnvfp4:1"]),
         ((128, 7168, 7168), ["sm90_wgmma_128x128x128_prepass_splitk_bf16xnvfp4:2", "sm90_wgmma_128x128x128_prepass_splitk_streamk_bf16xnvfp4:1"]),
         ((64, 14336, 4096), ["sm90_wgmma_64x128x128_prepass_splitk_bf16xnvfp4:1", "sm90_wgmma_64x128x128_prepass_splitk_streamk_bf16xnvfp4:1"]),
         ((128, 2112, 7168), ["sm90_wgmma_128x128x128_prepass_splitk_bf16xnvfp4:6", "sm90_wgmma_128x128x128_prepass_splitk_streamk_bf16xnvfp4:1"]),
         ((128, 28672, 8192), ["sm90_wgmma_128x256x128_prepass_splitk_bf16xnvfp4:1", "sm90_wgmma_128x256x128_prepass_splitk_streamk_bf16xnvfp4:1"])]
label = sys.argv[1]
for (m, n, k), pairs in CASES:
    ops = random_operands(m, n, k, seed=3, device="cuda", format="bf16xnvfp4")
    out = torch.empty((m, n), dtype=torch.bfloat16, device="cuda")
    for pair in pairs:
        name, _, split = pair.partition(":")
        if name not in names:
            continue
        us, summary = verify_and_time(ops, out, name, int(split), iters=100)
        print(f"{label} {m}x{n}x{k} {name}:{split} {us if us is None else round(us, 2)}", flush=True)
