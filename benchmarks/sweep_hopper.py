"""Hopper sweep: the ranked shapes and LLM layer shapes at decode-to-prefill batch sizes, every sm90
candidate (config, split_k) verified against the exact reference and timed, next to cuBLAS fp8
row-wise and bf16 on pre-dequantized weights measured in the same run (CUDA events, L2 flushed,
warm-up, median; the token prepass of the v6 configs is inside every time).

    python benchmarks/sweep_hopper.py [--json FILE] [--m 1,16,64,128,512,2048] [--quick]

Prints, per shape, the resolver's choice, the best candidate and the baselines, then geomeans per
M group with the ratios the Hopper v6 issue asks for.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from nvfp4_gemm import gemm, resolve
from nvfp4_gemm.bench import baselines
from nvfp4_gemm.formats import reference_gemm_float64
from nvfp4_gemm.resolver import candidates
from nvfp4_gemm.task_shapes import RANKED_SHAPES
from nvfp4_gemm.testing import earned_tolerance, random_operands
from nvfp4_gemm.timing import geomean, time_cuda
from nvfp4_gemm.tune import environment

# (N, K) of real layers: DeepSeek-V3-sized square, Llama-3-70B MLP up/down, Llama-3-8B MLP up,
# DeepSeek-V3 attention projection.
MODEL_LAYERS = ((7168, 7168), (28672, 8192), (8192, 28672), (14336, 4096), (2112, 7168))
M_GROUPS = {"decode (M <= 16)": (1, 16), "batch (M 64-128)": (64, 128), "prefill (M 512-2048)": (512, 2048)}


def _candidates(m: int, n: int, k: int) -> list[tuple[str, int]]:
    pairs = []
    for config in candidates(9):
        if config.mma == "direct" and m > config.tile[0]:
            continue
        if config.mma == "wgmma" and config.tile[0] > 2 * max(m, 64):
            continue
        tiles = -(-n // config.tile[1]) * -(-m // config.tile[0])
        for split in config.split_options(k):
            if split > 1 and tiles * split > 3 * 132:
                continue
            pairs.append((config.name, split))
    return pairs


def run_shape(m: int, n: int, k: int, iters: int) -> dict:
    ops = random_operands(m, n, k, seed=m * 7 + n + k, device="cuda")
    exact = reference_gemm_float64(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha)
    magnitude = reference_gemm_float64(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, magnitude=True)
    tolerance = earned_tolerance(exact, magnitude, torch.float16, k // 16 + k // 128 + 2)
    out = torch.empty((m, n), dtype=torch.float16, device="cuda")

    def verified(**pin) -> bool:
        out.fill_(float("nan"))
        gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out, **pin)
        return bool(((out.double() - exact).abs() <= tolerance).all())

    row = {"shape": [m, n, k], "candidates": {}, "failed": []}
    resolution = resolve(m, n, k, 1, torch.float16, "cuda", explain=True)
    row["resolver"] = {"config": resolution.config.name, "split_k": resolution.split_k}
    if not verified():
        row["failed"].append("resolver")
    row["resolver"]["us"] = time_cuda(lambda: gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out), iters=iters).median_us
    for name, split in _candidates(m, n, k):
        if not verified(config=name, split_k=split):
            row["failed"].append(f"{name}:{split}")
            continue
        us = time_cuda(lambda: gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out, config=name, split_k=split),
                       iters=iters).median_us
        row["candidates"][f"{name}:{split}"] = us
    row["baselines"] = {name: time_cuda(fn, iters=iters).median_us for name, fn in baselines(ops).items()}
    del ops, exact, magnitude, tolerance
    torch.cuda.empty_cache()
    return row


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write every timing here")
    parser.add_argument("--m", default="1,16,64,128,512,2048", help="token counts for the model layers")
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--ranked-only", action="store_true")
    args = parser.parse_args(argv)
    shapes = [tuple(s[:3]) for s in RANKED_SHAPES]
    if not args.ranked_only:
        shapes += [(m, n, k) for m in (int(x) for x in args.m.split(",")) for n, k in MODEL_LAYERS]
    rows = []
    for m, n, k in shapes:
        row = run_shape(m, n, k, args.iters)
        rows.append(row)
        best = min(row["candidates"].items(), key=lambda kv: kv[1]) if row["candidates"] else ("-", float("nan"))
        base = row["baselines"]
        print(
            f"{m:5d}x{n:5d}x{k:5d}  resolver {row['resolver']['config']}:{row['resolver']['split_k']} "
            f"{row['resolver']['us']:8.2f} us | best {best[0]} {best[1]:8.2f} us | fp8 {base['cublas_fp8_rowwise']:8.2f} "
            f"bf16 {base['cublas_bf16']:8.2f} | x fp8 {base['cublas_fp8_rowwise'] / row['resolver']['us']:.2f} "
            f"x bf16 {base['cublas_bf16'] / row['resolver']['us']:.2f}" + (f" FAILED {row['failed']}" if row["failed"] else ""),
            flush=True,
        )
    ranked = rows[: len(RANKED_SHAPES)]
    print("\nsummary (resolver's choice; geomean of per-shape times and of per-shape speedups)")
    groups = {"ranked (M = 128)": ranked}
    for label, ms in M_GROUPS.items():
        groups[label] = [r for r in rows[len(RANKED_SHAPES):] if r["shape"][0] in ms]
    for label, group in groups.items():
        if not group:
            continue
        ours = geomean(r["resolver"]["us"] for r in group)
        best = geomean(min(r["candidates"].values()) for r in group if r["candidates"])
        fp8 = geomean(r["baselines"]["cublas_fp8_rowwise"] / r["resolver"]["us"] for r in group)
        bf16 = geomean(r["baselines"]["cublas_bf16"] / r["resolver"]["us"] for r in group)
        worst = min(r["baselines"]["cublas_fp8_rowwise"] / r["resolver"]["us"] for r in group)
        print(f"  {label:22s} ours {ours:8.2f} us (best candidates {best:8.2f}) | x fp8 {fp8:.2f} (worst {worst:.2f}) "
              f"| x bf16 {bf16:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": environment(), "rows": rows}, f, indent=1)
    return 1 if any(r["failed"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
