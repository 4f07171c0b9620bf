"""`torch.ops.nvfp4.quantize` and `nvfp4_gemm.quantize`: a float32/float16/bfloat16 tensor -> operands
for `gemm` in one of the operand formats (dtypes.OPERAND_FORMATS): NVFP4 (packed e2m1 codes, blocked e4m3
scales, the global scale, the GEMM's alpha), MXFP4 (packed e2m1, blocked ue8m0 scales) or MXFP8 (e4m3
values, blocked ue8m0 scales).

The NVFP4 recipe (docs/formats.md, "Quantize") is `formats.quantize_reference`, the MX recipe
(docs/formats.md, "Quantize to MX") `formats.quantize_mx_reference`: the CPU op runs them. The CUDA op
launches csrc/include/nvfp4_gemm/quantize/{nvfp4,mx}_quantize.cuh (over quantize_common.cuh), which do
the same fp32 operations in the same order (bit-identical codes and scale bytes); NVFP4's dynamic global
scale is computed on the device, so no call synchronizes with the host. Where the extension was built with
torch (`_C.HAS_TORCH_OP`), the op's CUDA kernel is C++ (csrc/torch_op.cpp): it runs the Python path here
once per signature (`_op_first_call`) and then serves that signature without Python.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

import torch

from . import _C
from ._checks import check_pointer_alignment
from .dtypes import OPERAND_FORMATS, OperandFormat, operand_format
from .formats import blocked_scale_numel, gemm_alpha, quantize_mx_reference, quantize_reference
from .ops import _check_device_supported, _current_stream, _device_index, _take_handles

__all__ = ["Quantized", "quantize", "INPUT_DTYPES", "set_quantize_sms", "quantize_sms"]

_SCHEMA = (
    "quantize(Tensor x, Tensor? global_scale=None, Tensor? partner_global_scale=None, str format=\"nvfp4\") "
    "-> (Tensor, Tensor, Tensor, Tensor)"
)

# Input dtypes and the kernel's code for each (csrc quantize::InputDtype).
INPUT_DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_MAX_SCALE_BYTES = 2**31 - 1  # the kernel indexes (row, scale column) pairs with 32-bit integers
# The kernels' code for each operand format (csrc OperandFormat, generated from dtypes.OPERAND_FORMATS).
_FORMAT_CODES = {f.name: i for i, f in enumerate(OPERAND_FORMATS)}
_HAS_TORCH_OP: bool = _C.HAS_TORCH_OP  # the op's CUDA kernel is C++ (csrc/torch_op.cpp)


class Quantized(NamedTuple):
    """The quantized operands of one tensor x (..., K), ready for `gemm`."""

    # (..., K/2) uint8: e2m1 codes, element 2j in the low nibble of byte j (nvfp4, mxfp4); (..., K)
    # float8_e4m3fn (mxfp8)
    data: torch.Tensor
    # (round_up(rows, 128) * round_up(K/block, 4),) blocked, zero padding: float8_e4m3fn per 16 (nvfp4) or
    # float8_e8m0fnu per 32 (mx)
    scale: torch.Tensor
    global_scale: torch.Tensor  # float32 0-d: the global scale used (1 for MX, which has none)
    alpha: torch.Tensor  # float32 0-d: 1 / (global_scale * partner_global_scale), partner 1 if not given


class _Signature(NamedTuple):
    """What the rules say of one call signature: rows (the product of x's leading dims), K, the operand
    format, and the (shape, dtype) of each output field."""

    rows: int
    k: int
    fmt: OperandFormat
    outputs: tuple


# Signature verdicts (dtypes, shapes, format, the scalars' dtypes and sizes) are remembered per distinct
# signature, as the gemm checks do (_checks.check_gemm_args): a repeated call pays for a dict lookup and
# the per-call storage rules. Bounded: cleared when it grows past this many signatures.
_SIGNATURE_CACHE_LIMIT = 4096
_signatures: dict[tuple, _Signature] = {}


def _scalar_signature(t: Optional[torch.Tensor]):
    return None if t is None else (t.dtype, t.numel())


def _check_scalar_signature(name: str, t: Optional[torch.Tensor]) -> None:
    if t is None:
        return
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be None or a float32 tensor with one element, got {type(t).__name__}")
    if t.dtype != torch.float32 or t.numel() != 1:
        raise ValueError(f"{name} must be a float32 tensor with one element, got dtype {t.dtype} and {t.numel()} elements")


def check_quantize_args(
    x: torch.Tensor,
    global_scale: Optional[torch.Tensor],
    partner_global_scale: Optional[torch.Tensor],
    format: str = "nvfp4",
    grad_rule: bool = True,
) -> _Signature:
    """Validate the quantize arguments before anything is launched; return what the signature's rules say.
    grad_rule=False leaves out the requires-grad rule (the API's): the op is non-differentiable (its
    Autograd kernel falls through, as gemm's), and its C++ kernel cannot read requires_grad."""
    try:
        key = (x.dtype, x.shape, format, _scalar_signature(global_scale), _scalar_signature(partner_global_scale))
        signature = _signatures.get(key)
    except (AttributeError, TypeError):  # not tensors (the full check names them), or symbolic sizes
        key, signature = None, None
    if signature is None:
        signature = _check_signature(x, global_scale, partner_global_scale, format)
        if key is not None:
            if len(_signatures) >= _SIGNATURE_CACHE_LIMIT:
                _signatures.clear()
            _signatures[key] = signature
    _check_storage(x, global_scale, partner_global_scale)
    if grad_rule:
        _check_no_grad(x, global_scale, partner_global_scale)
    return signature


def _has_global_scale(fmt: OperandFormat) -> bool:
    """NVFP4's e4m3 scales are relative to a global scale; MX's power-of-two (ue8m0) scales stand alone."""
    return fmt.block.scale_dtype != "float8_e8m0fnu"


def _check_signature(x, global_scale, partner_global_scale, format) -> _Signature:
    """The rules that depend only on the call's signature (see check_quantize_args)."""
    if not isinstance(format, str):
        raise TypeError(f"format must be a str, got {type(format).__name__}")
    fmt = operand_format(format)
    block = fmt.block.values_per_scale
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in INPUT_DTYPES:
        raise TypeError(f"x must be float32, float16 or bfloat16, got {x.dtype}")
    if x.dim() < 1:
        raise ValueError("x must have at least one dimension (..., K)")
    k = x.shape[-1]
    if k < block or k % block:
        raise ValueError(
            f"x.shape[-1] (K) must be a positive multiple of {block} (values per {format} scale), got shape "
            f"{tuple(x.shape)}"
        )
    rows = math.prod(x.shape[:-1])
    if blocked_scale_numel(rows, k, fmt=fmt.block) > _MAX_SCALE_BYTES:
        raise ValueError(f"x of shape {tuple(x.shape)} needs more than 2^31 blocked scale bytes; quantize it in parts")
    if global_scale is not None and not _has_global_scale(fmt):
        raise ValueError(
            f"format={format!r} has no global scale (its scales are powers of two, one per {block} values): pass "
            f"global_scale=None"
        )
    _check_scalar_signature("global_scale", global_scale)
    _check_scalar_signature("partner_global_scale", partner_global_scale)
    return _Signature(rows, k, fmt, _output_specs(x, rows, k, fmt))


def _check_storage(x, global_scale, partner_global_scale) -> None:
    """Contiguity, one device: properties of the tensors themselves, checked on every call."""
    if not x.is_contiguous():
        raise ValueError(f"x must be contiguous (the kernel reads rows of K elements), got strides {x.stride()}")
    for name, t in (("global_scale", global_scale), ("partner_global_scale", partner_global_scale)):
        if t is not None and t.device != x.device:
            raise ValueError(f"{name} is on {t.device} but x is on {x.device}: both must be on one device")


def _check_no_grad(x, global_scale, partner_global_scale) -> None:
    """The Python API's rule: with grad mode on, no argument may require grad."""
    if torch.is_grad_enabled():
        for name, t in (("x", x), ("global_scale", global_scale), ("partner_global_scale", partner_global_scale)):
            if getattr(t, "requires_grad", False):
                raise ValueError(
                    f"{name} requires grad, but quantize has no backward (its outputs are codes): pass "
                    f"{name}.detach() or call it under torch.no_grad() / torch.inference_mode()"
                )


def _output_specs(
    x: torch.Tensor, rows: int, k: int, fmt: OperandFormat
) -> tuple[tuple[tuple[int, ...], torch.dtype], ...]:
    """(shape, dtype) of each field of `Quantized` for x."""
    element = fmt.element
    return (
        ((*x.shape[:-1], k // element.per_element), getattr(torch, element.storage_dtypes[0])),
        ((blocked_scale_numel(rows, k, fmt=fmt.block),), getattr(torch, fmt.block.scale_dtype)),
        ((), torch.float32),
        ((), torch.float32),
    )


def _empty_outputs(x: torch.Tensor, signature: _Signature) -> Quantized:
    return Quantized(*(x.new_empty(shape, dtype=dtype) for shape, dtype in signature.outputs))


def _check_out(out: Quantized, x: torch.Tensor, signature: _Signature) -> None:
    for name, given, (shape, dtype) in zip(Quantized._fields, out, signature.outputs):
        if not isinstance(given, torch.Tensor):
            raise TypeError(f"out.{name} must be a torch.Tensor, got {type(given).__name__}")
        if given.dtype != dtype or tuple(given.shape) != shape or given.device != x.device:
            raise ValueError(
                f"out.{name} must be a {dtype} tensor of shape {shape} on {x.device}, "
                f"got {given.dtype} {tuple(given.shape)} on {given.device}"
            )
        if not given.is_contiguous():
            raise ValueError(f"out.{name} must be contiguous")


_supported_devices: set[int] = set()
# NVFP4's dynamic-scale scratch per (device, stream): zero-filled once and kept, since the one-pass kernel
# numbers its calls in it (csrc quantize.h, AmaxScratch); the op's C++ path keeps its own the same way.
_amax_scratch: dict[tuple[int, int], torch.Tensor] = {}


def _amax_scratch_for(device: torch.device, index: int, stream: int) -> torch.Tensor:
    scratch = _amax_scratch.get((index, stream))
    if scratch is None:
        scratch = torch.zeros(_C.QUANTIZE_AMAX_SCRATCH_BYTES, dtype=torch.uint8, device=device)
        _amax_scratch[(index, stream)] = scratch
    return scratch


def _launch_cuda(
    x: torch.Tensor,
    global_scale: Optional[torch.Tensor],
    partner_global_scale: Optional[torch.Tensor],
    out: Quantized,
    rows: int,
    k: int,
    fmt: OperandFormat,
) -> None:
    index = _device_index(x.device)
    if index not in _supported_devices:
        _check_device_supported(index)
        _supported_devices.add(index)
    # 16-byte loads of x, 8-byte (NVFP4) or 16-byte (MX) stores of codes (the scalars and scale bytes need only
    # their dtype's)
    if (x.data_ptr() | out.data.data_ptr()) % 16:
        check_pointer_alignment({"x": x, "out.data": out.data})  # raises, naming the misaligned tensor
    stream = _current_stream(index)
    scratch = None
    if global_scale is None and _has_global_scale(fmt):
        scratch = _amax_scratch_for(x.device, index, stream)
    _C.quantize(
        x.data_ptr(), INPUT_DTYPES[x.dtype], _FORMAT_CODES[fmt.name], rows, k,
        0 if global_scale is None else global_scale.data_ptr(),
        0 if partner_global_scale is None else partner_global_scale.data_ptr(),
        out.data.data_ptr(), out.scale.data_ptr(), out.global_scale.data_ptr(), out.alpha.data_ptr(),
        0 if scratch is None else scratch.data_ptr(),
        index, stream,
    )


def quantize(
    x: torch.Tensor,
    global_scale: Optional[torch.Tensor] = None,
    *,
    partner_global_scale: Optional[torch.Tensor] = None,
    out: Optional[Quantized] = None,
    format: str = "nvfp4",
) -> Quantized:
    """Quantize x (..., K) to NVFP4: ``x ~= e2m1(data) * e4m3(scale) / global_scale`` per block of 16;
    with format="mxfp4" or "mxfp8" to MX: ``x ~= value(data) * 2^(scale - 127)`` per block of 32 (the OCP
    MX recipe, docs/formats.md "Quantize to MX"; global_scale 1, no global scale argument).

    Args:
        x: float32, float16 or bfloat16, contiguous, K = x.shape[-1] a multiple of 16 (the GEMM
            needs K % 32 == 0); rows = the product of the leading dims.
        global_scale: the static global scale (float32, one element, on x's device), e.g. from
            calibration; None computes it on the device as 2688 / max|x| (dynamic, no host sync).
        partner_global_scale: the global scale of the GEMM's other operand; `alpha` is then the
            GEMM's alpha, 1 / (global_scale * partner_global_scale). Without it: 1 / global_scale.
        out: optional preallocated outputs (as `Quantized`), written in place.
        format: "nvfp4" (default), "mxfp4" (packed e2m1, ue8m0 scales) or "mxfp8" (e4m3 values, ue8m0
            scales; the activations of the W4A8 GEMM). MX needs K % 32 == 0.

    CUDA tensors run on the current stream (CUDA-graph capturable), bit for bit the reference; without
    `out` through the op's C++ kernel where the build has one (NVFP4's dynamic scale's scratch then is one
    buffer per device and stream, made on its first use: warm a stream up before capturing on it, as for
    gemm), else allocated per call; CPU tensors run the reference recipe,
    formats.quantize_reference or formats.quantize_mx_reference.
    Non-finite input: a block holding NaN or +-inf gets the NaN scale byte (0x7F e4m3, 0xFF ue8m0) and
    codes 0 (it dequantizes to NaN, and so does every GEMM output it feeds); an NVFP4 global scale that
    is not a positive finite number makes every block NaN.
    """
    if out is None and _HAS_TORCH_OP and isinstance(x, torch.Tensor) and x.is_cuda and not torch.compiler.is_compiling():
        # the op's C++ kernel, directly: the API's own rule (no grad) here, the op's rules in the op, whose
        # errors come from its Python path and get their own type back here (the dispatcher makes every
        # exception of a C++ kernel a RuntimeError)
        _check_no_grad(x, global_scale, partner_global_scale)
        try:
            if format == "nvfp4":
                outputs = _quantize_call(x, global_scale, partner_global_scale)
            else:
                outputs = _quantize_call(x, global_scale, partner_global_scale, format)
        except RuntimeError:
            original = _C.take_op_error()
            if original is not None:
                raise original from None
            _check_signature(x, global_scale, partner_global_scale, format)  # arguments the schema refused
            raise
        return tuple.__new__(Quantized, outputs)  # Quantized(*outputs) without its Python-level __new__
    signature = check_quantize_args(x, global_scale, partner_global_scale, format)
    fmt = signature.fmt
    if out is not None:
        _check_out(out, x, signature)
    if x.device.type == "cuda":
        result = _empty_outputs(x, signature) if out is None else out
        _launch_cuda(x, global_scale, partner_global_scale, result, signature.rows, signature.k, fmt)
        return result
    if x.device.type != "cpu":
        raise ValueError(f"x must be on a CUDA device or the CPU, got {x.device}")
    result = Quantized(*_reference(x, global_scale, partner_global_scale, fmt))
    if out is None:
        return result
    for dst, src in zip(out, result):
        dst.copy_(src)
    return out


def set_quantize_sms(sms: Optional[int]) -> None:
    """Size the CUDA quantize kernels' grids for `sms` SMs instead of the whole GPU (None, the default: the
    whole GPU). Process-wide, for every device; a device with `sms` or fewer SMs uses all of its own.

    For kernels of other streams that run beside the quantize, as NCCL's where tensor parallelism
    overlaps communication with compute. NVFP4's dynamic global scale is taken by CTAs that wait for each
    other's partial maxima, launched as cooperative grids, which start only once every CTA fits. Sized for
    the whole GPU (beyond ~1660 rows at K = 7168 on a 132-SM H100/H200 the grid fills every SM),
    such a grid waits until a concurrent all-reduce has left its SMs; sized for fewer it starts beside it
    (two H100s, 2048x7168 beside a 256 MB all-reduce: 1.0-1.9 ms at all 132 SMs, 55-75 us at 108), at a cost
    where nothing runs beside it (8192x7168: 92.5 us at 132, 98.9 at 108). Perf notes, "Quantize beside NCCL".
    """
    if sms is not None and (isinstance(sms, bool) or not isinstance(sms, int) or sms < 1):
        raise ValueError(f"sms must be None (the whole GPU) or a positive int, got {sms!r}")
    _C.set_quantize_sms(0 if sms is None else sms)


def quantize_sms() -> Optional[int]:
    """What `set_quantize_sms` last set: the SMs the quantize kernels size their grids for, None for all."""
    limit = _C.quantize_sms_limit()
    return None if limit == 0 else limit


# --- torch.library registration (the namespace is defined in ops.py) ------------------------------

_lib = torch.library.Library("nvfp4", "FRAGMENT")
_lib.define(_SCHEMA)


def _reference(x, global_scale, partner_global_scale, fmt: OperandFormat) -> tuple:
    """The recipe of `fmt` on the CPU: the NVFP4 one, or the MX one with global scale 1."""
    if fmt.name == "nvfp4":
        return quantize_reference(x, global_scale, partner_global_scale)
    data, scale = quantize_mx_reference(x, fmt.name)
    unit = torch.ones((), dtype=torch.float32)
    partner = None if partner_global_scale is None else partner_global_scale.detach().cpu()
    return data, scale, unit, gemm_alpha(unit, partner)


@torch.no_grad()  # non-differentiable: the outputs never record the ops inside
def _quantize_cpu(x, global_scale=None, partner_global_scale=None, format="nvfp4"):
    signature = check_quantize_args(x, global_scale, partner_global_scale, format, grad_rule=False)
    return _reference(x, global_scale, partner_global_scale, signature.fmt)


def _run_and_plan(x, global_scale, partner_global_scale, format) -> tuple[Quantized, tuple]:
    """The whole Python path of one CUDA call of the op - validate, allocate, launch - and the plan a C++ op
    then serves the signature with: (format code, x's dtype code, rows, K, 1 if NVFP4's dynamic global
    scale needs the amax scratch else 0)."""
    signature = check_quantize_args(x, global_scale, partner_global_scale, format, grad_rule=False)
    fmt = signature.fmt
    out = _empty_outputs(x, signature)
    _launch_cuda(x, global_scale, partner_global_scale, out, signature.rows, signature.k, fmt)
    amax_scratch = global_scale is None and _has_global_scale(fmt)
    return out, (_FORMAT_CODES[fmt.name], INPUT_DTYPES[x.dtype], signature.rows, signature.k, int(amax_scratch))


def _quantize_cuda(x, global_scale=None, partner_global_scale=None, format="nvfp4"):
    """The op on CUDA where the build has no C++ kernels."""
    return tuple(_run_and_plan(x, global_scale, partner_global_scale, format)[0])


def _quantize_fake(x, global_scale=None, partner_global_scale=None, format="nvfp4"):
    signature = check_quantize_args(x, global_scale, partner_global_scale, format, grad_rule=False)
    return tuple(_empty_outputs(x, signature))


# Non-differentiable, as gemm (ops.py): outputs never require grad and no autograd kernel runs (a Python
# one would cost every CUDA call its trampoline). nvfp4_gemm.quantize rejects grad (_check_no_grad).
_lib.impl("quantize", torch.library.fallthrough_kernel, "Autograd")
_lib.impl("quantize", _quantize_cpu, "CPU")
if not _HAS_TORCH_OP:  # else the C++ kernel of torch_op.cpp, registered when _C loaded
    _lib.impl("quantize", _quantize_cuda, "CUDA")
torch.library.register_fake("nvfp4::quantize", _quantize_fake, lib=_lib)
# The overload's C++ callable (what OpOverload.__call__ calls): one Python frame less per call.
_quantize_call = getattr(torch.ops.nvfp4.quantize.default, "_op", torch.ops.nvfp4.quantize.default)


@torch.no_grad()  # non-differentiable: the outputs never record the ops inside
def _op_first_call(arguments: list) -> tuple[tuple, tuple]:
    """The C++ op's first call of a signature (and any call whose addresses it cannot vouch for): the
    whole Python path on the tensors behind the capsules of x, global_scale or None and
    partner_global_scale or None, then the format's name. Returns handles of the four outputs (for the
    caller to own) and the plan (`_run_and_plan`)."""
    *handles, format = arguments
    out, plan = _run_and_plan(*_take_handles(handles), format)
    return tuple(torch._C._aoti.unsafe_alloc_void_ptr_from_tensor(t) for t in out), plan
