"""GPU tests of the quantize kernel and the layer (each skips with its reason without a GPU this wheel
has kernels for): codes, scale bytes, the global scale and alpha bit for bit against the CPU
reference on random data, ties, subnormal scales, zero rows, huge/tiny magnitudes and non-finite
values, every output byte written (outputs poisoned first), streams, CUDA graphs, the layer, and the op's
C++ kernel (csrc/torch_op.cpp: a signature served without Python after its first call)."""

import math

import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import _C, formats, ops, quantization
from nvfp4_gemm.dtypes import OPERAND_FORMATS, operand_format
from nvfp4_gemm.nn import NVFP4Linear
from nvfp4_gemm.quantization import Quantized
from nvfp4_gemm.testing import Operands

from conftest import op_raises
from test_gpu import check_exact, supported_gpu_or_skip
from test_mx_quantize import assert_mx_bitwise, mx_reference
from test_nn import record_layer_calls, tiny_llama
from test_quantize import SUBNORMAL_STATIC_GS, assert_bitwise_equal, random_x, special_x, subnormal_x, tagged_indices


def poisoned_outputs(x: torch.Tensor) -> Quantized:
    """Outputs full of 0xFF bytes (an e4m3 NaN, code pairs 0xF) and NaN scalars: a byte the kernel
    does not write cannot pass."""
    rows, k = x.numel() // x.shape[-1], x.shape[-1]
    return Quantized(
        data=torch.full((*x.shape[:-1], k // 2), 0xFF, dtype=torch.uint8, device=x.device),
        scale=torch.full((formats.blocked_scale_numel(rows, k),), 0xFF, dtype=torch.uint8, device=x.device).view(
            torch.float8_e4m3fn
        ),
        global_scale=torch.full((), float("nan"), device=x.device),
        alpha=torch.full((), float("nan"), device=x.device),
    )


def check_device(x_cpu, global_scale=None, partner=None):
    """Quantize on the GPU (API with poisoned outputs, and the op) and compare with the CPU reference."""
    device = supported_gpu_or_skip()
    x = x_cpu.to(device)
    gs = None if global_scale is None else torch.tensor([global_scale], device=device)
    partner_gs = None if partner is None else torch.tensor([partner], device=device)
    want = formats.quantize_reference(x_cpu, None if gs is None else gs.cpu(), None if partner is None else partner_gs.cpu())
    out = poisoned_outputs(x)
    nvfp4_gemm.quantize(x, gs, partner_global_scale=partner_gs, out=out)
    assert_bitwise_equal(tuple(t.cpu() for t in out), want)
    assert_bitwise_equal(tuple(t.cpu() for t in torch.ops.nvfp4.quantize(x, gs, partner_gs)), want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize(
    "shape", [(1, 16), (1, 7168), (7, 48), (128, 7168), (129, 96), (300, 80), (2, 3, 160), (1000, 4096)]
)
def test_random_data_bitwise(dtype, static, shape):
    spread = 1.0 if dtype == torch.float16 else 4.0
    x = random_x(shape, dtype, seed=sum(shape) * 3 + static, spread=spread)
    check_device(x, 0.625 if static else None, 0.03)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("global_scale", [None, 2.0**20, 1.0, 0.0, float("nan"), float("inf")])
def test_ties_subnormals_zero_rows_huge_tiny_non_finite(dtype, global_scale):
    check_device(special_x(dtype), global_scale)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize("shape", [(300, 80), (4096, 7168)])  # the one-pass or static kernel; the resident one
def test_subnormal_inputs_bitwise(dtype, static, shape):
    # the block maxima keep subnormal elements (the 16-bit kernels take them with a float max instruction)
    check_device(subnormal_x(shape, dtype, seed=sum(shape) + static), SUBNORMAL_STATIC_GS[dtype] if static else None)


@pytest.mark.parametrize("global_scale", [None, 4.0])
def test_empty_input(global_scale):
    check_device(torch.zeros(0, 3, 32, dtype=torch.bfloat16), global_scale)


def test_e2m1_and_e4m3_ties_bitwise():
    ties = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, -0.25, -0.75, -1.25, -1.75, -2.5, -3.5, -5.0, -6.0]
    check_device(torch.tensor([ties]), 1.0)
    scale_ties = [1.0625, 1.1875, 3 * 2.0**-10, 5 * 2.0**-10, 7 * 2.0**-10, 2.0**-10, 15 * 2.0**-10, 464.0]
    x = torch.tensor([[amax] + [amax / 3] * 15 for amax in scale_ties])
    check_device(x, 6.0)


@pytest.mark.parametrize("static", [False, True])
def test_large_bf16_bitwise(static):
    # many amax CTAs (the cap), many strides of the quantize grid
    check_device(random_x((8192, 7168), torch.bfloat16, seed=1, spread=2.0), 3.0e-3 if static else None)


def test_repeated_calls_streams_and_graphs():
    device = supported_gpu_or_skip()
    x_cpu = random_x((300, 512), torch.bfloat16, seed=2)
    x = x_cpu.to(device)
    first = torch.ops.nvfp4.quantize(x, None, None)
    stream = torch.cuda.Stream(device)
    with torch.cuda.stream(stream):
        again = torch.ops.nvfp4.quantize(x, None, None)
    stream.synchronize()
    for a, b in zip(first, again):
        assert torch.equal(a.view(torch.uint8) if a.dtype == torch.float8_e4m3fn else a,
                           b.view(torch.uint8) if b.dtype == torch.float8_e4m3fn else b)
    # graph capture of the dynamic and the static path, replayed on new data
    static_in = x.clone()
    gs = torch.tensor([0.5], device=device)
    graph_stream = torch.cuda.Stream(device)
    graph_stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(graph_stream):
        nvfp4_gemm.quantize(static_in)  # warm-up outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=graph_stream):
            dynamic_out = nvfp4_gemm.quantize(static_in)
            static_out = nvfp4_gemm.quantize(static_in, gs)
    torch.cuda.current_stream(device).wait_stream(graph_stream)
    fresh = random_x((300, 512), torch.bfloat16, seed=3)
    static_in.copy_(fresh.to(device))
    graph.replay()
    torch.cuda.synchronize(device)
    assert_bitwise_equal(tuple(t.cpu() for t in dynamic_out), formats.quantize_reference(fresh))
    assert_bitwise_equal(tuple(t.cpu() for t in static_out), formats.quantize_reference(fresh, gs.cpu()))


def device_kernel_names(fn) -> list[str]:
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == DeviceType.CUDA]


@pytest.mark.parametrize(
    "shape,kernels",
    [
        ((16, 7168), ["quantize_one_pass_kernel"]),  # decode: a co-resident grid covers every block
        ((128, 7168), ["quantize_one_pass_kernel"]),  # with 512 threads per CTA (224 of 256 > the SMs)
        # beyond it, while a sixth of x's steps stays on chip (132 SMs, 228 KB of shared memory each: H100,
        # H200): one walk for the max, then the kept steps quantized and the rest re-read
        ((4096, 7168), ["quantize_resident_kernel"]),
        # rows of an odd number of blocks, of three, of one (the resident kernel's row divider at its edges)
        ((2048, 4112), ["quantize_resident_kernel"]),
        ((200000, 48), ["quantize_resident_kernel"]),
        ((400000, 16), ["quantize_resident_kernel"]),
        ((24576, 7168), ["amax_kernel", "quantize_kernel"]),  # beyond that: the amax pass, then the quantize pass
    ],
)
def test_dynamic_scale_takes_one_pass_where_the_grid_covers_x(shape, kernels):
    device = supported_gpu_or_skip()
    props = torch.cuda.get_device_properties(device)
    if props.multi_processor_count != 132 or props.shared_memory_per_multiprocessor != 233472:
        pytest.skip("the sizes that pick each kernel are set for 132 SMs of 228 KB shared memory (H100, H200)")
    x_cpu = random_x(shape, torch.bfloat16, seed=shape[0], spread=2.0)
    x = x_cpu.to(device)
    nvfp4_gemm.quantize(x)  # the op's first call of a signature may take the Python path
    names = device_kernel_names(lambda: torch.ops.nvfp4.quantize(x, None, None))
    ours = [name for name in names if "quantize::detail::" in name]
    assert len(ours) == len(kernels) and all(f"::{k}<" in name for k, name in zip(kernels, ours)), names
    # either path under graph capture, replayed on new data
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            out = torch.ops.nvfp4.quantize(x, None, None)
    torch.cuda.current_stream(device).wait_stream(stream)
    fresh = random_x(shape, torch.bfloat16, seed=shape[0] + 1, spread=2.0)
    x.copy_(fresh.to(device))
    graph.replay()
    torch.cuda.synchronize(device)
    assert_bitwise_equal(tuple(t.cpu() for t in out), formats.quantize_reference(fresh))


@pytest.mark.parametrize(
    "dtype,shape,peak",
    [
        (torch.bfloat16, (4096, 7168), "first"),  # the max in the walked steps (read twice)
        (torch.bfloat16, (2048, 7168), "last"),  # in the steps held in registers
        (torch.bfloat16, (1000, 4096), "middle"),  # a ragged last step
        (torch.float16, (2048, 7168), "last"),
        (torch.float32, (4096, 7168), "first"),
        (torch.float32, (1000, 4096), "middle"),
        (torch.bfloat16, (2048, 4112), "middle"),  # 257 blocks per row, 3, and 1 (the row divider's edges)
        (torch.float16, (200000, 48), "last"),
        (torch.float32, (400000, 16), "first"),
    ],
)
def test_dynamic_scale_over_x_kept_partly_on_chip(dtype, shape, peak):
    """The resident kernel's regions (steps walked and re-read, kept in shared memory, held in registers;
    a ragged last step): non-finite values spread over x, which the max must skip, and the finite peak in
    one region, which every block's scale depends on."""
    x = random_x(shape, dtype, seed=sum(shape), spread=1.0 if dtype == torch.float16 else 2.0).float()
    rows, k = shape
    for i, row in enumerate(range(3, rows, rows // 13)):
        x[row, (row * 37) % k] = (float("nan"), float("inf"), -float("inf"))[i % 3]
    peak_row = {"first": 1, "middle": rows // 2, "last": rows - 2}[peak]
    x[peak_row, k // 3] = -2.0 * x.nan_to_num(0.0, 0.0, 0.0).abs().max()
    check_device(x.to(dtype))


def kernel_grids(fn, tmp_path) -> list[tuple[str, int, int]]:
    """(name, CTAs, threads per CTA) of every kernel fn launches, from the profiler's trace."""
    import json

    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    events = json.loads(trace.read_text())["traceEvents"]
    return [(e["name"], math.prod(e["args"]["grid"]), math.prod(e["args"]["block"]))
            for e in events if e.get("cat") == "kernel"]


@pytest.mark.parametrize("sms", [None, 100])
def test_quantize_sms_sizes_the_resident_grid(sms, tmp_path):
    """set_quantize_sms: the resident kernel's grid, for the SMs it was given, is one half-SM CTA (512 threads) per
    SM where x fits on chip that way (1000x4096), and the whole SM beyond (4096x7168): one CTA of 1024 threads
    for 16-bit x, two of 512 for fp32; the outputs stay exact."""
    device = supported_gpu_or_skip()
    props = torch.cuda.get_device_properties(device)
    if props.multi_processor_count != 132 or props.shared_memory_per_multiprocessor != 233472:
        pytest.skip("the sizes that pick each grid are set for 132 SMs of 228 KB shared memory (H100, H200)")
    try:
        nvfp4_gemm.set_quantize_sms(sms)
        used = sms or props.multi_processor_count
        for shape, dtype, ctas_per_sm, threads in (((1000, 4096), torch.bfloat16, 1, 512),
                                                   ((4096, 7168), torch.bfloat16, 1, 1024),
                                                   ((4096, 7168), torch.float32, 2, 512)):
            x_cpu = random_x(shape, dtype, seed=shape[0] + 7, spread=2.0)
            x = x_cpu.to(device)
            nvfp4_gemm.quantize(x)  # the op's first call of a signature may take the Python path
            out = []
            grids = kernel_grids(lambda: out.append(torch.ops.nvfp4.quantize(x, None, None)), tmp_path)
            resident = [(ctas, block) for name, ctas, block in grids if "quantize_resident_kernel" in name]
            assert resident == [(used * ctas_per_sm, threads)], grids
            assert_bitwise_equal(tuple(t.cpu() for t in out[0]), formats.quantize_reference(x_cpu))
    finally:
        nvfp4_gemm.set_quantize_sms(None)


def quantize_with_scratch(x: torch.Tensor, scratch: torch.Tensor) -> Quantized:
    """NVFP4, dynamic scale, through the launcher with a caller-held AmaxScratch (bytes of `scratch`)."""
    out = poisoned_outputs(x)
    index = x.device.index
    _C.quantize(x.data_ptr(), 2, OPERAND_FORMATS.index(operand_format("nvfp4")), x.shape[0], x.shape[1], 0, 0,
                out.data.data_ptr(), out.scale.data_ptr(), out.global_scale.data_ptr(), out.alpha.data_ptr(),
                scratch.data_ptr(), index, torch.cuda.current_stream(index).cuda_stream)
    return out


def last_tag_bytes(scratch: torch.Tensor) -> torch.Tensor:
    return scratch[_C.QUANTIZE_AMAX_LAST_TAG_OFFSET : _C.QUANTIZE_AMAX_LAST_TAG_OFFSET + 4]


def scratch_tags(scratch: torch.Tensor) -> tuple[torch.Tensor, int]:
    """The tagged slots' tags and last_tag of an AmaxScratch."""
    slots = scratch.view(torch.int64)[tagged_indices()].cpu()
    last_tag = int(last_tag_bytes(scratch).view(torch.int32).cpu()) & 0xFFFFFFFF
    return (slots >> 32) & 0xFFFFFFFF, last_tag


def test_one_pass_calls_read_only_their_own_partials():
    """The one-pass and resident kernels' CTAs wait on partials tagged with the call's number: a grid wider
    than the last one, or a tag that wraps, must not take an earlier call's partial max (planted here: 2^100)."""
    device = supported_gpu_or_skip()
    assert _C.QUANTIZE_AMAX_SCRATCH_BYTES >= _C.QUANTIZE_AMAX_LAST_TAG_OFFSET + 4
    scratch = torch.zeros(_C.QUANTIZE_AMAX_SCRATCH_BYTES, dtype=torch.uint8, device=device)
    # grids of 112, 112, 16, 128 and 224 CTAs (rows padded to 128; 512 threads per CTA where 256 would need more
    # CTAs for x than an H100/H200 has SMs), then the resident kernel's half-SM and whole-SM CTAs and the one-pass
    # kernel again; a two-pass call would leave the tags behind
    shapes = [(128, 7168), (128, 7168), (1, 512), (192, 4096), (16, 7168), (1000, 4096), (2048, 7168), (64, 7168)]
    for call, shape in enumerate(shapes):
        x_cpu = random_x(shape, torch.bfloat16, seed=40 + call, spread=2.0)
        if call == 0:
            # the last CTA's partial, left in its slots for the next call: read if tags did not separate them
            x_cpu[-1, -1] = 2.0**100
        assert_bitwise_equal(tuple(t.cpu() for t in quantize_with_scratch(x_cpu.to(device), scratch)),
                             formats.quantize_reference(x_cpu))
        tags, last_tag = scratch_tags(scratch)
        assert last_tag == call + 1 and bool((tags == call + 1).all()), (call, last_tag, tags.unique().tolist())
    # a tag about to wrap, every slot holding that tag and a huge stale max
    stale = (torch.full((1024,), 0xFFFFFFFF, dtype=torch.int64) << 32) | 0x7E967699  # fp32 bits of 1e38
    scratch.view(torch.int64)[tagged_indices().to(device)] = stale.to(device)
    last_tag_bytes(scratch).fill_(0xFF)
    x_cpu = random_x((64, 7168), torch.bfloat16, seed=50, spread=2.0)
    assert_bitwise_equal(tuple(t.cpu() for t in quantize_with_scratch(x_cpu.to(device), scratch)),
                         formats.quantize_reference(x_cpu))
    tags, last_tag = scratch_tags(scratch)
    assert last_tag == 0 and bool((tags == 0).all())


def test_misaligned_x_is_a_clear_error():
    device = supported_gpu_or_skip()
    storage = torch.zeros(64 * 32 + 1, dtype=torch.bfloat16, device=device)
    x = storage[1:].view(64, 32)
    with pytest.raises(ValueError, match="x must start at a 16-byte aligned address"):
        nvfp4_gemm.quantize(x)


def layer_and_reference(device, in_features, out_features, m, seed):
    gen = torch.Generator().manual_seed(seed)
    linear = torch.nn.Linear(in_features, out_features, bias=False).to(torch.bfloat16)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(out_features, in_features, generator=gen) * 0.05)
    x_cpu = torch.randn(m, in_features, generator=gen).to(torch.bfloat16)
    # Module.to moves in place: the CPU layer is built from the CPU linear first
    cpu_layer = NVFP4Linear.from_linear(linear)
    return NVFP4Linear.from_linear(linear.to(device)), cpu_layer, x_cpu


def test_nvfp4_linear_on_the_gpu_matches_the_exact_layer():
    device = supported_gpu_or_skip()
    gpu_layer, cpu_layer, x_cpu = layer_and_reference(device, 7168, 2048, 16, seed=4)
    for name in ("weight", "weight_scale", "weight_global_scale"):  # the weight quantized bit for bit
        assert torch.equal(getattr(gpu_layer, name).cpu().reshape(-1).view(torch.uint8), getattr(cpu_layer, name).reshape(-1).view(torch.uint8))
    with torch.no_grad():
        out = gpu_layer(x_cpu.to(device))
    q = formats.quantize_reference(x_cpu, None, cpu_layer.weight_global_scale)
    check_exact(out.cpu(), Operands(q[0], cpu_layer.weight, q[1], cpu_layer.weight_scale, q[3]), torch.bfloat16)


@pytest.mark.parametrize("quantized_on", ["gpu", "cpu"])
@pytest.mark.parametrize("activations", ["nvfp4", "bf16"])
def test_quantize_model_on_a_transformers_llama_on_the_gpu(activations, quantized_on):
    """tests/test_nn.py's tiny Llama on the GPU's kernels, quantized there or quantized on the CPU and then
    moved by `model.to(device, torch.bfloat16)` (the format's buffers keep their dtypes): every swapped layer,
    in the model's forward over the prompt and in greedy generation's one-token steps, within the earned
    tolerance of the exact reference of the input it was given (W4A4: that input quantized by the CPU
    reference, which the kernel equals bit for bit; W4A16: the input as given)."""
    device = supported_gpu_or_skip()
    family = nvfp4_gemm.families.for_sm_major(torch.cuda.get_device_capability(device)[0])
    if activations == "bf16" and "bf16xnvfp4" not in family.formats:
        pytest.skip(f"the {family.name} family has no weight-only kernels (test_weight_only_on_cuda_names_the_nvfp4_route)")
    model, ids = tiny_llama(seed=0)
    if quantized_on == "gpu":
        nvfp4_gemm.quantize_model(model.to(device), activations=activations)
    else:
        nvfp4_gemm.quantize_model(model, activations=activations)
        model.to(device, torch.bfloat16)
    seen, hooks = record_layer_calls(model)
    with torch.no_grad():
        generated = model.generate(ids.to(device), max_new_tokens=3, do_sample=False, pad_token_id=0)
    for hook in hooks:
        hook.remove()
    assert generated.shape == (2, 12)
    assert {x.shape[1] for _, x, _ in seen} == {9, 1} and len(seen) == 14 * 3  # the prompt, then two steps
    for layer, x, out in seen:
        rows = x.reshape(-1, layer.in_features).cpu()
        weight, weight_scale, weight_gs = layer.weight.cpu(), layer.weight_scale.cpu(), layer.weight_global_scale.cpu()
        if activations == "nvfp4":
            q = formats.quantize_reference(rows, None, weight_gs)
            operands = Operands(q[0], weight, q[1], weight_scale, q[3])
        else:
            operands = Operands(rows, weight, None, weight_scale, formats.gemm_alpha(weight_gs))
        check_exact(out.reshape(-1, layer.out_features).cpu(), operands, torch.bfloat16)


def test_nan_input_row_is_nan_in_the_gemm_output():
    device = supported_gpu_or_skip()
    gpu_layer, _, x_cpu = layer_and_reference(device, 512, 256, 8, seed=5)
    x = x_cpu.to(device)
    x[3, 100] = float("nan")
    with torch.no_grad():
        out = gpu_layer(x)
    assert torch.isnan(out[3]).all()
    out[3] = 0.0
    assert torch.isfinite(out).all()


def test_weight_only_on_cuda_names_the_nvfp4_route():
    """Where the GPU's family has no weight-only kernels (Blackwell), the layer names the W4A4 route; the
    Hopper family runs them (tests/test_weight_only.py)."""
    device = supported_gpu_or_skip()
    family = nvfp4_gemm.families.for_sm_major(torch.cuda.get_device_capability(device)[0])
    if "bf16xnvfp4" in family.formats:
        pytest.skip(f"the {family.name} family runs weight-only NVFP4 (tests/test_weight_only.py)")
    linear = torch.nn.Linear(64, 32).to(torch.bfloat16).to(device)
    layer = NVFP4Linear.from_linear(linear, activations="bf16")
    with pytest.raises(NotImplementedError, match="activations='nvfp4'"):
        layer(torch.randn(4, 64, dtype=torch.bfloat16, device=device))


def test_compiled_quantize_then_gemm_on_the_gpu():
    device = supported_gpu_or_skip()
    gpu_layer, _, x_cpu = layer_and_reference(device, 1024, 512, 16, seed=6)
    compiled = torch.compile(gpu_layer, fullgraph=True)
    x = x_cpu.to(device)
    assert torch.equal(compiled(x), gpu_layer(x))


# --- the op's C++ kernel (csrc/torch_op.cpp) ----------------------------------------------------------

# (format, x's dtype, static global scale or None): NVFP4 dynamic and static, MXFP4, MXFP8
CPP_CASES = [("nvfp4", torch.bfloat16, None), ("nvfp4", torch.float16, 0.75), ("mxfp4", torch.float32, None),
             ("mxfp8", torch.bfloat16, None)]


def cpp_op_or_skip():
    device = supported_gpu_or_skip()
    if not _C.HAS_TORCH_OP:
        pytest.skip("this build's op kernels are Python (built without torch)")
    return device


def no_python(arguments):
    raise AssertionError("the Python path ran for a remembered signature")


def check_against_cpu(got, x_cpu, fmt, global_scale, partner):
    """Every output bit for bit the CPU reference of `fmt`."""
    got = tuple(t.cpu() for t in got)
    if fmt == "nvfp4":
        assert_bitwise_equal(got, formats.quantize_reference(x_cpu, global_scale, partner))
    else:
        assert_mx_bitwise(got, mx_reference(x_cpu, fmt, partner))


def poison_allocator(x, fmt):
    """Frees blocks of the outputs' sizes full of 0xFF bytes just before a call, so that the caching allocator
    hands the op those blocks (best effort: the op allocates its outputs, which cannot be poisoned directly):
    a byte the kernel leaves unwritten is then 0xFF, not a stale value that might pass."""
    described = operand_format(fmt)
    rows, k = x.numel() // x.shape[-1], x.shape[-1]
    sizes = (rows * k // described.element.per_element, formats.blocked_scale_numel(rows, k, fmt=described.block), 4, 4)
    blocks = [torch.full((numel,), 0xFF, dtype=torch.uint8, device=x.device) for numel in sizes]
    del blocks  # back to the allocator's cache, on this stream


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,dtype,static", CPP_CASES)
def test_cpp_op_serves_a_signature_without_python(monkeypatch, fmt, dtype, static):
    """The first call of a signature runs the Python path and leaves one plan; later calls of it (new data,
    new addresses, another stream; the op and nvfp4_gemm.quantize) launch without Python, bit for bit the
    Python path and the CPU reference. A misaligned x of the same signature takes the Python path, which
    raises the rule's error."""
    device = cpp_op_or_skip()
    shape = (3, 37, 224)  # a signature no other test uses
    gs = None if static is None else torch.tensor([static], device=device)
    partner = torch.tensor([0.03], device=device)
    expect = dict(fmt=fmt, global_scale=None if gs is None else gs.cpu(), partner=partner.cpu())
    signatures = _C.op_plan_count()
    x_cpu = random_x(shape, dtype, seed=90, spread=1.0)
    check_against_cpu(torch.ops.nvfp4.quantize(x_cpu.to(device), gs, partner, fmt), x_cpu, **expect)
    assert _C.op_plan_count() == signatures + 1

    side = torch.cuda.Stream(device)
    with monkeypatch.context() as patch:
        patch.setattr(quantization, "_op_first_call", no_python)
        for seed in (91, 92, 93):
            x_cpu = random_x(shape, dtype, seed=seed, spread=1.0)
            x = x_cpu.to(device)
            check_against_cpu(quantization._run_and_plan(x, gs, partner, fmt)[0], x_cpu, **expect)  # the Python path
            poison_allocator(x, fmt)
            check_against_cpu(torch.ops.nvfp4.quantize(x, gs, partner, fmt), x_cpu, **expect)
            poison_allocator(x, fmt)
            api = nvfp4_gemm.quantize(x, gs, partner_global_scale=partner, format=fmt)
            assert isinstance(api, Quantized)
            check_against_cpu(api, x_cpu, **expect)
            side.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(side):  # its own amax scratch
                on_side = torch.ops.nvfp4.quantize(x, gs, partner, fmt)
            torch.cuda.current_stream(device).wait_stream(side)
            check_against_cpu(on_side, x_cpu, **expect)
    assert _C.op_plan_count() == signatures + 1

    storage = torch.empty(x.numel() + 1, dtype=dtype, device=device)
    shifted = storage[1:].view(shape)  # the same sizes and strides: the same signature
    shifted.copy_(x)
    with op_raises(ValueError, r"x must start at a 16-byte aligned address"):
        torch.ops.nvfp4.quantize(shifted, gs, partner, fmt)
    with pytest.raises(ValueError, match=r"^x must start at a 16-byte aligned address"):
        nvfp4_gemm.quantize(shifted, gs, partner_global_scale=partner, format=fmt)
    assert _C.op_plan_count() == signatures + 1


@pytest.mark.gpu
def test_cpp_op_is_non_differentiable_and_the_api_refuses_grad():
    """The stable ABI cannot read requires_grad: the op's rules leave it out on every device (its Autograd
    kernel falls through, as gemm's), and nvfp4_gemm.quantize keeps the rule."""
    device = cpp_op_or_skip()
    x = random_x((16, 64), torch.bfloat16, seed=94).to(device)
    want = torch.ops.nvfp4.quantize(x)
    x.requires_grad_()
    for _ in range(2):  # the Python path, then the C++ one
        got = torch.ops.nvfp4.quantize(x)
        assert not any(t.requires_grad for t in got)
        assert_bitwise_equal(tuple(t.cpu() for t in got), tuple(t.cpu() for t in want))
    with pytest.raises(ValueError, match=r"^x requires grad, but quantize has no backward"):
        nvfp4_gemm.quantize(x)


@pytest.mark.gpu
def test_cpp_op_replays_from_a_cuda_graph(monkeypatch):
    """Calls the C++ kernel serves (NVFP4 dynamic with its stream's amax scratch, static, MX), captured and
    replayed on new data: bit for bit the CPU reference of each."""
    device = cpp_op_or_skip()
    static_in = torch.empty(96, 288, dtype=torch.bfloat16, device=device)  # a signature no other test uses
    gs, partner = torch.tensor([0.5], device=device), torch.tensor([0.25], device=device)
    calls = [("nvfp4", None), ("nvfp4", gs), ("mxfp4", None), ("mxfp8", None)]
    static_in.copy_(random_x((96, 288), torch.bfloat16, seed=95).to(device))
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(2):  # the plans, and this stream's amax scratch, exist before capture
            for fmt, scale in calls:
                torch.ops.nvfp4.quantize(static_in, scale, partner, fmt)
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with monkeypatch.context() as patch:
        patch.setattr(quantization, "_op_first_call", no_python)
        with torch.cuda.graph(graph, stream=stream):
            captured = [torch.ops.nvfp4.quantize(static_in, scale, partner, fmt) for fmt, scale in calls]
    for seed in (96, 97):
        fresh = random_x((96, 288), torch.bfloat16, seed=seed)
        static_in.copy_(fresh.to(device))
        for outputs in captured:
            for t in outputs:
                t.reshape(-1).view(torch.uint8).fill_(0xFF)
        graph.replay()
        torch.cuda.synchronize(device)
        for (fmt, scale), got in zip(calls, captured):
            check_against_cpu(got, fresh, fmt, None if scale is None else scale.cpu(), partner.cpu())


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(8, 1024), (2, 4, 1024)])
def test_nvfp4_linear_forward_runs_without_the_python_paths(monkeypatch, shape):
    """After a layer's first call, its W4A4 forward is served by the ops' C++ kernels alone, the same bits."""
    device = cpp_op_or_skip()
    gpu_layer, _, _ = layer_and_reference(device, 1024, 512, 1, seed=98)
    x = random_x(shape, torch.bfloat16, seed=99).to(device)
    with torch.no_grad():
        want = gpu_layer(x)
        with monkeypatch.context() as patch:
            patch.setattr(quantization, "_op_first_call", no_python)
            patch.setattr(ops, "_op_first_call", no_python)
            for _ in range(2):
                got = gpu_layer(x)
                assert got.shape == (*shape[:-1], 512)
                assert torch.equal(got, want)
