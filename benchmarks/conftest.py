"""pytest-benchmark suite for nvfp4_gemm. Without a GPU the wheel has kernels for, every benchmark
skips with the reason, and `pytest benchmarks` exits 0.

`--format F` (one of dtypes.GEMM_FORMATS; nvfp4 the default): the GEMM benchmarks time operands of that
format; the baselines run on the operands bench.baseline_format names (NVFP4 ones for every block-scaled
format, the same 16-bit activations for a weight-only format); the quantize benchmarks (the NVFP4 and MX
quantize kernels) are the same for every format. On a GPU whose kernels do not take F the run stops before
collecting, with one line saying what runs it."""

import pytest
import torch

from nvfp4_gemm.dtypes import GEMM_FORMATS
from nvfp4_gemm.ops import unsupported_reason
from nvfp4_gemm.tools.bench import format_unavailable
from nvfp4_gemm.tools.timing import l2_flush_kind

DEFAULT_FORMAT = GEMM_FORMATS[0].name


def pytest_addoption(parser):
    parser.addoption(
        "--format", choices=[f.name for f in GEMM_FORMATS], default=DEFAULT_FORMAT,
        help=f"GEMM format of the timed operands (default {DEFAULT_FORMAT})",
    )


def pytest_configure(config):
    if unsupported_reason() is None:
        missing = format_unavailable(
            config.getoption("--format"), torch.cuda.get_device_capability()[0], torch.cuda.get_device_name()
        )
        if missing:
            raise pytest.UsageError(missing)


def pytest_generate_tests(metafunc):
    # A benchmark of another format carries it in its name, so --benchmark-compare never compares it with
    # a baseline of NVFP4 runs; NVFP4 benchmarks keep the names of the runs recorded before --format.
    chosen = metafunc.config.getoption("--format")
    if chosen != DEFAULT_FORMAT and "gemm_format" in metafunc.fixturenames:
        metafunc.parametrize("gemm_format", [chosen], ids=[chosen])


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_machine_info(config, machine_info):
    # device times after different L2 flushes (nvfp4_gemm.timing) do not compare: the JSON says which ran
    machine_info["nvfp4_gemm_l2_flush"] = l2_flush_kind()


@pytest.fixture(scope="session")
def gemm_format(request):
    """The GEMM format the benchmarks time (`--format`)."""
    return request.config.getoption("--format")


def pytest_collection_modifyitems(config, items):
    reason = unsupported_reason()
    if reason:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=f"benchmarks need a supported GPU: {reason}"))


@pytest.fixture(scope="session")
def ceilings():
    from nvfp4_gemm.bench import measure_ceilings

    return measure_ceilings()
