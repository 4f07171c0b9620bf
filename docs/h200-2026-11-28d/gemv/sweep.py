"""Stop 52 (device time: nvfp4_gemm.timing.time_kernels, the device idle before each flushed call): the library's GEMV rows against the direct kernel (both pinned) and cuBLAS bf16, M = 1..4, many
layers; each GEMV output checked against the float64 reference first (on the GPU)."""
import sys
import torch
import nvfp4_gemm
from nvfp4_gemm.testing import random_operands, check_against_reference, fp32_roundings
from nvfp4_gemm.timing import time_kernels as time_cuda, geomean
from nvfp4_gemm import formats

fmt = sys.argv[1]
ms = [int(v) for v in sys.argv[2].split(",")]
shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[3].split(",")]
dt = torch.float16 if fmt.startswith("fp16") else torch.bfloat16
print(f"format {fmt}, flush {nvfp4_gemm.timing.l2_flush_kind()}, GPU {torch.cuda.get_device_name()}")
print("m,n,k,weights_M,gemv_us_split1/2/4,direct_us,bf16_us,direct_over_best_gemv,err_over_tol,resolver_pick")
for n, k in shapes:
    for m in ms:
        ops = random_operands(m, n, k, seed=n + k + m, format=fmt, device="cuda", with_alpha=True)
        gemv = f"sm90_gemv_{1 if m == 1 else 4}x4x1024_{fmt}"
        row = nvfp4_gemm.configs.load_table().by_name(gemv)
        direct = f"sm90_direct_16x128x128_splitk_{fmt}"
        out = torch.full((m, n), float("nan"), dtype=dt, device="cuda")
        worst = 0.0
        for split in row.split_options(k):
            out.fill_(float("nan"))
            nvfp4_gemm.gemm(ops.a, ops.b, None, ops.b_scale, ops.alpha, out=out, config=gemv, split_k=split)
            ok, summary = check_against_reference(out, ops, roundings=fp32_roundings(k))
            assert ok, f"{gemv} split {split} {(m, n, k)}: {summary}"
            worst = max(worst, float(summary.split(",")[0].split("=")[-1]))
        w16 = (formats.dequantize(ops.b, ops.b_scale, torch.float32) * ops.alpha.float()).to(dt)
        t_s = {split: time_cuda(lambda: nvfp4_gemm.gemm(ops.a, ops.b, None, ops.b_scale, ops.alpha, out=out, config=gemv,
                                                         split_k=split)).median_us for split in row.split_options(k)}
        t_g = min(t_s.values())
        picked = nvfp4_gemm.resolver.resolve(m, n, k, 1, dt, device=ops.a.device, format=fmt, explain=True)
        t_d = time_cuda(lambda: nvfp4_gemm.gemm(ops.a, ops.b, None, ops.b_scale, ops.alpha, out=out, config=direct)).median_us
        t_b = time_cuda(lambda: torch.nn.functional.linear(ops.a, w16)).median_us
        splits = "/".join(f"{t_s.get(s_, float('nan')):.2f}" for s_ in (1, 2, 4))
        print(f"{m},{n},{k},{n * k / 1e6:.1f},{splits},{t_d:.2f},{t_b:.2f},{t_d / t_g:.3f},{worst:.3f},"
              f"{picked.config.mma}:{picked.split_k}", flush=True)
        del ops, w16
        torch.cuda.empty_cache()
