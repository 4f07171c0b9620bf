"""Analytic time model of the sm100 (Blackwell) config family, for the resolver without measurements.

What the model says, in one paragraph: a CUTLASS sm100 block-scaled kernel streams its operands
through a TMA pipeline of `stages` K tiles (256 elements each) per CTA. By Little's law a CTA then
retires at most `stages` K tiles per memory latency, whatever its tile size, so a wide tile moves
more bytes per SM per microsecond than a narrow one, and a narrow tile needs more tiles (or split-K /
stream-K) to keep all SMs busy. The GPU cannot move unique bytes faster than DRAM, and the tensor
cores cannot go faster than their FP4 rate. Add a launch, one latency to fill the pipeline, the
epilogue, and for split work the deterministic reduction of partial tiles.

  time = launch (+ workspace clear for stream-K) + fill
         + max(per-SM K-tile chain, unique DRAM bytes / DRAM bandwidth)
         + reduction of partials + epilogue

Every constant is in `Sm100Machine` with where it comes from. Nothing here was measured on a
Blackwell GPU (none was available): the predictions in docs/b200_model.md are for a B200 owner to
compare with `python -m nvfp4_gemm tune`, whose table then overrides the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

from ._checks import MAX_GRID_YZ
from .configs import SM100_TILE_K, Config
from .dtypes import gemm_format
from .dtypes import out_dtype as _out_dtype

__all__ = [
    "B200", "Prediction", "Sm100Machine", "estimated_stages", "for_device", "grid_y_rows", "launch_grid", "pick",
    "pipeline_stages", "predict", "rank", "report", "split_for",
]




def _f8f6f4(config: Config) -> bool:
    """Whether the config's format runs on the mxf8f6f4 MMA kind (a block-scaled operand wider than 4 bits: MXFP8
    x MXFP4), not mxf4nvf4. That kind runs at the FP8 rate, half the FP4 one (B200: 4.5 vs 9 dense PFLOPS),
    and keeps 4-bit values unpacked in shared memory, one byte each (CUTLASS's float_e2m1_unpacksmem_t)."""
    fmt = gemm_format(config.format)
    return not fmt.weight_only and max(fmt.a.element.bits, fmt.b.element.bits) > 4


def _mma_rate_share(config: Config) -> float:
    """The config's MMA rate as a share of the FP4 one: mxf8f6f4 half; a weight-only row's 16-bit MMAs (the
    weights converted to the tokens' type) a quarter (B200: 2.25 dense bf16 PFLOPS against 9 FP4)."""
    if gemm_format(config.format).weight_only:
        return 0.25
    return 0.5 if _f8f6f4(config) else 1.0


def _operand_bytes(config: Config) -> tuple[float, float]:
    """DRAM bytes per element of the kernel's A and B operands: the value plus its share of a 1-byte
    scale (NVFP4: 0.5 + 1/16; MXFP4: 0.5 + 1/32; MXFP8: 1 + 1/32; 16-bit tokens as given: 2); swapped for swap-AB
    configs."""
    fmt = gemm_format(config.format)
    a, b = (o.element.bits / 8 + (1 / o.block.values_per_scale if o.block else 0) for o in (fmt.a, fmt.b))
    return (b, a) if config.swap_ab else (a, b)


_PARTIAL_BYTES = 4  # split-K / stream-K partials are FP32 accumulators


@dataclass(frozen=True)
class Sm100Machine:
    """The GPU the model describes. Defaults: a B200. Units: bytes, microseconds."""

    # 148 SMs: NVIDIA B200 (2 dies x 74 enabled SMs; Chips and Cheese, "Nvidia's B200: Keeping the
    # CUDA juggernaut rolling"). A real device's own count replaces it (resolver).
    sm_count: int = 148
    # 7.68 TB/s: the bandwidth the GPU MODE organisers divide by for their B200 speed of light
    # (shared/spec/task_shapes.yaml); NVIDIA's datasheet peak is 8 TB/s.
    dram_bytes_per_us: float = 7.68e6
    # 9 PFLOP/s dense FP4 (NVIDIA B200 datasheet: 18 PFLOP/s with 2:4 sparsity) over 148 SMs: a
    # per-SM rate, so a device with another SM count scales with it.
    fp4_flops_per_us_per_sm: float = 9.0e9 / 148
    # 232448 B of shared memory per SM usable by one CTA: cutlass::arch::sm100_smem_capacity_bytes
    # (CUTLASS 4.2, cutlass/arch/arch.h); the CUDA guide lists 228 KB per SM for compute capability 10.0.
    smem_bytes: int = 232448
    # 126 MB of L2 (Chips and Cheese's B200 article; NVIDIA's Blackwell material): operands that fit
    # together are read from DRAM once.
    l2_bytes: int = 126 * 2**20
    # ASSUMPTION (not measured on a B200): loaded DRAM latency seen by a TMA load, 1 us. Chips and
    # Cheese measured ~150 ns to B200's L2 within a die; DRAM adds several hundred ns unloaded and
    # queueing under full load. The first constant to calibrate against a B200 tune run.
    latency_us: float = 1.0
    # ASSUMPTION: launch-to-first-instruction of one kernel, 2 us, the usual order for a CUDA launch
    # on an idle stream (on our H200 a whole tiny GEMM replayed from a CUDA graph took 6.6 us of
    # device time: an upper bound). Equal for every config, so it shifts times, not choices.
    launch_us: float = 2.0
    # ASSUMPTION: CUTLASS's stream-K `initialize()` clears the reduction barriers with a memset on
    # every call (issue 3's CUTLASS 4.2 facts): one more small operation on the stream, ~1 us.
    workspace_clear_us: float = 1.0


B200 = Sm100Machine()


def _kernel_view(config: Config, m: int, n: int) -> tuple[int, int]:
    """(M, N) of the problem the kernel itself computes: swapped for swap-AB configs."""
    return (n, m) if config.swap_ab else (m, n)


def estimated_stages(config: Config, out_dtype: str, machine: Sm100Machine = B200) -> int:
    """Pipeline depth the way CUTLASS's StageCountAutoCarveout counts it, approximately.

    Per CTA and K tile: its A rows and B rows at 128 bytes each (256 FP4 values; 256 bytes on the mxf8f6f4
    kind, which keeps FP4 unpacked), scale tiles padded to 128 rows at 16 bytes each (8 for MX), and the
    pipeline barrier; the epilogue's staging buffer and the
    scheduler's storage are carved out first. Exact for tile N <= 192 (tests/test_sm100_model.py
    compares it with every compiled kernel); for N = 256 CUTLASS's epilogue builder picks a larger,
    hand-tuned staging buffer, so this overestimates. The model uses the compiled kernel's own count
    (`_C.Kernel.pipeline_stages`) whenever the build carries it.
    """
    if gemm_format(config.format).weight_only:
        return _weight_only_stages(config, out_dtype, machine)
    ctas = 2 if config.two_sm else 1
    a_rows = config.tile[0] // ctas
    b_rows = config.tile[1] // ctas
    block = gemm_format(config.format).block
    k_bytes = SM100_TILE_K if _f8f6f4(config) else SM100_TILE_K // 2  # bytes per row of a K tile in shared memory
    scale_bytes = (max(a_rows, block.tile_rows) + max(b_rows, block.tile_rows)) * (SM100_TILE_K // block.values_per_scale)
    stage = (a_rows + b_rows) * k_bytes + scale_bytes + 16
    # epilogue staging: CUTLASS's auto epilogue tile stores 2 buffers of 128 x 32 outputs here
    carveout = 2 * 128 * 32 * _out_dtype(out_dtype).bytes + 1024
    return max(1, (machine.smem_bytes - carveout) // stage)


def _weight_only_stages(config: Config, out_dtype: str, machine: Sm100Machine) -> int:
    """The load stages of CUTLASS's sm100 mixed-input builder (sm100_mixed_input_umma_builder.inl) for a
    weight-only row: per K tile the weights (one byte per e2m1 value as it counts them), their 16-bit scales
    (one per 16) and the 16-bit tokens, after the epilogue's staging (matched to the compiled kernels of
    128 x 32 and 128 x 64 tiles), the accumulator stages' barriers and the converted weights' TMEM stages."""
    tile_m, tile_n, tile_k = config.tile
    out_bytes = _out_dtype(out_dtype).bytes
    accumulator_stages = 2 if tile_n == 128 else 3
    epilogue = 2 * tile_m * min(tile_n // 2, 32) * out_bytes + (1024 if out_bytes == 4 else 2048)
    stage = tile_m * tile_k + tile_m * tile_k // 16 * 2 + tile_n * tile_k * 2 + 48
    free = machine.smem_bytes - epilogue - accumulator_stages * 32
    transform_stages = min((512 - accumulator_stages * tile_n) // (tile_k // 2), free // (stage + 16))
    return max(1, (free - transform_stages * 16) // stage)


def pipeline_stages(config: Config, out_dtype: str, machine: Sm100Machine = B200) -> int:
    """The compiled kernel's pipeline depth when this build carries it, else the estimate."""
    try:
        from . import _C

        stages = _C.lookup(config.name, out_dtype).pipeline_stages
    except (ImportError, KeyError):
        stages = 0
    return stages if stages > 0 else estimated_stages(config, out_dtype, machine)


@dataclass(frozen=True)
class Prediction:
    config: Config
    split_k: int  # 1 = data-parallel (or stream-K for stream-K configs)
    us: float
    terms: dict = field(compare=False)  # the model's terms in us, for explanations and docs

    def describe(self) -> str:
        order = ("launch", "fill", "k_loop", "dram_floor", "reduction", "epilogue")
        parts = ", ".join(f"{key} {self.terms[key]:.2f}" for key in order if key in self.terms)
        work = self.terms.get("work", "")
        return f"{self.config.name} split_k={self.split_k}: {self.us:.2f} us ({parts}; {work})"


def dram_operand_bytes(a_bytes: float, b_bytes: float, rows_a: int, rows_b: int, tile_m: int, tile_n: int,
                       l2_bytes: float) -> float:
    """Operand bytes read from DRAM: each operand once while both fit in L2 together (re-reads by other
    tiles hit L2); beyond that the larger one is read again for every tile row of the other side."""
    if a_bytes + b_bytes <= l2_bytes:
        return a_bytes + b_bytes
    if a_bytes >= b_bytes:
        return a_bytes * -(-rows_b // tile_n) + b_bytes
    return a_bytes + b_bytes * -(-rows_a // tile_m)


# What the sm100 and sm120 models share (sm120_model.py is this model with that family's facts): how the
# tiles and K loop spread over the workers, the time's terms after the K loop, ranking, and the explanations.


@dataclass(frozen=True)
class WorkSplit:
    """A GEMM's output tiles and K loop spread over the workers (a CTA, or a 2SM tile's CTA pair, per SM)."""

    waves: int  # rounds of tiles per worker
    iterations: int  # K tiles of the busiest worker
    pieces: int  # pieces each split tile is cut into
    split_tiles: int  # tiles cut into pieces (their partials written and reduced)
    work: str  # the split in words, for explanations


def split_work(
    scheduler: str, split_k: int, tiles: int, k_tiles: int, workers: int, worker_noun: str = "workers"
) -> WorkSplit:
    """How CUTLASS's scheduler spreads `tiles` output tiles of `k_tiles` K tiles over `workers` (called
    `worker_noun` in the words)."""
    if scheduler == "stream_k" and split_k == 1:
        full_waves, leftover = divmod(tiles, workers)
        if leftover == 0:
            return WorkSplit(full_waves, full_waves * k_tiles, 1, 0, f"{tiles} tiles in {full_waves} full waves")
        # CUTLASS runs whole waves data-parallel and spreads the last partial wave's K loop over every
        # worker (stream-K), so its tiles are cut into about workers / leftover pieces.
        share = -(-leftover * k_tiles // workers)
        return WorkSplit(
            full_waves + 1, full_waves * k_tiles + share, min(k_tiles, -(-workers // leftover)), leftover,
            f"{tiles} tiles, last {leftover} stream-K over {workers} {worker_noun} ({share} K tiles each)",
        )
    split = min(split_k, k_tiles)
    units = tiles * split
    waves = -(-units // workers)
    return WorkSplit(
        waves, waves * -(-k_tiles // split), split, tiles if split > 1 else 0,
        f"{tiles} tiles x {split} splits = {units} units in {waves} wave(s) of {workers}",
    )


def predicted_time(
    machine, scheduler: str, split: WorkSplit, k_loop: float, operand_bytes: float, tile_m: int, tile_n: int,
    out_element_bytes: int, out_elements: int, unit_bytes_per_us: float, epilogues: int, stages: int,
) -> tuple[float, dict]:
    """The predicted time and its terms, given the K loop's time and the unique operand bytes: the DRAM
    floor (operands, output, partials written and read), the deterministic reduction (the tile's last
    piece waits for, reads and adds every earlier partial at the unit's stream rate, plus one latency for
    the barrier), `epilogues` epilogues, the launch (and stream-K's workspace clear) and the fill."""
    partial_bytes = split.split_tiles * (split.pieces - 1) * tile_m * tile_n * _PARTIAL_BYTES * 2
    dram_floor = (operand_bytes + out_elements * out_element_bytes + partial_bytes) / machine.dram_bytes_per_us
    reduction = 0.0
    if split.pieces > 1:
        reduction = machine.latency_us + (split.pieces - 1) * tile_m * tile_n * _PARTIAL_BYTES / unit_bytes_per_us
    epilogue = (machine.latency_us / 2 + tile_m * tile_n * out_element_bytes / unit_bytes_per_us) * epilogues
    launch = machine.launch_us + (machine.workspace_clear_us if scheduler == "stream_k" else 0.0)
    fill = machine.latency_us
    total = launch + fill + max(k_loop, dram_floor) + reduction + epilogue
    terms = {
        "launch": launch, "fill": fill, "k_loop": k_loop, "dram_floor": dram_floor,
        "reduction": reduction, "epilogue": epilogue, "stages": stages, "work": split.work,
    }
    return total, terms


def best_per_config(configs: tuple[Config, ...], options: Callable[[Config], list[Prediction]]) -> list[Prediction]:
    """Each config's fastest prediction among `options(config)` (its split counts), fastest first; ties keep
    table order."""
    best = [(min(options(config), key=lambda p: p.us), order) for order, config in enumerate(configs)]
    best.sort(key=lambda item: (round(item[0].us, 6), item[1]))
    return [prediction for prediction, _ in best]


def explain_pick(ranking: list[Prediction], model: str) -> tuple[Config, str]:
    """The fastest config of `ranking` and why (`model` names the model in the sentence); a runner-up that
    does not fit the machine (predicted infinitely slow) goes unmentioned."""
    best = ranking[0]
    why = f"{model} predicts {best.describe()}"
    if len(ranking) > 1 and not math.isinf(ranking[1].us):
        why += f"; runner-up {ranking[1].config.name} split_k={ranking[1].split_k} {ranking[1].us:.2f} us"
    return best.config, why


def report_tables(
    configs: tuple[Config, ...], weights: tuple[tuple[int, int], ...], ranked: Callable[[int, int, int], list],
    heading: str,
) -> str:
    """Markdown tables of predicted times (us, best split count) per config and REPORT_MS shape, fp16 out:
    `ranked(m, n, k)` ranks the configs; `heading` goes after "N = .., K = .. (" in each table's title."""
    lines = []
    for n, k in weights:
        lines.append(f"N = {n}, K = {k} ({heading}; `sN` = split_k N; **bold** = the resolver's choice)")
        lines.append("")
        lines.append("| config | " + " | ".join(f"M = {m}" for m in REPORT_MS) + " |")
        lines.append("| --- |" + " --- |" * len(REPORT_MS))
        ranking = {m: ranked(m, n, k) for m in REPORT_MS}
        for config in configs:
            cells = []
            for m in REPORT_MS:
                p = next(p for p in ranking[m] if p.config == config)
                cell = f"{p.us:.1f}" + (f" s{p.split_k}" if config.takes_split_k else "")
                cells.append(f"**{cell}**" if p is ranking[m][0] else cell)
            lines.append(f"| {config.name} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def predict(
    config: Config,
    m: int,
    n: int,
    k: int,
    l: int,
    out_dtype: str,
    split_k: int = 1,
    machine: Sm100Machine = B200,
    stages: Optional[int] = None,
) -> Prediction:
    """Predicted time of `config` on (m, n, k, l) with `split_k` (see the module docstring)."""
    if stages is None:
        stages = pipeline_stages(config, out_dtype, machine)
    kernel_m, kernel_n = _kernel_view(config, m, n)
    tile_m, tile_n, _ = config.tile
    sms_per_unit = 2 if config.two_sm else 1
    workers = machine.sm_count // sms_per_unit  # concurrent tiles (1 CTA or CTA pair per SM)
    tiles = -(-kernel_m // tile_m) * -(-kernel_n // tile_n) * l
    k_tiles = -(-k // SM100_TILE_K)

    split = split_work(config.scheduler, split_k, tiles, k_tiles, workers)

    # Little's law: `stages` K tiles in flight per CTA, each arriving one latency after its request;
    # the tensor cores bound it too (a 2SM unit has two SMs' tensor cores).
    flops_per_k_tile = 2.0 * tile_m * tile_n * SM100_TILE_K
    mma_rate = machine.fp4_flops_per_us_per_sm * _mma_rate_share(config)
    per_k_tile = max(
        machine.latency_us / stages,
        flops_per_k_tile / (mma_rate * sms_per_unit),
    )
    k_loop = split.iterations * per_k_tile

    bytes_a, bytes_b = _operand_bytes(config)
    operand_bytes = dram_operand_bytes(
        kernel_m * bytes_a * k * l, kernel_n * bytes_b * k * l, kernel_m, kernel_n, tile_m, tile_n, machine.l2_bytes
    )
    unit_bytes_per_us = stages * (tile_m * bytes_a + tile_n * bytes_b) * SM100_TILE_K / machine.latency_us
    total, terms = predicted_time(
        machine, config.scheduler, split, k_loop, operand_bytes, tile_m, tile_n, _out_dtype(out_dtype).bytes,
        m * n * l, unit_bytes_per_us, 1, stages,
    )
    return Prediction(config=config, split_k=split_k if config.takes_split_k else 1, us=total, terms=terms)


def rank(
    configs: tuple[Config, ...], m: int, n: int, k: int, l: int, out_dtype: str, machine: Sm100Machine = B200
) -> list[Prediction]:
    """Best prediction per config (over its split counts), fastest first; ties keep table order."""
    def options(config: Config) -> list[Prediction]:
        stages = pipeline_stages(config, out_dtype, machine)
        return [predict(config, m, n, k, l, out_dtype, s, machine, stages) for s in config.split_options(k)]
    return best_per_config(configs, options)


def for_device(sm_count: int) -> Sm100Machine:
    """The B200 model with a real device's SM count (bandwidths scaled by the SM ratio are not
    assumed: only the count changes)."""
    return B200 if sm_count == B200.sm_count else replace(B200, sm_count=sm_count)


def _ceil_div(x: int, y: int) -> int:
    return -(-x // y)


def _round_up(x: int, y: int) -> int:
    return _ceil_div(x, y) * y


def launch_grid(config: Config, m: int, n: int, l: int, split_k: int) -> tuple[int, int, int]:
    """The CUDA grid (x, y, z) of CUTLASS 4.2's tile schedulers (cutlass/gemm/kernel/tile_scheduler_params.h):
    the data-parallel one launches one CTA per tile, (M-side CTAs, N-side CTAs, L) of the kernel's own
    problem (swap-AB: the user's N, M), transposed when it rasterizes along N unless that would put more than
    65535 on y; stream-K's split-K mode launches (M-side, N-side, L * splits). Stream-K proper (split_k = 1)
    may instead launch waves of at most one CTA per SM along z, which reach 65535 only past 65535 x SMs
    output tiles (> 50 G outputs), more than a GPU holds: the tile grid stands for it."""
    kernel_m, kernel_n = _kernel_view(config, m, n)
    cluster_m, cluster_n = config.cluster
    atom_m = 2 if config.two_sm else 1
    ctas_m = _round_up(_ceil_div(kernel_m, config.tile[0]) * atom_m, cluster_m)
    ctas_n = _round_up(_ceil_div(kernel_n, config.tile[1]), cluster_n)
    if config.scheduler == "data_parallel":
        clusters_m, clusters_n = ctas_m // cluster_m, ctas_n // cluster_n
        if clusters_n <= clusters_m and clusters_m * cluster_n <= MAX_GRID_YZ:  # rasterized along N
            return clusters_n * cluster_m, clusters_m * cluster_n, l
    return ctas_m, ctas_n, l * split_k


def grid_y_rows(config: Config) -> tuple[str, int]:
    """The user's dimension along gridDim.y (without rasterization along N) and its rows per CTA."""
    return ("M" if config.swap_ab else "N"), config.tile[1]


def pick(configs: tuple[Config, ...], m: int, n: int, k: int, l: int, out_dtype: str, sm_count: int) -> tuple[Config, str]:
    """The family's selection model (families.py): every config predicted at its best split count; the
    fastest wins, table order breaks ties."""
    machine = for_device(sm_count)
    return explain_pick(rank(configs, m, n, k, l, out_dtype, machine), f"B200 model ({machine.sm_count} SMs)")


def split_for(config: Config, m: int, n: int, k: int, l: int, out_dtype: str, sm_count: int) -> tuple[int, str]:
    """The split-K count `config` runs the shape with (the model's best for it), and why."""
    best = rank((config,), m, n, k, l, out_dtype, for_device(sm_count))[0]
    return best.split_k, f"split_k={best.split_k} (B200 model's best for this config)"


# The shapes docs/b200_model.md predicts: each ranked (N, K) at the decode batch sizes and M = 128.
REPORT_MS = (1, 16, 64, 128, 256)


def report(configs: tuple[Config, ...], weights: tuple[tuple[int, int], ...], machine: Sm100Machine = B200) -> str:
    """Markdown tables of predicted times (us, best split count) per config and shape, fp16 out."""
    return report_tables(configs, weights, lambda m, n, k: rank(configs, m, n, k, 1, "float16", machine), "predicted us")
