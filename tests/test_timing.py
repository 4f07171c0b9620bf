"""The benchmarks' L2 flush choice on the CPU: the default, the environment variable, and the refusal of an
unknown kind before any device buffer exists (the flushes themselves: test_gpu.py)."""

import pytest

from nvfp4_gemm.timing import L2_FLUSH_KINDS, l2_flush, l2_flush_kind


def test_the_default_flush_is_the_memset_every_recorded_number_used(monkeypatch):
    monkeypatch.delenv("NVFP4_GEMM_L2_FLUSH", raising=False)
    assert l2_flush_kind() == "dirty"
    assert L2_FLUSH_KINDS == ("dirty", "clean")


@pytest.mark.parametrize("kind", ["dirty", "clean"])
def test_the_environment_picks_the_flush(kind, monkeypatch):
    monkeypatch.setenv("NVFP4_GEMM_L2_FLUSH", kind)
    assert l2_flush_kind() == kind


def test_an_unknown_flush_is_refused_naming_the_variable_and_the_kinds(monkeypatch):
    monkeypatch.setenv("NVFP4_GEMM_L2_FLUSH", "Clean")
    with pytest.raises(ValueError, match=r"NVFP4_GEMM_L2_FLUSH must be one of dirty, clean; got 'Clean'"):
        l2_flush_kind()
    with pytest.raises(ValueError, match=r"NVFP4_GEMM_L2_FLUSH must be one of"):
        l2_flush()  # before allocating its buffer (no CUDA device here)
    monkeypatch.delenv("NVFP4_GEMM_L2_FLUSH")
    with pytest.raises(ValueError, match=r"kind must be one of dirty, clean; got 'warm'"):
        l2_flush("warm")
