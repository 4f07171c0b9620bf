"""Accuracy of the Hopper kernels, measured (fresh random operands over all 16 FP4 codes and varied scales):

1. normalised error |out - exact| / sum_k |a_k b_k| (FP32 output, K = 28672, N = 1024, M = 16..512) of
   the resolver's choice, of the same config at split 1 (no split-K partials), and of FP32 SGEMM
   (torch.matmul in FP32 on the dequantized operands, TF32 off): max and mean over the elements;
2. GPU MODE's check (rtol = atol = 1e-3, fp16 output, against the float64 reference) on the three
   ranked shapes over 20 seeds: elements outside, next to cuBLAS bf16 on the same dequantized operands.

    python benchmarks/accuracy_hopper.py [--seeds 20]
"""

from __future__ import annotations

import argparse
import sys

import torch

import nvfp4_gemm
from nvfp4_gemm import formats
from nvfp4_gemm.task_shapes import RANKED_SHAPES
from nvfp4_gemm.testing import random_operands


def normalised_errors(k: int = 28672, n: int = 1024, ms=(16, 64, 128, 256, 512)) -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"normalised error |out - exact| / sum|a_k b_k|, FP32 out, N = {n}, K = {k} (max / mean over elements)")
    print(f"{'M':>5} {'config (resolver)':>40} {'split':>5} {'resolver':>20} {'split 1':>20} {'FP32 SGEMM':>20}")
    for m in ms:
        ops = random_operands(m, n, k, seed=1000 + m, device="cuda")
        exact = formats.reference_gemm_float64(ops.a, ops.b, ops.a_scale, ops.b_scale)
        magnitude = formats.reference_gemm_float64(ops.a, ops.b, ops.a_scale, ops.b_scale, magnitude=True)
        resolution = nvfp4_gemm.resolve(m, n, k, 1, torch.float32, "cuda", explain=True)

        def stats(out: torch.Tensor) -> str:
            error = (out.double() - exact).abs() / magnitude.clamp(min=1e-300)
            return f"{error.max().item():.2e} / {error.mean().item():.2e}"

        ours = nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out_dtype=torch.float32)
        single = nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out_dtype=torch.float32,
                                 config=resolution.config.name, split_k=1)
        a32 = formats.dequantize(ops.a, ops.a_scale, torch.float32)
        b32 = formats.dequantize(ops.b, ops.b_scale, torch.float32)
        sgemm = a32 @ b32.t()
        print(f"{m:5d} {resolution.config.name:>40} {resolution.split_k:5d} {stats(ours):>20} {stats(single):>20} "
              f"{stats(sgemm):>20}", flush=True)


def gpumode_check(seeds: int) -> None:
    print(f"\nGPU MODE check (rtol = atol = 1e-3, fp16 out vs float64 reference), elements outside over {seeds} seeds")
    for shape in RANKED_SHAPES:
        m, n, k = shape[:3]
        ours_bad = bf16_bad = total = 0
        for seed in range(seeds):
            ops = random_operands(m, n, k, seed=seed, device="cuda")
            exact = formats.reference_gemm_float64(ops.a, ops.b, ops.a_scale, ops.b_scale)
            ours = torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale).double()
            a16 = formats.dequantize(ops.a, ops.a_scale, torch.bfloat16)
            b16 = formats.dequantize(ops.b, ops.b_scale, torch.bfloat16)
            bf16 = torch.matmul(a16, b16.t()).double()
            bound = 1e-3 + 1e-3 * exact.abs()
            ours_bad += int(((ours - exact).abs() > bound).sum())
            bf16_bad += int(((bf16 - exact).abs() > bound).sum())
            total += exact.numel()
        print(f"{m}x{n}x{k}: nvfp4_gemm {ours_bad} of {total} ({ours_bad / total:.2e}); "
              f"cuBLAS bf16 {bf16_bad} ({bf16_bad / total:.2e})", flush=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args(argv)
    normalised_errors()
    gpumode_check(args.seeds)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
