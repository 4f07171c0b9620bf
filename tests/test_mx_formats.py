"""MX formats in the contract (docs/formats.md, "MX formats"): the format follows the dtypes, the exact
reference for MXFP4 x MXFP4 and MXFP8 x MXFP4 against a scalar formula written from the spec, both CPU
entry points equal to it, the blocked layout with K/32 columns, the testing helpers, the fake, and the
errors for every combination the op does not take."""

import math

import pytest
import torch
from conftest import cuda_device_or_skip, op_raises, poisoned

import nvfp4_gemm
from nvfp4_gemm import _checks, formats
from nvfp4_gemm.dtypes import GEMM_FORMATS, MX, NVFP4
from nvfp4_gemm.testing import check_against_reference, random_operands, random_scales

FORMATS = [f.name for f in GEMM_FORMATS if not f.weight_only]  # the block-scaled ones (weight-only: test_weight_only.py)


# --- decoders written from the spec, apart from formats.py --------------------------------------


def e2m1(code: int) -> float:
    magnitude = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)[code & 7]
    return -magnitude if code & 8 else magnitude


def e4m3(byte: int) -> float:
    sign = -1.0 if byte & 0x80 else 1.0
    exponent, mantissa = (byte >> 3) & 0xF, byte & 7
    if exponent == 0xF and mantissa == 7:
        return math.nan
    if exponent == 0:
        return sign * math.ldexp(mantissa, -9)
    return sign * math.ldexp(8 + mantissa, exponent - 10)


def e8m0(byte: int) -> float:
    return math.nan if byte == 255 else math.ldexp(1.0, byte - 127)


def plain_scale_bytes(blocked: torch.Tensor, rows: int, k: int, l: int, block: int) -> list:
    """Plain (l, rows, k/block) scale bytes read from blocked storage with the spec's offset formula."""
    raw = blocked.contiguous().view(torch.uint8).reshape(-1).tolist()
    padded_rows, padded_cols = -(-rows // 128) * 128, -(-(k // block) // 4) * 4
    per_matrix = padded_rows * padded_cols

    def offset(r, c):
        return ((r // 128) * (padded_cols // 4) + c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4

    return [[[raw[i * per_matrix + offset(r, c)] for c in range(k // block)] for r in range(rows)] for i in range(l)]


def scalar_reference(ops, m, n, k, l, fmt_name):
    """alpha * sum_k deq(a) deq(b) as exact float64 sums (math.fsum of exact products)."""
    described = nvfp4_gemm.dtypes.gemm_format(fmt_name)
    block = described.block.values_per_scale
    scale_value = e8m0 if described.block is MX else e4m3
    a_bytes = ops.a.contiguous().view(torch.uint8).reshape(l, m, -1).tolist()
    b_bytes = ops.b.contiguous().view(torch.uint8).reshape(l, n, -1).tolist()

    def fp4_values(rows):
        return [[[e2m1(byte >> (4 * half) & 0xF) for byte in row for half in (0, 1)] for row in mat] for mat in rows]

    a_values = fp4_values(a_bytes) if described.a.element.per_element == 2 else [
        [[e4m3(byte) for byte in row] for row in mat] for mat in a_bytes
    ]
    b_values = fp4_values(b_bytes)
    sa = plain_scale_bytes(ops.a_scale, m, k, l, block)
    sb = plain_scale_bytes(ops.b_scale, n, k, l, block)
    alpha = [1.0] * n if ops.alpha is None else ops.alpha.double().reshape(-1).expand(n).tolist()
    out = torch.empty(l, m, n, dtype=torch.float64)
    for i in range(l):
        for r in range(m):
            for c in range(n):
                terms = [
                    (a_values[i][r][j] * scale_value(sa[i][r][j // block])) * (b_values[i][c][j] * scale_value(sb[i][c][j // block]))
                    for j in range(k)
                ]
                out[i, r, c] = math.fsum(terms) * alpha[c]
    return out


# --- the format follows the dtypes ----------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_format_follows_the_dtypes(fmt):
    ops = random_operands(64, 32, 128, seed=1, format=fmt)
    shape = _checks.check_gemm_args(ops.a, ops.b, ops.a_scale, ops.b_scale, None, torch.float16)
    assert shape.format.name == fmt and (shape.m, shape.n, shape.k) == (64, 32, 128)
    expected_a = torch.float8_e4m3fn if fmt == "mxfp8xmxfp4" else torch.uint8
    expected_scale = torch.float8_e4m3fn if fmt == "nvfp4" else torch.float8_e8m0fnu
    assert ops.a.dtype == expected_a and ops.a_scale.dtype == ops.b_scale.dtype == expected_scale
    assert ops.a.shape[-1] == (128 if fmt == "mxfp8xmxfp4" else 64)


# --- the exact reference ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp8xmxfp4"])
@pytest.mark.parametrize("l", [None, 2])
@pytest.mark.parametrize(
    "exponents",
    [
        None,  # the defaults
        ((-120, -113), (100, 107)),  # near both ends of ue8m0's range; spread small enough for exact float64 sums
    ],
)
def test_reference_matches_scalar_formula(fmt, l, exponents):
    m, n, k = 5, 8, 96  # three MX blocks; rows and columns padded in the blocked layout
    ops = random_operands(m, n, k, l, seed=11, format=fmt, with_alpha=True, exponent_ranges=exponents)
    batches = 1 if l is None else l
    got = formats.reference_gemm_float64(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha).reshape(batches, m, n)
    want = scalar_reference(ops, m, n, k, batches, fmt)
    assert torch.equal(got, want)
    for out_dtype in (torch.float16, torch.bfloat16, torch.float32):
        rounded = formats.reference_gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out_dtype)
        assert torch.equal(rounded.reshape(batches, m, n), formats.round_once(want, out_dtype))


def test_e8m0_codes_decode_to_powers_of_two_and_255_is_nan():
    codes = torch.arange(256, dtype=torch.uint8).reshape(2, 128).T.contiguous()  # 128 rows x 2 blocks of 32
    blocked = formats.to_blocked(codes.view(torch.float8_e8m0fnu), fmt=MX)
    data = torch.full((128, 32), 0x22, dtype=torch.uint8)  # every value 1.0 (code 2 in both nibbles)
    values = formats.dequantize(data, blocked, torch.float64)
    for byte in range(256):
        row, block = byte % 128, byte // 128
        got = values[row, 32 * block: 32 * (block + 1)]
        if byte == 255:
            assert bool(torch.isnan(got).all())
        else:
            assert bool((got == math.ldexp(1.0, byte - 127)).all())


def test_nan_scale_makes_its_outputs_nan():
    ops = random_operands(4, 8, 64, seed=2, format="mxfp4")
    plain = formats.from_blocked(ops.b_scale, 8, 64, fmt=MX).clone()
    plain.view(torch.uint8)[3, 1] = 255
    out = nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, formats.to_blocked(plain, fmt=MX), out_dtype=torch.float32)
    assert bool(torch.isnan(out[:, 3]).all()) and bool(torch.isfinite(out[:, [0, 1, 2, 4, 5, 6, 7]]).all())


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("out_dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("l", [None, 3])
def test_both_cpu_entry_points_are_the_reference(fmt, out_dtype, l):
    ops = random_operands(130, 72, 160, l, seed=7, format=fmt, with_alpha=True, padding_byte=0x3F)
    want = formats.reference_gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out_dtype)
    got_op = torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out_dtype)
    out = torch.full_like(want, float("nan"))
    got_api = nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out)
    assert got_api is out
    assert torch.equal(got_op, want) and torch.equal(out, want)
    passed, summary = check_against_reference(out, ops, roundings=1)
    assert passed, summary


@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp8xmxfp4"])
def test_padding_bytes_do_not_change_the_result(fmt):
    plain = random_operands(100, 40, 96, seed=3, format=fmt)
    padded = random_operands(100, 40, 96, seed=3, format=fmt, padding_byte=0x85)
    assert not torch.equal(plain.a_scale.view(torch.uint8), padded.a_scale.view(torch.uint8))
    assert torch.equal(
        nvfp4_gemm.gemm(plain.a, plain.b, plain.a_scale, plain.b_scale),
        nvfp4_gemm.gemm(padded.a, padded.b, padded.a_scale, padded.b_scale),
    )


def test_float4_dtype_is_mxfp4_too():
    ops = random_operands(16, 16, 64, seed=4, format="mxfp4")
    fp4 = getattr(torch, "float4_e2m1fn_x2", None)
    if fp4 is None:
        pytest.skip("this torch has no float4_e2m1fn_x2")
    got = nvfp4_gemm.gemm(ops.a.view(fp4), ops.b.view(fp4), ops.a_scale, ops.b_scale)
    assert torch.equal(got, nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale))


def test_weight_only_with_mx_weights_is_exact():
    ops = random_operands(6, 16, 64, seed=5, format="mxfp4")
    x = torch.randn(6, 64, generator=torch.Generator().manual_seed(5)).to(torch.bfloat16)
    got = formats.reference_gemm(x, ops.b, None, ops.b_scale, None, torch.float32)
    b_values = formats.dequantize(ops.b, ops.b_scale, torch.float64)
    want = formats.round_once(x.double() @ b_values.T, torch.float32)
    assert torch.equal(got, want)


# --- layout and helpers ----------------------------------------------------------------------------


@pytest.mark.parametrize("rows,k,l", [(1, 32, 1), (129, 32 * 5, 2), (256, 1024, 1)])
def test_mx_blocked_layout_has_k_over_32_columns(rows, k, l):
    plain = random_scales(rows, k, l, torch.Generator().manual_seed(6), (-127, 127), fmt=MX)
    assert plain.shape == (l, rows, k // 32) and plain.dtype == torch.float8_e8m0fnu
    blocked = formats.to_blocked(plain, fmt=MX)
    padded_cols = -(-(k // 32) // 4) * 4
    assert blocked.numel() == formats.blocked_scale_numel(rows, k, l, fmt=MX) == l * -(-rows // 128) * 128 * padded_cols
    assert torch.equal(formats.from_blocked(blocked, rows, k, l, fmt=MX).view(torch.uint8), plain.view(torch.uint8))
    assert plain_scale_bytes(blocked, rows, k, l, 32) == plain.view(torch.uint8).tolist()


@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp8xmxfp4"])
def test_random_mx_operands_cover_every_code_and_varied_scales(fmt):
    ops = random_operands(256, 128, 512, seed=8, format=fmt)
    b_codes = formats.unpack_fp4(ops.b)
    assert set(b_codes.unique().tolist()) == set(range(16))
    if fmt == "mxfp8xmxfp4":
        a_bytes = set(ops.a.view(torch.uint8).unique().tolist())
        assert a_bytes == set(range(256)) - {0x7F, 0xFF}  # every finite e4m3 byte, no NaN
    else:
        assert set(formats.unpack_fp4(ops.a).unique().tolist()) == set(range(16))
    for scales, rows in ((ops.a_scale, 256), (ops.b_scale, 128)):
        codes = formats.from_blocked(scales, rows, 512, fmt=MX).view(torch.uint8)
        assert codes.unique().numel() == 5  # every exponent of the default range
    nvfp4_gemm.testing.assert_blocked_like(formats.from_blocked(ops.a_scale, 256, 512, fmt=MX), ops.a_scale)


def test_fake_gives_shapes_for_every_format():
    from torch._subclasses.fake_tensor import FakeTensorMode

    for fmt in FORMATS:
        ops = random_operands(64, 32, 128, 2, seed=9, format=fmt)
        with FakeTensorMode() as mode:
            fakes = [mode.from_tensor(t) for t in (ops.a, ops.b, ops.a_scale, ops.b_scale)]
            out = torch.ops.nvfp4.gemm(*fakes, None, torch.bfloat16)
        assert tuple(out.shape) == (2, 64, 32) and out.dtype == torch.bfloat16


@pytest.mark.parametrize("fmt", FORMATS)
def test_opcheck(fmt, float8_bitwise_allclose):
    ops = random_operands(16, 16, 64, seed=10, format=fmt, with_alpha=True)
    torch.library.opcheck(torch.ops.nvfp4.gemm.default, (ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, torch.float32))


# --- errors ----------------------------------------------------------------------------------------


ENTRIES = [torch.ops.nvfp4.gemm, nvfp4_gemm.gemm]


@pytest.mark.parametrize("entry", ENTRIES)
def test_e4m3_scales_with_fp8_activations_are_refused(entry):
    mx = random_operands(16, 16, 64, seed=12, format="mxfp8xmxfp4")
    nv = random_operands(16, 16, 64, seed=12)
    with pytest.raises(TypeError, match=r"a torch.float8_e4m3fn with torch.float8_e4m3fn scales is no format.*"
                                        r"float8_e4m3fn activations \(MXFP8\) take float8_e8m0fnu scales"):
        entry(mx.a, nv.b, nv.a_scale, nv.b_scale)


@pytest.mark.parametrize("entry", ENTRIES)
def test_mixed_scale_dtypes_are_refused(entry):
    mx = random_operands(128, 16, 64, seed=13, format="mxfp4")
    nv = random_operands(128, 16, 64, seed=13)
    with pytest.raises(TypeError, match=r"a_scale and b_scale must have one dtype .* got a_scale torch.float8_e4m3fn "
                                        r"and b_scale torch.float8_e8m0fnu"):
        entry(nv.a, nv.b, nv.a_scale, mx.b_scale)


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.int8, torch.float8_e5m2, torch.float32])
def test_other_scale_dtypes_are_refused(entry, dtype):
    ops = random_operands(16, 16, 64, seed=14, format="mxfp4")
    bad = torch.zeros(ops.a_scale.numel(), dtype=dtype)
    with pytest.raises(TypeError, match=r"a_scale must be torch.float8_e4m3fn or torch.float8_e8m0fnu"):
        entry(ops.a, ops.b, bad, bad)


@pytest.mark.parametrize("entry", ENTRIES)
def test_fp8_weights_are_refused(entry):
    ops = random_operands(16, 16, 64, seed=15, format="mxfp8xmxfp4")
    with pytest.raises(TypeError, match=r"^b must hold packed FP4 bytes"):
        entry(ops.a, ops.a, ops.a_scale, ops.a_scale)


@pytest.mark.parametrize("entry", ENTRIES)
def test_e5m2_activations_are_refused(entry):
    ops = random_operands(16, 16, 64, seed=16, format="mxfp8xmxfp4")
    with pytest.raises(TypeError, match=r"^a must hold packed FP4 bytes, float8_e4m3fn values \(MXFP8\) or 16-bit values"):
        entry(ops.a.view(torch.float8_e5m2), ops.b, ops.a_scale, ops.b_scale)


@pytest.mark.parametrize("entry", ENTRIES)
def test_fp8_activations_must_have_k_columns(entry):
    ops = random_operands(16, 16, 64, seed=17, format="mxfp8xmxfp4")
    with pytest.raises(ValueError, match=r"a \(torch.float8_e4m3fn, MXFP8\) is \(rows, K\).*a.shape\[-1\] must be "
                                         r"2 \* b.shape\[-1\]: a.shape=\(16, 32\), b.shape=\(16, 32\)"):
        entry(ops.a[:, :32].contiguous(), ops.b, ops.a_scale, ops.b_scale)


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp8xmxfp4"])
def test_mx_k_must_be_a_multiple_of_32(entry, fmt):
    ops = random_operands(16, 16, 64, seed=18, format=fmt)
    a = ops.a[:, : ops.a.shape[1] * 3 // 4].contiguous()  # K = 48: 1.5 MX blocks
    b = ops.b[:, :24].contiguous()
    source = "2 \\* a.shape\\[-1\\]" if fmt == "mxfp4" else "a.shape\\[-1\\]"
    with pytest.raises(ValueError, match=rf"K \(= {source}\) must be a multiple of 32, got K=48 \(the {fmt} format: "
                                         r"32 values per scale"):
        entry(a, b, ops.a_scale, ops.b_scale)


@pytest.mark.parametrize("entry", ENTRIES)
def test_nvfp4_sized_scales_in_e8m0_are_refused(entry):
    """Scales sized for 16 values per scale (NVFP4) but typed e8m0: the K/32 layout is half as wide."""
    ops = random_operands(128, 128, 512, seed=19, format="mxfp4")
    nv = random_operands(128, 128, 512, seed=19)
    wrong = nv.a_scale.view(torch.uint8).view(torch.float8_e8m0fnu)
    with pytest.raises(ValueError, match=r"^a_scale must hold the blocked layout of 1 x 128 rows x K/32=16 scales: .* "
                                         r"= 2048 elements, got 4096 .*mxfp4: torch.float8_e8m0fnu scales, one per 32"):
        entry(ops.a, ops.b, wrong, ops.b_scale)


@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp8xmxfp4"])
def test_pinned_configs_check_the_format_on_the_cpu_as_on_a_gpu(fmt):
    ops = random_operands(128, 128, 256, seed=20, format=fmt)
    with pytest.raises(NotImplementedError, match=rf"the {fmt} format .* has no sm120 kernel in this build"):
        nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, config="sm120_coop_128x128x128")
    with pytest.raises(ValueError, match=rf"config 'sm90_wgmma_128x128x128_prepass_splitk' runs the nvfp4 format; this call is {fmt}"):
        nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, config="sm90_wgmma_128x128x128_prepass_splitk")
    with pytest.raises(ValueError, match=rf"config 'sm100_1sm_128x128x256_c1x1' runs the nvfp4 format; this call is {fmt}"):
        nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, config="sm100_1sm_128x128x256_c1x1")
    own = f"sm100_1sm_128x128x256_c1x1_{fmt}"
    got = nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, config=own)
    assert torch.equal(got, formats.reference_gemm(ops.a, ops.b, ops.a_scale, ops.b_scale))
    nv = random_operands(128, 128, 256, seed=20)
    with pytest.raises(ValueError, match=rf"config '{own}' runs the {fmt} format; this call is nvfp4"):
        nvfp4_gemm.gemm(nv.a, nv.b, nv.a_scale, nv.b_scale, config=own)


def test_w4a8_configs_need_k_multiple_of_128():
    ops = random_operands(64, 64, 96, seed=22, format="mxfp8xmxfp4")
    with pytest.raises(ValueError, match=r"cannot run .*K must be a multiple of 128 for the sm100 mxfp8xmxfp4 kernels"):
        nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, config="sm100_1sm_128x128x256_c1x1_mxfp8xmxfp4")
    assert torch.equal(  # the CPU reference itself takes K % 32
        nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale),
        formats.reference_gemm(ops.a, ops.b, ops.a_scale, ops.b_scale),
    )
    with pytest.raises(ValueError, match=r"no config can run M=64 N=64 K=96 .*multiple of 128"):
        nvfp4_gemm.resolve(64, 64, 96, format="mxfp8xmxfp4")


def test_every_family_names_formats_the_table_knows():
    names = {f.name for f in GEMM_FORMATS}
    for family in nvfp4_gemm.families.FAMILIES:
        assert set(family.formats) <= names
    assert NVFP4.values_per_scale == 16 and MX.values_per_scale == 32


@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp8xmxfp4"])
@pytest.mark.parametrize("out_dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("m,n,k,l", [(1, 8, 256, None), (129, 136, 384, None), (200, 264, 1024, 3)])
def test_mx_on_a_gpu_matches_the_exact_reference(fmt, out_dtype, m, n, k, l):
    device = cuda_device_or_skip()
    family = nvfp4_gemm.families.for_sm_major(torch.cuda.get_device_capability(device)[0])
    if family is None or fmt not in family.formats:
        pytest.skip(f"this GPU's family has no {fmt} kernel (test_mx_on_a_gpu_without_kernels_is_a_clear_error)")
    ops = random_operands(m, n, k, l, seed=23, format=fmt, device=device, with_alpha=True, padding_byte=0x85)
    out = poisoned((m, n) if l is None else (l, m, n), out_dtype, device)
    nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out)
    cpu = random_operands(m, n, k, l, seed=23, format=fmt, with_alpha=True, padding_byte=0x85)
    passed, summary = check_against_reference(out.cpu(), cpu, roundings=nvfp4_gemm.testing.fp32_roundings(k))
    assert passed, summary


@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp8xmxfp4"])
def test_mx_on_a_gpu_without_kernels_is_a_clear_error(fmt):
    device = cuda_device_or_skip()
    family = nvfp4_gemm.families.for_sm_major(torch.cuda.get_device_capability(device)[0])
    if family is not None and fmt in family.formats:
        pytest.skip(f"the {family.name} family runs {fmt} (test_mx_on_a_gpu_matches_the_exact_reference)")
    ops = random_operands(128, 128, 256, seed=21, format=fmt, device=device)
    match = rf"the {fmt} format \(a .*\) has no sm\d+ kernel in this build"
    out = poisoned((128, 128), torch.float16, device)
    with pytest.raises(NotImplementedError, match=rf"^{match}"):
        nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out)
    assert bool(torch.isnan(out).all())  # nothing was launched into it
    with op_raises(NotImplementedError, match):
        torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale)
    nvfp4 = random_operands(128, 128, 256, seed=21, device=device)  # the same shape in NVFP4 still runs
    passed, summary = check_against_reference(nvfp4_gemm.gemm(nvfp4.a, nvfp4.b, nvfp4.a_scale, nvfp4.b_scale), nvfp4,
                                              roundings=nvfp4_gemm.testing.fp32_roundings(256))
    assert passed, summary
    with pytest.raises(NotImplementedError, match=rf"^{match}"):  # and the MX call after it is refused again
        nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale)
