"""The sm90 (Hopper) family's selection model: which config runs a shape and with how many K splits.

The resolver reaches it through the family descriptor (families.py, `model`): `pick` chooses among the
family's configs that accept the shape, `split_for` chooses the split-K count of a config. Decode
(M <= 16 tokens) runs the direct kernel, which fills the SMs' CTA slots with splits (one token on a small
layer: the weight-only GEMV, GEMV_MAX_WEIGHTS); from M = 17 up the wgmma configs are ranked by a cost model
fitted to measured timings. Where the choices and constants
come from (the measurements, their dates, how close the picks are to the measured best):
docs/perf_notes.md, "Hopper v5", "Hopper v6" ("The resolver's sm90 model") and "Hopper v9" (the cluster
split-K route and the constants below), "The weight-only GEMV in the library" (the GEMV's rule).
"""

from __future__ import annotations

from .configs import Config

__all__ = [
    "GEMV_MAX_WEIGHTS", "GEMV_WARPS_PER_CTA", "GEMV_WARPS_PER_SM", "grid_y_rows", "launch_grid", "pick", "split_for",
    "wgmma_cluster_route", "wgmma_terms", "wgmma_predict_us",
]

# direct decode kernel (csrc/include/nvfp4_gemm/sm90/direct_gemm.cuh): __launch_bounds__(256, 2), 64 KB of
# shared memory -> 2 resident CTAs per SM; a split should fill its loads in flight, so it gets at least 4 K
# chunks of 128. The split fills the SMs' CTA slots.
DIRECT_CTAS_PER_SM = 2
DIRECT_MIN_CHUNKS_PER_SPLIT = 4

# weight-only GEMV (gemv.cuh, one token): taken over the direct kernel when the layer holds at most
# GEMV_MAX_WEIGHTS weights (N x K x L), where the direct kernel's fixed costs (token staging, cross-CTA split-K)
# outweigh what its tensor cores save. H200 device times, 20 layers at M = 1 (2026-11-28, docs/h200-2026-11-28d/
# gemv/): the GEMV is 1.05-1.50x the direct kernel on the 13 layers of 2.1-26.2 M weights (a tie, 0.99x, on
# 8192 x 2048), 0.83-0.93x on the 7 of 33.6 M and more. Its split (warps per 4-row group) is the smallest
# that gives the grid GEMV_WARPS_PER_SM warps per SM (within K's bound): the measured best split on each of
# those 13 layers.
GEMV_MAX_WEIGHTS = 30_000_000
GEMV_WARPS_PER_SM = 15

# wgmma kernel (wgmma_gemm.cuh, one CTA per SM): a cost model fitted by benchmarks/fit_sm90_model.py to
# every candidate a Hopper sweep timed (benchmarks/sweep_hopper.py, benchmarks/weight_only_bench.py; the
# constants below: 624 timings of NVFP4 and bf16 x NVFP4 at M = 64..2048 on the H200, 2026-11-25,
# docs/h200-2026-11-25c/, whose picks are within 1.9 % of the measured best on each of their 46 shapes):
#   us = fixed[tile] + per_stage[tile] * waves * ceil(stages / split)
#        + (global split) * (split_fixed + split_reduction * (split - 1) * M * N / 1e6)
#        + (cluster split) * cluster_split_fixed,
# waves = ceil(tiles * split / SMs). fixed: the prepass, launch, pipeline fill and epilogue; per_stage: one
# 128-K stage of one CTA; split_fixed: the global split-K epilogue's partial tile round trip and counter;
# split_reduction: the partials the last split reads back; cluster_split_fixed: the split-K epilogue
# inside a thread-block cluster (two cluster barriers and distributed shared memory reads), which the
# launcher takes for splits of 2..8 where the grid's clusters are all resident (wgmma_cluster_route).
WGMMA_COST = {
    (64, 128): (5.33, 0.6183),
    (64, 256): (6.73, 1.0227),
    (128, 128): (5.57, 0.8392),
    (128, 256): (9.88, 1.4959),
    (256, 128): (8.35, 1.4),
}
SPLIT_FIXED_US = 7.46
SPLIT_REDUCTION_US_PER_MELEMENT = 5.91
CLUSTER_SPLIT_FIXED_US = 4.48
# The wgmma split counts the model weighs (each also within the config's own bound, Config.max_split_k).
MAX_SPLIT = 16

# The cluster split-K route (csrc/include/nvfp4_gemm/sm90/launcher.cuh, cluster_split): splits of 2..8
# (the portable cluster size) where every cluster of the grid is resident at once. Resident wgmma CTAs
# (one per SM) as clusters of each size, cudaOccupancyMaxActiveClusters x size on the 132-SM H100 and H200
# (benchmarks/probes/cluster_occupancy.cu); clusters stay inside a GPC, so a GPU of another SM count is
# taken as 8 GPCs of equal size.
MAX_CLUSTER_SPLIT = 8
WGMMA_CLUSTER_CTAS_132 = {2: 132, 3: 117, 4: 120, 5: 110, 6: 102, 7: 105, 8: 120}


def wgmma_cluster_capacity(split_k: int, sm_count: int) -> int:
    """wgmma CTAs resident at once as thread-block clusters of `split_k` (2..8)."""
    if sm_count == 132:
        return WGMMA_CLUSTER_CTAS_132[split_k]
    return 8 * (sm_count // 8 // split_k) * split_k


def wgmma_cluster_route(tiles: int, split_k: int, sm_count: int) -> bool:
    """Whether the launcher reduces this grid's splits inside thread-block clusters."""
    return 2 <= split_k <= MAX_CLUSTER_SPLIT and tiles * split_k <= wgmma_cluster_capacity(split_k, sm_count)


# The GEMV's warps per CTA (gemv.cuh, gemv::kWarps): a CTA holds GEMV_WARPS_PER_CTA / split groups of rows.
GEMV_WARPS_PER_CTA = 4


def launch_grid(config: Config, m: int, n: int, l: int, split_k: int) -> tuple[int, int, int]:
    """The grid the launcher (csrc/include/nvfp4_gemm/sm90/launcher.cuh) launches: (weight tiles, token
    tiles, L * split_k); the GEMV's (CTAs of GEMV_WARPS_PER_CTA / split_k row groups, 1, L): its split stays
    inside a CTA. (The token prepass runs a 1-D grid of L * M * K / 8192 CTAs: past 2^31 - 1 only
    for fp16 tokens of > 32 TB.)"""
    if config.mma == "gemv":
        rows_per_cta = config.tile[1] * (GEMV_WARPS_PER_CTA // split_k)
        return -(-n // rows_per_cta), 1, l
    return -(-n // config.tile[1]), -(-m // config.tile[0]), l * split_k


def grid_y_rows(config: Config) -> tuple[str, int]:
    """The user's dimension along gridDim.y and its rows per CTA: the tokens, M."""
    return "M", config.tile[0]


def _direct_split(config: Config, m: int, n: int, k: int, l: int, sm_count: int) -> tuple[int, str]:
    tiles = -(-n // config.tile[1]) * -(-m // config.tile[0]) * l
    chunks = -(-k // config.tile[2])
    slots = DIRECT_CTAS_PER_SM * sm_count
    split_k = max(1, min(chunks // DIRECT_MIN_CHUNKS_PER_SPLIT, slots // tiles))
    return split_k, (
        f"split_k={split_k}: {tiles} output tiles on {sm_count} SMs x {DIRECT_CTAS_PER_SM} CTAs, "
        f"{chunks} K chunks (>= {DIRECT_MIN_CHUNKS_PER_SPLIT} per split)"
    )


def _gemv_split(config: Config, m: int, n: int, k: int, l: int, sm_count: int) -> tuple[int, str]:
    groups = -(-n // config.tile[1]) * l
    wanted = GEMV_WARPS_PER_SM * sm_count
    allowed = config.split_options(k)
    split = next((s for s in allowed if groups * s >= wanted), allowed[-1])
    return split, (f"split_k={split}: {groups} groups of {config.tile[1]} rows x {split} warps on {sm_count} SMs "
                   f"(wanted {GEMV_WARPS_PER_SM} warps per SM; at most {allowed[-1]} warps for K={k})")


def wgmma_terms(config: Config, m: int, n: int, k: int, l: int, split_k: int,
                sm_count: int) -> tuple[float, float, float, float]:
    """The wgmma cost model's variables for one (config, split_k): (waves x stages per CTA, 1 if a split
    reduced through global partials, (split - 1) x M x N / 1e6 for those, 1 if a split reduced inside
    clusters). The model is linear in them; the fit reads them too."""
    tiles = -(-n // config.tile[1]) * -(-m // config.tile[0]) * l
    waves = -(-tiles * split_k // sm_count)
    stages = -(-k // config.tile[2])
    in_cluster = wgmma_cluster_route(tiles, split_k, sm_count)
    through_partials = split_k > 1 and not in_cluster
    return (waves * -(-stages // split_k), float(through_partials),
            (split_k - 1) * m * n * l / 1e6 if through_partials else 0.0, float(in_cluster))


def wgmma_predict_us(config: Config, m: int, n: int, k: int, l: int, split_k: int, sm_count: int) -> float:
    """The fitted wgmma cost model's time for one (config, split_k) (see WGMMA_COST)."""
    fixed, per_stage = WGMMA_COST[(config.tile[0], config.tile[1])]
    stage_term, split_term, reduction_term, cluster_term = wgmma_terms(config, m, n, k, l, split_k, sm_count)
    return (fixed + per_stage * stage_term + SPLIT_FIXED_US * split_term
            + SPLIT_REDUCTION_US_PER_MELEMENT * reduction_term + CLUSTER_SPLIT_FIXED_US * cluster_term)


def _wgmma_best_split(config: Config, m: int, n: int, k: int, l: int, sm_count: int) -> tuple[int, float]:
    splits = [s for s in range(1, MAX_SPLIT + 1) if s <= config.max_split_k(k)]
    return min(((s, wgmma_predict_us(config, m, n, k, l, s, sm_count)) for s in splits), key=lambda sp: sp[1])


def split_for(config: Config, m: int, n: int, k: int, l: int, out_dtype: str, sm_count: int) -> tuple[int, str]:
    """The split-K count `config` runs the shape with, and why."""
    if config.mma == "gemv":
        return _gemv_split(config, m, n, k, l, sm_count)
    if config.mma == "direct":
        return _direct_split(config, m, n, k, l, sm_count)
    split_k, us = _wgmma_best_split(config, m, n, k, l, sm_count)
    return split_k, f"split_k={split_k} (sm90 model's best for this config: {us:.1f} us on {sm_count} SMs)"


def pick(configs: tuple[Config, ...], m: int, n: int, k: int, l: int, out_dtype: str, sm_count: int) -> tuple[Config, str]:
    """The config among `configs` (the family's, each accepting the shape) that runs it, and why."""
    gemv = sorted((c for c in configs if c.mma == "gemv" and m <= c.tile[0]), key=lambda c: c.tile[0])
    if gemv and n * k * l <= GEMV_MAX_WEIGHTS:
        return gemv[0], (f"weight-only GEMV: M = {m} <= {gemv[0].tile[0]} tokens and N x K x L = {n * k * l:,} "
                         f"<= {GEMV_MAX_WEIGHTS:,} weights (measured faster than the direct kernel there)")
    direct = [c for c in configs if c.mma == "direct" and m <= c.tile[0]]
    if direct:
        return direct[0], f"direct decode kernel: M = {m} <= {direct[0].tile[0]} tokens"
    ranked = sorted(
        ((c, *_wgmma_best_split(c, m, n, k, l, sm_count)) for c in configs if c.mma == "wgmma"),
        key=lambda entry: entry[2],
    )
    choice, split_k, us = ranked[0]
    why = f"sm90 model ({sm_count} SMs) predicts {us:.1f} us at split_k={split_k}"
    if len(ranked) > 1:
        why += f"; runner-up {ranked[1][0].name} split_k={ranked[1][1]} {ranked[1][2]:.1f} us"
    return choice, why
