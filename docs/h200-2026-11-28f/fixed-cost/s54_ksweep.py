"""Fixed cost against per-stage cost of the wgmma kernel on the 2112-row layer: a pinned config and split,
K swept so that each CTA runs 1, 2, 4, 8, 16 stages; device time per kernel (median of 30 flushed calls).
usage: python s54_ksweep.py"""
import statistics
import torch
import nvfp4_gemm
from nvfp4_gemm.testing import random_operands
from nvfp4_gemm.tools import timing

for m, n, k in ((128, 2112, 7168), (64, 2112, 7168), (128, 28672, 8192), (128, 14336, 4096)):
    r = nvfp4_gemm.resolve(m, n, k, out_dtype=torch.bfloat16, device="cuda", explain=True, format="bf16xnvfp4")
    print(f"resolver {m}x{n}x{k}: {r.config.name} split {r.split_k}", flush=True)

def per_kernel(fn, iters=30):
    flush = timing.l2_flush()
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    flush_names = {e.name for e in timing._device_activities(flush, 1)}
    def flushed():
        flush(); torch.cuda.synchronize(); fn()
    evs = [e for e in timing._device_activities(flushed, iters) if e.name not in flush_names]
    per = len(evs) // iters
    out = {}
    spans = []
    for i in range(iters):
        call = evs[i * per:(i + 1) * per]
        spans.append(max(e.time_range.end for e in call) - call[0].time_range.start)
        for e in call:
            key = "wgmma" if "wgmma" in e.name else ("prepass" if "permute" in e.name else e.name[:30])
            out.setdefault(key, []).append(e.time_range.end - e.time_range.start)
    return statistics.median(spans), {k: statistics.median(v) for k, v in out.items()}

for cfg, m, split, stage_list in (("sm90_wgmma_128x128x128_prepass_splitk_bf16xnvfp4", 128, 6, (1, 2, 4, 8, 16)),
                                  ("sm90_wgmma_128x128x128_prepass_splitk_bf16xnvfp4", 128, 1, (1, 2, 4, 8, 16, 32, 64)),
                                  ("sm90_wgmma_64x128x128_prepass_splitk_bf16xnvfp4", 64, 6, (1, 2, 4, 8, 16))):
    for stages in stage_list:
        k = 128 * stages * split
        ops = random_operands(m, 2112, k, seed=0, device="cuda", format="bf16xnvfp4")
        out = torch.empty(m, 2112, dtype=torch.bfloat16, device="cuda")
        fn = lambda: nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out, config=cfg, split_k=split)
        span, kern = per_kernel(fn)
        ks = "  ".join(f"{a} {b:6.2f}" for a, b in kern.items())
        print(f"{cfg.split('_')[2]} M={m} split {split} stages/CTA {stages:3d} K={k:6d}: span {span:6.2f} us  {ks}", flush=True)
