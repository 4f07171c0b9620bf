"""GPU tests of the MX quantize kernels (`quantize(x, format="mxfp4" | "mxfp8")` on CUDA; each skips with
its reason without a GPU this wheel has kernels for): codes, scale bytes (padding included), the global
scale 1 and alpha bit for bit against the CPU reference (formats.quantize_mx_reference) on random data
across magnitudes, ties, zero rows, power-of-two amax, subnormal, huge and non-finite inputs, every
output byte written (outputs poisoned first), streams, CUDA graphs, and quantize -> gemm operands."""

import math

import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import formats
from nvfp4_gemm.dtypes import operand_format
from nvfp4_gemm.quantization import Quantized

from test_gpu import supported_gpu_or_skip
from test_mx_quantize import assert_mx_bitwise, check_quantized_gemm, mx_reference, mx_special_x, span_of, spread_x

pytestmark = pytest.mark.gpu

FORMATS = ["mxfp4", "mxfp8"]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def poisoned_mx_outputs(x: torch.Tensor, fmt: str) -> Quantized:
    """Outputs full of 0xFF bytes (a ue8m0 and an e4m3 NaN, e2m1 code pairs 0xF) and NaN scalars: a byte
    the kernel does not write cannot pass."""
    described = operand_format(fmt)
    rows, k = x.numel() // x.shape[-1], x.shape[-1]
    data = torch.full((*x.shape[:-1], k // described.element.per_element), 0xFF, dtype=torch.uint8, device=x.device)
    scale = torch.full((formats.blocked_scale_numel(rows, k, fmt=described.block),), 0xFF, dtype=torch.uint8,
                       device=x.device)
    return Quantized(
        data=data.view(getattr(torch, described.element.storage_dtypes[0])),
        scale=scale.view(getattr(torch, described.block.scale_dtype)),
        global_scale=torch.full((), float("nan"), device=x.device),
        alpha=torch.full((), float("nan"), device=x.device),
    )


def check_mx_device(x_cpu: torch.Tensor, fmt: str, partner=None):
    """Quantize on the GPU (API with poisoned outputs, and the op) and compare with the CPU reference."""
    device = supported_gpu_or_skip()
    x = x_cpu.to(device)
    partner_gs = None if partner is None else torch.tensor([partner], device=device)
    want = mx_reference(x_cpu, fmt, None if partner_gs is None else partner_gs.cpu())
    out = poisoned_mx_outputs(x, fmt)
    nvfp4_gemm.quantize(x, partner_global_scale=partner_gs, out=out, format=fmt)
    assert_mx_bitwise(tuple(t.cpu() for t in out), want)
    assert_mx_bitwise(tuple(t.cpu() for t in torch.ops.nvfp4.quantize(x, None, partner_gs, fmt)), want)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape", [(1, 32), (1, 96), (1, 7168), (129, 32), (129, 96), (129, 7168), (3, 129, 96), (4, 1, 7168), (1000, 4096)]
)
def test_random_data_bitwise(fmt, dtype, shape):
    rows = math.prod(shape[:-1])
    x = spread_x(rows, shape[-1], seed=sum(shape) * 5, dtype=dtype, span=span_of(dtype)).reshape(shape)
    check_mx_device(x, fmt, 0.03)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_ties_zero_rows_pow2_subnormal_huge_non_finite(fmt, dtype):
    check_mx_device(mx_special_x(dtype, fmt), fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_empty_input(fmt):
    check_mx_device(torch.zeros(0, 3, 64, dtype=torch.bfloat16), fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_large_bf16_bitwise(fmt):
    # many strides of the quantize grid
    check_mx_device(spread_x(8192, 7168, seed=1, dtype=torch.bfloat16), fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_repeated_calls_streams_and_graphs(fmt):
    device = supported_gpu_or_skip()
    x_cpu = spread_x(300, 512, seed=2, dtype=torch.bfloat16)
    x = x_cpu.to(device)
    first = torch.ops.nvfp4.quantize(x, None, None, fmt)
    stream = torch.cuda.Stream(device)
    with torch.cuda.stream(stream):
        again = torch.ops.nvfp4.quantize(x, None, None, fmt)
    stream.synchronize()
    assert_mx_bitwise(tuple(t.cpu() for t in again), tuple(t.cpu() for t in first))
    # graph capture, replayed on new data
    static_in = x.clone()
    partner = torch.tensor([0.25], device=device)
    graph_stream = torch.cuda.Stream(device)
    graph_stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(graph_stream):
        nvfp4_gemm.quantize(static_in, format=fmt)  # warm-up outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=graph_stream):
            captured = nvfp4_gemm.quantize(static_in, partner_global_scale=partner, format=fmt)
    torch.cuda.current_stream(device).wait_stream(graph_stream)
    fresh = spread_x(300, 512, seed=3, dtype=torch.bfloat16)
    static_in.copy_(fresh.to(device))
    graph.replay()
    torch.cuda.synchronize(device)
    assert_mx_bitwise(tuple(t.cpu() for t in captured), mx_reference(fresh, fmt, partner.cpu()))


@pytest.mark.parametrize("fmt", FORMATS)
def test_misaligned_output_is_a_clear_error(fmt):
    device = supported_gpu_or_skip()
    x = torch.randn(4, 64, device=device)
    out = poisoned_mx_outputs(x, fmt)
    storage = torch.empty(out.data.numel() + 1, dtype=torch.uint8, device=device)
    misaligned = storage[1:].view(out.data.dtype).view(out.data.shape)
    with pytest.raises(ValueError, match="out.data must start at a 16-byte aligned address"):
        nvfp4_gemm.quantize(x, out=out._replace(data=misaligned), format=fmt)


@pytest.mark.parametrize("a_format,gemm_format", [("mxfp4", "mxfp4"), ("mxfp8", "mxfp8xmxfp4")])
def test_quantize_on_cuda_then_gemm(a_format, gemm_format):
    """The CUDA-quantized operands of MXFP4 x MXFP4 and W4A8 are the CPU ones byte for byte, and their GEMM
    (run by the reference on the CPU: this does not depend on a CUDA MX GEMM) is the exact one."""
    device = supported_gpu_or_skip()
    g = torch.Generator().manual_seed(6)
    x = torch.randn(48, 256, generator=g).to(torch.bfloat16)
    w = (torch.randn(40, 256, generator=g) * 0.02).to(torch.bfloat16)
    qa = Quantized(*(t.cpu() for t in nvfp4_gemm.quantize(x.to(device), format=a_format)))
    qw = Quantized(*(t.cpu() for t in nvfp4_gemm.quantize(w.to(device), format="mxfp4")))
    assert_mx_bitwise(qa, nvfp4_gemm.quantize(x, format=a_format))
    assert_mx_bitwise(qw, nvfp4_gemm.quantize(w, format="mxfp4"))
    check_quantized_gemm(x, w, qa, qw, a_format, gemm_format)
