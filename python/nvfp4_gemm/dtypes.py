"""The output dtypes and the block-scaled input formats, as data: one description each.

Readers: the argument checks and the config table's shape rule (alignment), the exact reference's
rounding (formats.round_once), the sm100 model (bytes), the binding and registry (names, through the
header csrc/generate_kernels.py writes from this module: `OutDtype` and each format's constants), the
kernel generator (C++ element types). The input formats are three tables: element formats (e2m1, e4m3),
block formats (NVFP4: e4m3 scales per 16 values; MX: ue8m0 scales per 32 values), and the GEMM formats
(which pair of operand formats one call multiplies: NVFP4 x NVFP4, MXFP4 x MXFP4, MXFP8 x MXFP4, and
fp16/bf16 activations as given x NVFP4 or MXFP4 weights, "W4A16"). A call's format follows its tensors' dtypes, as
torch._scaled_mm's does (`gemm_format_for`).

Pure Python with no third-party imports: the kernel generator loads it at build time; torch dtypes are
looked up by `name` (getattr(torch, name)) where a torch dtype is needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

__all__ = [
    "OutDtype", "OUT_DTYPE_TABLE", "OUT_DTYPES", "out_dtype", "ElementFormat", "FP4_E2M1", "FP8_E4M3", "ELEMENT_FORMATS",
    "FP16", "BF16", "UNSCALED_ELEMENT_FORMATS", "UNSCALED_OPERAND_FORMATS",
    "BlockFormat", "NVFP4", "MX", "BLOCK_FORMATS", "OperandFormat", "OPERAND_FORMATS", "operand_format", "GemmFormat",
    "GEMM_FORMATS", "gemm_format", "gemm_format_for",
]

# The epilogues store 16-byte vectors (TMA's minimum): an output row holds whole vectors.
_OUT_VECTOR_BYTES = 16


@dataclass(frozen=True)
class OutDtype:
    """One output dtype of the GEMM: its names in each language and the IEEE facts of its rounding."""

    name: str  # torch's attribute name and the registry's key ("float16")
    enum: str  # C++ nvfp4_gemm::OutDtype enumerator
    cuda_type: str  # element type in CUDA C++ (the sm90 kernels)
    cutlass_type: str  # element type in CUTLASS (the sm100 kernels)
    bytes: int
    mantissa_bits: int  # stored mantissa bits
    min_exponent: int  # exponent of the smallest normal
    max_exponent: int  # exponent of the largest finite value

    @property
    def alignment(self) -> int:
        """Output row alignment in elements (N must be a multiple of it)."""
        return _OUT_VECTOR_BYTES // self.bytes

    @property
    def max_finite(self) -> float:
        return math.ldexp(2.0 - math.ldexp(1.0, -self.mantissa_bits), self.max_exponent)

    def element(self, spelling: str) -> str:
        """The C++ element type in a family's spelling ("cuda" or "cutlass", families.Family)."""
        return {"cuda": self.cuda_type, "cutlass": self.cutlass_type}[spelling]


# In the order of the C++ enum (its values are the positions).
OUT_DTYPE_TABLE = (
    OutDtype("float16", "kFloat16", "__half", "cutlass::half_t", 2, mantissa_bits=10, min_exponent=-14, max_exponent=15),
    OutDtype("bfloat16", "kBFloat16", "__nv_bfloat16", "cutlass::bfloat16_t", 2, mantissa_bits=7, min_exponent=-126,
             max_exponent=127),
    OutDtype("float32", "kFloat32", "float", "float", 4, mantissa_bits=23, min_exponent=-126, max_exponent=127),
)
OUT_DTYPES = tuple(d.name for d in OUT_DTYPE_TABLE)


def out_dtype(name: str) -> OutDtype:
    for entry in OUT_DTYPE_TABLE:
        if entry.name == name:
            return entry
    raise KeyError(f"out_dtype must be one of {', '.join(OUT_DTYPES)}, got {name}")


@dataclass(frozen=True)
class ElementFormat:
    """The values of an operand: a float format and how its tensor's elements hold it."""

    name: str
    # torch dtype names whose bytes a GEMM takes as these values (uint8 views are always accepted for FP4)
    storage_dtypes: tuple
    bits: int
    # Exponent of the largest normal value: OCP MX's emax_elem (its quantize recipe's shared exponent is
    # floor(log2(amax)) - emax).
    emax: int
    cutlass_type: str  # the CUTLASS element type
    # The sm90 kernels' token type (their template argument): packed FP4 tokens are bytes
    cuda_type: str = ""

    @property
    def per_element(self) -> int:
        """Values per element of the storage tensor (2: packed FP4, element 2j in the low nibble of byte j)."""
        return max(1, 8 // self.bits)


FP4_E2M1 = ElementFormat("e2m1", ("uint8", "float4_e2m1fn_x2"), bits=4, emax=2, cutlass_type="cutlass::float_e2m1_t",
                         cuda_type="std::uint8_t")
FP8_E4M3 = ElementFormat("e4m3", ("float8_e4m3fn",), bits=8, emax=8, cutlass_type="cutlass::float_e4m3_t",
                         cuda_type="__nv_fp8_e4m3")
# The block-scaled (quantized) element formats: what `quantize` writes and `dequantize` reads.
ELEMENT_FORMATS = (FP4_E2M1, FP8_E4M3)
# 16-bit activations a GEMM takes as given, without scales (weight-only, "W4A16").
FP16 = ElementFormat("fp16", ("float16",), bits=16, emax=15, cutlass_type="cutlass::half_t", cuda_type="__half")
BF16 = ElementFormat("bf16", ("bfloat16",), bits=16, emax=127, cutlass_type="cutlass::bfloat16_t",
                     cuda_type="__nv_bfloat16")
UNSCALED_ELEMENT_FORMATS = (FP16, BF16)


@dataclass(frozen=True)
class BlockFormat:
    """How a block-scaled operand's values are scaled: blocks along K, one scale per block, the scales in
    the cuBLAS blocked layout of (tile_rows x tile_cols) tiles (docs/formats.md). The scale dtype names
    the format: a call's scales say which one it is."""

    name: str
    values_per_scale: int  # K elements sharing one scale
    scale_dtype: str  # torch dtype name of a scale
    tile_rows: int  # rows per tile of the blocked scale layout
    tile_cols: int  # scale columns per tile
    # K granularity of a GEMM: 32 FP4 values = 16 bytes per row, the TMA minimum; also whole scale blocks.
    k_alignment: int
    scale_nan_code: int  # the scale byte that is NaN (quantize marks non-finite blocks with it)
    # CUTLASS's block-scaled operand wrapper: cutlass::<prefix>_float<bits>_t<element> (nv_float4_t, mx_float8_t)
    cutlass_prefix: str


NVFP4 = BlockFormat("nvfp4", values_per_scale=16, scale_dtype="float8_e4m3fn", tile_rows=128, tile_cols=4,
                    k_alignment=32, scale_nan_code=0x7F, cutlass_prefix="nv")
# OCP Microscaling (MX) v1.0: one ue8m0 scale (2^(code - 127), code 255 NaN) per 32 values, the same blocked
# layout with K/32 scale columns. 32 values are also the 16-byte TMA minimum of an FP4 row.
MX = BlockFormat("mx", values_per_scale=32, scale_dtype="float8_e8m0fnu", tile_rows=128, tile_cols=4,
                 k_alignment=32, scale_nan_code=0xFF, cutlass_prefix="mx")
BLOCK_FORMATS = (NVFP4, MX)


@dataclass(frozen=True)
class OperandFormat:
    """One operand's format: its values and their block scaling (`quantize(x, format=name)`), or no
    scaling (block None: 16-bit activations used as given)."""

    name: str
    element: ElementFormat
    block: Optional[BlockFormat]


OPERAND_FORMATS = (
    OperandFormat("nvfp4", FP4_E2M1, NVFP4),
    OperandFormat("mxfp4", FP4_E2M1, MX),
    OperandFormat("mxfp8", FP8_E4M3, MX),
)


# Activations taken as given (no quantization, no scales): not quantize targets.
UNSCALED_OPERAND_FORMATS = tuple(OperandFormat(e.name, e, None) for e in UNSCALED_ELEMENT_FORMATS)


def operand_format(name: str) -> OperandFormat:
    """A quantized operand format (the `format=` of quantize)."""
    for entry in OPERAND_FORMATS:
        if entry.name == name:
            return entry
    raise ValueError(f"format must be one of {', '.join(repr(f.name) for f in OPERAND_FORMATS)}, got {name!r}")


@dataclass(frozen=True)
class GemmFormat:
    """A pair of operand formats one GEMM multiplies: a (activations, M side) times b (weights, N side).
    Both share one block format (one scale dtype): the kernels read one scale kind."""

    name: str  # the benchmarks' and tools' --format vocabulary
    a: OperandFormat
    b: OperandFormat

    @property
    def block(self) -> BlockFormat:
        return self.b.block

    @property
    def weight_only(self) -> bool:
        """`a` holds 16-bit values used as given, with a_scale=None (W4A16)."""
        return self.a.block is None

    def cutlass_operands(self) -> tuple:
        """CUTLASS's operand types of a and b (the sm100 kernels' template arguments): block-scaled
        wrappers, or the plain element type of an unscaled operand."""
        return tuple(
            o.element.cutlass_type if o.block is None
            else f"cutlass::{o.block.cutlass_prefix}_float{o.element.bits}_t<{o.element.cutlass_type}>"
            for o in (self.a, self.b)
        )


GEMM_FORMATS = (
    GemmFormat("nvfp4", operand_format("nvfp4"), operand_format("nvfp4")),
    GemmFormat("mxfp4", operand_format("mxfp4"), operand_format("mxfp4")),
    GemmFormat("mxfp8xmxfp4", operand_format("mxfp8"), operand_format("mxfp4")),  # W4A8
    # weight-only (W4A16): 16-bit activations as given times FP4 weights (NVFP4 or MXFP4)
    *(GemmFormat(f"{o.name}x{w}", o, operand_format(w)) for w in ("nvfp4", "mxfp4") for o in UNSCALED_OPERAND_FORMATS),
)


def gemm_format(name: str) -> GemmFormat:
    for entry in GEMM_FORMATS:
        if entry.name == name:
            return entry
    raise ValueError(f"format must be one of {', '.join(repr(f.name) for f in GEMM_FORMATS)}, got {name!r}")


def gemm_format_for(a_element: str, scale_dtype: str) -> "GemmFormat | None":
    """The GEMM format of a call whose `a` holds `a_element` values and whose (b's) scales are
    `scale_dtype` (b is always FP4), or None where no format pairs them."""
    for entry in GEMM_FORMATS:
        if entry.a.element.name == a_element and entry.block.scale_dtype == scale_dtype:
            return entry
    return None
