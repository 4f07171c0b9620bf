"""The resolver: a valid config for every valid shape, explained."""

import pytest

from nvfp4_gemm.configs import load_table
import torch

import nvfp4_gemm
from nvfp4_gemm import sm90_model
from nvfp4_gemm.configs import OUT_DTYPES, shape_rule_violation


def test_resolves_ranked_shapes_for_the_b200_model():
    for m, n, k in [(128, 7168, 16384), (128, 4096, 7168), (128, 7168, 2048)]:
        config = nvfp4_gemm.resolve(m, n, k)
        assert config.family == "sm100"
        assert config.supports(m, n, k, 1, "float16") is None


def test_explain_says_why():
    resolution = nvfp4_gemm.resolve(128, 7168, 2048, explain=True)
    assert resolution.config.name in resolution.reason
    assert "M=128 N=7168 K=2048 L=1 float16" in resolution.reason


def test_log_config_prints_once_per_shape(monkeypatch, capsys):
    monkeypatch.setenv("NVFP4_GEMM_LOG_CONFIG", "1")
    for _ in range(3):
        nvfp4_gemm.resolve(256, 1024, 512, 2, torch.bfloat16)
    lines = [l for l in capsys.readouterr().out.splitlines() if "[nvfp4_gemm]" in l]
    assert len(lines) == 1 and "M=256 N=1024 K=512 L=2 bfloat16" in lines[0]


def random_problems(count, seed):
    """(m, n, k, l, out dtype): any M, N a multiple of 4 (so some break the fp16 rule), K of 32."""
    gen = torch.Generator().manual_seed(seed)
    for _ in range(count):
        yield (
            int(torch.randint(1, 20000, (), generator=gen)),
            4 * int(torch.randint(1, 5000, (), generator=gen)),
            32 * int(torch.randint(1, 600, (), generator=gen)),
            int(torch.randint(1, 9, (), generator=gen)),
            OUT_DTYPES[int(torch.randint(0, 3, (), generator=gen))],
        )


def test_random_valid_shapes_always_get_a_config_that_supports_them():
    for m, n, k, l, dtype in random_problems(500, seed=0):
        if shape_rule_violation(m, n, k, l, dtype):
            with pytest.raises(ValueError, match="no config can run"):
                nvfp4_gemm.resolve(m, n, k, l, getattr(torch, dtype))
            continue
        resolution = nvfp4_gemm.resolve(m, n, k, l, getattr(torch, dtype), explain=True)
        config = resolution.config
        assert config.family == "sm100" and config.supports(m, n, k, l, dtype) is None
        assert 1 <= resolution.split_k <= config.max_split_k(k)
        assert config.name in resolution.reason and "B200 model" in resolution.reason
        assert config.takes_split_k or resolution.split_k == 1


def test_random_valid_shapes_on_hopper_get_a_config_and_a_valid_split():
    from nvfp4_gemm import resolver

    for m, n, k, l, dtype in random_problems(300, seed=1):
        if shape_rule_violation(m, n, k, l, dtype):
            continue
        resolution = resolver._resolve(m, n, k, l, dtype, 9, 132, None)
        assert resolution.config.family == "sm90" and resolution.config.supports(m, n, k, l, dtype) is None
        assert 1 <= resolution.split_k <= resolution.config.max_split_k(k)


def test_unknown_family_is_a_clear_error():
    from nvfp4_gemm import resolver

    with pytest.raises(nvfp4_gemm.UnsupportedDeviceError, match="no kernel family for compute capability 8.x"):
        resolver._resolve(128, 128, 128, 1, "float16", 8, 108, None)


def hopper_resolution(m, n, k, l=1):
    from nvfp4_gemm import resolver

    return resolver._resolve(m, n, k, l, "float16", 9, 132, None)


@pytest.mark.parametrize("m,n,k", [(17, 4096, 4096), (128, 7168, 16384), (128, 4096, 7168), (2048, 7168, 7168)])
def test_hopper_model_picks_the_wgmma_config_and_split_it_predicts_fastest(m, n, k):
    from nvfp4_gemm import resolver

    resolution = hopper_resolution(m, n, k)
    assert resolution.config.mma == "wgmma" and "sm90 model (132 SMs) predicts" in resolution.reason
    predicted = {
        (c.name, s): sm90_model.wgmma_predict_us(c, m, n, k, 1, s, 132)
        for c in resolver.candidates(9) if c.mma == "wgmma"
        for s in range(1, min(16, c.max_split_k(k)) + 1)
    }
    assert predicted[(resolution.config.name, resolution.split_k)] == min(predicted.values())


def test_hopper_model_counts_waves():
    config = load_table().by_name("sm90_wgmma_128x128x128_prepass_splitk")
    # 56 tiles: split 2 is one wave of 112 CTAs, split 3 (168 CTAs) two waves of a third of the stages each
    one, two, three = (sm90_model.wgmma_predict_us(config, 128, 7168, 16384, 1, s, 132) for s in (1, 2, 3))
    assert two < one and two < three
    # doubling K doubles the per-stage term
    fixed, per_stage = sm90_model.WGMMA_COST[(128, 128)]
    assert sm90_model.wgmma_predict_us(config, 128, 7168, 256, 1, 1, 132) == pytest.approx(fixed + 2 * per_stage)


@pytest.mark.parametrize("m", [1, 7, 16])
def test_hopper_decode_takes_the_direct_kernel(m):
    resolution = hopper_resolution(m, 7168, 7168)
    assert resolution.config.mma == "direct" and "direct decode kernel" in resolution.reason
    # 56 tiles of 128 x 16, 2 CTAs per SM on 132 SMs -> 264 // 56 = 4 splits (the measured best)
    assert resolution.split_k == 4


def test_hopper_direct_split_model():
    # 17 x 7168 x 7168 is not decode: the wgmma configs take it
    assert hopper_resolution(17, 7168, 7168).config.mma == "wgmma"
    # K = 384 has 3 chunks of 128: no split (each split needs >= 4 chunks)
    assert hopper_resolution(16, 7168, 384).split_k == 1
    # enough tiles to fill the GPU's 264 CTA slots: no split
    assert hopper_resolution(16, 40960, 7168).split_k == 1


def test_pinned_config_is_checked():
    from nvfp4_gemm import resolver

    with pytest.raises(ValueError, match=r"is a sm100 kernel \(compute capability 10.x\) and this GPU has compute capability 9.x"):
        resolver._resolve(128, 128, 128, 1, "float16", 9, 132, "sm100_1sm_128x128x256_c1x1")
    pinned = resolver._resolve(128, 256, 1024, 1, "float16", 9, 132, "sm90_direct_16x128x128_splitk")
    assert pinned.config.name == "sm90_direct_16x128x128_splitk" and "pinned" in pinned.reason
    # a pinned stream-K config still gets the model's split count for it
    pinned = resolver._resolve(128, 256, 16384, 1, "float16", 10, 148, "sm100_1sm_128x128x256_c1x1_streamk")
    assert "pinned" in pinned.reason and "(B200 model's best for this config)" in pinned.reason
    assert pinned.split_k > 1  # two tiles, 64 K tiles: splitting is the point


# --- alpha per output column (fused projections) ------------------------------------------------


@pytest.mark.parametrize("m,n,k", [(1, 6144, 4096), (16, 6144, 4096), (64, 28672, 4096), (512, 6144, 4096), (4096, 28672, 8192)])
def test_a_vector_alpha_runs_on_the_per_column_rows_only(m, n, k):
    """Decode and prefill shapes of fused q/k/v and gate/up projections: a (N,) alpha resolves to a row marked
    per_column_alpha (sm100), a single alpha never does; on Hopper every row takes both."""
    vector = nvfp4_gemm.resolve(m, n, k, 1, torch.bfloat16, explain=True, alpha_per_column=True)
    assert vector.config.per_column_alpha and vector.config.supports(m, n, k, 1, "bfloat16", True) is None
    assert vector.config.name in vector.reason
    assert 1 <= vector.split_k <= vector.config.max_split_k(k)
    single = nvfp4_gemm.resolve(m, n, k, 1, torch.bfloat16)
    assert not single.per_column_alpha
    hopper = nvfp4_gemm.resolver._resolve(m, n, k, 1, "bfloat16", 9, 132, None, None, (), "nvfp4", True)
    assert hopper.config == nvfp4_gemm.resolver._resolve(m, n, k, 1, "bfloat16", 9, 132, None).config


def test_a_vector_alpha_gets_the_per_column_twin_of_the_one_alpha_choice_where_there_is_one():
    """The B200 model ranks the per-column rows as their one-alpha twins (same tile and schedule): where the
    one-alpha choice has a twin, a vector alpha gets it (the model picks the 2SM tile at decode and prefill)."""
    twins = 0
    for m, n, k in [(1, 6144, 4096), (8, 6144, 4096), (128, 6144, 4096), (4096, 28672, 8192), (16, 1024, 4096)]:
        single = nvfp4_gemm.resolve(m, n, k)
        names = {c.name for c in nvfp4_gemm.candidates(10, alpha_per_column=True)}
        if f"{single.name}_pcalpha" in names:
            assert nvfp4_gemm.resolve(m, n, k, alpha_per_column=True).name == f"{single.name}_pcalpha"
            twins += 1
    assert twins >= 3


def test_random_shapes_resolve_by_their_alpha():
    for m, n, k, l, dtype in random_problems(200, seed=3):
        if shape_rule_violation(m, n, k, l, dtype):
            continue
        for per_column in (False, True):
            config = nvfp4_gemm.resolve(m, n, k, l, getattr(torch, dtype), alpha_per_column=per_column)
            assert config.per_column_alpha == per_column
            assert config.supports(m, n, k, l, dtype, per_column) is None


def test_a_pinned_config_must_take_the_calls_alpha():
    plain, column = "sm100_2sm_256x128x256_c2x1", "sm100_2sm_256x128x256_c2x1_pcalpha"
    with pytest.raises(ValueError, match=rf"config '{plain}' takes one alpha, not one per output column; alpha with "
                                         r"one value per output column runs on the sm90 family, the rows .*"
                                         rf"{column}.* and the CPU"):
        nvfp4_gemm.resolve(256, 1024, 512, config=plain, alpha_per_column=True)
    with pytest.raises(ValueError, match=rf"config '{column}' takes alpha as an \(N,\) vector, one value per output "
                                         r"column; a single alpha \(or none\) runs on the sm100 family's other rows"):
        nvfp4_gemm.resolve(256, 1024, 512, config=column)
    assert nvfp4_gemm.resolve(256, 1024, 512, config=column, alpha_per_column=True).name == column
    # a row of a family whose every kernel takes both
    assert load_table().by_name("sm90_direct_16x128x128_splitk").alpha_violation(True) is None


def test_a_vector_alpha_without_a_row_for_it_is_a_clear_error():
    with pytest.raises(ValueError, match=r"no mxfp4 config of the sm100 family takes this alpha; alpha with one value "
                                         r"per output column runs on"):
        nvfp4_gemm.resolve(128, 1024, 512, alpha_per_column=True, format="mxfp4")
    with pytest.raises(ValueError, match=r"no nvfp4 config of the sm120 family takes this alpha"):
        nvfp4_gemm.resolver._resolve(128, 1024, 512, 1, "float16", 12, 170, None, None, (), "nvfp4", True)
