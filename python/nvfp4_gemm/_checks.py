"""Validation of `gemm` arguments: the one place that turns bad input into a clear Python error
naming the argument and the rule, before anything is launched."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from .configs import OUT_DTYPES, shape_rule_violation
from .formats import FP4_DTYPES, blocked_scale_numel

OUT_DTYPE_NAMES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32"}
assert tuple(OUT_DTYPE_NAMES.values()) == OUT_DTYPES

# TMA (Blackwell) and 16-byte vector loads need 16-byte aligned base addresses.
_POINTER_ALIGNMENT = 16


@dataclass(frozen=True)
class GemmShape:
    m: int
    n: int
    k: int
    l: int
    batched: bool  # operands were 3-D (l, rows, k/2)

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.l, self.m, self.n) if self.batched else (self.m, self.n)


def _dtype_list(dtypes) -> str:
    return " or ".join(str(d) for d in dtypes)


# Shape and dtype verdicts depend only on (dtypes, shapes, scale sizes, out_dtype): remembered per
# distinct signature so a repeated call pays for a dict lookup, not for the rules. Bounded: cleared
# when it grows past this many signatures.
_SIGNATURE_CACHE_LIMIT = 4096
_validated: dict[tuple, "GemmShape"] = {}


def check_gemm_args(
    a: torch.Tensor,
    b: torch.Tensor,
    a_scale: torch.Tensor,
    b_scale: torch.Tensor,
    alpha: Optional[torch.Tensor],
    out_dtype: torch.dtype,
    out: Optional[torch.Tensor] = None,
) -> GemmShape:
    """Validate everything that can be checked without reading device memory; return the shape."""
    try:
        key = (
            a.dtype, b.dtype, a.shape, b.shape, a_scale.dtype, a_scale.numel(), b_scale.dtype, b_scale.numel(),
            out_dtype, None if alpha is None else (alpha.dtype, alpha.numel()),
            None if out is None else (out.dtype, out.shape),
        )
        shape = _validated.get(key)
    except (AttributeError, TypeError):  # not tensors (the full check names them), or symbolic sizes
        key, shape = None, None
    if shape is None:
        shape = _check_shapes_and_dtypes(a, b, a_scale, b_scale, alpha, out_dtype, out)
        if key is not None:
            if len(_validated) >= _SIGNATURE_CACHE_LIMIT:
                _validated.clear()
            _validated[key] = shape
    _check_storage(a, b, a_scale, b_scale, alpha, out)
    return shape


def _check_shapes_and_dtypes(a, b, a_scale, b_scale, alpha, out_dtype, out) -> GemmShape:
    """The rules that depend only on the call's signature (dtypes, shapes, sizes); see check_gemm_args."""
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in FP4_DTYPES:
            raise TypeError(f"{name} must hold packed FP4 bytes ({_dtype_list(FP4_DTYPES)}), got {t.dtype}")
        if t.dim() not in (2, 3):
            raise ValueError(f"{name} must be 2-D (rows, K/2) or 3-D (L, rows, K/2), got shape {tuple(t.shape)}")
    if a.dim() != b.dim():
        raise ValueError(f"a and b must both be 2-D or both 3-D, got a.shape={tuple(a.shape)}, b.shape={tuple(b.shape)}")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"a and b must have the same K/2 (last dim): a.shape={tuple(a.shape)}, b.shape={tuple(b.shape)}"
        )
    batched = a.dim() == 3
    if batched and a.shape[0] != b.shape[0]:
        raise ValueError(f"a and b must have the same batch L (dim 0): a.shape={tuple(a.shape)}, b.shape={tuple(b.shape)}")
    if out_dtype not in OUT_DTYPE_NAMES:
        raise TypeError(f"out_dtype must be torch.float16, torch.bfloat16 or torch.float32, got {out_dtype}")

    l = a.shape[0] if batched else 1
    m, n, k = a.shape[-2], b.shape[-2], 2 * a.shape[-1]
    violation = shape_rule_violation(m, n, k, l, OUT_DTYPE_NAMES[out_dtype])
    if violation:
        raise ValueError(f"a/b shapes a={tuple(a.shape)}, b={tuple(b.shape)}: {violation}")

    for name, t, rows in (("a_scale", a_scale, m), ("b_scale", b_scale, n)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype != torch.float8_e4m3fn:
            raise TypeError(f"{name} must be torch.float8_e4m3fn (blocked layout), got {t.dtype}")
        expected = blocked_scale_numel(rows, k, l)
        if t.numel() != expected:
            raise ValueError(
                f"{name} must hold the blocked layout of {l} x {rows} rows x K/16={k // 16} scales: "
                f"L * round_up({rows}, 128) * round_up({k // 16}, 4) = {expected} elements, got {t.numel()} "
                f"(shape {tuple(t.shape)}); use nvfp4_gemm.to_blocked on plain (rows, K/16) scales"
            )

    if alpha is not None:
        if not isinstance(alpha, torch.Tensor):
            raise TypeError(f"alpha must be None or a float32 tensor with one element, got {type(alpha).__name__}")
        if alpha.dtype != torch.float32 or alpha.numel() != 1:
            raise ValueError(
                f"alpha must be a float32 tensor with one element, got dtype {alpha.dtype} and {alpha.numel()} elements"
            )

    shape = GemmShape(m=m, n=n, k=k, l=l, batched=batched)
    if out is not None:
        if not isinstance(out, torch.Tensor):
            raise TypeError(f"out must be a torch.Tensor, got {type(out).__name__}")
        if out.dtype != out_dtype:
            raise TypeError(f"out must have dtype {out_dtype} (out_dtype), got {out.dtype}")
        if tuple(out.shape) != shape.out_shape:
            raise ValueError(f"out must have shape {shape.out_shape}, got {tuple(out.shape)}")
    return shape


def _check_storage(a, b, a_scale, b_scale, alpha, out) -> None:
    """Contiguity and one device: properties of the tensors themselves, checked on every call."""
    named = [("a", a), ("b", b), ("a_scale", a_scale), ("b_scale", b_scale)]
    if alpha is not None:
        named.append(("alpha", alpha))
    if out is not None:
        named.append(("out", out))
    for name, t in named:
        if name != "alpha" and not t.is_contiguous():
            raise ValueError(
                f"{name} must be contiguous (the kernels read its storage as the packed layout), "
                f"got shape {tuple(t.shape)} with strides {t.stride()}"
            )
    device = a.device
    for name, t in named[1:]:
        if t.device != device:
            raise ValueError(f"{name} is on {t.device} but a is on {device}: all tensors must be on one device")


def check_pointer_alignment(named: dict[str, torch.Tensor]) -> None:
    """Device kernels need 16-byte aligned base addresses (a view with an odd offset is not)."""
    for name, t in named.items():
        if t.data_ptr() % _POINTER_ALIGNMENT:
            raise ValueError(
                f"{name} must start at a {_POINTER_ALIGNMENT}-byte aligned address, got 0x{t.data_ptr():x} "
                f"(a sliced view?); pass a fresh contiguous tensor"
            )
