"""pytest-benchmark suite for nvfp4_gemm. Without a GPU the wheel has kernels for, every benchmark
skips with the reason, and `pytest benchmarks` exits 0."""

import pytest
import torch

import nvfp4_gemm


def _gpu_reason():
    if not torch.cuda.is_available():
        return "no CUDA GPU visible"
    capability = torch.cuda.get_device_capability()
    if capability not in nvfp4_gemm.supported_capabilities():
        return (
            f"{torch.cuda.get_device_name()} (compute capability {capability[0]}.{capability[1]}) has no kernel in "
            f"this wheel ({', '.join(nvfp4_gemm.compiled_architectures())})"
        )
    return None


def pytest_collection_modifyitems(config, items):
    reason = _gpu_reason()
    if reason:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=f"benchmarks need a supported GPU: {reason}"))


@pytest.fixture(scope="session")
def ceilings():
    from nvfp4_gemm.bench import measure_ceilings

    return measure_ceilings()
