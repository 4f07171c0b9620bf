"""pytest-benchmark suite for nvfp4_gemm. Without a GPU the wheel has kernels for, every benchmark
skips with the reason, and `pytest benchmarks` exits 0."""

import pytest

from nvfp4_gemm.ops import unsupported_reason


def pytest_collection_modifyitems(config, items):
    reason = unsupported_reason()
    if reason:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=f"benchmarks need a supported GPU: {reason}"))


@pytest.fixture(scope="session")
def ceilings():
    from nvfp4_gemm.bench import measure_ceilings

    return measure_ceilings()
