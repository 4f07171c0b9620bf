"""The kernel config table (``csrc/configs.toml``) and the one validity predicate.

This module is pure Python with no third-party imports: the build's kernel generator
(``csrc/generate_kernels.py``) loads it by path, so the table is parsed, checked and
interpreted by the same code at build time, in the resolver and in the tests.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

OUT_DTYPES = ("float16", "bfloat16", "float32")

# Output row alignment in elements: the epilogue stores 16-byte vectors (TMA's minimum).
OUT_ALIGNMENT = {"float16": 8, "bfloat16": 8, "float32": 4}

# K granularity: 32 FP4 elements = 16 bytes per row, the TMA minimum; also two 16-element
# scale blocks, so every row holds whole scale blocks.
K_ALIGNMENT = 32

# Compute-capability major each kernel family runs on.
FAMILY_SM_MAJOR = {"sm100": 10, "sm90": 9}

# CUTLASS 4.2 sm100 block-scaled MMA shapes (cutlass/gemm/collective/builders/sm100_blockscaled_*).
_SM100_TILE_M = {128: "1sm", 256: "2sm"}
_SM100_TILE_N = (64, 128, 192, 256)
_SM100_TILE_K = (256,)
# Tile schedulers: CUTLASS's default persistent data-parallel one, or its stream-K scheduler (split
# count set at run time). CUTLASS 4.2's stream-K silently runs data-parallel for N = 192 tiles
# (sm100_tile_scheduler_stream_k.hpp, ForceDataParallel), so the table refuses that pairing.
_SM100_SCHEDULERS = ("data_parallel", "stream_k")
_SM100_STREAM_K_TILE_N_UNSUPPORTED = (192,)
# sm100 K tile: one split or stream-K unit is at least one MMA tile of K.
SM100_TILE_K = 256

# Split-K counts the tuner measures and the sm100 model predicts (the ones a K tile count allows).
SPLIT_K_CHOICES = (1, 2, 3, 4, 6, 8, 12, 16)

# sm90 kernels (csrc/include/nvfp4_gemm/sm90/): mma = "wgmma" (token prepass into fp16 + warp-specialized
# wgmma kernel; tile = [tokens, weight rows, K stage]; the accumulators, tokens x weight rows / 256 FP32
# per consumer thread, must fit in registers, so at most 128 x 256 or 256 x 128) or "direct" (decode:
# mma.sync fed straight from global memory; 16 tokens x 128 weight rows per CTA, K in chunks of 64,
# its split-K unit). Split-K chosen at run time.
_SM90_MMA = ("wgmma", "direct")
_SM90_WGMMA_TILES = ((64, 128, 128), (128, 128, 128), (256, 128, 128), (64, 256, 128), (128, 256, 128))
_SM90_DIRECT_TILE = (16, 128, 64)

_TABLE_NAME = "configs.toml"


@dataclass(frozen=True)
class Config:
    """One row of the config table: a kernel design, compiled once per output dtype."""

    name: str
    family: str
    tile: tuple[int, int, int]
    cluster: tuple[int, int]
    why: str
    mma: str = "tcgen05"  # sm100: tcgen05 block-scaled MMA; sm90: "wgmma" or "direct"
    scheduler: str = "data_parallel"  # sm100: "data_parallel" or "stream_k"
    swap_ab: bool = False  # sm100: weights are the MMA's M operand, tokens its N (for small M)

    @property
    def sm_major(self) -> int:
        return FAMILY_SM_MAJOR[self.family]

    @property
    def two_sm(self) -> bool:
        return self.family == "sm100" and self.tile[0] == 256

    @property
    def split_k(self) -> bool:
        """Whether the kernel takes a run-time split-K count (chosen by the resolver)."""
        return self.family == "sm90" or self.scheduler == "stream_k"

    def max_split_k(self, k: int) -> int:
        """The largest split-K count the kernel accepts for K: one split per K tile at most."""
        if not self.split_k:
            return 1
        return -(-k // self.tile[2])

    def split_options(self, k: int) -> tuple[int, ...]:
        """The split-K counts worth trying for K: (1,) without split-K."""
        return tuple(s for s in SPLIT_K_CHOICES if s <= self.max_split_k(k))

    @property
    def tokens_per_tile(self) -> int:
        """Rows of a (tokens, the user's M) one CTA's tile covers; the tile's N side if swapped."""
        return self.tile[1] if self.swap_ab else self.tile[0]

    @property
    def weights_per_tile(self) -> int:
        """Rows of b (weights, the user's N) one tile covers."""
        return self.tile[0] if self.swap_ab else self.tile[1]

    def supports(self, m: int, n: int, k: int, l: int, out_dtype: str) -> Optional[str]:
        """None if this config can run the problem, else the rule it breaks (a sentence)."""
        return shape_rule_violation(m, n, k, l, out_dtype)


@dataclass(frozen=True)
class ConfigTable:
    configs: tuple[Config, ...]
    kernels_per_translation_unit: int

    def by_name(self, name: str) -> Config:
        for config in self.configs:
            if config.name == name:
                return config
        known = ", ".join(c.name for c in self.configs)
        raise KeyError(f"unknown config {name!r}; the table has: {known}")


def shape_rule_violation(
    m: int, n: int, k: int, l: int, out_dtype: str, *, allow_empty: bool = False
) -> Optional[str]:
    """The problem-level rules every kernel shares; None when the problem is valid.

    Kernels need every size positive; `allow_empty` accepts zeros, for the call-level check (an empty
    problem is answered without a kernel)."""
    if out_dtype not in OUT_DTYPES:
        return f"out_dtype must be one of {', '.join(OUT_DTYPES)}, got {out_dtype}"
    if allow_empty:
        if m < 0 or n < 0 or k < 0 or l < 0:
            return f"M, N, K and L must not be negative, got M={m}, N={n}, K={k}, L={l}"
    elif m < 1 or n < 1 or k < 1 or l < 1:
        return f"M, N, K and L must be positive, got M={m}, N={n}, K={k}, L={l}"
    if k % K_ALIGNMENT:
        return f"K (= 2 * a.shape[-1]) must be a multiple of {K_ALIGNMENT}, got K={k}"
    align = OUT_ALIGNMENT[out_dtype]
    if n % align:
        return f"N must be a multiple of {align} for {out_dtype} output, got N={n}"
    return None


def _config_name(
    family: str,
    tile: tuple[int, int, int],
    cluster: tuple[int, int],
    mma: str,
    scheduler: str,
    swap_ab: bool,
) -> str:
    if family == "sm90":
        # "prepass": the wgmma kernel reads tokens dequantized once per call (names of tuned tables
        # measured with the in-CTA kernels of Hopper v3-v5 stay unknown instead of meaning another kernel)
        kind = "wgmma" if mma == "wgmma" else "direct"
        prepass = "_prepass" if mma == "wgmma" else ""
        return f"sm90_{kind}_{tile[0]}x{tile[1]}x{tile[2]}{prepass}_splitk"
    sms = _SM100_TILE_M.get(tile[0], "?sm")
    name = f"{family}_{sms}_{tile[0]}x{tile[1]}x{tile[2]}_c{cluster[0]}x{cluster[1]}"
    if swap_ab:
        name += "_swapab"
    if scheduler == "stream_k":
        name += "_streamk"
    return name


def _check_row(row: dict, index: int) -> Config:
    where = f"config #{index} ({row.get('name', '?')})"
    family = row.get("family")
    if family not in FAMILY_SM_MAJOR:
        raise ValueError(f"{where}: family must be one of {sorted(FAMILY_SM_MAJOR)}, got {family!r}")
    tile = tuple(int(x) for x in row["tile"])
    cluster = tuple(int(x) for x in row["cluster"])
    if len(tile) != 3 or len(cluster) != 2:
        raise ValueError(f"{where}: tile is [M, N, K] and cluster is [M, N]")
    mma = row.get("mma", "tcgen05" if family == "sm100" else None)
    if family == "sm100":
        if tile[0] not in _SM100_TILE_M or tile[1] not in _SM100_TILE_N or tile[2] not in _SM100_TILE_K:
            raise ValueError(
                f"{where}: sm100 tile must be M in {sorted(_SM100_TILE_M)}, N in {_SM100_TILE_N}, "
                f"K in {_SM100_TILE_K}; got {list(tile)}"
            )
        if not all(1 <= c <= 4 for c in cluster):
            raise ValueError(f"{where}: cluster dims must be 1..4, got {list(cluster)}")
        if tile[0] == 256 and cluster[0] % 2:
            raise ValueError(f"{where}: a 2SM tile (M=256) needs an even cluster M, got {cluster[0]}")
    else:
        if mma == "direct" and tuple(tile) != _SM90_DIRECT_TILE:
            raise ValueError(f"{where}: the direct sm90 kernel's tile is {list(_SM90_DIRECT_TILE)}, got {list(tile)}")
        if mma == "wgmma" and tile not in _SM90_WGMMA_TILES:
            raise ValueError(
                f"{where}: the sm90 wgmma kernel's tile must be one of {[list(t) for t in _SM90_WGMMA_TILES]}, "
                f"got {list(tile)}"
            )
        if cluster != (1, 1):
            raise ValueError(f"{where}: the sm90 kernel uses no clusters: cluster must be [1, 1]")
    if family == "sm90" and mma not in _SM90_MMA:
        raise ValueError(f"{where}: sm90 mma must be one of {_SM90_MMA}, got {mma!r}")
    if family == "sm100" and mma != "tcgen05":
        raise ValueError(f"{where}: sm100 configs use the tcgen05 MMA, got mma = {mma!r}")
    scheduler = row.get("scheduler", "data_parallel")
    swap_ab = row.get("swap_ab", False)
    if not isinstance(swap_ab, bool):
        raise ValueError(f"{where}: swap_ab must be true or false, got {swap_ab!r}")
    if family != "sm100" and (scheduler != "data_parallel" or swap_ab):
        raise ValueError(f"{where}: scheduler and swap_ab are sm100 options (the sm90 kernel has its own split-K)")
    if scheduler not in _SM100_SCHEDULERS:
        raise ValueError(f"{where}: scheduler must be one of {_SM100_SCHEDULERS}, got {scheduler!r}")
    if scheduler == "stream_k" and tile[1] in _SM100_STREAM_K_TILE_N_UNSUPPORTED:
        raise ValueError(f"{where}: CUTLASS 4.2 runs stream-K data-parallel for tile N = {tile[1]}; use another N")
    expected = _config_name(family, tile, cluster, mma, scheduler, swap_ab)
    if row["name"] != expected:
        raise ValueError(f"{where}: name must say what the config is: expected {expected!r}")
    return Config(
        name=row["name"], family=family, tile=tile, cluster=cluster, why=row.get("why", ""), mma=mma,
        scheduler=scheduler, swap_ab=swap_ab,
    )


def table_path() -> Path:
    """The table shipped in the wheel, or the source tree's copy when running from a checkout."""
    here = Path(__file__).resolve().parent
    shipped = here / _TABLE_NAME
    if shipped.is_file():
        return shipped
    return here.parent.parent / "csrc" / _TABLE_NAME


def load_table(path: Optional[Path] = None) -> ConfigTable:
    path = Path(path) if path is not None else table_path()
    with open(path, "rb") as f:
        raw = tomllib.load(f)
    if raw.get("schema") != 1:
        raise ValueError(f"{path}: unsupported table schema {raw.get('schema')!r}")
    configs = tuple(_check_row(row, i) for i, row in enumerate(raw.get("config", [])))
    names = [c.name for c in configs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"{path}: duplicate config names {duplicates}")
    return ConfigTable(configs=configs, kernels_per_translation_unit=int(raw["kernels_per_translation_unit"]))
