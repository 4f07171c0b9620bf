"""Random block-scaled operands (NVFP4, MXFP4, MXFP8 x MXFP4) for tests, benchmarks and the demo.

FP4 bytes are uniform over all 256 values (so every one of the 16 codes appears in both nibbles);
FP8 (e4m3) values uniform over the 254 finite bytes; scales are drawn from a spread of positive e4m3
values (NVFP4) or powers of two (MX, ue8m0) so that blocks differ. Nothing is ever all-zero or
all-equal (shared/spec/nvfp4.md, "Correctness bar").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from ..dtypes import NVFP4, BlockFormat, gemm_format
from ..formats import (
    E8M0_BIAS,
    block_format_of,
    blocked_scale_numel,
    from_blocked,
    reference_gemm_float64,
    round_once,
    to_blocked,
    ulp,
)

__all__ = [
    "Operands",
    "random_operands",
    "random_scales",
    "random_fp8_values",
    "earned_tolerance",
    "check_against_reference",
    "assert_blocked_like",
]

_FP32_UNIT_ROUNDOFF = 2.0**-24


@dataclass
class Operands:
    a: torch.Tensor  # (m, k/2) or (l, m, k/2) uint8; (m, k) or (l, m, k) float8_e4m3fn (mxfp8xmxfp4), fp16/bf16 (W4A16)
    b: torch.Tensor  # (n, k/2) or (l, n, k/2) uint8
    a_scale: Optional[torch.Tensor]  # blocked, flat, float8_e4m3fn (nvfp4) or float8_e8m0fnu (mx); None for W4A16
    b_scale: torch.Tensor
    alpha: Optional[torch.Tensor]  # fp32 scalar tensor or None


def random_scales(
    rows: int,
    k: int,
    l: int,
    generator: torch.Generator,
    exponent_range: tuple[int, int] = (-3, 1),
    *,
    fmt: BlockFormat = NVFP4,
) -> torch.Tensor:
    """Plain (l, rows, k/block) scales of the block format `fmt`. NVFP4: e4m3 scales 2**e * (1 + f/8), e in
    exponent_range, f in 0..7. MX: ue8m0 scales 2**e, e in exponent_range (-127..127).

    These are exact scale values, positive, as quantizers produce them. The default 0.125..3.75 is
    close to the GPU MODE data (scales 0..3): outputs have a standard deviation of ~2.3e3 at K = 16384
    and stay far inside fp16's range (65504).
    """
    shape = (l, rows, k // fmt.values_per_scale)
    exponent = torch.randint(exponent_range[0], exponent_range[1] + 1, shape, generator=generator)
    if fmt.scale_dtype == "float8_e8m0fnu":
        if exponent_range[0] < -E8M0_BIAS or exponent_range[1] > 254 - E8M0_BIAS:
            raise ValueError(f"ue8m0 scales are 2^-127 .. 2^127, got exponent_range={exponent_range}")
        return (exponent + E8M0_BIAS).to(torch.uint8).view(torch.float8_e8m0fnu)
    fraction = torch.randint(0, 8, shape, generator=generator)
    values = torch.ldexp(1.0 + fraction.to(torch.float32) / 8.0, exponent.to(torch.float32))
    return values.to(torch.float8_e4m3fn)


# The e4m3 bytes that are NaN (0x7F, 0xFF); every other byte is a finite value.
_E4M3_NAN_BYTES = (0x7F, 0xFF)
# Default scale exponents per (GEMM format, operand): FP8 values (up to 448, root mean square ~100) take
# scales 2^-9 .. 2^-5, so MXFP8 x MXFP4 outputs have about the size of FP4 x FP4 ones.
_DEFAULT_EXPONENTS = {"e2m1": (-3, 1), "e4m3": (-9, -5), "fp16": (-3, 1), "bf16": (-3, 1)}


def random_fp8_values(shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    """float8_e4m3fn values uniform over the 254 finite bytes (every code, both signs, no NaN)."""
    drawn = torch.randint(0, 254, shape, generator=generator)
    drawn = drawn + (drawn >= _E4M3_NAN_BYTES[0]).to(drawn.dtype)  # skip 0x7F; 0xFF is above the draw
    return drawn.to(torch.uint8).view(torch.float8_e4m3fn)


def random_16bit_values(shape: tuple[int, ...], dtype: torch.dtype, exponent_range: tuple[int, int],
                        generator: torch.Generator) -> torch.Tensor:
    """16-bit activations (weight-only GEMMs): normal draws times 2^e, e uniform in `exponent_range`,
    rounded once to `dtype` (both signs, full mantissas, magnitudes over a few binades)."""
    exponent = torch.randint(exponent_range[0], exponent_range[1] + 1, shape, generator=generator)
    return torch.ldexp(torch.randn(shape, generator=generator), exponent.to(torch.float32)).to(dtype)


def random_operands(
    m: int,
    n: int,
    k: int,
    l: Optional[int] = None,
    *,
    seed: int,
    device: torch.device | str = "cpu",
    with_alpha: bool = False,
    alpha_per_column: bool = False,
    padding_byte: int = 0,
    format: str = "nvfp4",
    exponent_ranges: Optional[tuple[tuple[int, int], tuple[int, int]]] = None,
) -> Operands:
    """Fresh random operands. `l=None` gives 2-D operands; an int gives (l, rows, k/2) ones.

    `format`: the GEMM format (dtypes.GEMM_FORMATS: "nvfp4", "mxfp4", "mxfp8xmxfp4", or the weight-only
    "fp16xnvfp4" / "bf16xnvfp4", whose `a` is 16-bit values and `a_scale` None); `exponent_ranges`:
    the (a, b) scale exponent ranges (default: 2^-3 .. 2^1 for FP4 values, 2^-9 .. 2^-5 for FP8 ones; for
    16-bit activations the exponents of their values).

    `with_alpha`: a one-element alpha in [2^-3, 2^-2); with `alpha_per_column` an (N,) vector instead,
    each column's alpha (1 + u) * 2^e with e drawn from -6..3 (scales of partitions quantized apart).

    `padding_byte` fills the blocked layout's padding (the contract says kernels must ignore it:
    use a nonzero finite scale byte such as 0x38 (e4m3 1.0) or 0x7F (ue8m0 1.0) to test that).
    """
    described = gemm_format(format)
    fmt = described.block
    if exponent_ranges is None:
        exponent_ranges = (_DEFAULT_EXPONENTS[described.a.element.name], _DEFAULT_EXPONENTS[described.b.element.name])
    generator = torch.Generator().manual_seed(seed)
    batches = 1 if l is None else l
    a_scale = None
    if described.weight_only:
        a = random_16bit_values((batches, m, k), getattr(torch, described.a.element.storage_dtypes[0]),
                                exponent_ranges[0], generator)
    elif described.a.element.per_element == 2:
        a = torch.randint(0, 256, (batches, m, k // 2), dtype=torch.uint8, generator=generator)
    else:
        a = random_fp8_values((batches, m, k), generator)
    b = torch.randint(0, 256, (batches, n, k // 2), dtype=torch.uint8, generator=generator)
    if not described.weight_only:
        a_scale = _blocked_with_padding(random_scales(m, k, batches, generator, exponent_ranges[0], fmt=fmt),
                                        padding_byte, fmt)
        assert a_scale.numel() == blocked_scale_numel(m, k, batches, fmt=fmt)
    b_scale = _blocked_with_padding(random_scales(n, k, batches, generator, exponent_ranges[1], fmt=fmt), padding_byte, fmt)
    alpha = None
    if with_alpha and alpha_per_column:
        exponents = torch.randint(-6, 4, (n,), generator=generator).to(torch.float32)
        alpha = torch.ldexp(1.0 + torch.rand(n, generator=generator), exponents).to(torch.float32)
    elif with_alpha:
        alpha = torch.ldexp(torch.tensor(1.0 + torch.rand((), generator=generator).item()), torch.tensor(-3.0))
        alpha = alpha.to(torch.float32).reshape(())
    if l is None:
        a, b = a[0], b[0]
    return Operands(
        a=a.to(device),
        b=b.to(device),
        a_scale=None if a_scale is None else a_scale.to(device),
        b_scale=b_scale.to(device),
        alpha=None if alpha is None else alpha.to(device),
    )


def _blocked_with_padding(plain: torch.Tensor, padding_byte: int, fmt: BlockFormat) -> torch.Tensor:
    blocked = to_blocked(plain, fmt=fmt)
    if padding_byte:
        marker = to_blocked(torch.ones_like(plain.view(torch.uint8)), fmt=fmt).bool()
        blocked.view(torch.uint8)[~marker] = padding_byte
    return blocked


def fp32_roundings(k: int) -> int:
    """The FP32 roundings along one output's accumulation chain, at most, in every kernel of the table:
    one per 16-element MMA step, one per split-K partial (at most one per 128-element stage), alpha and
    the final rescale: the `roundings` of `check_against_reference` for K = `k`."""
    return k // 16 + k // 128 + 2


def earned_tolerance(exact: torch.Tensor, magnitude: torch.Tensor, out_dtype: torch.dtype, roundings: int) -> torch.Tensor:
    """Per-element bound on |kernel - exact| for a kernel that accumulates in FP32 and rounds once.

    The kernel's FP32 sum s drifts from the exact sum by at most E = 2 * roundings * 2**-24 * T,
    T = |alpha| * sum_k |a_k b_k| (`magnitude`), where `roundings` counts the FP32 roundings along
    one output's accumulation chain; the factor 2 covers tensor cores that truncate instead of
    rounding to nearest when they accumulate (Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior
    of NVIDIA tensor cores", PeerJ Comput. Sci. 2021). The output is then one rounding of s:
    |out - exact| <= ulp_out(|exact| + E) / 2 + E. Away from cancellation this is about half an
    output ulp, stricter than the contract's rtol = atol = 1e-3; near zero it is the FP32 noise.
    """
    drift = 2.0 * roundings * _FP32_UNIT_ROUNDOFF * magnitude
    return ulp(exact.abs() + drift, out_dtype) / 2 + drift


def check_against_reference(out: torch.Tensor, ops: Operands, roundings: int) -> tuple[bool, str]:
    """(passed, summary) of `out` against the exact reference under `earned_tolerance`."""
    exact = reference_gemm_float64(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha)
    magnitude = reference_gemm_float64(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, magnitude=True)
    tolerance = earned_tolerance(exact, magnitude, out.dtype, roundings)
    error = (out.to(torch.float64) - exact).abs()
    finite = bool(torch.isfinite(out).all())
    worst = float((error / tolerance).max()) if finite else float("inf")
    bitwise = float((out == round_once(exact, out.dtype)).double().mean())
    outside_contract = int((error > 1e-3 + 1e-3 * exact.abs()).sum())
    summary = (
        f"max |err| / earned tolerance = {worst:.3f}, {bitwise:.2%} bitwise equal to the exact rounding, "
        f"{outside_contract} of {out.numel()} outside rtol = atol = 1e-3"
    )
    return finite and worst <= 1.0, summary


def assert_blocked_like(reference_plain: torch.Tensor, blocked: torch.Tensor) -> None:
    """Assert that `blocked` holds the scales `reference_plain` in the blocked layout gemm reads.

    `reference_plain`: plain row-major scales (rows, K/16) or (L, rows, K/16) (K/32 for MX scales), as
    a quantizer computes them; `blocked`: what you are about to pass as a_scale or b_scale. Padding bytes are not compared
    (the kernels ignore them). gemm checks the scales' size, not their order: plain scales whose
    size happens to match (rows a multiple of 128, K/16 of 4) are accepted and give a wrong result.
    This check names that mistake; nvfp4_gemm.to_blocked(reference_plain) is the fix.
    """
    plain = reference_plain.unsqueeze(0) if reference_plain.dim() == 2 else reference_plain
    if plain.dim() != 3:
        raise AssertionError(f"reference_plain must be (rows, K/16) or (L, rows, K/16), got {tuple(reference_plain.shape)}")
    if blocked.dtype != plain.dtype:
        raise AssertionError(f"blocked has dtype {blocked.dtype}, reference_plain {plain.dtype}")
    batches, rows, cols = plain.shape
    fmt = block_format_of(plain.dtype)
    k = cols * fmt.values_per_scale
    expected = blocked_scale_numel(rows, k, batches, fmt=fmt)
    if blocked.numel() != expected:
        raise AssertionError(
            f"blocked holds {blocked.numel()} scales; the blocked layout of {batches} x {rows} x {cols} plain scales "
            f"holds L * round_up(rows, 128) * round_up(K/16, 4) = {expected}: build it with "
            f"nvfp4_gemm.to_blocked(reference_plain)"
        )
    want = plain.contiguous().view(torch.uint8)
    got = from_blocked(blocked, rows, k, batches, fmt=fmt).view(torch.uint8)
    if torch.equal(got, want):
        return
    if torch.equal(blocked.contiguous().view(torch.uint8).reshape(-1)[: want.numel()], want.reshape(-1)):
        raise AssertionError(
            "blocked holds the scales in plain row-major order, not in the blocked (cuBLAS 128x4) layout gemm "
            "reads: pass nvfp4_gemm.to_blocked(reference_plain)"
        )
    wrong = (got != want).nonzero()
    first = tuple(int(i) for i in wrong[0])
    raise AssertionError(
        f"blocked differs from the blocked layout of reference_plain at {len(wrong)} of {want.numel()} scales; "
        f"first at (l, row, k/16) = {first}: byte 0x{int(got[first]):02x}, expected 0x{int(want[first]):02x}. "
        f"Build blocked scales with nvfp4_gemm.to_blocked(reference_plain)"
    )
