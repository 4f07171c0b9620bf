"""`torch.ops.nvfp4.quantize` and `nvfp4_gemm.quantize`: a float32/float16/bfloat16 tensor -> NVFP4
operands for `gemm` (packed e2m1 codes, blocked e4m3 scales, the global scale, the GEMM's alpha).

The recipe (docs/formats.md, "Quantize") is `formats.quantize_reference`, which the CPU op runs. The
CUDA op launches csrc/include/nvfp4_gemm/quantize/nvfp4_quantize.cuh, which does the same fp32
operations in the same order (bit-identical codes and scale bytes); the dynamic global scale is
computed on the device, so no call synchronizes with the host.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

import torch

from . import _C
from ._checks import check_pointer_alignment
from .formats import SCALE_BLOCK, blocked_scale_numel, quantize_reference
from .ops import _check_device_supported, _current_stream, _device_index

__all__ = ["Quantized", "quantize", "INPUT_DTYPES"]

_SCHEMA = (
    "quantize(Tensor x, Tensor? global_scale=None, Tensor? partner_global_scale=None) "
    "-> (Tensor, Tensor, Tensor, Tensor)"
)

# Input dtypes and the kernel's code for each (csrc quantize::InputDtype).
INPUT_DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_MAX_SCALE_BYTES = 2**31 - 1  # the kernel indexes (row, scale column) pairs with 32-bit integers


class Quantized(NamedTuple):
    """NVFP4 operands of one tensor x (..., K), ready for `gemm`."""

    data: torch.Tensor  # (..., K/2) uint8: e2m1 codes, element 2j in the low nibble of byte j
    scale: torch.Tensor  # (round_up(rows, 128) * round_up(K/16, 4),) float8_e4m3fn, blocked, zero padding
    global_scale: torch.Tensor  # float32 0-d: the global scale used
    alpha: torch.Tensor  # float32 0-d: 1 / (global_scale * partner_global_scale), partner 1 if not given


def _check_scalar(name: str, t: Optional[torch.Tensor], device: torch.device) -> None:
    if t is None:
        return
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be None or a float32 tensor with one element, got {type(t).__name__}")
    if t.dtype != torch.float32 or t.numel() != 1:
        raise ValueError(f"{name} must be a float32 tensor with one element, got dtype {t.dtype} and {t.numel()} elements")
    if t.device != device:
        raise ValueError(f"{name} is on {t.device} but x is on {device}: both must be on one device")


def check_quantize_args(
    x: torch.Tensor, global_scale: Optional[torch.Tensor], partner_global_scale: Optional[torch.Tensor]
) -> tuple[int, int]:
    """Validate the quantize arguments before anything is launched; return (rows, K)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in INPUT_DTYPES:
        raise TypeError(f"x must be float32, float16 or bfloat16, got {x.dtype}")
    if x.dim() < 1:
        raise ValueError("x must have at least one dimension (..., K)")
    k = x.shape[-1]
    if k < SCALE_BLOCK or k % SCALE_BLOCK:
        raise ValueError(f"x.shape[-1] (K) must be a positive multiple of {SCALE_BLOCK}, got shape {tuple(x.shape)}")
    if not x.is_contiguous():
        raise ValueError(f"x must be contiguous (the kernel reads rows of K elements), got strides {x.stride()}")
    rows = math.prod(x.shape[:-1])
    if blocked_scale_numel(rows, k) > _MAX_SCALE_BYTES:
        raise ValueError(f"x of shape {tuple(x.shape)} needs more than 2^31 blocked scale bytes; quantize it in parts")
    _check_scalar("global_scale", global_scale, x.device)
    _check_scalar("partner_global_scale", partner_global_scale, x.device)
    if torch.is_grad_enabled():
        for name, t in (("x", x), ("global_scale", global_scale), ("partner_global_scale", partner_global_scale)):
            if t is not None and t.requires_grad:
                raise ValueError(
                    f"{name} requires grad, but quantize has no backward (its outputs are codes): pass "
                    f"{name}.detach() or call it under torch.no_grad() / torch.inference_mode()"
                )
    return rows, k


def _output_specs(x: torch.Tensor, rows: int, k: int) -> tuple[tuple[tuple[int, ...], torch.dtype], ...]:
    """(shape, dtype) of each field of `Quantized` for x."""
    return (
        ((*x.shape[:-1], k // 2), torch.uint8),
        ((blocked_scale_numel(rows, k),), torch.float8_e4m3fn),
        ((), torch.float32),
        ((), torch.float32),
    )


def _empty_outputs(x: torch.Tensor, rows: int, k: int) -> Quantized:
    return Quantized(*(x.new_empty(shape, dtype=dtype) for shape, dtype in _output_specs(x, rows, k)))


def _check_out(out: Quantized, x: torch.Tensor, rows: int, k: int) -> None:
    for name, given, (shape, dtype) in zip(Quantized._fields, out, _output_specs(x, rows, k)):
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


def _launch_cuda(
    x: torch.Tensor,
    global_scale: Optional[torch.Tensor],
    partner_global_scale: Optional[torch.Tensor],
    out: Quantized,
    rows: int,
    k: int,
) -> None:
    index = _device_index(x.device)
    if index not in _supported_devices:
        _check_device_supported(index)
        _supported_devices.add(index)
    # 16-byte loads of x, 8-byte stores of codes (the scalars and scale bytes need only their dtype's)
    if (x.data_ptr() | out.data.data_ptr()) % 16:
        check_pointer_alignment({"x": x, "out.data": out.data})  # raises, naming the misaligned tensor
    partials = None
    if global_scale is None:
        partials = torch.empty(_C.QUANTIZE_AMAX_PARTIALS, dtype=torch.float32, device=x.device)
    _C.quantize(
        x.data_ptr(), INPUT_DTYPES[x.dtype], rows, k,
        0 if global_scale is None else global_scale.data_ptr(),
        0 if partner_global_scale is None else partner_global_scale.data_ptr(),
        out.data.data_ptr(), out.scale.data_ptr(), out.global_scale.data_ptr(), out.alpha.data_ptr(),
        0 if partials is None else partials.data_ptr(),
        index, _current_stream(index),
    )


def quantize(
    x: torch.Tensor,
    global_scale: Optional[torch.Tensor] = None,
    *,
    partner_global_scale: Optional[torch.Tensor] = None,
    out: Optional[Quantized] = None,
) -> Quantized:
    """Quantize x (..., K) to NVFP4: ``x ~= e2m1(data) * e4m3(scale) / global_scale`` per block of 16.

    Args:
        x: float32, float16 or bfloat16, contiguous, K = x.shape[-1] a multiple of 16 (the GEMM
            needs K % 32 == 0); rows = the product of the leading dims.
        global_scale: the static global scale (float32, one element, on x's device), e.g. from
            calibration; None computes it on the device as 2688 / max|x| (dynamic, no host sync).
        partner_global_scale: the global scale of the GEMM's other operand; `alpha` is then the
            GEMM's alpha, 1 / (global_scale * partner_global_scale). Without it: 1 / global_scale.
        out: optional preallocated outputs (as `Quantized`), written in place.

    CUDA tensors run on the current stream (CUDA-graph capturable; the dynamic scale's scratch is
    allocated per call); CPU tensors run the reference recipe, formats.quantize_reference.
    Non-finite input: a block holding NaN or +-inf gets the NaN scale byte 0x7F (it dequantizes to
    NaN, and so does every GEMM output it feeds); a global scale that is not a positive finite
    number makes every block NaN.
    """
    rows, k = check_quantize_args(x, global_scale, partner_global_scale)
    if out is not None:
        _check_out(out, x, rows, k)
    if x.device.type == "cuda":
        result = _empty_outputs(x, rows, k) if out is None else out
        _launch_cuda(x, global_scale, partner_global_scale, result, rows, k)
        return result
    if x.device.type != "cpu":
        raise ValueError(f"x must be on a CUDA device or the CPU, got {x.device}")
    result = Quantized(*quantize_reference(x, global_scale, partner_global_scale))
    if out is None:
        return result
    for dst, src in zip(out, result):
        dst.copy_(src)
    return out


# --- torch.library registration (the namespace is defined in ops.py) ------------------------------

_lib = torch.library.Library("nvfp4", "FRAGMENT")
_lib.define(_SCHEMA)


def _quantize_cpu(x, global_scale=None, partner_global_scale=None):
    check_quantize_args(x, global_scale, partner_global_scale)
    return quantize_reference(x, global_scale, partner_global_scale)


def _quantize_cuda(x, global_scale=None, partner_global_scale=None):
    rows, k = check_quantize_args(x, global_scale, partner_global_scale)
    out = _empty_outputs(x, rows, k)
    _launch_cuda(x, global_scale, partner_global_scale, out, rows, k)
    return tuple(out)


def _quantize_fake(x, global_scale=None, partner_global_scale=None):
    rows, k = check_quantize_args(x, global_scale, partner_global_scale)
    return tuple(_empty_outputs(x, rows, k))


_lib.impl("quantize", _quantize_cpu, "CPU")
_lib.impl("quantize", _quantize_cuda, "CUDA")
torch.library.register_fake("nvfp4::quantize", _quantize_fake, lib=_lib)
