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
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional, Union

import torch

from . import sm100_model
from ._checks import OUT_DTYPE_NAMES
from .configs import FAMILY_SM_MAJOR, Config, load_table

__all__ = ["Resolution", "UnsupportedDeviceError", "candidates", "m_bucket", "resolve", "tuned_tables"]

TUNED_TABLE_SCHEMA = 1

# The family a device without an explicit one (device=None) is modelled on: the B200.
_DEFAULT_SM_MAJOR = 10
# Multiprocessors assumed when no device is given: B200 (148) and H100/H200 SXM (132), per NVIDIA's
# datasheets; a real device's own count replaces these.
_MODEL_SM_COUNT = {10: 148, 9: 132}

# sm90 direct decode kernel (csrc/include/nvfp4_gemm/sm90/direct_gemm.cuh): __launch_bounds__(256, 2),
# 64 KB of shared memory -> 2 resident CTAs per SM; a split should fill its loads in flight, so it gets
# at least 4 K chunks of 64. The split fills the SMs' CTA slots.
_SM90_DIRECT_CTAS_PER_SM = 2
_SM90_MIN_CHUNKS_PER_SPLIT = 4
# sm90 wgmma kernel (wgmma_gemm.cuh, one CTA per SM): a cost model fitted by
# benchmarks/fit_sm90_model.py to every candidate (5 tiles x splits, 375 timings) that the Hopper sweep
# timed on the H200 on 2026-11-23 (docs/h200-2026-11-23/sweep.json, benchmarks/sweep_hopper.py):
#   us = fixed[tile] + per_stage[tile] * waves * ceil(stages / split)
#        + (split > 1) * (split_fixed + split_reduction * (split - 1) * M * N / 1e6),
# waves = ceil(tiles * split / SMs). fixed: the prepass, launch, pipeline fill and epilogue; per_stage:
# one 128-K stage of one CTA; split_fixed: the split-K epilogue's partial tile round trip and counter;
# split_reduction: the partials the last split reads back. Its picks on that sweep are within 6.2 % of
# the measured best (fit_sm90_model.py prints each).
_SM90_WGMMA_COST = {
    (64, 128): (5.74, 0.6018),
    (64, 256): (8.82, 0.9805),
    (128, 128): (6.5, 0.8065),
    (128, 256): (12.99, 1.4295),
    (256, 128): (8.4, 1.411),
}
_SM90_SPLIT_FIXED_US = 7.37
_SM90_SPLIT_REDUCTION_US_PER_MELEMENT = 6.09
_SM90_MAX_SPLIT = 16


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


def candidates(sm_major: int = _DEFAULT_SM_MAJOR) -> tuple[Config, ...]:
    """The config table's rows for a compute-capability major, in table order."""
    return tuple(c for c in _table().configs if c.sm_major == sm_major)


def _device_facts(device: Optional[Union[torch.device, str, int]]) -> tuple[int, int, Optional[str]]:
    """(compute capability major, multiprocessor count, name) of `device`, or of the B200 model."""
    if device is None:
        return _DEFAULT_SM_MAJOR, _MODEL_SM_COUNT[_DEFAULT_SM_MAJOR], None
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
    """(m bucket, n, k, l, out dtype) -> (best entry, source) from tables measured on `gpu_name`."""
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
            key = (entry["m_bucket"], entry["n"], entry["k"], entry["l"], entry["out_dtype"])
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
) -> Union[Config, Resolution]:
    """The config that runs (m, n, k, l) with `out_dtype` output on `device`.

    `device=None` resolves for a B200-class GPU (compute capability 10.x) without touching CUDA.
    With `explain=True` returns a `Resolution` (config, split-K count and a sentence saying why).
    `config` pins the config by name; the split-K count is still chosen for it.
    """
    sm_major, sm_count, gpu_name = _device_facts(device)
    tables = tuple(tuned_tables()) if gpu_name is not None else ()
    resolution = _resolve(
        m, n, k, l, OUT_DTYPE_NAMES.get(out_dtype, str(out_dtype)), sm_major, sm_count, config, gpu_name, tables
    )
    if os.environ.get("NVFP4_GEMM_LOG_CONFIG") == "1":
        _log_once(resolution)
    return resolution if explain else resolution.config


def _sm90_direct_split(config: Config, m: int, n: int, k: int, l: int, sm_count: int) -> tuple[int, str]:
    tiles = -(-n // config.tile[1]) * -(-m // config.tile[0]) * l
    chunks = -(-k // config.tile[2])
    slots = _SM90_DIRECT_CTAS_PER_SM * sm_count
    split_k = max(1, min(chunks // _SM90_MIN_CHUNKS_PER_SPLIT, slots // tiles))
    return split_k, (
        f"split_k={split_k}: {tiles} output tiles on {sm_count} SMs x {_SM90_DIRECT_CTAS_PER_SM} CTAs, "
        f"{chunks} K chunks (>= {_SM90_MIN_CHUNKS_PER_SPLIT} per split)"
    )


def sm90_wgmma_terms(
    config: Config, m: int, n: int, k: int, l: int, split_k: int, sm_count: int
) -> tuple[float, float, float]:
    """The sm90 wgmma cost model's variables for one (config, split_k): (waves x stages per CTA,
    1 if split else 0, (split - 1) x M x N / 1e6). The model is linear in them; the fit reads them too."""
    tiles = -(-n // config.tile[1]) * -(-m // config.tile[0]) * l
    waves = -(-tiles * split_k // sm_count)
    stages = -(-k // config.tile[2])
    return waves * -(-stages // split_k), float(split_k > 1), (split_k - 1) * m * n * l / 1e6


def sm90_wgmma_predict_us(config: Config, m: int, n: int, k: int, l: int, split_k: int, sm_count: int) -> float:
    """The fitted sm90 wgmma cost model's time for one (config, split_k) (see _SM90_WGMMA_COST)."""
    fixed, per_stage = _SM90_WGMMA_COST[(config.tile[0], config.tile[1])]
    stage_term, split_term, reduction_term = sm90_wgmma_terms(config, m, n, k, l, split_k, sm_count)
    return (fixed + per_stage * stage_term + _SM90_SPLIT_FIXED_US * split_term
            + _SM90_SPLIT_REDUCTION_US_PER_MELEMENT * reduction_term)


def _sm90_wgmma_best_split(config: Config, m: int, n: int, k: int, l: int, sm_count: int) -> tuple[int, float]:
    splits = [s for s in range(1, _SM90_MAX_SPLIT + 1) if s <= config.max_split_k(k)]
    return min(((s, sm90_wgmma_predict_us(config, m, n, k, l, s, sm_count)) for s in splits), key=lambda sp: sp[1])


def _split_for(config: Config, m: int, n: int, k: int, l: int, out_dtype: str, sm_count: int) -> tuple[int, str]:
    """The split-K count a config runs a shape with, by its family's model, and why."""
    if not config.split_k:
        return 1, "no split-K"
    if config.family == "sm90":
        if config.mma == "direct":
            return _sm90_direct_split(config, m, n, k, l, sm_count)
        split_k, us = _sm90_wgmma_best_split(config, m, n, k, l, sm_count)
        return split_k, f"split_k={split_k} (sm90 model's best for this config: {us:.1f} us on {sm_count} SMs)"
    best = sm100_model.rank((config,), m, n, k, l, out_dtype, sm100_model.for_device(sm_count))[0]
    return best.split_k, f"split_k={best.split_k} (B200 model's best for this config)"


def _pick(
    family_configs: tuple[Config, ...], m: int, n: int, k: int, l: int, out_dtype: str, sm_count: int
) -> tuple[Config, str]:
    """The family model's config for a shape, and why."""
    rejected = []
    supported = []
    for config in family_configs:
        violation = config.supports(m, n, k, l, out_dtype)
        if violation is None:
            supported.append(config)
        else:
            rejected.append(f"{config.name}: {violation}")
    if not supported:
        raise ValueError(f"no config can run M={m} N={n} K={k} L={l} {out_dtype}: " + "; ".join(rejected))
    if supported[0].family == "sm90":
        # Decode (M <= 16): the direct kernel, measured on the H200 on 2026-11-22 (docs/perf_notes.md
        # "Hopper v5"); from M = 17 up the wgmma configs, ranked by the fitted cost model.
        direct = [c for c in supported if c.mma == "direct" and m <= c.tile[0]]
        if direct:
            return direct[0], f"direct decode kernel: M = {m} <= {direct[0].tile[0]} tokens"
        ranked = sorted(
            ((c, *_sm90_wgmma_best_split(c, m, n, k, l, sm_count)) for c in supported if c.mma == "wgmma"),
            key=lambda entry: entry[2],
        )
        choice, split_k, us = ranked[0]
        why = f"sm90 model ({sm_count} SMs) predicts {us:.1f} us at split_k={split_k}"
        if len(ranked) > 1:
            why += f"; runner-up {ranked[1][0].name} split_k={ranked[1][1]} {ranked[1][2]:.1f} us"
        return choice, why
    # sm100: the analytic model (nvfp4_gemm/sm100_model.py, docs/b200_model.md) predicts every config
    # at its best split count; the fastest wins, table order breaks ties.
    machine = sm100_model.for_device(sm_count)
    ranking = sm100_model.rank(tuple(supported), m, n, k, l, out_dtype, machine)
    best = ranking[0]
    why = f"B200 model ({machine.sm_count} SMs) predicts {best.describe()}"
    if len(ranking) > 1:
        why += f"; runner-up {ranking[1].config.name} split_k={ranking[1].split_k} {ranking[1].us:.2f} us"
    return best.config, why


def _from_tuned_table(
    m: int, n: int, k: int, l: int, out_dtype: str, sm_major: int, gpu_name: Optional[str], tables: tuple[Path, ...]
) -> Optional[Resolution]:
    if gpu_name is None or not tables:
        return None
    hit = _tuned_entries(gpu_name, tables).get((m_bucket(m), n, k, l, out_dtype))
    if hit is None:
        return None
    best, source = hit
    try:
        config = _table().by_name(best["config"])
    except KeyError:
        return None  # a table from an older build: the model decides
    split_k = int(best.get("split_k", 1))
    if config.sm_major != sm_major or config.supports(m, n, k, l, out_dtype) is not None:
        return None
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
) -> Resolution:
    family_configs = candidates(sm_major)
    if not family_configs:
        families = ", ".join(f"{f} (compute capability {v}.x)" for f, v in FAMILY_SM_MAJOR.items())
        raise UnsupportedDeviceError(
            f"no kernel family for compute capability {sm_major}.x; the config table covers {families}"
        )
    if pinned is not None:
        config = _table().by_name(pinned)
        if config.sm_major != sm_major:
            raise ValueError(f"config {pinned!r} runs on compute capability {config.sm_major}.x, not {sm_major}.x")
        violation = config.supports(m, n, k, l, out_dtype)
        if violation is not None:
            raise ValueError(f"config {pinned!r} cannot run M={m} N={n} K={k} L={l} {out_dtype}: {violation}")
        why = "pinned by the caller"
    else:
        tuned = _from_tuned_table(m, n, k, l, out_dtype, sm_major, gpu_name, tables)
        if tuned is not None:
            return tuned
        config, why = _pick(family_configs, m, n, k, l, out_dtype, sm_count)
    split_k, split_why = _split_for(config, m, n, k, l, out_dtype, sm_count)
    reason = f"M={m} N={n} K={k} L={l} {out_dtype} -> {config.name}, {split_why}: {why}; {config.why}"
    return Resolution(config=config, split_k=split_k, reason=reason)


@lru_cache(maxsize=None)
def _log_once(resolution: Resolution) -> None:
    print(f"[nvfp4_gemm] {resolution.reason}", flush=True)
