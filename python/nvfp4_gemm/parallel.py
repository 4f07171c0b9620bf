"""Tensor parallelism for `NVFP4Linear` over `torch.distributed` (NCCL on GPUs, gloo on the CPU).

    nvfp4_gemm.quantize_model(model)          # or load_quantized(...); calibrate before sharding
    nvfp4_gemm.parallel.shard_model(model)    # this rank keeps its shards; run the model as usual

Column-parallel (`ColumnParallelNVFP4Linear`): the rank holds output rows [n0, n1) of W (packed
codes and their scales) and computes those output columns; x is whole on every rank. Each output
column is computed from the same codes, scales, alpha and activation quantization as without
sharding: on the CPU the outputs are the TP=1 outputs' columns bit for bit; on a GPU the narrower
shape may get another kernel config (another fp32 summation order), within the earned tolerance.

Row-parallel (`RowParallelNVFP4Linear`): the rank holds input columns [k0, k1) of W and takes the
matching slice of x (what a column-parallel layer before it produced). Each rank's partial GEMM is
rounded once to float32, the partials are summed by an all-reduce in float32, and the sum is
rounded once to x's dtype; the bias is added once, after that. Against the exact sum S of all
terms (T = the sum of their magnitudes): the W partials' roundings and the W - 1 additions of the
all-reduce each move the float32 value by at most 2^-24 of a quantity bounded by T, so the fp32
sum is within W * 2^-24 * T of S, and the output is one rounding of it (docs/formats.md,
Tolerance, with W roundings in place of the kernel's own). A dynamic input global scale is the
global 2688 / max|x| of the whole x (an all-reduce MAX of the slices' maxima), so the activation
codes and scales are the ones TP=1 computes: K is split on 32-element boundaries, which are
boundaries of the 16-element scale blocks.

Scales: each shard's scales are taken from the plain (rows, K/16) view and laid out in the blocked
layout on their own (zero padding), so shard boundaries need no alignment to the layout's 128-row
or 4-column tiles; the shards obey the kernels' shape rules (N a multiple of 8, K of 32).

Communication on another stream, overlapped with the layers: `nvfp4_gemm.set_quantize_sms` leaves SMs to
NCCL's kernels (the dynamic-scale quantize of a large x otherwise waits for a concurrent all-reduce).
"""

from __future__ import annotations

from typing import Mapping, Optional

import torch
import torch.distributed as dist
from torch import nn

from .formats import finite_amax, from_blocked, global_scale_from_amax, to_blocked
from .nn import NVFP4Linear, ineligibility

__all__ = [
    "ColumnParallelNVFP4Linear",
    "LLAMA_PLAN",
    "RowParallelNVFP4Linear",
    "shard_columns",
    "shard_model",
    "shard_rows",
]

# Llama-style blocks (transformers' Llama, Mistral, Qwen2, ...): the projections into attention
# heads and into the MLP's hidden split by output; the projections back split by input, so each
# block needs one all-reduce after attention and one after the MLP.
LLAMA_PLAN: Mapping[str, str] = {
    "q_proj": "column", "k_proj": "column", "v_proj": "column", "gate_proj": "column", "up_proj": "column",
    "o_proj": "row", "down_proj": "row",
}


def _shard_bounds(size: int, what: str, rank: int, world: int) -> tuple[int, int]:
    if size % world:
        raise ValueError(f"{what} = {size} does not split evenly over {world} ranks")
    step = size // world
    return rank * step, (rank + 1) * step


def _copy_layer_settings(source: NVFP4Linear, target: NVFP4Linear) -> None:
    target.weight_global_scale = source.weight_global_scale.clone()
    if source.input_global_scale is not None:
        target.input_global_scale = source.input_global_scale.clone()


class ColumnParallelNVFP4Linear(NVFP4Linear):
    """Output rows [n0, n1) of an NVFP4Linear of `full_out_features` outputs; computes as
    NVFP4Linear does (its output is that slice of the full output's columns)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, full_out_features: int,
                 rank: int, world_size: int, **kwargs) -> None:
        super().__init__(in_features, out_features, bias, **kwargs)
        self.full_out_features, self.rank, self.world_size = full_out_features, rank, world_size

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, rank {self.rank} of {self.world_size} (outputs of {self.full_out_features})"


class RowParallelNVFP4Linear(NVFP4Linear):
    """Input columns [k0, k1) of an NVFP4Linear of `full_in_features` inputs: x is this rank's slice
    of the full input; partial GEMM in float32, all-reduced over `group`, rounded once, bias once."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, full_in_features: int,
                 rank: int, world_size: int, group: Optional[dist.ProcessGroup] = None, **kwargs) -> None:
        super().__init__(in_features, out_features, bias, **kwargs)
        self.full_in_features, self.rank, self.world_size = full_in_features, rank, world_size
        self.group = group

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, rank {self.rank} of {self.world_size} (inputs of {self.full_in_features})"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.in_features:
            raise ValueError(
                f"x.shape[-1] must be this rank's in_features={self.in_features} (its slice of "
                f"{self.full_in_features}), got shape {tuple(x.shape)}"
            )
        if x.requires_grad and torch.is_grad_enabled():
            raise ValueError("x requires grad, but RowParallelNVFP4Linear is inference only (no backward)")
        if self._calibration_amax is not None:
            raise RuntimeError("calibrate the model before shard_model: a row shard sees a slice of each input")
        rows = x.reshape(-1, self.in_features).contiguous()
        if self.activations == "nvfp4":
            input_scale = self.input_global_scale
            if input_scale is None:  # dynamic: the scale of the whole x, as the unsharded layer takes it
                amax = finite_amax(rows)
                dist.all_reduce(amax, op=dist.ReduceOp.MAX, group=self.group)
                input_scale = global_scale_from_amax(amax)
            data, scale, _, alpha = torch.ops.nvfp4.quantize(rows, input_scale, self.weight_global_scale)
            partial = torch.ops.nvfp4.gemm(data, self.weight, scale, self.weight_scale, alpha, torch.float32)
        else:  # weight-only: x's slice as given, the partial in float32 (the unsharded layer's kernels)
            partial = self._forward_weight_only(rows, torch.float32)
        dist.all_reduce(partial, group=self.group)
        out = partial.to(x.dtype)  # the one rounding of the float32 sum
        if self.bias is not None:
            out = out + self.bias.to(out.dtype)
        return out.reshape(*x.shape[:-1], self.out_features)


def _group_rank_world(group: Optional[dist.ProcessGroup]) -> tuple[int, int]:
    if not dist.is_initialized():
        raise RuntimeError("torch.distributed is not initialized: call dist.init_process_group first")
    return dist.get_rank(group), dist.get_world_size(group)


def _check_nvfp4(layer: NVFP4Linear) -> None:
    """The shards quantize and scale as NVFP4 (global scales, e4m3 scales of 16): MX layers are not sharded yet."""
    if layer.format != "nvfp4" or layer.activations not in ("nvfp4", "bf16"):
        raise NotImplementedError(
            f"tensor parallel shards NVFP4 layers; this one has format={layer.format!r} weights and "
            f"activations={layer.activations!r} (MX layers are not sharded in this build)"
        )


def shard_rows(layer: NVFP4Linear, rank: int, world_size: int) -> ColumnParallelNVFP4Linear:
    """Column-parallel shard `rank` of `world_size` of `layer`: output rows [rank*N/W, (rank+1)*N/W)."""
    _check_nvfp4(layer)
    n, k = layer.out_features, layer.in_features
    n0, n1 = _shard_bounds(n, "out_features (N)", rank, world_size)
    dtype = layer.dtype
    reason = ineligibility(k, n1 - n0, dtype)
    if reason is not None:
        raise ValueError(f"a column shard of out_features {n} over {world_size} ranks ({n1 - n0} rows): {reason}")
    with torch.device("meta"):
        shard = ColumnParallelNVFP4Linear(
            k, n1 - n0, layer.bias is not None, full_out_features=n, rank=rank, world_size=world_size,
            activations=layer.activations, dtype=dtype,
        )
    shard.weight = layer.weight[n0:n1].clone()
    shard.weight_scale = to_blocked(from_blocked(layer.weight_scale, n, k)[n0:n1])
    _copy_layer_settings(layer, shard)
    if layer.bias is not None:
        shard.bias = nn.Parameter(layer.bias.detach()[n0:n1].clone(), requires_grad=False)
    return shard


def shard_columns(
    layer: NVFP4Linear, rank: int, world_size: int, group: Optional[dist.ProcessGroup] = None
) -> RowParallelNVFP4Linear:
    """Row-parallel shard `rank` of `world_size` of `layer`: input columns [rank*K/W, (rank+1)*K/W);
    the bias (added once, after the all-reduce) stays whole on every rank."""
    _check_nvfp4(layer)
    n, k = layer.out_features, layer.in_features
    k0, k1 = _shard_bounds(k, "in_features (K)", rank, world_size)
    dtype = layer.dtype
    # the partials are float32 (N % 4) and rounded to x's dtype after the sum; K's rule is K % 32
    reason = ineligibility(k1 - k0, n, dtype)
    if reason is not None:
        raise ValueError(f"a row shard of in_features {k} over {world_size} ranks ({k1 - k0} columns): {reason}")
    with torch.device("meta"):
        shard = RowParallelNVFP4Linear(
            k1 - k0, n, layer.bias is not None, full_in_features=k, rank=rank, world_size=world_size,
            group=group, activations=layer.activations, dtype=dtype,
        )
    shard.weight = layer.weight[:, k0 // 2 : k1 // 2].contiguous()
    plain = from_blocked(layer.weight_scale, n, k)
    shard.weight_scale = to_blocked(plain[:, k0 // 16 : k1 // 16].contiguous())
    _copy_layer_settings(layer, shard)
    if layer.bias is not None:
        shard.bias = nn.Parameter(layer.bias.detach().clone(), requires_grad=False)
    return shard


def shard_model(
    model: nn.Module,
    tp_group: Optional[dist.ProcessGroup] = None,
    *,
    plan: Mapping[str, str] = LLAMA_PLAN,
) -> list[str]:
    """Replace, in place, every NVFP4Linear whose name's last component `plan` names with this
    rank's column- ("column") or row-parallel ("row") shard over `tp_group` (default: the world).
    Returns the qualified names sharded. Everything else stays whole (replicated) on every rank.
    Calibrate static input scales before sharding; the attention modules must find their head
    count from the projections' outputs (transformers' Llama does: it reshapes with -1 heads)."""
    rank, world = _group_rank_world(tp_group)
    for kind in set(plan.values()):
        if kind not in ("column", "row"):
            raise ValueError(f"plan values must be 'column' or 'row', got {kind!r}")
    sharded = []
    for name, module in list(model.named_modules()):
        kind = plan.get(name.rpartition(".")[2])
        if kind is None or not isinstance(module, NVFP4Linear):
            continue
        if isinstance(module, (ColumnParallelNVFP4Linear, RowParallelNVFP4Linear)):
            raise ValueError(f"{name} is sharded already")
        shard = shard_rows(module, rank, world) if kind == "column" else shard_columns(module, rank, world, tp_group)
        parent, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent), child, shard)
        sharded.append(name)
    return sharded
