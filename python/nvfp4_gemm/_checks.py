"""Validation of `gemm` arguments: the one place that turns bad input into a clear Python error
naming the argument and the rule, before anything is launched."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import torch
from torch._subclasses.fake_tensor import is_fake

from .configs import shape_rule_violation
from .dtypes import GEMM_FORMATS, GemmFormat
from .formats import (
    ELEMENT_DTYPES,
    FP4_DTYPES,
    OUT_DTYPES_BY_TORCH,
    SCALE_DTYPES,
    WEIGHT_ONLY_A_DTYPES,
    blocked_scale_numel,
    gemm_format_of,
)

if TYPE_CHECKING:
    from . import families
    from .configs import Config

# torch dtype -> the output dtype's name (dtypes.py), in the table's order
OUT_DTYPE_NAMES = {dtype: described.name for dtype, described in OUT_DTYPES_BY_TORCH.items()}
# The dtypes `a` may have: packed FP4 or float8_e4m3fn values (the latter only in an MX format), or 16-bit
# values used as given (weight-only, a_scale=None).
_A_DTYPES = tuple(ELEMENT_DTYPES) + WEIGHT_ONLY_A_DTYPES

# TMA (Blackwell) and 16-byte vector loads need 16-byte aligned base addresses.
_POINTER_ALIGNMENT = 16

# Largest M, N and K: the binding passes sizes as 32-bit ints, and both kernel families round a size
# up to its tile ((size + tile - 1) / tile, tiles of at most 256) in 32-bit arithmetic.
MAX_EXTENT = 2**31 - 256
# Largest L: a 32-bit int in the binding (the kernels' grids allow far fewer, see check_kernel_limits).
MAX_BATCH = 2**31 - 1
# CUDA's limit on gridDim.y and gridDim.z. gridDim.x allows 2^31 - 1, which no launch reaches within
# MAX_EXTENT: x counts tiles of at least 64 rows (sm90: N / 128; sm100: M / 128 or N / 64 clusters).
MAX_GRID_YZ = 65535


@dataclass(frozen=True)
class GemmShape:
    m: int
    n: int
    k: int
    l: int
    batched: bool  # operands were 3-D (l, rows, k / values per byte)
    format: GemmFormat = GEMM_FORMATS[0]  # what the dtypes say the operands are (dtypes.GEMM_FORMATS)

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.l, self.m, self.n) if self.batched else (self.m, self.n)

    @property
    def empty(self) -> bool:
        """No output elements (M, N or L is 0), or no products to sum (K = 0): answered without a kernel."""
        return not (self.m and self.n and self.k and self.l)


def _dtype_list(dtypes) -> str:
    """'a, b or c'."""
    names = [str(d) for d in dtypes]
    return " or ".join(filter(None, (", ".join(names[:-1]), names[-1])))


# Shape and dtype verdicts depend only on (dtypes, shapes, scale sizes, out_dtype): remembered per
# distinct signature so a repeated call pays for a dict lookup, not for the rules. Bounded: cleared
# when it grows past this many signatures.
_SIGNATURE_CACHE_LIMIT = 4096
_validated: dict[tuple, "GemmShape"] = {}


def check_gemm_args(
    a: torch.Tensor,
    b: torch.Tensor,
    a_scale: Optional[torch.Tensor],
    b_scale: torch.Tensor,
    alpha: Optional[torch.Tensor],
    out_dtype: torch.dtype,
    out: Optional[torch.Tensor] = None,
    *,
    grad_rule: bool = True,
) -> GemmShape:
    """Validate everything that can be checked without reading device memory; return the shape.
    grad_rule=False leaves out the requires-grad rule: the op is non-differentiable (its Autograd
    kernel falls through), the Python API and the layers reject tensors that require grad."""
    try:
        key = (
            a.dtype, b.dtype, a.shape, b.shape, None if a_scale is None else (a_scale.dtype, a_scale.numel()),
            b_scale.dtype, b_scale.numel(),
            out_dtype, None if alpha is None else (alpha.dtype, alpha.shape),
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
    _check_storage(a, b, a_scale, b_scale, alpha, out, grad_rule)
    return shape


def _check_shapes_and_dtypes(a, b, a_scale, b_scale, alpha, out_dtype, out) -> GemmShape:
    """The rules that depend only on the call's signature (dtypes, shapes, sizes); see check_gemm_args."""
    for name, t, dtypes in (("a", a, _A_DTYPES), ("b", b, FP4_DTYPES)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in dtypes:
            what = (
                "packed FP4 bytes, float8_e4m3fn values (MXFP8) or 16-bit values (weight-only, a_scale=None)"
                if name == "a" else "packed FP4 bytes"
            )
            raise TypeError(f"{name} must hold {what} ({_dtype_list(dtypes)}), got {t.dtype}")
        if t.dim() not in (2, 3):
            cols = "K" if t.dtype not in FP4_DTYPES else "K/2"
            raise ValueError(f"{name} must be 2-D (rows, {cols}) or 3-D (L, rows, {cols}), got shape {tuple(t.shape)}")
    fmt = _gemm_format(a, a_scale, b_scale)
    if a.dim() != b.dim():
        raise ValueError(f"a and b must both be 2-D or both 3-D, got a.shape={tuple(a.shape)}, b.shape={tuple(b.shape)}")
    a_per_element = fmt.a.element.per_element
    if a.shape[-1] * a_per_element != 2 * b.shape[-1]:
        if a_per_element == 2:
            raise ValueError(
                f"a and b must have the same K/2 (last dim): a.shape={tuple(a.shape)}, b.shape={tuple(b.shape)}"
            )
        raise ValueError(
            f"a and b must have the same K: a ({a.dtype}, {fmt.a.name.upper()}) is (rows, K) and b (packed FP4) is (rows, K/2), "
            f"so a.shape[-1] must be 2 * b.shape[-1]: a.shape={tuple(a.shape)}, b.shape={tuple(b.shape)}"
        )
    batched = a.dim() == 3
    if batched and a.shape[0] != b.shape[0]:
        raise ValueError(f"a and b must have the same batch L (dim 0): a.shape={tuple(a.shape)}, b.shape={tuple(b.shape)}")
    if out_dtype not in OUT_DTYPE_NAMES:
        raise TypeError(f"out_dtype must be {_dtype_list(OUT_DTYPE_NAMES)}, got {out_dtype}")

    l = a.shape[0] if batched else 1
    m, n, k = a.shape[-2], b.shape[-2], 2 * b.shape[-1]
    block = fmt.block
    if k % block.k_alignment:
        raise ValueError(
            f"a/b shapes a={tuple(a.shape)}, b={tuple(b.shape)}: K (= {'2 * ' if a_per_element == 2 else ''}a.shape[-1]) "
            f"must be a multiple of {block.k_alignment}, got K={k} (the {fmt.name} format: "
            f"{block.values_per_scale} values per scale, rows of whole 16-byte vectors)"
        )
    violation = shape_rule_violation(m, n, k, l, OUT_DTYPE_NAMES[out_dtype], allow_empty=True)
    if violation:
        raise ValueError(f"a/b shapes a={tuple(a.shape)}, b={tuple(b.shape)}: {violation}")
    for size_name, size, limit in (("M", m, MAX_EXTENT), ("N", n, MAX_EXTENT), ("K", k, MAX_EXTENT), ("L", l, MAX_BATCH)):
        if size > limit:
            raise ValueError(
                f"a/b shapes a={tuple(a.shape)}, b={tuple(b.shape)}: {size_name}={size} exceeds the largest "
                f"{size_name} the kernels index with 32-bit ints, {limit}; split the problem"
            )

    for name, t, rows in (("a_scale", a_scale, m), ("b_scale", b_scale, n)):
        if t is None:  # weight-only: a holds values as given
            continue
        expected = blocked_scale_numel(rows, k, l, fmt=block)
        if t.numel() != expected:
            size, cols = block.values_per_scale, k // block.values_per_scale
            raise ValueError(
                f"{name} must hold the blocked layout of {l} x {rows} rows x K/{size}={cols} scales: "
                f"L * round_up({rows}, {block.tile_rows}) * round_up({cols}, {block.tile_cols}) = {expected} elements, "
                f"got {t.numel()} (shape {tuple(t.shape)}; {fmt.name}: {t.dtype} scales, one per {size} values); use "
                f"nvfp4_gemm.to_blocked on plain (rows, K/{size}) scales"
            )

    if alpha is not None:
        if not isinstance(alpha, torch.Tensor):
            raise TypeError(
                f"alpha must be None or a float32 tensor with one element or of shape (N,), got {type(alpha).__name__}"
            )
        per_column = alpha.dim() == 1 and alpha.shape[0] == n
        if alpha.dtype != torch.float32 or not (alpha.numel() == 1 or per_column):
            raise ValueError(
                f"alpha must be a float32 tensor with one element (one global scale) or of shape (N,) = ({n},) "
                f"(one scale per output column), got dtype {alpha.dtype} and shape {tuple(alpha.shape)}"
            )

    shape = GemmShape(m=m, n=n, k=k, l=l, batched=batched, format=fmt)
    if out is not None:
        check_out(out, out_dtype, shape.out_shape)
    return shape


def _gemm_format(a, a_scale, b_scale) -> GemmFormat:
    """The call's format, from its dtypes as torch._scaled_mm reads them (docs/formats.md): the scales'
    dtype names the block format (float8_e4m3fn: NVFP4; float8_e8m0fnu: MX), `a`'s the activations' values
    (packed FP4, float8_e4m3fn: MXFP8, or fp16/bf16 with a_scale=None: weight-only); b is packed FP4."""
    weight_only = a.dtype in WEIGHT_ONLY_A_DTYPES
    if weight_only and a_scale is not None:
        raise TypeError(
            f"a is {a.dtype}: 16-bit activations are used as given (weight-only), so a_scale must be None, "
            f"got a {type(a_scale).__name__}"
        )
    if not weight_only and a_scale is None:
        raise TypeError(
            f"a_scale=None means a holds 16-bit values used as given ({_dtype_list(WEIGHT_ONLY_A_DTYPES)}, "
            f"weight-only), got a {a.dtype}: quantized activations need their scales"
        )
    for name, t in (("a_scale", a_scale), ("b_scale", b_scale)):
        if t is None:
            continue
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in SCALE_DTYPES:
            raise TypeError(
                f"{name} must be {_dtype_list(SCALE_DTYPES)} (NVFP4 or MX scales, blocked layout), got {t.dtype}"
            )
    if not weight_only and a_scale.dtype != b_scale.dtype:
        raise TypeError(
            f"a_scale and b_scale must have one dtype (one block format for both operands), got a_scale "
            f"{a_scale.dtype} and b_scale {b_scale.dtype}"
        )
    fmt = gemm_format_of(a.dtype, b_scale.dtype)
    if fmt is None:
        pairs = "; ".join(
            f"{f.name}: a {' or '.join(f.a.element.storage_dtypes)} with {f.block.scale_dtype} scales"
            for f in GEMM_FORMATS if not f.weight_only
        )
        raise TypeError(
            f"a {a.dtype} with {a_scale.dtype} scales is no format the GEMM takes ({pairs}); float8_e4m3fn "
            f"activations (MXFP8) take float8_e8m0fnu scales"
        )
    return fmt


def check_out(out, out_dtype: torch.dtype, out_shape: tuple[int, ...]) -> None:
    """`out=`: a tensor of the output's dtype and shape (contiguity and overlap: _check_storage)."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor, got {type(out).__name__}")
    if out.dtype != out_dtype:
        raise TypeError(f"out must have dtype {out_dtype} (out_dtype), got {out.dtype}")
    if tuple(out.shape) != out_shape:
        raise ValueError(f"out must have shape {out_shape}, got {tuple(out.shape)}")


def _named_tensors(a, b, a_scale, b_scale, alpha, out) -> list:
    named = [("a", a), ("b", b)] + ([] if a_scale is None else [("a_scale", a_scale)]) + [("b_scale", b_scale)]
    if alpha is not None:
        named.append(("alpha", alpha))
    if out is not None:
        named.append(("out", out))
    return named


def check_no_grad(a, b, a_scale, b_scale, alpha=None, out=None) -> None:
    """The Python API's rule (the op itself is non-differentiable): with grad mode on, no tensor may
    require grad."""
    if not torch.is_grad_enabled():
        return
    for t in (a, b, a_scale, b_scale, alpha, out):  # the common case kept cheap: it runs on every call
        if t is not None and getattr(t, "requires_grad", False):
            break
    else:
        return
    for name, t in _named_tensors(a, b, a_scale, b_scale, alpha, out):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            raise ValueError(
                f"{name} requires grad, but nvfp4_gemm has no backward (an inference GEMM of quantized "
                f"operands): pass {name}.detach() or call it under torch.no_grad() / torch.inference_mode()"
            )


def _check_storage(a, b, a_scale, b_scale, alpha, out, grad_rule: bool = True) -> None:
    """Contiguity, grad, one device, no overlap with `out`: properties of the tensors themselves,
    checked on every call."""
    named = _named_tensors(a, b, a_scale, b_scale, alpha, out)
    for name, t in named:
        if (name != "alpha" or t.numel() > 1) and not t.is_contiguous():
            raise ValueError(
                f"{name} must be contiguous (the kernels read its storage as the packed layout), "
                f"got shape {tuple(t.shape)} with strides {t.stride()}"
            )
    if grad_rule:
        check_no_grad(a, b, a_scale, b_scale, alpha, out)
    device = a.device
    for name, t in named[1:]:
        if t.device != device:
            raise ValueError(f"{name} is on {t.device} but a is on {device}: all tensors must be on one device")
    if out is not None and not out.is_meta and not is_fake(out):  # fake tensors (tracing) have no addresses
        _check_out_overlap(out, named[:-1])


def _check_out_overlap(out: torch.Tensor, inputs: list) -> None:
    """The kernels write `out` while they read the inputs: no input may share a byte with it (all are
    contiguous, so each occupies [data_ptr, data_ptr + nbytes))."""
    out_begin = out.data_ptr()
    out_end = out_begin + out.nbytes
    for name, t in inputs:
        begin = t.data_ptr()
        if t.nbytes and out_end > out_begin and begin < out_end and out_begin < begin + t.nbytes:
            raise ValueError(
                f"out overlaps {name} in memory: the kernel would overwrite {name} while reading it; "
                f"pass an out that shares no memory with the inputs"
            )


def check_pointer_alignment(named: dict[str, torch.Tensor]) -> None:
    """Device kernels need 16-byte aligned base addresses (a view with an odd offset is not)."""
    for name, t in named.items():
        if t.data_ptr() % _POINTER_ALIGNMENT:
            raise ValueError(
                f"{name} must start at a {_POINTER_ALIGNMENT}-byte aligned address, got 0x{t.data_ptr():x} "
                f"(a sliced view?); pass a fresh contiguous tensor"
            )


# --- the split a call pins (split_k=) and the limits of the kernel that runs --------------------------


def check_split_k_type(split_k) -> None:
    """`split_k=` of a call: None or an int >= 1. How far a kernel splits K is its config's rule
    (`Config.max_split_k`), checked by the resolver against the config that runs."""
    if split_k is None:
        return
    if isinstance(split_k, bool) or not isinstance(split_k, int):
        raise TypeError(f"split_k must be None or an int, got {split_k!r}")
    if split_k < 1:
        raise ValueError(f"split_k must be at least 1, got {split_k}")


def launch_grid(config: "Config", m: int, n: int, l: int, split_k: int) -> tuple[int, int, int]:
    """The CUDA grid (x, y, z) that `config` launches for the problem (its family's `launch_grid`)."""
    return config.family_info.model_module().launch_grid(config, m, n, l, split_k)


def check_format_supported(family: "families.Family", shape: GemmShape) -> None:
    """A format the family's kernels do not take, as an error before any launch (the CPU reference takes
    every format)."""
    if shape.format.name not in family.formats:
        if shape.format.weight_only:
            weights = shape.format.b.name
            raise NotImplementedError(
                f"weight-only {weights.upper()} ({shape.format.name}: {shape.format.a.name} activations as given) has no "
                f"{family.name} kernel in this build: quantize the activations instead (NVFP4Linear.from_linear(linear, "
                f"activations='{weights}'), quantize_model(model, activations='{weights}'), or nvfp4_gemm.quantize(x, "
                f"format='{weights}') and a {weights} gemm); the CPU reference runs it"
            )
        raise NotImplementedError(
            f"the {shape.format.name} format (a {shape.format.a.name}, b {shape.format.b.name}) has no {family.name} "
            f"kernel in this build: the {family.name} kernels take {', '.join(family.formats)}; run the call on CPU "
            f"tensors (the exact reference) meanwhile"
        )


def check_kernel_limits(config: "Config", shape: GemmShape, split_k: int) -> None:
    """What `config` cannot launch or index for this problem, as an error saying the limit (before any launch)."""
    if shape.empty:
        return
    m, n, k, l = shape.m, shape.n, shape.k, shape.l
    grid = launch_grid(config, m, n, l, split_k)
    where = f"config {config.name!r} launches a grid of {grid} CTAs for M={m} N={n} K={k} L={l} split_k={split_k}"
    if grid[1] > MAX_GRID_YZ:
        rows, tile = config.family_info.model_module().grid_y_rows(config)
        raise ValueError(
            f"{where}: gridDim.y = ceil({rows} / {tile}) exceeds CUDA's limit of {MAX_GRID_YZ}; this config runs "
            f"at most {MAX_GRID_YZ * tile} rows of {rows} per call: split the call"
        )
    if grid[2] > MAX_GRID_YZ:
        per_batch = grid[2] // l  # split_k, or 1 where the split stays inside a CTA (the sm90 GEMV)
        z = "L * split_k" if per_batch == split_k else "L"
        raise ValueError(
            f"{where}: gridDim.z = {z} exceeds CUDA's limit of {MAX_GRID_YZ}; "
            f"at split_k={split_k} a call runs at most L={MAX_GRID_YZ // per_batch} batches: split the batch"
        )
    largest = config.family_info.max_scale_bytes
    if largest:
        scaled = (("b_scale", n),) if shape.format.weight_only else (("a_scale", m), ("b_scale", n))
        for name, rows in scaled:
            scale_bytes = blocked_scale_numel(rows, k, fmt=shape.format.block)
            if scale_bytes > largest:
                raise ValueError(
                    f"config {config.name!r}: {name} holds {scale_bytes} bytes of blocked scales per matrix "
                    f"(M={m} N={n} K={k}); the {config.family} kernels' scale layout has 32-bit strides, so one "
                    f"matrix's scales must stay at most {largest} bytes: split the call"
                )
        converted = l * n * (k // shape.format.block.values_per_scale)
        if shape.format.weight_only and converted > largest:
            raise ValueError(
                f"config {config.name!r}: the weight-only kernel reads b_scale converted into L*N*K/16 = {converted} "
                f"values (L={l} N={n} K={k}) through 32-bit strides, at most {largest}: split the batch"
            )
