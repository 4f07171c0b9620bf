"""The fp8 baseline of the model benchmarks: nn.Linear layers as fp8 e4m3 with one scale per token row
and one per weight row (amax / 448), products exact, one rounding to bf16 (cuBLAS through
torch._scaled_mm on CUDA; the same arithmetic in float64 on the CPU). Weights quantized once, tokens
on every call (dynamic, per token), as serving stacks run fp8 row-wise models."""

from __future__ import annotations

import torch
from torch import nn

import nvfp4_gemm


def _quantize_rows(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    scale = (t.float().abs().amax(dim=-1, keepdim=True) / 448.0).clamp(min=1e-12)
    return (t.float() / scale).to(torch.float8_e4m3fn), scale


class Fp8RowwiseLinear(nn.Module):
    def __init__(self, linear: nn.Linear):
        super().__init__()
        weight, weight_scale = _quantize_rows(linear.weight.detach())
        self.register_buffer("weight", weight)
        self.register_buffer("weight_scale", weight_scale)
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().to(torch.bfloat16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])
        xq, x_scale = _quantize_rows(rows)
        if x.is_cuda:
            out = torch._scaled_mm(xq, self.weight.T, scale_a=x_scale, scale_b=self.weight_scale.T,
                                   bias=self.bias, out_dtype=torch.bfloat16)
        else:
            exact = (xq.double() * x_scale.double()) @ (self.weight.double() * self.weight_scale.double()).T
            if self.bias is not None:
                exact = exact + self.bias.double()
            out = nvfp4_gemm.round_once(exact, torch.bfloat16)
        return out.reshape(*x.shape[:-1], out.shape[-1])


def swap_fp8(model: nn.Module, exclude: tuple[str, ...] = ("lm_head",)) -> nn.Module:
    """Every nn.Linear of `model` (but the excluded names) as Fp8RowwiseLinear, in place."""
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            full = f"{name}.{child_name}" if name else child_name
            if isinstance(child, nn.Linear) and not any(full == e or full.endswith("." + e) for e in exclude):
                setattr(module, child_name, Fp8RowwiseLinear(child))
    return model
