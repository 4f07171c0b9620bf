"""The OCP MX quantize recipe (docs/formats.md, "Quantize to MX"): `quantize(x, format="mxfp4" | "mxfp8")`
against a scalar implementation written from the spec (brute-force nearest-even search), its special
cases, the CUDA kernels' arithmetic run on the host (`_C.quantize_on_host`) bit for bit against it, the
op's CUDA path wired to that hook, the op, the API, the fake, its errors, and quantize -> gemm for
MXFP4 x MXFP4 and W4A8."""

import math

import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import formats
from nvfp4_gemm.dtypes import MX, OPERAND_FORMATS
from nvfp4_gemm.quantization import Quantized

from test_quantize import host_quantize

EMAX = {"mxfp4": 2, "mxfp8": 8}


def e4m3_magnitude(code: int) -> float:
    exponent, mantissa = code >> 3, code & 7
    return math.ldexp(mantissa, -9) if exponent == 0 else math.ldexp(8 + mantissa, exponent - 10)


# every finite non-negative value of each element format, indexed by its magnitude code
MAGNITUDES = {
    "mxfp4": [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0],
    "mxfp8": [e4m3_magnitude(c) for c in range(0x7F)],
}


def nearest_even_code(t: float, values: list) -> int:
    """Brute force: the code of the value nearest t, ties to the even code, saturating at the largest."""
    if t >= values[-1]:
        return len(values) - 1
    best = min(range(len(values)), key=lambda c: (abs(values[c] - t), c % 2))
    return best


def scalar_mx(x: torch.Tensor, fmt: str):
    """(codes per element, scale byte per block) for x (rows, K) float32, one value at a time."""
    values = MAGNITUDES[fmt]
    sign_bit = 8 if fmt == "mxfp4" else 0x80
    rows = x.tolist()
    codes, scales = [], []
    for row in rows:
        code_row, scale_row = [], []
        for start in range(0, len(row), 32):
            block = row[start:start + 32]
            if not all(math.isfinite(v) for v in block):
                scale_row.append(255)
                code_row += [0] * 32
                continue
            amax = max(abs(v) for v in block)
            floor_log2 = math.frexp(amax)[1] - 1 if amax > 0 else -1000
            shared = max(-127, floor_log2 - EMAX[fmt])
            scale_row.append(shared + 127)
            for v in block:
                code = nearest_even_code(abs(v) * 2.0 ** -shared, values)
                code_row.append(code | (sign_bit if math.copysign(1.0, v) < 0 else 0))
        codes.append(code_row)
        scales.append(scale_row)
    return codes, scales


def unpacked_codes(data: torch.Tensor, fmt: str) -> list:
    raw = data.view(torch.uint8)
    return (formats.unpack_fp4(raw) if fmt == "mxfp4" else raw).reshape(-1, raw.shape[-1] * (2 if fmt == "mxfp4" else 1)).tolist()


def spread_x(rows: int, k: int, seed: int, dtype=torch.float32, span: int = 30) -> torch.Tensor:
    """Normal values, each block of 32 scaled by its own power of two in 2^-span .. 2^span, a few zeros."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, k // 32, 32, generator=g)
    exponents = torch.randint(-span, span + 1, (rows, k // 32, 1), generator=g).float()
    x = x * torch.ldexp(torch.ones(rows, k // 32, 1), exponents)
    x[torch.rand(x.shape, generator=g) < 0.05] = 0.0
    return x.reshape(rows, k).to(dtype)


@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp8"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_recipe_matches_scalar_implementation(fmt, dtype):
    x = spread_x(6, 128, seed=1, dtype=dtype)
    data, scale = formats.quantize_mx_reference(x, fmt)
    codes, scales = scalar_mx(x.float(), fmt)
    assert unpacked_codes(data, fmt) == codes
    assert formats.from_blocked(scale, 6, 128, fmt=MX).view(torch.uint8).tolist() == scales


@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp8"])
def test_ties_round_to_even_and_the_top_saturates(fmt):
    values = MAGNITUDES[fmt]
    top = values[-1]
    # amax = 2^emax * 1.75 -> shared exponent 0: each value is its own scaled value
    midpoints = [(values[c] + values[c + 1]) / 2 for c in range(len(values) - 1)]
    block = [2.0 ** EMAX[fmt] * 1.75] + midpoints[: 31]
    block += [0.0] * (32 - len(block))
    # above the largest value but below 2^(emax + 1), so the shared exponent stays 0: saturates
    overflow = [top * 1.07] + [-top * 1.1] + [0.0] * 30
    x = torch.tensor([block, overflow], dtype=torch.float32)
    data, scale = formats.quantize_mx_reference(x, fmt)
    codes, scales = scalar_mx(x, fmt)
    assert unpacked_codes(data, fmt) == codes
    got = formats.from_blocked(scale, 2, 32, fmt=MX).view(torch.uint8).tolist()
    assert got == scales
    assert got[0] == [127]  # the shared exponent is 0
    top_code = len(values) - 1
    sign_bit = 8 if fmt == "mxfp4" else 0x80
    assert codes[1][:2] == [top_code, top_code | sign_bit]
    for i, m in enumerate(midpoints[:31]):  # each tie goes to its even neighbour
        assert codes[0][1 + i] == (i if i % 2 == 0 else i + 1)


@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp8"])
def test_zero_tiny_huge_and_non_finite_blocks(fmt):
    fmax = torch.finfo(torch.float32).max
    blocks = [
        [0.0] * 32,  # zero: scale 2^-127 (byte 0), codes 0
        [-0.0] * 32,  # -0 keeps its sign bit
        [2.0**-140] + [0.0] * 31,  # subnormal amax: the smallest scale
        [fmax] + [-fmax / 3] + [1.0] * 30,  # the largest: shared exponent 127 - emax
        [1.0] * 31 + [float("nan")],
        [float("inf")] + [1.0] * 31,
        [1.0] * 16 + [float("-inf")] + [2.0] * 15,
    ]
    x = torch.tensor(blocks, dtype=torch.float32)
    data, scale = formats.quantize_mx_reference(x, fmt)
    codes, scales = scalar_mx(x, fmt)
    assert unpacked_codes(data, fmt) == codes
    got = [row[0] for row in formats.from_blocked(scale, len(blocks), 32, fmt=MX).view(torch.uint8).tolist()]
    assert got == [s[0] for s in scales]
    assert got[:4] == [0, 0, 0, 127 - EMAX[fmt] + 127] and got[4:] == [255, 255, 255]
    sign_bit = 8 if fmt == "mxfp4" else 0x80
    assert set(codes[1]) == {sign_bit} and set(codes[0]) == {0}
    values = formats.dequantize(data, scale, torch.float64)
    assert bool(torch.isnan(values[4:]).all()) and bool(torch.isfinite(values[:4]).all())


@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp8"])
def test_error_is_half_a_step_below_the_saturated_range(fmt):
    x = spread_x(64, 256, seed=2)
    data, scale = formats.quantize_mx_reference(x, fmt)
    values = formats.dequantize(data, scale, torch.float64)
    plain = formats.from_blocked(scale, 64, 256, fmt=MX).view(torch.uint8).long()
    power = torch.ldexp(torch.ones_like(plain, dtype=torch.float64), (plain - 127).double()).repeat_interleave(32, -1)
    scaled = x.double().abs() / power
    top = MAGNITUDES[fmt][-1]
    in_range = scaled <= top
    # the step of the format at each scaled value: e2m1 0.5 below 2, then 1, 2; e4m3 2^(e - 3), 2^-9 subnormal
    if fmt == "mxfp4":
        step = torch.where(scaled < 2, 0.5, torch.where(scaled < 4, 1.0, 2.0))
    else:
        exponent = torch.floor(torch.log2(scaled.clamp(min=2.0**-6)))
        step = torch.ldexp(torch.ones_like(scaled), exponent - 3)
    error = (values - x.double()).abs() / power
    assert bool((error[in_range] <= step[in_range] / 2).all())
    assert bool((values[~in_range].abs() == top * power[~in_range]).all())


# --- the op and the API ----------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp8"])
@pytest.mark.parametrize("shape", [(5, 96), (2, 3, 64)])
def test_op_api_and_reference_agree(fmt, shape):
    x = spread_x(math.prod(shape[:-1]), shape[-1], seed=3).reshape(shape).to(torch.bfloat16)
    data, scale = formats.quantize_mx_reference(x, fmt)
    got = torch.ops.nvfp4.quantize(x, None, torch.tensor(4.0), fmt)
    api = nvfp4_gemm.quantize(x, partner_global_scale=torch.tensor(4.0), format=fmt)
    per_element = 2 if fmt == "mxfp4" else 1
    for result in (Quantized(*got), api):
        assert result.data.shape == (*shape[:-1], shape[-1] // per_element)
        assert result.data.dtype == (torch.uint8 if fmt == "mxfp4" else torch.float8_e4m3fn)
        assert result.scale.dtype == torch.float8_e8m0fnu
        assert torch.equal(result.data.view(torch.uint8), data.view(torch.uint8))
        assert torch.equal(result.scale.view(torch.uint8), scale.view(torch.uint8))
        assert result.global_scale.item() == 1.0 and result.alpha.item() == 0.25


def test_api_writes_mx_outputs_in_place():
    x = spread_x(130, 64, seed=4)
    out = Quantized(
        data=torch.full((130, 64), 0x7F, dtype=torch.uint8).view(torch.float8_e4m3fn),
        scale=torch.full((formats.blocked_scale_numel(130, 64, fmt=MX),), 0xFF, dtype=torch.uint8).view(torch.float8_e8m0fnu),
        global_scale=torch.full((), float("nan")),
        alpha=torch.full((), float("nan")),
    )
    result = nvfp4_gemm.quantize(x, out=out, format="mxfp8")
    assert result is out
    data, scale = formats.quantize_mx_reference(x, "mxfp8")
    assert torch.equal(out.data.view(torch.uint8), data.view(torch.uint8))
    assert torch.equal(out.scale.view(torch.uint8), scale.view(torch.uint8))
    with pytest.raises(ValueError, match=r"out.scale must be a torch.float8_e8m0fnu tensor of shape \(1024,\)"):
        nvfp4_gemm.quantize(x, out=out._replace(scale=torch.empty(512, dtype=torch.float8_e4m3fn)), format="mxfp8")


def test_fake_shapes(float8_bitwise_allclose):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        x = mode.from_tensor(torch.randn(2, 200, 64, dtype=torch.bfloat16))
        data, scale, gs, alpha = torch.ops.nvfp4.quantize(x, None, None, "mxfp8")
        assert data.shape == (2, 200, 64) and data.dtype == torch.float8_e4m3fn
        assert scale.shape == (512 * 4,) and scale.dtype == torch.float8_e8m0fnu
        data, scale, gs, alpha = torch.ops.nvfp4.quantize(x, None, None, "mxfp4")
        assert data.shape == (2, 200, 32) and data.dtype == torch.uint8 and gs.shape == ()
    torch.library.opcheck(torch.ops.nvfp4.quantize.default, (torch.randn(33, 96), None, torch.tensor(2.0), "mxfp4"))
    torch.library.opcheck(torch.ops.nvfp4.quantize.default, (torch.randn(3, 64), None, None, "mxfp8"))


@pytest.mark.parametrize(
    "args,kwargs,error,match",
    [
        ((torch.randn(4, 48),), {"format": "mxfp4"}, ValueError, r"K\) must be a positive multiple of 32 \(values per mxfp4"),
        ((torch.randn(4, 64), torch.tensor(2.0)), {"format": "mxfp8"}, ValueError,
         r"format='mxfp8' has no global scale .* pass global_scale=None"),
        ((torch.randn(4, 64),), {"format": "mxfp6"}, ValueError, r"format must be one of 'nvfp4', 'mxfp4', 'mxfp8', got 'mxfp6'"),
    ],
)
def test_bad_arguments_are_named(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        nvfp4_gemm.quantize(*args, **kwargs)
    with pytest.raises(error, match=match):
        torch.ops.nvfp4.quantize(*args, *([None] * (3 - len(args))), kwargs["format"])


# --- the CUDA kernels' arithmetic, run on the host ----------------------------------------------------


def mx_reference(x: torch.Tensor, fmt: str, partner=None) -> tuple:
    """What quantize(x, format=fmt) returns: the MX recipe, global scale 1, alpha 1 / partner."""
    data, scale = formats.quantize_mx_reference(x, fmt)
    unit = torch.ones((), dtype=torch.float32)
    return data, scale, unit, formats.gemm_alpha(unit, partner)


def span_of(dtype) -> int:
    """Block exponents spread_x may use for dtype without leaving its range (fp16: 2^+-15)."""
    return 10 if dtype == torch.float16 else 30


def mx_special_x(dtype, fmt: str, rows: int = 300, k: int = 160) -> torch.Tensor:
    """Special rows over random ones (rows > 128: a partly padded row tile): every tie of the element
    format (a midpoint of two codes after scaling, both signs, shared exponents 0 and, outside fp16's
    range, +-40), a zero row, amax exactly a power of two, the input dtype's subnormals (alone and under
    a normal amax), its largest values, NaN/+-inf blocks and -0."""
    assert k == 160, "five blocks per row"
    x = spread_x(rows, k, seed=11, span=span_of(dtype)).double()
    values = MAGNITUDES[fmt]
    midpoints = [(lo + hi) / 2 for lo, hi in zip(values, values[1:])]
    signed = [m * (-1) ** i for i, m in enumerate(midpoints)]
    # each block keeps the largest midpoint, so its shared exponent is 0 (amax in [2^emax, 2^(emax+1)))
    ties = torch.zeros(5, 32, dtype=torch.float64)
    for block in range(5):
        chunk = ([midpoints[-1]] + signed[block * 31:(block + 1) * 31] + [0.0] * 32)[:32]
        ties[block] = torch.tensor(chunk)
    x[0] = ties.reshape(-1)
    x[1] = 0.0
    if dtype != torch.float16:
        x[2], x[3] = x[0] * 2.0**40, x[0] * 2.0**-40
    g = torch.Generator().manual_seed(12)
    for block, p in enumerate((-20, -3, 0, 5, 30 if dtype != torch.float16 else 14)):  # amax exactly 2^p (or -2^p)
        part = (torch.rand(32, generator=g, dtype=torch.float64) * 2 - 1) * 2.0**p * 0.99
        part[block] = 2.0**p * (-1) ** block
        x[4, block * 32:(block + 1) * 32] = part
    info = torch.finfo(dtype)
    tiny = info.tiny  # the input dtype's smallest normal: below it, its subnormals
    x[5] = torch.randn(k, generator=g, dtype=torch.float64) * tiny * 0.3
    x[5, 64] = tiny * 1.5  # a normal amax over subnormals
    x[6] = torch.randn(k, generator=g, dtype=torch.float64) * info.max / 8
    x[6, 0], x[6, 33], x[6, 70] = info.max, -info.max, info.max / 3
    x[7, 5], x[7, 40], x[7, 90], x[7, 100] = math.nan, math.inf, -math.inf, math.nan
    x[8, :32], x[8, 40] = -0.0, -0.0
    out = x.to(dtype)
    exact = out.double()
    assert torch.equal(exact[0], x[0]) and (dtype == torch.float16 or torch.equal(exact[2:4], x[2:4])), "ties"
    assert bool(((out[5].abs() < tiny) & (out[5] != 0)).any()), "subnormal inputs"
    return out


def assert_mx_bitwise(got, want):
    """Every output byte, NaN alphas aside (there are none: no global scale)."""
    for name, g, w in zip(("data", "scale", "global_scale", "alpha"), got, want):
        g, w = g.reshape(-1), w.reshape(-1)
        as_bytes = lambda t: t.view(torch.uint8) if t.element_size() == 1 else t.view(torch.int32)
        assert torch.equal(as_bytes(g), as_bytes(w)), f"{name} differs"


@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp8"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 32), (7, 96), (129, 64), (2, 3, 160), (300, 96)])
def test_host_hook_is_bitwise_the_reference(fmt, dtype, shape):
    x = spread_x(math.prod(shape[:-1]), shape[-1], seed=sum(shape), dtype=dtype, span=span_of(dtype)).reshape(shape)
    partner = torch.tensor([3.0e-2])
    assert_mx_bitwise(host_quantize(x, None, partner, fmt), mx_reference(x, fmt, partner))


@pytest.mark.parametrize("fmt", ["mxfp4", "mxfp8"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_host_hook_on_special_values(fmt, dtype):
    x = mx_special_x(dtype, fmt)
    want = mx_reference(x, fmt)
    assert_mx_bitwise(host_quantize(x, format=fmt), want)
    # the rows are what they say: scale bytes 0 (zero row), 255 (non-finite blocks), 127 (the ties)
    plain = formats.from_blocked(want[1], 300, 160, fmt=MX).view(torch.uint8)
    assert plain[0].tolist() == [127] * 5 and plain[1].tolist() == [0] * 5
    assert plain[7].tolist() == [255, 255, 255, 255, plain[7, 4].item()] and plain[7, 4] != 255


def test_host_hook_empty_input():
    x = torch.zeros(0, 64, dtype=torch.bfloat16)
    for fmt in ("mxfp4", "mxfp8"):
        assert_mx_bitwise(host_quantize(x, format=fmt), mx_reference(x, fmt))


@pytest.mark.parametrize("fmt", ["nvfp4", "mxfp4", "mxfp8"])
def test_cuda_path_runs_the_kernel_it_names(monkeypatch, fmt):
    """quantization's CUDA path on the host: _C.quantize replaced by the host hook over the same
    pointers. The format code and scratch it passes give the reference's bytes (MX: no amax scratch,
    no global scale pointer). The scratch dict is the test's own: the faked device 0 and stream 0 are a
    real GPU's default stream's key, and a host scratch left there would reach that GPU's kernels."""
    from nvfp4_gemm import _C, quantization

    launches = []

    def host_launch(x, dtype, format, rows, k, gs, partner, data, scale, gs_out, alpha_out, partials, device, stream):
        launches.append((format, gs, partials))
        _C.quantize_on_host(x, dtype, format, rows, k, gs, partner, data, scale, gs_out, alpha_out)

    monkeypatch.setattr(quantization._C, "quantize", host_launch)
    monkeypatch.setattr(quantization, "_device_index", lambda device: 0)
    monkeypatch.setattr(quantization, "_supported_devices", {0})
    monkeypatch.setattr(quantization, "_current_stream", lambda index: 0)
    host_scratch: dict = {}
    monkeypatch.setattr(quantization, "_amax_scratch", host_scratch)
    x = spread_x(130, 96, seed=13, dtype=torch.bfloat16)
    partner = torch.tensor([0.5])
    signature = quantization.check_quantize_args(x, None, partner, fmt)
    out = quantization._empty_outputs(x, signature)
    for t in out:
        t.view(torch.uint8).fill_(0xAB) if t.element_size() == 1 else t.fill_(math.nan)
    quantization._launch_cuda(x, None, partner, out, signature.rows, signature.k, signature.fmt)
    want = torch.ops.nvfp4.quantize(x, None, partner, fmt)  # the CPU op: the reference
    assert_mx_bitwise(out, want)
    code, gs, partials = launches[0]
    assert code == [f.name for f in OPERAND_FORMATS].index(fmt) and gs == 0
    assert (partials != 0) == (fmt == "nvfp4")
    assert list(host_scratch) == ([(0, 0)] if fmt == "nvfp4" else [])


# --- quantize -> gemm ------------------------------------------------------------------------------


@pytest.mark.parametrize("a_format,gemm_format", [("mxfp4", "mxfp4"), ("mxfp8", "mxfp8xmxfp4")])
def test_quantize_then_gemm_is_the_exact_gemm_of_the_quantized_operands(a_format, gemm_format):
    g = torch.Generator().manual_seed(6)
    x = torch.randn(48, 256, generator=g).to(torch.bfloat16)
    w = (torch.randn(40, 256, generator=g) * 0.02).to(torch.bfloat16)
    check_quantized_gemm(x, w, nvfp4_gemm.quantize(x, format=a_format), nvfp4_gemm.quantize(w, format="mxfp4"),
                         a_format, gemm_format)


def check_quantized_gemm(x, w, qa: Quantized, qw: Quantized, a_format: str, gemm_format: str):
    """The GEMM of CPU operands qa, qw (x and w quantized) is the GEMM format named, its result the exact
    product of the quantized values rounded once, and close to x @ w.T."""
    shape = nvfp4_gemm._checks.check_gemm_args(qa.data, qw.data, qa.scale, qw.scale, None, torch.float32)
    assert shape.format.name == gemm_format
    out = nvfp4_gemm.gemm(qa.data, qw.data, qa.scale, qw.scale, out_dtype=torch.float32)
    a_values = formats.dequantize(qa.data, qa.scale, torch.float64)
    w_values = formats.dequantize(qw.data, qw.scale, torch.float64)
    assert torch.equal(out, formats.round_once(a_values @ w_values.T, torch.float32))
    # and it approximates x @ w.T: relative error of the 4-bit (or 8-bit) quantization
    exact = x.double() @ w.double().T
    relative = float((out.double() - exact).norm() / exact.norm())
    assert relative < (0.2 if a_format == "mxfp4" else 0.12)
