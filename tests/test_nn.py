"""The model path on the CPU: NVFP4Linear (W4A4 and weight-only), its state dict, calibration and
quantize_model. Every forward is compared with the exact reference of what it claims to compute."""

import pytest
import torch
from torch import nn

import nvfp4_gemm
from nvfp4_gemm import formats
from nvfp4_gemm.nn import NVFP4Linear, calibrate, quantize_model
from nvfp4_gemm.testing import random_operands


def random_linear(in_features, out_features, bias, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    linear = nn.Linear(in_features, out_features, bias=bias)
    with torch.no_grad():
        linear.weight.copy_(torch.randn(out_features, in_features, generator=gen) * 0.05)
        if bias:
            linear.bias.copy_(torch.randn(out_features, generator=gen))
    return linear.to(dtype)


def random_input(shape, dtype, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen)
    x[..., 3] *= 40.0  # an outlier channel
    return x.to(dtype)


def w4a4_reference(layer, x, input_global_scale=None):
    """quantize x against the layer's weight scale, exact GEMM rounded once, bias added in x's dtype."""
    rows = x.reshape(-1, layer.in_features)
    qx = formats.quantize_reference(rows, input_global_scale, layer.weight_global_scale)
    exact = formats.reference_gemm_float64(qx[0], layer.weight, qx[1], layer.weight_scale, qx[3])
    out = formats.round_once(exact, x.dtype)
    if layer.bias is not None:
        out = out + layer.bias.to(x.dtype)
    return out.reshape(*x.shape[:-1], layer.out_features)


def weight_only_reference(layer, x):
    """x @ dequant(w).T with x as given, alpha = 1/gs_w rounded to fp32 (as the op takes it), one rounding,
    bias added in x's dtype."""
    rows = x.reshape(-1, layer.in_features)
    out = formats.reference_gemm(rows, layer.weight, None, layer.weight_scale,
                                 formats.gemm_alpha(layer.weight_global_scale), x.dtype)
    if layer.bias is not None:
        out = out + layer.bias.to(x.dtype)
    return out.reshape(*x.shape[:-1], layer.out_features)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("bias", [True, False])
def test_from_linear_buffers_and_w4a4_forward(dtype, bias):
    linear = random_linear(96, 40, bias, dtype, seed=1)
    layer = NVFP4Linear.from_linear(linear)
    q = nvfp4_gemm.quantize(linear.weight.detach())
    assert torch.equal(layer.weight, q.data) and layer.weight.shape == (40, 48)
    assert torch.equal(layer.weight_scale.view(torch.uint8), q.scale.view(torch.uint8))
    assert torch.equal(layer.weight_global_scale, q.global_scale)
    assert layer.input_global_scale is None and "dynamic" in repr(layer)
    x = random_input((2, 5, 96), dtype, seed=2)
    out = layer(x)
    assert out.dtype == dtype and out.shape == (2, 5, 40)
    assert torch.equal(out, w4a4_reference(layer, x))
    # and it approximates the layer it replaced (~10 % noise per quantized operand)
    want = linear(x).detach().double()
    assert float((out.detach().double() - want).norm() / want.norm()) < 0.3


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_weight_only_forward_is_exact_on_cpu(dtype):
    linear = random_linear(64, 24, True, dtype, seed=3)
    layer = NVFP4Linear.from_linear(linear, activations="bf16")
    x = random_input((7, 64), dtype, seed=4)
    assert torch.equal(layer(x), weight_only_reference(layer, x))
    with pytest.raises(TypeError, match="takes float16 or bfloat16 x"):
        layer(x.float())


def test_weight_only_reference_of_the_gemm():
    gen = torch.Generator().manual_seed(5)
    a = torch.randn(3, 9, 64, generator=gen).to(torch.bfloat16)
    ops = random_operands(9, 16, 64, 3, seed=6, with_alpha=True)
    got = formats.reference_gemm(a, ops.b, None, ops.b_scale, ops.alpha, torch.float32)
    exact = a.double() @ formats.dequantize(ops.b, ops.b_scale, torch.float64).transpose(-1, -2) * ops.alpha.double()
    assert torch.equal(got, formats.round_once(exact, torch.float32))
    with pytest.raises(ValueError, match="a_scale=None means a holds 16-bit values"):
        formats.reference_gemm(a.float(), ops.b, None, ops.b_scale)


def test_state_dict_round_trip_into_a_fresh_module():
    linear = random_linear(128, 64, True, torch.bfloat16, seed=7)
    layer = NVFP4Linear.from_linear(linear)
    x = random_input((6, 128), torch.bfloat16, seed=8)
    with calibrate(layer):
        layer(x)
    assert layer.input_global_scale is not None
    fresh = NVFP4Linear(128, 64, activations="bf16")  # activations come back from the checkpoint
    fresh.load_state_dict(layer.state_dict())
    assert fresh.activations == "nvfp4" and fresh.input_global_scale is not None
    assert torch.equal(fresh(x), layer(x))
    # a dynamic checkpoint into a calibrated module: the static scale goes away
    dynamic = NVFP4Linear.from_linear(linear)
    fresh.load_state_dict(dynamic.state_dict())
    assert fresh.input_global_scale is None
    assert torch.equal(fresh(x), dynamic(x))


@pytest.mark.parametrize("activations,fmt", [("nvfp4", "nvfp4"), ("bf16", "nvfp4"), ("mxfp4", "mxfp4")])
@pytest.mark.parametrize("cast", ["half", "bfloat16", "float", "to", "type"])
def test_dtype_casts_reach_the_bias_only(activations, fmt, cast):
    """A cast of the whole model (`model.half()`, `.to(dtype)`, ...) leaves the buffers that hold the format
    (codes, e4m3 / ue8m0 scales, fp32 global scales, the static input scale) as they are, byte for byte,
    and casts the bias: the layer's outputs stay what they were (the bias was bf16, which each cast holds)."""
    layer = NVFP4Linear.from_linear(random_linear(128, 48, True, torch.bfloat16, seed=40), activations, format=fmt)
    x = random_input((5, 128), torch.bfloat16, seed=41)
    if activations == "nvfp4":
        with calibrate(layer):
            layer(x)
    before = {name: buf.clone() for name, buf in layer.named_buffers()}
    want = layer(x)
    model = nn.Sequential(layer)  # a cast usually comes from the model around the layer
    target = {"half": torch.float16, "bfloat16": torch.bfloat16, "float": torch.float32, "to": torch.float16,
              "type": torch.float32}[cast]
    {"half": model.half, "bfloat16": model.bfloat16, "float": model.float, "to": lambda: model.to(torch.float16),
     "type": lambda: model.type(torch.float32)}[cast]()
    assert layer.bias.dtype == target
    after = dict(layer.named_buffers())
    assert after.keys() == before.keys() and (activations != "nvfp4" or "input_global_scale" in after)
    for name, buf in before.items():
        assert after[name].dtype == buf.dtype, name
        assert torch.equal(after[name].reshape(-1).view(torch.uint8), buf.reshape(-1).view(torch.uint8)), name
    assert torch.equal(layer(x), want)


def test_calibrate_fixes_the_max_over_batches():
    model = nn.Sequential(random_linear(64, 32, True, torch.bfloat16, seed=9), nn.ReLU(),
                          random_linear(32, 16, False, torch.bfloat16, seed=10))
    quantize_model(model)
    batches = [random_input((4, 64), torch.bfloat16, seed=s) for s in (11, 12, 13)]
    batches[1][0, 5] = 900.0  # the largest value of all
    batches[2][1, 7] = float("nan")  # ignored, like the dynamic scale does
    with calibrate(model) as layers:
        hidden = [model[1](model[0](b)) for b in batches]
        for h in hidden:
            model[2](h)
    assert len(layers) == 2
    first = model[0].input_global_scale
    assert torch.equal(first, formats.global_scale_from_amax(torch.tensor(900.0)))
    want = formats.global_scale_from_amax(torch.stack([formats.finite_amax(h) for h in hidden]).amax())
    assert torch.equal(model[2].input_global_scale, want)
    x = random_input((3, 64), torch.bfloat16, seed=14)
    assert torch.equal(model[0](x), w4a4_reference(model[0], x, first))
    assert "static" in repr(model[0])


def test_calibrate_errors_keep_previous_state():
    model = nn.Sequential(random_linear(64, 32, True, torch.bfloat16, seed=15),
                          random_linear(32, 16, True, torch.bfloat16, seed=16))
    quantize_model(model)
    with pytest.raises(RuntimeError, match="saw no input inside the block: 1"):
        with calibrate(model):
            model[0](random_input((2, 64), torch.bfloat16, seed=17))
    assert model[0].input_global_scale is None and model[0]._calibration_amax is None
    with pytest.raises(KeyError):
        with calibrate(model):
            model(random_input((2, 64), torch.bfloat16, seed=18))
            raise KeyError("inside")
    assert model[1].input_global_scale is None
    with pytest.raises(ValueError, match="no NVFP4Linear with activations='nvfp4'"):
        with calibrate(nn.Sequential(nn.ReLU())):
            pass


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = random_linear(64, 128, False, torch.bfloat16, seed=19)
        self.down = random_linear(128, 64, True, torch.bfloat16, seed=20)
        self.odd = random_linear(64, 100, True, torch.bfloat16, seed=21)  # out_features % 8 != 0
        self.narrow = random_linear(48, 64, True, torch.bfloat16, seed=22)  # in_features % 32 != 0


class Subclass(nn.Linear):
    pass


def test_quantize_model_swaps_skips_and_names():
    model = nn.Module()
    model.block = Block()
    model.lm_head = random_linear(64, 256, False, torch.bfloat16, seed=23)
    model.custom = Subclass(64, 64).to(torch.bfloat16)
    model.alias = model.block.up  # the same module under two names
    lines = []
    summary = quantize_model(model, progress=lines.append)
    assert sorted(summary.quantized) == ["alias", "block.down", "block.up"]
    assert lines == ["quantize_model: 1/2 block.up (128 x 64)", "quantize_model: 2/2 block.down (64 x 128)"]
    assert summary.skipped["block.odd"] == "out_features (N) must be a multiple of 8 for bfloat16 output, got N=100"
    assert summary.skipped["block.narrow"] == "in_features (K) must be a multiple of 32, got K=48"
    assert "subclass of nn.Linear" in summary.skipped["custom"]
    assert summary.excluded == ["lm_head"]
    assert isinstance(model.block.up, NVFP4Linear) and model.alias is model.block.up
    assert type(model.lm_head) is nn.Linear and type(model.block.odd) is nn.Linear
    text = str(summary)
    assert "quantized 3 nn.Linear" in text and "skipped block.odd" in text and "excluded: lm_head" in text


def test_quantize_model_include_exclude_and_meta():
    model = Block()
    summary = quantize_model(model, include=["up", "down"], exclude=["down"], activations="bf16")
    assert summary.quantized == ["up"] and sorted(summary.excluded) == ["down", "narrow", "odd"]
    assert model.up.activations == "bf16"
    with torch.device("meta"):
        lazy = nn.Sequential(nn.Linear(64, 64))
    assert quantize_model(lazy).skipped == {"0": "its weight is on the meta device (not loaded)"}
    assert quantize_model(nn.Linear(64, 64)).skipped == {"": "the model itself is an nn.Linear: use NVFP4Linear.from_linear"}
    with pytest.raises(ValueError, match="activations must be one of"):
        quantize_model(model, activations="fp8")


def test_constructor_and_forward_errors():
    with pytest.raises(ValueError, match=r"NVFP4Linear\(40, 64, dtype=torch.bfloat16\): in_features \(K\) must be a multiple of 32"):
        NVFP4Linear(40, 64)
    layer = NVFP4Linear.from_linear(random_linear(64, 32, True, torch.bfloat16, seed=24))
    with pytest.raises(ValueError, match="x.shape\\[-1\\] must be in_features=64"):
        layer(torch.randn(2, 32, dtype=torch.bfloat16))
    assert layer(torch.randn(0, 64, dtype=torch.bfloat16)).shape == (0, 32)


def test_inference_only_inputs_that_require_grad_are_named():
    linear = random_linear(64, 32, True, torch.bfloat16, seed=27)
    layer = NVFP4Linear.from_linear(linear)
    assert not layer.bias.requires_grad
    x = random_input((2, 64), torch.bfloat16, seed=28).requires_grad_()
    with pytest.raises(ValueError, match="x requires grad, but NVFP4Linear is inference only"):
        layer(x)
    with torch.no_grad():
        assert torch.equal(layer(x), layer(x.detach()))
    with pytest.raises(ValueError, match="x requires grad, but quantize has no backward"):
        nvfp4_gemm.quantize(linear.weight)


@pytest.mark.parametrize("activations", ["nvfp4", "bf16"])
def test_compiled_layer_matches_eager(activations):
    layer = NVFP4Linear.from_linear(random_linear(96, 48, True, torch.float16, seed=25), activations=activations)
    compiled = torch.compile(layer, fullgraph=True)
    x = random_input((3, 4, 96), torch.float16, seed=26)
    assert torch.equal(compiled(x), layer(x))


def test_readme_quantize_a_model_example():
    # the README's "Quantize a model" code, as written there
    import torch
    from torch import nn

    import nvfp4_gemm

    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)).to(torch.bfloat16)
    x = torch.randn(8, 1024, dtype=torch.bfloat16)
    reference = model(x)

    summary = nvfp4_gemm.quantize_model(model)  # swaps the nn.Linear layers in place
    print(summary)
    out = model(x)
    error = (out.float() - reference.float()).norm() / reference.float().norm()
    print(f"relative error vs bf16: {error:.3f}")

    assert summary.quantized == ["0", "2"] and 0.05 < float(error) < 0.3


LLAMA_PROJECTIONS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                     "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")


def tiny_llama(seed):
    """A random bf16 transformers Llama of two layers (no download) and prompt ids for it; skips without
    transformers."""
    transformers = pytest.importorskip("transformers", reason="quantize_model's transformers route")
    config = transformers.LlamaConfig(vocab_size=256, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config).to(torch.bfloat16).eval()
    ids = torch.randint(0, config.vocab_size, (2, 9), generator=torch.Generator().manual_seed(seed + 1))
    return model, ids


def record_layer_calls(model):
    """Forward hooks on every NVFP4Linear of `model` appending (layer, input, output) per call: the list and
    the hooks' handles."""
    calls = []
    handles = [m.register_forward_hook(lambda layer, args, out: calls.append((layer, args[0], out)))
               for m in model.modules() if isinstance(m, NVFP4Linear)]
    return calls, handles


@pytest.mark.parametrize("activations", ["nvfp4", "bf16"])
def test_quantize_model_on_a_transformers_llama(activations):
    """The README's transformers route, on a tiny random Llama: quantize_model swaps every projection and
    leaves lm_head; inside the model's own forward (3-D bf16 activations between attention, norms and the
    MLP's gate) every swapped layer returns the exact reference of the input it was given; the state dict
    loads into a model quantized from other weights and gives the same logits bit for bit; greedy generation
    runs through the KV cache (one token per sequence and step); W4A4 calibrated over the model's forward runs
    every layer with its static input scale. tests/test_quantize_gpu.py runs it on a GPU."""
    model, ids = tiny_llama(seed=0)
    summary = nvfp4_gemm.quantize_model(model, activations=activations)
    assert sorted(summary.quantized) == sorted(f"model.layers.{i}.{p}" for i in range(2) for p in LLAMA_PROJECTIONS)
    assert summary.excluded == ["lm_head"] and not summary.skipped
    assert type(model.lm_head) is nn.Linear

    seen, hooks = record_layer_calls(model)
    with torch.no_grad():
        logits = model(ids).logits
    for hook in hooks:
        hook.remove()
    assert len(seen) == len(hooks) == 14
    reference_of = w4a4_reference if activations == "nvfp4" else weight_only_reference
    for layer, x, out in seen:
        assert x.shape[:2] == (2, 9) and x.dtype == torch.bfloat16
        assert torch.equal(out, reference_of(layer, x))

    other, _ = tiny_llama(seed=5)
    nvfp4_gemm.quantize_model(other, activations=activations)
    other.load_state_dict(model.state_dict())
    with torch.no_grad():
        assert torch.equal(other(ids).logits, logits)
        generated = model.generate(ids, max_new_tokens=4, do_sample=False, pad_token_id=0)
    assert generated.shape == (2, 13) and torch.equal(generated[:, :9], ids)

    if activations == "nvfp4":  # static input scales, calibrated over the model's own forward
        with torch.no_grad(), calibrate(model):
            model(ids)
        seen, hooks = record_layer_calls(model)
        with torch.no_grad():
            model(ids)
        for hook in hooks:
            hook.remove()
        assert len(seen) == 14
        for layer, x, out in seen:
            assert layer.input_global_scale is not None
            assert torch.equal(out, w4a4_reference(layer, x, layer.input_global_scale))


@pytest.mark.parametrize("activations", ["nvfp4", "bf16"])
def test_fused_layers_equal_the_separate_layers(activations):
    """q/k/v quantized apart (three global scales) and fused: one GEMM with alpha per column gives the
    three layers' outputs bit for bit (CPU); layers that disagree on what they share are refused."""
    gen = torch.Generator().manual_seed(70)
    linears = [nn.Linear(128, rows, bias=bias).to(torch.bfloat16) for rows, bias in ((64, True), (32, False), (32, True))]
    with torch.no_grad():
        for linear, scale in zip(linears, (1.0, 30.0, 0.03)):
            linear.weight.copy_(torch.randn(linear.weight.shape, generator=gen) * scale)
    layers = [NVFP4Linear.from_linear(linear, activations=activations) for linear in linears]
    assert len({float(layer.weight_global_scale) for layer in layers}) == 3
    fused = nvfp4_gemm.nn.fuse_linears(layers)
    assert fused.weight_global_scale.shape == (128,) and fused.out_features == 128
    x = torch.randn(5, 128, generator=gen).to(torch.bfloat16)
    assert torch.equal(fused(x), torch.cat([layer(x) for layer in layers], dim=-1))
    with pytest.raises(ValueError, match="must share in_features"):
        nvfp4_gemm.nn.fuse_linears([layers[0], NVFP4Linear.from_linear(nn.Linear(64, 32).to(torch.bfloat16))])
