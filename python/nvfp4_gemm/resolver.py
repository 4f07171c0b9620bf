"""Shape -> config: which compiled kernel runs a problem on a device, and why.

Selection happens once per distinct (device, shape, dtype) and is cached by the caller (ops.py), so
it never runs on the hot path. The candidates are the config table's rows whose family matches the
device and whose validity predicate (`Config.supports`) accepts the problem. A tuned table measured
on the same GPU model (`python -m nvfp4_gemm tune`) overrides the analytic model where it has the
shape; tables come from NVFP4_GEMM_TUNED_TABLE (paths separated by os.pathsep; "off" disables
them) or from the package's `tuned/` folder.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Optional, Union

import torch

from . import families
from ._checks import OUT_DTYPE_NAMES
from .configs import Config, load_table, per_column_alpha_home

__all__ = [
    "Resolution", "UnsupportedDeviceError", "candidates", "m_bucket", "pinned_config", "resolve", "tuned_tables",
]

TUNED_TABLE_SCHEMA = 1

# The family a resolution without a device (device=None) is made for, on its reference GPU.
_DEFAULT = families.by_name(families.DEFAULT_FAMILY)


class UnsupportedDeviceError(RuntimeError):
    """The installed wheel carries no kernel for this GPU."""


@dataclass(frozen=True)
class Resolution:
    config: Config
    split_k: int  # K partitions the launch uses (1 for kernels without split-K)
    reason: str


@lru_cache(maxsize=None)
def _table():
    return load_table()


def candidates(
    sm_major: int = _DEFAULT.sm_major, format: str = "nvfp4", alpha_per_column: bool = False
) -> tuple[Config, ...]:
    """The config table's rows for a compute-capability major, a GEMM format and an alpha (one value or none;
    with `alpha_per_column` an (N,) vector: `Config.alpha_violation`), in table order."""
    return tuple(
        c for c in _table().configs
        if c.sm_major == sm_major and c.format == format and c.alpha_violation(alpha_per_column) is None
    )


def _device_facts(device: Optional[Union[torch.device, str, int]]) -> tuple[int, int, Optional[str]]:
    """(compute capability major, multiprocessor count, name) of `device`, or of the default family's
    reference GPU (the B200)."""
    if device is None:
        return _DEFAULT.sm_major, _DEFAULT.reference_sm_count, None
    device = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"device must be a CUDA device (or None for the B200 model), got {device}")
    properties = torch.cuda.get_device_properties(device)
    return properties.major, properties.multi_processor_count, properties.name


def m_bucket(m: int) -> int:
    """Tuned tables key M by the next power of two: decode batches of similar size share a choice."""
    return 1 << max(0, (m - 1).bit_length())


def tuned_tables() -> list[Path]:
    """Where tuned tables are read from: NVFP4_GEMM_TUNED_TABLE (paths, or "off" for none), else the
    package's tuned/ folder."""
    configured = os.environ.get("NVFP4_GEMM_TUNED_TABLE")
    if configured == "off":
        return []
    if configured:
        return [Path(p) for p in configured.split(os.pathsep) if p]
    return sorted((Path(__file__).resolve().parent / "tuned").glob("*.json"))


@lru_cache(maxsize=None)
def _tuned_entries(gpu_name: str, tables: tuple[Path, ...]) -> dict[tuple, tuple[dict, str]]:
    """(m bucket, n, k, l, out dtype, format) -> (best entry, source) from tables measured on `gpu_name`. An
    entry without a format (tables written before the tuner took --format) measured NVFP4."""
    entries: dict[tuple, tuple[dict, str]] = {}
    for path in tables:
        with open(path) as f:
            table = json.load(f)
        if table.get("schema") != TUNED_TABLE_SCHEMA:
            raise ValueError(f"tuned table {path}: schema {table.get('schema')!r}, expected {TUNED_TABLE_SCHEMA}")
        if table.get("gpu") != gpu_name:
            continue
        source = f"{path.name} ({table['gpu']}, {table.get('date', '?')}, nvfp4_gemm {table.get('package', '?')})"
        for entry in table["entries"]:
            format = entry.get("format", "nvfp4")
            key = (entry["m_bucket"], entry["n"], entry["k"], entry["l"], entry["out_dtype"], format)
            entries[key] = (entry["best"], source)
    return entries


def resolve(
    m: int,
    n: int,
    k: int,
    l: int = 1,
    out_dtype: torch.dtype = torch.float16,
    device: Optional[Union[torch.device, str, int]] = None,
    *,
    explain: bool = False,
    config: Optional[str] = None,
    split_k: Optional[int] = None,
    format: str = "nvfp4",
    alpha_per_column: bool = False,
) -> Union[Config, Resolution]:
    """The config that runs (m, n, k, l) with `out_dtype` output on `device`.

    `device=None` resolves for a B200-class GPU (compute capability 10.x) without touching CUDA.
    With `explain=True` returns a `Resolution` (config, split-K count and a sentence saying why).
    `config` pins the config by name; the split-K count is still chosen for it unless `split_k` pins
    that too (checked against the config that runs: `Config.max_split_k`). `format`: the GEMM format
    (dtypes.GEMM_FORMATS); only that format's rows run it. `alpha_per_column`: the call's alpha is an (N,)
    vector; only rows that take one run it (on sm100 the rows marked per_column_alpha, which take nothing else).
    """
    sm_major, sm_count, gpu_name = _device_facts(device)
    tables = tuple(tuned_tables()) if gpu_name is not None else ()
    resolution = _resolve(
        m, n, k, l, OUT_DTYPE_NAMES.get(out_dtype, str(out_dtype)), sm_major, sm_count, config, gpu_name, tables,
        format, alpha_per_column,
    )
    if split_k is not None:
        _check_split(resolution.config, split_k, k)
        resolution = replace(resolution, split_k=split_k, reason=f"{resolution.reason}; split_k={split_k} pinned by the caller")
    if os.environ.get("NVFP4_GEMM_LOG_CONFIG") == "1":
        _log_once(resolution)
    return resolution if explain else resolution.config


def _split_for(config: Config, m: int, n: int, k: int, l: int, out_dtype: str, sm_count: int) -> tuple[int, str]:
    """The split-K count a config runs a shape with, by its family's model, and why."""
    if not config.takes_split_k:
        return 1, "no split-K"
    return config.family_info.model_module().split_for(config, m, n, k, l, out_dtype, sm_count)


def _pick(
    family_configs: tuple[Config, ...], m: int, n: int, k: int, l: int, out_dtype: str, sm_count: int,
    alpha_per_column: bool,
) -> tuple[Config, str]:
    """The family model's config for a shape, and why."""
    rejected = []
    supported = []
    for config in family_configs:
        violation = config.supports(m, n, k, l, out_dtype, alpha_per_column)
        if violation is None:
            supported.append(config)
        else:
            rejected.append(f"{config.name}: {violation}")
    if not supported:
        raise ValueError(f"no config can run M={m} N={n} K={k} L={l} {out_dtype}: " + "; ".join(rejected))
    return supported[0].family_info.model_module().pick(tuple(supported), m, n, k, l, out_dtype, sm_count)


def pinned_config(name: str, sm_major: Optional[int] = None, *, split_k: Optional[int] = None, k: int = 0) -> Config:
    """The config table's row for `config=`, checked the same on every device: on a GPU of compute
    capability `sm_major`.x it must belong to that GPU's family, and a pinned `split_k` must be within
    what it splits K into. The one check of a pinned config (the resolver and the CPU path use it)."""
    if not isinstance(name, str):
        raise TypeError(f"config must be None or a config name (str), got {type(name).__name__}")
    table = _table()
    try:
        config = table.by_name(name)
    except KeyError:
        known = ", ".join(c.name for c in table.configs)
        raise ValueError(f"config={name!r} is not in the config table; it has: {known}") from None
    if sm_major is not None and config.sm_major != sm_major:
        family = ", ".join(c.name for c in table.configs if c.sm_major == sm_major) or "none"
        raise ValueError(
            f"config={name!r} is a {config.family} kernel (compute capability {config.sm_major}.x) and this GPU has "
            f"compute capability {sm_major}.x; its configs are: {family}"
        )
    if split_k is not None:
        _check_split(config, split_k, k)
    return config


def _check_split(config: Config, split_k: int, k: int) -> None:
    violation = config.split_violation(split_k, k)
    if violation is not None:
        raise ValueError(violation)


def _from_tuned_table(
    m: int, n: int, k: int, l: int, out_dtype: str, sm_major: int, gpu_name: Optional[str], tables: tuple[Path, ...],
    format: str, alpha_per_column: bool,
) -> Optional[Resolution]:
    if gpu_name is None or not tables:
        return None
    hit = _tuned_entries(gpu_name, tables).get((m_bucket(m), n, k, l, out_dtype, format))
    if hit is None:
        return None
    best, source = hit
    try:
        config = _table().by_name(best["config"])
    except KeyError:
        return None  # a table from an older build: the model decides
    split_k = int(best.get("split_k", 1))
    if (config.sm_major != sm_major or config.format != format
            or config.supports(m, n, k, l, out_dtype, alpha_per_column) is not None):
        return None  # a config of another family or format, or one that cannot run the call: the model decides
    if not 1 <= split_k <= config.max_split_k(k):
        return None
    reason = (
        f"M={m} N={n} K={k} L={l} {out_dtype} -> {config.name}, split_k={split_k}: tuned table {source}, "
        f"measured {best['us']:.2f} us at M bucket {m_bucket(m)}"
    )
    return Resolution(config=config, split_k=split_k, reason=reason)


@lru_cache(maxsize=None)
def _resolve(
    m: int,
    n: int,
    k: int,
    l: int,
    out_dtype: str,
    sm_major: int,
    sm_count: int,
    pinned: Optional[str],
    gpu_name: Optional[str] = None,
    tables: tuple[Path, ...] = (),
    format: str = "nvfp4",
    alpha_per_column: bool = False,
) -> Resolution:
    family_rows = [c for c in _table().configs if c.sm_major == sm_major]
    if not family_rows:
        covered = ", ".join(f"{f.name} (compute capability {f.sm_major}.x)" for f in families.FAMILIES)
        raise UnsupportedDeviceError(
            f"no kernel family for compute capability {sm_major}.x; the config table covers {covered}"
        )
    if not any(c.format == format for c in family_rows):
        raise ValueError(f"the config table has no {format} configs for compute capability {sm_major}.x")
    if pinned is not None:
        config = pinned_config(pinned, sm_major)
        if config.format != format:
            raise ValueError(f"config {pinned!r} runs the {config.format} format; this call is {format}")
        violation = config.supports(m, n, k, l, out_dtype, alpha_per_column)
        if violation is not None:
            raise ValueError(f"config {pinned!r} cannot run M={m} N={n} K={k} L={l} {out_dtype}: {violation}")
        why = "pinned by the caller"
    else:
        tuned = _from_tuned_table(m, n, k, l, out_dtype, sm_major, gpu_name, tables, format, alpha_per_column)
        if tuned is not None:
            return tuned
        family_configs = candidates(sm_major, format, alpha_per_column)
        if not family_configs:  # the format has rows, none for this kind of alpha (in practice: a vector one)
            raise ValueError(
                f"no {format} config of the {family_rows[0].family} family takes this alpha; {per_column_alpha_home()}"
            )
        config, why = _pick(family_configs, m, n, k, l, out_dtype, sm_count, alpha_per_column)
    split_k, split_why = _split_for(config, m, n, k, l, out_dtype, sm_count)
    reason = f"M={m} N={n} K={k} L={l} {out_dtype} -> {config.name}, {split_why}: {why}; {config.why}"
    return Resolution(config=config, split_k=split_k, reason=reason)


@lru_cache(maxsize=None)
def _log_once(resolution: Resolution) -> None:
    print(f"[nvfp4_gemm] {resolution.reason}", flush=True)
