"""The sm90 weight-only GEMV (`sm90_gemv_*` rows, csrc/include/nvfp4_gemm/sm90/gemv.cuh): its limits as data
(tokens within the tile, K >= 544, no split-K), why 544 (the FP32 chain against the earned tolerance's
count), the resolver's rule; on a Hopper GPU, exactness against the float64 reference."""

import itertools
import re
from pathlib import Path

import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import families, resolver, sm90_model
from nvfp4_gemm.configs import load_table
from nvfp4_gemm.testing import fp32_roundings, random_operands

from conftest import check_exact, hopper_or_skip, poisoned

GEMV_FORMATS = ("bf16xnvfp4", "fp16xnvfp4", "bf16xmxfp4")
LIMITS = families.by_name("sm90").kind_limits["gemv"]
HEADER = Path(__file__).resolve().parents[1] / "csrc" / "include" / "nvfp4_gemm" / "sm90" / "gemv.cuh"


def gemv_rows(fmt=None):
    return [c for c in load_table().configs if c.mma == "gemv" and (fmt is None or c.format == fmt)]


def gemv_chain(k: int, split: int) -> int:
    """FP32 roundings on one output's path in the GEMV: 32 FFMA per 32-element chunk a lane owns (chunks
    l, l + 32 split, ...: ceil(K / (1024 split)) of them), 5 shuffle additions, log2(split) in the group's warp
    sum, 1 for alpha."""
    return 32 * -(-k // (1024 * split)) + 5 + (split.bit_length() - 1) + 1


# --- on the CPU ----------------------------------------------------------------------------------


def test_min_k_is_where_the_chain_fits_the_earned_count():
    """From K = 544 on (every multiple of 32 up to 2^20, every split) the GEMV's chain is within
    `fp32_roundings(K)`, the count every kernel's tolerance is earned with; at 512 it is not for every split.
    The header says the same number."""
    for split in LIMITS.splits:
        fits = [k for k in range(32, 1 << 20, 32) if gemv_chain(k, split) <= fp32_roundings(k)]
        assert fits[0] <= LIMITS.min_k and set(range(LIMITS.min_k, 1 << 20, 32)) <= set(fits), split
    assert any(gemv_chain(512, split) > fp32_roundings(512) for split in LIMITS.splits)
    assert re.search(r"constexpr int kMinK = (\d+);", HEADER.read_text()).group(1) == str(LIMITS.min_k)


def test_launch_grid_is_the_launchers():
    """The GEMV's grid as the launcher makes it (4 warps per CTA, the header's kThreads / 32): the row groups
    over the CTAs, L along z (no split there)."""
    assert re.search(r"constexpr int kThreads = (\d+);", HEADER.read_text()).group(1) == str(
        32 * sm90_model.GEMV_WARPS_PER_CTA)
    row = gemv_rows()[0]
    assert [sm90_model.launch_grid(row, 1, 2112, 3, s) for s in (1, 2, 4)] == [(132, 1, 3), (264, 1, 3), (528, 1, 3)]
    assert sm90_model.launch_grid(row, 1, 136, 1, 1) == (9, 1, 1)  # a last CTA with groups past N


def test_a_batch_past_the_grid_limit_is_refused_naming_l():
    from nvfp4_gemm._checks import GemmShape, check_kernel_limits

    row = gemv_rows("bf16xnvfp4")[0]
    shape = GemmShape(m=1, n=8, k=4096, l=70000, batched=True, format=nvfp4_gemm.dtypes.gemm_format("bf16xnvfp4"))
    with pytest.raises(ValueError, match=r"gridDim.z = L exceeds CUDA's limit of 65535; at split_k=4 a call runs at "
                                         r"most L=65535 batches"):
        check_kernel_limits(row, shape, 4)


def test_rows_and_their_limits():
    rows = gemv_rows()
    assert sorted({c.format for c in rows}) == sorted(GEMV_FORMATS)
    assert LIMITS.splits == (1, 2, 4)
    for c in rows:
        assert c.max_split_k(8192) == 4 and c.split_options(8192) == (1, 2, 4) and c.split_options(1536) == (1, 2)
        assert c.max_split_k(1024) == 1 and c.split_options(544) == (1,)
        assert c.supports(c.tile[0], 2112, 7168, 1, "bfloat16") is None
        assert c.supports(c.tile[0] + 1, 2112, 7168, 1, "bfloat16") == (
            f"config {c.name!r} takes at most {c.tile[0]} token{'s' if c.tile[0] > 1 else ''} (M <= its tile M), "
            f"got M={c.tile[0] + 1}"
        )
        assert "needs K >= 544" in c.supports(1, 2112, 512, 1, "bfloat16")
        assert c.split_violation(3, 8192) == f"split_k=3: config {c.name!r} splits K over 1, 2, 4 warps of a CTA"
        assert "into at most 2 parts" in c.split_violation(4, 2048)


def test_a_gemv_row_of_another_format_is_refused():
    from nvfp4_gemm.configs import _check_row

    row = {"name": "sm90_gemv_1x4x1024", "family": "sm90", "tile": [1, 4, 1024], "cluster": [1, 1], "mma": "gemv"}
    with pytest.raises(ValueError, match=r"the sm90 gemv kernel takes the formats .*bf16xnvfp4.*, got 'nvfp4'"):
        _check_row(row, 0)


@pytest.mark.parametrize("fmt", GEMV_FORMATS)
def test_resolver_takes_the_gemv_where_it_was_measured_faster(fmt):
    small_n, small_k = 2112, 7168  # 15.1 M weights
    assert small_n * small_k <= sm90_model.GEMV_MAX_WEIGHTS
    resolution = resolver._resolve(1, small_n, small_k, 1, "bfloat16", 9, 132, None, None, (), fmt)
    assert resolution.config.mma == "gemv" and "weight-only GEMV" in resolution.reason, resolution
    # 528 groups of 4 rows: 4 warps each give 16 warps per SM on 132 SMs, 2 only 8 (< 15)
    assert resolution.split_k == 4
    # the split each measured layer ran fastest with (perf notes, "The weight-only GEMV in the library")
    for n, k, best in ((4096, 4096, 2), (6144, 4096, 2), (8192, 2048, 1), (8192, 1024, 1), (3072, 3072, 2),
                       (1024, 4096, 4)):
        assert resolver._resolve(1, n, k, 1, "bfloat16", 9, 132, None, None, (), fmt).split_k == best, (n, k)
    # a large layer, two tokens, or a K under the chain's bound: the direct kernel
    for m, n, k in ((1, 4096, 8192), (2, small_n, small_k), (1, 4096, 512)):
        resolution = resolver._resolve(m, n, k, 1, "bfloat16", 9, 132, None, None, (), fmt)
        assert resolution.config.mma == "direct", (m, n, k, resolution)
    # L counts: the batched layer's weights are L times the matrix's
    batches = sm90_model.GEMV_MAX_WEIGHTS // (small_n * small_k) + 1
    assert resolver._resolve(1, small_n, small_k, batches, "bfloat16", 9, 132, None, None, (), fmt).config.mma == "direct"


# --- on a Hopper GPU -----------------------------------------------------------------------------


@pytest.mark.parametrize("config", [c.name for c in gemv_rows()])
def test_gemv_is_exact(config):
    """Every token count the row takes, every split it runs, K at its bound, off a multiple of 1024 and of 128
    (lanes without a last chunk), N off a CTA's rows (groups past N), a batch, padding scale bytes that must be
    ignored, every output dtype, a per-column alpha; outputs poisoned first."""
    device = hopper_or_skip()
    row = load_table().by_name(config)
    cases = [(m, 8, 544, None, 0x38, False) for m in range(1, row.tile[0] + 1)]
    cases += [(row.tile[0], 136, 4128, 2, 0x00, False), (1, 264, 800, None, 0x38, True), (1, 72, 2080, None, 0x00, False),
              (row.tile[0], 1032, 8192, None, 0x38, True)]
    for seed, (m, n, k, l, padding, per_column) in enumerate(cases):
        kwargs = dict(format=row.format, with_alpha=True, alpha_per_column=per_column, padding_byte=padding)
        cpu = random_operands(m, n, k, l, seed=300 + seed, **kwargs)
        ops = random_operands(m, n, k, l, seed=300 + seed, device=device, **kwargs)
        shape = (m, n) if l is None else (l, m, n)
        for split, out_dtype in itertools.product(row.split_options(k), (torch.float16, torch.bfloat16, torch.float32)):
            out = poisoned(shape, out_dtype, device)
            nvfp4_gemm.gemm(ops.a, ops.b, None, ops.b_scale, ops.alpha, out=out, config=config, split_k=split)
            check_exact(out, cpu, f"{config} split {split} {(m, n, k, l)} {out_dtype}")
            again = nvfp4_gemm.gemm(ops.a, ops.b, None, ops.b_scale, ops.alpha, out_dtype, config=config, split_k=split)
            assert torch.equal(again, out), f"{config} split {split} {(m, n, k, l)} is not reproducible"


@pytest.mark.parametrize("fmt", GEMV_FORMATS)
def test_gemv_refuses_what_it_cannot_take_before_a_launch(fmt):
    device = hopper_or_skip()
    row = next(c for c in gemv_rows(fmt) if c.tile[0] == 1)
    ops = random_operands(2, 8, 544, seed=9, format=fmt, device=device)
    with pytest.raises(ValueError, match=r"takes at most 1 token \(M <= its tile M\), got M=2"):
        nvfp4_gemm.gemm(ops.a, ops.b, None, ops.b_scale, config=row.name)
    ops = random_operands(1, 8, 512, seed=9, format=fmt, device=device)
    with pytest.raises(ValueError, match=r"needs K >= 544"):
        nvfp4_gemm.gemm(ops.a, ops.b, None, ops.b_scale, config=row.name)
    ops = random_operands(1, 8, 1024, seed=9, format=fmt, device=device)
    with pytest.raises(ValueError, match=r"split_k=2: config .* splits K=1024 into at most 1 parts"):
        nvfp4_gemm.gemm(ops.a, ops.b, None, ops.b_scale, config=row.name, split_k=2)
    ops = random_operands(1, 8, 4096, seed=9, format=fmt, device=device)
    with pytest.raises(ValueError, match=r"split_k=3: config .* splits K over 1, 2, 4 warps of a CTA"):
        nvfp4_gemm.gemm(ops.a, ops.b, None, ops.b_scale, config=row.name, split_k=3)
