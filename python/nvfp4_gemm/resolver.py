"""Shape -> config: which compiled kernel runs a problem on a device, and why.

Selection happens once per distinct (device, shape, dtype) and is cached by the caller (ops.py), so
it never runs on the hot path. The candidates are the config table's rows whose family matches the
device and whose validity predicate (`Config.supports`) accepts the problem.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Union

import torch

from ._checks import OUT_DTYPE_NAMES
from .configs import FAMILY_SM_MAJOR, Config, load_table

__all__ = ["Resolution", "UnsupportedDeviceError", "candidates", "resolve"]

# The family a device without an explicit one (device=None) is modelled on: the B200.
_DEFAULT_SM_MAJOR = 10


class UnsupportedDeviceError(RuntimeError):
    """The installed wheel carries no kernel for this GPU."""


@dataclass(frozen=True)
class Resolution:
    config: Config
    reason: str


@lru_cache(maxsize=None)
def _table():
    return load_table()


def candidates(sm_major: int = _DEFAULT_SM_MAJOR) -> tuple[Config, ...]:
    """The config table's rows for a compute-capability major, in table order."""
    return tuple(c for c in _table().configs if c.sm_major == sm_major)


def _sm_major(device: Optional[Union[torch.device, str, int]]) -> int:
    if device is None:
        return _DEFAULT_SM_MAJOR
    device = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"device must be a CUDA device (or None for the B200 model), got {device}")
    return torch.cuda.get_device_capability(device)[0]


def resolve(
    m: int,
    n: int,
    k: int,
    l: int = 1,
    out_dtype: torch.dtype = torch.float16,
    device: Optional[Union[torch.device, str, int]] = None,
    *,
    explain: bool = False,
) -> Union[Config, Resolution]:
    """The config that runs (m, n, k, l) with `out_dtype` output on `device`.

    `device=None` resolves for a B200-class GPU (compute capability 10.x) without touching CUDA.
    With `explain=True` returns a `Resolution` (config and a sentence saying why).
    """
    resolution = _resolve(m, n, k, l, OUT_DTYPE_NAMES.get(out_dtype, str(out_dtype)), _sm_major(device))
    if os.environ.get("NVFP4_GEMM_LOG_CONFIG") == "1":
        _log_once(m, n, k, l, out_dtype, resolution)
    return resolution if explain else resolution.config


@lru_cache(maxsize=None)
def _resolve(m: int, n: int, k: int, l: int, out_dtype: str, sm_major: int) -> Resolution:
    family_configs = candidates(sm_major)
    if not family_configs:
        families = ", ".join(f"{f} (compute capability {v}.x)" for f, v in FAMILY_SM_MAJOR.items())
        raise UnsupportedDeviceError(
            f"no kernel family for compute capability {sm_major}.x; the config table covers {families}"
        )
    rejected = []
    for config in family_configs:
        violation = config.supports(m, n, k, l, out_dtype)
        if violation is None:
            others = len(family_configs) - 1
            why = (
                f"{config.name}: the only sm{sm_major}x config in the table"
                if others == 0
                else f"{config.name}: first config in table order that supports the shape ({len(rejected)} rejected)"
            )
            return Resolution(config=config, reason=f"M={m} N={n} K={k} L={l} {out_dtype} -> {why}; {config.why}")
        rejected.append(f"{config.name}: {violation}")
    raise ValueError(f"no config can run M={m} N={n} K={k} L={l} {out_dtype}: " + "; ".join(rejected))


@lru_cache(maxsize=None)
def _log_once(m: int, n: int, k: int, l: int, out_dtype: torch.dtype, resolution: Resolution) -> None:
    print(f"[nvfp4_gemm] {resolution.reason}", flush=True)
