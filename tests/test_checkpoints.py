"""Loading NVFP4 checkpoints made by the real tools (tests/fixtures/, written by
scripts/make_checkpoint_fixtures.py with llmcompressor 0.14.0.1 / compressed-tensors 0.19.0 and
nvidia-modelopt 0.47.0), each layer against the dequantize-then-matmul reference of the same file,
and every way a checkpoint can be refused."""

import json
import math
from pathlib import Path

import pytest
import torch
from torch import nn

from nvfp4_gemm import formats
from nvfp4_gemm.checkpoints import CheckpointError, load_quantized
from nvfp4_gemm.nn import NVFP4Linear

safetensors = pytest.importorskip("safetensors", reason="checkpoint files need safetensors (the [checkpoints] extra)")
from safetensors.torch import load_file, save_file  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
# name -> (tool's per-tensor scales multiply?, has static input scales)
CHECKPOINTS = {
    "llama_tiny_nvfp4_modelopt": dict(names=("weight", "weight_scale", "weight_scale_2", "input_scale"), multiplies=True),
    "llama_tiny_nvfp4_llmcompressor": dict(
        names=("weight_packed", "weight_scale", "weight_global_scale", "input_global_scale"), multiplies=False
    ),
    "llama_tiny_nvfp4a16_llmcompressor": dict(
        names=("weight_packed", "weight_scale", "weight_global_scale", "input_global_scale"), multiplies=False
    ),
}
E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], dtype=torch.float64)


def fixture_tensors(name):
    tensors = {}
    for file in sorted((FIXTURES / name).glob("*.safetensors")):
        tensors.update(load_file(file))
    return tensors


def quantization_config(name):
    return json.loads((FIXTURES / name / "config.json").read_text())["quantization_config"]


def quantized_layers(tensors, names):
    marker = "." + names[2]
    return sorted(n[: -len(marker)] for n in tensors if n.endswith(marker))


def skeleton(tensors, layers, names, dtype=torch.bfloat16):
    """A module tree holding an nn.Linear (on the meta device) at each quantized layer's name."""
    root = nn.Module()
    for layer in layers:
        n, half_k = tensors[f"{layer}.{names[0]}"].shape
        parent = root
        parts = layer.split(".")
        for part in parts[:-1]:
            if not hasattr(parent, part):
                parent.add_module(part, nn.Module())
            parent = getattr(parent, part)
        parent.add_module(parts[-1], nn.Linear(2 * half_k, n, bias=False, device="meta", dtype=dtype))
    return root


def file_weight(tensors, layer, names, multiplies):
    """The file's weight, dequantized from its own tensors as the tools document it, in float64:
    e2m1 (element 2j = low nibble of byte j) * weight_scale (plain, one per 16) * the per-tensor
    factor (ModelOpt: weight_scale_2; compressed-tensors: 1 / weight_global_scale)."""
    packed = tensors[f"{layer}.{names[0]}"]
    codes = torch.stack((packed & 0xF, packed >> 4), dim=-1).reshape(packed.shape[0], -1)
    scales = tensors[f"{layer}.{names[1]}"].to(torch.float64).repeat_interleave(16, dim=1)
    per_tensor = tensors[f"{layer}.{names[2]}"].double().reshape(())
    return E2M1[codes.long()] * scales * (per_tensor if multiplies else 1.0 / per_tensor), per_tensor


def file_input_factor(tensors, layer, names, multiplies):
    value = tensors[f"{layer}.{names[3]}"].double().reshape(())
    return value if multiplies else 1.0 / value


def activations_input(k, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(7, k, generator=gen) * torch.exp(torch.randn(1, k, generator=gen))
    x[:, 5] *= 30.0  # an outlier channel
    return x.to(torch.bfloat16)


def bound(exact, magnitude, relative):
    """One rounding to bf16 of a value within `relative` * magnitude of the exact one."""
    drift = relative * magnitude
    return formats.ulp(exact.abs() + drift, torch.bfloat16) / 2 + drift


@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
def test_fixture_was_made_by_the_tool_and_is_small(name):
    directory = FIXTURES / name
    provenance = json.loads((directory / "PROVENANCE.json").read_text())
    assert provenance["tool"] in ("llmcompressor", "nvidia-modelopt")
    assert max(provenance["max_relative_difference_from_tool_dequantization"].values()) <= 4 * 2.0**-24
    assert sum(f.stat().st_size for f in directory.iterdir()) < 2 * 2**20


@pytest.mark.parametrize("activations", ["bf16", "nvfp4"])
@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
def test_every_layer_matches_the_files_reference(name, activations):
    spec = CHECKPOINTS[name]
    names, multiplies = spec["names"], spec["multiplies"]
    tensors = fixture_tensors(name)
    layers = quantized_layers(tensors, names)
    assert len(layers) == 14  # 2 blocks x (q, k, v, o, gate, up, down); lm_head left 16-bit
    quantized = {n: t for n, t in tensors.items() if n.rpartition(".")[0] in layers}
    model = skeleton(tensors, layers, names)
    summary = load_quantized(model, quantized, activations=activations, config=quantization_config(name))
    assert sorted(summary.quantized) == layers and summary.sixteen_bit == []
    for index, layer_name in enumerate(layers):
        layer = model.get_submodule(layer_name)
        assert isinstance(layer, NVFP4Linear) and layer.activations == activations
        # the buffers are the file's bytes: codes as stored (no copy), scales re-laid out only
        assert layer.weight.data_ptr() == tensors[f"{layer_name}.{names[0]}"].data_ptr()
        plain = tensors[f"{layer_name}.{names[1]}"].view(torch.uint8)
        assert torch.equal(formats.from_blocked(layer.weight_scale, *plain.shape[:1], plain.shape[1] * 16).view(torch.uint8), plain)

        weight, per_tensor = file_weight(tensors, layer_name, names, multiplies)
        x = activations_input(layer.in_features, seed=100 + index)
        out = layer(x)
        alpha_file = per_tensor if multiplies else 1.0 / per_tensor  # already in `weight`
        if activations == "bf16":
            x_values = x.double()
            alpha_ours = formats.gemm_alpha(layer.weight_global_scale).double()
            assert layer.input_global_scale is None
        else:
            if f"{layer_name}.{names[3]}" in tensors:  # static: the file's input scale, converted
                input_factor = file_input_factor(tensors, layer_name, names, multiplies)
                assert abs(float(1.0 / layer.input_global_scale.double() / input_factor) - 1) <= 2.0**-24
            else:  # a weight-only checkpoint run W4A4: dynamic
                assert layer.input_global_scale is None
            codes, scales, gs_used, _ = formats.quantize_reference(x, layer.input_global_scale)
            if layer.input_global_scale is None:
                input_factor = 1.0 / gs_used.double()
            x_values = formats.dequantize(codes, scales, torch.float64) * input_factor
            alpha_file = alpha_file * input_factor
            alpha_ours = formats.gemm_alpha(gs_used, layer.weight_global_scale).double()
        exact = x_values @ weight.T
        magnitude = x_values.abs() @ weight.abs().T
        # our alpha is the file's factor held as (a product of) fp32 reciprocals: its relative
        # distance from the file's, plus float64's own roundings here (a few 2^-53)
        relative = float(abs(alpha_ours / alpha_file - 1)) + 2.0**-48
        assert relative <= 3 * 2.0**-24
        error = (out.double() - exact).abs()
        assert bool((error <= bound(exact, magnitude, relative)).all()), (
            f"{name} {layer_name}: max error / bound = {float((error / bound(exact, magnitude, relative)).max()):.3f}"
        )


@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
def test_directory_load_keeps_ignored_layers_16_bit(name):
    pytest.importorskip("transformers", reason="the whole-model load builds a transformers Llama")
    from nvfp4_gemm.checkpoints import from_pretrained

    model = from_pretrained(FIXTURES / name)
    assert isinstance(model.lm_head, nn.Linear) and not isinstance(model.lm_head, NVFP4Linear)
    assert torch.equal(model.lm_head.weight, fixture_tensors(name)["lm_head.weight"])
    layers = [m for m in model.modules() if isinstance(m, NVFP4Linear)]
    assert len(layers) == 14
    want = "bf16" if "nvfp4a16" in name else "nvfp4"  # W4A4 where the file has static input scales
    assert {m.activations for m in layers} == {want}
    assert not any(t.is_meta for t in (*model.parameters(), *model.buffers()))
    ids = torch.randint(0, 320, (2, 9), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        logits = model(ids).logits
    assert logits.shape == (2, 9, 320) and bool(torch.isfinite(logits).all())


def _file_mappings(file_name: str) -> list[tuple[int, int, int]]:
    """This process's mappings of a file: (start, end, resident bytes) each, from /proc/self/smaps."""
    found, current = [], None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and not fields[0].endswith(":"):  # a mapping's header line: range, perms, ..., path
            current = None
            if len(fields) >= 6 and fields[5].endswith("/" + file_name):
                start, end = (int(x, 16) for x in fields[0].split("-"))
                current = [start, end, 0]
                found.append(current)
        elif fields and fields[0] == "Rss:" and current is not None:
            current[2] = int(fields[1]) * 1024
    return [tuple(m) for m in found]


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads the process's mappings from /proc (Linux)")
@pytest.mark.parametrize("fmt", ["compressed-tensors", "modelopt"])
def test_converted_tensors_keep_no_file_pages(fmt, tmp_path):
    """The packed weights stay views of the file (no copy, not read at load), while the scales the loader
    converts (blocked e4m3, per-tensor fp32) own their bytes and are read through mappings that go with
    them: otherwise the plain scales' file pages stay resident beside their blocked copies for the
    model's life (the 8B-shaped load measured 1.25x the checkpoint's size that way, 1.08x without;
    scripts/measure_checkpoint_load.py). One 4096 x 4096 layer: 8 MiB of codes, 1 MiB of scales."""
    import gc

    n = k = 4096
    shard = tmp_path / "model.safetensors"  # a file no other test maps
    save_file(small_checkpoint(n, k, fmt=fmt), str(shard))
    model = one_linear(n, k)
    load_quantized(model, shard)
    gc.collect()
    mappings = _file_mappings(shard.name)
    assert len(mappings) == 1, f"{len(mappings)} mappings of the file remain (one is the packed weights')"
    start, end, resident = mappings[0]
    plain_scale_bytes = n * k // 16
    assert resident < plain_scale_bytes / 4, f"{resident} bytes of the file resident; its plain scales: {plain_scale_bytes}"
    assert start <= model.proj.weight.data_ptr() < end, "the packed weights should be the file's bytes"
    for buffer in (model.proj.weight_scale, model.proj.weight_global_scale, model.proj.input_global_scale):
        assert not start <= buffer.data_ptr() < end


# --- refusals: each names the tensor or the setting, and leaves the model as it was ----------------


def small_checkpoint(n=64, k=64, fmt="compressed-tensors", seed=0):
    """A one-layer checkpoint in the tools' tensor layout, for the error paths (not a tool's output)."""
    gen = torch.Generator().manual_seed(seed)
    packed = torch.randint(0, 256, (n, k // 2), generator=gen, dtype=torch.uint8)
    scale = (torch.rand(n, k // 16, generator=gen) * 8 + 0.5).to(torch.float8_e4m3fn)
    if fmt == "modelopt":
        return {"proj.weight": packed, "proj.weight_scale": scale, "proj.weight_scale_2": torch.tensor(1e-3),
                "proj.input_scale": torch.tensor(2e-2)}
    return {"proj.weight_packed": packed, "proj.weight_scale": scale, "proj.weight_global_scale": torch.tensor([900.0]),
            "proj.input_global_scale": torch.tensor([60.0])}


def one_linear(n=64, k=64, bias=False):
    model = nn.Module()
    model.proj = nn.Linear(k, n, bias=bias, dtype=torch.bfloat16)
    return model


def refused(model, checkpoint, match, **kwargs):
    before = type(model.proj)
    with pytest.raises(CheckpointError, match=match):
        load_quantized(model, checkpoint, **kwargs)
    assert type(model.proj) is before


def test_refuses_another_group_size():
    ckpt = small_checkpoint()
    ckpt["proj.weight_scale"] = ckpt["proj.weight_scale"][:, :2].contiguous()
    refused(one_linear(), ckpt, r"proj.weight_scale: shape \(64, 2\) means one scale per 32 elements")
    ct = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "config_groups": {"g": {
        "weights": {"num_bits": 4, "type": "float", "group_size": 32}}}}
    refused(one_linear(), small_checkpoint(), r"config_groups.g.weights: .*group_size=32 is not NVFP4", config=ct)
    mo = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 32}
    refused(one_linear(), small_checkpoint(fmt="modelopt"), "group_size 32 is not 16", config=mo)


@pytest.mark.parametrize("config, match", [
    ({"quant_method": "awq"}, "quant_method 'awq' is not supported"),
    ({"quant_method": "modelopt", "quant_algo": "FP8"}, "quant_algo 'FP8' is not supported"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}, "quantized KV cache"),
    ({"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {"g": {}}},
     "format 'float-quantized' is not supported"),
    ({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "config_groups": {"g": {
        "weights": {"num_bits": 4, "type": "float", "group_size": 16, "symmetric": False}}}}, "asymmetric"),
])
def test_refuses_other_formats(config, match):
    refused(one_linear(), small_checkpoint(), match, config=config)


def test_refuses_a_format_the_tensors_contradict():
    mo = {"quant_method": "modelopt", "quant_algo": "NVFP4"}
    refused(one_linear(), small_checkpoint(), "the config says modelopt but the tensors hold compressed-tensors", config=mo)
    refused(one_linear(), {"proj.weight": torch.zeros(64, 64, dtype=torch.bfloat16)}, "no NVFP4 layer found")


@pytest.mark.parametrize("fmt", ["compressed-tensors", "modelopt"])
@pytest.mark.parametrize("drop", [0, 1, 2])
def test_refuses_missing_tensors(fmt, drop):
    ckpt = small_checkpoint(fmt=fmt)
    name = list(ckpt)[drop]
    del ckpt[name]
    marker = "weight_scale_2" if fmt == "modelopt" else "weight_packed"
    if name.endswith(marker):  # without its marker the layer is not NVFP4: nothing else is, either
        refused(one_linear(), ckpt, "no NVFP4 layer found")
    else:
        refused(one_linear(), ckpt, f"{name}: missing \\(the layer has proj.{marker}\\)")


def test_refuses_shapes_the_kernels_reject_and_misfits():
    refused(one_linear(n=12), small_checkpoint(n=12), r"proj.weight_packed: the kernels cannot take this layer: out_features \(N\) must")
    refused(one_linear(k=48), small_checkpoint(k=48), "proj.weight_packed: the kernels cannot take this layer: in_features")
    refused(one_linear(n=64, k=128), small_checkpoint(), r"proj.weight_packed: shape \(64, 32\) does not fit")
    ckpt = small_checkpoint()
    ckpt["proj.weight_packed"] = ckpt["proj.weight_packed"].view(torch.int8)
    refused(one_linear(), ckpt, "proj.weight_packed: must be uint8")


@pytest.mark.parametrize("tensor, value, match", [
    ("proj.weight_global_scale", torch.tensor([0.0]), "positive finite"),
    ("proj.weight_global_scale", torch.tensor([float("inf")]), "positive finite"),
    ("proj.weight_global_scale", torch.tensor([1.0, 2.0]), "one element"),
    ("proj.input_global_scale", torch.tensor([-3.0]), "must be a positive"),
    ("proj.weight_global_scale", torch.tensor([900.0], dtype=torch.float64), "must be float32"),
])
def test_refuses_bad_per_tensor_scales(tensor, value, match):
    ckpt = small_checkpoint()
    ckpt[tensor] = value
    refused(one_linear(), ckpt, f"{tensor}: .*{match}")


@pytest.mark.parametrize("byte, match", [(0x7F, "NaN scales"), (0xFF, "negative scales"), (0x88, "negative scales")])
def test_refuses_bad_scale_bytes(byte, match):
    ckpt = small_checkpoint()
    ckpt["proj.weight_scale"].view(torch.uint8)[3, 1] = byte
    refused(one_linear(), ckpt, f"proj.weight_scale: holds {match}")


def test_refuses_tensors_without_a_place_and_unloaded_parameters():
    ckpt = small_checkpoint()
    ckpt["proj.k_scale"] = torch.tensor(1.0)
    refused(one_linear(), ckpt, "proj.k_scale: the model has no place for this tensor")
    ckpt = small_checkpoint()
    ckpt["other.weight_packed"] = ckpt["proj.weight_packed"]
    refused(one_linear(), ckpt, "other.weight_packed: the model has no module 'other'")
    model = one_linear()
    model.norm = nn.LayerNorm(8)
    refused(model, small_checkpoint(), "norm.bias: the model's tensor is not in the checkpoint")
    model = one_linear(bias=True)
    refused(model, small_checkpoint(), "proj.bias: the model's proj has bias=True, the checkpoint has not")
    with torch.device("meta"):
        model = one_linear()
        model.norm = nn.LayerNorm(8)
    refused(model, small_checkpoint(), "norm.bias: the model.s tensor is not in the checkpoint")


def test_refuses_a_quantized_layer_the_config_ignores():
    config = {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "ignore": ["re:.*pro"],
              "config_groups": {"g": {"weights": {"num_bits": 4, "type": "float", "group_size": 16}}}}
    refused(one_linear(), small_checkpoint(), "ignore/exclude list names 'proj', but it is quantized", config=config)
    config = {"quant_method": "modelopt", "quant_algo": "NVFP4", "exclude_modules": ["pr*"]}
    refused(one_linear(), small_checkpoint(fmt="modelopt"), "ignore/exclude list names 'proj'", config=config)


@pytest.mark.parametrize("fmt", ["compressed-tensors", "modelopt"])
def test_small_checkpoint_loads_with_bias_and_file(fmt, tmp_path):
    ckpt = small_checkpoint(fmt=fmt)
    ckpt["proj.bias"] = torch.randn(64).to(torch.bfloat16)
    save_file(ckpt, str(tmp_path / "model.safetensors"))
    model = one_linear(bias=True)
    summary = load_quantized(model, tmp_path / "model.safetensors")
    assert summary.format == fmt and summary.quantized == {"proj": "nvfp4"}
    layer = model.proj
    assert torch.equal(layer.bias, ckpt["proj.bias"])
    gs = ckpt.get("proj.weight_global_scale", None)
    want = gs.reshape(()) if gs is not None else torch.ones((), dtype=torch.float32) / ckpt["proj.weight_scale_2"]
    assert torch.equal(layer.weight_global_scale, want) and layer.weight_global_scale.shape == ()
    want_input = ckpt.get("proj.input_global_scale")
    want_input = want_input.reshape(()) if want_input is not None else torch.ones((), dtype=torch.float32) / ckpt["proj.input_scale"]
    assert torch.equal(layer.input_global_scale, want_input)
    assert math.isfinite(float(layer(torch.ones(3, 64, dtype=torch.bfloat16)).double().abs().sum()))


def test_a_directory_of_shards_loads_like_one_file(tmp_path):
    name = "llama_tiny_nvfp4_llmcompressor"
    tensors = fixture_tensors(name)
    names = sorted(tensors)
    (tmp_path / "config.json").write_text((FIXTURES / name / "config.json").read_text())
    save_file({n: tensors[n] for n in names[::2]}, str(tmp_path / "model-00001-of-00002.safetensors"))
    save_file({n: tensors[n] for n in names[1::2]}, str(tmp_path / "model-00002-of-00002.safetensors"))
    spec = CHECKPOINTS[name]
    layers = quantized_layers(tensors, spec["names"])
    quantized = {n: t for n, t in tensors.items() if n.rpartition(".")[0] in layers}
    whole, sharded = skeleton(tensors, layers, spec["names"]), skeleton(tensors, layers, spec["names"])
    load_quantized(whole, quantized, config=quantization_config(name))
    # the shards also hold the embedding, norms and head, which the skeleton has no place for
    with pytest.raises(CheckpointError, match="lm_head.weight: the model has no place for this tensor"):
        load_quantized(sharded, tmp_path)
    only_quantized = tmp_path / "quantized"
    only_quantized.mkdir()
    (only_quantized / "config.json").write_text((FIXTURES / name / "config.json").read_text())
    save_file({n: quantized[n] for n in sorted(quantized)[::2]}, str(only_quantized / "a.safetensors"))
    save_file({n: quantized[n] for n in sorted(quantized)[1::2]}, str(only_quantized / "b.safetensors"))
    summary = load_quantized(sharded, only_quantized)
    assert summary.format == "compressed-tensors" and len(summary.quantized) == 14
    for layer in layers:
        a, b = whole.get_submodule(layer), sharded.get_submodule(layer)
        for buffer in ("weight", "weight_scale", "weight_global_scale", "input_global_scale"):
            assert torch.equal(getattr(a, buffer).reshape(-1).view(torch.uint8), getattr(b, buffer).reshape(-1).view(torch.uint8))
    twice = sorted(quantized)[0]
    save_file({twice: quantized[twice]}, str(only_quantized / "c.safetensors"))
    with pytest.raises(CheckpointError, match=f"tensor '{twice}' is in two files"):
        load_quantized(sharded, only_quantized)
