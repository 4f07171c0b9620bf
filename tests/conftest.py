import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import _C


def sm100_kernels():
    """Registry entries for the Blackwell family, or skip (a build without sm_100 archs)."""
    entries = [e for e in _C.kernels() if e[2] == 10]
    if not entries:
        pytest.skip(f"this build carries no sm_100-family kernels (archs: {nvfp4_gemm.compiled_architectures()})")
    return entries


def cuda_device_or_skip():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU; none is visible")
    return torch.device("cuda")


def hopper_or_skip():
    """The Hopper GPU the sm90 family's kernels run on, or skip (another GPU, none, or no sm_90a kernels)."""
    device = cuda_device_or_skip()
    if torch.cuda.get_device_capability(device)[0] != 9:
        pytest.skip(f"{torch.cuda.get_device_name(device)}: these kernels are the sm90 family's")
    if (9, 0) not in nvfp4_gemm.supported_capabilities():
        pytest.skip("this wheel carries no sm_90a kernels")
    return device


def check_exact(out, ops, label):
    """`out` against the exact reference of `ops` within the tolerance of FP32 accumulation over K."""
    from nvfp4_gemm.testing import check_against_reference, fp32_roundings

    passed, summary = check_against_reference(out.cpu(), ops, roundings=fp32_roundings(ops.b.shape[-1] * 2))
    assert passed, f"{label}: {summary}"


def op_raises(error: type, match: str):
    """pytest.raises for a rule broken in a CUDA call of the op: the rule's own type from the op's Python
    kernels; from its C++ kernels (_C.HAS_TORCH_OP) the dispatcher's RuntimeError, carrying that type's
    name and the same message."""
    if _C.HAS_TORCH_OP:
        return pytest.raises(RuntimeError, match=rf"^{error.__name__}: {match}")
    return pytest.raises(error, match=rf"^{match}")


def poisoned(shape, dtype, device="cpu"):
    """An output buffer full of NaN, so an element the kernel never writes cannot pass."""
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


@pytest.fixture
def float8_bitwise_allclose(monkeypatch):
    """opcheck's schema test compares tensors before/after the call with torch.allclose, which CPU
    torch does not implement for float8 (NotImplementedError "mul_cpu_reduced_float"). Compare
    float8 tensors bit for bit instead: stricter than allclose, and everything else is unchanged."""
    real_allclose = torch.allclose

    def allclose(lhs, rhs, *args, **kwargs):
        if lhs.dtype in (torch.float8_e4m3fn, torch.float8_e8m0fnu):
            return torch.equal(lhs.view(torch.uint8), rhs.view(torch.uint8))
        return real_allclose(lhs, rhs, *args, **kwargs)

    monkeypatch.setattr(torch, "allclose", allclose)
