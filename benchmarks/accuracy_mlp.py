"""Accuracy of NVFP4 on a Llama-3-8B-sized MLP block, next to bf16 and fp8 row-wise (docs/accuracy.md).

    python benchmarks/accuracy_mlp.py [--tokens 64] [--device cpu|cuda] [--seed 0]

Block: y = down(silu(gate(x)) * up(x)), hidden 4096, intermediate 14336, no bias, bf16 weights drawn
from N(0, 0.02^2); x: N(0, 1) bf16 tokens with a few outlier channels (x50 by default). Every variant keeps the
bf16 model's dataflow: each linear's output is bf16, silu(gate) * up is computed in fp32 and rounded to
bf16. The reference is the same block in float64 on the same bf16 weights and tokens.

Variants: bf16 (torch matmuls); fp8 row-wise (per-token and per-output-channel e4m3 scales amax/448,
exact products, one rounding: on CUDA `torch._scaled_mm`, on the CPU emulated exactly in float64);
W4A16 (NVFP4 weights, bf16 tokens; the CPU reference path: its CUDA kernel is not in this build);
W4A4 with the dynamic input scale; W4A4 with static input scales calibrated on other tokens.
Printed: relative Frobenius error of each linear's output and of the block output, against the float64
reference and against the bf16 model.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import subprocess

import torch
from torch import nn

import nvfp4_gemm
from fp8_rowwise import swap_fp8

HIDDEN, INTERMEDIATE = 4096, 14336
OUTLIER_CHANNELS = (7, 1000, 2047, 3001)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(HIDDEN, INTERMEDIATE, bias=False)
        self.up = nn.Linear(HIDDEN, INTERMEDIATE, bias=False)
        self.down = nn.Linear(INTERMEDIATE, HIDDEN, bias=False)

    def forward(self, x, trace=None):
        gate, up = self.gate(x), self.up(x)
        hidden = (nn.functional.silu(gate.float()) * up.float()).to(x.dtype)
        out = self.down(hidden)
        if trace is not None:
            trace.update(gate=gate, up=up, down=out)
        return out


def tokens(count: int, seed: int, device, outlier_factor: float) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(count, HIDDEN, generator=gen)
    x[:, list(OUTLIER_CHANNELS)] *= outlier_factor
    return x.to(torch.bfloat16).to(device)


def reference_trace(model: MLP, x: torch.Tensor) -> dict:
    """The block in float64 on the bf16 weights (no intermediate rounding)."""
    w = {name: getattr(model, name).weight.detach().to("cpu", torch.float64) for name in ("gate", "up", "down")}
    x64 = x.to("cpu", torch.float64)
    gate, up = x64 @ w["gate"].T, x64 @ w["up"].T
    down = (nn.functional.silu(gate) * up) @ w["down"].T
    return {"gate": gate, "up": up, "down": down}


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    got, want = got.detach().to("cpu", torch.float64), want.detach().to("cpu", torch.float64)
    return float((got - want).norm() / want.norm())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--outlier-factor", type=float, default=50.0, help="scale of the outlier channels")
    args = parser.parse_args()
    device = torch.device(args.device)

    torch.manual_seed(args.seed)
    base = MLP()
    with torch.no_grad():
        for layer in (base.gate, base.up, base.down):
            layer.weight.normal_(0.0, 0.02)
    base = base.to(torch.bfloat16).to(device)
    x = tokens(args.tokens, args.seed + 1, device, args.outlier_factor)
    calibration = tokens(args.tokens, args.seed + 2, device, args.outlier_factor)
    exact = reference_trace(base, x)

    # label -> (build the model from a copy of the bf16 block, where it runs)
    cpu = torch.device("cpu")

    def nvfp4(activations):
        def make():
            model = copy.deepcopy(base)
            if activations == "bf16":
                model = model.cpu()  # no CUDA weight-only kernel in this build: the CPU reference path
            nvfp4_gemm.quantize_model(model, activations=activations)
            return model
        return make

    def static_w4a4():
        model = nvfp4("nvfp4")()
        with torch.no_grad(), nvfp4_gemm.nn.calibrate(model):
            model(calibration)
        return model

    variants = {
        "bf16": (lambda: base, device),
        "fp8 row-wise": (lambda: swap_fp8(copy.deepcopy(base)), device),
        "W4A16 (NVFP4 weights, bf16 tokens)": (nvfp4("bf16"), cpu),
        "W4A4, dynamic input scale": (nvfp4("nvfp4"), device),
        "W4A4, static input scale (calibrated on other tokens)": (static_w4a4, device),
    }
    traces = {}
    for label, (make, run_on) in variants.items():
        model = make()
        trace = {}
        with torch.no_grad():
            model(x.to(run_on), trace)
        traces[label] = trace
        del model

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"# MLP {HIDDEN} -> {INTERMEDIATE} -> {HIDDEN}, {args.tokens} tokens, outlier channels "
          f"{OUTLIER_CHANNELS} x{args.outlier_factor:g}, seed {args.seed}; {where}, torch {torch.__version__}, "
          f"commit {commit or '?'}, {datetime.date.today()}")
    print("| variant | gate vs exact | up vs exact | block output vs exact | block output vs bf16 |")
    print("| --- | --- | --- | --- | --- |")
    for label, trace in traces.items():
        print(f"| {label} | {relative_error(trace['gate'], exact['gate']):.4f} | "
              f"{relative_error(trace['up'], exact['up']):.4f} | {relative_error(trace['down'], exact['down']):.4f} | "
              f"{relative_error(trace['down'], traces['bf16']['down']):.4f} |")


if __name__ == "__main__":
    main()
