"""Time the W4A16 layer (resolver's pick) against cuBLAS bf16 at decode, one build per process.
usage: python s49_time.py LABEL OUT_JSON [M list]"""
import json, sys
import torch
import nvfp4_gemm
from nvfp4_gemm.nn import NVFP4Linear
from nvfp4_gemm.timing import time_cuda, geomean
sys.path.insert(0, "benchmarks")
from sweep_hopper import MODEL_LAYERS

import os
NVFP4 = os.environ.get("NVFP4") == "1"
label, out = sys.argv[1], sys.argv[2]
ms = [int(v) for v in (sys.argv[3] if len(sys.argv) > 3 else "1,4,16").split(",")]
rows = []
with torch.no_grad():
    for m in ms:
        for n, k in MODEL_LAYERS:
            torch.manual_seed(m + n + k)
            linear = torch.nn.Linear(k, n, bias=False, dtype=torch.bfloat16, device="cuda")
            layer = NVFP4Linear.from_linear(linear, activations="bf16")
            x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
            w = time_cuda(lambda: layer(x), iters=100).median_us
            b = time_cuda(lambda: linear(x), iters=100).median_us
            row = {"m": m, "n": n, "k": k, "w4a16_us": w, "bf16_us": b}
            if NVFP4:  # the NVFP4 x NVFP4 gemm (the direct kernel with packed tokens), x quantized ahead
                w4a4 = NVFP4Linear.from_linear(linear, activations="nvfp4")
                q, q_scale, _, q_alpha = torch.ops.nvfp4.quantize(x, None, w4a4.weight_global_scale)
                row["nvfp4_us"] = time_cuda(lambda: torch.ops.nvfp4.gemm(q, w4a4.weight, q_scale, w4a4.weight_scale,
                                                                          q_alpha, torch.bfloat16), iters=100).median_us
            rows.append(row)
            extra = f"  NVFP4 {row['nvfp4_us']:7.2f}" if NVFP4 else ""
            print(f"{label} {m:>3} {n:>6} {k:>6}  W4A16 {w:7.2f}  bf16 {b:7.2f}  x{b / w:5.2f}{extra}", flush=True)
g = geomean(r["bf16_us"] / r["w4a16_us"] for r in rows)
gw = geomean(r["w4a16_us"] for r in rows)
gn = f", NVFP4 gemm geomean {geomean(r['nvfp4_us'] for r in rows):.2f} us" if NVFP4 else ""
print(f"{label} geomean x bf16 {g:.3f}, W4A16 geomean {gw:.2f} us{gn}", flush=True)
json.dump({"label": label, "rows": rows, "geomean_x_bf16": g}, open(out, "w"), indent=1)
