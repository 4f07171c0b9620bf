"""Bad input gets a clear Python error naming the argument and the rule, before any launch."""

import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import _checks
from nvfp4_gemm.testing import random_operands


def args(m=128, n=64, k=128, l=None):
    ops = random_operands(m, n, k, l, seed=0)
    return [ops.a, ops.b, ops.a_scale, ops.b_scale]


def call(a, b, sa, sb, **kw):
    return nvfp4_gemm.gemm(a, b, sa, sb, **kw)


@pytest.mark.parametrize("entry", [torch.ops.nvfp4.gemm, nvfp4_gemm.gemm])
def test_wrong_operand_dtype(entry):
    a, b, sa, sb = args()
    with pytest.raises(TypeError, match=r"^a must hold packed FP4 bytes.*got torch.int8"):
        entry(a.view(torch.int8), b, sa, sb)
    with pytest.raises(TypeError, match=r"^b must hold packed FP4"):
        entry(a, b.to(torch.float16), sa, sb)


def test_float4_dtype_accepted():
    a, b, sa, sb = args()
    fp4 = torch.float4_e2m1fn_x2
    torch.testing.assert_close(call(a.view(fp4), b.view(fp4), sa, sb), call(a, b, sa, sb), rtol=0, atol=0)


def test_wrong_scale_dtype():
    a, b, sa, sb = args()
    with pytest.raises(TypeError, match=r"^a_scale must be torch.float8_e4m3fn"):
        call(a, b, sa.view(torch.uint8), sb)
    with pytest.raises(TypeError, match=r"^b_scale must be torch.float8_e4m3fn"):
        call(a, b, sa, sb.view(torch.uint8))


def test_out_dtype_rules():
    a, b, sa, sb = args()
    with pytest.raises(TypeError, match=r"^out_dtype must be torch.float16, torch.bfloat16 or torch.float32"):
        call(a, b, sa, sb, out_dtype=torch.float64)
    with pytest.raises(TypeError, match=r"^out must have dtype torch.bfloat16"):
        call(a, b, sa, sb, out_dtype=torch.bfloat16, out=torch.empty(128, 64, dtype=torch.float16))


def test_shape_mismatches():
    a, b, sa, sb = args()
    with pytest.raises(ValueError, match=r"^a and b must have the same K/2"):
        call(a, b[:, :32].contiguous(), sa, sb)
    with pytest.raises(ValueError, match=r"^a and b must both be 2-D or both 3-D"):
        call(a, b.unsqueeze(0), sa, sb)
    with pytest.raises(ValueError, match=r"^a must be 2-D"):
        call(a.reshape(-1), b, sa, sb)
    a3, b3, sa3, sb3 = args(l=2)
    with pytest.raises(ValueError, match=r"^a and b must have the same batch L"):
        call(a3, b3[:1], sa3, sb3)
    with pytest.raises(ValueError, match=r"^out must have shape \(128, 64\)"):
        call(a, b, sa, sb, out=torch.empty(64, 128, dtype=torch.float16))


def test_k_must_be_multiple_of_32():
    ops = random_operands(128, 64, 48, seed=1)  # K=48: whole scale blocks, but not 32-aligned
    with pytest.raises(ValueError, match=r"K \(= 2 \* a.shape\[-1\]\) must be a multiple of 32, got K=48"):
        call(ops.a, ops.b, ops.a_scale, ops.b_scale)


@pytest.mark.parametrize("out_dtype,n,align", [(torch.float16, 36, 8), (torch.bfloat16, 12, 8), (torch.float32, 6, 4)])
def test_n_alignment_per_out_dtype(out_dtype, n, align):
    ops = random_operands(16, n, 64, seed=2)
    with pytest.raises(ValueError, match=rf"N must be a multiple of {align} for {str(out_dtype)[6:]} output, got N={n}"):
        call(ops.a, ops.b, ops.a_scale, ops.b_scale, out_dtype=out_dtype)


def test_n_multiple_of_4_is_fine_for_float32():
    ops = random_operands(16, 12, 64, seed=3)
    assert call(ops.a, ops.b, ops.a_scale, ops.b_scale, out_dtype=torch.float32).shape == (16, 12)


def test_scale_numel_must_be_blocked_size():
    a, b, sa, sb = args(m=100)
    with pytest.raises(ValueError, match=r"^a_scale must hold the blocked layout of 1 x 100 rows x K/16=8 scales: .* = 1024 elements, got 800"):
        call(a, b, sa[:800], sb)
    with pytest.raises(ValueError, match=r"^b_scale must hold the blocked layout"):
        call(a, b, sa, sb[:-4])


def test_scales_of_any_shape_over_the_blocked_storage_are_accepted():
    a, b, sa, sb = args()
    flat = call(a, b, sa, sb)
    torch.testing.assert_close(call(a, b, sa.view(1, 1, 2, 32, 4, 4), sb.view(128, 8)), flat, rtol=0, atol=0)


def test_non_contiguous_inputs():
    a, b, sa, sb = args()
    wide = torch.zeros(128, 128, dtype=torch.uint8)
    with pytest.raises(ValueError, match=r"^a must be contiguous"):
        call(wide[:, :64], b, sa, sb)
    with pytest.raises(ValueError, match=r"^b_scale must be contiguous"):
        call(a, b, sa, sb.view(128, 8).t())
    with pytest.raises(ValueError, match=r"^out must be contiguous"):
        call(a, b, sa, sb, out=torch.empty(64, 128, dtype=torch.float16).t())


def test_alpha_rules():
    a, b, sa, sb = args()
    rule = r"^alpha must be a float32 tensor with one element \(one global scale\) or of shape \(N,\) = \(64,\)"
    with pytest.raises(ValueError, match=rule + r".*got dtype torch.float64"):
        call(a, b, sa, sb, alpha=torch.tensor(1.0, dtype=torch.float64))
    with pytest.raises(ValueError, match=rule + r".*shape \(2,\)"):
        call(a, b, sa, sb, alpha=torch.ones(2))
    with pytest.raises(ValueError, match=rule + r".*shape \(1, 64\)"):  # a vector is 1-D: no guessing
        call(a, b, sa, sb, alpha=torch.ones(1, 64))
    with pytest.raises(ValueError, match=r"^alpha must be contiguous"):
        call(a, b, sa, sb, alpha=torch.ones(128)[::2])
    with pytest.raises(TypeError, match=r"^alpha must be None or a float32 tensor"):
        call(a, b, sa, sb, alpha=2.0)


def test_tensors_on_different_devices():
    # 'meta' stands in for a second device on a GPU-less machine; the H200 test covers CPU/CUDA.
    a, b, sa, sb = args()
    with pytest.raises(ValueError, match=r"^b is on meta but a is on cpu: all tensors must be on one device"):
        call(a, b.to("meta"), sa, sb)
    with pytest.raises(ValueError, match=r"^alpha is on meta but a is on cpu"):
        call(a, b, sa, sb, alpha=torch.ones((), device="meta"))


def test_pointer_alignment_rule():
    storage = torch.zeros(128 * 64 + 1, dtype=torch.uint8)
    misaligned = storage[1:].view(128, 64)
    with pytest.raises(ValueError, match=r"^a must start at a 16-byte aligned address"):
        _checks.check_pointer_alignment({"a": misaligned})


def test_unsupported_gpu_message(monkeypatch):
    """The message for a GPU the wheel has no kernel for, with an A100's answers patched in."""
    from nvfp4_gemm import ops

    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index=None: (8, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=None: "NVIDIA A100-SXM4-80GB")
    with pytest.raises(nvfp4_gemm.UnsupportedDeviceError) as info:
        ops._check_device_supported(0)
    message = str(info.value)
    assert "NVIDIA A100-SXM4-80GB (compute capability 8.0) on cuda:0" in message
    for arch in nvfp4_gemm.compiled_architectures():
        assert arch in message


def test_remembered_signatures_still_check_every_tensor():
    """A signature validated once skips the shape rules next time, never contiguity or devices."""
    a, b, sa, sb = args()
    call(a, b, sa, sb)  # valid: its signature is remembered
    wide = torch.zeros(128, 128, dtype=torch.uint8)
    with pytest.raises(ValueError, match=r"^a must be contiguous"):
        call(wide[:, :64], b, sa, sb)
    with pytest.raises(ValueError, match=r"^b_scale is on meta but a is on cpu"):
        call(a, b, sa, sb.to("meta"))
