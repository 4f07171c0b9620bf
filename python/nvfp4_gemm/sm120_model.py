"""Analytic time model of the sm120 family (GeForce RTX 50, RTX PRO 6000 Blackwell: compute capability
12.0; DGX Spark GB10: 12.1), for the resolver without measurements.

The sm100 model's shape (sm100_model.py) with this family's facts: one CTA per SM (a kernel takes
most of the 99 KB of shared memory), no clusters and no 2-SM tiles, the row's own K tile (128 or
256), and the pipeline depth CUTLASS's carve-out leaves in 99 KB (sm120_rules.pipeline_stages, which
the host proofs check against every compiled kernel). A CTA retires at most `stages` K tiles per
memory latency (Little's law) and no faster than its SM's FP4 tensor rate; the GPU moves unique
bytes no faster than DRAM:

  time = launch (+ workspace clear for stream-K) + fill
         + max(per-SM K-tile chain, unique DRAM bytes / DRAM bandwidth)
         + reduction of partials + epilogue (per wave for cooperative rows; once for ping-pong,
           whose second warpgroup's mainloop hides the first's epilogue)

A config whose pipeline would not fit in the machine's shared memory (fewer than 2 stages) is
predicted infinitely slow, so it is never chosen.

The machine constants are SECONDARY-SOURCE numbers (docs/sm120_integration.md cites them: spec
tables of reviews and datasheet coverage, not NVIDIA's own whitepaper), and the latencies are the
sm100 model's assumptions. Nothing here was measured on a 12.x GPU: `python -m nvfp4_gemm tune` on
one replaces the model with a measured table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from . import sm100_model, sm120_rules
from .configs import Config
from .dtypes import NVFP4
from .dtypes import out_dtype as _out_dtype
from .sm100_model import Prediction

__all__ = ["RTX_5090", "Sm120Machine", "for_device", "grid_y_rows", "launch_grid", "pick", "predict", "rank",
           "report", "split_for", "stages_on"]

_OPERAND_BYTES_PER_ELEMENT = 0.5 + 1 / NVFP4.values_per_scale  # a 4-bit value plus a 1-byte scale per block


@dataclass(frozen=True)
class Sm120Machine:
    """The GPU the model describes. Defaults: a GeForce RTX 5090. Units: bytes, microseconds."""

    # 170 SMs (GB202 as shipped in the RTX 5090): secondary sources [1][2] of docs/sm120_integration.md.
    # A real device's own count replaces it (resolver).
    sm_count: int = 170
    # 1792 GB/s: 512-bit GDDR7 at 28 Gbps (secondary sources [1][2]).
    dram_bytes_per_us: float = 1.792e6
    # 1676 TFLOP/s dense FP4 (3352 "AI TOPS" with 2:4 sparsity, halved; secondary sources [1][2]) over
    # 170 SMs: 4096 FLOP per clock per SM at 2.407 GHz. ASSUMPTION: the headline rate holds with FP32
    # accumulation (the kernels accumulate in FP32) and for mma.sync issue; a peak, not a measurement.
    fp4_flops_per_us_per_sm: float = 1676e12 / 1e6 / 170
    # 99 KB per block: cutlass::arch::sm120_smem_capacity_bytes (CUDA programming guide, compute capability 12.x).
    smem_bytes: int = sm120_rules.SMEM_CAPACITY_BYTES
    # 96 MB of L2 (secondary source [1]): operands that fit together are read from DRAM once.
    l2_bytes: int = 96 * 2**20
    # ASSUMPTIONS carried over from the sm100 model (not measured on a 12.x GPU): loaded DRAM latency
    # seen by a TMA load, kernel launch, stream-K's barrier clear.
    latency_us: float = 1.0
    launch_us: float = 2.0
    workspace_clear_us: float = 1.0


RTX_5090 = Sm120Machine()


def for_device(sm_count: int) -> Sm120Machine:
    """The RTX 5090 model with a real device's SM count (per-SM rates kept; the bandwidth is not scaled)."""
    return RTX_5090 if sm_count == RTX_5090.sm_count else replace(RTX_5090, sm_count=sm_count)


def stages_on(config: Config, out_dtype: str, machine: Sm120Machine = RTX_5090) -> int:
    """Pipeline stages CUTLASS's carve-out leaves in the machine's shared memory (0 when not even one fits)."""
    free = machine.smem_bytes - sm120_rules.epilogue_bytes(config.tile, out_dtype)
    return max(0, free // sm120_rules.stage_bytes(config.tile))


def predict(
    config: Config, m: int, n: int, k: int, l: int, out_dtype: str, split_k: int = 1, machine: Sm120Machine = RTX_5090
) -> Prediction:
    """Predicted time of `config` on (m, n, k, l) with `split_k` (see the module docstring)."""
    stages = stages_on(config, out_dtype, machine)
    split_k = split_k if config.takes_split_k else 1
    if stages < 2:  # CUTLASS's pipeline needs two stages: this config does not fit this machine
        return Prediction(config=config, split_k=split_k, us=math.inf, terms={"stages": stages, "work": "does not fit"})
    tile_m, tile_n, tile_k = config.tile
    workers = machine.sm_count  # one CTA per SM
    tiles = -(-m // tile_m) * -(-n // tile_n) * l
    k_tiles = -(-k // tile_k)

    split = sm100_model.split_work(config.scheduler, split_k, tiles, k_tiles, workers, "SMs")

    per_k_tile = max(machine.latency_us / stages, 2.0 * tile_m * tile_n * tile_k / machine.fp4_flops_per_us_per_sm)
    k_loop = split.iterations * per_k_tile

    operand_bytes = sm100_model.dram_operand_bytes(
        m * _OPERAND_BYTES_PER_ELEMENT * k * l, n * _OPERAND_BYTES_PER_ELEMENT * k * l, m, n, tile_m, tile_n,
        machine.l2_bytes,
    )
    unit_bytes_per_us = stages * (tile_m + tile_n) * tile_k * _OPERAND_BYTES_PER_ELEMENT / machine.latency_us
    total, terms = sm100_model.predicted_time(
        machine, config.scheduler, split, k_loop, operand_bytes, tile_m, tile_n, _out_dtype(out_dtype).bytes,
        m * n * l, unit_bytes_per_us, 1 if config.schedule == "pingpong" else split.waves, stages,
    )
    return Prediction(config=config, split_k=split_k, us=total, terms=terms)


def rank(
    configs: tuple, m: int, n: int, k: int, l: int, out_dtype: str, machine: Sm120Machine = RTX_5090
) -> list:
    """Best prediction per config (over its split counts), fastest first; ties keep table order."""
    return sm100_model.best_per_config(
        configs, lambda config: [predict(config, m, n, k, l, out_dtype, s, machine) for s in config.split_options(k)]
    )


# The launch geometry is the sm100 family's: CUTLASS 4.2's Sm120 kernels take the same tile schedulers
# (PersistentTileSchedulerSm100 and its stream-K variant), here with 1x1 clusters and no swap-AB.
launch_grid = sm100_model.launch_grid
grid_y_rows = sm100_model.grid_y_rows


def pick(configs: tuple, m: int, n: int, k: int, l: int, out_dtype: str, sm_count: int) -> tuple:
    """The family's selection model (families.py): every config at its best split count; the fastest
    that fits wins, table order breaks ties."""
    machine = for_device(sm_count)
    ranking = rank(configs, m, n, k, l, out_dtype, machine)
    if math.isinf(ranking[0].us):
        raise ValueError(f"no sm120 config fits in {machine.smem_bytes} bytes of shared memory")
    return sm100_model.explain_pick(ranking, f"RTX 5090 model ({machine.sm_count} SMs, secondary-source constants)")


def split_for(config: Config, m: int, n: int, k: int, l: int, out_dtype: str, sm_count: int) -> tuple:
    """The split-K count `config` runs the shape with (the model's best for it), and why."""
    best = rank((config,), m, n, k, l, out_dtype, for_device(sm_count))[0]
    return best.split_k, f"split_k={best.split_k} (RTX 5090 model's best for this config)"


def report(configs: tuple, weights: tuple, machine: Sm120Machine = RTX_5090) -> str:
    """Markdown tables of predicted times (us, best split count) per config and shape, fp16 out."""
    return sm100_model.report_tables(
        configs, weights, lambda m, n, k: rank(configs, m, n, k, 1, "float16", machine),
        f"RTX 5090 model, {machine.sm_count} SMs; predicted us",
    )
