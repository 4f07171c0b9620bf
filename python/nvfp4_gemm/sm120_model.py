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
_PARTIAL_BYTES = 4  # stream-K / split-K partials are FP32 accumulators


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

    if config.scheduler == "stream_k" and split_k == 1:
        full_waves, leftover = divmod(tiles, workers)
        if leftover == 0:
            waves, iterations, pieces, split_tiles = full_waves, full_waves * k_tiles, 1, 0
            work = f"{tiles} tiles in {full_waves} full waves"
        else:
            # whole waves data-parallel, the last partial wave's K loop spread over every SM
            share = -(-leftover * k_tiles // workers)
            waves, iterations = full_waves + 1, full_waves * k_tiles + share
            pieces, split_tiles = min(k_tiles, -(-workers // leftover)), leftover
            work = f"{tiles} tiles, last {leftover} stream-K over {workers} SMs ({share} K tiles each)"
    else:
        split = min(split_k, k_tiles)
        units = tiles * split
        waves = -(-units // workers)
        iterations = waves * -(-k_tiles // split)
        pieces, split_tiles = split, (tiles if split > 1 else 0)
        work = f"{tiles} tiles x {split} splits = {units} units in {waves} wave(s) of {workers}"

    per_k_tile = max(machine.latency_us / stages, 2.0 * tile_m * tile_n * tile_k / machine.fp4_flops_per_us_per_sm)
    k_loop = iterations * per_k_tile

    operand_bytes = sm100_model.dram_operand_bytes(
        m * _OPERAND_BYTES_PER_ELEMENT * k * l, n * _OPERAND_BYTES_PER_ELEMENT * k * l, m, n, tile_m, tile_n,
        machine.l2_bytes,
    )
    out_bytes = m * n * l * _out_dtype(out_dtype).bytes
    partial_bytes = split_tiles * (pieces - 1) * tile_m * tile_n * _PARTIAL_BYTES * 2
    dram_floor = (operand_bytes + out_bytes + partial_bytes) / machine.dram_bytes_per_us

    unit_bytes_per_us = stages * (tile_m + tile_n) * tile_k * _OPERAND_BYTES_PER_ELEMENT / machine.latency_us
    reduction = 0.0
    if pieces > 1:
        reduction = machine.latency_us + (pieces - 1) * tile_m * tile_n * _PARTIAL_BYTES / unit_bytes_per_us
    one_epilogue = machine.latency_us / 2 + tile_m * tile_n * _out_dtype(out_dtype).bytes / unit_bytes_per_us
    epilogue = one_epilogue * (1 if config.schedule == "pingpong" else waves)

    launch = machine.launch_us + (machine.workspace_clear_us if config.scheduler == "stream_k" else 0.0)
    fill = machine.latency_us
    total = launch + fill + max(k_loop, dram_floor) + reduction + epilogue
    terms = {
        "launch": launch, "fill": fill, "k_loop": k_loop, "dram_floor": dram_floor,
        "reduction": reduction, "epilogue": epilogue, "stages": stages, "work": work,
    }
    return Prediction(config=config, split_k=split_k, us=total, terms=terms)


def rank(
    configs: tuple, m: int, n: int, k: int, l: int, out_dtype: str, machine: Sm120Machine = RTX_5090
) -> list:
    """Best prediction per config (over its split counts), fastest first; ties keep table order."""
    best = []
    for order, config in enumerate(configs):
        options = [predict(config, m, n, k, l, out_dtype, s, machine) for s in config.split_options(k)]
        best.append((min(options, key=lambda p: p.us), order))
    best.sort(key=lambda item: (round(item[0].us, 6), item[1]))
    return [prediction for prediction, _ in best]


# The launch geometry is the sm100 family's: CUTLASS 4.2's Sm120 kernels take the same tile schedulers
# (PersistentTileSchedulerSm100 and its stream-K variant), here with 1x1 clusters and no swap-AB.
launch_grid = sm100_model.launch_grid
grid_y_rows = sm100_model.grid_y_rows


def pick(configs: tuple, m: int, n: int, k: int, l: int, out_dtype: str, sm_count: int) -> tuple:
    """The family's selection model (families.py): every config at its best split count; the fastest
    that fits wins, table order breaks ties."""
    machine = for_device(sm_count)
    ranking = rank(configs, m, n, k, l, out_dtype, machine)
    best = ranking[0]
    if math.isinf(best.us):
        raise ValueError(f"no sm120 config fits in {machine.smem_bytes} bytes of shared memory")
    why = f"RTX 5090 model ({machine.sm_count} SMs, secondary-source constants) predicts {best.describe()}"
    if len(ranking) > 1 and not math.isinf(ranking[1].us):
        why += f"; runner-up {ranking[1].config.name} split_k={ranking[1].split_k} {ranking[1].us:.2f} us"
    return best.config, why


def split_for(config: Config, m: int, n: int, k: int, l: int, out_dtype: str, sm_count: int) -> tuple:
    """The split-K count `config` runs the shape with (the model's best for it), and why."""
    best = rank((config,), m, n, k, l, out_dtype, for_device(sm_count))[0]
    return best.split_k, f"split_k={best.split_k} (RTX 5090 model's best for this config)"


def report(configs: tuple, weights: tuple, machine: Sm120Machine = RTX_5090) -> str:
    """Markdown tables of predicted times (us, best split count) per config and shape, fp16 out."""
    lines = []
    for n, k in weights:
        lines.append(f"N = {n}, K = {k} (RTX 5090 model, {machine.sm_count} SMs; predicted us; `sN` = split_k N; "
                     "**bold** = the resolver's choice)")
        lines.append("")
        lines.append("| config | " + " | ".join(f"M = {m}" for m in sm100_model.REPORT_MS) + " |")
        lines.append("| --- |" + " --- |" * len(sm100_model.REPORT_MS))
        ranked = {m: rank(configs, m, n, k, 1, "float16", machine) for m in sm100_model.REPORT_MS}
        for config in configs:
            cells = []
            for m in sm100_model.REPORT_MS:
                p = next(p for p in ranked[m] if p.config == config)
                cell = f"{p.us:.1f}" + (f" s{p.split_k}" if config.takes_split_k else "")
                cells.append(f"**{cell}**" if p is ranked[m][0] else cell)
            lines.append(f"| {config.name} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)
