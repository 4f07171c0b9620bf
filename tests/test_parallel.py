"""Tensor parallelism: the shards hold exactly the unsharded layer's codes and scales, and two
ranks (gloo on the CPU here; NCCL on two GPUs with torchrun) give the unsharded outputs:
column-parallel bit for bit, row-parallel within the earned tolerance (nvfp4_gemm.parallel_check)."""

import os
import shutil
import subprocess
import sys

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from nvfp4_gemm import formats, parallel_check
from nvfp4_gemm.nn import NVFP4Linear
from nvfp4_gemm.parallel import shard_columns, shard_model, shard_rows


def quantized_layer(in_features, out_features, bias, seed, activations="nvfp4"):
    gen = torch.Generator().manual_seed(seed)
    linear = nn.Linear(in_features, out_features, bias=bias)
    with torch.no_grad():
        # varied magnitudes per row and column: every scale byte range and all 16 codes occur
        linear.weight.copy_(torch.randn(out_features, in_features, generator=gen)
                            * torch.exp(torch.randn(out_features, 1, generator=gen))
                            * torch.exp(torch.randn(1, in_features, generator=gen)))
        if bias:
            linear.bias.copy_(torch.randn(out_features, generator=gen))
    return NVFP4Linear.from_linear(linear.to(torch.bfloat16), activations)


def full_values(layer):
    return formats.dequantize(layer.weight, layer.weight_scale, torch.float64)


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("n, k", [(256, 384), (136, 160), (512, 64)])
def test_column_shards_hold_the_layers_rows(world, n, k):
    layer = quantized_layer(k, n, True, seed=n + k)
    values = full_values(layer)
    assert set(formats.unpack_fp4(layer.weight).unique().tolist()) == set(range(16))
    shards = []
    for rank in range(world):
        if (n // world) % 8:
            with pytest.raises(ValueError, match=r"a column shard of out_features .* out_features \(N\) must"):
                shard_rows(layer, rank, world)
            return
        shards.append(shard_rows(layer, rank, world))
    assert torch.equal(torch.cat([full_values(s) for s in shards]), values)
    assert torch.equal(torch.cat([s.bias for s in shards]), layer.bias)
    for rank, shard in enumerate(shards):
        assert shard.weight_scale.numel() == formats.blocked_scale_numel(n // world, k)
        assert torch.equal(shard.weight_global_scale, layer.weight_global_scale)
        x = torch.randn(5, k, generator=torch.Generator().manual_seed(rank)).to(torch.bfloat16)
        step = n // world
        assert torch.equal(shard(x), layer(x)[:, rank * step : (rank + 1) * step])


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("n, k", [(256, 384), (64, 256), (40, 192)])
def test_row_shards_hold_the_layers_columns(world, n, k):
    layer = quantized_layer(k, n, True, seed=3 * n + k)
    values = full_values(layer)
    if (k // world) % 32:
        with pytest.raises(ValueError, match=r"a row shard of in_features .* in_features \(K\) must"):
            shard_columns(layer, 0, world)
        return
    shards = [shard_columns(layer, rank, world) for rank in range(world)]
    assert torch.equal(torch.cat([full_values(s) for s in shards], dim=1), values)
    for shard in shards:  # the bias is added once, after the all-reduce: every rank keeps it whole
        assert torch.equal(shard.bias, layer.bias) and shard.full_in_features == k


def test_uneven_splits_and_no_process_group_are_errors():
    layer = quantized_layer(96, 24, False, seed=1)
    with pytest.raises(ValueError, match=r"out_features \(N\) = 24 does not split evenly over 5 ranks"):
        shard_rows(layer, 0, 5)
    with pytest.raises(ValueError, match=r"in_features \(K\) = 96 does not split evenly over 5 ranks"):
        shard_columns(layer, 0, 5)
    if not dist.is_initialized():
        with pytest.raises(RuntimeError, match="torch.distributed is not initialized"):
            shard_model(nn.Sequential(layer))


def _gloo_rank(rank, world, init_file, results):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        torch.set_num_threads(1)
        failures = parallel_check.run("cpu")
    finally:
        dist.destroy_process_group()
    results[rank] = failures


@pytest.mark.parametrize("world", [2])
def test_two_ranks_on_gloo_match_the_unsharded_model(world, tmp_path, capfd):
    results = mp.Manager().dict()
    mp.spawn(_gloo_rank, args=(world, str(tmp_path / "rendezvous"), results), nprocs=world, join=True)
    printed = capfd.readouterr().out
    assert "FAIL" not in printed, printed
    assert dict(results) == {rank: 0 for rank in range(world)}
    # every configuration ran: W4A4 dynamic and calibrated, weight-only
    for label in ("activations=nvfp4 (dynamic input scale)", "activations=nvfp4 (static input scale)",
                  "activations=bf16 (weight-only)"):
        assert label in printed, printed


@pytest.mark.gpu
def test_two_gpus_with_torchrun_and_nccl():
    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs 2 CUDA GPUs; {torch.cuda.device_count()} visible")
    torchrun = shutil.which("torchrun")
    command = [torchrun] if torchrun else [sys.executable, "-m", "torch.distributed.run"]
    result = subprocess.run(
        [*command, "--nproc-per-node", "2", "-m", "nvfp4_gemm.parallel_check", "--device", "cuda"],
        capture_output=True, text=True, timeout=600, env=dict(os.environ),
    )
    assert result.returncode == 0 and "all checks passed" in result.stdout, result.stdout + result.stderr
