"""The model path: `NVFP4Linear` (an `nn.Linear` with NVFP4 or MXFP4 weights), `calibrate` (static input
scales) and `quantize_model` (swap a model's eligible `nn.Linear`s in place).

    summary = nvfp4_gemm.quantize_model(model)   # swaps the layers in place, returns what it did
    with nvfp4_gemm.nn.calibrate(model):         # optional: static input global scales
        for batch in samples:
            model(batch)
"""

from __future__ import annotations

import contextlib
import fnmatch
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Optional

import torch
from torch import nn

from ._checks import OUT_DTYPE_NAMES
from .configs import shape_rule_violation
from .dtypes import GEMM_FORMATS, operand_format
from .formats import (
    WEIGHT_ONLY_A_DTYPES,
    blocked_scale_numel,
    finite_amax,
    from_blocked,
    gemm_alpha,
    global_scale_from_amax,
    to_blocked,
)
from .ops import _gemm_call
from .quantization import _quantize_call, quantize

__all__ = [
    "ACTIVATIONS", "WEIGHT_FORMATS", "NVFP4Linear", "QuantizeSummary", "calibrate", "fuse_linears", "quantize_model", "ineligibility",
]

# The weights' formats (the GEMM's b operand in dtypes.GEMM_FORMATS).
WEIGHT_FORMATS = tuple(dict.fromkeys(f.b.name for f in GEMM_FORMATS))
# "nvfp4", "mxfp4", "mxfp8": activations quantized to that format on every call (the GEMM of
# dtypes.GEMM_FORMATS that pairs it with the weights: NVFP4 x NVFP4, MXFP4 x MXFP4, MXFP8 x MXFP4 = W4A8);
# "bf16": activations used as given, 16-bit (weight-only, W4A16).
WEIGHT_ONLY = "bf16"
ACTIVATIONS = (*dict.fromkeys(f.a.name for f in GEMM_FORMATS if not f.weight_only), WEIGHT_ONLY)

# (quantize, gemm) as a forward calls them: in eager calls the ops' C++ callables (what OpOverload.__call__
# calls: one Python frame less each), under torch.compile the ops themselves (Dynamo traces those).
_EAGER_OPS = (_quantize_call, _gemm_call)
_TRACED_OPS = (torch.ops.nvfp4.quantize.default, torch.ops.nvfp4.gemm.default)


def _resolve_formats(activations: Optional[str], format: str) -> str:
    """The activations of a layer with `format` weights (None: the weights' own format); checks the pair."""
    if format not in WEIGHT_FORMATS:
        raise ValueError(f"format (the weights') must be one of {WEIGHT_FORMATS}, got {format!r}")
    if activations is None:
        return format
    if activations not in ACTIVATIONS:
        raise ValueError(f"activations must be one of {ACTIVATIONS}, got {activations!r}")
    pairs = [f.a.name for f in GEMM_FORMATS if f.b.name == format]
    if activations != WEIGHT_ONLY and activations not in pairs:
        raise ValueError(
            f"activations={activations!r} do not pair with format={format!r} weights: the GEMM formats pair "
            f"{', '.join(f'{f.a.name} x {f.b.name}' for f in GEMM_FORMATS)}; {format} weights take activations "
            f"{', '.join(repr(a) for a in (*pairs, WEIGHT_ONLY))}"
        )
    return activations


def ineligibility(in_features: int, out_features: int, dtype: torch.dtype) -> Optional[str]:
    """Why the kernels cannot serve a linear layer of this shape and dtype (None if they can). The
    output has the input's dtype; the weight's dtype stands for it here."""
    if dtype not in OUT_DTYPE_NAMES:
        return f"dtype {dtype} is not float16, bfloat16 or float32"
    violation = shape_rule_violation(1, out_features, in_features, 1, OUT_DTYPE_NAMES[dtype])
    if violation is None:
        return None
    return (
        violation.replace("K (= 2 * a.shape[-1])", "in_features (K)").replace("N must", "out_features (N) must")
    )


class NVFP4Linear(nn.Module):
    """`y = x @ W.T + b` with W stored as NVFP4 (format="nvfp4": packed e2m1 codes (out_features,
    in_features/2), blocked e4m3 scales and an fp32 global scale) or MXFP4 (format="mxfp4": packed e2m1,
    blocked ue8m0 scales, global scale 1), all buffers (they travel with `state_dict`).

    activations="nvfp4": x is quantized on every call (its global scale static after `calibrate`,
    or computed per call on the device) and the NVFP4 x NVFP4 GEMM runs with
    alpha = 1 / (gs_x * gs_w). activations="mxfp4" or "mxfp8" (MXFP4 weights): x is quantized to MX on
    every call (no global scale; on CUDA by the MX quantize kernel) and the MXFP4 x MXFP4 or MXFP8 x MXFP4
    (W4A8) GEMM runs where a kernel family takes that format (families.Family.formats; the CPU reference
    always; elsewhere the GEMM's NotImplementedError, before any launch). activations="bf16":
    weight-only, `x @ dequant(W).T` with x as given (16-bit), one rounding.
    The default activations are the weights' format. The output has x's dtype; the bias is added to it
    in that dtype. Inference only: nothing here has a backward, and an input that requires grad is an error.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        *,
        activations: Optional[str] = None,
        device: Optional[torch.device | str] = None,
        dtype: torch.dtype = torch.bfloat16,
        format: str = "nvfp4",
    ) -> None:
        super().__init__()
        activations = _resolve_formats(activations, format)
        reason = ineligibility(in_features, out_features, dtype)
        if reason is not None:
            raise ValueError(f"NVFP4Linear({in_features}, {out_features}, dtype={dtype}): {reason}")
        self.in_features = in_features
        self.out_features = out_features
        self.dtype = dtype  # what it was built for (the shape rules, the bias); outputs follow x
        self.activations = activations
        self.format = format  # the weights'
        block = operand_format(format).block
        self.register_buffer("weight", torch.zeros(out_features, in_features // 2, dtype=torch.uint8, device=device))
        self.register_buffer(
            "weight_scale",
            torch.zeros(
                blocked_scale_numel(out_features, in_features, fmt=block), dtype=getattr(torch, block.scale_dtype),
                device=device,
            ),
        )
        self.register_buffer("weight_global_scale", torch.ones((), dtype=torch.float32, device=device))
        # None: dynamic (computed per call on the device); a float32 0-d tensor: static
        self.register_buffer("input_global_scale", None)
        # inference only (the GEMM has no backward): the bias takes no gradient either
        self.bias = None
        if bias:
            self.bias = nn.Parameter(torch.zeros(out_features, dtype=dtype, device=device), requires_grad=False)
        self._calibration_amax: Optional[torch.Tensor] = None  # set inside `calibrate`
        self._calibration_calls = 0
        # weight-only alpha = 1 / weight_global_scale, remembered per (tensor, version) of that buffer: a
        # forward otherwise launches three small kernels for it (gemm_alpha)
        self._weight_only_alpha: Optional[tuple] = None

    @classmethod
    def from_linear(
        cls, linear: nn.Linear, activations: Optional[str] = None, *, format: str = "nvfp4"
    ) -> "NVFP4Linear":
        """Quantize an `nn.Linear`'s weight (NVFP4: dynamic global scale 2688 / max|W|; MXFP4: the OCP MX
        recipe) into a new layer on the weight's device; the bias is copied as is. W4A8:
        `from_linear(linear, "mxfp8", format="mxfp4")`."""
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"from_linear takes an nn.Linear, got {type(linear).__name__}")
        weight = linear.weight.detach()
        layer = cls(
            linear.in_features, linear.out_features, linear.bias is not None,
            activations=activations, device=weight.device, dtype=weight.dtype, format=format,
        )
        quantized = quantize(weight.contiguous(), format=format)
        with torch.no_grad():
            layer.weight.copy_(quantized.data)
            layer.weight_scale.copy_(quantized.scale)
            layer.weight_global_scale.copy_(quantized.global_scale)
            if linear.bias is not None:
                layer.bias.copy_(linear.bias.detach())
        return layer

    # The buffers that hold the format. A module-wide dtype cast (`model.half()`, `model.to(torch.bfloat16)`,
    # `.type(...)`) leaves them as they are, as nn.Module leaves integer tensors, and reaches the bias only;
    # device moves reach them all. Cast, the e4m3 / ue8m0 scales and the fp32 global scales would take the
    # model's dtype, which the GEMM refuses (and fp16 or bf16 cannot hold every fp32 global scale).
    _FORMAT_BUFFERS = ("weight", "weight_scale", "weight_global_scale", "input_global_scale")

    def _apply(self, fn, recurse=True):
        kept = {id(t) for name in self._FORMAT_BUFFERS if (t := self._buffers.get(name)) is not None}

        def without_casting_the_format(t: torch.Tensor) -> torch.Tensor:
            applied = fn(t)
            if id(t) in kept and applied.dtype != t.dtype:
                return t.to(device=applied.device)
            return applied

        return super()._apply(without_casting_the_format, recurse)

    def extra_repr(self) -> str:
        mode = "static" if self.input_global_scale is not None else "dynamic"
        scale = f", input scale {mode}" if self.activations == "nvfp4" else ""
        weights = f", format={self.format!r}" if self.format != "nvfp4" else ""
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
            f"activations={self.activations!r}{scale}{weights}"
        )

    # The activation mode travels with the state dict, so loading into a fresh module restores it. The
    # weights' format is in it too (a state without one is NVFP4): their scale dtype must be this layer's.
    def get_extra_state(self) -> dict:
        return {"activations": self.activations, "format": self.format}

    def set_extra_state(self, state: dict) -> None:
        self.activations = _resolve_formats(state["activations"], state.get("format", "nvfp4"))

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        extra = state_dict.get(prefix + "_extra_state")
        stored = extra.get("format", "nvfp4") if isinstance(extra, dict) else self.format
        if stored != self.format:
            raise ValueError(
                f"{prefix or 'the layer'}: the state holds format={stored!r} weights, this layer format="
                f"{self.format!r} ones (their scales differ in dtype and size): build it with format={stored!r}"
            )
        # The static input scale exists only in calibrated checkpoints: take it, or drop ours.
        key = prefix + "input_global_scale"
        if key in state_dict and self.input_global_scale is None:
            self.input_global_scale = torch.empty((), dtype=torch.float32, device=self.weight.device)
        elif key not in state_dict:
            self.input_global_scale = None
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)
        self._weight_only_alpha = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.in_features:
            raise ValueError(f"x.shape[-1] must be in_features={self.in_features}, got shape {tuple(x.shape)}")
        if x.requires_grad and torch.is_grad_enabled():
            raise ValueError(
                "x requires grad, but NVFP4Linear is inference only (no backward): run the model under "
                "torch.no_grad() / torch.inference_mode(), or pass x.detach()"
            )
        flat = x.dim() == 2  # (M, K) is the GEMM's shape already: no views to make
        rows = (x if flat else x.reshape(-1, self.in_features)).contiguous()
        if rows.shape[0] == 0:
            out = rows.new_empty((0, self.out_features))
        elif self.activations == "nvfp4":
            out = self._forward_nvfp4(rows)
        elif self.activations == WEIGHT_ONLY:
            out = self._forward_weight_only(rows)
        else:
            out = self._forward_mx(rows)
        bias = self._parameters.get("bias")  # not through nn.Module.__getattr__ (~0.5 us a lookup)
        if bias is not None:
            out = out + bias.to(out.dtype)
        return out if flat else out.reshape(*x.shape[:-1], self.out_features)

    def _forward_nvfp4(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype not in OUT_DTYPE_NAMES:
            raise TypeError(f"x must be float16, bfloat16 or float32 (the output dtype follows it), got {x.dtype}")
        buffers = self._buffers  # not through nn.Module.__getattr__ (~0.5 us a lookup)
        if self._calibration_amax is not None:
            self._calibration_amax = torch.maximum(self._calibration_amax, finite_amax(x))
            self._calibration_calls += 1
            input_scale = None
        else:
            input_scale = buffers["input_global_scale"]
        weight_global_scale = buffers["weight_global_scale"]
        quantize_op, gemm_op = _TRACED_OPS if torch.compiler.is_compiling() else _EAGER_OPS
        if weight_global_scale.numel() == 1:
            data, scale, _, alpha = quantize_op(x, input_scale, weight_global_scale)
        else:  # fused partitions (fuse_linears): one alpha per output column
            data, scale, input_global_scale, _ = quantize_op(x, input_scale, None)
            alpha = gemm_alpha(input_global_scale, weight_global_scale)
        return gemm_op(data, buffers["weight"], scale, buffers["weight_scale"], alpha, x.dtype)

    def _forward_mx(self, x: torch.Tensor) -> torch.Tensor:
        """MX activations (no global scale) times the MXFP4 weights: alpha is 1."""
        if x.dtype not in OUT_DTYPE_NAMES:
            raise TypeError(f"x must be float16, bfloat16 or float32 (the output dtype follows it), got {x.dtype}")
        buffers = self._buffers
        quantize_op, gemm_op = _TRACED_OPS if torch.compiler.is_compiling() else _EAGER_OPS
        data, scale, _, _ = quantize_op(x, None, None, self.activations)
        return gemm_op(data, buffers["weight"], scale, buffers["weight_scale"], None, x.dtype)

    def _forward_weight_only(self, x: torch.Tensor, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
        """x @ dequant(W).T with x as given, in x's dtype or `out_dtype` (a row shard's float32 partial)."""
        if x.dtype not in WEIGHT_ONLY_A_DTYPES:
            raise TypeError(f"activations='bf16' (weight-only) takes float16 or bfloat16 x, got {x.dtype}")
        buffers = self._buffers  # not through nn.Module.__getattr__ (~0.5 us a lookup)
        scale = buffers["weight_global_scale"]
        if torch.compiler.is_compiling():
            gemm_op, alpha = _TRACED_OPS[1], gemm_alpha(scale)
        else:
            gemm_op, alpha = _EAGER_OPS[1], self._weight_only_scale(scale)
        # x as given (a_scale None): the CPU reference, the Hopper and Blackwell sm100 kernels (the gemm op's
        # formats); elsewhere a clear error naming activations='nvfp4'
        return gemm_op(x, buffers["weight"], None, buffers["weight_scale"], alpha,
                       x.dtype if out_dtype is None else out_dtype)

    def _weight_only_scale(self, scale: torch.Tensor) -> torch.Tensor:
        """1 / scale, remembered while the buffer is the same tensor at the same version (an inference
        tensor has no version counter: the tensor alone; state-dict loads reset the memo)."""
        version = None if scale.is_inference() else scale._version
        memo = self._weight_only_alpha
        if memo is None or memo[0] is not scale or memo[1] != version:
            memo = self._weight_only_alpha = (scale, version, gemm_alpha(scale))
        return memo[2]


def fuse_linears(layers: "list[NVFP4Linear]") -> NVFP4Linear:
    """One NVFP4Linear that computes `layers` (same input; e.g. q/k/v or gate/up) side by side, their
    outputs concatenated along the last dim, each partition keeping its own weight global scale: the
    GEMM takes alpha per output column (docs/formats.md), so the fused outputs are the separate layers'
    bit for bit on the CPU and within the earned FP32 tolerance on a GPU (where the wider N may run
    another config). Serving stacks that fuse with one alpha take the largest amax's global scale for
    every partition instead, which costs the smaller partitions precision (README, "Fused projections").
    The per-column alpha runs on the sm90 family and the CPU."""
    layers = list(layers)
    if not layers or not all(isinstance(layer, NVFP4Linear) for layer in layers):
        raise TypeError("fuse_linears takes a non-empty list of NVFP4Linear layers")
    first = layers[0]
    for name in ("in_features", "activations", "dtype", "format"):
        values = {getattr(layer, name) for layer in layers}
        if len(values) > 1:
            raise ValueError(f"fuse_linears: the layers must share {name}, got {sorted(map(str, values))}")
    devices = {layer.weight.device for layer in layers}
    if len(devices) > 1:
        raise ValueError(f"fuse_linears: the layers must be on one device, got {sorted(map(str, devices))}")
    statics = [layer.input_global_scale for layer in layers]
    if any(s is None for s in statics) != all(s is None for s in statics) or (
        statics[0] is not None and not all(torch.equal(s, statics[0]) for s in statics)
    ):
        raise ValueError(
            "fuse_linears: the layers quantize their common input differently (static input global scales "
            "differ, or some are dynamic): calibrate the fused layer instead, or fuse before calibrating"
        )
    rows = [layer.out_features for layer in layers]
    fused = NVFP4Linear(
        first.in_features, sum(rows), any(layer.bias is not None for layer in layers),
        activations=first.activations, device=first.weight.device, dtype=first.dtype, format=first.format,
    )
    k = first.in_features
    block = operand_format(first.format).block
    with torch.no_grad():
        fused.weight.copy_(torch.cat([layer.weight for layer in layers]))
        plain = torch.cat([from_blocked(layer.weight_scale, r, k, fmt=block) for layer, r in zip(layers, rows)])
        fused.weight_scale.copy_(to_blocked(plain, fmt=block))
        scales = torch.cat([layer.weight_global_scale.reshape(1).expand(r) for layer, r in zip(layers, rows)])
        fused.weight_global_scale = scales.contiguous() if not bool((scales == scales[0]).all()) else scales[0].clone()
        fused.input_global_scale = None if statics[0] is None else statics[0].clone()
        if fused.bias is not None:
            fused.bias.copy_(torch.cat([
                layer.bias if layer.bias is not None else torch.zeros(r, dtype=first.dtype, device=first.weight.device)
                for layer, r in zip(layers, rows)
            ]))
    return fused


def _nvfp4_layers(module: nn.Module) -> list[NVFP4Linear]:
    return [m for m in module.modules() if isinstance(m, NVFP4Linear) and m.activations == "nvfp4"]


@contextlib.contextmanager
def calibrate(module: nn.Module) -> Iterator[list[NVFP4Linear]]:
    """Record max |x| (finite values) of every input that the NVFP4Linear layers with
    activations="nvfp4" in `module` see inside the block (forward runs as usual, with dynamic
    scales), then fix each layer's static input global scale to 2688 / that max on exit. The maxima
    stay on the device; nothing synchronizes. A layer that saw no input is an error that names it;
    on an error the layers keep their previous scales."""
    names = {id(m): name or type(m).__name__ for name, m in module.named_modules()}
    layers = _nvfp4_layers(module)
    if not layers:
        raise ValueError("calibrate: the module holds no NVFP4Linear with activations='nvfp4'")
    for layer in layers:
        layer._calibration_amax = torch.zeros((), dtype=torch.float32, device=layer.weight.device)
        layer._calibration_calls = 0
    try:
        yield layers
        unused = [names[id(layer)] for layer in layers if layer._calibration_calls == 0]
        if unused:
            raise RuntimeError(f"calibrate: these layers saw no input inside the block: {', '.join(unused)}")
        for layer in layers:
            layer.input_global_scale = global_scale_from_amax(layer._calibration_amax)
    finally:
        for layer in layers:
            layer._calibration_amax = None


@dataclass
class QuantizeSummary:
    """What `quantize_model` did: qualified names of the layers it swapped, and of those it left."""

    activations: str
    format: str = "nvfp4"  # the weights'
    quantized: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # name -> why the kernels cannot take it
    excluded: list[str] = field(default_factory=list)  # by include/exclude

    def __str__(self) -> str:
        lines = [
            f"quantized {len(self.quantized)} nn.Linear to NVFP4Linear (format={self.format!r}, "
            f"activations={self.activations!r})"
        ]
        lines += [f"  skipped {name}: {reason}" for name, reason in self.skipped.items()]
        if self.excluded:
            lines.append(f"  excluded: {', '.join(self.excluded)}")
        return "\n".join(lines)


def _matches(name: str, patterns: Iterable[str]) -> bool:
    """fnmatch on the qualified name or on its last component ('lm_head' matches 'model.lm_head')."""
    last = name.rsplit(".", 1)[-1]
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(last, p) for p in patterns)


def quantize_model(
    model: nn.Module,
    *,
    activations: Optional[str] = None,
    include: Optional[Iterable[str]] = None,
    exclude: Iterable[str] = ("lm_head",),
    format: str = "nvfp4",
    progress: Optional[Callable[[str], None]] = None,
) -> QuantizeSummary:
    """Replace every eligible `nn.Linear` in `model` with `NVFP4Linear.from_linear` in place.

    format: the weights' ("nvfp4" or "mxfp4"); activations: see NVFP4Linear (None: the weights' format;
    W4A8 is format="mxfp4", activations="mxfp8").

    include: fnmatch patterns of qualified module names (or their last component) to consider;
    None: all. exclude: patterns to leave alone (default: the output head `lm_head`, whose accuracy
    matters most). Layers the kernels cannot take (in_features not a multiple of 32, out_features not
    a multiple of 8 for 16-bit outputs, other dtypes, meta tensors, nn.Linear subclasses) are skipped
    and named with the reason. A module reachable under several names is replaced once, everywhere.
    progress: called with one line per layer quantized (e.g. `progress=print`: on the CPU an 8B model's
    ~7 G weights take minutes).
    """
    activations = _resolve_formats(activations, format)
    include = None if include is None else tuple(include)
    exclude = tuple(exclude)
    summary = QuantizeSummary(activations=activations, format=format)
    eligible: list[tuple[str, nn.Linear]] = []
    for name, module in model.named_modules(remove_duplicate=False):
        if not isinstance(module, nn.Linear):
            continue
        if (include is not None and not _matches(name, include)) or _matches(name, exclude):
            summary.excluded.append(name)
            continue
        reason = _skip_reason(name, module)
        if reason is not None:
            summary.skipped[name] = reason
            continue
        eligible.append((name, module))
    layers = len({id(module) for _, module in eligible})
    replacements: dict[int, nn.Module] = {}
    for name, module in eligible:
        if id(module) not in replacements:
            replacements[id(module)] = NVFP4Linear.from_linear(module, activations, format=format)
            if progress is not None:
                progress(f"quantize_model: {len(replacements)}/{layers} {name} "
                         f"({module.out_features} x {module.in_features})")
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name), child, replacements[id(module)])
        summary.quantized.append(name)
    return summary


def _skip_reason(name: str, linear: nn.Linear) -> Optional[str]:
    if type(linear) is not nn.Linear:
        return f"{type(linear).__name__} is a subclass of nn.Linear (its forward may differ)"
    if name == "":
        return "the model itself is an nn.Linear: use NVFP4Linear.from_linear"
    if linear.weight.is_meta:
        return "its weight is on the meta device (not loaded)"
    return ineligibility(linear.in_features, linear.out_features, linear.weight.dtype)
