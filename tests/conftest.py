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


def poisoned(shape, dtype, device="cpu"):
    """An output buffer full of NaN, so an element the kernel never writes cannot pass."""
    return torch.full(shape, float("nan"), dtype=dtype, device=device)
