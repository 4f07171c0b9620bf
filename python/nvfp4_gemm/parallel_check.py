"""Check tensor parallelism (nvfp4_gemm.parallel) against the unsharded model, on every rank.

    torchrun --nproc-per-node 2 -m nvfp4_gemm.parallel_check              # NCCL, one GPU per rank
    torchrun --nproc-per-node 2 -m nvfp4_gemm.parallel_check --device cpu  # gloo

Every rank builds the same small Llama-style model (2 blocks: q/k/v/o with grouped-query
attention, gate/up/down; hidden 256, intermediate 512, 4 heads of 64, 2 KV heads) from one seed,
quantizes it, runs it whole (TP=1), shards a copy (`shard_model`) and runs that, for activations
"nvfp4" with dynamic and with calibrated input scales, and "bf16" (weight-only; on the CPU and on
GPUs with weight-only kernels). Checks, per layer, on the inputs the unsharded model gave that layer:
  - column-parallel: the shard's output == that slice of the unsharded output, bit for bit on the
    CPU; on a GPU within the earned tolerance of the exact slice (the narrower shape may get
    another kernel config, i.e. another fp32 summation order);
  - row-parallel: |out - exact| within the earned tolerance (formats.md), with the partial GEMM's
    own float32 roundings (the kernel's chain over K/W; none on the CPU reference path) plus the W
    roundings of the float32 partials and their sum;
and the whole model's output next to the unsharded one (relative L2 error, reported; it is not
bounded per element: a one-ulp difference after a row-parallel layer can move a later layer's
FP4 code). Exits 1 if a check fails.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import sys
from typing import Optional

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from . import formats
from .nn import NVFP4Linear, calibrate, quantize_model
from .parallel import ColumnParallelNVFP4Linear, RowParallelNVFP4Linear, shard_model
from .resolver import candidates
from .testing import earned_tolerance

HIDDEN, INTERMEDIATE, HEADS, KV_HEADS, HEAD_DIM, BLOCKS = 256, 512, 4, 2, 64, 2
END_TO_END_RELATIVE_L2 = 0.05  # whole model, TP=W against TP=1: catches a wrong shard, not ulps


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q_proj = nn.Linear(HIDDEN, HEADS * HEAD_DIM, bias=False)
        self.k_proj = nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.v_proj = nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.o_proj = nn.Linear(HEADS * HEAD_DIM, HIDDEN, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, _ = x.shape
        # heads from the projections' widths (-1): a column shard holds whole heads
        q = self.q_proj(x).view(batch, tokens, -1, HEAD_DIM).transpose(1, 2)
        k = self.k_proj(x).view(batch, tokens, -1, HEAD_DIM).transpose(1, 2)
        v = self.v_proj(x).view(batch, tokens, -1, HEAD_DIM).transpose(1, 2)
        groups = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        out = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True).to(x.dtype)
        return self.o_proj(out.transpose(1, 2).reshape(batch, tokens, -1))


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(HIDDEN, INTERMEDIATE, bias=False)
        self.up_proj = nn.Linear(HIDDEN, INTERMEDIATE, bias=False)
        self.down_proj = nn.Linear(INTERMEDIATE, HIDDEN, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.input_layernorm = nn.RMSNorm(HIDDEN)
        self.self_attn = Attention()
        self.post_attention_layernorm = nn.RMSNorm(HIDDEN)
        self.mlp = MLP()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


def tiny_llama(activations: str, device: torch.device, seed: int = 0) -> nn.Module:
    """The same quantized model on every rank (the seed fixes it), varied weight magnitudes."""
    torch.manual_seed(seed)
    model = nn.Sequential(*(Block() for _ in range(BLOCKS)))
    with torch.no_grad():
        for index, linear in enumerate(m for m in model.modules() if isinstance(m, nn.Linear)):
            linear.weight.normal_(0.0, 0.05 * (1 + index % 5))
            if linear.bias is not None:
                linear.bias.normal_(0.0, 0.5)
    model = model.to(device=device, dtype=torch.bfloat16)
    quantize_model(model, activations=activations)
    return model


def sample_input(device: torch.device, seed: int, batch: int = 2, tokens: int = 24) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, tokens, HIDDEN, generator=gen)
    x[..., 7] *= 25.0  # an outlier channel
    return x.to(device=device, dtype=torch.bfloat16)


def _record_inputs(model: nn.Module) -> tuple[dict[str, torch.Tensor], list]:
    inputs: dict[str, torch.Tensor] = {}
    hooks = []
    for name, module in model.named_modules():
        if isinstance(module, NVFP4Linear):
            hooks.append(module.register_forward_pre_hook(lambda m, args, name=name: inputs.__setitem__(name, args[0])))
    return inputs, hooks


def _exact(full: NVFP4Linear, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The unsharded layer's exact GEMM on x (float64, before the bias) and the magnitude sum T of its terms."""
    rows = x.reshape(-1, full.in_features).cpu()
    weight, weight_scale, weight_gs = full.weight.cpu(), full.weight_scale.cpu(), full.weight_global_scale.cpu()
    if full.activations == "nvfp4":
        gs = None if full.input_global_scale is None else full.input_global_scale.cpu()
        a, a_scale, _, alpha = formats.quantize_reference(rows, gs, weight_gs)
    else:
        a, a_scale, alpha = rows, None, formats.gemm_alpha(weight_gs)
    exact = formats.reference_gemm_float64(a, weight, a_scale, weight_scale, alpha)
    magnitude = formats.reference_gemm_float64(a, weight, a_scale, weight_scale, alpha, magnitude=True)
    return exact, magnitude


def check(activations: str, static: bool, device: torch.device, group: Optional[dist.ProcessGroup] = None) -> list[str]:
    """Run one configuration on this rank; return the failures (empty: passed)."""
    rank, world = dist.get_rank(group), dist.get_world_size(group)
    failures: list[str] = []
    model = tiny_llama(activations, device)
    x = sample_input(device, seed=1)
    if static:
        with calibrate(model):
            model(sample_input(device, seed=2))
    inputs, hooks = _record_inputs(model)
    with torch.no_grad():
        want = model(x)
        full_outputs = {name: model.get_submodule(name)(inputs[name]) for name in inputs}
    for hook in hooks:
        hook.remove()
    sharded = copy.deepcopy(model)
    names = shard_model(sharded, group)
    if len(names) != 7 * BLOCKS:
        failures.append(f"shard_model sharded {len(names)} layers, expected {7 * BLOCKS}")
    mode = ("static" if static else "dynamic") + " input scale" if activations == "nvfp4" else "weight-only"
    label = f"rank {rank}/{world} activations={activations} ({mode})"
    with torch.no_grad():
        for name in names:
            shard = sharded.get_submodule(name)
            full = model.get_submodule(name)
            exact, magnitude = _exact(full, inputs[name])
            if isinstance(shard, ColumnParallelNVFP4Linear):
                step = full.out_features // world
                columns = slice(rank * step, (rank + 1) * step)
                got = shard(inputs[name])
                exact, magnitude = exact[:, columns], magnitude[:, columns]
                bias = None if full.bias is None else full.bias[columns]
                if device.type == "cpu" and not torch.equal(got, full_outputs[name][..., columns]):
                    failures.append(f"{label}: column-parallel {name} differs from the unsharded columns")
                # on a GPU the resolver may pick another config (split-K) for the narrower shard:
                # the same sum in another fp32 order, held to the earned tolerance of the kernel's chain
                chain = 0 if device.type == "cpu" else full.in_features // 16 + full.in_features // 128 + 2
            else:
                assert isinstance(shard, RowParallelNVFP4Linear)
                step = full.in_features // world
                got = shard(inputs[name][..., rank * step : (rank + 1) * step].contiguous())
                bias = full.bias
                # the partial GEMM's chain (as the GPU tests count it; the CPU reference path has
                # none) plus the float32 partials and their all-reduce sum: W roundings of <= 2^-24 T
                chain = 0 if device.type == "cpu" else step // 16 + step // 128 + 2
                chain += world / 2
            tolerance = earned_tolerance(exact, magnitude, x.dtype, roundings=chain)
            value = got.reshape(exact.shape).double().cpu()
            if bias is not None:
                # the bias is added once, to the rounded sum, in x's dtype: one more rounding
                exact = exact + bias.double().cpu()
                tolerance = tolerance + formats.ulp(exact.abs() + tolerance, x.dtype) / 2
            error = (value - exact).abs()
            if not bool((error <= tolerance).all()):
                kind = "column" if isinstance(shard, ColumnParallelNVFP4Linear) else "row"
                failures.append(
                    f"{label}: {kind}-parallel {name}: max |err| / tolerance = {float((error / tolerance).max()):.3f}"
                )
        got = sharded(x)
    relative = float((got.double() - want.double()).norm() / want.double().norm())
    if not math.isfinite(relative) or relative > END_TO_END_RELATIVE_L2:
        failures.append(f"{label}: whole model relative L2 error {relative:.2e} > {END_TO_END_RELATIVE_L2}")
    if rank == 0:
        print(f"{label}: {len(names)} layers sharded, whole model relative L2 error vs TP=1 {relative:.2e}", flush=True)
    return failures


def configurations(device: torch.device) -> list[tuple[str, bool]]:
    configs = [("nvfp4", False), ("nvfp4", True)]
    # weight-only on the CPU reference and on GPUs whose family has weight-only kernels (Hopper; Blackwell's
    # are proved on the host only)
    if device.type == "cpu" or candidates(torch.cuda.get_device_capability(device)[0], "bf16xnvfp4"):
        configs.append(("bf16", False))
    return configs


def run(device_kind: str) -> int:
    """The check on this rank of an initialized process group; returns the number of failures on any rank."""
    rank = dist.get_rank()
    if device_kind == "cuda":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    failures = []
    with torch.no_grad():  # inference only: the norms' parameters would otherwise ask for grad
        for activations, static in configurations(device):
            failures += check(activations, static, device)
    for failure in failures:
        print(f"FAIL {failure}", flush=True)
    count = torch.tensor([len(failures)], device=device)
    dist.all_reduce(count)
    return int(count.item())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    args = parser.parse_args()
    dist.init_process_group("nccl" if args.device == "cuda" else "gloo")
    try:
        failures = run(args.device)
        if dist.get_rank() == 0:
            print("all checks passed" if failures == 0 else f"{failures} checks failed", flush=True)
    finally:
        dist.destroy_process_group()
    return 1 if failures else 0

if __name__ == "__main__":
    sys.exit(main())
