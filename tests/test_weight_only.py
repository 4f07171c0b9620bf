"""Weight-only NVFP4 ("W4A16", issue 14): `gemm(x, b, None, b_scale, ...)` with 16-bit activations used as
given. The contract and its errors on the CPU; the Hopper kernels (direct and wgmma, fp16 and bf16
tokens) against the exact reference on a GPU; the clear error on a family without them."""

import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import families, resolver
from nvfp4_gemm._checks import check_format_supported, check_gemm_args
from nvfp4_gemm.configs import load_table
from nvfp4_gemm.formats import reference_gemm_float64
from nvfp4_gemm.sm90_model import DIRECT_CTAS_PER_SM
from nvfp4_gemm.testing import check_against_reference, fp32_roundings, random_operands

from conftest import check_exact, hopper_or_skip, op_raises, poisoned

WEIGHT_ONLY = ("bf16xnvfp4", "fp16xnvfp4", "bf16xmxfp4")  # the Hopper kernels' (fp16xmxfp4: the CPU only)
TOKEN_DTYPE = {"bf16xnvfp4": torch.bfloat16, "fp16xnvfp4": torch.float16, "bf16xmxfp4": torch.bfloat16}
# Scale exponents drawn for the whole-range test: e4m3 from its subnormals (2^-9) up (1.875 * 2^7 = 240,
# below its 448: 2^8 draws could round past it to NaN); ue8m0 far out, with products still normal FP32.
WIDE_SCALES = {"nvfp4": (-9, 7), "mxfp4": (-100, 100)}


# --- the contract on the CPU --------------------------------------------------------------------


@pytest.mark.parametrize("fmt", WEIGHT_ONLY)
def test_format_follows_the_dtypes(fmt):
    ops = random_operands(5, 24, 96, seed=1, format=fmt)
    assert ops.a.dtype == TOKEN_DTYPE[fmt] and ops.a_scale is None
    shape = check_gemm_args(ops.a, ops.b, None, ops.b_scale, None, torch.float32)
    assert shape.format.name == fmt and shape.format.weight_only
    assert (shape.m, shape.n, shape.k, shape.l) == (5, 24, 96, 1)


@pytest.mark.parametrize("fmt", WEIGHT_ONLY + ("fp16xmxfp4",))
@pytest.mark.parametrize("l", [None, 3])
def test_cpu_gemm_is_the_exact_reference(fmt, l):
    ops = random_operands(9, 40, 160, l, seed=2, format=fmt, with_alpha=True)
    exact = reference_gemm_float64(ops.a, ops.b, None, ops.b_scale, ops.alpha)
    for out_dtype in (torch.float16, torch.bfloat16, torch.float32):
        out = nvfp4_gemm.gemm(ops.a, ops.b, None, ops.b_scale, ops.alpha, out_dtype)
        assert torch.equal(out, nvfp4_gemm.formats.round_once(exact, out_dtype))
        assert torch.equal(torch.ops.nvfp4.gemm(ops.a, ops.b, None, ops.b_scale, ops.alpha, out_dtype), out)


def test_reference_multiplies_the_values_as_given():
    """One hand-made case: x = [1.5, -3] (bf16), w codes [1.0 (0x2), 6.0 (0x7)] with scale 0.5, alpha 2."""
    x = torch.tensor([[1.5, -3.0] + [0.0] * 30], dtype=torch.bfloat16)
    b = torch.zeros((8, 16), dtype=torch.uint8)
    b[0, 0] = 0x72  # element 0 (low nibble) = 1.0, element 1 (high nibble) = 6.0
    scales = torch.full((8, 2), 0.5).to(torch.float8_e4m3fn)
    out = nvfp4_gemm.gemm(x, b, None, nvfp4_gemm.to_blocked(scales), torch.tensor(2.0), torch.float32)
    assert out[0, 0].item() == 2.0 * (1.5 * 0.5 - 3.0 * 3.0)
    assert torch.equal(out[0, 1:], torch.zeros(7))


def test_rules_name_the_argument():
    ops = random_operands(4, 16, 64, seed=3, format="bf16xnvfp4")
    nv = random_operands(4, 16, 64, seed=3)
    with pytest.raises(TypeError, match=r"^a is torch.bfloat16: 16-bit activations are used as given .* a_scale must be None"):
        nvfp4_gemm.gemm(ops.a, ops.b, nv.a_scale, ops.b_scale)
    with pytest.raises(TypeError, match=r"^a_scale=None means a holds 16-bit values .* got a torch.uint8"):
        nvfp4_gemm.gemm(nv.a, nv.b, None, nv.b_scale)
    with pytest.raises(ValueError, match=r"^a and b must have the same K: a \(torch.bfloat16, BF16\) is \(rows, K\)"):
        nvfp4_gemm.gemm(ops.a[:, :32].contiguous(), ops.b, None, ops.b_scale)
    with pytest.raises(TypeError, match=r"^a must hold packed FP4 bytes, float8_e4m3fn values \(MXFP8\) or 16-bit"):
        nvfp4_gemm.gemm(ops.a.float(), ops.b, None, ops.b_scale)


@pytest.mark.parametrize("fmt", WEIGHT_ONLY)
def test_opcheck(fmt, float8_bitwise_allclose):
    ops = random_operands(3, 16, 64, seed=4, format=fmt, with_alpha=True)
    torch.library.opcheck(torch.ops.nvfp4.gemm, (ops.a, ops.b, None, ops.b_scale, ops.alpha, torch.bfloat16))
    out = torch.empty(3, 16, dtype=torch.float32)
    torch.library.opcheck(torch.ops.nvfp4._gemm_into, (ops.a, ops.b, None, ops.b_scale, out, ops.alpha))


@pytest.mark.parametrize("fmt", WEIGHT_ONLY)
def test_sm90_has_rows_and_the_resolver_picks_them(fmt):
    rows = nvfp4_gemm.candidates(9, fmt)
    assert {c.mma for c in rows} == {"direct", "wgmma", "gemv"} and all(c.name.endswith(f"_{fmt}") for c in rows)
    # a layer too large for the GEMV (its own rule: tests/test_gemv.py)
    for m, mma in ((1, "direct"), (16, "direct"), (17, "wgmma"), (128, "wgmma"), (2048, "wgmma")):
        resolution = resolver._resolve(m, 28672, 8192, 1, "bfloat16", 9, 132, None, None, (), fmt)
        assert resolution.config.format == fmt and resolution.config.mma == mma, resolution


@pytest.mark.parametrize("fmt", ("bf16xnvfp4", "fp16xnvfp4"))
def test_sm100_has_a_mixed_input_row_and_the_resolver_picks_it(fmt):
    """Blackwell's weight-only rows (CUTLASS's mixed-input kernel; proved on the host in test_host_proofs.py):
    the format's only rows, swap-AB, taken at every M; their N rule (N % 8, the converted scales' TMA rows)
    refused before a launch for fp32 output too."""
    rows = nvfp4_gemm.candidates(10, fmt)
    assert rows and all(c.swap_ab and c.name.endswith(f"_{fmt}") for c in rows)
    for m in (1, 16, 128, 2048):
        resolution = resolver._resolve(m, 4096, 4096, 1, "bfloat16", 10, 148, None, None, (), fmt)
        assert resolution.config in rows, resolution
    assert rows[0].supports(1, 4100, 4096, 1, "float32") == (
        f"N must be a multiple of 8 for the sm100 {fmt} kernels, got N=4100"
    )
    assert rows[0].supports(1, 4104, 4096, 1, "float32") is None


def test_a_family_without_weight_only_kernels_names_the_route():
    ops = random_operands(4, 16, 64, seed=5, format="bf16xnvfp4")
    shape = check_gemm_args(ops.a, ops.b, None, ops.b_scale, None, torch.bfloat16)
    with pytest.raises(NotImplementedError, match=r"^weight-only NVFP4 \(bf16xnvfp4: .*\) has no sm120 kernel.*"
                                                  r"activations='nvfp4'"):
        check_format_supported(families.by_name("sm120"), shape)
    mx = random_operands(4, 16, 64, seed=5, format="fp16xmxfp4")
    mx_shape = check_gemm_args(mx.a, mx.b, None, mx.b_scale, None, torch.bfloat16)
    for name in ("sm90", "sm100"):
        with pytest.raises(NotImplementedError, match=rf"^weight-only MXFP4 \(fp16xmxfp4: .*\) has no {name} kernel.*"
                                                      r"activations='mxfp4'.*format='mxfp4'"):
            check_format_supported(families.by_name(name), mx_shape)
    with pytest.raises(ValueError, match=r"runs the nvfp4 format; this call is bf16xnvfp4"):
        nvfp4_gemm.gemm(ops.a, ops.b, None, ops.b_scale, config="sm90_direct_16x128x128_splitk")


# --- Hopper --------------------------------------------------------------------------------------


def weight_only_configs(gemv=False):
    """The weight-only rows; the GEMV's (one CTA's tokens, K >= 544, no split-K) only with `gemv` (its own
    shapes: tests/test_gemv.py)."""
    return [(fmt, c.name) for fmt in WEIGHT_ONLY for c in nvfp4_gemm.candidates(9, fmt) if gemv or c.mma != "gemv"]


@pytest.mark.parametrize("split_k", [1, 3])
@pytest.mark.parametrize("fmt,config", weight_only_configs())
def test_every_weight_only_config_is_exact(fmt, config, split_k):
    """Each weight-only row, pinned: residues of every tile dimension, a batch, every output dtype,
    padding scale bytes that must be ignored (a finite scale, and 0x00: a NaN-reading ue8m0 code 0 for MX)."""
    device = hopper_or_skip()
    row = load_table().by_name(config)
    cases = [(1, 8, 416, None, 0x38), (7, 136, 544, None, 0x00), (129, 264, 800, 2, 0x38), (70, 256, 4096, None, 0x00),
             (3, 24, 352, None, 0x00)]
    for seed, (m, n, k, l, padding) in enumerate(cases):
        cpu = random_operands(m, n, k, l, seed=10 + seed, format=fmt, with_alpha=True, padding_byte=padding)
        ops = random_operands(m, n, k, l, seed=10 + seed, format=fmt, with_alpha=True, padding_byte=padding, device=device)
        shape = (m, n) if l is None else (l, m, n)
        split = min(split_k, row.max_split_k(k))
        for out_dtype in (torch.float16, torch.bfloat16, torch.float32):
            out = poisoned(shape, out_dtype, device)
            nvfp4_gemm.gemm(ops.a, ops.b, None, ops.b_scale, ops.alpha, out=out, config=config, split_k=split)
            check_exact(out, cpu, f"{config} split {split} {(m, n, k, l)} {out_dtype}")


def sm90_configs():
    """The rows whose splits reduce across CTAs (the GEMV's split stays inside one: tests/test_gemv.py)."""
    return [(fmt, c.name) for fmt in ("nvfp4", "mxfp4") + WEIGHT_ONLY for c in nvfp4_gemm.candidates(9, fmt)
            if c.mma != "gemv"]


@pytest.mark.parametrize("fmt,config", sm90_configs())
def test_splits_reduce_in_a_cluster_or_through_partials(fmt, config):
    """Splits of 2..8 add their tiles inside a thread-block cluster (distributed shared memory) where the
    grid's clusters fit (this small grid's do, for both kernels), larger ones through the global partials
    and counters: both exact and bitwise equal run to run, on a batch with a weight-tile residue and a K
    past the last whole chunk."""
    device = hopper_or_skip()
    m, n, k, l = 9, 392, 2080, 2
    cpu = random_operands(m, n, k, l, seed=95, format=fmt, with_alpha=True, padding_byte=0x38)
    ops = random_operands(m, n, k, l, seed=95, format=fmt, with_alpha=True, padding_byte=0x38, device=device)
    for split in (2, 5, 8, 9, 12):
        out = poisoned((l, m, n), torch.float32, device)
        nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out, config=config, split_k=split)
        check_exact(out, cpu, f"{config} split {split}")
        again = nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, torch.float32, config=config,
                                split_k=split)
        assert torch.equal(again, out), f"{config} split {split} is not reproducible"


@pytest.mark.parametrize("fmt", ("nvfp4",) + WEIGHT_ONLY)
def test_direct_kernel_with_every_cta_slot_busy(fmt):
    """The direct kernel with two token tiles on a grid that fills every CTA slot of the GPU (two per SM),
    each CTA's K two token blocks long. The tests above run grids of a few CTAs; a kernel variant whose warps
    released a shared-memory slot before their loads from it had completed passed all of them and was wrong
    only at this load (perf notes, "Hopper v13"). The reference runs on the GPU, in float64."""
    device = hopper_or_skip()
    config = next(c for c in nvfp4_gemm.candidates(9, fmt) if c.mma == "direct")
    split = 8
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    tiles = -(-DIRECT_CTAS_PER_SM * sms // split)
    token_block = 16 * config.tile[2]  # K of the direct kernel's token block: 16 chunks (direct_gemm.cuh)
    m, n, k = config.tile[0], tiles * config.tile[1], split * 2 * token_block
    ops = random_operands(m, n, k, seed=120, format=fmt, with_alpha=True, padding_byte=0x38, device=device)
    out = poisoned((m, n), torch.float32, device)
    nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out, config=config.name, split_k=split)
    passed, summary = check_against_reference(out, ops, roundings=fp32_roundings(k))
    assert passed, f"{config.name} split {split} {(m, n, k)}: {summary}"


@pytest.mark.parametrize("fmt,config", weight_only_configs(gemv=True))
def test_weight_only_over_the_whole_scale_range(fmt, config):
    """Weight scales over a wide range (e4m3 from its subnormal 2^-9 up to 240; ue8m0 2^-100 .. 2^100; the
    bf16 kernels' weights pass through bf16 subnormals on the way: e2m1 codes 0.5 are placed as 2^-127),
    per-column alpha."""
    device = hopper_or_skip()
    weights = nvfp4_gemm.dtypes.gemm_format(fmt).b.name
    row = load_table().by_name(config)
    cases = [(m, n, k) for m, n, k in [(3, 64, 512), (100, 136, 1024), (1, 64, 608), (4, 136, 1024)]
             if row.supports(m, n, k, 1, "float32", alpha_per_column=True) is None]
    assert cases, f"{config} takes none of the shapes"
    for seed, (m, n, k) in enumerate(cases):
        kwargs = dict(format=fmt, with_alpha=True, alpha_per_column=True, exponent_ranges=((-3, 1), WIDE_SCALES[weights]))
        cpu = random_operands(m, n, k, seed=40 + seed, **kwargs)
        ops = random_operands(m, n, k, seed=40 + seed, device=device, **kwargs)
        codes = cpu.b_scale.view(torch.uint8)
        assert (codes.lt(0x08).any() if weights == "nvfp4" else (codes.lt(40).any() and codes.gt(214).any())), \
            "the draw reaches both ends of the range"
        out = poisoned((m, n), torch.float32, device)
        nvfp4_gemm.gemm(ops.a, ops.b, None, ops.b_scale, ops.alpha, out=out, config=config)
        check_exact(out, cpu, f"{config} {(m, n, k)}")


@pytest.mark.parametrize("fmt", WEIGHT_ONLY)
def test_the_op_resolves_plans_and_serves_weight_only(fmt, float8_bitwise_allclose):
    """torch.ops.nvfp4.gemm with a_scale None: first call (Python plan), later calls (the C++ memo where
    built), opcheck, CUDA-graph replay."""
    device = hopper_or_skip()
    for seed, m in enumerate((1, 16, 40, 256)):
        cpu = random_operands(m, 1024, 2048, seed=70 + seed, format=fmt, with_alpha=True)
        ops = random_operands(m, 1024, 2048, seed=70 + seed, format=fmt, with_alpha=True, device=device)
        for _ in range(2):
            check_exact(torch.ops.nvfp4.gemm(ops.a, ops.b, None, ops.b_scale, ops.alpha, TOKEN_DTYPE[fmt]), cpu, f"op M={m}")
    torch.library.opcheck(torch.ops.nvfp4.gemm, (ops.a, ops.b, None, ops.b_scale, ops.alpha, torch.float16))
    out = poisoned((256, 1024), torch.float16, device)
    stream = torch.cuda.Stream(device)
    with torch.cuda.stream(stream):
        nvfp4_gemm.gemm(ops.a, ops.b, None, ops.b_scale, ops.alpha, out=out)
    stream.synchronize()
    eager = out.clone()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        nvfp4_gemm.gemm(ops.a, ops.b, None, ops.b_scale, ops.alpha, out=out)
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, eager)


def test_weight_only_errors_before_launch_on_the_gpu():
    device = hopper_or_skip()
    ops = random_operands(4, 16, 64, seed=6, format="bf16xnvfp4", device=device)
    nv = random_operands(4, 16, 64, seed=6, device=device)
    with op_raises(TypeError, r"a is torch.bfloat16: 16-bit activations are used as given"):
        torch.ops.nvfp4.gemm(ops.a, ops.b, nv.a_scale, ops.b_scale)
    with op_raises(TypeError, r"a_scale=None means a holds 16-bit values"):
        torch.ops.nvfp4.gemm(nv.a, nv.b, None, nv.b_scale)
    with pytest.raises(ValueError, match=r"a must start at a 16-byte aligned address"):
        x = torch.empty(4 * 64 + 4, dtype=torch.bfloat16, device=device)[4:].view(4, 64)  # 8 bytes in
        nvfp4_gemm.gemm(x, ops.b, None, ops.b_scale)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_nvfp4linear_weight_only_runs_its_kernel(dtype):
    """The layer's activations='bf16' mode on CUDA (any leading dims): the exact reference of its own
    quantized weights with x as given, within the earned tolerance; its bias added after the GEMM."""
    device = hopper_or_skip()
    torch.manual_seed(7)
    linear = torch.nn.Linear(512, 264, bias=True).to(dtype)
    layer = nvfp4_gemm.nn.NVFP4Linear.from_linear(linear, activations="bf16").to(device)
    weight, weight_scale = layer.weight.cpu(), layer.weight_scale.cpu()
    alpha = nvfp4_gemm.formats.gemm_alpha(layer.weight_global_scale.cpu())
    for shape in ((1, 512), (3, 5, 512), (130, 512)):
        x = torch.randn(shape, dtype=dtype)
        with torch.no_grad():
            out = layer(x.to(device))
            product = torch.ops.nvfp4.gemm(x.to(device).reshape(-1, 512), layer.weight, None, layer.weight_scale,
                                           alpha.to(device), dtype)
        assert out.shape == (*shape[:-1], 264) and out.dtype == dtype
        assert torch.equal(out.reshape(-1, 264), product + layer.bias.to(dtype))
        ops = nvfp4_gemm.testing.Operands(a=x.reshape(-1, 512), b=weight, a_scale=None, b_scale=weight_scale, alpha=alpha)
        check_exact(product, ops, f"layer {shape}")


def test_layer_alpha_follows_its_weight_global_scale():
    """The weight-only layer remembers 1 / weight_global_scale; a state-dict load, an in-place change of
    the buffer or another tensor in its place gives the new value."""
    torch.manual_seed(8)
    source = torch.nn.Linear(64, 16, bias=False).to(torch.bfloat16)
    layer = nvfp4_gemm.nn.NVFP4Linear.from_linear(source, activations="bf16")
    x = torch.randn(2, 64, dtype=torch.bfloat16)
    first = layer(x)
    other = nvfp4_gemm.nn.NVFP4Linear.from_linear(torch.nn.Linear(64, 16, bias=False).to(torch.bfloat16), activations="bf16")
    layer.load_state_dict(other.state_dict())
    assert torch.equal(layer(x), other(x))
    layer.weight_global_scale.mul_(2.0)
    halved = nvfp4_gemm.gemm(x, layer.weight, None, layer.weight_scale,
                             nvfp4_gemm.formats.gemm_alpha(layer.weight_global_scale), torch.bfloat16)
    assert torch.equal(layer(x), halved) and not torch.equal(layer(x), other(x))
    assert not torch.equal(first, layer(x))
    layer.weight_global_scale = other.weight_global_scale.clone()  # another tensor in the buffer's place
    assert torch.equal(layer(x), other(x))


def test_mx_weight_scales_outside_the_kernels_range_give_nan():
    """ue8m0 codes 0, 1, 253, 254 (2^-127, 2^-126, 2^126, 2^127) are valid scales the bf16 weights cannot
    hold with every e2m1 value exactly: the Hopper kernels make the columns they scale NaN (docs/formats.md),
    the other columns stay exact."""
    device = hopper_or_skip()
    n = 136
    for row in nvfp4_gemm.candidates(9, "bf16xmxfp4"):
        config = row.name
        m, k = (5, 256) if row.supports(5, n, 256, 1, "float32") is None else (1, 608)  # the GEMV's shape
        cpu = random_operands(m, n, k, seed=90, format="bf16xmxfp4")
        plain = nvfp4_gemm.from_blocked(cpu.b_scale, n, k, fmt=nvfp4_gemm.dtypes.MX).view(torch.uint8).clone()
        bad_columns = [3, 40, 77, 130]
        for column, code in zip(bad_columns, (0, 1, 253, 254)):
            plain[column, 5] = code
        b_scale = nvfp4_gemm.to_blocked(plain.view(torch.float8_e8m0fnu), fmt=nvfp4_gemm.dtypes.MX)
        out = poisoned((m, n), torch.float32, device)
        nvfp4_gemm.gemm(cpu.a.to(device), cpu.b.to(device), None, b_scale.to(device), out=out, config=config)
        out = out.cpu()
        assert torch.isnan(out[:, bad_columns]).all(), config
        good = [c for c in range(n) if c not in bad_columns]
        ops = nvfp4_gemm.testing.Operands(a=cpu.a, b=cpu.b[good], a_scale=None,
                                          b_scale=nvfp4_gemm.to_blocked(plain[good].view(torch.float8_e8m0fnu),
                                                                        fmt=nvfp4_gemm.dtypes.MX), alpha=None)
        check_exact(out[:, good].contiguous(), ops, f"{config}: the in-range columns")
