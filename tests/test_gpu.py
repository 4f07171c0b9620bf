"""GPU tests. Each skips with its reason where the GPU it needs is absent.

On a GPU the wheel has kernels for (Blackwell, compute capability 10.x): exactness against the
float64 reference on the task shapes and residues. On any other GPU (our H200): the clear error.
"""

import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import _C, formats
from nvfp4_gemm.configs import load_table
from nvfp4_gemm.task_shapes import CORRECTNESS_SHAPES, RANKED_SHAPES
from nvfp4_gemm.testing import Operands, check_against_reference, fp32_roundings, random_operands

from conftest import cuda_device_or_skip, op_raises, poisoned

def supported_gpu_or_skip():
    device = cuda_device_or_skip()
    capability = torch.cuda.get_device_capability(device)
    if capability not in nvfp4_gemm.supported_capabilities():
        pytest.skip(f"{torch.cuda.get_device_name(device)} ({capability}) has no kernel in this wheel")
    return device


def unsupported_gpu_or_skip():
    device = cuda_device_or_skip()
    if torch.cuda.get_device_capability(device) in nvfp4_gemm.supported_capabilities():
        pytest.skip("the GPU present is supported; the unsupported-GPU error cannot be shown here")
    return device


# --- any GPU -----------------------------------------------------------------------------------


def test_cpu_cuda_mix_is_a_clear_error():
    device = cuda_device_or_skip()
    ops = random_operands(128, 64, 128, seed=1)
    with pytest.raises(ValueError, match=r"^b is on cuda:0 but a is on cpu: all tensors must be on one device"):
        nvfp4_gemm.gemm(ops.a, ops.b.to(device), ops.a_scale, ops.b_scale)
    with op_raises(ValueError, r"a_scale is on cpu but a is on cuda:0"):
        torch.ops.nvfp4.gemm(ops.a.to(device), ops.b.to(device), ops.a_scale, ops.b_scale.to(device))


# --- a GPU without kernels (e.g. Hopper before its own kernels land) ---------------------------


@pytest.mark.parametrize("entry", ["op", "api"])
def test_unsupported_gpu_raises_before_launch(entry):
    device = unsupported_gpu_or_skip()
    ops = random_operands(128, 64, 128, seed=2, device=device)
    out = poisoned((128, 64), torch.float16, device)
    call = (
        (lambda: torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale))
        if entry == "op"
        else (lambda: nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out))
    )
    raises = op_raises(nvfp4_gemm.UnsupportedDeviceError, "") if entry == "op" else pytest.raises(
        nvfp4_gemm.UnsupportedDeviceError
    )
    with raises as info:
        call()
    name = torch.cuda.get_device_name(device)
    major, minor = torch.cuda.get_device_capability(device)
    message = str(info.value)
    print(message)
    assert f"{name} (compute capability {major}.{minor})" in message
    assert all(arch in message for arch in nvfp4_gemm.compiled_architectures())
    torch.cuda.synchronize(device)  # nothing was launched, so nothing can fault
    assert torch.isnan(out).all()


# --- a GPU with kernels (Blackwell for the sm100 family) ---------------------------------------


def check_exact(out, ops, out_dtype):
    """Every element within the earned FP32-accumulation tolerance of the exact reference."""
    assert out.dtype == out_dtype
    k = 2 * ops.a.shape[-1]
    passed, summary = check_against_reference(out, ops, roundings=fp32_roundings(k))
    print(summary)
    assert passed, summary


@pytest.mark.parametrize("m,n,k", list(CORRECTNESS_SHAPES) + [s[:3] for s in RANKED_SHAPES])
def test_task_shapes_exact(m, n, k):
    device = supported_gpu_or_skip()
    ops = random_operands(m, n, k, seed=m + n + k, device=device)
    out = poisoned((m, n), torch.float16, device)
    nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out)
    check_exact(out, ops, torch.float16)


@pytest.mark.parametrize("out_dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize(
    "m,n,k,l",
    [(1, 8, 32, None), (7, 24, 96, None), (64, 40, 160, None), (129, 136, 288, None), (300, 264, 544, 3),
     (16, 1032, 4064, None)],
)
def test_residues_dtypes_alpha_batches(m, n, k, l, out_dtype):
    device = supported_gpu_or_skip()
    ops = random_operands(m, n, k, l, seed=m * n + k, device=device, with_alpha=True, padding_byte=0x38)
    shape = (m, n) if l is None else (l, m, n)
    out = poisoned(shape, out_dtype, device)
    nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out)
    check_exact(out, ops, out_dtype)
    again = torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out_dtype)
    assert torch.equal(again, out), "repeated runs must be bitwise identical"


def test_split_k_is_bitwise_reproducible():
    device = supported_gpu_or_skip()
    ops = random_operands(128, 7168, 16384, seed=5, device=device, with_alpha=True)
    first = torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, torch.float16)
    check_exact(first, ops, torch.float16)
    for _ in range(3):
        assert torch.equal(torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, torch.float16), first)


@pytest.mark.parametrize("split_k", [1, 4])
def test_every_split_config_reduces_reproducibly(split_k):
    """Split-K (sm90) and stream-K (sm100; split_k = 1 is the stream-K decomposition) configs, pinned,
    on a shape whose tile count leaves a ragged last wave: exact, and bitwise equal run to run."""
    device = supported_gpu_or_skip()
    ops = random_operands(96, 7208, 4096, seed=9, device=device, with_alpha=True)
    major = torch.cuda.get_device_capability(device)[0]
    for config in (c for c in nvfp4_gemm.candidates(major) if c.takes_split_k):
        out = poisoned((96, 7208), torch.float16, device)
        nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out, config=config.name, split_k=split_k)
        check_exact(out, ops, torch.float16)
        for _ in range(2):
            again = nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, config=config.name, split_k=split_k)
            assert torch.equal(again, out), f"{config.name} split_k={split_k} is not reproducible"


def test_gpumode_adapter_on_gpu():
    device = supported_gpu_or_skip()
    from test_ops import competition_tuple

    data, ops = competition_tuple(128, 256, 512, 2, seed=6, device=device)
    result = nvfp4_gemm.gpumode.gemm(data)
    assert result is data[-1]
    check_exact(result.permute(2, 0, 1), ops, torch.float16)


GPUMODE_SHAPES = [(m, n, k, 1) for m, n, k, _ in RANKED_SHAPES] + [(7, 136, 544, 1), (129, 264, 800, 2)]


def l_first(data):
    """The L-first views of a harness tuple's operands (a, b, scales, c), as the adapter makes them."""
    a, b, _sfa, _sfb, sfa_permuted, sfb_permuted, c = data
    scales = (t.permute(5, 2, 4, 0, 1, 3) for t in (sfa_permuted, sfb_permuted))
    return (a.permute(2, 0, 1), b.permute(2, 0, 1), *scales, c.permute(2, 0, 1))


@pytest.mark.parametrize("m,n,k,l", GPUMODE_SHAPES)
def test_gpumode_op_equals_gemm_out_on_the_l_first_views(m, n, k, l):
    """custom_kernel (the C++ op where the build has it: its first call through Python, the next from
    its plan) writes exactly what gemm(out=) writes on the L-first views, over new data too."""
    device = supported_gpu_or_skip()
    from nvfp4_gemm.gpumode import custom_kernel
    from test_ops import competition_tuple

    for seed in (m + n, m + n + 1):  # the second tuple: the same signature, new data and addresses
        data, ops = competition_tuple(m, n, k, l, seed=seed, device=device)
        a, b, sfa, sfb, c = l_first(data)
        want = poisoned(c.shape, torch.float16, device)
        nvfp4_gemm.gemm(a, b, sfa, sfb, out=want)
        for _ in range(2):
            c.fill_(float("nan"))
            assert custom_kernel(data) is data[-1]
            assert torch.equal(c, want)
        check_exact(c, ops, torch.float16)


def test_gpumode_op_serves_a_signature_without_python(monkeypatch):
    """The C++ op: the first call of a tuple signature runs the Python path and leaves one plan; later
    tuples of that signature (new data, new addresses) launch without Python. A member swapped for a
    misaligned or an overlapping view of the same signature takes the Python path again, which raises
    the error the Python adapter raises."""
    device = supported_gpu_or_skip()
    if not _C.HAS_TORCH_OP:
        pytest.skip("this build's op kernels are Python (built without torch)")
    from nvfp4_gemm.tools import gpumode
    from test_ops import competition_tuple

    m, n, k, l = 72, 136, 1056, 2  # a signature no other test uses
    signatures = _C.op_plan_count()
    first, ops = competition_tuple(m, n, k, l, seed=70, device=device)
    gpumode.custom_kernel(first)
    check_exact(first[-1].permute(2, 0, 1), ops, torch.float16)
    assert _C.op_plan_count() == signatures + 1

    def no_python(handles):
        raise AssertionError("the Python path ran for a remembered signature")

    with monkeypatch.context() as patch:
        patch.setattr(gpumode, "_op_first_call", no_python)
        for seed in (71, 72):
            data, ops = competition_tuple(m, n, k, l, seed=seed, device=device)
            gpumode.custom_kernel(data)
            check_exact(data[-1].permute(2, 0, 1), ops, torch.float16)
    assert _C.op_plan_count() == signatures + 1

    a, c = first[0], first[-1]
    arena = torch.empty(a.numel() + 1, dtype=torch.uint8, device=device)
    shifted = arena[1:].view(a.permute(2, 0, 1).shape)
    shifted.copy_(a.permute(2, 0, 1).view(torch.uint8))
    misaligned = (shifted.view(a.dtype).permute(1, 2, 0), *first[1:])
    # c in the harness's layout inside a's buffer (N * 4 <= K: it fits)
    inside_a = a.permute(2, 0, 1).view(torch.uint8).reshape(-1)[: c.numel() * 2]
    overlapping = (*first[:6], inside_a.view(torch.float16).view(c.permute(2, 0, 1).shape).permute(1, 2, 0))
    assert misaligned[0].stride() == a.stride() and overlapping[-1].stride() == c.stride()  # the same signature
    for data, message in ((misaligned, r"^a must start at a 16-byte aligned address"),
                          (overlapping, r"^out overlaps a in memory")):
        for adapter in (gpumode._gemm_python, gpumode.custom_kernel):
            with pytest.raises(ValueError, match=message):
                adapter(data)
    assert _C.op_plan_count() == signatures + 1


def test_gpumode_op_replays_from_a_cuda_graph():
    device = supported_gpu_or_skip()
    from nvfp4_gemm.gpumode import custom_kernel
    from test_ops import competition_tuple

    data, ops = competition_tuple(128, 7168, 2048, 1, seed=80, device=device)
    c = data[-1]
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(2):  # the plan, and the C++ op's buffers for this stream, exist before capture
            custom_kernel(data)
    stream.synchronize()
    eager = c.clone()
    check_exact(eager.permute(2, 0, 1), ops, torch.float16)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        custom_kernel(data)
    for _ in range(3):
        c.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(c, eager), "a replay differs from the eager call"


def test_runs_on_the_current_stream():
    device = supported_gpu_or_skip()
    ops = random_operands(256, 512, 1024, seed=3, device=device)
    stream = torch.cuda.Stream(device)
    with torch.cuda.stream(stream):
        out = torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale)
    stream.synchronize()
    check_exact(out, ops, torch.float16)


@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "resolved"])
def test_two_streams_back_to_back_share_nothing(pinned):
    """Split-K configs on two streams at once, several calls each and no synchronization in between:
    each stream has its own token workspace, partials and counters, so every output is exact. Pinned
    configs run the Python path; the resolver's choice the C++ op's (its own per-stream buffers)."""
    device = supported_gpu_or_skip()
    if torch.cuda.get_device_capability(device)[0] != 9:
        pytest.skip("pins sm90 configs")
    streams = [torch.cuda.Stream(device), torch.cuda.Stream(device)]
    jobs = [("sm90_wgmma_128x128x128_prepass_splitk", 3, (129, 1032, 2080)),
            ("sm90_wgmma_64x256x128_prepass_splitk", 2, (70, 776, 1568))]
    runs = []
    for seed in range(3):
        for stream, (config, split, (m, n, k)) in zip(streams, jobs):
            ops = random_operands(m, n, k, seed=200 + 2 * seed + len(runs), device=device)
            out = poisoned((m, n), torch.float16, device)
            stream.wait_stream(torch.cuda.current_stream(device))  # the operands are ready
            with torch.cuda.stream(stream):
                pin = {"config": config, "split_k": split} if pinned else {}
                nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out, **pin)
            runs.append((ops, out))
    torch.cuda.synchronize(device)
    for ops, out in runs:
        check_exact(out, ops, torch.float16)


def test_cpp_op_serves_a_signature_after_its_first_call():
    """The C++ op: the first call of a signature runs the Python path and leaves its plan; later
    calls of it (new data, new addresses) run without Python and are exact; an address the plan
    cannot vouch for (misaligned) takes the Python path, which raises the rule's error."""
    device = supported_gpu_or_skip()
    if not _C.HAS_TORCH_OP:
        pytest.skip("this build's op kernels are Python (built without torch)")
    m, n, k = 72, 392, 1056  # a signature no other test uses
    first = random_operands(m, n, k, seed=40, device=device, with_alpha=True)
    signatures = _C.op_plan_count()
    python_plans = len(nvfp4_gemm.ops._plans)
    check_exact(torch.ops.nvfp4.gemm(first.a, first.b, first.a_scale, first.b_scale, first.alpha), first, torch.float16)
    assert _C.op_plan_count() == signatures + 1
    for seed in range(41, 44):
        ops = random_operands(m, n, k, seed=seed, device=device, with_alpha=True)
        out = poisoned((m, n), torch.float16, device)
        check_exact(torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha), ops, torch.float16)
        check_exact(nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out), ops, torch.float16)
    assert _C.op_plan_count() == signatures + 2  # + the out= signature; nothing new for new data
    assert len(nvfp4_gemm.ops._plans) == python_plans + 1  # one Python plan serves both
    arena = torch.empty(first.a.numel() + 1, dtype=torch.uint8, device=device)
    shifted = arena[1:].view(first.a.shape)
    shifted.copy_(first.a)
    with op_raises(ValueError, r"a must start at a 16-byte aligned address"):
        torch.ops.nvfp4.gemm(shifted, first.b, first.a_scale, first.b_scale, first.alpha)
    with pytest.raises(ValueError, match=r"^a must start at a 16-byte aligned address"):
        nvfp4_gemm.gemm(shifted, first.b, first.a_scale, first.b_scale, first.alpha)


def test_shapes_back_to_back_share_workspace_safely():
    """Split-K launches of different tile counts on one stream, in an order that once let a later
    launch read an earlier launch's scratch data as its counters (found by the benchmark suite)."""
    device = supported_gpu_or_skip()
    for seed, (m, n, k) in enumerate([(128, 7168, 7168), (16, 4096, 4096), (256, 7168, 2048), (512, 1536, 7168), (256, 7168, 7168)]):
        ops = random_operands(m, n, k, seed=100 + seed, device=device)
        out = poisoned((m, n), torch.float16, device)
        nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out)
        check_exact(out, ops, torch.float16)


def device_configs():
    if not torch.cuda.is_available():
        return []
    major = torch.cuda.get_device_capability()[0]
    return [c.name for c in nvfp4_gemm.candidates(major)]


@pytest.mark.parametrize("split_k", [1, 3])
@pytest.mark.parametrize("config", device_configs() or ["none"])
def test_every_config_is_exact(config, split_k):
    """Each config of the GPU's family, pinned, on residues of every tile dimension and a batch."""
    device = supported_gpu_or_skip()
    table_row = load_table().by_name(config)
    for seed, (m, n, k, l) in enumerate([(1, 8, 416, None), (7, 136, 544, None), (129, 264, 800, 2)]):
        # a per-column-alpha row takes alpha as an (N,) vector only
        ops = random_operands(m, n, k, l, seed=seed, device=device, with_alpha=True, padding_byte=0x38,
                              alpha_per_column=table_row.per_column_alpha)
        shape = (m, n) if l is None else (l, m, n)
        # configs without split-K run split 1 only; the others as many splits as K allows, up to 3
        split = min(split_k, table_row.max_split_k(k))
        for out_dtype in (torch.float16, torch.bfloat16):
            out = poisoned(shape, out_dtype, device)
            nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out, config=config, split_k=split)
            check_exact(out, ops, out_dtype)


@pytest.mark.parametrize("split_k", [1, 3])
@pytest.mark.parametrize("config", device_configs() or ["none"])
def test_per_column_alpha_on_every_config(config, split_k):
    """alpha of shape (N,): each column its own scale, on every config that takes it (split-K reductions
    included, through the Python path and the C++ op); a config that does not says so before any launch, as
    a per-column-alpha row given one alpha does."""
    device = supported_gpu_or_skip()
    table_row = load_table().by_name(config)
    for seed, (m, n, k, l) in enumerate([(5, 24, 416, None), (129, 264, 800, 2)]):
        ops = random_operands(m, n, k, l, seed=60 + seed, device=device, with_alpha=True, alpha_per_column=True)
        shape = (m, n) if l is None else (l, m, n)
        split = min(split_k, table_row.max_split_k(k))
        out = poisoned(shape, torch.bfloat16, device)
        if table_row.alpha_violation(True) is not None:
            with pytest.raises(ValueError, match=rf"config '{config}' takes one alpha, not one per output column; "
                                                 r"alpha with one value per output column runs on the sm90 family"):
                nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out, config=config, split_k=split)
            torch.cuda.synchronize(device)
            assert torch.isnan(out).all()
            continue
        if table_row.per_column_alpha:
            with pytest.raises(ValueError, match=rf"config '{config}' takes alpha as an \(N,\) vector"):
                nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha[:1], out=out, config=config)
        nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out, config=config, split_k=split)
        check_exact(out, ops, torch.bfloat16)
        for _ in range(2):  # the op: its first call plans, the second runs from the C++ memo where built
            check_exact(torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, torch.bfloat16),
                        ops, torch.bfloat16)


def sm100_column_alpha_rows():
    return [c.name for c in load_table().configs if c.per_column_alpha]


@pytest.mark.parametrize("config", sm100_column_alpha_rows())
def test_sm100_fused_projections_equal_the_unfused_ones(config):
    """Blackwell (sm100 per-column-alpha rows): q/k/v-like partitions quantized apart, one fused GEMM with
    alpha per column == the partitions' own GEMMs on the row's one-alpha twin (same tile and schedule, so
    the same FP32 sums; K = one 256-element tile, so stream-K cannot split it differently), bit for bit; the
    op (its resolver's choice, then the C++ memo) gives a result within the earned tolerance, and the one-alpha
    call of the same data never lands on a per-column row."""
    device = supported_gpu_or_skip()
    if torch.cuda.get_device_capability(device)[0] != 10:
        pytest.skip("the per-column-alpha rows are sm100 kernels")
    twin = config.removesuffix("_pcalpha")
    rows, k = (128, 64, 64), 256
    for m, l in ((8, None), (200, 2)):
        parts = [random_operands(m, r, k, l, seed=90 + i, device=device, with_alpha=True) for i, r in enumerate(rows)]
        a, a_scale = parts[0].a, parts[0].a_scale  # one activation for every partition
        b = torch.cat([p.b for p in parts], dim=-2)
        b_scale = formats.to_blocked(torch.cat([formats.from_blocked(p.b_scale, r, k, l) for p, r in zip(parts, rows)],
                                               dim=-2))
        alpha = torch.cat([p.alpha.reshape(1).expand(r) for p, r in zip(parts, rows)]).contiguous()
        unfused = torch.cat([
            nvfp4_gemm.gemm(a, p.b, a_scale, p.b_scale, p.alpha, torch.bfloat16, config=twin) for p in parts
        ], dim=-1)
        fused = poisoned(unfused.shape, torch.bfloat16, device)
        nvfp4_gemm.gemm(a, b, a_scale, b_scale, alpha, out=fused, config=config)
        assert torch.equal(fused, unfused)
        fused_ops = Operands(a=a, b=b, a_scale=a_scale, b_scale=b_scale, alpha=alpha)
        for _ in range(2):
            check_exact(torch.ops.nvfp4.gemm(a, b, a_scale, b_scale, alpha, torch.bfloat16), fused_ops, torch.bfloat16)
        assert not nvfp4_gemm.resolve(m, sum(rows), k, l or 1, torch.bfloat16, device).per_column_alpha


# --- prepared launches (sm100), CUDA graphs, the GPU MODE timing --------------------------------


@pytest.mark.parametrize(
    "config,split_k",
    [("sm100_2sm_256x128x256_c2x1", 1), ("sm100_1sm_128x128x256_c1x1_streamk", 2),
     ("sm100_1sm_128x64x256_c1x1_swapab_streamk", 1)],
)
def test_sm100_prepare_only_on_any_gpu(config, split_k, capfd):
    """The sm100 launcher's host half on a Blackwell GPU (elsewhere: the clear refusal): kernel
    parameters (TMA descriptors) built once per address set, the stream-K workspace cleared on the
    stream before every launch even when nothing else is rebuilt, and nothing launched."""
    device = cuda_device_or_skip()
    from nvfp4_gemm import _C

    if not any(major == 10 for _, _, major in _C.kernels()):
        pytest.skip("this build carries no sm100 kernels")
    index = torch.cuda.current_device()
    m, n, k = 128, 7168, 2048
    ops = random_operands(m, n, k, seed=12, device=device)
    if torch.cuda.get_device_capability(index)[0] != 10:
        # elsewhere the driver refuses the sm100 FP4 TMA descriptors (and CUTLASS then crashes): refused first
        kernel = _C.lookup(config, "float16")
        with pytest.raises(RuntimeError, match=r"prepare_only needs a compute capability 10.x GPU"):
            kernel.prepare_only(ops.a.data_ptr(), ops.b.data_ptr(), ops.a_scale.data_ptr(), ops.b_scale.data_ptr(),
                                0, 0, m, n, k, 1, split_k, 0, 0, 0, 0, index, 0)
        return
    out, other_out = poisoned((m, n), torch.float16, device), poisoned((m, n), torch.float16, device)
    kernel = _C.lookup(config, "float16")
    workspace_bytes = kernel.workspace_bytes(m, n, k, 1, split_k, index)
    workspace = torch.full((max(workspace_bytes, 1),), 0xFF, dtype=torch.uint8, device=device)
    stream = torch.cuda.Stream(device)  # a stream of its own: a plan of its own

    def prepare(target):
        kernel.prepare_only(ops.a.data_ptr(), ops.b.data_ptr(), ops.a_scale.data_ptr(), ops.b_scale.data_ptr(),
                            target.data_ptr(), 0, m, n, k, 1, split_k, workspace.data_ptr(), workspace_bytes, 0, 0,
                            index, stream.cuda_stream)

    def counters():
        return kernel.plan_counters(m, n, k, 1, split_k, index, stream.cuda_stream)

    clears = 1 if workspace_bytes else 0
    assert counters() is None
    prepare(out)
    prepare(out)
    assert counters() == {"calls": 2, "params_builds": 1, "workspace_inits": 2 * clears, "launches": 0}
    prepare(other_out)
    prepare(out)
    assert counters() == {"calls": 4, "params_builds": 2, "workspace_inits": 4 * clears, "launches": 0}
    stream.synchronize()
    if workspace_bytes:
        assert int((workspace == 0).sum()) > 0, "the stream-K barriers were not cleared"
        workspace.fill_(0xFF)
        torch.cuda.synchronize()
        prepare(out)  # parameters cached: the clear still happens
        stream.synchronize()
        assert int((workspace == 0).sum()) > 0, "a cached plan skipped the barrier clear"
    torch.cuda.synchronize()
    assert torch.isnan(out).all() and torch.isnan(other_out).all()  # nothing was launched
    assert "Failed to initialize the TMA descriptor" not in capfd.readouterr().err


def test_sm100_plan_refuses_a_split_of_a_data_parallel_kernel():
    cuda_device_or_skip()
    from nvfp4_gemm import _C

    if not any(major == 10 for _, _, major in _C.kernels()):
        pytest.skip("this build carries no sm100 kernels")
    kernel = _C.lookup("sm100_2sm_256x128x256_c2x1", "float16")
    blackwell = torch.cuda.get_device_capability()[0] == 10
    refusal = r"\(float16\): this data-parallel kernel takes split_k = 1 only" if blackwell else r"needs a compute capability 10.x GPU"
    with pytest.raises(RuntimeError, match=refusal):
        kernel.prepare_only(0, 0, 0, 0, 0, 0, 128, 256, 512, 1, 2, 0, 0, 0, 0, torch.cuda.current_device(), 0)


def test_sm100_launches_reuse_their_plan():
    device = supported_gpu_or_skip()
    if torch.cuda.get_device_capability(device)[0] != 10:
        pytest.skip("sm100 kernels run on Blackwell only")
    from nvfp4_gemm import _C

    m, n, k = 128, 7168, 2048
    ops = random_operands(m, n, k, seed=13, device=device)
    out = poisoned((m, n), torch.float16, device)
    resolution = nvfp4_gemm.resolve(m, n, k, 1, torch.float16, device, explain=True)
    stream = torch.cuda.Stream(device)
    with torch.cuda.stream(stream):
        for _ in range(3):
            nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out)
    stream.synchronize()
    check_exact(out, ops, torch.float16)
    kernel = _C.lookup(resolution.config.name, "float16")
    counters = kernel.plan_counters(m, n, k, 1, resolution.split_k, torch.cuda.current_device(), stream.cuda_stream)
    assert counters["calls"] == 3 and counters["launches"] == 3 and counters["params_builds"] == 1


def test_shared_memory_opt_in_is_made_on_every_device():
    """The kernels opt in to more than 48 KB of dynamic shared memory per device context: after a call on
    each supported GPU the tests see, every config of its family reads its attribute back there at least
    as large as what it launches with (a process-wide opt-in would leave the second GPU without it)."""
    supported_gpu_or_skip()
    devices = [d for d in range(torch.cuda.device_count())
               if torch.cuda.get_device_capability(d) in nvfp4_gemm.supported_capabilities()]
    m, n, k = 16, 256, 512
    opted_in = 0
    for index in devices:
        device = torch.device("cuda", index)
        ops = random_operands(m, n, k, seed=40 + index, device=device)
        for config in nvfp4_gemm.candidates(torch.cuda.get_device_capability(index)[0]):
            out = poisoned((m, n), torch.float16, device)
            nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out, config=config.name)
            check_exact(out, ops, torch.float16)
            launched, attribute = nvfp4_gemm._C.lookup(config.name, "float16").dynamic_smem(index)
            print(f"cuda:{index} {config.name}: launches with {launched} B, attribute {attribute} B")
            if launched > 48 * 1024:
                opted_in += 1
                assert attribute >= launched, f"cuda:{index} {config.name}: the opt-in was not made on this device"
    assert opted_in, "no kernel needed the opt-in: this test showed nothing"


@pytest.mark.parametrize("split_k", [1, 2])
def test_split_configs_replay_exactly_from_a_cuda_graph(split_k):
    """Split-K counters (sm90) and stream-K barriers (sm100) are reset for every replay of a
    captured launch, not only for eager calls."""
    device = supported_gpu_or_skip()
    ops = random_operands(96, 7208, 4096, seed=14, device=device, with_alpha=True)
    major = torch.cuda.get_device_capability(device)[0]
    for config in (c for c in nvfp4_gemm.candidates(major) if c.takes_split_k):
        out = poisoned((96, 7208), torch.float16, device)
        stream = torch.cuda.Stream(device)

        def call():
            nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out, config=config.name,
                            split_k=split_k)

        with torch.cuda.stream(stream):
            call()  # the plan and the stream's workspace exist before capture
        stream.synchronize()
        eager = out.clone()
        check_exact(eager, ops, torch.float16)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            call()
        for _ in range(3):
            out.fill_(float("nan"))
            graph.replay()
            torch.cuda.synchronize()
            assert torch.equal(out, eager), f"{config.name} split_k={split_k}: a replay differs from the eager call"


def test_kernel_span_timing_covers_every_kernel_of_the_call():
    cuda_device_or_skip()
    from nvfp4_gemm.timing import time_cuda, time_kernels

    cycles = 200_000  # torch.cuda._sleep spins this many clock cycles: ~100 us at 2 GHz
    one = time_kernels(lambda: torch.cuda._sleep(cycles), iters=10).median_us
    two = time_kernels(lambda: (torch.cuda._sleep(cycles), torch.cuda._sleep(cycles)), iters=10).median_us
    assert 10 < one and 1.9 * one < two < 2.5 * one, (one, two)  # the span runs from the first kernel to the last
    tiny = torch.zeros(16, device="cuda")
    # the events also time the launch and their own latency; the span is the kernel alone
    assert time_kernels(lambda: tiny.add_(1)).median_us < time_cuda(lambda: tiny.add_(1)).median_us
    with pytest.raises(RuntimeError, match="launched no device work"):
        time_kernels(lambda: None, warmup=0, iters=1)


def test_kernel_breakdown_counts_each_kernel_and_orders_them_by_time():
    cuda_device_or_skip()
    from nvfp4_gemm.timing import kernel_breakdown

    cycles = 200_000  # ~100 us of spinning per sleep kernel at 2 GHz: far above the adds
    tiny = torch.zeros(16, device="cuda")

    def call():
        for _ in range(3):
            torch.cuda._sleep(cycles)
            tiny.add_(1)

    call()
    torch.cuda.synchronize()
    span, kernels = kernel_breakdown(call)
    assert sum(k.count for k in kernels) == 6 and sorted(k.count for k in kernels) == [3, 3], kernels
    sleep, add = kernels  # the most total time first (the spinning kernel, then the add)
    assert sleep.name != add.name and sleep.total_us > 10 * add.total_us, kernels
    assert sleep.total_us + add.total_us <= span < 2 * (sleep.total_us + add.total_us), (span, kernels)
    with pytest.raises(RuntimeError, match="launched no device work"):
        kernel_breakdown(lambda: None)


def test_both_l2_flushes_evict_the_timed_calls_operands(monkeypatch):
    cuda_device_or_skip()
    from nvfp4_gemm.tools.timing import _device_activities
    from nvfp4_gemm.timing import l2_flush, l2_flush_kind, time_kernels

    # 16 MB fits the L2 of an H100 / H200 (50 MB): read again without a flush it comes from the L2. Kernel
    # spans on both sides (events would time the host's launch gaps of unflushed back-to-back calls).
    data = torch.randn(4 * 1024 * 1024, device="cuda")
    data.max()
    torch.cuda.synchronize()
    # (the reduction also launches a small memset per call)
    repeated = [e for e in _device_activities(lambda: [data.max() for _ in range(21)], 1) if "reduce" in e.name]
    assert len(repeated) == 21, [e.name for e in repeated]
    from_l2 = sorted(e.time_range.end - e.time_range.start for e in repeated)[10]
    for kind in ("dirty", "clean"):
        monkeypatch.setenv("NVFP4_GEMM_L2_FLUSH", kind)
        assert l2_flush_kind() == kind
        flushed = time_kernels(data.max, iters=20).median_us
        assert flushed > 1.2 * from_l2, (kind, flushed, from_l2)
    monkeypatch.setenv("NVFP4_GEMM_L2_FLUSH", "warm")
    with pytest.raises(ValueError, match="NVFP4_GEMM_L2_FLUSH must be one of dirty, clean"):
        l2_flush()


def test_harness_timing_checks_every_input_then_times():
    supported_gpu_or_skip()
    from nvfp4_gemm.gpumode import custom_kernel
    from nvfp4_gemm.harness import time_like_harness

    timing = time_like_harness(128, 256, 512, inputs=3, max_seconds=0.01)
    assert timing.verified, timing.check
    assert timing.runs >= 3 and 0 < timing.best_us <= timing.mean_us <= timing.worst_us

    def wrong(data):
        return custom_kernel(data).zero_()

    failed = time_like_harness(128, 256, 512, inputs=3, kernel=wrong)
    assert not failed.verified and failed.check.startswith("input 0 of 3 failed") and failed.runs == 0
