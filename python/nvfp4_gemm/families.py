"""The kernel families, as data: one entry per family, read by every layer that needs a family's facts.

Readers: the build (CMakeLists.txt asks `python -m nvfp4_gemm.families archs` for the architectures
it accepts; csrc/generate_kernels.py takes each family's headers, kernel template and sm major), the
config table's checks (configs.py), the runtime's device support (ops.py), and the resolver, which
finds each family's selection model (`model`) through it. Adding a family is one `Family` entry here,
its header under csrc/include/nvfp4_gemm/<name>/ (with `make_entry`), and its rows in configs.toml.

Pure Python with no third-party imports: the kernel generator loads it at build time.
"""

from __future__ import annotations

import importlib
import itertools
import sys
from dataclasses import dataclass, field
from typing import Optional

__all__ = [
    "Family", "FAMILIES", "KindLimits", "DEFAULT_FAMILY", "SM100_TILE_K", "by_name", "for_sm_major", "arch_capabilities",
    "supported_archs",
]


@dataclass(frozen=True)
class KindLimits:
    """What an MMA kind takes that its family's other kinds do not restrict: its formats, whether a call's M must
    fit in one tile M (no token tiles across the grid), the smallest K it accepts and the split-K counts it runs
    (empty: the family's)."""

    formats: tuple
    tokens_within_tile: bool = False
    min_k: int = 0
    splits: tuple = ()


@dataclass(frozen=True)
class Family:
    """One kernel family: a template under csrc/include/nvfp4_gemm/<name>/ and the GPUs it runs on."""

    name: str
    sm_major: int  # compute capability major of every GPU it runs on
    # nvcc architectures (NVFP4_GEMM_CUDA_ARCHS entries) that compile it -> the compute capabilities each
    # runs on. An 'a' target runs only on its own chip; an 'f' family target (nvcc 12.9+) also on the
    # family's later members (sm_100f: B200 and B300).
    archs: dict
    # The GPU the family's model describes when no device is given, and its multiprocessor count (a real
    # device's own count replaces it).
    reference_gpu: str
    reference_sm_count: int
    # The module of nvfp4_gemm holding the family's Python side: its selection model, pick(configs, m, n,
    # k, l, out_dtype, sm_count) -> (config, why) and split_for(config, m, n, k, l, out_dtype, sm_count) ->
    # (split_k, why), and its launch geometry, launch_grid(config, m, n, l, split_k) -> (x, y, z) and
    # grid_y_rows(config) -> (the user's dimension along gridDim.y, rows per CTA).
    model: str
    # Headers the generated translation units include, and the C++ type of one kernel: a str.format
    # template over the fields generate_kernels.py gives it (tile_m, tile_n, tile_k, cluster_m, cluster_n,
    # element, mma_enum, stream_k, swap_ab, schedule_enum, per_column_alpha, operand_a, operand_b: the format's
    # CUTLASS operand types, tokens: its activations' CUDA type, weight_block: its weights' block format struct
    # in dtypes.h);
    # the family's `make_entry<Kernel>(name, out dtype, sm major)` turns
    # it into a registry entry.
    headers: tuple
    kernel: str
    # Which C++ spelling of the output element type the template takes: "cutlass" or "cuda" (dtypes.py).
    element_spelling: str
    # The config table's vocabulary for the family (configs.py checks every row against it): per MMA kind
    # (a row names its kind unless the family has one) the tiles [M, N, K] it compiles and the config name's format (fields:
    # tile, cluster, sms, swap_ab, stream_k, schedule, format: "" for NVFP4, else "_<format>", alpha: "_pcalpha"
    # for a per-column-alpha row, else ""); the tile schedulers;
    # the largest cluster dimension (1: no
    # clusters); the tile M of a 2-SM (CTA pair) MMA (0: none); tile N that stream-K cannot run. Rows of a
    # scheduler in `split_k_schedulers` take a split-K count at run time (configs.Config.takes_split_k).
    tiles: dict
    names: dict
    schedulers: tuple = ("data_parallel",)
    split_k_schedulers: tuple = ()
    max_cluster: int = 1
    swap_ab: bool = False
    two_sm_tile_m: int = 0
    stream_k_unsupported_tile_n: tuple = ()
    # Largest blocked scales of one matrix the kernels index, in bytes (0: no limit below the sizes').
    max_scale_bytes: int = 0
    # Whether every kernel's epilogue takes an alpha per output column (an (N,) vector) besides a single alpha.
    per_column_alpha: bool = False
    # Whether rows may say per_column_alpha = true: their kernels (an alpha-vector epilogue) take an (N,) alpha
    # only, the family's other rows one alpha (configs.Config.alpha_violation).
    per_column_alpha_rows: bool = False
    # The GEMM formats (dtypes.GEMM_FORMATS names) its kernels take; a call in another is an error before launch.
    formats: tuple = ("nvfp4",)
    # K multiple a format's kernels need beyond the op's K % 32 (format name -> multiple).
    format_k_alignment: dict = None
    # N multiple a format's kernels need beyond the output's own (format name -> multiple).
    format_n_alignment: dict = None
    # Mainloop schedules a row may name (the first is the default) -> the abbreviation its config name
    # carries (the names' `schedule` field); empty: the family has one schedule and rows name none.
    schedules: dict = field(default_factory=dict)
    # A module of nvfp4_gemm whose check_config(config) raises ValueError for the rows the family's own
    # rules refuse beyond this vocabulary (e.g. what fits in shared memory); "" for none.
    row_rules: str = ""
    # MMA kinds with limits of their own (kind -> KindLimits): configs.Config.supports and its split rules read them.
    kind_limits: dict = field(default_factory=dict)

    @property
    def mmas(self) -> tuple:
        return tuple(self.tiles)

    def model_module(self):
        """The module named by `model` (imported on first use, at run time; the build never asks)."""
        return importlib.import_module(f"{__package__}.{self.model}")


# sm100 K tile: one MMA tile of K (two 128-element scale-vector groups); a split or stream-K unit is one.
SM100_TILE_K = 256

FAMILIES = (
    Family(
        name="sm100",
        sm_major=10,
        archs={"100a": ((10, 0),), "100f": ((10, 0), (10, 3)), "103a": ((10, 3),), "103f": ((10, 3),)},
        # 148 SMs: 2 dies x 74 enabled SMs (Chips and Cheese, "Nvidia's B200: Keeping the CUDA juggernaut rolling")
        reference_gpu="B200",
        reference_sm_count=148,
        model="sm100_model",
        headers=("nvfp4_gemm/sm100/gemm.cuh", "nvfp4_gemm/sm100/host_proof.hpp"),
        kernel=(
            "sm100::Gemm<{tile_m}, {tile_n}, {tile_k}, {cluster_m}, {cluster_n}, {element}, "
            "/*StreamK=*/{stream_k}, /*SwapAB=*/{swap_ab}, {operand_a}, {operand_b}, /*PerColumnAlpha=*/{per_column_alpha}>"
        ),
        element_spelling="cutlass",
        # CUTLASS 4.2 block-scaled MMA shapes (cutlass/gemm/collective/builders/sm100_blockscaled_*): M = 128
        # (1SM) or 256 (2SM), N in {64, 128, 192, 256}
        tiles={"tcgen05": tuple(itertools.product((128, 256), (64, 128, 192, 256), (SM100_TILE_K,)))},
        names={"tcgen05": "sm100_{sms}_{tile}_c{cluster}{swap_ab}{stream_k}{format}{alpha}"},
        # CUTLASS's default persistent data-parallel scheduler, or its stream-K scheduler (split count set
        # at run time)
        schedulers=("data_parallel", "stream_k"),
        split_k_schedulers=("stream_k",),
        max_cluster=4,
        swap_ab=True,
        two_sm_tile_m=256,
        # CUTLASS 4.2's stream-K silently runs data-parallel for N = 192 tiles
        # (sm100_tile_scheduler_stream_k.hpp, ForceDataParallel), so the table refuses that pairing.
        stream_k_unsupported_tile_n=(192,),
        # CUTLASS's sm100 scale-factor layout (Sm1xxBlkScaledConfig) has 32-bit strides
        max_scale_bytes=2**31 - 1,
        # a few rows compile CUTLASS's per-column (swap-AB: per-row) alpha epilogue for fused projections; not
        # every row: each costs a translation unit of build time (blockscaled_gemm.cuh)
        per_column_alpha_rows=True,
        # CUTLASS 4.2's block-scaled MMA kinds: mxf4nvf4 (NVFP4, MXFP4) and mxf8f6f4 (MXFP8 x MXFP4); weight-only
        # NVFP4 (16-bit activations as given) through its mixed-input collective (sm100_rules.py)
        formats=("nvfp4", "mxfp4", "mxfp8xmxfp4", "bf16xnvfp4", "fp16xnvfp4"),
        # The mxf8f6f4 kind reads a sub-byte operand with 128-element (64-byte) alignment
        # (cutlass/gemm/collective/builders/sm1xx_common.inl, sm1xx_blockscaled_gemm_is_aligned): the FP4 rows of
        # MXFP8 x MXFP4 need K % 128 (a 32-element alignment fails the collective builder).
        format_k_alignment={"mxfp8xmxfp4": 128},
        # The weight-only kernels read their scales converted to 16 bits with N contiguous, TMA rows of 16 bytes:
        # N % 8 whatever the output dtype (fp32 output alone would take N % 4).
        format_n_alignment={"bf16xnvfp4": 8, "fp16xnvfp4": 8},
        row_rules="sm100_rules",
    ),
    Family(
        name="sm90",
        sm_major=9,
        archs={"90a": ((9, 0),)},
        # 132 SMs: H100 SXM and H200 (NVIDIA's datasheets)
        reference_gpu="H100/H200 SXM",
        reference_sm_count=132,
        model="sm90_model",
        headers=("nvfp4_gemm/sm90/launcher.cuh",),
        # {tokens}: the format's activations as the kernels take them (packed FP4 bytes, __nv_fp8_e4m3, __half,
        # __nv_bfloat16); {weight_block}: the weights' block format (Nvfp4Format, MxFormat: dtypes.h)
        kernel="sm90::DequantGemm<{tile_m}, {element}, sm90::Kind::{mma_enum}, {tile_n}, {tokens}, {weight_block}>",
        element_spelling="cuda",
        # wgmma: [tokens, weight rows, K stage]; the accumulators, tokens x weight rows / 256 FP32 per
        # consumer thread, must fit in registers, so at most 128 x 256 or 256 x 128. direct (decode): 16
        # tokens x 128 weight rows per CTA, K in chunks of 128, its split-K unit. gemv (weight-only decode on
        # the CUDA cores, sm90/gemv.cuh): at most tile M tokens x 4 weight rows per warp group, K in sweeps of a
        # warp (32 lanes x 32 elements), its split unit (split = warps per group).
        tiles={
            "wgmma": ((64, 128, 128), (128, 128, 128), (256, 128, 128), (64, 256, 128), (128, 256, 128)),
            "direct": ((16, 128, 128),),
            "gemv": ((1, 4, 1024),),
        },
        # "prepass": the wgmma kernel reads tokens dequantized once per call (names of tuned tables
        # measured with the in-CTA kernels of Hopper v3-v5 stay unknown instead of meaning another kernel)
        names={"wgmma": "sm90_wgmma_{tile}_prepass_splitk{format}", "direct": "sm90_direct_{tile}_splitk{format}",
               "gemv": "sm90_gemv_{tile}{format}"},
        split_k_schedulers=("data_parallel",),  # every sm90 kernel has its own split-K
        per_column_alpha=True,  # one epilogue (sm90/common.cuh finish_tile) reads alpha[n]
        # NVFP4 x NVFP4, and weight-only: fp16 / bf16 activations as given (fp16 / bf16 MMAs, the weights
        # dequantized to the activations' type); MXFP4 weights with bf16 activations only (fp16 cannot hold
        # e2m1 x 2^e over ue8m0's range); MXFP4 x MXFP4 and MXFP8 x MXFP4 through the bf16 x MXFP4 kernels
        # (a prepass dequantizes the MX tokens exactly to bf16)
        formats=("nvfp4", "fp16xnvfp4", "bf16xnvfp4", "bf16xmxfp4", "mxfp4", "mxfp8xmxfp4"),
        # The GEMV multiplies 16-bit tokens as given, every call's tokens in one CTA, K split over 1, 2 or 4 of
        # its warps; its FP32 chain (32 FFMA per chunk a lane owns, shuffles, the warps' sum, alpha) fits the
        # earned tolerance's rounding count from K = 544 on (sm90/gemv.cuh; tests/test_gemv.py checks every K).
        kind_limits={
            "gemv": KindLimits(formats=("fp16xnvfp4", "bf16xnvfp4", "bf16xmxfp4"), tokens_within_tile=True, min_k=544,
                               splits=(1, 2, 4)),
        },
    ),
    Family(
        name="sm120",
        sm_major=12,
        # sm_120f: one family cubin runs on 12.0 (GeForce RTX 50, RTX PRO 6000 Blackwell) and 12.1 (DGX
        # Spark GB10); its SASS for 12.1 is identical to sm_121a's (docs/sm120_integration.md)
        archs={"120f": ((12, 0), (12, 1))},
        # 170 SMs: GeForce RTX 5090, GB202 (secondary sources: Linux Format's RTX 5090 review specs box,
        # Spheron's RTX 5090 datasheet table; docs/sm120_integration.md)
        reference_gpu="RTX 5090",
        reference_sm_count=170,
        model="sm120_model",
        headers=("nvfp4_gemm/sm120/blockscaled_gemm.cuh", "nvfp4_gemm/sm120/host_proof.hpp"),
        kernel=(
            "sm120::BlockScaledGemm<{tile_m}, {tile_n}, {tile_k}, {element}, sm120::Schedule::{schedule_enum}, "
            "/*StreamK=*/{stream_k}>"
        ),
        element_spelling="cutlass",
        # CUTLASS 4.2's Sm120 block-scaled collective (mma.sync m16n8k64 e2m1 with ue4m3 scales): tile M and
        # N are multiples of 128 (the scale factors' shared-memory atom covers 128 rows), K whole 64-element
        # MMA steps; which of these fit in 99 KB and pair with which schedule: sm120_rules.check_config
        tiles={"mma_sync": tuple(itertools.product((128, 256), (128, 256), (128, 256)))},
        names={"mma_sync": "sm120_{schedule}_{tile}{stream_k}"},
        schedulers=("data_parallel", "stream_k"),
        split_k_schedulers=("stream_k",),
        # the same Sm1xxBlkScaledConfig scale layout as sm100, with 32-bit strides
        max_scale_bytes=2**31 - 1,
        schedules={"cooperative": "coop", "pingpong": "pingpong"},
        row_rules="sm120_rules",
    ),
)

# The family a resolution without a device (device=None) is made for.
DEFAULT_FAMILY = "sm100"


def by_name(name: str) -> Family:
    for family in FAMILIES:
        if family.name == name:
            return family
    raise KeyError(f"unknown kernel family {name!r}; the families are: {', '.join(f.name for f in FAMILIES)}")


def for_sm_major(sm_major: int) -> Optional[Family]:
    """The family that runs on compute capability `sm_major`.x, or None."""
    return next((f for f in FAMILIES if f.sm_major == sm_major), None)


def arch_capabilities() -> dict:
    """Every compiled architecture's name as the extension reports it ('sm_100f') -> the compute
    capabilities it runs on."""
    return {f"sm_{arch}": caps for family in FAMILIES for arch, caps in family.archs.items()}


def supported_archs() -> list:
    """The NVFP4_GEMM_CUDA_ARCHS entries a build accepts, in family order."""
    return [arch for family in FAMILIES for arch in family.archs]


if __name__ == "__main__":  # CMakeLists.txt: `python families.py archs` prints the accepted architectures
    if sys.argv[1:] != ["archs"]:
        sys.exit("usage: families.py archs")
    print(";".join(supported_archs()))
