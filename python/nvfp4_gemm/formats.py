"""NVFP4 formats (shared/spec/nvfp4.md): e2m1 codes, e4m3 scales, the blocked scale layout, and the
exact reference GEMM (float64 accumulation, rounded once to the output dtype).

Everything here is plain torch and runs on any device; nothing here is on the kernels' hot path.
"""

from __future__ import annotations

from typing import Optional

import torch

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
    "dequantize",
    "round_once",
    "ulp",
    "reference_gemm",
    "reference_gemm_float64",
]

# Value of each 4-bit e2m1 code; bit 3 is the sign (code 8 is -0).
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)

SCALE_BLOCK = 16  # FP4 elements per e4m3 scale
_TILE_ROWS = 128  # rows per 128x4 tile of the blocked layout
_TILE_COLS = 4  # scale columns per tile

FP4_DTYPES = tuple(d for d in (torch.uint8, getattr(torch, "float4_e2m1fn_x2", None)) if d is not None)


def _round_up(x: int, multiple: int) -> int:
    return (x + multiple - 1) // multiple * multiple


def blocked_scale_shape(rows: int, k: int) -> tuple[int, int]:
    """(padded rows, padded scale columns) of one matrix's blocked scales: (round_up(rows, 128),
    round_up(k / 16, 4))."""
    if k % SCALE_BLOCK:
        raise ValueError(f"k must be a multiple of {SCALE_BLOCK}, got {k}")
    return _round_up(rows, _TILE_ROWS), _round_up(k // SCALE_BLOCK, _TILE_COLS)


def blocked_scale_numel(rows: int, k: int, l: int = 1) -> int:
    """Bytes of blocked scales for `l` matrices of `rows` x `k` FP4 elements."""
    padded_rows, padded_cols = blocked_scale_shape(rows, k)
    return l * padded_rows * padded_cols


def _as_bytes(t: torch.Tensor) -> torch.Tensor:
    return t if t.dtype == torch.uint8 else t.view(torch.uint8)


def to_blocked(scales: torch.Tensor) -> torch.Tensor:
    """Plain scales (rows, k/16) or (l, rows, k/16), any dtype -> the flat blocked layout
    (l * R * C,), same dtype, padding zero. byte(r, c) lands at ((r//128)*(C/4) + c//4)*512 + (r%32)*16 + ((r%128)//32)*4 + c%4.
    """
    if scales.dim() not in (2, 3):
        raise ValueError(f"scales must be (rows, k/16) or (l, rows, k/16), got shape {tuple(scales.shape)}")
    plain = scales.unsqueeze(0) if scales.dim() == 2 else scales
    l, rows, cols = plain.shape
    padded_rows, padded_cols = _round_up(rows, _TILE_ROWS), _round_up(cols, _TILE_COLS)
    padded = plain.new_zeros((l, padded_rows, padded_cols))
    padded[:, :rows, :cols] = plain
    # (l, row tile, row/32 group, row%32, col tile, col%4) -> order (l, row tile, col tile, row%32, row/32, col%4)
    tiles = padded.view(l, padded_rows // 128, 4, 32, padded_cols // 4, 4).permute(0, 1, 4, 3, 2, 5)
    return tiles.reshape(-1)


def from_blocked(blocked: torch.Tensor, rows: int, k: int, l: Optional[int] = None) -> torch.Tensor:
    """Inverse of to_blocked: blocked scales (any shape, contiguous) -> (rows, k/16), or
    (l, rows, k/16) when `l` is given."""
    batches = 1 if l is None else l
    padded_rows, padded_cols = blocked_scale_shape(rows, k)
    expected = batches * padded_rows * padded_cols
    if blocked.numel() != expected:
        raise ValueError(
            f"blocked scales for {batches} x ({rows} rows, k={k}) hold {expected} bytes, got {blocked.numel()}"
        )
    raw = _as_bytes(blocked.contiguous()).view(batches, padded_rows // 128, padded_cols // 4, 32, 4, 4)
    plain = raw.permute(0, 1, 4, 3, 2, 5).reshape(batches, padded_rows, padded_cols)
    plain = plain[:, :rows, : k // SCALE_BLOCK].contiguous().view(blocked.dtype)
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


def dequantize(
    packed: torch.Tensor, scale_blocked: torch.Tensor, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """FP4 (rows, k/2) or (l, rows, k/2) with its blocked e4m3 scales -> values (…, rows, k).

    Every e2m1 x e4m3 product is exact in fp16, bf16, fp32 and fp64.
    """
    batched = packed.dim() == 3
    rows, k = packed.shape[-2], packed.shape[-1] * 2
    plain = from_blocked(scale_blocked, rows, k, packed.shape[0] if batched else None)
    values = e2m1_to_float(unpack_fp4(packed), dtype)
    scales = plain.to(dtype).repeat_interleave(SCALE_BLOCK, dim=-1)
    return values * scales


# (stored mantissa bits, smallest normal exponent, largest finite value) of each output dtype.
_ROUNDING = {
    torch.float16: (10, -14, 65504.0),
    torch.bfloat16: (7, -126, float(torch.finfo(torch.bfloat16).max)),
    torch.float32: (23, -126, float(torch.finfo(torch.float32).max)),
}


def ulp(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Spacing of `dtype` values at the float64 magnitudes |x| (subnormal spacing below the normal range)."""
    mantissa_bits, min_exponent, _ = _ROUNDING[dtype]
    _, exponent = torch.frexp(x.abs())
    return torch.ldexp(torch.ones_like(x), (torch.clamp(exponent - 1, min=min_exponent) - mantissa_bits).to(x.dtype))


def round_once(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Round float64 values to `dtype` with one round-to-nearest-even step.

    torch's float64 -> float16/bfloat16 casts go through float32 and may round twice; here the
    value is rounded directly at the target format's quantum (subnormals included), then cast
    exactly.
    """
    if dtype not in _ROUNDING:
        raise ValueError(f"dtype must be one of {list(_ROUNDING)}, got {dtype}")
    if x.dtype != torch.float64:
        raise ValueError(f"round_once takes float64 values, got {x.dtype}")
    mantissa_bits, min_exponent, max_finite = _ROUNDING[dtype]
    _, exponent = torch.frexp(x)  # x = m * 2**exponent with 0.5 <= |m| < 1
    quantum_exponent = torch.clamp(exponent - 1, min=min_exponent) - mantissa_bits
    quantum = torch.ldexp(torch.ones_like(x), quantum_exponent.to(torch.float64))
    rounded = torch.round(x / quantum) * quantum  # torch.round: half to even; x / quantum is exact
    rounded = torch.where(rounded.abs() > max_finite, torch.copysign(torch.full_like(x, float("inf")), x), rounded)
    rounded = torch.where(torch.isfinite(x), rounded, x)  # inf and nan pass through
    return rounded.to(dtype)


def reference_gemm(
    a: torch.Tensor,
    b: torch.Tensor,
    a_scale: torch.Tensor,
    b_scale: torch.Tensor,
    alpha: Optional[torch.Tensor] = None,
    out_dtype: torch.dtype = torch.float16,
) -> torch.Tensor:
    """The contract: out = alpha * deq(a) @ deq(b).T in float64, rounded once to `out_dtype`.

    Shapes as for `nvfp4_gemm.gemm`; runs on the tensors' device.
    """
    exact = reference_gemm_float64(a, b, a_scale, b_scale, alpha)
    return round_once(exact, out_dtype)


def reference_gemm_float64(
    a: torch.Tensor,
    b: torch.Tensor,
    a_scale: torch.Tensor,
    b_scale: torch.Tensor,
    alpha: Optional[torch.Tensor] = None,
    *,
    magnitude: bool = False,
) -> torch.Tensor:
    """alpha * deq(a) @ deq(b).T accumulated in float64, before the output rounding.

    With `magnitude=True`: |alpha| * |deq(a)| @ |deq(b)|.T, the sum of the terms' magnitudes that
    bounds how far a finite-precision accumulation can drift (see testing.earned_tolerance)."""
    a_values = dequantize(a, a_scale, torch.float64)
    b_values = dequantize(b, b_scale, torch.float64)
    if magnitude:
        a_values, b_values = a_values.abs(), b_values.abs()
    exact = torch.matmul(a_values, b_values.transpose(-1, -2))
    if alpha is not None:
        factor = alpha.to(torch.float64).reshape(())
        exact = exact * (factor.abs() if magnitude else factor)
    return exact
