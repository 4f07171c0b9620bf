"""torch.ops.nvfp4.gemm: schema, fake, opcheck, torch.compile, the Python API and the GPU MODE adapter
(CPU tensors, so the exact reference implementation runs)."""

import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import formats
from nvfp4_gemm.testing import random_operands

from conftest import poisoned


def test_schema():
    schema = str(torch.ops.nvfp4.gemm.default._schema)
    assert schema == (
        "nvfp4::gemm(Tensor a, Tensor b, Tensor a_scale, Tensor b_scale, Tensor? alpha=None, "
        "ScalarType out_dtype=5) -> Tensor"
    )


@pytest.mark.parametrize(
    "m,n,k,l,out_dtype,with_alpha",
    [(128, 64, 128, None, torch.float16, False), (7, 24, 96, 3, torch.bfloat16, True), (33, 12, 64, None, torch.float32, True)],
)
def test_opcheck(m, n, k, l, out_dtype, with_alpha, float8_bitwise_allclose):
    ops = random_operands(m, n, k, l, seed=m + n, with_alpha=with_alpha)
    torch.library.opcheck(
        torch.ops.nvfp4.gemm.default, (ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out_dtype)
    )


def test_fake_tensor_shapes_and_errors():
    from torch._subclasses.fake_tensor import FakeTensorMode

    ops = random_operands(5, 16, 64, 2, seed=9)
    with FakeTensorMode() as mode:
        fake = [mode.from_tensor(t) for t in (ops.a, ops.b, ops.a_scale, ops.b_scale)]
        out = torch.ops.nvfp4.gemm(*fake, None, torch.bfloat16)
        assert out.shape == (2, 5, 16) and out.dtype == torch.bfloat16
        with pytest.raises(ValueError, match="a and b must have the same K/2"):
            torch.ops.nvfp4.gemm(fake[0], fake[1][:, :, :16], fake[2], fake[3])


def test_torch_compile_fullgraph():
    ops = random_operands(64, 32, 128, seed=10, with_alpha=True)

    def layer(a, b, sa, sb, alpha):
        return torch.ops.nvfp4.gemm(a, b, sa, sb, alpha, torch.float16).float().relu()

    compiled = torch.compile(layer, fullgraph=True)
    got = compiled(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha)
    want = layer(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha)
    assert torch.equal(got, want)


@pytest.mark.parametrize("out_dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_cpu_op_is_the_exact_reference(out_dtype):
    ops = random_operands(129, 40, 96, seed=11, with_alpha=True)
    got = torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out_dtype)
    exact = formats.reference_gemm_float64(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha)
    assert got.dtype == out_dtype
    assert torch.equal(got, formats.round_once(exact, out_dtype))
    assert got.float().abs().max() > 0


def test_python_api_out_in_place():
    ops = random_operands(16, 32, 64, 2, seed=12)
    out = poisoned((2, 16, 32), torch.bfloat16)
    result = nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out)
    assert result is out
    assert torch.equal(out, torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, None, torch.bfloat16))


def test_python_api_rejects_unknown_config_on_cpu_free_of_launch():
    # config= only matters on CUDA; on the CPU the reference runs, so the call still validates inputs
    ops = random_operands(16, 32, 64, seed=13)
    with pytest.raises(ValueError, match="must be a multiple of 32"):
        nvfp4_gemm.gemm(ops.a[:, :24].contiguous(), ops.b[:, :24].contiguous(), ops.a_scale, ops.b_scale, config="x")


def competition_tuple(m, n, k, l, seed, device="cpu"):
    """Build the GPU MODE harness's tuple the way the harness lays it out."""
    ops = random_operands(m, n, k, l, seed=seed, device=device)
    a = ops.a.view(torch.float4_e2m1fn_x2).permute(1, 2, 0)  # (M, K/2, L)
    b = ops.b.view(torch.float4_e2m1fn_x2).permute(1, 2, 0)
    padded_m, cols = formats.blocked_scale_shape(m, k)
    padded_n, _ = formats.blocked_scale_shape(n, k)
    sfa_buffer = ops.a_scale.view(l, padded_m // 128, cols // 4, 32, 4, 4)
    sfb_buffer = ops.b_scale.view(l, padded_n // 128, cols // 4, 32, 4, 4)
    sfa_permuted = sfa_buffer.permute(3, 4, 1, 5, 2, 0)  # (32, 4, R/128, 4, C/4, L)
    sfb_permuted = sfb_buffer.permute(3, 4, 1, 5, 2, 0)
    sfa = formats.from_blocked(ops.a_scale, m, k, l).permute(1, 2, 0)  # plain (M, K/16, L), unused
    sfb = formats.from_blocked(ops.b_scale, n, k, l).permute(1, 2, 0)
    c = torch.full((l, m, n), float("nan"), dtype=torch.float16, device=device).permute(1, 2, 0)
    return (a, b, sfa, sfb, sfa_permuted, sfb_permuted, c), ops


@pytest.mark.parametrize("l", [1, 2])
def test_gpumode_adapter(l):
    data, ops = competition_tuple(128, 64, 256, l, seed=14)
    result = nvfp4_gemm.gpumode.gemm(data)
    assert result is data[-1]
    want = formats.reference_gemm(ops.a, ops.b, ops.a_scale, ops.b_scale)  # (L, M, N)
    assert torch.equal(result.permute(2, 0, 1), want)


def test_gpumode_adapter_rejects_a_copy_in_the_wrong_layout():
    data, _ = competition_tuple(128, 64, 256, 2, seed=15)
    data = list(data)
    data[4] = data[4].contiguous()  # a repacked copy, no longer the harness's view
    with pytest.raises(ValueError, match=r"^sfa_permuted .* is not a permuted view"):
        nvfp4_gemm.gpumode.gemm(data)
