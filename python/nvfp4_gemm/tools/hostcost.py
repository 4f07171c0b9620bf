"""Host cost of one eager call, measured next to the cost of launching any PyTorch op on the host.

Method (issue 13): `calls` back-to-back calls between two `time.perf_counter` readings, the GPU
drained before each burst; per call = burst time / calls; the median of `bursts` bursts after one
warm-up burst. The floor is `tiny.add_(1)` on a 16-element tensor.

The sm100 rows call `_C.Kernel.prepare_only`: everything a launch does except the launch itself
(and the kernel's one-time shared-memory attribute, which needs a GPU the kernel runs on), so they
run on any GPU with a driver, a Hopper included, when the build carries the sm100 family. They
show the cost with the same operand addresses on every call, with the 50 address sets a GPU MODE
run cycles through (parameters cached per set), and with addresses never seen before (kernel
parameters, i.e. TMA descriptors, built on every call).
"""

from __future__ import annotations

import itertools
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from .. import _C, families, formats
from .harness import HARNESS_INPUTS, generate_input
from .testing import random_operands

__all__ = ["HostCost", "burst_us", "floor_call", "eager_calls", "sm100_prepare", "format_table", "SM100_PREPARE_CASES"]

TINY = (16, 64, 128)  # m, n, k: a GEMM whose device time hides nothing of the host's
# (config, split_k): the model's choice for the ranked shapes, and a stream-K split that clears
# its workspace before every launch
SM100_PREPARE_CASES = (("sm100_2sm_256x128x256_c2x1", 1), ("sm100_1sm_128x128x256_c1x1_streamk", 2))
SM100_PREPARE_SHAPE = (128, 7168, 2048)
_ADDRESS_STEP = 256  # bytes between address sets inside one buffer (TMA wants 16-byte alignment)


@dataclass(frozen=True)
class HostCost:
    name: str
    us: float  # host time per call, median of the bursts
    detail: str = ""


def burst_us(fn: Callable[[], object], *, calls: int = 200, bursts: int = 9) -> float:
    """Median over `bursts` of the host time per call of `calls` back-to-back calls, in us."""
    samples = []
    for _ in range(bursts + 1):  # the first burst warms up
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    torch.cuda.synchronize()
    return statistics.median(samples[1:])


def floor_call(*, calls: int = 200, bursts: int = 9) -> HostCost:
    """The floor: launching any PyTorch op (`tiny.add_(1)`), on any CUDA GPU."""
    tiny = torch.zeros(16, device="cuda")
    return HostCost("tiny.add_(1) (floor)", burst_us(lambda: tiny.add_(1), calls=calls, bursts=bursts),
                    "launching any PyTorch op")


def eager_calls(*, calls: int = 200, bursts: int = 9) -> list[HostCost]:
    """Every eager entry point on a tiny GEMM (needs a GPU this wheel has kernels for)."""
    from .. import gemm
    from .gpumode import custom_kernel

    m, n, k = TINY
    ops = random_operands(m, n, k, seed=0, device="cuda")
    out = torch.empty(m, n, dtype=torch.float16, device="cuda")
    data, _ = generate_input(m, n, k, 1, seed=0, device="cuda")
    op = torch.ops.nvfp4.gemm
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out)  # the plan exists before capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out)
    torch.cuda.synchronize()
    entries = [
        ("nvfp4_gemm.gemm(..., out=out)", lambda: gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out), ""),
        ("nvfp4_gemm.gemm(...)", lambda: gemm(ops.a, ops.b, ops.a_scale, ops.b_scale), "allocates out"),
        ("torch.ops.nvfp4.gemm(...)", lambda: op(ops.a, ops.b, ops.a_scale, ops.b_scale), "dispatcher"),
        ("gpumode.custom_kernel(data)", lambda: custom_kernel(data), "the harness tuple"),
        ("CUDA graph replay", graph.replay, "one captured gemm(out=)"),
    ]
    family = families.for_sm_major(torch.cuda.get_device_capability()[0])
    entries += _layer_calls(m, n, k, weight_only="bf16xnvfp4" in family.formats)
    return [HostCost(name, burst_us(fn, calls=calls, bursts=bursts), detail) for name, fn, detail in entries]


def _layer_calls(m: int, n: int, k: int, weight_only: bool) -> list:
    """The quantize op and the layers' forwards (what a quantized model calls per layer), on bf16 x, beside the
    bf16 `nn.Linear` they replace."""
    from ..nn import NVFP4Linear
    from ..quantization import quantize as quantize_api

    x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    linear = torch.nn.Linear(k, n, bias=False, dtype=torch.bfloat16, device="cuda")
    w4a4 = NVFP4Linear.from_linear(linear, activations="nvfp4")
    quantize = torch.ops.nvfp4.quantize
    entries = [
        ("nn.Linear forward (bf16)", lambda: linear(x), "the layer NVFP4Linear replaces (cuBLAS)"),
        ("torch.ops.nvfp4.quantize(x)", lambda: quantize(x), "dynamic global scale"),
        ("nvfp4_gemm.quantize(x)", lambda: quantize_api(x), "the API over the op: Quantized"),
        ("NVFP4Linear W4A4 forward", lambda: w4a4(x), "quantize + gemm ops"),
    ]
    if weight_only:
        w4a16 = NVFP4Linear.from_linear(linear, activations="bf16")
        entries.append(("NVFP4Linear W4A16 forward", lambda: w4a16(x), "the gemm op, a_scale None"))
    return entries


def sm100_prepare(
    *, calls: int = 200, bursts: int = 9, cases=SM100_PREPARE_CASES, shape=SM100_PREPARE_SHAPE
) -> list[HostCost]:
    """Host cost of preparing an sm100 launch (`prepare_only`) per call; a Blackwell GPU (the hook refuses
    other families: on an H200 the driver refuses to encode the sm100 kernels' FP4 TMA descriptors). Elsewhere:
    no rows."""
    m, n, k = shape
    device = torch.cuda.current_device()
    if torch.cuda.get_device_capability(device)[0] != 10:
        return []
    stream = torch.cuda.current_stream(device).cuda_stream
    capacity = _C.HostPlanProbe.params_capacity
    fresh_sets = 4 * capacity  # a cycle longer than the cache: every call meets addresses it does not hold
    sizes = (m * k // 2, n * k // 2, formats.blocked_scale_numel(m, k), formats.blocked_scale_numel(n, k), 2 * m * n)
    buffers = [torch.empty(size + _ADDRESS_STEP * fresh_sets, dtype=torch.uint8, device="cuda") for size in sizes]
    address_sets = [tuple(t.data_ptr() + _ADDRESS_STEP * i for t in buffers) for i in range(fresh_sets)]
    rows = []
    for config, split_k in cases:
        kernel = _C.lookup(config, "float16")
        workspace_bytes = kernel.workspace_bytes(m, n, k, 1, split_k, device)
        workspace = torch.empty(max(workspace_bytes, 1), dtype=torch.uint8, device="cuda")

        def prepare(addresses, on_stream=stream):
            kernel.prepare_only(*addresses, 0, m, n, k, 1, split_k, workspace.data_ptr(), workspace_bytes, 0, 0,
                                device, on_stream)

        label = f"sm100 prepare {config} split_k={split_k}"
        clears = ", workspace cleared every call" if workspace_bytes else ""
        first = []
        for _ in range(5):  # a new stream is a new plan: arguments, can_implement, sizes, first parameters
            new_stream = torch.cuda.Stream()
            start = time.perf_counter()
            prepare(address_sets[0], new_stream.cuda_stream)
            first.append((time.perf_counter() - start) * 1e6)
        torch.cuda.synchronize()
        rows.append(HostCost(f"{label}, first call of a plan", statistics.median(first), "plan made, parameters built"))
        for name, count in (("same addresses", 1), (f"{HARNESS_INPUTS} address sets in turn", HARNESS_INPUTS),
                            ("new addresses every call", fresh_sets)):
            cycle = itertools.cycle(address_sets[:count])
            before = kernel.plan_counters(m, n, k, 1, split_k, device, stream) or {"calls": 0, "params_builds": 0}
            us = burst_us(lambda: prepare(next(cycle)), calls=calls, bursts=bursts)
            after = kernel.plan_counters(m, n, k, 1, split_k, device, stream)
            built = (after["params_builds"] - before["params_builds"]) / (after["calls"] - before["calls"])
            rows.append(HostCost(f"{label}, {name}", us, f"parameters built on {built:.0%} of calls{clears}"))
    return rows


def format_table(rows: list[HostCost], floor_us: Optional[float] = None) -> str:
    """Markdown table of host costs, with the margin above the floor when it is known."""
    lines = ["| call | host us per call | above the floor | notes |", "| --- | --- | --- | --- |"]
    for row in rows:
        above = "-" if floor_us is None or "(floor)" in row.name else f"{row.us - floor_us:+.1f}"
        lines.append(f"| {row.name} | {row.us:.1f} | {above} | {row.detail} |")
    return "\n".join(lines)
