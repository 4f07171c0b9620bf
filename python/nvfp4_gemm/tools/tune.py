"""`python -m nvfp4_gemm tune`: measure every valid (config, split-K) of one GEMM format on the present GPU
and write the tuned table the resolver reads (each entry names its format: the resolver applies it to
calls of that format only).

Each candidate is verified against the exact reference before it is timed, and a candidate that
fails verification is reported and never chosen: tuning changes speed, never results.
"""

from __future__ import annotations

import datetime
import json
import subprocess
from pathlib import Path
from typing import Callable, Optional

import torch

from .. import __version__
from .._checks import OUT_DTYPE_NAMES
from ..ops import gemm
from ..resolver import TUNED_TABLE_SCHEMA, candidates, m_bucket
from .testing import check_against_reference, fp32_roundings, random_operands
from .timing import l2_flush_kind, time_cuda

__all__ = ["tune", "environment", "verify_and_time"]


def environment() -> dict:
    properties = torch.cuda.get_device_properties(torch.cuda.current_device())
    try:
        driver = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, check=True,
        ).stdout.strip().splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        driver = "unknown"
    return {
        "gpu": properties.name,
        "capability": [properties.major, properties.minor],
        "sm_count": properties.multi_processor_count,
        "driver": driver,
        "cuda": torch.version.cuda,
        "torch": torch.__version__,
        "package": __version__,
        "date": datetime.date.today().isoformat(),
        "l2_flush": l2_flush_kind(),
    }


def verify_and_time(ops, out: torch.Tensor, config: str, split_k: int, *, iters: int = 100) -> tuple[Optional[float], str]:
    """Run one (config, split_k) into `out` (poisoned first), verify it against the exact reference,
    and time it (median us, L2 flushed) only if it passed: (us or None, the verification summary)."""
    k = ops.b.shape[-1] * 2  # b holds packed FP4 in every format (a may hold FP8 or 16-bit values)
    out.fill_(float("nan"))
    gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out, config=config, split_k=split_k)
    passed, summary = check_against_reference(out, ops, roundings=fp32_roundings(k))
    if not passed:
        return None, summary
    timing = time_cuda(lambda: gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out, config=config, split_k=split_k),
                       iters=iters)
    return timing.median_us, summary


def tune(
    shapes: list[tuple[int, int, int]],
    out_dtype: torch.dtype = torch.float16,
    *,
    iters: int = 50,
    progress: Callable[[str], None] = print,
    format: str = "nvfp4",
) -> dict:
    """Time every candidate of the GEMM format `format` for every (m, n, k) on operands of that format and
    return the tuned table (a JSON-able dict)."""
    env = environment()
    major = env["capability"][0]
    dtype_name = OUT_DTYPE_NAMES[out_dtype]
    entries = []
    for index, (m, n, k) in enumerate(shapes):
        ops = random_operands(m, n, k, seed=1000 + index, device="cuda", format=format)
        out = torch.empty((m, n), dtype=out_dtype, device=ops.a.device)
        pairs = [
            (config, split)
            for config in candidates(major, format)
            if config.supports(m, n, k, 1, dtype_name) is None
            for split in config.split_options(k)
        ]
        measured = []
        for number, (config, split) in enumerate(pairs, start=1):
            us, summary = verify_and_time(ops, out, config.name, split, iters=iters)
            if us is None:
                progress(f"FAILED verification: {m}x{n}x{k} {config.name} split_k={split} ({summary}); not a candidate")
                continue
            measured.append({"config": config.name, "split_k": split, "us": round(us, 3)})
            progress(f"  [{index + 1}/{len(shapes)} {m}x{n}x{k}] {number}/{len(pairs)} {config.name} split_k={split}: {us:.2f} us")
        if not measured:
            raise RuntimeError(f"no candidate passed verification for {m}x{n}x{k}")
        best = min(measured, key=lambda c: c["us"])
        progress(f"{m}x{n}x{k}: best {best['config']} split_k={best['split_k']} {best['us']:.2f} us")
        entries.append(
            {"m_bucket": m_bucket(m), "measured_m": m, "n": n, "k": k, "l": 1, "out_dtype": dtype_name,
             "format": format, "best": best, "candidates": measured}
        )
    return {"schema": TUNED_TABLE_SCHEMA, **env, "entries": entries}


def default_table_name(gpu: str, format: str = "nvfp4") -> str:
    """<gpu>.json for NVFP4, <gpu>_<format>.json for another format: tuning one format never overwrites
    another's table (the resolver reads every table of the folder)."""
    stem = "".join(c if c.isalnum() else "_" for c in gpu.lower()).strip("_")
    return stem + ("" if format == "nvfp4" else f"_{format}") + ".json"


def write_table(table: dict, path: Optional[str], format: str = "nvfp4") -> Path:
    target = Path(path) if path else Path(default_table_name(table["gpu"], format))
    target.write_text(json.dumps(table, indent=1) + "\n")
    return target
