"""Time nvfp4_gemm against the vendor baselines on the present GPU, ranked shapes by default.

Each shape is first checked against the exact reference (nvfp4_gemm.testing.earned_tolerance), then timed with
nvfp4_gemm.timing (CUDA events, L2 flushed before each call, warm-up, median). Baselines in the same
run, on operands dequantized ahead of time (their preprocessing is not timed):
  Hopper:    cuBLAS bf16 matmul; cuBLAS fp8 (e4m3) with row-wise scales via torch._scaled_mm.
  Blackwell: torch._scaled_mm with NVFP4 operands and blocked scales (cuBLASLt).

usage: python benchmarks/compare_baselines.py [--shapes MxNxK ...] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

import nvfp4_gemm
from nvfp4_gemm import formats
from nvfp4_gemm.task_shapes import RANKED_SHAPES
from nvfp4_gemm.testing import check_against_reference, random_operands
from nvfp4_gemm.timing import geomean, time_cuda

# Measured on our H200 (2026-11-21, issue 4): device-to-device copy bandwidth and the bf16 matmul rate.
H200_COPY_TBPS = 4.24
H200_BF16_TFLOPS = 790.0


def gemm_bytes(m: int, n: int, k: int) -> int:
    return m * k // 2 + n * k // 2 + formats.blocked_scale_numel(m, k) + formats.blocked_scale_numel(n, k) + 2 * m * n


def rowwise_fp8(values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    scale = values.abs().amax(dim=1, keepdim=True).float().clamp(min=1e-12) / 448.0
    return (values.float() / scale).to(torch.float8_e4m3fn), scale


def run_shape(m: int, n: int, k: int, seed: int) -> dict:
    ops = random_operands(m, n, k, seed=seed, device="cuda")
    out = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out)
    verified, check = check_against_reference(out, ops, roundings=k // 16 + k // 128 + 2)

    resolution = nvfp4_gemm.resolve(m, n, k, 1, torch.float16, "cuda", explain=True)
    ours = time_cuda(lambda: nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out))
    row = {
        "shape": [m, n, k],
        "verified": verified,
        "check": check,
        "config": resolution.config.name,
        "split_k": resolution.split_k,
        "nvfp4_gemm_us": ours.median_us,
    }
    a_bf16 = formats.dequantize(ops.a, ops.a_scale, torch.bfloat16)
    b_bf16 = formats.dequantize(ops.b, ops.b_scale, torch.bfloat16)
    if torch.cuda.get_device_capability()[0] == 9:
        row["cublas_bf16_us"] = time_cuda(lambda: torch.matmul(a_bf16, b_bf16.t())).median_us
        a_fp8, a_rows = rowwise_fp8(a_bf16)
        b_fp8, b_rows = rowwise_fp8(b_bf16)
        b_cols = b_rows.t().contiguous()
        row["cublas_fp8_rowwise_us"] = time_cuda(
            lambda: torch._scaled_mm(a_fp8, b_fp8.t(), scale_a=a_rows, scale_b=b_cols, out_dtype=torch.bfloat16)
        ).median_us
    nbytes = gemm_bytes(m, n, k)
    row["tb_per_s"] = nbytes / (ours.median_us * 1e-6) / 1e12
    row["pct_memory_floor"] = 100.0 * (nbytes / (H200_COPY_TBPS * 1e12) * 1e6) / ours.median_us
    row["tflop_per_s"] = 2.0 * m * n * k / (ours.median_us * 1e-6) / 1e12
    row["pct_bf16_peak"] = 100.0 * row["tflop_per_s"] / H200_BF16_TFLOPS
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="*", help="MxNxK, default: the ranked shapes")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args(argv)
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes] if args.shapes else [s[:3] for s in RANKED_SHAPES]
    print(f"{torch.cuda.get_device_name()}  torch {torch.__version__}  nvfp4_gemm {nvfp4_gemm.__version__}")
    rows = [run_shape(m, n, k, seed=i) for i, (m, n, k) in enumerate(shapes)]
    columns = [c for c in ("nvfp4_gemm_us", "cublas_fp8_rowwise_us", "cublas_bf16_us") if c in rows[0]]
    header = f"{'shape':>18} {'ok':>3} " + " ".join(f"{c:>22}" for c in columns)
    header += f" {'TB/s':>6} {'%mem':>6} {'TFLOP/s':>8} {'%bf16':>6}  config"
    print(header)
    for r in rows:
        print(f"  {'x'.join(map(str, r['shape']))}: {r['check']}")
    for r in rows:
        line = f"{'x'.join(map(str, r['shape'])):>18} {'yes' if r['verified'] else 'NO':>3} "
        line += " ".join(f"{r[c]:>22.2f}" for c in columns)
        line += f" {r['tb_per_s']:>6.2f} {r['pct_memory_floor']:>6.1f} {r['tflop_per_s']:>8.1f} {r['pct_bf16_peak']:>6.1f}"
        line += f"  {r['config']} split_k={r['split_k']}"
        print(line)
    print(f"{'geomean':>18} {'':>3} " + " ".join(f"{geomean(r[c] for r in rows):>22.2f}" for c in columns))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)
    return 0 if all(r["verified"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
