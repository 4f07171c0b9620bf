"""The sm120 family's kernel rows and rules (GeForce RTX 50, RTX PRO 6000 Blackwell: compute
capability 12.0; DGX Spark GB10: 12.1), standalone until they join csrc/configs.toml and
configs.py through issue 19's family descriptors (docs/sm120_integration.md says how).

Pure Python, no third-party imports. The problem-level rule is the one every family shares
(configs.shape_rule_violation: K % 32, N % 8 for fp16/bf16 or N % 4 for fp32, any M and L >= 1);
what is sm120's own is which rows exist: CUTLASS 4.2's Sm120 block-scaled collective and the
shared-memory budget of the family. tests/test_sm120_host_proofs.py proves the predicate equals
CUTLASS's can_implement and this module's pipeline model equals the compiled kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from nvfp4_gemm.configs import OUT_DTYPES, shape_rule_violation

SM_MAJOR = 12

# cutlass::arch::sm120_smem_capacity_bytes: 99 KiB of shared memory per block on compute capability
# 12.x (the CUDA programming guide's table: 100 KB per SM, 99 KB per block). CUTLASS sizes the
# pipeline to fit it; the launcher's static_assert refuses a kernel that would not.
SMEM_CAPACITY_BYTES = 101376

# Mainloop schedules of CUTLASS 4.2's Sm120 block-scaled collective: "cooperative" (two consumer
# warpgroups on one tile; tile M >= 128) and "pingpong" (one tile per consumer warpgroup, the two
# alternating mainloop and epilogue). Ping-pong has no stream-K scheduler.
SCHEDULES = ("cooperative", "pingpong")
SCHEDULERS = ("data_parallel", "stream_k")
_SCHEDULE_ABBREVIATION = {"cooperative": "coop", "pingpong": "pingpong"}

# Tile shapes that compile (docs/sm120_integration.md lists what does not and why): the scale
# factors' shared-memory atom covers 128 rows of A and of B, so tile M and N are multiples of 128
# (64 fails in the scale TMA); the cooperative kernel needs M >= 128; K is whole 64-element MMA
# steps, and at least two pipeline stages must fit in 99 KB.
TILE_M = {"cooperative": (128, 256), "pingpong": (128,)}
TILE_N = (128, 256)
TILE_K = (128, 256)

# The MMA the kernels issue, m16n8k64 e2m1 x e2m1 with ue4m3 scales per 16 elements: one K step of
# a pipeline stage is 64 elements.
MMA_K = 64


@dataclass(frozen=True)
class Sm120Config:
    """One sm120 kernel design, compiled once per output dtype."""

    name: str
    tile: tuple[int, int, int]
    schedule: str = "cooperative"
    scheduler: str = "data_parallel"
    why: str = ""

    family = "sm120"

    @property
    def sm_major(self) -> int:
        return SM_MAJOR

    @property
    def split_k(self) -> bool:
        return self.scheduler == "stream_k"

    def max_split_k(self, k: int) -> int:
        return -(-k // self.tile[2]) if self.split_k else 1

    # No swap-AB rows on this family: 128 is the narrowest tile N (see TILE_N), so tokens pad to
    # 128 on either side of the MMA.
    @property
    def tokens_per_tile(self) -> int:
        return self.tile[0]

    @property
    def weights_per_tile(self) -> int:
        return self.tile[1]

    def supports(self, m: int, n: int, k: int, l: int, out_dtype: str) -> Optional[str]:
        """None if this config can run the problem, else the rule it breaks (a sentence)."""
        return shape_rule_violation(m, n, k, l, out_dtype)

    def pipeline_stages(self, out_dtype: str) -> int:
        return pipeline_stages(self.tile, out_dtype)


def config_name(tile, schedule: str, scheduler: str) -> str:
    name = f"sm120_{_SCHEDULE_ABBREVIATION[schedule]}_{tile[0]}x{tile[1]}x{tile[2]}"
    if scheduler == "stream_k":
        name += "_streamk"
    return name


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


def check_config(config: Sm120Config) -> Sm120Config:
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
    expected = config_name(config.tile, config.schedule, config.scheduler)
    if config.name != expected:
        raise ValueError(f"{where}: name must say what the config is: expected {expected!r}")
    return config


def kernel_type(config: Sm120Config, out_dtype: str) -> str:
    """The launcher instantiation of one (row, out dtype): what the generator emits."""
    element = {"float16": "cutlass::half_t", "bfloat16": "cutlass::bfloat16_t", "float32": "float"}[out_dtype]
    schedule = {"cooperative": "kCooperative", "pingpong": "kPingpong"}[config.schedule]
    tm, tn, tk = config.tile
    stream_k = "true" if config.scheduler == "stream_k" else "false"
    return f"sm120::BlockScaledGemm<{tm}, {tn}, {tk}, {element}, sm120::Schedule::{schedule}, /*StreamK=*/{stream_k}>"


_ROWS = (
    Sm120Config(
        name="sm120_coop_128x128x128",
        tile=(128, 128, 128),
        why="CUTLASS 4.2's own sm120 NVFP4 tile (cutlass_library generator, cooperative): 4 stages in 99 KB",
    ),
    Sm120Config(
        name="sm120_pingpong_128x128x128",
        tile=(128, 128, 128),
        schedule="pingpong",
        why="CUTLASS example 79b's config: one warpgroup's epilogue overlaps the other's mainloop",
    ),
    Sm120Config(
        name="sm120_coop_128x128x256",
        tile=(128, 128, 256),
        why="CUTLASS's K = 256 tile: half the barrier round trips per K, 2 stages",
    ),
    Sm120Config(
        name="sm120_coop_256x128x128",
        tile=(256, 128, 128),
        why="prefill: each B (weight) tile reused by 256 tokens; 3 stages (2 with fp32 out)",
    ),
    Sm120Config(
        name="sm120_coop_128x128x128_streamk",
        tile=(128, 128, 128),
        scheduler="stream_k",
        why="decode and small grids: stream-K / split-K spreads K over the SMs when N / 128 tiles are fewer",
    ),
)


def load_configs() -> tuple[Sm120Config, ...]:
    rows = tuple(check_config(row) for row in _ROWS)
    names = [row.name for row in rows]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate sm120 config names: {names}")
    return rows


def by_name(name: str) -> Sm120Config:
    for row in load_configs():
        if row.name == name:
            return row
    raise KeyError(f"unknown sm120 config {name!r}; known: {', '.join(r.name for r in load_configs())}")
