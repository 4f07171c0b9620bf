"""Adapter for the GPU MODE nvfp4_gemm competition tuple.

The harness passes ``(a, b, sfa, sfb, sfa_permuted, sfb_permuted, c)`` with
``a`` (M, K/2, L), ``b`` (N, K/2, L) and ``c`` (M, N, L) as L-last views of L-first contiguous
buffers, and ``sfa_permuted`` (32, 4, R/128, 4, C/4, L) as a strided view of a contiguous
(L, R/128, C/4, 32, 4, 4) buffer, which is byte-for-byte the blocked layout. So every operand is a
zero-copy permute away from what `nvfp4_gemm.gemm` takes; the plain `sfa`/`sfb` are not used.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import torch

from .._checks import OUT_DTYPE_NAMES
from ..formats import FP4_DTYPES
from ..ops import gemm as _gemm

__all__ = ["custom_kernel", "gemm"]


# Each member the adapter reads: its layout in the harness's words, its rank and the dtypes it may hold.
_MEMBERS = {
    "a": ("(M, K/2, L)", 3, FP4_DTYPES),
    "b": ("(N, K/2, L)", 3, FP4_DTYPES),
    "sfa_permuted": ("(32, 4, ceil(M/128), 4, ceil(K/64), L)", 6, (torch.float8_e4m3fn,)),
    "sfb_permuted": ("(32, 4, ceil(N/128), 4, ceil(K/64), L)", 6, (torch.float8_e4m3fn,)),
    "c": ("(M, N, L)", 3, tuple(OUT_DTYPE_NAMES)),
}


def _check_member(name: str, t) -> None:
    layout, rank, dtypes = _MEMBERS[name]
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} (tuple member) must be a torch.Tensor {layout}, got {type(t).__name__}")
    if t.dim() != rank:
        raise ValueError(f"{name} (tuple member) must be {rank}-D {layout}, got shape {tuple(t.shape)}")
    if t.dtype not in dtypes:
        raise TypeError(
            f"{name} (tuple member) {layout} must hold {' or '.join(str(d) for d in dtypes)}, got {t.dtype}"
        )


def _l_first(name: str, t: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    view = t.permute(*dims)
    if not view.is_contiguous():
        raise ValueError(
            f"{name} of shape {tuple(t.shape)} and strides {t.stride()} is not a permuted view of a contiguous "
            f"buffer in the harness's layout: permute{dims} must be contiguous"
        )
    return view


class _PreparedTuple(NamedTuple):
    """One harness tuple (held, so its id stays its own), what its members' storages and layouts were,
    and their L-first views."""

    data: tuple
    layouts: tuple[tuple, ...]
    views: tuple[torch.Tensor, ...]


# The harness times each input tuple many times: the checks and five permutes (~13 us of host time on
# the H200, 2026-11-23) are done once per tuple; later calls compare each member's address and strides
# (an in-place set_/resize_/as_strided_ changes one of them) and run. Tuples only (a list's members can
# be replaced); at most this many are held, past that the cache starts over.
_PREPARED_CAPACITY = 64
_prepared: dict[int, _PreparedTuple] = {}


def _layouts(members: tuple) -> tuple[tuple, ...]:
    return tuple((t.data_ptr(), t.stride()) for t in members)


def gemm(data: Sequence[torch.Tensor]) -> torch.Tensor:
    """Compute the competition GEMM into ``c`` (the tuple's last element) and return ``c``."""
    if len(data) != 7:
        raise ValueError(f"expected (a, b, sfa, sfb, sfa_permuted, sfb_permuted, c), got {len(data)} items")
    a, b, _sfa, _sfb, sfa_permuted, sfb_permuted, c = data
    members = (a, b, sfa_permuted, sfb_permuted, c)
    prepared = _prepared.get(id(data)) if isinstance(data, tuple) else None
    if prepared is not None and prepared.data is data and _layouts(members) == prepared.layouts:
        views = prepared.views
    else:
        views = _prepare(a, b, sfa_permuted, sfb_permuted, c)
        if isinstance(data, tuple):
            if len(_prepared) >= _PREPARED_CAPACITY:
                _prepared.clear()
            _prepared[id(data)] = _PreparedTuple(data, _layouts(members), views)
    _gemm(views[0], views[1], views[2], views[3], out=views[4])
    return c


def _prepare(a, b, sfa_permuted, sfb_permuted, c) -> tuple[torch.Tensor, ...]:
    """The checks and the L-first views of one tuple (a, b, scales, c)."""
    for name, member in (("a", a), ("b", b), ("sfa_permuted", sfa_permuted), ("sfb_permuted", sfb_permuted), ("c", c)):
        _check_member(name, member)
    if tuple(c.shape) != (a.shape[0], b.shape[0], a.shape[2]):
        raise ValueError(
            f"c (tuple member) must be (M, N, L) = {(a.shape[0], b.shape[0], a.shape[2])} for a of shape "
            f"{tuple(a.shape)} and b of shape {tuple(b.shape)}, got {tuple(c.shape)}"
        )
    return (
        _l_first("a", a, (2, 0, 1)),
        _l_first("b", b, (2, 0, 1)),
        _l_first("sfa_permuted", sfa_permuted, (5, 2, 4, 0, 1, 3)),
        _l_first("sfb_permuted", sfb_permuted, (5, 2, 4, 0, 1, 3)),
        _l_first("c", c, (2, 0, 1)),
    )


# GPU MODE submissions name their entry point `custom_kernel(data)`, so a submission file can be
# `from nvfp4_gemm.gpumode import custom_kernel`. One function under both names: no extra call.
custom_kernel = gemm
