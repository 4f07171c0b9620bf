"""The sm120 family's place in the descriptors and its selection model (no GPU, no compile)."""

import dataclasses
import math
import random

import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import families, ops, resolver, sm120_model, sm120_rules
from nvfp4_gemm.configs import OUT_DTYPES, shape_rule_violation

ROWS = sm120_rules.load_configs()


def test_the_family_runs_on_12_0_and_12_1_from_one_family_cubin():
    family = families.by_name("sm120")
    assert families.for_sm_major(12) is family
    assert families.arch_capabilities()["sm_120f"] == ((12, 0), (12, 1))
    assert "120f" in families.supported_archs()
    assert not family.per_column_alpha
    assert resolver.candidates(12) == ROWS and len(ROWS) == 5


def test_a_wheel_with_120f_names_12_0_and_12_1(monkeypatch):
    """UnsupportedDeviceError lists what the wheel runs on; a 12.x GPU is supported once it carries 120f."""
    monkeypatch.setattr(ops, "compiled_architectures", lambda: ["sm_100f", "sm_90a", "sm_120f"])
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=None: "NVIDIA A100-SXM4-80GB")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index=None: (8, 0))
    with pytest.raises(nvfp4_gemm.UnsupportedDeviceError, match=r"sm_120f, which runs on compute capability 9.0, "
                       r"10.0, 10.3, 12.0, 12.1"):
        ops._check_device_supported(0)
    for capability in ((12, 0), (12, 1)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index=None, c=capability: c)
        assert ops._capability_reason(0) is None
    monkeypatch.setattr(ops, "compiled_architectures", lambda: ["sm_100f", "sm_90a"])
    with pytest.raises(nvfp4_gemm.UnsupportedDeviceError, match=r"compute capability 12\.1\) on cuda:0"):
        ops._check_device_supported(0)


def test_the_model_counts_the_stages_the_compiled_kernels_have():
    for row in ROWS:
        for dtype in OUT_DTYPES:
            assert sm120_model.stages_on(row, dtype) == sm120_rules.pipeline_stages(row.tile, dtype) >= 2


def test_a_config_that_does_not_fit_is_never_chosen(monkeypatch):
    """On a machine with less shared memory the deep-K and tall tiles lose their second stage: the
    model predicts them infinitely slow and ranks them last, whatever the shape."""
    small = dataclasses.replace(sm120_model.RTX_5090, smem_bytes=60000)
    fits = {row.name for row in ROWS if all(sm120_model.stages_on(row, d, small) >= 2 for d in OUT_DTYPES)}
    assert fits and fits != {row.name for row in ROWS}
    rng = random.Random(120)
    for _ in range(200):
        m, n, k = rng.choice([1, 16, 128, 1000, 4096]), 8 * rng.randint(1, 2000), 32 * rng.randint(1, 600)
        dtype = rng.choice(OUT_DTYPES)
        ranking = sm120_model.rank(ROWS, m, n, k, 1, dtype, small)
        assert ranking[0].config.name in fits and math.isfinite(ranking[0].us)
        for p in ranking:
            assert math.isinf(p.us) == (sm120_model.stages_on(p.config, dtype, small) < 2)
    monkeypatch.setattr(sm120_model, "for_device", lambda sm_count: small)
    with pytest.raises(ValueError, match="no sm120 config fits in 60000 bytes"):
        sm120_model.pick(tuple(row for row in ROWS if row.name not in fits), 1, 4096, 4096, 1, "float16", 170)


def test_resolutions_on_a_12x_gpu_are_sm120_rows_within_their_rules():
    rng = random.Random(12)
    for _ in range(300):
        m, n, k, l = rng.randint(1, 5000), 4 * rng.randint(1, 4000), 32 * rng.randint(1, 700), rng.randint(1, 3)
        dtype = rng.choice(OUT_DTYPES)
        if shape_rule_violation(m, n, k, l, dtype):
            continue
        resolution = resolver._resolve(m, n, k, l, dtype, 12, rng.choice([48, 170, 188]), None)
        config = resolution.config
        assert config.family == "sm120" and config.supports(m, n, k, l, dtype) is None
        assert config.split_violation(resolution.split_k, k) is None
        grid = sm120_model.launch_grid(config, m, n, l, resolution.split_k)
        assert sorted(grid[:2]) == sorted((-(-m // config.tile[0]), -(-n // config.tile[1])))
        assert grid[2] == l * (resolution.split_k if config.takes_split_k else 1)


def test_decode_on_fewer_tiles_than_sms_spreads_k():
    """N = 7168 is 56 tiles of 128 on 170 SMs: at M = 1 the model splits K (stream-K row), and a
    grid that fills the GPU (N = 28672: 224 tiles) runs data-parallel."""
    config, why = sm120_model.pick(ROWS, 1, 7168, 16384, 1, "bfloat16", 170)
    assert config.scheduler == "stream_k" and "RTX 5090 model (170 SMs" in why
    assert sm120_model.split_for(config, 1, 7168, 16384, 1, "bfloat16", 170)[0] > 1
    assert sm120_model.split_for(config, 1, 28672, 16384, 1, "bfloat16", 170)[0] == 1


def test_model_command_prints_every_sm120_row(capsys):
    from nvfp4_gemm.tools.cli import main

    assert main(["model", "--arch", "sm120"]) == 0
    out = capsys.readouterr().out
    assert "RTX 5090 model, 170 SMs" in out
    for row in ROWS:
        assert f"| {row.name} |" in out
    assert main(["model", "--arch", "sm120", "--sm-count", "48"]) == 0
    assert "48 SMs" in capsys.readouterr().out
