"""Speed guard. pytest-benchmark's own statistics time each call on the host with a synchronize
after it (pedantic mode; the L2 flush and a synchronize run in the untimed setup), so they include
the launch and synchronize overhead (a few microseconds, stable from run to run: good for catching
regressions). `extra_info` carries the device time from CUDA events (nvfp4_gemm.timing), the
throughput, % of the memory floor and the chosen config: the numbers to quote. The GEMM calls take
operands of `--format` (conftest.py); the baselines those bench.baseline_format names for it.

    pytest benchmarks --benchmark-autosave                          # record a baseline
    pytest benchmarks --benchmark-compare --benchmark-compare-fail=median:5%   # fail on a >5 % regression
    pytest benchmarks --format mxfp4                                # MXFP4 x MXFP4 operands
"""

import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import bench
from nvfp4_gemm.__main__ import DECODE_SWEEP
from nvfp4_gemm.task_shapes import CORRECTNESS_SHAPES, RANKED_SHAPES
from nvfp4_gemm.testing import check_against_reference, random_operands
from nvfp4_gemm.timing import l2_flush, time_cuda

RANKED = [s[:3] for s in RANKED_SHAPES]
SHAPES = (
    [pytest.param(s, id=f"ranked-{s[0]}x{s[1]}x{s[2]}") for s in RANKED]
    + [pytest.param(s, id=f"decode-{s[0]}x{s[1]}x{s[2]}") for s in DECODE_SWEEP]
    + [pytest.param(s, id=f"correctness-{s[0]}x{s[1]}x{s[2]}") for s in CORRECTNESS_SHAPES]
)
_FLUSH = {}


def flush_l2():
    flush = _FLUSH.get("flush")
    if flush is None:
        flush = _FLUSH["flush"] = l2_flush()
    flush()
    torch.cuda.synchronize()


def timed(benchmark, fn, rounds=30):
    def call():
        fn()
        torch.cuda.synchronize()

    benchmark.pedantic(call, setup=flush_l2, rounds=rounds, iterations=1, warmup_rounds=3)


def operands(m, n, k, seed=0, format="nvfp4"):
    return random_operands(m, n, k, seed=seed, device="cuda", format=format)


@pytest.mark.parametrize("shape", SHAPES)
def test_nvfp4_gemm(benchmark, ceilings, shape, gemm_format):
    m, n, k = shape
    ops = operands(m, n, k, format=gemm_format)
    out = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    fn = lambda: nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out)  # noqa: E731
    fn()
    passed, summary = check_against_reference(out, ops, roundings=k // 16 + k // 128 + 2)
    assert passed, summary  # never time a wrong kernel
    device_us = time_cuda(fn).median_us
    resolution = nvfp4_gemm.resolve(m, n, k, 1, torch.float16, "cuda", explain=True, format=gemm_format)
    floor_us = bench.gemm_bytes(m, n, k, 1, gemm_format) / (ceilings.copy_tb_per_s * 1e12) * 1e6
    benchmark.extra_info.update(
        format=gemm_format,
        device_us=device_us,
        tb_per_s=bench.gemm_bytes(m, n, k, 1, gemm_format) / (device_us * 1e-6) / 1e12,
        pct_memory_floor=100 * floor_us / device_us,
        tflop_per_s=2.0 * m * n * k / (device_us * 1e-6) / 1e12,
        config=resolution.config.name,
        split_k=resolution.split_k,
        gpu=ceilings.device,
    )
    timed(benchmark, fn)


@pytest.mark.parametrize("name", bench.BASELINE_NAMES)
@pytest.mark.parametrize("shape", [pytest.param(s, id=f"ranked-{s[0]}x{s[1]}x{s[2]}") for s in RANKED])
def test_baseline(benchmark, ceilings, shape, name, gemm_format):
    m, n, k = shape
    theirs = bench.baseline_format(gemm_format)  # NVFP4 for every block-scaled format: one yardstick
    available = bench.baselines(operands(m, n, k, format=theirs))
    if name not in available:
        pytest.skip(f"{name} is not a baseline of {theirs} operands on {ceilings.device}")
    fn = available[name]
    benchmark.extra_info.update(device_us=time_cuda(fn).median_us, gpu=ceilings.device)
    timed(benchmark, fn)


TINY = (16, 64, 128)


def test_host_overhead_op(benchmark, gemm_format):
    """CPU time per eager torch.ops.nvfp4.gemm call (validation, dispatch, launch); target <= 8 us."""
    ops = operands(*TINY, format=gemm_format)
    op = torch.ops.nvfp4.gemm
    op(ops.a, ops.b, ops.a_scale, ops.b_scale)
    benchmark(op, ops.a, ops.b, ops.a_scale, ops.b_scale)
    torch.cuda.synchronize()


# On Hopper TINY runs the direct kernel (one launch) and TINY_TWO_LAUNCHES the wgmma kernel after its
# token prepass (two launches, the second with programmatic dependent launch): their difference is
# the host cost of the prepass's launch.
TINY_TWO_LAUNCHES = (64, 64, 128)


@pytest.mark.parametrize("shape", [pytest.param(TINY, id="tiny"), pytest.param(TINY_TWO_LAUNCHES, id="tiny-m64")])
def test_host_overhead_api(benchmark, shape, gemm_format):
    """CPU time per eager nvfp4_gemm.gemm call into a preallocated out; target <= 5 us."""
    ops = operands(*shape, format=gemm_format)
    out = torch.empty(shape[0], shape[1], dtype=torch.float16, device="cuda")
    gemm = nvfp4_gemm.gemm
    gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out)
    benchmark.extra_info.update(config=nvfp4_gemm.resolve(*shape, 1, torch.float16, "cuda", format=gemm_format).name)
    benchmark(lambda: gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out))
    torch.cuda.synchronize()


@pytest.mark.parametrize("shape", [pytest.param(TINY, id="tiny"), pytest.param(RANKED[2], id="ranked-128x7168x2048")])
def test_cuda_graph_replay(benchmark, shape, gemm_format):
    """A captured CUDA graph of one call, replayed: no Python on the way (alpha stays on the device)."""
    m, n, k = shape
    ops = random_operands(m, n, k, seed=1, device="cuda", with_alpha=True, format=gemm_format)
    out = torch.empty(m, n, dtype=torch.float16, device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        for _ in range(3):  # warm-up on the capture stream: plans and workspace exist before capture
            nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out)
    out.fill_(float("nan"))
    graph.replay()
    passed, summary = check_against_reference(out, ops, roundings=k // 16 + k // 128 + 2)
    assert passed, summary
    benchmark.extra_info.update(device_us=time_cuda(graph.replay).median_us)
    timed(benchmark, graph.replay)
