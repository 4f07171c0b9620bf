"""The block-scaled formats (docs/formats.md): e2m1 and e4m3 values, e4m3 (NVFP4) and ue8m0 (MX) scales,
the blocked scale layout, the exact reference GEMM (float64 accumulation, rounded once to the output
dtype) and the quantization recipes (`quantize_reference`, the specification of every rounding the
quantize kernel does; `quantize_mx_reference`, the OCP MX recipe).

Everything here is plain torch and runs on any device; nothing here is on the kernels' hot path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch

from .dtypes import (
    BLOCK_FORMATS,
    ELEMENT_FORMATS,
    UNSCALED_ELEMENT_FORMATS,
    NVFP4,
    OUT_DTYPE_TABLE,
    BlockFormat,
    ElementFormat,
    GemmFormat,
    gemm_format_for,
    operand_format,
)

__all__ = [
    "E2M1_VALUES",
    "SCALE_BLOCK",
    "blocked_scale_shape",
    "blocked_scale_numel",
    "to_blocked",
    "from_blocked",
    "pack_fp4",
    "unpack_fp4",
    "e2m1_to_float",
    "block_format_of",
    "element_format_of",
    "gemm_format_of",
    "dequantize",
    "round_once",
    "ulp",
    "reference_gemm",
    "reference_gemm_float64",
    "MiniFloat",
    "E2M1",
    "E4M3",
    "GLOBAL_SCALE_NUMERATOR",
    "round_magnitude",
    "finite_amax",
    "global_scale_from_amax",
    "gemm_alpha",
    "quantize_reference",
    "E8M0_BIAS",
    "quantize_mx_reference",
]

# Value of each 4-bit e2m1 code; bit 3 is the sign (code 8 is -0).
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)

SCALE_BLOCK = NVFP4.values_per_scale  # FP4 elements per e4m3 scale
# A tile's rows are stored as 4 interleaved groups (cuBLAS's 128x4 layout: 4 groups of 32 rows).
_ROW_GROUPS = 4
# The output dtypes (dtypes.py) by torch dtype.
OUT_DTYPES_BY_TORCH = {getattr(torch, d.name): d for d in OUT_DTYPE_TABLE}

FP4_DTYPES = tuple(d for d in (torch.uint8, getattr(torch, "float4_e2m1fn_x2", None)) if d is not None)
# torch dtype -> the block format its scales name (docs/formats.md: the format follows the dtypes).
SCALE_DTYPES = {getattr(torch, f.scale_dtype): f for f in BLOCK_FORMATS if hasattr(torch, f.scale_dtype)}
# torch dtype -> the element format its bytes hold.
ELEMENT_DTYPES = {
    getattr(torch, name): e for e in ELEMENT_FORMATS for name in e.storage_dtypes if hasattr(torch, name)
}
# torch dtype -> the 16-bit activations a GEMM takes as given, a_scale=None (weight-only, "W4A16").
UNSCALED_DTYPES = {getattr(torch, name): e for e in UNSCALED_ELEMENT_FORMATS for name in e.storage_dtypes}
WEIGHT_ONLY_A_DTYPES = tuple(UNSCALED_DTYPES)


def block_format_of(scale_dtype: torch.dtype) -> BlockFormat:
    """The block format whose scales have this dtype (float8_e4m3fn: NVFP4; float8_e8m0fnu: MX)."""
    try:
        return SCALE_DTYPES[scale_dtype]
    except KeyError:
        raise ValueError(
            f"scales must be {' or '.join(map(str, SCALE_DTYPES))} (NVFP4 or MX), got {scale_dtype}"
        ) from None


def element_format_of(dtype: torch.dtype) -> ElementFormat:
    """The element format a quantized operand of this dtype holds (uint8/float4_e2m1fn_x2: packed e2m1;
    float8_e4m3fn: e4m3)."""
    try:
        return ELEMENT_DTYPES[dtype]
    except KeyError:
        raise ValueError(f"quantized values must be {' or '.join(map(str, ELEMENT_DTYPES))}, got {dtype}") from None


def gemm_format_of(a_dtype: torch.dtype, scale_dtype: torch.dtype) -> Optional[GemmFormat]:
    """The GEMM format of `a` values of `a_dtype` (quantized, or 16-bit as given) with (b's) scales of
    `scale_dtype`, or None."""
    element = ELEMENT_DTYPES.get(a_dtype) or UNSCALED_DTYPES.get(a_dtype)
    if element is None or scale_dtype not in SCALE_DTYPES:
        return None
    return gemm_format_for(element.name, SCALE_DTYPES[scale_dtype].scale_dtype)


def _round_up(x: int, multiple: int) -> int:
    return (x + multiple - 1) // multiple * multiple


def blocked_scale_shape(rows: int, k: int, *, fmt: BlockFormat = NVFP4) -> tuple[int, int]:
    """(padded rows, padded scale columns) of one matrix's blocked scales: (round_up(rows, 128),
    round_up(k / values_per_scale, 4)): k / 16 scale columns for NVFP4, k / 32 for MX."""
    if k % fmt.values_per_scale:
        raise ValueError(f"k must be a multiple of {fmt.values_per_scale}, got {k}")
    return _round_up(rows, fmt.tile_rows), _round_up(k // fmt.values_per_scale, fmt.tile_cols)


def blocked_scale_numel(rows: int, k: int, l: int = 1, *, fmt: BlockFormat = NVFP4) -> int:
    """Bytes of blocked scales for `l` matrices of `rows` x `k` values in the block format `fmt`."""
    padded_rows, padded_cols = blocked_scale_shape(rows, k, fmt=fmt)
    return l * padded_rows * padded_cols


def _as_bytes(t: torch.Tensor) -> torch.Tensor:
    return t if t.dtype == torch.uint8 else t.view(torch.uint8)


def to_blocked(scales: torch.Tensor, *, fmt: BlockFormat = NVFP4) -> torch.Tensor:
    """Plain scales (rows, k/block) or (l, rows, k/block), any dtype -> the flat blocked layout
    (l * R * C,), same dtype, padding zero. byte(r, c) lands at ((r//128)*(C/4) + c//4)*512 + (r%32)*16 + ((r%128)//32)*4 + c%4.
    The layout is the same for every block format (`fmt` gives its tile); block = 16 (NVFP4) or 32 (MX).
    """
    if scales.dim() not in (2, 3):
        raise ValueError(f"scales must be (rows, k/block) or (l, rows, k/block), got shape {tuple(scales.shape)}")
    plain = scales.unsqueeze(0) if scales.dim() == 2 else scales
    l, rows, cols = plain.shape
    padded_rows, padded_cols = _round_up(rows, fmt.tile_rows), _round_up(cols, fmt.tile_cols)
    padded = plain.new_zeros((l, padded_rows, padded_cols))
    padded[:, :rows, :cols] = plain
    # (l, row tile, row/32 group, row%32, col tile, col%4) -> order (l, row tile, col tile, row%32, row/32, col%4)
    tiles = padded.view(*_tile_view(l, padded_rows, padded_cols, fmt)).permute(0, 1, 4, 3, 2, 5)
    return tiles.reshape(-1)


def _tile_view(l: int, padded_rows: int, padded_cols: int, fmt: BlockFormat) -> tuple[int, ...]:
    """Plain padded scales viewed as (l, row tile, row group, row in group, col tile, col in tile)."""
    return (l, padded_rows // fmt.tile_rows, _ROW_GROUPS, fmt.tile_rows // _ROW_GROUPS, padded_cols // fmt.tile_cols,
            fmt.tile_cols)


def from_blocked(
    blocked: torch.Tensor, rows: int, k: int, l: Optional[int] = None, *, fmt: BlockFormat = NVFP4
) -> torch.Tensor:
    """Inverse of to_blocked: blocked scales (any shape, contiguous) of `rows` x `k` values in the block
    format `fmt` -> (rows, k/block), or (l, rows, k/block) when `l` is given (block = fmt.values_per_scale)."""
    batches = 1 if l is None else l
    padded_rows, padded_cols = blocked_scale_shape(rows, k, fmt=fmt)
    expected = batches * padded_rows * padded_cols
    if blocked.numel() != expected:
        raise ValueError(
            f"blocked scales for {batches} x ({rows} rows, k={k}) hold {expected} bytes, got {blocked.numel()}"
        )
    # stored order (l, row tile, col tile, row in group, row group, col in tile): to_blocked's permutation
    tile_view = _tile_view(batches, padded_rows, padded_cols, fmt)
    stored = tuple(tile_view[i] for i in (0, 1, 4, 3, 2, 5))
    raw = _as_bytes(blocked.contiguous()).view(*stored)
    plain = raw.permute(0, 1, 4, 3, 2, 5).reshape(batches, padded_rows, padded_cols)
    plain = plain[:, :rows, : k // fmt.values_per_scale].contiguous().view(blocked.dtype)
    return plain if l is not None else plain[0]


def unpack_fp4(packed: torch.Tensor) -> torch.Tensor:
    """Packed FP4 (..., k/2) bytes -> uint8 codes (..., k); element 2j is the low nibble of byte j."""
    raw = _as_bytes(packed)
    codes = torch.stack((raw & 0x0F, raw >> 4), dim=-1)
    return codes.reshape(*raw.shape[:-1], raw.shape[-1] * 2)


def pack_fp4(codes: torch.Tensor) -> torch.Tensor:
    """uint8 codes (..., k) with values 0..15 -> packed uint8 bytes (..., k/2)."""
    if codes.shape[-1] % 2:
        raise ValueError(f"the last dimension must be even, got {codes.shape[-1]}")
    pairs = codes.to(torch.uint8).reshape(*codes.shape[:-1], codes.shape[-1] // 2, 2)
    return (pairs[..., 0] & 0x0F) | ((pairs[..., 1] & 0x0F) << 4)


def e2m1_to_float(codes: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    table = torch.tensor(E2M1_VALUES, dtype=dtype, device=codes.device)
    return table[codes.long()]


# How each element format's bytes become values (float64 holds every one exactly).
_ELEMENT_DECODERS = {
    "e2m1": lambda data, dtype: e2m1_to_float(unpack_fp4(data), dtype),
    "e4m3": lambda data, dtype: data.to(dtype),
}


def dequantize(
    data: torch.Tensor, scale_blocked: torch.Tensor, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """Quantized values (rows, k / per byte) or (l, rows, k / per byte) with their blocked scales -> values
    (…, rows, k). The dtypes say the format: packed FP4 (uint8 / float4_e2m1fn_x2) or float8_e4m3fn
    values; float8_e4m3fn (NVFP4, per 16) or float8_e8m0fnu (MX, per 32) scales.

    Every e2m1 x e4m3 product is exact in fp16, bf16, fp32 and fp64. A value times an e8m0 scale
    (2^-127 .. 2^127) is exact in fp64, and in fp32 unless it leaves fp32's range.
    """
    fmt = block_format_of(scale_blocked.dtype)
    element = element_format_of(data.dtype)
    batched = data.dim() == 3
    rows, k = data.shape[-2], data.shape[-1] * element.per_element
    plain = from_blocked(scale_blocked, rows, k, data.shape[0] if batched else None, fmt=fmt)
    values = _ELEMENT_DECODERS[element.name](data, dtype)
    scales = plain.to(dtype).repeat_interleave(fmt.values_per_scale, dim=-1)
    return values * scales


def ulp(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Spacing of `dtype` values at the float64 magnitudes |x| (subnormal spacing below the normal range)."""
    described = OUT_DTYPES_BY_TORCH[dtype]
    mantissa_bits, min_exponent = described.mantissa_bits, described.min_exponent
    _, exponent = torch.frexp(x.abs())
    return torch.ldexp(torch.ones_like(x), (torch.clamp(exponent - 1, min=min_exponent) - mantissa_bits).to(x.dtype))


def round_once(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Round float64 values to `dtype` with one round-to-nearest-even step.

    torch's float64 -> float16/bfloat16 casts go through float32 and may round twice; here the
    value is rounded directly at the target format's quantum (subnormals included), then cast
    exactly.
    """
    if dtype not in OUT_DTYPES_BY_TORCH:
        raise ValueError(f"dtype must be one of {list(OUT_DTYPES_BY_TORCH)}, got {dtype}")
    if x.dtype != torch.float64:
        raise ValueError(f"round_once takes float64 values, got {x.dtype}")
    described = OUT_DTYPES_BY_TORCH[dtype]
    mantissa_bits, min_exponent, max_finite = described.mantissa_bits, described.min_exponent, described.max_finite
    _, exponent = torch.frexp(x)  # x = m * 2**exponent with 0.5 <= |m| < 1
    quantum_exponent = torch.clamp(exponent - 1, min=min_exponent) - mantissa_bits
    quantum = torch.ldexp(torch.ones_like(x), quantum_exponent.to(torch.float64))
    rounded = torch.round(x / quantum) * quantum  # torch.round: half to even; x / quantum is exact
    rounded = torch.where(rounded.abs() > max_finite, torch.copysign(torch.full_like(x, float("inf")), x), rounded)
    rounded = torch.where(torch.isfinite(x), rounded, x)  # inf and nan pass through
    return rounded.to(dtype)


def _a_values(a: torch.Tensor, a_scale: Optional[torch.Tensor], dtype: torch.dtype) -> torch.Tensor:
    if a_scale is not None:
        return dequantize(a, a_scale, dtype)
    if a.dtype not in WEIGHT_ONLY_A_DTYPES:
        raise ValueError(
            f"a_scale=None means a holds 16-bit values ({' or '.join(map(str, WEIGHT_ONLY_A_DTYPES))}), got {a.dtype}"
        )
    return a.to(dtype)


def reference_gemm(
    a: torch.Tensor,
    b: torch.Tensor,
    a_scale: Optional[torch.Tensor],
    b_scale: torch.Tensor,
    alpha: Optional[torch.Tensor] = None,
    out_dtype: torch.dtype = torch.float16,
) -> torch.Tensor:
    """The contract: out = alpha * deq(a) @ deq(b).T in float64, rounded once to `out_dtype`.

    Shapes as for `nvfp4_gemm.gemm`, in any format it takes (the dtypes say which: NVFP4, MXFP4,
    MXFP8 x MXFP4); runs on the tensors' device. With `a_scale=None`, `a` is a
    16-bit (M, K) or (L, M, K) tensor used as given (weight-only NVFP4): every product of a bf16 or
    fp16 value with an e2m1 x e4m3 value is exact in FP32 (at most 8 + 6 significant bits), and
    exact here in float64.
    """
    exact = reference_gemm_float64(a, b, a_scale, b_scale, alpha)
    return round_once(exact, out_dtype)


def reference_gemm_float64(
    a: torch.Tensor,
    b: torch.Tensor,
    a_scale: Optional[torch.Tensor],
    b_scale: torch.Tensor,
    alpha: Optional[torch.Tensor] = None,
    *,
    magnitude: bool = False,
) -> torch.Tensor:
    """alpha * deq(a) @ deq(b).T accumulated in float64, before the output rounding (`a` as given
    when `a_scale` is None).

    With `magnitude=True`: |alpha| * |deq(a)| @ |deq(b)|.T, the sum of the terms' magnitudes that
    bounds how far a finite-precision accumulation can drift (see testing.earned_tolerance)."""
    a_values = _a_values(a, a_scale, torch.float64)
    b_values = dequantize(b, b_scale, torch.float64)
    if magnitude:
        a_values, b_values = a_values.abs(), b_values.abs()
    exact = torch.matmul(a_values, b_values.transpose(-1, -2))
    if alpha is not None:
        factor = alpha.to(torch.float64).reshape(-1)  # one alpha, or alpha[n] per output column
        exact = exact * (factor.abs() if magnitude else factor)
    return exact


# --- the quantization recipe (docs/formats.md, "Quantize") --------------------------------------
#
# Every step is one IEEE fp32 operation rounded to nearest even (a multiply, a division, or the
# addition that rounds to a small format below), in this order; the CUDA kernels
# (csrc/include/nvfp4_gemm/quantize/nvfp4_quantize.cuh, and mx_quantize.cuh for the MX recipe below) do
# the same operations in the same order, so their codes and scale bytes equal these bit for bit.


@dataclass(frozen=True)
class MiniFloat:
    """A small unsigned float format, described by data: `mantissa_bits` stored mantissa bits,
    `min_exponent` the exponent of its smallest normal (below it: subnormals, spaced like that
    binade), `max_code` its largest finite magnitude code (no infinities; larger values saturate)."""

    name: str
    mantissa_bits: int
    min_exponent: int
    max_code: int

    @property
    def max_exponent(self) -> int:
        return self.min_exponent + (self.max_code >> self.mantissa_bits) - 1

    @property
    def max_value(self) -> float:
        fraction = self.max_code & ((1 << self.mantissa_bits) - 1)
        return math.ldexp(1.0 + fraction / (1 << self.mantissa_bits), self.max_exponent)


E2M1 = MiniFloat("e2m1", mantissa_bits=1, min_exponent=0, max_code=0x7)  # 0 .. 6; sign is bit 3 of a code
E4M3 = MiniFloat("e4m3", mantissa_bits=3, min_exponent=-6, max_code=0x7E)  # 0 .. 448; 0x7F is NaN
E4M3_NAN = 0x7F
GLOBAL_SCALE_NUMERATOR = E4M3.max_value * E2M1.max_value  # 448 * 6 = 2688: amax lands on the largest scale and code
_FLOAT32_MAX = float(torch.finfo(torch.float32).max)
_EXPONENT_MASK = 0x7F800000


def round_magnitude(a: torch.Tensor, fmt: MiniFloat) -> tuple[torch.Tensor, torch.Tensor]:
    """Round float32 magnitudes `a` (>= 0, finite or +inf) to `fmt`, to nearest with ties to even,
    saturating at its largest finite value; returns (codes int32, values float32).

    How: inputs are clamped to the largest value first (everything above rounds to it anyway).
    With E = max(exponent of a, fmt.min_exponent), the fp32 addition a + 2^(E + 23 - m) (m =
    mantissa bits) lands in a binade whose spacing is 2^(E - m), the format's spacing at a: that one
    addition is the rounding (ties to even, subnormals included), and the sum's low bits count the
    steps of 2^(E - m) above the binade's start."""
    if a.dtype != torch.float32:
        raise ValueError(f"round_magnitude takes float32 magnitudes, got {a.dtype}")
    m = fmt.mantissa_bits
    a = torch.clamp(a, max=fmt.max_value)
    min_exponent_bits = (fmt.min_exponent + 127) << 23
    exponent_bits = torch.clamp(a.view(torch.int32) & _EXPONENT_MASK, min=min_exponent_bits)
    magic_bits = exponent_bits + ((23 - m) << 23)
    magic = magic_bits.view(torch.float32)
    total = a + magic  # the rounding
    # steps above the binade start, plus 2^m codes per binade above the smallest normal's
    codes = (total.view(torch.int32) - magic_bits) + ((exponent_bits - min_exponent_bits) >> (23 - m))
    return codes, total - magic  # the subtraction is exact


def finite_amax(x: torch.Tensor) -> torch.Tensor:
    """max |x| over the finite elements of x as a float32 0-d tensor (0 when there are none)."""
    magnitudes = x.detach().abs().to(torch.float32)
    finite = torch.where(torch.isfinite(magnitudes), magnitudes, torch.zeros((), dtype=torch.float32, device=x.device))
    return finite.amax() if finite.numel() else torch.zeros((), dtype=torch.float32, device=x.device)


def global_scale_from_amax(amax: torch.Tensor) -> torch.Tensor:
    """The dynamic global scale: 2688 / amax in fp32 (the largest finite fp32 where that overflows),
    1 where amax is 0 (an all-zero or all-non-finite tensor: every block is zero or NaN anyway)."""
    amax = amax.to(torch.float32)
    scale = torch.tensor(GLOBAL_SCALE_NUMERATOR, dtype=torch.float32, device=amax.device) / amax
    scale = torch.clamp(scale, max=_FLOAT32_MAX)
    return torch.where(amax > 0, scale, torch.ones_like(scale))


def gemm_alpha(a_global_scale: torch.Tensor, b_global_scale: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The GEMM's alpha for two operands quantized with these global scales: 1 / (gs_a * gs_b),
    computed in float64 and rounded once to a float32 0-d tensor on their device (no host sync).
    Without `b_global_scale`: 1 / gs_a, the factor that dequantizes `a` alone (weight-only GEMM).
    A global scale of shape (N,) (a weight whose output partitions were quantized apart, e.g. fused
    q/k/v) gives the (N,) alpha of one scale per output column."""
    product = a_global_scale.to(torch.float64).reshape(-1)
    if b_global_scale is not None:
        product = product * b_global_scale.to(torch.float64).reshape(-1)
    alpha = torch.reciprocal(product).to(torch.float32)
    return alpha.reshape(()) if alpha.numel() == 1 else alpha


def quantize_reference(
    x: torch.Tensor,
    global_scale: Optional[torch.Tensor] = None,
    partner_global_scale: Optional[torch.Tensor] = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The quantization recipe, the specification of `torch.ops.nvfp4.quantize`.

    x: (..., K) float32/float16/bfloat16, K % 16 == 0; rows = prod(leading dims). Returns
    CPU tensors (fp4 (..., K/2) uint8, scale: blocked e4m3 (round_up(rows, 128) * round_up(K/16, 4),) with zero
    padding, global_scale: float32 0-d, alpha: float32 0-d = gemm_alpha(global_scale, partner)).

    gs = global_scale, or (dynamic) global_scale_from_amax(finite_amax(x)). Per block of 16:
      s = amax_block * fp32(gs / 6); scale = e4m3(s) (round to nearest even, subnormals, saturating
      at 448); r = min(gs / scale, FLT_MAX), 0 when scale is 0; code_i = sign(x_i) | e2m1(|x_i| * r)
      (nearest even, saturating at 6). A block holding NaN or +-inf, and every block when gs is not
      a positive finite number, gets scale byte 0x7F (e4m3 NaN) and codes 0: it dequantizes to NaN.
    """
    if x.shape[-1] % SCALE_BLOCK:
        raise ValueError(f"x.shape[-1] must be a multiple of {SCALE_BLOCK}, got {x.shape[-1]}")
    k = x.shape[-1]
    rows = math.prod(x.shape[:-1])
    # On the CPU: its fp32 operations are the IEEE ones this recipe names (torch's CUDA division by a
    # scalar multiplies by its reciprocal instead).
    values = x.detach().to("cpu", torch.float32).reshape(rows, k // SCALE_BLOCK, SCALE_BLOCK)
    if global_scale is None:
        gs = global_scale_from_amax(finite_amax(values))
    else:
        gs = global_scale.detach().to("cpu", torch.float32).reshape(())
    gs_valid = (gs > 0) & (gs <= _FLOAT32_MAX)
    magnitudes = values.abs()
    finite_block = torch.isfinite(magnitudes).all(dim=-1)
    block_amax = torch.where(finite_block, magnitudes.amax(dim=-1), torch.zeros((), dtype=torch.float32))
    scaled_amax = block_amax * (gs / torch.tensor(E2M1.max_value, dtype=torch.float32))
    scale_codes, scale_values = round_magnitude(scaled_amax, E4M3)
    reciprocal = torch.clamp(gs / scale_values, max=_FLOAT32_MAX)
    reciprocal = torch.where(scale_values > 0, reciprocal, torch.zeros((), dtype=torch.float32))
    magnitude_codes, _ = round_magnitude(magnitudes * reciprocal.unsqueeze(-1), E2M1)
    sign = torch.signbit(values).to(torch.int32) << 3
    nan_block = ~finite_block | ~gs_valid
    codes = torch.where(nan_block.unsqueeze(-1), 0, magnitude_codes | sign).to(torch.uint8)
    scale_bytes = torch.where(nan_block, E4M3_NAN, scale_codes).to(torch.uint8)
    fp4 = pack_fp4(codes.reshape(rows, k)).reshape(*x.shape[:-1], k // 2)
    scale = to_blocked(scale_bytes).view(torch.float8_e4m3fn)
    partner = None if partner_global_scale is None else partner_global_scale.detach().cpu()
    return fp4, scale, gs.clone(), gemm_alpha(gs, partner)


# --- the OCP MX recipe (docs/formats.md, "Quantize to MX") ---------------------------------------

E8M0_BIAS = 127  # a ue8m0 scale byte c (0..254) is 2^(c - 127); 255 is NaN
_E8M0_MIN_EXPONENT, _E8M0_MAX_EXPONENT = -E8M0_BIAS, 254 - E8M0_BIAS
# The MiniFloat that rounds each element format (sign separate).
_ELEMENT_ROUNDING = {"e2m1": E2M1, "e4m3": E4M3}


def quantize_mx_reference(x: torch.Tensor, format: str = "mxfp4") -> tuple[torch.Tensor, torch.Tensor]:
    """The OCP MX quantization (Microscaling Formats v1.0, section 6.3), the specification of
    `quantize(x, format="mxfp4" | "mxfp8")`: returns CPU tensors (values, scale) with values packed e2m1
    (..., K/2) uint8 for "mxfp4" or e4m3 (..., K) float8_e4m3fn for "mxfp8", and scale the blocked ue8m0
    scales (round_up(rows, 128) * round_up(K/32, 4),) float8_e8m0fnu with zero padding.

    Per block of 32 values, in fp32: amax = max |x_i|; the shared exponent
    e = clamp(floor(log2(amax)) - emax, -127, 127) (emax = 2 for e2m1, 8 for e4m3; floor(log2) is the
    exponent field, so it is exact; amax = 0 or below 2^-126 gives -127); scale byte e + 127; code_i =
    sign(x_i) | round(|x_i| * 2^-e) to the element format, nearest with ties to even, saturating at its
    largest value (6 or 448: floor(log2) puts amax * 2^-e in [2^emax, 2^(emax+1)), so the block's largest
    values above 6 or 448 saturate, as the OCP recipe specifies). The multiply by the power of two is
    exact (a product below fp32's normal range is far below half the element format's smallest step).
    A block holding NaN or +-inf gets the NaN scale byte 0xFF and codes 0: it dequantizes to NaN.
    """
    element = operand_format(format).element
    block = operand_format(format).block
    if block.values_per_scale != 32 or block.scale_dtype != "float8_e8m0fnu":
        raise ValueError(f"quantize_mx_reference quantizes to the MX formats, got format={format!r}")
    size = block.values_per_scale
    if x.shape[-1] % size:
        raise ValueError(f"x.shape[-1] must be a multiple of {size} for format={format!r}, got {x.shape[-1]}")
    k = x.shape[-1]
    rows = math.prod(x.shape[:-1])
    values = x.detach().to("cpu", torch.float32).reshape(rows, k // size, size)
    magnitudes = values.abs()
    finite_block = torch.isfinite(magnitudes).all(dim=-1)
    block_amax = torch.where(finite_block, magnitudes.amax(dim=-1), torch.zeros((), dtype=torch.float32))
    floor_log2 = ((block_amax.view(torch.int32) & _EXPONENT_MASK) >> 23) - 127  # -127 for 0 and subnormals
    shared = torch.clamp(floor_log2 - element.emax, _E8M0_MIN_EXPONENT, _E8M0_MAX_EXPONENT)
    # 2^-shared as fp32 bits: shared <= 127 - emax <= 125, so the exponent field 127 - shared is 2..254
    inverse = ((127 - shared) << 23).to(torch.int32).view(torch.float32)
    rounding = _ELEMENT_ROUNDING[element.name]
    magnitude_codes, _ = round_magnitude(magnitudes * inverse.unsqueeze(-1), rounding)
    sign_bit = 8 // element.per_element - 1
    sign = torch.signbit(values).to(torch.int32) << sign_bit
    codes = torch.where(finite_block.unsqueeze(-1), magnitude_codes | sign, 0).to(torch.uint8)
    scale_bytes = torch.where(finite_block, shared + E8M0_BIAS, block.scale_nan_code).to(torch.uint8)
    scale = to_blocked(scale_bytes, fmt=block).view(getattr(torch, block.scale_dtype))
    if element.per_element == 2:
        data = pack_fp4(codes.reshape(rows, k)).reshape(*x.shape[:-1], k // 2)
    else:
        data = codes.reshape(*x.shape[:-1], k).view(getattr(torch, element.storage_dtypes[0]))
    return data, scale
