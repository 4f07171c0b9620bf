"""The kernel config table (``csrc/configs.toml``), the one validity predicate and the one split-K rule.

This module is pure Python with no third-party imports (it reads families.py and dtypes.py): the build's
kernel generator (``csrc/generate_kernels.py``) loads it, so the table is parsed, checked and interpreted
by the same code at build time, in the resolver and in the tests.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import families
from .dtypes import GEMM_FORMATS, NVFP4, OUT_DTYPES
from .dtypes import out_dtype as _out_dtype
from .families import SM100_TILE_K

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = ["Config", "ConfigTable", "K_ALIGNMENT", "OUT_DTYPES", "SM100_TILE_K", "SPLIT_K_CHOICES", "load_table",
           "per_column_alpha_home", "shape_rule_violation", "table_path"]

K_ALIGNMENT = NVFP4.k_alignment

# Split-K counts the tuner measures and the sm100 model predicts (the ones a K tile count allows).
SPLIT_K_CHOICES = (1, 2, 3, 4, 6, 8, 12, 16)

_TABLE_NAME = "configs.toml"


@dataclass(frozen=True)
class Config:
    """One row of the config table: a kernel design, compiled once per output dtype."""

    name: str
    family: str
    tile: tuple[int, int, int]
    cluster: tuple[int, int]
    why: str
    mma: str = "tcgen05"  # the family's MMA kind (families.Family.tiles): sm100 "tcgen05"; sm90 "wgmma", "direct", "gemv"
    scheduler: str = "data_parallel"  # sm100, sm120: "data_parallel" or "stream_k"
    swap_ab: bool = False  # sm100: weights are the MMA's M operand, tokens its N (for small M)
    format: str = "nvfp4"  # the GEMM format its kernel takes (dtypes.GEMM_FORMATS)
    schedule: str = ""  # sm120: the mainloop schedule, "cooperative" or "pingpong" ("" where a family has one)
    per_column_alpha: bool = False  # sm100: the kernel takes alpha as an (N,) vector only (Family.per_column_alpha_rows)

    @property
    def family_info(self) -> "families.Family":
        return families.by_name(self.family)

    @property
    def sm_major(self) -> int:
        return self.family_info.sm_major

    @property
    def two_sm(self) -> bool:
        return self.tile[0] == self.family_info.two_sm_tile_m

    @property
    def takes_split_k(self) -> bool:
        """Whether the kernel takes a run-time split-K count (chosen by the resolver)."""
        return self.scheduler in self.family_info.split_k_schedulers

    def max_split_k(self, k: int) -> int:
        """The largest split-K count the kernel accepts for K: one split per K tile at most. The one
        bound on split_k: the resolver, the tuner, `gemm` and the launchers' own checks agree with it."""
        if not self.takes_split_k:
            return 1
        splits = self.kind_splits
        return min(-(-k // self.tile[2]), max(splits) if splits else k)

    @property
    def kind_limits(self) -> "Optional[families.KindLimits]":
        """What the row's MMA kind takes beyond its family's rules (families.KindLimits), or None."""
        return self.family_info.kind_limits.get(self.mma)

    @property
    def kind_splits(self) -> tuple[int, ...]:
        """The split-K counts the row's MMA kind runs (families.KindLimits.splits); empty: any."""
        limits = self.kind_limits
        return limits.splits if limits is not None else ()

    def split_options(self, k: int) -> tuple[int, ...]:
        """The split-K counts worth trying for K (all within max_split_k): (1,) without split-K."""
        bound, kind_splits = self.max_split_k(k), self.kind_splits
        return tuple(s for s in SPLIT_K_CHOICES if s <= bound and (not kind_splits or s in kind_splits))

    def split_violation(self, split_k: int, k: int) -> Optional[str]:
        """None if the kernel runs K in `split_k` parts, else the rule it breaks (a sentence)."""
        if split_k > 1 and not self.takes_split_k:
            return f"split_k={split_k}: config {self.name!r} has no split-K (pass split_k=None or 1)"
        if self.kind_splits and split_k not in self.kind_splits:
            return (f"split_k={split_k}: config {self.name!r} splits K over "
                    f"{', '.join(map(str, self.kind_splits))} warps of a CTA")
        if split_k > self.max_split_k(k):
            return (
                f"split_k={split_k}: config {self.name!r} splits K={k} into at most {self.max_split_k(k)} parts "
                f"(one per {self.tile[2]}-element K tile)"
            )
        return None

    @property
    def tokens_per_tile(self) -> int:
        """Rows of a (tokens, the user's M) one CTA's tile covers; the tile's N side if swapped."""
        return self.tile[1] if self.swap_ab else self.tile[0]

    @property
    def weights_per_tile(self) -> int:
        """Rows of b (weights, the user's N) one tile covers."""
        return self.tile[0] if self.swap_ab else self.tile[1]

    def alpha_violation(self, alpha_per_column: bool) -> Optional[str]:
        """None if the kernel takes the call's alpha (an (N,) vector when `alpha_per_column`, else one value or
        none), else the rule it breaks (a sentence)."""
        family = self.family_info
        if self.per_column_alpha and not alpha_per_column:
            return (
                f"config {self.name!r} takes alpha as an (N,) vector, one value per output column; a single alpha "
                f"(or none) runs on the {family.name} family's other rows"
            )
        if alpha_per_column and not (self.per_column_alpha or family.per_column_alpha):
            return f"config {self.name!r} takes one alpha, not one per output column; {per_column_alpha_home()}"
        return None

    def supports(
        self, m: int, n: int, k: int, l: int, out_dtype: str, alpha_per_column: bool = False
    ) -> Optional[str]:
        """None if this config can run the problem (with an (N,) alpha when `alpha_per_column`), else the rule
        it breaks (a sentence)."""
        violation = self.alpha_violation(alpha_per_column)
        if violation is not None:
            return violation
        multiple = (self.family_info.format_k_alignment or {}).get(self.format, 1)
        if k % multiple:
            return f"K must be a multiple of {multiple} for the {self.family} {self.format} kernels, got K={k}"
        multiple = (self.family_info.format_n_alignment or {}).get(self.format, 1)
        if n % multiple:
            return f"N must be a multiple of {multiple} for the {self.family} {self.format} kernels, got N={n}"
        limits = self.kind_limits
        if limits is not None and limits.tokens_within_tile and m > self.tile[0]:
            tokens = f"{self.tile[0]} token{'s' if self.tile[0] > 1 else ''}"
            return f"config {self.name!r} takes at most {tokens} (M <= its tile M), got M={m}"
        if limits is not None and k < limits.min_k:
            return (f"config {self.name!r} needs K >= {limits.min_k} (its FP32 accumulation chain within the earned "
                    f"tolerance), got K={k}")
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


def per_column_alpha_home() -> str:
    """Where a call with an (N,) alpha runs (a sentence for errors that refuse one)."""
    families_taking = [f.name for f in families.FAMILIES if f.per_column_alpha]
    rows = [c.name for c in load_table().configs if c.per_column_alpha]
    return (
        f"alpha with one value per output column runs on the {', '.join(families_taking)} family, the rows "
        f"{', '.join(rows)} and the CPU: run it there, or pass a one-element alpha and scale the output's columns "
        f"afterwards"
    )


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
    align = _out_dtype(out_dtype).alignment
    if n % align:
        return f"N must be a multiple of {align} for {out_dtype} output, got N={n}"
    return None


def _config_name(
    family: "families.Family", tile, cluster, mma: str, scheduler: str, swap_ab: bool, format: str, schedule: str,
    per_column_alpha: bool,
) -> str:
    return family.names[mma].format(
        alpha="_pcalpha" if per_column_alpha else "",
        format="" if format == GEMM_FORMATS[0].name else f"_{format}",
        schedule=family.schedules.get(schedule, ""),
        tile="x".join(map(str, tile)),
        cluster="x".join(map(str, cluster)),
        sms="2sm" if tile[0] == family.two_sm_tile_m else "1sm",
        swap_ab="_swapab" if swap_ab else "",
        stream_k="_streamk" if scheduler == "stream_k" else "",
    )


def _check_row(row: dict, index: int) -> Config:
    """One table row checked against its family's vocabulary (families.Family)."""
    where = f"config #{index} ({row.get('name', '?')})"
    try:
        family = families.by_name(row.get("family"))
    except KeyError:
        known = [f.name for f in families.FAMILIES]
        raise ValueError(f"{where}: family must be one of {known}, got {row.get('family')!r}") from None
    tile = tuple(int(x) for x in row["tile"])
    cluster = tuple(int(x) for x in row["cluster"])
    if len(tile) != 3 or len(cluster) != 2:
        raise ValueError(f"{where}: tile is [M, N, K] and cluster is [M, N]")
    mma = row.get("mma", family.mmas[0] if len(family.mmas) == 1 else None)  # named unless there is one kind
    if mma not in family.mmas:
        raise ValueError(f"{where}: {family.name} mma must be one of {family.mmas}, got {mma!r}")
    if tile not in family.tiles[mma]:
        raise ValueError(
            f"{where}: the {family.name} {mma} kernel's tile must be one of {[list(t) for t in family.tiles[mma]]}, "
            f"got {list(tile)}"
        )
    if family.max_cluster == 1 and cluster != (1, 1):
        raise ValueError(f"{where}: the {family.name} kernels use no clusters: cluster must be [1, 1]")
    if not all(1 <= c <= family.max_cluster for c in cluster):
        raise ValueError(f"{where}: cluster dims must be 1..{family.max_cluster}, got {list(cluster)}")
    if tile[0] == family.two_sm_tile_m and cluster[0] % 2:
        raise ValueError(f"{where}: a 2SM tile (M={tile[0]}) needs an even cluster M, got {cluster[0]}")
    scheduler = row.get("scheduler", "data_parallel")
    swap_ab = row.get("swap_ab", False)
    if not isinstance(swap_ab, bool):
        raise ValueError(f"{where}: swap_ab must be true or false, got {swap_ab!r}")
    if swap_ab and not family.swap_ab:
        raise ValueError(f"{where}: the {family.name} family has no swap_ab option")
    if scheduler not in family.schedulers:
        raise ValueError(f"{where}: {family.name} scheduler must be one of {family.schedulers}, got {scheduler!r}")
    if scheduler == "stream_k" and tile[1] in family.stream_k_unsupported_tile_n:
        raise ValueError(f"{where}: CUTLASS 4.2 runs stream-K data-parallel for tile N = {tile[1]}; use another N")
    format = row.get("format", GEMM_FORMATS[0].name)
    if format not in family.formats:
        raise ValueError(f"{where}: the {family.name} kernels take the formats {family.formats}, got {format!r}")
    limits = family.kind_limits.get(mma)
    if limits is not None and format not in limits.formats:
        raise ValueError(f"{where}: the {family.name} {mma} kernel takes the formats {limits.formats}, got {format!r}")
    schedule = row.get("schedule", next(iter(family.schedules), ""))
    if family.schedules and schedule not in family.schedules:
        raise ValueError(f"{where}: {family.name} schedule must be one of {tuple(family.schedules)}, got {schedule!r}")
    if not family.schedules and schedule:
        raise ValueError(f"{where}: the {family.name} family has one schedule: drop schedule = {schedule!r}")
    per_column_alpha = row.get("per_column_alpha", False)
    if not isinstance(per_column_alpha, bool):
        raise ValueError(f"{where}: per_column_alpha must be true or false, got {per_column_alpha!r}")
    if per_column_alpha and not family.per_column_alpha_rows:
        raise ValueError(
            f"{where}: the {family.name} family has no per_column_alpha rows"
            + (" (every one of its kernels takes an (N,) alpha)" if family.per_column_alpha else "")
        )
    expected = _config_name(family, tile, cluster, mma, scheduler, swap_ab, format, schedule, per_column_alpha)
    if row["name"] != expected:
        raise ValueError(f"{where}: name must say what the config is: expected {expected!r}")
    config = Config(
        name=row["name"], family=family.name, tile=tile, cluster=cluster, why=row.get("why", ""), mma=mma,
        scheduler=scheduler, swap_ab=swap_ab, format=format, schedule=schedule, per_column_alpha=per_column_alpha,
    )
    if family.row_rules:
        try:
            importlib.import_module(f"{__package__}.{family.row_rules}").check_config(config)
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
    return config


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
