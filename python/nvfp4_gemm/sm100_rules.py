"""The sm100 family's row rules beyond its vocabulary (families.py): what its weight-only rows compile to.

A weight-only row (W4A16: 16-bit activations as given x NVFP4 weights, formats bf16xnvfp4 / fp16xnvfp4) runs
CUTLASS 4.2's sm100 mixed-input collective (csrc/include/nvfp4_gemm/sm100/weight_only_gemm.cuh), which converts
its A operand in registers: the weights are A, so the row is swap-AB; its builder takes tile N (tokens) <= 128;
the kernel here is the 1SM, data-parallel, single-alpha one. csrc/include/nvfp4_gemm/sm100/gemm.cuh asserts the
same at compile time.

Pure Python, no third-party imports (the kernel generator loads it at build time).
"""

from __future__ import annotations

from .dtypes import gemm_format

WEIGHT_ONLY_TILE_M = 128
WEIGHT_ONLY_MAX_TILE_N = 128


def check_config(config) -> None:
    """Raise ValueError for a row the family's kernels cannot be (a sentence naming the rule)."""
    if not gemm_format(config.format).weight_only:
        return
    what = f"a weight-only row ({config.format}: CUTLASS's mixed-input kernel)"
    if not config.swap_ab:
        raise ValueError(f"{what} is swap_ab = true: the weights are the operand it converts, its A")
    if config.tile[0] != WEIGHT_ONLY_TILE_M or config.tile[1] > WEIGHT_ONLY_MAX_TILE_N:
        raise ValueError(
            f"{what} has tile M = {WEIGHT_ONLY_TILE_M} (1SM) and tile N <= {WEIGHT_ONLY_MAX_TILE_N}, got {list(config.tile)}"
        )
    if config.cluster != (1, 1) or config.scheduler != "data_parallel" or config.per_column_alpha:
        raise ValueError(f"{what} is cluster [1, 1], data_parallel, one alpha")
