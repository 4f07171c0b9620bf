"""Load NVFP4 checkpoints made by NVIDIA ModelOpt or by llm-compressor (the compressed-tensors
format) into `NVFP4Linear` layers, without a 16-bit copy of the quantized weights.

    model = nvfp4_gemm.checkpoints.from_pretrained("path/to/checkpoint")       # needs transformers
    summary = nvfp4_gemm.load_quantized(model, "path/to/checkpoint")           # any nn.Module

Both formats store, per quantized linear layer, the packed e2m1 codes (N, K/2) uint8 (element 2j in
the low nibble of byte j, as ours), one e4m3 scale per 16 elements in the plain row-major layout
(N, K/16), and fp32 per-tensor scales. They differ in the direction of those scales:

| our buffer                | ModelOpt (`quant_algo` NVFP4)  | compressed-tensors (`nvfp4-pack-quantized`) |
|---------------------------|--------------------------------|---------------------------------------------|
| weight                    | weight                         | weight_packed                               |
| weight_scale (blocked)    | weight_scale (plain)           | weight_scale (plain)                        |
| weight_global_scale       | 1 / weight_scale_2             | weight_global_scale                         |
| input_global_scale        | 1 / input_scale                | input_global_scale                          |

ModelOpt's scales multiply (dequantized weight = e2m1 * weight_scale * weight_scale_2, with
weight_scale_2 = amax / 2688); compressed-tensors' and ours divide (e2m1 * weight_scale /
weight_global_scale). The reciprocal is one IEEE fp32 division, as compressed-tensors' own
ModelOpt converter and vLLM take it. The plain scales go to the blocked layout once, here.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Optional, Union

import torch
from torch import nn

from .formats import SCALE_BLOCK, to_blocked
from .nn import ACTIVATIONS, NVFP4Linear, ineligibility

__all__ = [
    "COMPRESSED_TENSORS",
    "CheckpointError",
    "CheckpointFormat",
    "LoadSummary",
    "MODELOPT",
    "from_pretrained",
    "load_quantized",
    "read_quantization_config",
]


class CheckpointError(ValueError):
    """A checkpoint this package cannot load; the message names the tensor or the setting."""


@dataclass(frozen=True)
class CheckpointFormat:
    """Where one checkpoint format keeps a quantized linear layer's tensors (suffixes after the
    module's name) and which way its per-tensor scales point."""

    name: str
    marker: str  # a tensor only this format's quantized layers carry: it names them
    packed: str
    scale: str
    weight_global: str
    input_global: str
    multiplies: bool  # True: the file's per-tensor scales multiply (ours = 1 / theirs)

    def tensor_names(self) -> tuple[str, ...]:
        return (self.packed, self.scale, self.weight_global, self.input_global)


MODELOPT = CheckpointFormat(
    "modelopt", marker="weight_scale_2", packed="weight", scale="weight_scale",
    weight_global="weight_scale_2", input_global="input_scale", multiplies=True,
)
COMPRESSED_TENSORS = CheckpointFormat(
    "compressed-tensors", marker="weight_packed", packed="weight_packed", scale="weight_scale",
    weight_global="weight_global_scale", input_global="input_global_scale", multiplies=False,
)
FORMATS = (MODELOPT, COMPRESSED_TENSORS)


@dataclass
class QuantizationConfig:
    """What the checkpoint's config says: its format and the modules it left 16-bit."""

    format: CheckpointFormat
    ignore: list[str] = field(default_factory=list)  # compressed-tensors `ignore` / ModelOpt `exclude_modules`

    def ignores(self, name: str) -> bool:
        for pattern in self.ignore:
            if self.format is COMPRESSED_TENSORS:
                # compressed-tensors: "re:<regex>" (re.match) or the exact module name
                if pattern.startswith("re:") and re.match(pattern[3:], name) or pattern == name:
                    return True
            elif fnmatch.fnmatchcase(name, pattern):  # ModelOpt: wildcard patterns
                return True
        return False


@dataclass
class LoadSummary:
    """What `load_quantized` did."""

    format: str
    quantized: dict[str, str] = field(default_factory=dict)  # module name -> activations
    sixteen_bit: list[str] = field(default_factory=list)  # nn.Linear modules loaded as they were
    loaded_bytes: int = 0  # bytes of the tensors taken from the checkpoint

    def __str__(self) -> str:
        modes = sorted(set(self.quantized.values()))
        lines = [
            f"loaded a {self.format} checkpoint ({self.loaded_bytes / 2**20:.1f} MiB): "
            f"{len(self.quantized)} NVFP4Linear (activations {', '.join(modes) or '-'}), "
            f"{len(self.sixteen_bit)} nn.Linear left 16-bit"
        ]
        if self.sixteen_bit:
            lines.append(f"  16-bit: {', '.join(self.sixteen_bit)}")
        return "\n".join(lines)


# --- reading the config ---------------------------------------------------------------------------


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise CheckpointError(message)


def _refuse_any(names: list[str], why: str) -> None:
    if names:
        more = f" ({len(names) - 1} more: {', '.join(names[1:4])}{', ...' if len(names) > 4 else ''})" if len(names) > 1 else ""
        raise CheckpointError(f"{names[0]}: {why}{more}")


def _check_compressed_tensors(config: Mapping) -> QuantizationConfig:
    top_format = config.get("format")
    groups = config.get("config_groups") or {}
    _require(bool(groups), "compressed-tensors quantization_config has no config_groups")
    for group_name, group in groups.items():
        where = f"quantization_config.config_groups.{group_name}"
        fmt = group.get("format") or top_format
        _require(
            fmt == "nvfp4-pack-quantized",
            f"{where}: format {fmt!r} is not supported (only 'nvfp4-pack-quantized': NVFP4 weights)",
        )
        for role in ("weights", "input_activations"):
            args = group.get(role)
            if args is None:
                _require(role != "weights", f"{where} quantizes no weights")
                continue
            got = (args.get("num_bits"), args.get("type"), args.get("group_size"))
            _require(
                got == (4, "float", SCALE_BLOCK),
                f"{where}.{role}: num_bits={got[0]}, type={got[1]!r}, group_size={got[2]} is not NVFP4 "
                f"(num_bits=4, type='float', group_size={SCALE_BLOCK})",
            )
            _require(args.get("symmetric", True), f"{where}.{role}: asymmetric FP4 is not supported")
        if group.get("output_activations") is not None:
            raise CheckpointError(f"{where}: quantized output activations are not supported")
    _require(not config.get("kv_cache_scheme"), "quantization_config.kv_cache_scheme: a quantized KV cache is not supported")
    return QuantizationConfig(COMPRESSED_TENSORS, list(config.get("ignore") or []))


def _check_modelopt(quantization: Mapping, where: str) -> QuantizationConfig:
    algo = quantization.get("quant_algo")
    _require(
        algo == "NVFP4",
        f"{where}: quant_algo {algo!r} is not supported (only 'NVFP4': NVFP4 weights and activations)",
    )
    group_size = quantization.get("group_size", SCALE_BLOCK)
    _require(group_size == SCALE_BLOCK, f"{where}: group_size {group_size} is not {SCALE_BLOCK}")
    kv = quantization.get("kv_cache_quant_algo")
    _require(kv is None, f"{where}: kv_cache_quant_algo {kv!r}: a quantized KV cache is not supported")
    exclude = quantization.get("exclude_modules", quantization.get("ignore")) or []
    return QuantizationConfig(MODELOPT, list(exclude))


def parse_quantization_config(config: Mapping) -> QuantizationConfig:
    """A `quantization_config` (from config.json) or a ModelOpt hf_quant_config.json -> the
    format and its 16-bit modules, or a CheckpointError saying what is not NVFP4."""
    if "quantization" in config and "producer" in config:  # hf_quant_config.json
        return _check_modelopt(config["quantization"], "hf_quant_config.json quantization")
    method = config.get("quant_method")
    if method == "compressed-tensors":
        return _check_compressed_tensors(config)
    if method == "modelopt":
        return _check_modelopt(config, "quantization_config")
    raise CheckpointError(
        f"quantization_config.quant_method {method!r} is not supported (only 'modelopt' and 'compressed-tensors')"
    )


def read_quantization_config(directory: Union[str, Path]) -> Optional[QuantizationConfig]:
    """The directory's hf_quant_config.json (ModelOpt), else config.json's quantization_config;
    None when neither exists."""
    directory = Path(directory)
    hf_quant = directory / "hf_quant_config.json"
    if hf_quant.is_file():
        return parse_quantization_config(json.loads(hf_quant.read_text()))
    config_json = directory / "config.json"
    if config_json.is_file():
        config = json.loads(config_json.read_text()).get("quantization_config")
        if config is not None:
            return parse_quantization_config(config)
    return None


# --- reading tensors ------------------------------------------------------------------------------


class _Tensors:
    """Tensors by name, from a state dict or from safetensors files, read one at a time."""

    def __init__(self, source: Union[str, Path, Mapping[str, torch.Tensor]], device: str) -> None:
        self._dict: Optional[Mapping[str, torch.Tensor]] = None
        self._files: dict[str, object] = {}  # tensor name -> open safetensors file
        self._paths: dict[str, str] = {}  # tensor name -> its file
        self._safe_open = None
        self.directory: Optional[Path] = None
        if isinstance(source, Mapping):
            self._dict = source
            return
        path = Path(source)
        try:
            from safetensors import safe_open
        except ImportError as error:  # pragma: no cover - depends on the environment
            raise ImportError(
                "loading checkpoint files needs safetensors: pip install 'nvfp4_gemm[checkpoints]' "
                "(or pass a state dict)"
            ) from error
        if path.is_dir():
            self.directory = path
            files = sorted(path.glob("*.safetensors"))
        elif path.is_file():
            files = [path]
        else:
            raise FileNotFoundError(f"checkpoint {str(path)!r} is neither a directory nor a file")
        if not files:
            raise CheckpointError(f"checkpoint directory {str(path)!r} holds no *.safetensors file")
        self._safe_open, self._device = safe_open, device
        for file in files:
            handle = safe_open(str(file), framework="pt", device=device)
            for name in handle.keys():
                if name in self._files:
                    raise CheckpointError(f"tensor {name!r} is in two files of {str(path)!r}")
                self._files[name] = handle
                self._paths[name] = str(file)

    def names(self) -> list[str]:
        return list(self._dict.keys() if self._dict is not None else self._files.keys())

    def get(self, name: str) -> torch.Tensor:
        """A tensor the model keeps as stored (it maps the file: its pages are read on first touch)."""
        if self._dict is not None:
            return self._dict[name]
        return self._files[name].get_tensor(name)

    def get_converted(self, name: str) -> torch.Tensor:
        """A tensor the loader converts into a new one (scales): read through a mapping of its own, which
        goes with the tensor, so its file pages leave the process once the conversion is done (through
        `get`, they would stay mapped beside their converted copy for as long as the model lives)."""
        if self._dict is not None:
            return self._dict[name]
        return self._safe_open(self._paths[name], framework="pt", device=self._device).get_tensor(name)


# --- checks of one layer's tensors ------------------------------------------------------------------


def _per_tensor_scale(tensor: torch.Tensor, name: str, multiplies: bool) -> torch.Tensor:
    """A checkpoint's per-tensor scale -> our fp32 0-d global scale (quantize direction)."""
    _require(tensor.numel() == 1, f"{name}: a per-tensor scale has one element, got shape {tuple(tensor.shape)}")
    _require(
        tensor.dtype in (torch.float32, torch.bfloat16, torch.float16),
        f"{name}: must be float32 (or a 16-bit float, widened exactly), got {tensor.dtype}",
    )
    value = tensor.reshape(()).to(torch.float32, copy=True)  # owns its bytes: the file mapping can go
    _require(bool(torch.isfinite(value) & (value > 0)), f"{name}: must be a positive finite number, got {float(value)}")
    if multiplies:
        value = torch.ones((), dtype=torch.float32) / value  # one IEEE fp32 division
        _require(bool(torch.isfinite(value)), f"{name}: its reciprocal {float(value)} overflows float32")
    return value


def _blocked_scales(scale: torch.Tensor, name: str, n: int, k: int) -> torch.Tensor:
    _require(
        scale.dtype in (torch.float8_e4m3fn, torch.uint8),
        f"{name}: must be float8_e4m3fn (e4m3 scales), got {scale.dtype}",
    )
    _require(scale.dim() == 2 and scale.shape[0] == n, f"{name}: must be (N={n}, K/16={k // SCALE_BLOCK}), got shape {tuple(scale.shape)}")
    if scale.shape[1] != k // SCALE_BLOCK:
        group = k / scale.shape[1] if scale.shape[1] else float("inf")
        raise CheckpointError(
            f"{name}: shape {tuple(scale.shape)} means one scale per {group:g} elements of K={k}; "
            f"NVFP4 takes one per {SCALE_BLOCK}"
        )
    raw = scale.contiguous().view(torch.uint8)
    _require(not bool((raw & 0x80).any()), f"{name}: holds negative scales (sign bit set); the kernels read unsigned e4m3")
    _require(not bool(((raw & 0x7F) == 0x7F).any()), f"{name}: holds NaN scales (byte 0x7F)")
    return to_blocked(raw).view(torch.float8_e4m3fn)


def _build_layer(
    module_name: str,
    linear: nn.Module,
    tensors: _Tensors,
    fmt: CheckpointFormat,
    activations: Optional[str],
    names: set[str],
) -> tuple[NVFP4Linear, list[str]]:
    """One NVFP4Linear from the checkpoint's tensors of `module_name`; returns it and the names used."""
    full = {suffix: f"{module_name}.{suffix}" for suffix in (*fmt.tensor_names(), "bias")}
    for suffix in (fmt.packed, fmt.scale, fmt.weight_global):
        _require(full[suffix] in names, f"{full[suffix]}: missing (the layer has {full[fmt.marker]})")
    if not isinstance(linear, nn.Linear) or type(linear) is not nn.Linear:
        raise CheckpointError(
            f"{full[fmt.packed]}: module {module_name!r} of the model is a {type(linear).__name__}, not an nn.Linear"
        )
    packed = tensors.get(full[fmt.packed])
    _require(packed.dtype == torch.uint8, f"{full[fmt.packed]}: must be uint8 (two e2m1 codes a byte), got {packed.dtype}")
    n, k = linear.out_features, linear.in_features
    _require(
        tuple(packed.shape) == (n, k // 2),
        f"{full[fmt.packed]}: shape {tuple(packed.shape)} does not fit the model's {module_name} "
        f"(in_features={k}, out_features={n}: expected ({n}, {k // 2}))",
    )
    dtype = linear.weight.dtype
    reason = ineligibility(k, n, dtype)
    _require(reason is None, f"{full[fmt.packed]}: the kernels cannot take this layer: {reason}")
    scale = _blocked_scales(tensors.get_converted(full[fmt.scale]), full[fmt.scale], n, k)
    weight_global = _per_tensor_scale(tensors.get_converted(full[fmt.weight_global]), full[fmt.weight_global], fmt.multiplies)
    has_input_scale = full[fmt.input_global] in names
    mode = activations if activations is not None else ("nvfp4" if has_input_scale else "bf16")
    used = [full[fmt.packed], full[fmt.scale], full[fmt.weight_global]]

    has_bias = full["bias"] in names
    _require(has_bias == (linear.bias is not None), f"{full['bias']}: the model's {module_name} has bias={linear.bias is not None}, the checkpoint {'has' if has_bias else 'has not'}")
    with torch.device("meta"):  # no buffer allocated twice: the checkpoint's tensors become them
        layer = NVFP4Linear(k, n, has_bias, activations=mode, dtype=dtype)
    layer.weight = packed.contiguous()
    layer.weight_scale = scale
    layer.weight_global_scale = weight_global
    if has_input_scale:
        used.append(full[fmt.input_global])
        input_global = _per_tensor_scale(tensors.get_converted(full[fmt.input_global]), full[fmt.input_global], fmt.multiplies)
        if mode == "nvfp4":
            layer.input_global_scale = input_global
    if has_bias:
        used.append(full["bias"])
        bias = tensors.get(full["bias"])
        _require(tuple(bias.shape) == (n,), f"{full['bias']}: must be ({n},), got {tuple(bias.shape)}")
        layer.bias = nn.Parameter(bias.to(dtype), requires_grad=False)
    return layer, used


# --- the loader -------------------------------------------------------------------------------------


def _detect_format(names: list[str], config: Optional[QuantizationConfig]) -> CheckpointFormat:
    found = [fmt for fmt in FORMATS if any(name.endswith("." + fmt.marker) for name in names)]
    if config is not None:
        others = [fmt.name for fmt in found if fmt is not config.format]
        if others:
            raise CheckpointError(f"the config says {config.format.name} but the tensors hold {others[0]} layers")
        return config.format
    _require(len(found) < 2, "the tensors mix ModelOpt (weight_scale_2) and compressed-tensors (weight_packed) layers")
    _require(
        len(found) == 1,
        "no NVFP4 layer found: neither '<module>.weight_scale_2' (ModelOpt) nor '<module>.weight_packed' "
        "(compressed-tensors) is among the tensors",
    )
    return found[0]


def load_quantized(
    model: nn.Module,
    checkpoint: Union[str, Path, Mapping[str, torch.Tensor]],
    *,
    activations: Optional[str] = None,
    config: Optional[Mapping] = None,
    device: str = "cpu",
) -> LoadSummary:
    """Load a ModelOpt NVFP4 or compressed-tensors `nvfp4-pack-quantized` checkpoint into `model`.

    Every nn.Linear the checkpoint holds quantized becomes an `NVFP4Linear` whose buffers are the
    checkpoint's tensors (the plain scales converted to the blocked layout once); everything else
    (embeddings, norms, the layers the checkpoint left 16-bit) is loaded with
    `load_state_dict(assign=True)`, so a model built with its parameters on the meta device costs
    no memory before its tensors arrive.

    checkpoint: a directory of *.safetensors shards (with config.json / hf_quant_config.json, read
    to check the format), one .safetensors file, or a state dict (the format then follows from the
    tensors' names, or from `config`: a quantization_config mapping).
    activations: "nvfp4" (W4A4), "bf16" (weight-only W4A16) or None: W4A4 for the layers that
    carry a static input scale, weight-only for the others.
    device: where safetensors puts the tensors.

    Anything it cannot take (another format or group size, a missing or misshapen tensor, a layer
    the kernels reject, a tensor the model has no place for, a parameter left unloaded) is a
    CheckpointError naming the tensor or setting; the model is changed only when all checks pass.
    """
    if activations is not None and activations not in ACTIVATIONS:
        raise ValueError(f"activations must be None or one of {ACTIVATIONS}, got {activations!r}")
    tensors = _Tensors(checkpoint, device)
    if config is not None:
        quant_config = parse_quantization_config(config)
    elif tensors.directory is not None:
        quant_config = read_quantization_config(tensors.directory)
    else:
        quant_config = None
    names = tensors.names()
    name_set = set(names)
    fmt = _detect_format(names, quant_config)
    modules = dict(model.named_modules())

    layers: dict[str, NVFP4Linear] = {}
    used: set[str] = set()
    suffix = "." + fmt.marker
    for marker in sorted(n for n in names if n.endswith(suffix)):
        module_name = marker[: -len(suffix)]
        _require(module_name in modules, f"{marker}: the model has no module {module_name!r}")
        if quant_config is not None and quant_config.ignores(module_name):
            raise CheckpointError(f"{marker}: the config's ignore/exclude list names {module_name!r}, but it is quantized")
        layer, taken = _build_layer(module_name, modules[module_name], tensors, fmt, activations, name_set)
        layers[module_name] = layer
        used.update(taken)
    orphans = [
        n for n in names
        if n not in used and n.rpartition(".")[2] in fmt.tensor_names() and n.rpartition(".")[2] != "weight"
    ]
    _refuse_any(orphans, f"a quantization tensor without the layer's {fmt.marker}")

    rest = {n: tensors.get(n) for n in names if n not in used}
    packed_elsewhere = [n for n, t in rest.items() if t.dtype == torch.uint8 and n.endswith(".weight")]
    _refuse_any(packed_elsewhere, f"a uint8 (packed) weight of a layer without {fmt.marker}")
    expected = set(model.state_dict().keys())
    quantized_prefixes = tuple(name + "." for name in layers)
    _refuse_any(
        sorted(n for n in rest if n not in expected or n.startswith(quantized_prefixes)),
        "the model has no place for this tensor",
    )

    state = model.state_dict(keep_vars=True)
    supplied = {id(state[n]) for n in rest}  # a tied tensor (one object, two names) comes with its twin
    _refuse_any(
        sorted(n for n in expected - set(rest) if not n.startswith(quantized_prefixes) and id(state[n]) not in supplied),
        "the model's tensor is not in the checkpoint",
    )
    _refuse_any(
        [n for n, b in model.named_buffers() if b.is_meta and n not in expected],
        "a buffer on the meta device that no checkpoint holds (build the model with real buffers)",
    )

    # all checks passed: change the model (the 16-bit tensors first: NVFP4Linear's own state-dict
    # loading would drop a static input scale that the partial state dict does not hold)
    model.load_state_dict(rest, strict=False, assign=True)
    for module_name, layer in layers.items():
        parent, _, child = module_name.rpartition(".")
        setattr(model.get_submodule(parent), child, layer)
    tie = getattr(model, "tie_weights", None)
    if callable(tie) and getattr(getattr(model, "config", None), "tie_word_embeddings", False):
        tie()  # transformers: assign=True replaced the embedding; the tied head takes the new one
    _refuse_any(
        [n for n, t in (*model.named_parameters(), *model.named_buffers()) if t.is_meta],
        "not in the checkpoint, still on the meta device",
    )

    summary = LoadSummary(format=fmt.name)
    summary.quantized = {name: layer.activations for name, layer in layers.items()}
    summary.sixteen_bit = [n for n, m in model.named_modules() if type(m) is nn.Linear]
    summary.loaded_bytes = sum(t.numel() * t.element_size() for t in rest.values()) + sum(
        sum(b.numel() * b.element_size() for b in (layer.weight, layer.weight_scale)) for layer in layers.values()
    )
    return summary


# --- a transformers model from a checkpoint directory ------------------------------------------------


@contextlib.contextmanager
def _parameters_on_meta() -> Iterator[None]:
    """Modules built inside get their parameters on the meta device (buffers stay real: rotary
    tables and the like are computed at construction and are not in checkpoints)."""
    register = nn.Module.register_parameter

    def register_on_meta(module: nn.Module, name: str, param: Optional[nn.Parameter]) -> None:
        if param is not None and not param.is_meta:
            param = nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)
        register(module, name, param)

    nn.Module.register_parameter = register_on_meta
    try:
        yield
    finally:
        nn.Module.register_parameter = register


def from_pretrained(
    directory: Union[str, Path],
    *,
    activations: Optional[str] = None,
    dtype: torch.dtype = torch.bfloat16,
    device: str = "cpu",
) -> nn.Module:
    """A transformers model (AutoModelForCausalLM) from a ModelOpt / compressed-tensors NVFP4
    checkpoint directory, its quantized layers as NVFP4Linear, built without a 16-bit copy of them.
    Needs `transformers` (pip install 'nvfp4_gemm[checkpoints]'). Returns the model in eval mode;
    `load_quantized` is the same without transformers."""
    try:
        from transformers import AutoConfig, AutoModelForCausalLM
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("from_pretrained needs transformers: pip install 'nvfp4_gemm[checkpoints]'") from error
    config = AutoConfig.from_pretrained(str(directory))
    if hasattr(config, "quantization_config"):
        # ours to apply: transformers would otherwise look for the format's own quantizer
        del config.quantization_config
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # the model's dtype, whichever transformers (its keyword changed name)
    try:
        with _parameters_on_meta():
            model = AutoModelForCausalLM.from_config(config)
    finally:
        torch.set_default_dtype(previous)
    load_quantized(model, directory, activations=activations, device=device)
    return model.eval()
