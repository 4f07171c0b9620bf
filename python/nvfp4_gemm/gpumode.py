"""Adapter for the GPU MODE nvfp4_gemm competition tuple.

The harness passes ``(a, b, sfa, sfb, sfa_permuted, sfb_permuted, c)`` with
``a`` (M, K/2, L), ``b`` (N, K/2, L) and ``c`` (M, N, L) as L-last views of L-first contiguous
buffers, and ``sfa_permuted`` (32, 4, R/128, 4, C/4, L) as a strided view of a contiguous
(L, R/128, C/4, 32, 4, 4) buffer, which is byte-for-byte the blocked layout. So every operand is a
zero-copy permute away from what `nvfp4_gemm.gemm` takes; the plain `sfa`/`sfb` are not used.
"""

from __future__ import annotations

from typing import Sequence

import torch

from .ops import gemm as _gemm

__all__ = ["custom_kernel", "gemm"]


def _l_first(name: str, t: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    view = t.permute(*dims)
    if not view.is_contiguous():
        raise ValueError(
            f"{name} of shape {tuple(t.shape)} and strides {t.stride()} is not a permuted view of a contiguous "
            f"buffer in the harness's layout: permute{dims} must be contiguous"
        )
    return view


def gemm(data: Sequence[torch.Tensor]) -> torch.Tensor:
    """Compute the competition GEMM into ``c`` (the tuple's last element) and return ``c``."""
    if len(data) != 7:
        raise ValueError(f"expected (a, b, sfa, sfb, sfa_permuted, sfb_permuted, c), got {len(data)} items")
    a, b, _sfa, _sfb, sfa_permuted, sfb_permuted, c = data
    _gemm(
        _l_first("a", a, (2, 0, 1)),
        _l_first("b", b, (2, 0, 1)),
        _l_first("sfa_permuted", sfa_permuted, (5, 2, 4, 0, 1, 3)),
        _l_first("sfb_permuted", sfb_permuted, (5, 2, 4, 0, 1, 3)),
        out=_l_first("c", c, (2, 0, 1)),
    )
    return c


# GPU MODE submissions name their entry point `custom_kernel(data)`, so a submission file can be
# `from nvfp4_gemm.gpumode import custom_kernel`. One function under both names: no extra call.
custom_kernel = gemm
