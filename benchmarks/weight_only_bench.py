"""Weight-only NVFP4 (W4A16) on Hopper, issue 14's speed bars: NVFP4Linear(activations="bf16") against the
bf16 nn.Linear a user would otherwise keep (cuBLAS bf16), with cuBLAS fp8 row-wise (activations quantized
ahead of time, so its time is the GEMM alone) and the W4A4 layer (quantize + NVFP4 GEMM) beside them, on
the Hopper v6 issue's model layers at decode-to-prefill batch sizes. Every W4A16 candidate (config,
split_k) of the shape is verified against the exact reference and timed; the resolver's choice is marked.
CUDA events, L2 flushed (`NVFP4_GEMM_L2_FLUSH`: dirty by default, or clean; nvfp4_gemm.timing), warm-up, median,
every baseline in the same run.

    python benchmarks/weight_only_bench.py [--m 1,2,4,8,16,64,128,512,2048] [--dtype bfloat16] [--json FILE]
        [--weights nvfp4|mxfp4]

`--weights mxfp4`: MXFP4 weights (ue8m0 per 32) with bf16 activations, `bf16xmxfp4`; no W4A4 column (MX
quantize has no CUDA kernel). `--json`'s rows carry every candidate's time, as `sweep_hopper.py`'s do:
`benchmarks/fit_sm90_model.py` fits the sm90 model to either.

Bars (issue 14, H200): W4A16 layer / bf16 at M = 1..16 >= 2.5x (geomean), at M = 64..128 >= 1.5x.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys

import torch

import nvfp4_gemm
from nvfp4_gemm import gemm, resolve
from nvfp4_gemm.bench import _rowwise_fp8
from nvfp4_gemm.nn import NVFP4Linear
from nvfp4_gemm.resolver import candidates
from nvfp4_gemm.formats import reference_gemm_float64
from nvfp4_gemm.testing import earned_tolerance, fp32_roundings
from nvfp4_gemm.timing import geomean, l2_flush_kind, time_cuda
from nvfp4_gemm.tune import environment
from sweep_hopper import MODEL_LAYERS  # the Hopper v6 issue's model layers (N, K): this script's folder

M_GROUPS = {"decode (M 1-16)": (1, 16, 2.5), "batch (M 64-128)": (64, 128, 1.5), "prefill (M 512-2048)": (512, 2048, None)}


def run_shape(m: int, n: int, k: int, dtype: torch.dtype, iters: int, weights: str = "nvfp4") -> dict:
    torch.manual_seed(m + n + k)
    linear = torch.nn.Linear(k, n, bias=False, dtype=dtype, device="cuda")
    # MX quantize runs on the CPU only in this build: MXFP4 layers are made there and moved
    source = linear if weights == "nvfp4" else copy.deepcopy(linear).cpu()  # Module.cpu() moves in place
    w4a16 = NVFP4Linear.from_linear(source, activations="bf16", format=weights).to("cuda")
    w4a4 = NVFP4Linear.from_linear(linear, activations="nvfp4") if weights == "nvfp4" else None
    x = torch.randn(m, k, dtype=dtype, device="cuda")
    fmt = f"{'bf16' if dtype == torch.bfloat16 else 'fp16'}x{weights}"
    alpha = nvfp4_gemm.formats.gemm_alpha(w4a16.weight_global_scale)
    b, b_scale = w4a16.weight, w4a16.weight_scale
    exact = reference_gemm_float64(x, b, None, b_scale, alpha)  # on the GPU: float64, one rounding below
    magnitude = reference_gemm_float64(x, b, None, b_scale, alpha, magnitude=True)
    tolerance = earned_tolerance(exact, magnitude, dtype, fp32_roundings(k))
    del magnitude
    out = torch.empty(m, n, dtype=dtype, device="cuda")
    # the weights the bf16 layer keeps: the dequantized FP4 ones (the same values, 16-bit)
    weight16 = nvfp4_gemm.formats.dequantize(w4a16.weight, w4a16.weight_scale, torch.float32)
    weight16 = (weight16 * alpha.float()).to(dtype)
    x_fp8, x_rows = _rowwise_fp8(x)
    w_fp8, w_rows = _rowwise_fp8(weight16)
    w_cols = w_rows.t().contiguous()

    row = {"m": m, "n": n, "k": k, "dtype": str(dtype).replace("torch.", ""), "format": fmt}
    with torch.no_grad():
        chosen = resolve(m, n, k, 1, dtype, "cuda", explain=True, format=fmt)
        row["resolver"] = f"{chosen.config.name} split {chosen.split_k}"
        timed = {}
        # the tuner's splits of every config, and the resolver's own pick where it lies outside them (the
        # direct kernel's split fills the CTA slots: any count)
        picked = (chosen.config.name, chosen.split_k)
        for config in candidates(9, fmt):
            if config.supports(m, n, k, 1, row["dtype"]) is not None:
                continue
            tiles = -(-n // config.tile[1]) * -(-m // config.tile[0])
            splits = set(config.split_options(k)) | ({chosen.split_k} if config.name == picked[0] else set())
            for split in sorted(splits):
                if split > 1 and tiles * split > 3 * 132 and (config.name, split) != picked:
                    continue
                out.fill_(float("nan"))
                gemm(x, b, None, b_scale, alpha, out=out, config=config.name, split_k=split)
                worst = float(((out.double() - exact).abs() / tolerance).max())
                if not worst <= 1.0:  # NaN fails too
                    raise AssertionError(f"{config.name} split {split} at {(m, n, k)}: |err| / tolerance = {worst}")
                timed[(config.name, split)] = time_cuda(
                    lambda c=config.name, s=split: gemm(x, b, None, b_scale, alpha, out=out, config=c, split_k=s),
                    iters=iters,
                ).median_us
        best = min(timed, key=timed.get)
        # every candidate, keyed as in benchmarks/sweep_hopper.py (benchmarks/fit_sm90_model.py reads both)
        row["shape"] = [m, n, k]
        row["candidates"] = {f"{name}:{split}": us for (name, split), us in timed.items()}
        row["best"] = f"{best[0]} split {best[1]}"
        row["best_us"] = timed[best]
        row["resolver_us"] = timed.get((chosen.config.name, chosen.split_k))
        row["w4a16_gemm_us"] = time_cuda(lambda: gemm(x, b, None, b_scale, alpha, out=out), iters=iters).median_us
        row["w4a16_layer_us"] = time_cuda(lambda: w4a16(x), iters=iters).median_us
        row["cublas_bf16_us"] = time_cuda(lambda: linear(x), iters=iters).median_us
        row["cublas_fp8_rowwise_us"] = time_cuda(
            lambda: torch._scaled_mm(x_fp8, w_fp8.t(), scale_a=x_rows, scale_b=w_cols, out_dtype=dtype), iters=iters
        ).median_us
        if w4a4 is None:
            row.update(w4a4_layer_us=None, w4a4_quantize_us=None, w4a4_gemm_us=None)
            return row
        row["w4a4_layer_us"] = time_cuda(lambda: w4a4(x), iters=iters).median_us
        # the W4A4 layer's two parts: dynamic quantize of x, and the NVFP4 x NVFP4 GEMM
        row["w4a4_quantize_us"] = time_cuda(lambda: torch.ops.nvfp4.quantize(x, None, w4a4.weight_global_scale),
                                            iters=iters).median_us
        q, q_scale, _, q_alpha = torch.ops.nvfp4.quantize(x, None, w4a4.weight_global_scale)
        row["w4a4_gemm_us"] = time_cuda(lambda: torch.ops.nvfp4.gemm(q, w4a4.weight, q_scale, w4a4.weight_scale, q_alpha, dtype),
                                        iters=iters).median_us
    return row


def _us(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def _ratio(baseline: float, value) -> str:
    return "-" if value is None else f"{baseline / value:.2f}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--m", default="1,2,4,8,16,64,128,512,2048")
    parser.add_argument("--dtype", choices=("bfloat16", "float16"), default="bfloat16")
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--weights", choices=("nvfp4", "mxfp4"), default="nvfp4")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    dtype = getattr(torch, args.dtype)
    if args.weights == "mxfp4" and dtype != torch.bfloat16:
        parser.error("--weights mxfp4 runs with bf16 activations (fp16 cannot hold MXFP4 weights' range)")
    rows = []
    print(f"L2 flush before each timed call: {l2_flush_kind()} (NVFP4_GEMM_L2_FLUSH)")
    print(f"{'M':>5} {'N':>6} {'K':>6} | {'bf16':>7} {'fp8':>7} {'W4A16':>7} {'W4A4':>7} us | "
          f"{'x bf16':>6} {'W4A4 x':>6} | resolver (us) / best", flush=True)
    for m in (int(v) for v in args.m.split(",")):
        for n, k in MODEL_LAYERS:
            r = run_shape(m, n, k, dtype, args.iters, args.weights)
            rows.append(r)
            w4a4 = r["w4a4_layer_us"]
            print(f"{m:>5} {n:>6} {k:>6} | {r['cublas_bf16_us']:7.1f} {r['cublas_fp8_rowwise_us']:7.1f} "
                  f"{r['w4a16_layer_us']:7.1f} {_us(w4a4):>7}    | {r['cublas_bf16_us'] / r['w4a16_layer_us']:6.2f} "
                  f"{_ratio(r['cublas_bf16_us'], w4a4):>6} | {r['resolver']} ({r['resolver_us'] or float('nan'):.1f}) / "
                  f"{r['best']} ({r['best_us']:.1f})" + ("" if w4a4 is None else
                  f" | W4A4 = quantize {r['w4a4_quantize_us']:.1f} + gemm {r['w4a4_gemm_us']:.1f}"), flush=True)
    print("\ngeomean ratios to cuBLAS bf16 (layer vs nn.Linear), same run:")
    summary = {}
    for label, (lo, hi, bar) in M_GROUPS.items():
        group = [r for r in rows if lo <= r["m"] <= hi]
        if not group:
            continue
        w4a16 = geomean(r["cublas_bf16_us"] / r["w4a16_layer_us"] for r in group)
        w4a4 = None if group[0]["w4a4_layer_us"] is None else geomean(r["cublas_bf16_us"] / r["w4a4_layer_us"] for r in group)
        fp8 = geomean(r["cublas_bf16_us"] / r["cublas_fp8_rowwise_us"] for r in group)
        gemm_only = geomean(r["cublas_bf16_us"] / r["w4a16_gemm_us"] for r in group)
        summary[label] = {"w4a16_layer": w4a16, "w4a16_gemm": gemm_only, "w4a4_layer": w4a4, "fp8_gemm": fp8, "bar": bar}
        verdict = "" if bar is None else f" (bar >= {bar}: {'MET' if w4a16 >= bar else 'MISSED'})"
        print(f"  {label}: W4A16 layer {w4a16:.2f}x{verdict}, W4A16 gemm {gemm_only:.2f}x, "
              f"W4A4 layer {'-' if w4a4 is None else f'{w4a4:.2f}x'}, fp8 gemm {fp8:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": environment(), "rows": rows, "summary": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
