"""The GPU MODE entry point and the leaderboard's timing method (nvfp4_gemm.harness) on the CPU:
`custom_kernel` on the harness's tuple, the tuple's layout, the statistics and stopping rule, and
`python -m nvfp4_gemm gpumode` without a GPU. The timing itself runs in tests/test_gpu.py."""

import math

import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import formats
from nvfp4_gemm.__main__ import main
from nvfp4_gemm.harness import generate_input, harness_stats, should_stop
from nvfp4_gemm.ops import unsupported_reason


def test_custom_kernel_is_the_adapter_under_the_submission_name():
    from nvfp4_gemm.gpumode import custom_kernel

    assert custom_kernel is nvfp4_gemm.gpumode.gemm
    assert "custom_kernel" in nvfp4_gemm.gpumode.__all__


@pytest.mark.parametrize("l", [1, 3])
def test_custom_kernel_computes_the_harness_tuple_in_place(l):
    data, ops = generate_input(128, 72, 352, l, seed=21)
    a, b, sfa, sfb, sfa_permuted, sfb_permuted, c = data
    # the harness's layouts: L-last views of L-first buffers, c poisoned
    assert a.shape == (128, 176, l) and b.shape == (72, 176, l) and c.shape == (128, 72, l)
    assert a.dtype == torch.float4_e2m1fn_x2 and c.dtype == torch.float16 and torch.isnan(c).all()
    assert sfa_permuted.shape == (32, 4, 1, 4, 6, l)  # K/16 = 22 scale columns padded to 24
    assert sfa.shape == (128, 22, l) and sfb.shape == (72, 22, l)
    assert torch.equal(sfa_permuted.permute(5, 2, 4, 0, 1, 3).reshape(-1).view(torch.uint8), ops.a_scale.view(torch.uint8))
    result = nvfp4_gemm.gpumode.custom_kernel(data)
    assert result is c
    want = formats.reference_gemm(ops.a, ops.b, ops.a_scale, ops.b_scale)  # (L, M, N)
    assert torch.equal(result.permute(2, 0, 1), want)


def test_inputs_of_other_seeds_differ():
    first, _ = generate_input(128, 64, 256, 1, seed=1)
    second, _ = generate_input(128, 64, 256, 1, seed=43)
    assert not torch.equal(first[0].view(torch.uint8), second[0].view(torch.uint8))


def test_harness_statistics():
    stats = harness_stats([1.0, 2.0, 3.0])
    assert stats["mean_us"] == 2.0 and stats["std_us"] == 1.0
    assert math.isclose(stats["err_us"], 1 / math.sqrt(3))
    assert (stats["best_us"], stats["worst_us"]) == (1.0, 3.0)


def test_stopping_rule_is_the_leaderboards():
    steady = [5.0, 5.0, 5.0]
    assert not should_stop(steady[:2], elapsed_s=1.0, max_seconds=10)  # fewer than 3 runs
    assert not should_stop(steady, elapsed_s=0.05, max_seconds=10)  # under 100 ms
    assert should_stop(steady, elapsed_s=0.2, max_seconds=10)  # standard error 0 < 0.1 % of the mean
    noisy = [4.0, 6.0, 5.0, 7.0]
    assert not should_stop(noisy, elapsed_s=0.2, max_seconds=10)
    assert should_stop(noisy, elapsed_s=0.2, max_seconds=20e-6)  # 4 runs of ~5.5 us exceed 20 us measured
    assert should_stop(noisy, elapsed_s=121.0, max_seconds=10)  # two minutes of wall time


def test_gpumode_command_without_a_gpu_says_so(capsys):
    if unsupported_reason() is None:
        pytest.skip("a supported GPU is present: the command would time it")
    assert main(["gpumode"]) == 2
    captured = capsys.readouterr()
    assert "gpumode timing needs a GPU this wheel has kernels for; nothing was timed" in captured.err
    assert "no CUDA GPU visible" in captured.out or "no kernel for" in captured.out
    assert "custom_kernel on a 128x256x512 harness tuple on cpu: PASS" in captured.out


@pytest.mark.parametrize("option,value", [("--inputs", "0"), ("--inputs", "many"), ("--max-seconds", "-1")])
def test_gpumode_command_rejects_bad_numbers(option, value, capsys):
    with pytest.raises(SystemExit) as info:
        main(["gpumode", option, value])
    assert info.value.code == 2
    assert f"argument {option}: must be" in capsys.readouterr().err
