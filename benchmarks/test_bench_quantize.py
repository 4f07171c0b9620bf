"""Quantize speed (needs a supported GPU; skipped elsewhere, see conftest.py). Device times from CUDA
events with the L2 flushed before each call (nvfp4_gemm.timing) are in `extra_info`, next to a torch
device-to-device copy of the same number of bytes timed in the same run:

- quantize bf16 (8192, 7168), static and dynamic global scale: bytes = read 2MK + write MK/2 + MK/16
  (the blocked scales); `pct_of_copy` = copy time / quantize time (targets: static >= 80 %, dynamic >= 60 %);
- the MX formats at the same size: bytes = read 2MK + write MK/2 (mxfp4) or MK (mxfp8) + MK/32;
- decode, M = 1..128 at K = 7168, dynamic (target <= 5 us device time) and static; MX at M = 1, 16, 128:
  the events' time (`device_us`, which carries the events' and launch latency: see the floor row) and
  the span of the call's kernels on the device (`kernel_span_us`, profiler activity records);
- NVFP4Linear (dynamic input scale) at M = 16 on the model layers: quantize + gemm next to the gemm alone
  on pre-quantized input (target: within 1.3x), eager and replayed from a CUDA graph.
Every timed quantize is first checked bit for bit against the CPU reference (the CPU op).
"""

import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import formats
from nvfp4_gemm.dtypes import operand_format
from nvfp4_gemm.nn import NVFP4Linear
from nvfp4_gemm.timing import time_cuda, time_kernels

from sweep_hopper import MODEL_LAYERS  # the Hopper v6 issue's model layers (N, K)
from test_bench_gemm import timed


def quantize_bytes(m: int, k: int, fmt: str = "nvfp4") -> int:
    """Bytes moved by quantizing bf16 (m, k): read x, write the codes and the blocked scales."""
    described = operand_format(fmt)
    return 2 * m * k + m * k // described.element.per_element + formats.blocked_scale_numel(m, k, fmt=described.block)


def verified_quantize(x, global_scale, fmt="nvfp4"):
    """The call to time, after checking its result against the reference (the CPU op) once."""
    got = nvfp4_gemm.quantize(x, global_scale, format=fmt)
    want = nvfp4_gemm.quantize(x.cpu(), None if global_scale is None else global_scale.cpu(), format=fmt)
    for g, w in zip(got[:2], want[:2]):
        assert torch.equal(g.cpu().view(torch.uint8), w.view(torch.uint8))
    out = got
    return lambda: nvfp4_gemm.quantize(x, global_scale, out=out, format=fmt)


def random_bf16(m, k, seed=0):
    return torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=torch.Generator("cuda").manual_seed(seed))


LARGE_M, LARGE_K = 8192, 7168


def time_against_copy(benchmark, fn, nbytes: int, label: str):
    """Time fn next to a device-to-device copy moving the same bytes (half read, half written)."""
    device_us = time_cuda(fn).median_us
    src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy_us = time_cuda(lambda: dst.copy_(src)).median_us
    benchmark.extra_info.update(
        device_us=device_us,
        copy_us=copy_us,
        tb_per_s=nbytes / (device_us * 1e-6) / 1e12,
        pct_of_copy=100.0 * copy_us / device_us,
        gpu=torch.cuda.get_device_name(),
    )
    print(f"\nquantize {label}: {device_us:.1f} us, copy of the same bytes {copy_us:.1f} us "
          f"({100.0 * copy_us / device_us:.0f} % of copy bandwidth)")
    timed(benchmark, fn)


def time_decode(benchmark, fn, label: str):
    device_us = time_cuda(fn).median_us
    kernel_span_us = time_kernels(fn).median_us
    benchmark.extra_info.update(device_us=device_us, kernel_span_us=kernel_span_us, gpu=torch.cuda.get_device_name())
    print(f"\nquantize {label}: {device_us:.2f} us by events, kernels span {kernel_span_us:.2f} us")
    timed(benchmark, fn)


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_quantize_large(benchmark, mode):
    m, k = LARGE_M, LARGE_K
    global_scale = torch.tensor([2688.0 / 6.0], device="cuda") if mode == "static" else None
    fn = verified_quantize(random_bf16(m, k), global_scale)
    time_against_copy(benchmark, fn, quantize_bytes(m, k), f"{mode} bf16 {m}x{k}")


@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp8"])
def test_quantize_mx_large(benchmark, fmt):
    m, k = LARGE_M, LARGE_K
    fn = verified_quantize(random_bf16(m, k), None, fmt)
    time_against_copy(benchmark, fn, quantize_bytes(m, k, fmt), f"{fmt} bf16 {m}x{k}")


@pytest.mark.parametrize("mode", ["dynamic", "static"])
@pytest.mark.parametrize("m", [1, 2, 4, 8, 16, 32, 64, 128])
def test_quantize_decode(benchmark, m, mode):
    k = 7168
    global_scale = torch.tensor([100.0], device="cuda") if mode == "static" else None
    fn = verified_quantize(random_bf16(m, k, seed=m), global_scale)
    time_decode(benchmark, fn, f"{mode} bf16 {m}x{k}")


def test_event_timing_floor_of_one_kernel(benchmark):
    """What the decode rows' method gives one trivial kernel (an add on 16 elements): their floor. Every
    decode quantize is one kernel (the dynamic scale's too, where one co-resident grid holds x), so its
    time is measured against this, not against zero."""
    tiny = torch.zeros(16, device="cuda")
    time_decode(benchmark, lambda: tiny.add_(1), "floor: one 16-element add")


@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp8"])
@pytest.mark.parametrize("m", [1, 16, 128])
def test_quantize_mx_decode(benchmark, m, fmt):
    k = 7168
    fn = verified_quantize(random_bf16(m, k, seed=m), None, fmt)
    time_decode(benchmark, fn, f"{fmt} bf16 {m}x{k}")


def graphed(fn):
    """fn captured once in a CUDA graph: the replay, which launches fn's kernels without the host."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()  # warm-up outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    return graph.replay


@pytest.mark.parametrize("n,k", MODEL_LAYERS)
def test_nvfp4_linear_m16_against_gemm_alone(benchmark, n, k):
    m = 16
    linear = torch.nn.Linear(k, n, bias=False, device="cuda", dtype=torch.bfloat16)
    layer = NVFP4Linear.from_linear(linear)
    x = random_bf16(m, k, seed=1)
    q = nvfp4_gemm.quantize(x, partner_global_scale=layer.weight_global_scale)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)

    def gemm_alone():
        nvfp4_gemm.gemm(q.data, layer.weight, q.scale, layer.weight_scale, q.alpha, out=out)

    with torch.no_grad():
        # eager: the events also hold whatever host time the layer's launches leave the GPU idle for;
        # graphed (how a serving stack replays decode steps): the device work alone
        layer_us = time_cuda(lambda: layer(x)).median_us
        gemm_us = time_cuda(gemm_alone).median_us
        layer_graph_us = time_cuda(graphed(lambda: layer(x))).median_us
        gemm_graph_us = time_cuda(graphed(gemm_alone)).median_us
        benchmark.extra_info.update(layer_us=layer_us, gemm_us=gemm_us, ratio=layer_us / gemm_us,
                                    layer_graph_us=layer_graph_us, gemm_graph_us=gemm_graph_us,
                                    graph_ratio=layer_graph_us / gemm_graph_us, gpu=torch.cuda.get_device_name())
        print(f"\nNVFP4Linear {m}x{n}x{k}: eager layer {layer_us:.1f} us, gemm alone {gemm_us:.1f} us "
              f"({layer_us / gemm_us:.2f}x); graphed {layer_graph_us:.1f} vs {gemm_graph_us:.1f} us "
              f"({layer_graph_us / gemm_graph_us:.2f}x)")
        timed(benchmark, lambda: layer(x))
