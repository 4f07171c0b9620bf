"""NVFP4Linear and quantize_model with MX formats (CPU): MXFP4 weights with MXFP4, MXFP8 (W4A8) or 16-bit
activations, each forward equal bit for bit to quantize -> gemm of the same operands."""

import pytest
import torch
from torch import nn

import nvfp4_gemm
from nvfp4_gemm import formats
from nvfp4_gemm.dtypes import MX
from nvfp4_gemm.nn import NVFP4Linear, fuse_linears, quantize_model


def linear(k=96, n=40, seed=0, bias=True):
    torch.manual_seed(seed)
    layer = nn.Linear(k, n, bias=bias).to(torch.bfloat16)
    with torch.no_grad():
        layer.weight.mul_(torch.rand(n, 1, dtype=torch.bfloat16) * 4)  # rows of different sizes
    return layer


def x_rows(m=7, k=96, seed=1):
    return torch.randn(m, k, generator=torch.Generator().manual_seed(seed)).to(torch.bfloat16)


@pytest.mark.parametrize("activations", ["mxfp4", "mxfp8", "bf16"])
def test_mx_layer_forward_is_quantize_then_gemm(activations):
    source = linear()
    layer = NVFP4Linear.from_linear(source, activations, format="mxfp4")
    assert layer.weight_scale.dtype == torch.float8_e8m0fnu
    assert layer.weight_scale.numel() == formats.blocked_scale_numel(40, 96, fmt=MX)
    weight_data, weight_scale = formats.quantize_mx_reference(source.weight.detach(), "mxfp4")
    assert torch.equal(layer.weight, weight_data) and torch.equal(layer.weight_scale.view(torch.uint8), weight_scale.view(torch.uint8))
    x = x_rows()
    out = layer(x.reshape(1, 7, 96))
    if activations == "bf16":
        want = formats.reference_gemm(x, weight_data, None, weight_scale, torch.ones(()), torch.bfloat16)
    else:
        data, scale = formats.quantize_mx_reference(x, activations)
        want = formats.reference_gemm(data, weight_data, scale, weight_scale, None, torch.bfloat16)
    want = want + source.bias.detach()
    assert out.shape == (1, 7, 40) and torch.equal(out[0], want)
    # the quantized layer approximates the original
    exact = source(x).double()
    assert float((out[0].double() - exact).norm() / exact.norm()) < 0.2


def test_default_activations_follow_the_weights_format():
    assert NVFP4Linear(64, 16, format="mxfp4").activations == "mxfp4"
    assert NVFP4Linear(64, 16).activations == "nvfp4"


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"format": "mxfp4", "activations": "nvfp4"}, r"activations='nvfp4' do not pair with format='mxfp4' weights"),
        ({"format": "nvfp4", "activations": "mxfp8"}, r"activations='mxfp8' do not pair with format='nvfp4' weights"),
        ({"format": "mxfp8"}, r"format \(the weights'\) must be one of \('nvfp4', 'mxfp4'\), got 'mxfp8'"),
        ({"activations": "fp16"}, r"activations must be one of \('nvfp4', 'mxfp4', 'mxfp8', 'bf16'\)"),
    ],
)
def test_bad_pairs_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        NVFP4Linear(64, 16, **kwargs)
    with pytest.raises(ValueError, match=match):
        quantize_model(nn.Sequential(nn.Linear(64, 16)), **kwargs)


def test_quantize_model_w4a8():
    model = nn.Sequential(linear(96, 64, seed=2), nn.ReLU(), linear(64, 32, seed=3)).to(torch.bfloat16)
    reference = [model[0], model[2]]
    summary = quantize_model(model, format="mxfp4", activations="mxfp8")
    assert summary.quantized == ["0", "2"] and "format='mxfp4', activations='mxfp8'" in str(summary)
    assert all(m.format == "mxfp4" and m.activations == "mxfp8" for m in (model[0], model[2]))
    x = x_rows(5, 96, seed=4)
    with torch.no_grad():
        exact = reference[1](torch.relu(reference[0](x))).double()
    out = model(x).double()
    # a sanity bound for two layers of 4-bit weights (the exactness: test_mx_layer_forward_is_quantize_then_gemm)
    assert float((out - exact).norm() / exact.norm()) < 0.25
    assert "format='mxfp4'" in repr(model[0])


def test_state_dict_round_trip_and_format_mismatch():
    layer = NVFP4Linear.from_linear(linear(), "mxfp8", format="mxfp4")
    state = layer.state_dict()
    fresh = NVFP4Linear(96, 40, format="mxfp4")
    fresh.load_state_dict(state)
    assert fresh.activations == "mxfp8"
    x = x_rows()
    assert torch.equal(fresh(x), layer(x))
    with pytest.raises(ValueError, match=r"the state holds format='mxfp4' weights, this layer format='nvfp4' ones"):
        NVFP4Linear(96, 40).load_state_dict(state)


def test_fuse_mx_layers_is_the_separate_layers():
    layers = [NVFP4Linear.from_linear(linear(96, n, seed=s), "mxfp8", format="mxfp4") for n, s in ((32, 5), (16, 6))]
    fused = fuse_linears(layers)
    assert fused.format == "mxfp4" and fused.weight_scale.dtype == torch.float8_e8m0fnu
    x = x_rows()
    assert torch.equal(fused(x), torch.cat([layer(x) for layer in layers], dim=-1))
    with pytest.raises(ValueError, match=r"must share format"):
        fuse_linears([
            NVFP4Linear.from_linear(linear(96, 16, seed=7), "bf16", format="mxfp4"),
            NVFP4Linear.from_linear(linear(96, 16, seed=7), "bf16"),
        ])


def test_tensor_parallel_refuses_mx_layers():
    layer = NVFP4Linear.from_linear(linear(), format="mxfp4")
    with pytest.raises(NotImplementedError, match=r"tensor parallel shards NVFP4 layers; this one has format='mxfp4'"):
        nvfp4_gemm.parallel.shard_rows(layer, 0, 2)
