"""Quantization (CPU): the rounding functions against brute force (the kernels' e2m1 rounding on every
float), the recipe against an independent scalar implementation, ties, subnormal scales, saturation, zero and
non-finite blocks, the kernel's own arithmetic run on the host (`_C.quantize_on_host`) bit for bit against the
reference, and the op (schema, fake, opcheck, torch.compile of quantize -> gemm)."""

import math
import shutil
import subprocess

import numpy as np
import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import _C, formats
from nvfp4_gemm.dtypes import OPERAND_FORMATS, operand_format
from nvfp4_gemm.quantization import INPUT_DTYPES, Quantized

from sm120_proof_build import ROOT, generated_include_dir

FLOAT32_MAX = np.float32(np.finfo(np.float32).max)


def format_grid(fmt: formats.MiniFloat) -> list[float]:
    """Every magnitude of the format by code, written out from the definition (not round_magnitude)."""
    values = []
    for code in range(fmt.max_code + 1):
        exponent, fraction = code >> fmt.mantissa_bits, code & ((1 << fmt.mantissa_bits) - 1)
        if exponent == 0:
            values.append(math.ldexp(fraction / (1 << fmt.mantissa_bits), fmt.min_exponent))
        else:
            values.append(math.ldexp(1 + fraction / (1 << fmt.mantissa_bits), fmt.min_exponent + exponent - 1))
    return values


def nearest_even(value: float, grid: list[float]) -> int:
    """Code of the grid value nearest to `value` (>= 0), ties to the even code, saturating."""
    if value >= grid[-1]:
        return len(grid) - 1
    best = min(range(len(grid)), key=lambda c: (abs(grid[c] - value), c % 2))
    return best


def run_host_check(tmp_path, name: str, flags: list[str], timeout: int) -> subprocess.CompletedProcess:
    """Build tests/<name>.cpp against the library's headers as host C++ (nvcc driving the host compiler, for the
    CUDA headers) and run it; skips where there is no nvcc."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not found: the check is built against the CUDA headers")
    program = tmp_path / name
    build = subprocess.run(
        [nvcc, "-x", "c++", "-std=c++17", "-O2", *flags, f"-I{ROOT / 'csrc' / 'include'}", f"-I{generated_include_dir()}",
         str(ROOT / "tests" / f"{name}.cpp"), "-o", str(program)],
        capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-4000:]
    return subprocess.run([str(program)], capture_output=True, text=True, timeout=timeout)


def test_e2m1_rounding_on_every_float(tmp_path):
    """The kernels' e2m1 rounding (quantize_common.cuh's e2m1_value_over_64: one VIADDMNMX, an FMA and an add,
    whose values the e4m3 conversion turns into codes) equals round_magnitude<E2M1>, the rounding of the
    reference's arithmetic, on every non-negative float up to +inf: tests/exhaustive_e2m1_rounding.cpp, built
    from the library's header as host C++ (nvcc driving the host compiler, for the CUDA headers) and run."""
    run = run_host_check(tmp_path, "exhaustive_e2m1_rounding", ["-Xcompiler=-ffp-contract=off"], timeout=600)
    assert run.returncode == 0 and "2139095041 floats checked, 0 mismatches" in run.stdout, run.stdout + run.stderr


def test_resident_block_position_on_the_host(tmp_path):
    """The resident kernel's block position (quantize_common.cuh): RowDivider's product-and-shift quotient and its
    remainder against the division for every divisor up to 2^16 and more, over the kernel's block range, and
    blocked_offset32 against blocked_offset: tests/resident_block_position.cpp, built as host C++ and run."""
    run = run_host_check(tmp_path, "resident_block_position", [], timeout=300)
    assert run.returncode == 0 and " 0 wrong; " in run.stdout and run.stdout.rstrip().endswith(" 0 wrong"), (
        run.stdout + run.stderr)


def test_format_constants():
    assert formats.E2M1.max_value == 6.0 and formats.E4M3.max_value == 448.0
    assert format_grid(formats.E2M1) == [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    assert format_grid(formats.E4M3)[:3] == [0.0, 2.0**-9, 2.0**-8] and format_grid(formats.E4M3)[8] == 2.0**-6
    assert formats.GLOBAL_SCALE_NUMERATOR == 2688.0


@pytest.mark.parametrize("fmt", [formats.E2M1, formats.E4M3], ids=lambda f: f.name)
def test_round_magnitude_matches_brute_force(fmt):
    grid = format_grid(fmt)
    midpoints = [(lo + hi) / 2 for lo, hi in zip(grid, grid[1:])]
    near = [np.nextafter(np.float32(v), np.float32(d)).item() for v in midpoints + grid for d in (0, 1e30)]
    gen = torch.Generator().manual_seed(1)
    uniform = (torch.rand(20000, generator=gen) * fmt.max_value * 1.3).tolist()
    spread = torch.exp(torch.randn(20000, generator=gen) * 8).tolist()  # subnormal (fp32 too) to huge
    values = torch.tensor(grid + midpoints + near + uniform + spread + [0.0, 1e-45, 1e38, math.inf], dtype=torch.float32)
    codes, rounded = formats.round_magnitude(values, fmt)
    want = torch.tensor([nearest_even(v, grid) for v in values.tolist()], dtype=torch.int32)
    assert torch.equal(codes, want)
    assert torch.equal(rounded, torch.tensor(grid, dtype=torch.float32)[want.long()])
    # ties went to the even code on both sides
    tie_codes = formats.round_magnitude(torch.tensor(midpoints, dtype=torch.float32), fmt)[0]
    assert (tie_codes % 2 == 0).all()


def test_round_magnitude_e4m3_agrees_with_torch_cast_in_range():
    values = torch.rand(200000, generator=torch.Generator().manual_seed(2)) * 460
    values = torch.cat([values, torch.ldexp(torch.rand(1000), torch.randint(-20, -5, (1000,)).float())])
    codes, _ = formats.round_magnitude(values, formats.E4M3)
    assert torch.equal(codes, values.to(torch.float8_e4m3fn).view(torch.uint8).to(torch.int32))


# --- the recipe, written out a second time with numpy float32 scalars --------------------------


def scalar_block(block: np.ndarray, gs: np.float32) -> tuple[int, list[int]]:
    """(scale byte, 16 codes) of one block by docs/formats.md, one numpy float32 operation at a time."""
    if not (gs > 0 and np.isfinite(gs)) or not np.isfinite(block).all():
        return 0x7F, [0] * 16
    with np.errstate(over="ignore", divide="ignore"):
        scaled_amax = np.float32(np.max(np.abs(block)) * np.float32(gs / np.float32(6)))
        scale_code = nearest_even(float(scaled_amax), format_grid(formats.E4M3))
        scale = np.float32(format_grid(formats.E4M3)[scale_code])
        reciprocal = np.float32(0) if scale == 0 else min(np.float32(gs / scale), FLOAT32_MAX)
        codes = []
        for v in block:
            magnitude = np.float32(np.abs(v) * reciprocal)
            codes.append(nearest_even(float(magnitude), format_grid(formats.E2M1)) | (8 if np.signbit(v) else 0))
    return scale_code, codes


def scalar_recipe(x: torch.Tensor, gs: float) -> tuple[list[int], list[list[int]]]:
    blocks = x.to(torch.float32).reshape(-1, 16).numpy()
    results = [scalar_block(b, np.float32(gs)) for b in blocks]
    return [r[0] for r in results], [r[1] for r in results]


def plain_outputs(q, rows, k):
    """(scale bytes (rows, k/16), codes (rows, k)) of a quantize result."""
    scales = formats.from_blocked(q[1].view(torch.uint8), rows, k)
    return scales, formats.unpack_fp4(q[0].reshape(rows, k // 2))


def random_x(shape, dtype, seed, spread=3.0):
    """Normal values with per-row magnitudes spread over e^(+-3 spread): blocks of very different size."""
    gen = torch.Generator().manual_seed(seed)
    rows = math.prod(shape[:-1])
    magnitude = torch.exp(torch.randn(rows, 1, generator=gen) * spread)
    return (torch.randn(rows, shape[-1], generator=gen) * magnitude).reshape(shape).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("static", [False, True])
def test_recipe_matches_scalar_implementation(dtype, static):
    x = random_x((3, 5, 64), dtype, seed=3 + static, spread=1.0 if dtype == torch.float16 else 3.0)
    gs = torch.tensor(17.25) if static else None
    q = formats.quantize_reference(x, gs)
    want_gs = formats.global_scale_from_amax(x.float().abs().max()) if gs is None else gs
    assert q[2].dtype == torch.float32 and q[2].shape == () and torch.equal(q[2], want_gs)
    scales, codes = plain_outputs(q, 15, 64)
    want_scales, want_codes = scalar_recipe(x, q[2].item())
    assert scales.reshape(-1).tolist() == want_scales
    assert codes.reshape(-1, 16).tolist() == want_codes
    assert q[0].shape == (3, 5, 32) and q[0].dtype == torch.uint8


def test_dynamic_global_scale_is_2688_over_amax():
    x = torch.tensor([[0.5] * 15 + [-3.0]])
    q = formats.quantize_reference(x)
    assert q[2].item() == np.float32(2688) / np.float32(3.0)
    # the block holding the amax lands on the largest scale and code
    scales, codes = plain_outputs(q, 1, 16)
    assert scales.item() == 0x7E and codes[0, 15].item() == 0x8 | 7


def test_e2m1_ties_round_to_even_codes():
    # gs = 1 and a block max of 6: the block scale is exactly 1, so the codes are e2m1(x) itself
    values = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, -0.25, -0.75, -1.25, -1.75, -2.5, -3.5, -5.0, -6.0]
    q = formats.quantize_reference(torch.tensor([values]), torch.tensor(1.0))
    scales, codes = plain_outputs(q, 1, 16)
    assert scales.item() == 0x38  # e4m3 1.0
    assert codes[0].tolist() == [0, 2, 2, 4, 4, 6, 6, 7, 8, 10, 10, 12, 12, 14, 14, 15]


@pytest.mark.parametrize(
    "block_amax,scale_byte",
    [
        (1.0625, 0x38),  # halfway between 1.0 (mantissa 000) and 1.125: to 1.0
        (1.1875, 0x3A),  # halfway between 1.125 (001) and 1.25 (010): to 1.25
        (3 * 2.0**-10, 0x02),  # subnormal: halfway between 2^-9 (code 1) and 2^-8 (code 2): to code 2
        (5 * 2.0**-10, 0x02),  # halfway between codes 2 and 3: to 2
        (7 * 2.0**-10, 0x04),  # halfway between codes 3 and 4: to 4
        (2.0**-10, 0x00),  # halfway between 0 and the smallest subnormal: to 0, the block is zero
        (2.0**-9, 0x01),  # the smallest subnormal scale
        (15 * 2.0**-10, 0x08),  # halfway between the largest subnormal and the smallest normal
        (448.0, 0x7E),
        (464.0, 0x7E),  # rounds to 480, which does not exist: saturates
        (1e30, 0x7E),
    ],
)
def test_scale_ties_subnormals_and_saturation(block_amax, scale_byte):
    # gs = 6 makes fp32(gs / 6) = 1, so the e4m3 input is the block max itself
    x = torch.tensor([[block_amax] + [block_amax / 3] * 15], dtype=torch.float32)
    q = formats.quantize_reference(x, torch.tensor(6.0))
    scales, codes = plain_outputs(q, 1, 16)
    assert scales.item() == scale_byte
    if scale_byte == 0:
        assert (codes == 0).all()
    if block_amax >= 464:  # saturated scale: the values saturate at 6 too
        assert codes[0, 0].item() == 7


def test_zero_blocks_rows_and_tensors():
    x = torch.randn(3, 64)
    x[1] = 0.0  # a zero row
    x[0, 16:32] = 0.0  # a zero block
    x[2, :16] = -0.0
    q = formats.quantize_reference(x)
    scales, codes = plain_outputs(q, 3, 64)
    assert (scales[1] == 0).all() and (codes[1] == 0).all()
    assert scales[0, 1] == 0 and (codes[0, 16:32] == 0).all()
    assert scales[2, 0] == 0 and (codes[2, :16] == 8).all()  # -0 keeps its sign bit
    values = formats.dequantize(q[0], q[1], torch.float32)
    assert torch.isfinite(values).all()
    zero = formats.quantize_reference(torch.zeros(5, 32, dtype=torch.bfloat16))
    assert zero[2].item() == 1.0 and zero[3].item() == 1.0  # amax 0: global scale 1, no 0/0
    assert (zero[0] == 0).all() and (zero[1].view(torch.uint8) == 0).all()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_values_make_their_block_nan(bad):
    x = random_x((4, 48), torch.bfloat16, seed=5)
    x[1, 20] = bad
    q = formats.quantize_reference(x)
    clean = x.clone()
    clean[1, 16:32] = 0.0
    # the dynamic global scale ignores non-finite values
    assert torch.equal(q[2], formats.global_scale_from_amax(formats.finite_amax(clean)))
    scales, codes = plain_outputs(q, 4, 48)
    assert scales[1, 1] == 0x7F and (codes[1, 16:32] == 0).all()
    values = formats.dequantize(q[0], q[1], torch.float32)
    assert torch.isnan(values[1, 16:32]).all()
    values[1, 16:32] = 0.0
    assert torch.isfinite(values).all()
    expected = formats.quantize_reference(clean, q[2])
    mask = torch.ones(4, 3, dtype=torch.bool)
    mask[1, 1] = False
    assert torch.equal(plain_outputs(expected, 4, 48)[0][mask], scales[mask])


@pytest.mark.parametrize("gs", [0.0, -2.0, float("nan"), float("inf")])
def test_invalid_static_global_scale_makes_every_block_nan(gs):
    q = formats.quantize_reference(torch.randn(2, 32), torch.tensor([gs]))
    scales, codes = plain_outputs(q, 2, 32)
    assert (scales == 0x7F).all() and (codes == 0).all()


def test_huge_and_tiny_magnitudes_stay_finite_and_exact():
    gen = torch.Generator().manual_seed(6)
    rows = []
    for exponent in (-140, -126, -100, -30, 0, 30, 100, 127):
        rows.append(torch.ldexp(torch.randn(64, generator=gen), torch.tensor(float(exponent))))
    x = torch.stack(rows)
    for gs in (None, torch.tensor(1.0), torch.tensor(1e30)):
        q = formats.quantize_reference(x, gs)
        assert torch.isfinite(q[2]) and q[2] > 0
        want_scales, want_codes = scalar_recipe(x, q[2].item())
        scales, codes = plain_outputs(q, 8, 64)
        assert scales.reshape(-1).tolist() == want_scales
        assert codes.reshape(-1, 16).tolist() == want_codes
    # a tensor of fp32 subnormals: 2688 / amax overflows, the global scale is the largest fp32
    tiny = formats.quantize_reference(torch.full((1, 16), 1e-42))
    assert tiny[2].item() == float(FLOAT32_MAX)


def test_quantization_error_is_bounded_by_half_a_step():
    x = random_x((64, 256), torch.float32, seed=7, spread=0.5)
    q = formats.quantize_reference(x)
    approx = formats.dequantize(q[0], q[1], torch.float64) / q[2].double()
    scales = formats.from_blocked(q[1], 64, 256).double().repeat_interleave(16, dim=-1) / q[2].double()
    # e2m1 steps are at most 2 (between 4 and 6) in units of the block scale; saturation at 6 adds
    # at most the e4m3 rounding of the scale (relative 2^-4)
    error = (approx - x.double()).abs()
    assert (error <= scales * 1.0 + x.double().abs() * 2.0**-4).all()
    assert 0.05 < float((approx - x.double()).norm() / x.double().norm()) < 0.15


def test_alpha_is_one_over_the_product_rounded_once():
    x, y = torch.randn(2, 32), torch.randn(3, 32) * 100
    qx = formats.quantize_reference(x)
    qy = formats.quantize_reference(y, partner_global_scale=qx[2])
    assert qy[3].item() == np.float32(1.0 / (np.float64(qx[2].item()) * np.float64(qy[2].item())))
    assert torch.equal(qy[3], nvfp4_gemm.gemm_alpha(qy[2], qx[2]))
    assert qx[3].item() == np.float32(1.0 / np.float64(qx[2].item()))


# --- the kernel's own arithmetic, run on the host ----------------------------------------------


def host_quantize(x, global_scale=None, partner=None, format="nvfp4"):
    """_C.quantize_on_host over poisoned outputs: the CUDA kernels' per-block code on host pointers
    (the op's output dtypes, as uint8 bytes)."""
    rows, k = x.numel() // x.shape[-1], x.shape[-1]
    x = x.contiguous()
    fmt = operand_format(format)
    data = torch.full((rows, k // fmt.element.per_element), 0xAB, dtype=torch.uint8)
    scale = torch.full((formats.blocked_scale_numel(rows, k, fmt=fmt.block),), 0xCD, dtype=torch.uint8)
    gs, alpha = torch.full((), float("nan")), torch.full((), float("nan"))
    _C.quantize_on_host(
        x.data_ptr(), INPUT_DTYPES[x.dtype], OPERAND_FORMATS.index(fmt), rows, k,
        0 if global_scale is None else global_scale.data_ptr(), 0 if partner is None else partner.data_ptr(),
        data.data_ptr(), scale.data_ptr(), gs.data_ptr(), alpha.data_ptr(),
    )
    return data, scale, gs, alpha


def assert_bitwise_equal(got, want):
    data, scale, gs, alpha = got
    assert torch.equal(data.view(torch.uint8).reshape(-1), want[0].view(torch.uint8).reshape(-1)), "codes differ"
    assert torch.equal(scale.view(torch.uint8), want[1].view(torch.uint8)), "scale bytes differ"
    assert torch.equal(gs.reshape(()).view(torch.int32), want[2].view(torch.int32)), "global scales differ"
    # alpha bit for bit, or NaN on both sides (an invalid global scale: which NaN is not specified)
    assert torch.equal(alpha.reshape(()), want[3]) or bool(alpha.isnan() & want[3].isnan()), "alphas differ"


def special_x(dtype):
    """Ties, subnormal scales, zero rows, huge/tiny magnitudes and non-finite values in one tensor."""
    x = random_x((300, 80), torch.float32, seed=8)
    x[0, :16] = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0] * 2) * 2.0**-6
    x[1] = 0.0
    x[2, :16] = 3 * 2.0**-16  # subnormal e4m3 scale under a large global scale
    x[3] *= 1e-30 if dtype != torch.float16 else 1e-3
    x[4] *= 1e30 if dtype != torch.float16 else 1e3
    x[5, 7], x[6, 40], x[7, 79] = float("nan"), float("inf"), -float("inf")
    x[8, :16] = -0.0
    return x.to(dtype)


# Subnormal inputs, scaled so that most elements of each type are subnormals with several significant
# bits, and a static global scale that gives their blocks non-zero scales: a block maximum that flushed
# them to zero would show (the dynamic scale saturates at FLT_MAX for the fp32 and bf16 ones).
SUBNORMAL_INPUT_SCALE = {torch.float32: 2.0**-130, torch.bfloat16: 2.0**-128, torch.float16: 2.0**-17}
SUBNORMAL_STATIC_GS = {torch.float32: 2.0**126, torch.bfloat16: 2.0**126, torch.float16: 2.0**20}


def subnormal_x(shape, dtype, seed):
    return (random_x(shape, torch.float32, seed, spread=1.0) * SUBNORMAL_INPUT_SCALE[dtype]).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("static", [False, True])
def test_host_hook_on_subnormal_inputs(dtype, static):
    x = subnormal_x((300, 80), dtype, seed=11)
    assert (x.abs() < torch.finfo(dtype).tiny).float().mean() > 0.5 and (x != 0).float().mean() > 0.9
    scale = torch.tensor([SUBNORMAL_STATIC_GS[dtype]]) if static else None
    want = formats.quantize_reference(x, scale)
    # most blocks' scales are not zero (the padding's are)
    assert (want[1].view(torch.uint8) != 0).sum() > 0.8 * x.numel() / 16
    assert_bitwise_equal(host_quantize(x, scale), want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("static", [False, True])
@pytest.mark.parametrize("shape", [(1, 16), (7, 48), (129, 96), (2, 3, 160), (300, 80)])
def test_host_hook_is_bitwise_the_reference(dtype, static, shape):
    x = random_x(shape, dtype, seed=sum(shape) + static, spread=1.0 if dtype == torch.float16 else 4.0)
    gs = torch.tensor([0.75]) if static else None
    partner = torch.tensor([3.0e-2])
    assert_bitwise_equal(host_quantize(x, gs, partner), formats.quantize_reference(x, gs, partner))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("gs", [None, 2.0**20, 0.0, float("nan")])
def test_host_hook_on_special_values(dtype, gs):
    x = special_x(dtype)
    scale = None if gs is None else torch.tensor([gs])
    assert_bitwise_equal(host_quantize(x, scale), formats.quantize_reference(x, scale))


@pytest.mark.parametrize("gs", [None, 4.0])
def test_empty_input_gives_empty_codes_and_a_global_scale(gs):
    scale = None if gs is None else torch.tensor([gs])
    q = nvfp4_gemm.quantize(torch.zeros(0, 3, 32), scale)
    assert q.data.shape == (0, 3, 16) and q.scale.numel() == 0
    assert q.global_scale.item() == (1.0 if gs is None else gs) and q.alpha.item() == 1.0 / q.global_scale.item()
    x = torch.zeros(0, 32, dtype=torch.bfloat16)
    assert_bitwise_equal(host_quantize(x, scale), formats.quantize_reference(x, scale))


def test_host_hook_rejects_bad_sizes():
    x = torch.zeros(2, 16)
    out = torch.zeros(1024, dtype=torch.uint8)
    outs = (out.data_ptr(),) * 4
    with pytest.raises(ValueError, match="multiple of 16"):
        _C.quantize_on_host(x.data_ptr(), 0, 0, 2, 24, 0, 0, *outs)
    with pytest.raises(ValueError, match="multiple of 32"):
        _C.quantize_on_host(x.data_ptr(), 0, OPERAND_FORMATS.index(operand_format("mxfp8")), 1, 16, 0, 0, *outs)
    with pytest.raises(ValueError, match="dtype must be"):
        _C.quantize_on_host(x.data_ptr(), 5, 0, 2, 16, 0, 0, *outs)
    with pytest.raises(ValueError, match="format must be an operand format's position"):
        _C.quantize_on_host(x.data_ptr(), 0, len(OPERAND_FORMATS), 2, 16, 0, 0, *outs)
    with pytest.raises(ValueError, match="this format has no global scale"):
        _C.quantize_on_host(x.data_ptr(), 0, OPERAND_FORMATS.index(operand_format("mxfp4")), 1, 32, out.data_ptr(), 0,
                            *outs)


# --- the op and the Python API ---------------------------------------------------------------------


def tagged_indices() -> torch.Tensor:
    """The uint64 index of each of the 1024 tagged slots in an AmaxScratch (csrc quantize.h: 16 to a line, one
    line per 1 KiB)."""
    slot = torch.arange(1024)
    return slot // _C.QUANTIZE_AMAX_SLOTS_PER_LINE * _C.QUANTIZE_AMAX_LINE_STRIDE + slot % _C.QUANTIZE_AMAX_SLOTS_PER_LINE


def test_dynamic_scale_slots_lie_one_line_per_kib():
    """The decode exchange's tagged slots (csrc quantize.h): 16 eight-byte slots fill a 128-byte line and the lines
    lie 1 KiB apart, so on a 128-byte aligned scratch no two polled lines share a 1 KiB-aligned chunk wherever it
    is placed; every slot is distinct and lies before the scratch's partials and last_tag."""
    per_line = _C.QUANTIZE_AMAX_SLOTS_PER_LINE
    assert per_line * 8 == 128 and _C.QUANTIZE_AMAX_LINE_STRIDE * 8 == 1024
    index = tagged_indices()
    assert index.unique().numel() == 1024
    tagged_bytes = (int(index.max()) + 1) * 8
    assert tagged_bytes + 1024 * 4 <= _C.QUANTIZE_AMAX_LAST_TAG_OFFSET
    assert _C.QUANTIZE_AMAX_LAST_TAG_OFFSET + 4 <= _C.QUANTIZE_AMAX_SCRATCH_BYTES
    for base in range(0, 1024, 128):  # every 128-byte aligned placement within a KiB
        first_byte, last_byte = base + index * 8, base + index * 8 + 7
        lines = first_byte // 128
        assert bool((lines == last_byte // 128).all())
        chunk_of_line = {}
        for line, chunk in zip(lines.tolist(), (first_byte // 1024).tolist()):
            chunk_of_line.setdefault(line, chunk)
        chunks = list(chunk_of_line.values())
        assert len(chunks) == 1024 // per_line and len(set(chunks)) == len(chunks), base


def test_schema():
    assert str(torch.ops.nvfp4.quantize.default._schema) == (
        "nvfp4::quantize(Tensor x, Tensor? global_scale=None, Tensor? partner_global_scale=None, "
        "str format=\"nvfp4\") -> (Tensor, Tensor, Tensor, Tensor)"
    )


@pytest.mark.parametrize(
    "shape,dtype,static",
    [((128, 64), torch.bfloat16, False), ((3, 7, 48), torch.float16, True), ((33, 160), torch.float32, False)],
)
def test_opcheck(shape, dtype, static, float8_bitwise_allclose):
    x = random_x(shape, dtype, seed=9, spread=1.0)
    gs = torch.tensor([5.5]) if static else None
    torch.library.opcheck(torch.ops.nvfp4.quantize.default, (x, gs, torch.tensor(2.0)))


def test_op_is_the_reference_and_the_api_matches():
    x = random_x((5, 96), torch.bfloat16, seed=10)
    got = torch.ops.nvfp4.quantize(x, None, None)
    want = formats.quantize_reference(x)
    for g, w in zip(got, want):
        assert torch.equal(g.view(torch.uint8) if g.dtype == torch.float8_e4m3fn else g,
                           w.view(torch.uint8) if w.dtype == torch.float8_e4m3fn else w)
    api = nvfp4_gemm.quantize(x)
    assert isinstance(api, Quantized) and api.data.shape == (5, 48)
    assert_bitwise_equal(api, want)


def test_api_writes_every_output_in_place():
    x = random_x((130, 48), torch.float16, seed=11, spread=1.0)
    out = Quantized(
        data=torch.full((130, 24), 0xFF, dtype=torch.uint8),
        scale=torch.full((formats.blocked_scale_numel(130, 48),), float("nan")).to(torch.float8_e4m3fn),
        global_scale=torch.full((), float("nan")),
        alpha=torch.full((), float("nan")),
    )
    result = nvfp4_gemm.quantize(x, torch.tensor(3.0), partner_global_scale=torch.tensor(0.5), out=out)
    assert result is out
    assert_bitwise_equal(out, formats.quantize_reference(x, torch.tensor(3.0), torch.tensor(0.5)))
    with pytest.raises(ValueError, match=r"out.scale must be a torch.float8_e4m3fn tensor of shape \(1024,\)"):
        nvfp4_gemm.quantize(x, out=out._replace(scale=torch.empty(512, dtype=torch.float8_e4m3fn)))


def test_fake_tensor_shapes_and_errors():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        x = mode.from_tensor(torch.randn(2, 200, 64, dtype=torch.bfloat16))
        data, scale, gs, alpha = torch.ops.nvfp4.quantize(x)
        assert data.shape == (2, 200, 32) and data.dtype == torch.uint8
        assert scale.shape == (512 * 4,) and scale.dtype == torch.float8_e4m3fn
        assert gs.shape == () and alpha.shape == () and gs.dtype == torch.float32
        with pytest.raises(ValueError, match=r"K\) must be a positive multiple of 16"):
            torch.ops.nvfp4.quantize(mode.from_tensor(torch.randn(4, 24)))


@pytest.mark.parametrize(
    "args,error,match",
    [
        ((torch.randn(4, 32, dtype=torch.float64),), TypeError, "x must be float32, float16 or bfloat16"),
        ((torch.randn(4, 40),), ValueError, r"x.shape\[-1\] \(K\) must be a positive multiple of 16"),
        ((torch.randn(64, 4).t(),), ValueError, "x must be contiguous"),
        ((torch.randn(()),), ValueError, "at least one dimension"),
        ((torch.randn(4, 32), torch.tensor([1.0, 2.0])), ValueError, "global_scale must be a float32 tensor with one"),
        ((torch.randn(4, 32), torch.tensor(1.0, dtype=torch.float64)), ValueError, "global_scale must be a float32"),
        ((torch.randn(4, 32), None, 3.0), TypeError, "partner_global_scale must be None or a float32 tensor"),
    ],
)
def test_bad_arguments_are_named(args, error, match):
    with pytest.raises(error, match=match):
        nvfp4_gemm.quantize(*args[:2], **({"partner_global_scale": args[2]} if len(args) > 2 else {}))
    if all(a is None or isinstance(a, torch.Tensor) for a in args):  # else the op's schema rejects it first
        with pytest.raises(error, match=match):
            torch.ops.nvfp4.quantize(*args)


def test_the_op_is_non_differentiable_and_the_api_refuses_grad():
    """The op's rules leave requires_grad out (its C++ CUDA kernel cannot read it through the stable ABI;
    the Autograd kernel falls through, as gemm's): an input that requires grad is a constant to it. The
    API, nvfp4_gemm.quantize, keeps the rule."""
    x = random_x((8, 64), torch.float32, seed=17)
    gs = torch.tensor([4.0])
    want = torch.ops.nvfp4.quantize(x, gs)
    got = torch.ops.nvfp4.quantize(x.clone().requires_grad_(), gs.clone().requires_grad_())
    assert not any(t.requires_grad or t.grad_fn is not None for t in got)
    assert_bitwise_equal(got, want)
    for name, args in (("x", (x.clone().requires_grad_(), gs)), ("global_scale", (x, gs.clone().requires_grad_()))):
        with pytest.raises(ValueError, match=rf"^{name} requires grad, but quantize has no backward"):
            nvfp4_gemm.quantize(*args)
        with torch.no_grad():
            assert_bitwise_equal(nvfp4_gemm.quantize(*args), want)


def test_quantize_then_gemm_is_the_exact_gemm_of_the_quantized_operands():
    x = random_x((33, 128), torch.bfloat16, seed=12, spread=0.5)
    w = random_x((40, 128), torch.bfloat16, seed=13, spread=0.5)
    qw = nvfp4_gemm.quantize(w)
    qx = nvfp4_gemm.quantize(x, partner_global_scale=qw.global_scale)
    out = nvfp4_gemm.gemm(qx.data, qw.data, qx.scale, qw.scale, qx.alpha, torch.bfloat16)
    exact = formats.dequantize(qx.data, qx.scale, torch.float64) @ formats.dequantize(qw.data, qw.scale, torch.float64).T
    exact = exact * qx.alpha.double()
    assert torch.equal(out, formats.round_once(exact, torch.bfloat16))
    relative = (out.double() - x.double() @ w.double().T).norm() / (x.double() @ w.double().T).norm()
    assert relative < 0.3  # two operands with ~10 % quantization noise each


def test_torch_compile_quantize_then_gemm_fullgraph():
    w = random_x((64, 96), torch.float16, seed=14, spread=0.5)
    qw = nvfp4_gemm.quantize(w)

    def layer(x, weight, weight_scale, weight_gs):
        data, scale, _, alpha = torch.ops.nvfp4.quantize(x, None, weight_gs)
        return torch.ops.nvfp4.gemm(data, weight, scale, weight_scale, alpha, torch.float16).relu()

    compiled = torch.compile(layer, fullgraph=True)
    for seed in (15, 16):
        x = random_x((20, 96), torch.float16, seed=seed, spread=0.5)
        got = compiled(x, qw.data, qw.scale, qw.global_scale)
        assert torch.equal(got, layer(x, qw.data, qw.scale, qw.global_scale))
        assert got.abs().max() > 0


def test_quantize_sms_is_set_checked_and_reset():
    assert nvfp4_gemm.quantize_sms() is None  # the default: the whole GPU
    try:
        nvfp4_gemm.set_quantize_sms(100)
        assert nvfp4_gemm.quantize_sms() == 100
        for bad in (0, -4, 1.5, True, "8"):
            with pytest.raises(ValueError, match="sms must be None .* or a positive int"):
                nvfp4_gemm.set_quantize_sms(bad)
        assert nvfp4_gemm.quantize_sms() == 100  # a refused value changes nothing
    finally:
        nvfp4_gemm.set_quantize_sms(None)
    assert nvfp4_gemm.quantize_sms() is None
