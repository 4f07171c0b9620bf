"""Device timing shared by the benchmarks and `python -m nvfp4_gemm`: CUDA events around each call,
the L2 cache flushed before every timed call, warm-up first, the median reported."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Callable

import torch

__all__ = ["Timing", "time_cuda", "geomean", "l2_flush_buffer"]

# Larger than the L2 of current GPUs (tens of MB on H100/H200/B200): zeroing it evicts
# the previous call's operands so each timed call reads them from device memory.
_FLUSH_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Timing:
    median_us: float
    min_us: float
    samples: int


def l2_flush_buffer() -> torch.Tensor:
    """A device buffer larger than the L2: `zero_()` on it evicts earlier operands from the L2."""
    return torch.empty(_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")


def time_cuda(fn: Callable[[], object], *, warmup: int = 10, iters: int = 100, flush_l2: bool = True) -> Timing:
    """Median device time of `fn()` in microseconds over `iters` calls on the current stream."""
    flush = l2_flush_buffer() if flush_l2 else None
    for _ in range(warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for start, end in zip(starts, ends):
        if flush is not None:
            flush.zero_()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    times = [start.elapsed_time(end) * 1000.0 for start, end in zip(starts, ends)]
    return Timing(median_us=statistics.median(times), min_us=min(times), samples=len(times))


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))
