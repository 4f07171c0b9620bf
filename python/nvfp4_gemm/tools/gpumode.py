"""Adapter for the GPU MODE nvfp4_gemm competition tuple.

The harness passes ``(a, b, sfa, sfb, sfa_permuted, sfb_permuted, c)`` with
``a`` (M, K/2, L), ``b`` (N, K/2, L) and ``c`` (M, N, L) as L-last views of L-first contiguous
buffers, and ``sfa_permuted`` (32, 4, R/128, 4, C/4, L) as a strided view of a contiguous
(L, R/128, C/4, 32, 4, 4) buffer, which is byte-for-byte the blocked layout. So every operand is a
zero-copy permute away from what `nvfp4_gemm.gemm` takes; the plain `sfa`/`sfb` are not used.

Where the extension was built with torch (`_C.HAS_TORCH_OP`), `custom_kernel` is one call of the private
op `nvfp4::_gpumode`, whose CUDA kernel is C++ (csrc/torch_op.cpp): the first call of each signature
(the five tensors' dtypes, devices, sizes and strides) runs this module's checks and gemm's Python path
on the L-first views, and later calls launch the plan it made with the tuple's own addresses (a permute
keeps the data pointer), without Python. Elsewhere the adapter is Python, each tuple prepared once.
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Sequence

import torch

from .. import _C, ops
from .._checks import OUT_DTYPE_NAMES, check_no_grad
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


def _wrong_length(data: Sequence) -> ValueError:
    return ValueError(f"expected (a, b, sfa, sfb, sfa_permuted, sfb_permuted, c), got {len(data)} items")


def _gemm_python(data: Sequence[torch.Tensor]) -> torch.Tensor:
    """Compute the competition GEMM into ``c`` (the tuple's last element) and return ``c``: the checks
    and views once per tuple, then `nvfp4_gemm.gemm` (a build without the C++ op)."""
    if len(data) != 7:
        raise _wrong_length(data)
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


def _gemm_native(data: Sequence[torch.Tensor]) -> torch.Tensor:
    """Compute the competition GEMM into ``c`` (the tuple's last element) and return ``c``: one call of
    the op `nvfp4::_gpumode`. Errors of its C++ kernel come from the Python path and get their own type
    back here (the dispatcher makes every exception of a C++ kernel a RuntimeError)."""
    if len(data) != 7:
        raise _wrong_length(data)
    a, b, _sfa, _sfb, sfa_permuted, sfb_permuted, c = data
    try:
        check_no_grad(a, b, sfa_permuted, sfb_permuted, None, c)  # the API's rule, as gemm applies it
    except ValueError:
        _prepare(a, b, sfa_permuted, sfb_permuted, c)  # the members' own rules come first, as in gemm
        raise
    try:
        _gpumode_call(a, b, sfa_permuted, sfb_permuted, c)
    except RuntimeError:
        original = _C.take_op_error()
        if original is not None:
            raise original from None
        _prepare(a, b, sfa_permuted, sfb_permuted, c)  # the schema refused a member that is no tensor: its rule
        raise
    return c


# --- nvfp4::_gpumode: the tuple in one dispatcher call (private) ---------------------------------

_lib = torch.library.Library("nvfp4", "FRAGMENT")
_lib.define("_gpumode(Tensor a, Tensor b, Tensor sfa_permuted, Tensor sfb_permuted, Tensor(a!) c) -> ()")


def _gpumode_op_python(a, b, sfa_permuted, sfb_permuted, c):
    """The op on the CPU (the exact reference), and on CUDA where the build has no C++ kernels."""
    ops._gemm_into_python(*_prepare(a, b, sfa_permuted, sfb_permuted, c))


def _gpumode_op_fake(a, b, sfa_permuted, sfb_permuted, c):
    ops._gemm_into_fake(*_prepare(a, b, sfa_permuted, sfb_permuted, c))


@torch.no_grad()  # non-differentiable: the output never records the ops inside
def _op_first_call(handles: list) -> tuple[None, Optional[tuple]]:
    """The C++ op's first call of a signature (and any call whose addresses it cannot vouch for), on the
    tensors behind `handles` (capsules of a, b, sfa_permuted, sfb_permuted, c): the adapter's checks,
    then gemm's Python path on the L-first views. Returns no output (c is written) and the plan."""
    views = _prepare(*ops._take_handles(handles))
    return None, ops._run_and_plan(*views[:4], None, views[4], views[4].dtype)[1]


_lib.impl("_gpumode", torch.library.fallthrough_kernel, "Autograd")  # non-differentiable, as the other ops
_lib.impl("_gpumode", _gpumode_op_python, "CPU")
if not _C.HAS_TORCH_OP:  # else the C++ kernel of torch_op.cpp, registered when _C loaded
    _lib.impl("_gpumode", _gpumode_op_python, "CUDA")
torch.library.register_fake("nvfp4::_gpumode", _gpumode_op_fake, lib=_lib)
# The overload's C++ callable (what OpOverload.__call__ calls): one Python frame less per call.
_gpumode_call = getattr(torch.ops.nvfp4._gpumode.default, "_op", torch.ops.nvfp4._gpumode.default)

gemm = _gemm_native if _C.HAS_TORCH_OP else _gemm_python
# GPU MODE submissions name their entry point `custom_kernel(data)`, so a submission file can be
# `from nvfp4_gemm.gpumode import custom_kernel`. One function under both names: no extra call.
custom_kernel = gemm
