"""The output dtypes and the block-scaled input formats, as data: one description each.

Readers: the argument checks and the config table's shape rule (alignment), the exact reference's
rounding (formats.round_once), the sm100 model (bytes), the binding and registry (names, through the
header csrc/generate_kernels.py writes from this module: `OutDtype` and each format's constants), the
kernel generator (C++ element types). A second block format (MX: e8m0 scales, 32 values per scale) is
a second `BlockFormat` entry; the code that reads `NVFP4` today takes the format as data.

Pure Python with no third-party imports: the kernel generator loads it at build time; torch dtypes are
looked up by `name` (getattr(torch, name)) where a torch dtype is needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["OutDtype", "OUT_DTYPE_TABLE", "OUT_DTYPES", "out_dtype", "BlockFormat", "NVFP4"]

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
class BlockFormat:
    """A block-scaled 4-bit input format: values in blocks along K, one scale per block, the scales in
    the cuBLAS blocked layout of (tile_rows x tile_cols) tiles (docs/formats.md)."""

    name: str
    values_per_scale: int  # K elements sharing one scale
    scale_dtype: str  # torch dtype name of a scale
    tile_rows: int  # rows per tile of the blocked scale layout
    tile_cols: int  # scale columns per tile
    # K granularity of a GEMM: 32 FP4 values = 16 bytes per row, the TMA minimum; also whole scale blocks.
    k_alignment: int


NVFP4 = BlockFormat("nvfp4", values_per_scale=16, scale_dtype="float8_e4m3fn", tile_rows=128, tile_cols=4,
                    k_alignment=32)
BLOCK_FORMATS = (NVFP4,)
