"""`torch.ops.nvfp4.gemm` and `nvfp4_gemm.gemm`: schema, fake, CPU and CUDA implementations.

The data path of one CUDA call: validate (_checks) -> plan, cached per (device, shape, dtype,
config): device support, resolver, registry lookup, workspace size -> `_C.Kernel.run` with the
tensors' device and that device's current stream. Where the extension was built with torch
(`_C.HAS_TORCH_OP`), the op's CUDA kernels are C++ (csrc/torch_op.cpp): they run this path once per
signature and then serve that signature without Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from . import _C, families
from ._checks import (
    OUT_DTYPE_NAMES,
    GemmShape,
    check_gemm_args,
    check_format_supported,
    check_kernel_limits,
    check_out,
    check_no_grad,
    check_pointer_alignment,
    check_split_k_type,
)
from .formats import reference_gemm
from .resolver import UnsupportedDeviceError, pinned_config, resolve

__all__ = ["gemm", "compiled_architectures", "supported_capabilities", "unsupported_reason"]

_SCHEMA = (
    "gemm(Tensor a, Tensor b, Tensor? a_scale, Tensor b_scale, Tensor? alpha=None, "
    "ScalarType out_dtype=float16) -> Tensor"
)
# `gemm(..., out=)` in one dispatcher call (nvfp4_gemm.gemm's route to the C++ op); not public.
# out_dtype None: out's dtype. Trailing defaults: a call that leaves them out parses fewer arguments
# (passing None and a dtype cost ~1.4 us per call on the H200 host, 2026-11-23).
_INTO_SCHEMA = (
    "_gemm_into(Tensor a, Tensor b, Tensor? a_scale, Tensor b_scale, Tensor(a!) out, Tensor? alpha=None, "
    "ScalarType? out_dtype=None) -> ()"
)

# Compute capabilities each compiled architecture runs on (the kernel families' own list).
_ARCH_CAPABILITIES = families.arch_capabilities()


def compiled_architectures() -> list[str]:
    """CUDA architectures the installed extension carries kernels for, e.g. ['sm_100f']."""
    return list(_C.compiled_architectures())


def supported_capabilities() -> list[tuple[int, int]]:
    """Compute capabilities the installed extension can run on."""
    caps = {cap for arch in compiled_architectures() for cap in _ARCH_CAPABILITIES.get(arch, ())}
    return sorted(caps)


@dataclass(frozen=True)
class _Plan:
    kernel: "_C.Kernel"
    split_k: int
    workspace_bytes: int
    counters: int


_HAS_TORCH_OP: bool = _C.HAS_TORCH_OP  # the op's CUDA kernels are C++ (csrc/torch_op.cpp)
_plans: dict[tuple, _Plan] = {}
_workspaces: dict[tuple[int, int], torch.Tensor] = {}
_counters: dict[tuple[int, int], torch.Tensor] = {}


def _device_index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


def _capability_reason(index: int) -> Optional[str]:
    capability = torch.cuda.get_device_capability(index)
    if capability in supported_capabilities():
        return None
    archs = ", ".join(compiled_architectures()) or "no CUDA architectures"
    caps = ", ".join(f"{major}.{minor}" for major, minor in supported_capabilities()) or "none"
    return (
        f"no kernel for {torch.cuda.get_device_name(index)} (compute capability {capability[0]}.{capability[1]}) "
        f"on cuda:{index}: this wheel carries {archs}, which runs on compute capability {caps}"
    )


def unsupported_reason(index: Optional[int] = None) -> Optional[str]:
    """None if this wheel has kernels for GPU `index` (default: the current one), else why not."""
    if not torch.cuda.is_available():
        return f"no CUDA GPU visible (this wheel carries: {', '.join(compiled_architectures()) or 'none'})"
    return _capability_reason(torch.cuda.current_device() if index is None else index)


def _check_device_supported(index: int) -> None:
    reason = _capability_reason(index)
    if reason is not None:
        raise UnsupportedDeviceError(
            f"nvfp4_gemm has {reason}. Rebuild with NVFP4_GEMM_CUDA_ARCHS for your GPU if the library supports "
            f"it, or use CPU tensors for the reference implementation."
        )


def _make_plan(
    index: int, shape: GemmShape, out_dtype: torch.dtype, config_name: Optional[str], split_k: Optional[int],
    alpha_per_column: bool,
) -> _Plan:
    _check_device_supported(index)
    check_format_supported(families.for_sm_major(torch.cuda.get_device_capability(index)[0]), shape)
    dtype_name = OUT_DTYPE_NAMES[out_dtype]
    device = torch.device("cuda", index)
    # the resolver checks a pinned config, a pinned split_k (against the config that runs) and the alpha's kind
    resolution = resolve(
        shape.m, shape.n, shape.k, shape.l, out_dtype, device, explain=True, config=config_name, split_k=split_k,
        format=shape.format.name, alpha_per_column=alpha_per_column,
    )
    name, split_k = resolution.config.name, resolution.split_k
    check_kernel_limits(resolution.config, shape, split_k)
    try:
        kernel = _C.lookup(name, dtype_name)
    except KeyError:
        names = sorted({entry[0] for entry in _C.kernels()})
        raise ValueError(f"config {name!r} is not in this build; it carries: {', '.join(names)}") from None
    rejection, workspace, counters = kernel.plan(shape.m, shape.n, shape.k, shape.l, split_k, index)
    if rejection is not None:
        raise ValueError(f"config {name!r} cannot run M={shape.m} N={shape.n} K={shape.k} L={shape.l}: {rejection}")
    return _Plan(kernel=kernel, split_k=split_k, workspace_bytes=workspace, counters=counters)


def _alpha_per_column(alpha: Optional[torch.Tensor]) -> bool:
    """Whether a checked alpha is the (N,) vector (one value per output column) rather than one value."""
    return alpha is not None and alpha.numel() > 1


def _buffer(cache: dict, index: int, stream: int, numel: int, dtype: torch.dtype) -> torch.Tensor:
    # One buffer per (device, stream), grown when a plan needs more, never freed: no allocation per
    # call, and no two streams share one. Zero-filled when (re)allocated: the counters need it, and
    # kernels leave them zero again.
    key = (index, stream)
    buffer = cache.get(key)
    if buffer is None or buffer.numel() < numel:
        buffer = torch.zeros(numel, dtype=dtype, device=torch.device("cuda", index))
        cache[key] = buffer
    return buffer


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _current_stream(index: int) -> int:
    if _raw_stream is not None:
        return _raw_stream(index)
    return torch.cuda.current_stream(index).cuda_stream


def _launch_cuda(
    a: torch.Tensor,
    b: torch.Tensor,
    a_scale: Optional[torch.Tensor],
    b_scale: torch.Tensor,
    alpha: Optional[torch.Tensor],
    out: torch.Tensor,
    shape: GemmShape,
    config_name: Optional[str],
    split_k: Optional[int] = None,
) -> None:
    index = _device_index(a.device)
    per_column = _alpha_per_column(alpha)
    key = (index, shape.format.name, shape.m, shape.n, shape.k, shape.l, out.dtype, config_name, split_k, per_column)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = _make_plan(index, shape, out.dtype, config_name, split_k, per_column)
    pointers = (a.data_ptr(), b.data_ptr(), 0 if a_scale is None else a_scale.data_ptr(), b_scale.data_ptr(),
                out.data_ptr(), 0 if alpha is None else alpha.data_ptr())
    if (pointers[0] | pointers[1] | pointers[2] | pointers[3] | pointers[4] | pointers[5]) & 15:
        named = {"a": a, "b": b, "a_scale": a_scale, "b_scale": b_scale, "out": out, "alpha": alpha}
        named = {name: t for name, t in named.items() if t is not None}
        check_pointer_alignment(named)  # raises, naming the misaligned argument
    stream = _current_stream(index)
    workspace_ptr, workspace_capacity, counters_ptr, counter_capacity = 0, 0, 0, 0
    if plan.workspace_bytes:
        workspace = _buffer(_workspaces, index, stream, plan.workspace_bytes, torch.uint8)
        workspace_ptr, workspace_capacity = workspace.data_ptr(), workspace.numel()
    if plan.counters:
        counters = _buffer(_counters, index, stream, plan.counters, torch.int32)
        counters_ptr, counter_capacity = counters.data_ptr(), counters.numel()
    plan.kernel.run(
        *pointers, shape.m, shape.n, shape.k, shape.l, plan.split_k,
        workspace_ptr, workspace_capacity, counters_ptr, counter_capacity, index, stream, per_column,
    )


def gemm(
    a: torch.Tensor,
    b: torch.Tensor,
    a_scale: Optional[torch.Tensor],
    b_scale: torch.Tensor,
    alpha: Optional[torch.Tensor] = None,
    out_dtype: Optional[torch.dtype] = None,
    *,
    out: Optional[torch.Tensor] = None,
    config: Optional[str] = None,
    split_k: Optional[int] = None,
) -> torch.Tensor:
    """Block-scaled GEMM: ``out = alpha * dequant(a) @ dequant(b).T``, FP32 accumulation, one rounding.

    The format follows the dtypes, as torch._scaled_mm's does (docs/formats.md): float8_e4m3fn scales
    are NVFP4 (one per 16 values), float8_e8m0fnu scales MX (one power of two per 32 values); `a` packed
    FP4 is 4-bit activations (NVFP4 x NVFP4 or MXFP4 x MXFP4), `a` float8_e4m3fn (M, K) MXFP8
    activations (MXFP8 x MXFP4, "W4A8"; MX scales only), `a` float16/bfloat16 (M, K) with
    `a_scale=None` activations used as given times NVFP4 weights (weight-only, "W4A16").

    Args:
        a: packed FP4 (M, K/2) or (L, M, K/2), uint8 or torch.float4_e2m1fn_x2, contiguous; or
            float8_e4m3fn (M, K) or (L, M, K) with MX scales; or float16/bfloat16 (M, K) or (L, M, K)
            with a_scale=None and NVFP4 b.
        b: packed FP4 (N, K/2) or (L, N, K/2): the nn.Linear weight layout (K-major).
        a_scale, b_scale: scales of one dtype in the cuBLAS 128x4 blocked layout (a_scale None for 16-bit a; any shape
            whose contiguous storage is that layout, e.g. flat from `to_blocked`). Plain row-major
            (rows, K/16 or K/32) scales of the same size cannot be detected and give a wrong result:
            convert them with `nvfp4_gemm.to_blocked` (`nvfp4_gemm.testing.assert_blocked_like` checks).
        alpha: optional float32 one-element tensor on the same device (a global scale).
        out_dtype: torch.float16, torch.bfloat16 or torch.float32; default: out's dtype if `out`
            is given, else torch.float16.
        out: optional preallocated output (M, N) or (L, M, N) of `out_dtype`, contiguous and sharing
            no memory with the inputs; written in place.
        config: optional config name from the config table, bypassing the resolver (checked on every
            device; eager calls only).
        split_k: optional K partition count (an int >= 1) for configs with split-K (default: the
            resolver's); the config that runs bounds it (`Config.max_split_k`): on a GPU the pinned or
            resolved config, on the CPU the pinned one (without config= only the type is checked there).

    CUDA tensors run on their device's current stream (the formats its family takes, `Family.formats`:
    NVFP4 everywhere, MX x MX on Blackwell sm100 and Hopper, weight-only NVFP4 on Hopper and Blackwell sm100,
    weight-only MXFP4 on Hopper but fp16 x MXFP4; another
    is a NotImplementedError before any launch);
    CPU tensors use the exact reference, every format. M, N or
    L = 0 give the empty output and K = 0 gives alpha * 0, without a launch. No argument may require
    grad (there is no backward). The limits and their errors: README, "Errors and limits".
    """
    if out_dtype is None:
        out_dtype = out.dtype if isinstance(out, torch.Tensor) else torch.float16
    if torch.compiler.is_compiling():
        return _gemm_traced(a, b, a_scale, b_scale, alpha, out_dtype, out, config, split_k)
    if _HAS_TORCH_OP and config is None and split_k is None and isinstance(a, torch.Tensor) and a.is_cuda:
        return _gemm_native(a, b, a_scale, b_scale, alpha, out_dtype, out)
    shape = check_gemm_args(a, b, a_scale, b_scale, alpha, out_dtype, out)
    check_split_k_type(split_k)
    if a.device.type == "cuda":
        if out is None:
            out = torch.empty(shape.out_shape, dtype=out_dtype, device=a.device)
        if shape.empty:
            if config is not None:
                pinned_config(config, torch.cuda.get_device_capability(a.device)[0])
            return _answer_empty(alpha, out)
        _launch_cuda(a, b, a_scale, b_scale, alpha, out, shape, config, split_k)
        return out
    if a.device.type != "cpu":
        raise ValueError(f"tensors must be on a CUDA device or the CPU, got {a.device}")
    if config is not None:
        # the checks a launch of this config would make, so that a call behaves the same on every device
        pinned = pinned_config(config, split_k=None if shape.empty else split_k, k=shape.k)
        check_format_supported(pinned.family_info, shape)
        if pinned.format != shape.format.name:
            raise ValueError(f"config {config!r} runs the {pinned.format} format; this call is {shape.format.name}")
        violation = None if shape.empty else pinned.supports(
            shape.m, shape.n, shape.k, shape.l, OUT_DTYPE_NAMES[out_dtype], _alpha_per_column(alpha)
        )
        if violation is not None:
            raise ValueError(
                f"config {config!r} cannot run M={shape.m} N={shape.n} K={shape.k} L={shape.l} "
                f"{OUT_DTYPE_NAMES[out_dtype]}: {violation}"
            )
        if not shape.empty:
            check_kernel_limits(pinned, shape, 1 if split_k is None else split_k)
    if shape.empty:
        return _answer_empty(alpha, torch.empty(shape.out_shape, dtype=out_dtype) if out is None else out)
    result = reference_gemm(a, b, a_scale, b_scale, alpha, out_dtype)
    if out is None:
        return result
    out.copy_(result)
    return out


def _gemm_traced(a, b, a_scale, b_scale, alpha, out_dtype, out, config, split_k) -> torch.Tensor:
    """`gemm` as Dynamo traces it: the registered op, one opaque node (its fake gives the shape; the CPU
    reference inside it is not for Inductor to compile), written into `out` when one is given."""
    if config is not None or split_k is not None:
        raise ValueError(
            "config= and split_k= pin a kernel in eager calls; under torch.compile the op's resolver chooses "
            "(cached per shape): call nvfp4_gemm.gemm without them, or outside the compiled region"
        )
    check_no_grad(a, b, a_scale, b_scale, alpha, out)
    result = torch.ops.nvfp4.gemm(a, b, a_scale, b_scale, alpha, out_dtype)
    if out is None:
        return result
    check_out(out, out_dtype, tuple(result.shape))
    out.copy_(result)
    return out


def _answer_empty(alpha: Optional[torch.Tensor], out: torch.Tensor) -> torch.Tensor:
    """A problem with no work, answered without a kernel: no elements (M, N or L = 0), or K = 0, whose
    sums are empty: out = alpha * 0, as torch.matmul gives (NaN where alpha is inf or NaN, as the reference)."""
    if out.numel():
        out.zero_()
        if alpha is not None:
            out.mul_(alpha.reshape(-1))  # one alpha, or one per output column
    return out


# --- torch.library registration -------------------------------------------------------------

_lib = torch.library.Library("nvfp4", "DEF")
_lib.define(_SCHEMA)


@torch.no_grad()  # non-differentiable: the output never records the ops inside
def _gemm_python(a, b, a_scale, b_scale, alpha=None, out_dtype=torch.float16):
    """The op on the CPU (the exact reference), and on CUDA where the build has no C++ kernels."""
    shape = check_gemm_args(a, b, a_scale, b_scale, alpha, out_dtype, grad_rule=False)
    if shape.empty:
        return _answer_empty(alpha, torch.empty(shape.out_shape, dtype=out_dtype, device=a.device))
    if a.device.type == "cuda":
        out = torch.empty(shape.out_shape, dtype=out_dtype, device=a.device)
        _launch_cuda(a, b, a_scale, b_scale, alpha, out, shape, None)
        return out
    return reference_gemm(a, b, a_scale, b_scale, alpha, out_dtype)


def _gemm_fake(a, b, a_scale, b_scale, alpha=None, out_dtype=torch.float16):
    shape = check_gemm_args(a, b, a_scale, b_scale, alpha, out_dtype, grad_rule=False)
    return a.new_empty(shape.out_shape, dtype=out_dtype)


@torch.no_grad()  # non-differentiable: the output never records the ops inside
def _gemm_into_python(a, b, a_scale, b_scale, out, alpha=None, out_dtype=None):
    """`_gemm_into` on the CPU, and on CUDA where the build has no C++ kernels."""
    out_dtype = out.dtype if out_dtype is None else out_dtype
    shape = check_gemm_args(a, b, a_scale, b_scale, alpha, out_dtype, out, grad_rule=False)
    if shape.empty:
        _answer_empty(alpha, out)
    elif a.device.type == "cuda":
        _launch_cuda(a, b, a_scale, b_scale, alpha, out, shape, None)
    else:
        out.copy_(reference_gemm(a, b, a_scale, b_scale, alpha, out_dtype))


def _gemm_into_fake(a, b, a_scale, b_scale, out, alpha=None, out_dtype=None):
    out_dtype = out.dtype if out_dtype is None else out_dtype
    check_gemm_args(a, b, a_scale, b_scale, alpha, out_dtype, out, grad_rule=False)


_lib.define(_INTO_SCHEMA)
# Non-differentiable, like integer ops: outputs never require grad and no autograd kernel runs (a
# Python one would cost every CUDA call its trampoline). nvfp4_gemm.gemm rejects grad (check_no_grad).
for _name in ("gemm", "_gemm_into"):
    _lib.impl(_name, torch.library.fallthrough_kernel, "Autograd")
_lib.impl("gemm", _gemm_python, "CPU")
_lib.impl("_gemm_into", _gemm_into_python, "CPU")
if not _HAS_TORCH_OP:  # else the C++ kernels of torch_op.cpp, registered when _C loaded
    _lib.impl("gemm", _gemm_python, "CUDA")
    _lib.impl("_gemm_into", _gemm_into_python, "CUDA")
torch.library.register_fake("nvfp4::gemm", _gemm_fake, lib=_lib)
torch.library.register_fake("nvfp4::_gemm_into", _gemm_into_fake, lib=_lib)

# The overloads' C++ callables (what OpOverload.__call__ calls): one Python frame less per call.
_gemm_call = getattr(torch.ops.nvfp4.gemm.default, "_op", torch.ops.nvfp4.gemm.default)
_gemm_into_call = getattr(torch.ops.nvfp4._gemm_into.default, "_op", torch.ops.nvfp4._gemm_into.default)


# --- the C++ op's side of the contract (csrc/torch_op.cpp) -------------------------------------


def _gemm_native(a, b, a_scale, b_scale, alpha, out_dtype, out) -> torch.Tensor:
    """`gemm` through the C++ op: the API's own rule (no grad) here, the op's rules in the op, whose
    errors come from the Python path and get their own type back here (the dispatcher makes every
    exception of a C++ kernel a RuntimeError)."""
    check_no_grad(a, b, a_scale, b_scale, alpha, out)
    try:
        if out is None:
            if alpha is None and out_dtype is torch.float16:
                return _gemm_call(a, b, a_scale, b_scale)
            return _gemm_call(a, b, a_scale, b_scale, alpha, out_dtype)
        if alpha is None and out_dtype is out.dtype:
            _gemm_into_call(a, b, a_scale, b_scale, out)
        else:
            _gemm_into_call(a, b, a_scale, b_scale, out, alpha, out_dtype)
        return out
    except RuntimeError:
        original = _C.take_op_error()
        if original is None:
            raise
        raise original from None


def _take_handles(handles: list) -> list:
    """The tensors behind a C++ op's handles (capsules, or None), whose references this takes over."""
    take = torch._C._aoti.alloc_tensor_by_stealing_from_void_ptr
    return [None if h is None else take(h) for h in handles]


def _run_and_plan(a, b, a_scale, b_scale, alpha, out, out_dtype) -> tuple[torch.Tensor, Optional[tuple]]:
    """The whole Python path of one CUDA call of the op's rules - validate, plan, launch - and the plan a
    C++ op then serves the signature with: (kernel entry, split_k, workspace bytes, counters, m, n, k, l,
    *out shape), or None when there was no launch."""
    shape = check_gemm_args(a, b, a_scale, b_scale, alpha, out_dtype, out, grad_rule=False)
    if out is None:
        out = torch.empty(shape.out_shape, dtype=out_dtype, device=a.device)
    if shape.empty:
        _answer_empty(alpha, out)
        return out, None
    _launch_cuda(a, b, a_scale, b_scale, alpha, out, shape, None)
    plan = _plans[(_device_index(a.device), shape.format.name, shape.m, shape.n, shape.k, shape.l, out.dtype, None, None,
                   _alpha_per_column(alpha))]
    return out, (plan.kernel.entry_address, plan.split_k, plan.workspace_bytes, plan.counters,
                 shape.m, shape.n, shape.k, shape.l, *shape.out_shape)


@torch.no_grad()  # non-differentiable: the output never records the ops inside
def _op_first_call(handles: list) -> tuple[object, Optional[tuple]]:
    """The C++ op's first call of a signature (and any call whose addresses it cannot vouch for):
    the whole Python path on the tensors behind `handles` (capsules of a, b, a_scale, b_scale, alpha
    or None, out or None, then an empty tensor of out_dtype). Returns a handle of the output (for the
    caller to own) and the plan (`_run_and_plan`)."""
    a, b, a_scale, b_scale, alpha, out, witness = _take_handles(handles)
    out, plan = _run_and_plan(a, b, a_scale, b_scale, alpha, out, witness.dtype)
    return torch._C._aoti.unsafe_alloc_void_ptr_from_tensor(out), plan
