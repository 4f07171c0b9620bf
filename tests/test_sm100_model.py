"""The resolver's analytic model of the sm100 family (nvfp4_gemm/sm100_model.py)."""

import dataclasses

import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import _C, sm100_model
from nvfp4_gemm.configs import OUT_DTYPES, SM100_TILE_K, load_table
from nvfp4_gemm.task_shapes import RANKED_SHAPES

SM100 = tuple(c for c in load_table().configs if c.family == "sm100")


def random_shapes(count, seed):
    gen = torch.Generator().manual_seed(seed)
    for _ in range(count):
        yield (
            int(torch.randint(1, 5000, (), generator=gen)),
            8 * int(torch.randint(1, 2000, (), generator=gen)),
            32 * int(torch.randint(1, 700, (), generator=gen)),
            int(torch.randint(1, 5, (), generator=gen)),
        )


@pytest.mark.parametrize("out_dtype", OUT_DTYPES)
@pytest.mark.parametrize("config", SM100, ids=lambda c: c.name)
def test_estimated_stages_equal_the_compiled_kernels(config, out_dtype):
    try:
        compiled = _C.lookup(config.name, out_dtype).pipeline_stages
    except KeyError:
        pytest.skip(f"this build carries no {config.name} kernels")
    assert compiled > 0
    estimate = sm100_model.estimated_stages(config, out_dtype)
    if config.tile[1] < 256:
        assert estimate == compiled
    else:  # CUTLASS's hand-tuned epilogue buffers for N = 256 are larger than the estimate's
        assert estimate >= compiled
    assert sm100_model.pipeline_stages(config, out_dtype) == compiled  # the model prefers the kernel's


def test_predictions_respect_their_floors():
    for m, n, k, l in random_shapes(200, seed=1):
        for config in SM100:
            for split in config.split_options(k):
                p = sm100_model.predict(config, m, n, k, l, "float16", split)
                t = p.terms
                assert p.us >= t["launch"] + t["fill"] + t["dram_floor"] - 1e-9
                assert p.us >= t["launch"] + t["fill"] + t["k_loop"] - 1e-9
                assert min(t["k_loop"], t["dram_floor"], t["reduction"], t["epilogue"]) >= 0
                # nothing split, nothing to reduce
                if not config.takes_split_k or (split == 1 and config.scheduler == "data_parallel"):
                    assert t["reduction"] == 0


def test_more_sms_are_never_slower():
    bigger = dataclasses.replace(sm100_model.B200, sm_count=2 * sm100_model.B200.sm_count)
    for m, n, k, l in random_shapes(100, seed=2):
        # a data-parallel config only gains from more SMs at the same DRAM bandwidth ...
        for config in (c for c in SM100 if not c.takes_split_k):
            base = sm100_model.predict(config, m, n, k, l, "float16").us
            assert sm100_model.predict(config, m, n, k, l, "float16", 1, bigger).us <= base + 1e-9
        # ... while stream-K may split a tail that was a whole wave before (partials cost DRAM
        # traffic), so only the best choice is monotone
        best = sm100_model.rank(SM100, m, n, k, l, "float16")[0].us
        assert sm100_model.rank(SM100, m, n, k, l, "float16", bigger)[0].us <= best + 1e-9


def test_stream_k_over_exact_waves_needs_no_reduction():
    config = load_table().by_name("sm100_1sm_128x128x256_c1x1_streamk")
    workers = sm100_model.B200.sm_count
    exact = sm100_model.predict(config, 128, 128 * workers, 4096, 1, "float16", 1)
    assert exact.terms["reduction"] == 0 and "full waves" in exact.terms["work"]
    tail = sm100_model.predict(config, 128, 128 * (workers + 10), 4096, 1, "float16", 1)
    assert tail.terms["reduction"] > 0 and "stream-K" in tail.terms["work"]


def test_one_tile_with_a_long_k_loop_is_split():
    """A single output tile and K = 64k: a data-parallel kernel would use one SM of 148."""
    best = sm100_model.rank(SM100, 64, 128, 65536, 1, "float16")[0]
    assert best.config.takes_split_k and (best.split_k > 1 or best.config.scheduler == "stream_k")
    assert best.terms["reduction"] > 0


def test_swap_ab_is_the_kernel_view():
    swap = load_table().by_name("sm100_1sm_128x64x256_c1x1_swapab_streamk")
    plain = load_table().by_name("sm100_1sm_128x128x256_c1x1_streamk")
    # 16 tokens x 7168 weights: swapped, 56 tiles of 128 weight rows x 64 tokens
    assert "56 tiles" in sm100_model.predict(swap, 16, 7168, 7168, 1, "float16", 2).terms["work"]
    assert "56 tiles" in sm100_model.predict(plain, 16, 7168, 7168, 1, "float16", 2).terms["work"]
    assert "112 tiles" in sm100_model.predict(swap, 65, 7168, 7168, 1, "float16", 2).terms["work"]


def test_resolver_explains_with_the_model():
    resolution = nvfp4_gemm.resolve(128, 7168, 16384, explain=True)
    assert "B200 model (148 SMs) predicts" in resolution.reason and " us (" in resolution.reason
    assert "runner-up" in resolution.reason
    assert 1 <= resolution.split_k <= resolution.config.max_split_k(16384)
    assert SM100_TILE_K == resolution.config.tile[2]


def test_device_sm_count_replaces_the_b200_count():
    assert sm100_model.for_device(148) is sm100_model.B200
    assert sm100_model.for_device(160).sm_count == 160


def test_docs_hold_the_models_current_predictions():
    from pathlib import Path

    from conftest import sm100_kernels

    sm100_kernels()  # the page holds the default build's predictions (compiled pipeline depths)
    doc = Path(__file__).resolve().parents[1] / "docs" / "b200_model.md"
    if not doc.is_file():
        pytest.skip("source tree not present (installed wheel only)")
    text = doc.read_text()
    begin, end = "<!-- model-tables:begin -->\n", "<!-- model-tables:end -->"
    in_doc = text[text.index(begin) + len(begin) : text.index(end)]
    weights = tuple(dict.fromkeys((n, k) for _, n, k, _ in RANKED_SHAPES))
    # regenerate with `python -m nvfp4_gemm model` after changing the model or the table
    assert in_doc.strip() == sm100_model.report(nvfp4_gemm.candidates(10), weights).strip()


@pytest.mark.parametrize(
    "name,stages",
    [
        # pipeline_stages of the kernels nvcc 13.0 compiled from this table's MX rows (CUTLASS 4.2,
        # 2026-11-23), per out dtype float16, bfloat16, float32: the MXFP4 scales are half NVFP4's, the
        # mxf8f6f4 kind keeps FP4 unpacked (a byte per value) next to FP8
        ("sm100_1sm_128x128x256_c1x1_mxfp4", (6, 6, 5)),
        ("sm100_1sm_128x128x256_c1x1_mxfp8xmxfp4", (3, 3, 2)),
    ],
)
def test_estimated_stages_of_the_mx_rows(name, stages):
    config = nvfp4_gemm.resolver.pinned_config(name)
    assert tuple(sm100_model.estimated_stages(config, d) for d in OUT_DTYPES) == stages
