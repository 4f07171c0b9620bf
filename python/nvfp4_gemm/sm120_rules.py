"""The sm120 family's own row rules and shared-memory model (GeForce RTX 50, RTX PRO 6000
Blackwell: compute capability 12.0; DGX Spark GB10: 12.1). The rows are in csrc/configs.toml
(family "sm120"); configs.py checks each against the family's vocabulary (families.py) and then
against `check_config` here: what CUTLASS 4.2's Sm120 block-scaled collective builds and what fits
in the family's 99 KB of shared memory.

Pure Python, no third-party imports (the kernel generator loads it at build time). The problem-level
rule is the one every family shares (configs.shape_rule_violation: K % 32, N % 8 for fp16/bf16 or
N % 4 for fp32, any M and L >= 1). tests/test_sm120_host_proofs.py proves that predicate equals
CUTLASS's can_implement and this module's pipeline model equals the compiled kernels.
"""

from __future__ import annotations

from .dtypes import OUT_DTYPES

# cutlass::arch::sm120_smem_capacity_bytes: 99 KiB of shared memory per block on compute capability
# 12.x (the CUDA programming guide's table: 100 KB per SM, 99 KB per block). CUTLASS sizes the
# pipeline to fit it; the launcher's static_assert refuses a kernel that would not.
SMEM_CAPACITY_BYTES = 101376

# Mainloop schedules of CUTLASS 4.2's Sm120 block-scaled collective: "cooperative" (two consumer
# warpgroups on one tile; tile M >= 128) and "pingpong" (one tile per consumer warpgroup, the two
# alternating mainloop and epilogue). Ping-pong has no stream-K scheduler.
SCHEDULES = ("cooperative", "pingpong")
SCHEDULERS = ("data_parallel", "stream_k")

# Tile shapes that compile (docs/sm120_integration.md lists what does not and why): the scale
# factors' shared-memory atom covers 128 rows of A and of B, so tile M and N are multiples of 128
# (64 fails in the scale TMA); the cooperative kernel needs M >= 128; K is whole 64-element MMA
# steps, and at least two pipeline stages must fit in 99 KB.
TILE_M = {"cooperative": (128, 256), "pingpong": (128,)}
TILE_N = (128, 256)
TILE_K = (128, 256)


def stage_bytes(tile) -> int:
    """Shared memory of one pipeline stage: the FP4 tiles of A and B, one e4m3 scale per 16 of
    their elements, and the stage's full/empty barrier pair (8 bytes each)."""
    tm, tn, tk = tile
    return (tm + tn) * tk // 2 + (tm + tn) * tk // 16 + 16


def epilogue_bytes(tile, out_dtype: str) -> int:
    """The epilogue's shared memory: two 64x32 output subtiles in flight (no source tensor), each
    row padded by 4 elements against bank conflicts (measured: 9216 bytes for fp16/bf16, 18432 for
    fp32, the same for every tile)."""
    element = {"float16": 2, "bfloat16": 2, "float32": 4}[out_dtype]
    return 2 * 64 * (32 + 4) * element


def pipeline_stages(tile, out_dtype: str) -> int:
    """Stages CUTLASS's StageCountAutoCarveout picks: whatever the epilogue leaves of 99 KB."""
    return (SMEM_CAPACITY_BYTES - epilogue_bytes(tile, out_dtype)) // stage_bytes(tile)


def check_config(config):
    """The row's own rules (what CUTLASS's Sm120 collective builds); raises ValueError naming the rule."""
    where = f"sm120 config {config.name!r}"
    if config.schedule not in SCHEDULES:
        raise ValueError(f"{where}: schedule must be one of {SCHEDULES}, got {config.schedule!r}")
    if config.scheduler not in SCHEDULERS:
        raise ValueError(f"{where}: scheduler must be one of {SCHEDULERS}, got {config.scheduler!r}")
    tm, tn, tk = config.tile
    if tm not in TILE_M[config.schedule] or tn not in TILE_N or tk not in TILE_K:
        raise ValueError(
            f"{where}: a {config.schedule} tile has M in {TILE_M[config.schedule]}, N in {TILE_N}, "
            f"K in {TILE_K}; got {list(config.tile)}"
        )
    if config.scheduler == "stream_k" and config.schedule == "pingpong":
        raise ValueError(f"{where}: CUTLASS 4.2's ping-pong kernel has no stream-K scheduler")
    for out_dtype in OUT_DTYPES:
        if pipeline_stages(config.tile, out_dtype) < 2:
            raise ValueError(
                f"{where}: with {out_dtype} output fewer than 2 pipeline stages fit in "
                f"{SMEM_CAPACITY_BYTES} bytes of shared memory"
            )
    return config


def kernel_type(config, out_dtype: str) -> str:
    """The launcher instantiation of one (row, out dtype): what the generator emits."""
    element = {"float16": "cutlass::half_t", "bfloat16": "cutlass::bfloat16_t", "float32": "float"}[out_dtype]
    schedule = {"cooperative": "kCooperative", "pingpong": "kPingpong"}[config.schedule]
    tm, tn, tk = config.tile
    stream_k = "true" if config.scheduler == "stream_k" else "false"
    return f"sm120::BlockScaledGemm<{tm}, {tn}, {tk}, {element}, sm120::Schedule::{schedule}, /*StreamK=*/{stream_k}>"


def load_configs() -> tuple:
    """The sm120 rows of the config table (configs.Config, checked by check_config on load)."""
    from .configs import load_table

    return tuple(config for config in load_table().configs if config.family == "sm120")


def by_name(name: str):
    for row in load_configs():
        if row.name == name:
            return row
    raise KeyError(f"unknown sm120 config {name!r}; known: {', '.join(r.name for r in load_configs())}")
