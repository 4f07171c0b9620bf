"""Device timing shared by the benchmarks and `python -m nvfp4_gemm`: CUDA events around each call,
the L2 cache flushed before every timed call, warm-up first, the median reported.

`time_kernels` measures what events cannot resolve for calls of a few microseconds: the span of the
call's own kernels on the device (first kernel start to last kernel end, from the CUDA profiler's
activity records), without the event and launch latency that events add to every call; `kernel_breakdown`
lists one call's device time by kernel name (e.g. a decode step: what share its GEMMs are).

Two flushes (`NVFP4_GEMM_L2_FLUSH`, read on each flush's creation). "dirty", the default and the flush of every
number in the perf notes that names none, zeroes a buffer larger than the L2 and leaves the L2 full of its
dirty lines: the timed call's reads evict them, and their write-backs share the DRAM with its reads. A call
that streams at the DRAM's rate pays them (H200, cuBLAS bf16 1x7168x7168: 39 us against 31.5 us after a clean
flush), one that runs below it mostly hides them (the W4A16 layer on the same shape: 18.7 against 17.5 us), so
this flush flatters the slower-streaming side of a comparison. "clean" reads the buffer back after zeroing
it: the L2 holds clean lines, nearer the state inside a model's chain of layers (the W4A16 layer per layer on
an H200: 1.90x bf16 after the memset, 1.71x after a clean flush, 1.77x in a chain; perf notes "Which L2 flush")."""

from __future__ import annotations

import math
import os
import statistics
from dataclasses import dataclass
from typing import Callable, Optional

import torch

__all__ = ["Timing", "KernelTotal", "time_cuda", "time_kernels", "kernel_breakdown", "geomean", "l2_flush_buffer",
           "l2_flush", "l2_flush_kind", "L2_FLUSH_KINDS"]

# Larger than the L2 of current GPUs (tens of MB on H100/H200/B200): zeroing it evicts
# the previous call's operands so each timed call reads them from device memory.
_FLUSH_BYTES = 256 * 1024 * 1024
L2_FLUSH_KINDS = ("dirty", "clean")


@dataclass(frozen=True)
class Timing:
    median_us: float
    min_us: float
    samples: int


def l2_flush_buffer() -> torch.Tensor:
    """A device buffer larger than the L2: `zero_()` on it evicts earlier operands from the L2."""
    return torch.empty(_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")


def _checked_flush_kind(kind: str, source: str) -> str:
    if kind not in L2_FLUSH_KINDS:
        raise ValueError(f"{source} must be one of {', '.join(L2_FLUSH_KINDS)}; got {kind!r}")
    return kind


def l2_flush_kind() -> str:
    """The flush the timing functions use: `NVFP4_GEMM_L2_FLUSH` ("dirty" when unset)."""
    return _checked_flush_kind(os.environ.get("NVFP4_GEMM_L2_FLUSH", "dirty"), "NVFP4_GEMM_L2_FLUSH")


def l2_flush(kind: Optional[str] = None) -> Callable[[], None]:
    """A call that evicts earlier operands from the L2 on the current stream: "dirty" zeroes a buffer larger
    than the L2; "clean" then reads it back, leaving the L2 holding clean lines. `kind` defaults to
    `l2_flush_kind()`."""
    kind = l2_flush_kind() if kind is None else _checked_flush_kind(kind, "kind")
    buffer = l2_flush_buffer()
    if kind == "dirty":
        return buffer.zero_

    def clean() -> None:
        buffer.zero_()
        buffer.max()  # reads the 256 MB: every dirty line written back, the L2 left with clean ones

    return clean


def time_cuda(fn: Callable[[], object], *, warmup: int = 10, iters: int = 100, flush_l2: bool = True) -> Timing:
    """Median device time of `fn()` in microseconds over `iters` calls on the current stream, the L2
    flushed (`l2_flush()`) before each unless `flush_l2` is False."""
    flush = l2_flush() if flush_l2 else None
    for _ in range(warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for start, end in zip(starts, ends):
        if flush is not None:
            flush()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    times = [start.elapsed_time(end) * 1000.0 for start, end in zip(starts, ends)]
    return Timing(median_us=statistics.median(times), min_us=min(times), samples=len(times))


def _device_activities(fn: Callable[[], object], repeats: int) -> list:
    """The CUDA device activities (kernels, memsets, copies) of `repeats` calls of fn, in start order."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(repeats):
            fn()
        torch.cuda.synchronize()
    found = [e for e in prof.events() if e.device_type == DeviceType.CUDA]
    return sorted(found, key=lambda e: e.time_range.start)


def time_kernels(fn: Callable[[], object], *, warmup: int = 10, iters: int = 50) -> Timing:
    """Median device span of `fn()` in microseconds: from the start of its first kernel to the end of
    its last, read from the profiler's device activity records, the L2 flushed (`l2_flush()`; the device
    idle) before every call. The call must launch the same number of device activities every time, none
    of them named like the flush's own (a fill; for the clean flush also a max reduction)."""
    flush = l2_flush()
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    flush_names = {e.name for e in _device_activities(flush, 1)}
    per_call = [e for e in _device_activities(fn, 1) if e.name not in flush_names]
    if not per_call:
        raise RuntimeError("time_kernels: fn launched no device work")

    def flushed_call():
        flush()
        torch.cuda.synchronize()
        fn()

    timed = [e for e in _device_activities(flushed_call, iters) if e.name not in flush_names]
    if len(timed) != iters * len(per_call):
        raise RuntimeError(f"time_kernels: expected {len(per_call)} device activities per call, "
                           f"found {len(timed)} over {iters} calls")
    spans = []
    for i in range(iters):
        call = timed[i * len(per_call):(i + 1) * len(per_call)]
        spans.append(max(e.time_range.end for e in call) - call[0].time_range.start)
    return Timing(median_us=statistics.median(spans), min_us=min(spans), samples=len(spans))


@dataclass(frozen=True)
class KernelTotal:
    name: str
    total_us: float
    count: int


def kernel_breakdown(fn: Callable[[], object]) -> tuple[float, list[KernelTotal]]:
    """Where one call of `fn` spends its device time: (span in us, first activity start to last end; the
    device activities by name, the most total time first). Any L2 state; `fn` is called once, under the
    profiler (a CUDA-graph replay is counted kernel by kernel)."""
    activities = _device_activities(fn, 1)
    if not activities:
        raise RuntimeError("kernel_breakdown: fn launched no device work")
    span = max(e.time_range.end for e in activities) - activities[0].time_range.start
    totals: dict[str, list] = {}
    for e in activities:
        entry = totals.setdefault(e.name, [0.0, 0])
        entry[0] += e.time_range.end - e.time_range.start
        entry[1] += 1
    rows = [KernelTotal(name, us, count) for name, (us, count) in totals.items()]
    return span, sorted(rows, key=lambda r: r.total_us, reverse=True)


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))
