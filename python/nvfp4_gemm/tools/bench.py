"""The main job's measurements: verify, then time nvfp4_gemm next to the vendor baseline, per shape, on
operands of one GEMM format (dtypes.GEMM_FORMATS; the tools' `--format`).

Shared by `python -m nvfp4_gemm`, the tuner and `benchmarks/`. All times are device times from CUDA
events with the L2 flushed before each call (nvfp4_gemm.timing). The ceilings that turn times into
"% of floor" are measured in the same run on the same GPU: a device-to-device copy (bytes read +
written) and a large bf16 matmul.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

import torch

from .. import families, formats
from ..dtypes import UNSCALED_ELEMENT_FORMATS, gemm_format
from ..ops import gemm
from ..resolver import resolve
from .testing import Operands, check_against_reference, fp32_roundings, random_operands
from .timing import geomean, time_cuda

__all__ = [
    "Ceilings", "Row", "measure_ceilings", "gemm_bytes", "format_unavailable", "BASELINE_NAMES", "baseline_format",
    "baselines", "run_shape", "format_table", "write_json", "plot",
]


@dataclass(frozen=True)
class Ceilings:
    device: str
    copy_tb_per_s: float  # device-to-device copy, bytes read + written
    bf16_tflop_per_s: float  # 8192^3 bf16 matmul through torch (cuBLAS)


@dataclass
class Row:
    shape: tuple[int, int, int, int]  # m, n, k, l
    verified: bool
    check: str
    config: str
    split_k: int
    us: float
    baselines_us: dict[str, float] = field(default_factory=dict)
    baseline_errors: dict[str, str] = field(default_factory=dict)
    memory_floor_us: float = 0.0
    tensor_floor_us: float = 0.0
    format: str = "nvfp4"  # the GEMM format of the operands (dtypes.GEMM_FORMATS)

    @property
    def flop(self) -> float:
        m, n, k, l = self.shape
        return 2.0 * m * n * k * l

    @property
    def tb_per_s(self) -> float:
        m, n, k, l = self.shape
        return gemm_bytes(m, n, k, l, self.format) / (self.us * 1e-6) / 1e12

    @property
    def tflop_per_s(self) -> float:
        return self.flop / (self.us * 1e-6) / 1e12


def gemm_bytes(m: int, n: int, k: int, l: int = 1, format: str = "nvfp4") -> int:
    """Fewest bytes a GEMM of `format` moves: both operands (FP4, FP8 or 16-bit values), their blocked scales
    (a byte each; a weight-only `a` has none), the fp16 output."""
    described = gemm_format(format)
    a_bytes = m * k * described.a.element.bits // 8
    b_bytes = n * k * described.b.element.bits // 8
    block = described.block
    a_scale_bytes = 0 if described.weight_only else formats.blocked_scale_numel(m, k, fmt=block)  # W4A16: none
    scale_bytes = a_scale_bytes + formats.blocked_scale_numel(n, k, fmt=block)
    return l * (a_bytes + b_bytes + scale_bytes + 2 * m * n)


def format_unavailable(format: str, sm_major: int, where: str) -> Optional[str]:
    """None if the kernel family of compute capability `sm_major`.x runs the GEMM format `format`, else one
    line for the command line saying so and what runs it (`where`: the GPU or family named in the line)."""
    family = families.for_sm_major(sm_major)
    if family is not None and format in family.formats:
        return None
    takes = f"its {family.name} kernels take {', '.join(family.formats)}" if family else "no kernel family runs it"
    runners = [f"{f.name} GPUs ({f.reference_gpu})" for f in families.FAMILIES if format in f.formats]
    runners.append("the CPU reference path (no GPU, or CPU tensors)")
    return f"--format {format}: {where} has no {format} kernel ({takes}); {format} runs on " + " and ".join(runners)


def measure_ceilings() -> Ceilings:
    nbytes = 1 << 30
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy_us = time_cuda(lambda: dst.copy_(src), warmup=3, iters=10, flush_l2=False).median_us
    size = 8192
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(size, size, device="cuda", dtype=torch.bfloat16, generator=gen)
    y = torch.randn(size, size, device="cuda", dtype=torch.bfloat16, generator=gen)
    mm_us = time_cuda(lambda: x @ y, warmup=3, iters=10, flush_l2=False).median_us
    del src, dst, x, y
    return Ceilings(
        device=torch.cuda.get_device_name(),
        copy_tb_per_s=2 * nbytes / (copy_us * 1e-6) / 1e12,
        bf16_tflop_per_s=2.0 * size**3 / (mm_us * 1e-6) / 1e12,
    )


def _rowwise_fp8(values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    scale = values.abs().amax(dim=-1, keepdim=True).float().clamp(min=1e-12) / 448.0
    return (values.float() / scale).to(torch.float8_e4m3fn), scale


# The 16-bit matmul baseline of each 16-bit dtype ("cublas_bf16": torch.bfloat16)
_SIXTEEN_BIT_BASELINES = {getattr(torch, e.storage_dtypes[0]): f"cublas_{e.name}" for e in UNSCALED_ELEMENT_FORMATS}
# Every name `baselines` can answer (the benchmark suite collects one benchmark per name).
BASELINE_NAMES = ("cublaslt_nvfp4", "cublas_fp8_rowwise", *_SIXTEEN_BIT_BASELINES.values())


def baseline_format(format: str) -> str:
    """The GEMM format of the operands the baselines of `format` run on: a weight-only format's own (the
    vendor paths multiply the same 16-bit activations), NVFP4 for the block-scaled formats (one yardstick
    for all of them: cuBLAS has no MXFP8 x MXFP4, and Hopper none of them)."""
    return format if gemm_format(format).weight_only else "nvfp4"


def baselines(ops: Operands) -> dict[str, Callable[[], object]]:
    """The vendor paths someone would use instead, prepared outside the timed region, from NVFP4 operands
    or weight-only ones (16-bit `a`, a_scale None)."""
    if ops.a.dim() != 2:
        return {}
    if ops.a_scale is None:
        # Weight-only: the activations as given times the weights dequantized ahead of time, in the
        # activations' dtype (the 16-bit layer the NVFP4 weights replace), and both row-wise FP8.
        activations = ops.a
        weights = formats.dequantize(ops.b, ops.b_scale, activations.dtype)
        sixteen = _SIXTEEN_BIT_BASELINES[activations.dtype]
        out_dtype = activations.dtype
    elif torch.cuda.get_device_capability()[0] == 10:
        fp4 = torch.float4_e2m1fn_x2
        a, b = ops.a.view(fp4), ops.b.view(fp4)
        return {
            "cublaslt_nvfp4": lambda: torch._scaled_mm(
                a, b.t(), scale_a=ops.a_scale, scale_b=ops.b_scale, out_dtype=torch.float16
            )
        }
    else:
        # Hopper has no NVFP4 in cuBLAS (torch._scaled_mm answers CUBLAS_STATUS_NOT_SUPPORTED): compare
        # with what people run instead, on operands dequantized ahead of time.
        activations = formats.dequantize(ops.a, ops.a_scale, torch.bfloat16)
        weights = formats.dequantize(ops.b, ops.b_scale, torch.bfloat16)
        sixteen, out_dtype = _SIXTEEN_BIT_BASELINES[torch.bfloat16], torch.bfloat16
    a_fp8, a_rows = _rowwise_fp8(activations)
    b_fp8, b_rows = _rowwise_fp8(weights)
    b_cols = b_rows.t().contiguous()
    return {
        "cublas_fp8_rowwise": lambda: torch._scaled_mm(
            a_fp8, b_fp8.t(), scale_a=a_rows, scale_b=b_cols, out_dtype=out_dtype
        ),
        sixteen: lambda: torch.matmul(activations, weights.t()),
    }


def run_shape(
    m: int, n: int, k: int, l: int = 1, *, ceilings: Ceilings, seed: int = 0, with_baselines: bool = True,
    format: str = "nvfp4",
) -> Row:
    """Verify nvfp4_gemm on fresh random operands of the GEMM format `format`, then time it and the
    baselines (on the operands `baseline_format` names: the same activations for a weight-only format,
    NVFP4 operands of the shape for the block-scaled formats)."""
    ops = random_operands(m, n, k, None if l == 1 else l, seed=seed, device="cuda", format=format)
    shape = (m, n) if l == 1 else (l, m, n)
    out = torch.full(shape, float("nan"), dtype=torch.float16, device="cuda")
    gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out)
    verified, check = check_against_reference(out, ops, roundings=fp32_roundings(k))
    resolution = resolve(m, n, k, l, torch.float16, "cuda", explain=True, format=format)
    us = time_cuda(lambda: gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, out=out)).median_us
    row = Row(
        shape=(m, n, k, l), verified=verified, check=check, config=resolution.config.name,
        split_k=resolution.split_k, us=us,
        memory_floor_us=gemm_bytes(m, n, k, l, format) / (ceilings.copy_tb_per_s * 1e12) * 1e6,
        tensor_floor_us=2.0 * m * n * k * l / (ceilings.bf16_tflop_per_s * 1e12) * 1e6, format=format,
    )
    if with_baselines:
        theirs = baseline_format(format)
        yardstick = ops if theirs == format else random_operands(m, n, k, None if l == 1 else l, seed=seed,
                                                                 device="cuda", format=theirs)
        for name, fn in baselines(yardstick).items():
            try:
                row.baselines_us[name] = time_cuda(fn).median_us
            except RuntimeError as error:  # e.g. a cuBLAS build without the format
                row.baseline_errors[name] = str(error).splitlines()[0]
    return row


def format_table(rows: list[Row], ceilings: Ceilings) -> str:
    names = sorted({name for r in rows for name in r.baselines_us})
    lines = [
        f"{ceilings.device}: copy {ceilings.copy_tb_per_s:.2f} TB/s, bf16 matmul {ceilings.bf16_tflop_per_s:.0f} TFLOP/s "
        f"(measured in this run); nvfp4_gemm on {', '.join(dict.fromkeys(r.format for r in rows))} operands",
        f"{'M x N x K (L)':>22} {'ok':>3} {'us':>8} {'TB/s':>6} {'%mem':>6} {'TFLOP/s':>8} {'%bf16':>6}"
        + "".join(f" {name + ' us':>24} {'speedup':>8}" for name in names)
        + "  config",
    ]
    for r in rows:
        m, n, k, l = r.shape
        label = f"{m}x{n}x{k}" + (f" ({l})" if l > 1 else "")
        line = (
            f"{label:>22} {'yes' if r.verified else 'NO':>3} {r.us:>8.2f} {r.tb_per_s:>6.2f} "
            f"{100 * r.memory_floor_us / r.us:>6.1f} {r.tflop_per_s:>8.1f} {100 * r.tensor_floor_us / r.us:>6.1f}"
        )
        for name in names:
            base = r.baselines_us.get(name)
            line += f" {base:>24.2f} {base / r.us:>7.2f}x" if base else f" {'n/a':>24} {'':>8}"
        lines.append(line + f"  {r.config} split_k={r.split_k}")
    line = f"{'geomean':>22} {'':>3} {geomean(r.us for r in rows):>8.2f} {'':>6} {'':>6} {'':>8} {'':>6}"
    for name in names:
        if all(name in r.baselines_us for r in rows):
            base = geomean(r.baselines_us[name] for r in rows)
            line += f" {base:>24.2f} {base / geomean(r.us for r in rows):>7.2f}x"
    lines.append(line)
    for r in rows:
        for name, error in r.baseline_errors.items():
            lines.append(f"  {name} unavailable for {r.shape}: {error}")
    return "\n".join(lines)


def write_json(path: str, rows: list[Row], ceilings: Ceilings, environment: dict) -> None:
    payload = {
        "environment": environment,
        "ceilings": asdict(ceilings),
        "rows": [dict(asdict(r), tb_per_s=r.tb_per_s, tflop_per_s=r.tflop_per_s) for r in rows],
    }
    with open(path, "w") as f:
        json.dump(payload, f, indent=1)


def plot(path: str, rows: list[Row], ceilings: Ceilings, title: Optional[str] = None) -> None:
    """Bar chart of times per shape with the memory floor ("speed of light") marked; needs matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise RuntimeError("--plot needs matplotlib: pip install 'nvfp4_gemm[plot]'") from error
    names = ["nvfp4_gemm"] + sorted({name for r in rows for name in r.baselines_us})
    labels = [f"{r.shape[0]}x{r.shape[1]}x{r.shape[2]}" for r in rows]
    width = 0.8 / len(names)
    fig, ax = plt.subplots(figsize=(2.2 + 2.2 * len(rows), 4.5))
    for i, name in enumerate(names):
        values = [r.us if name == "nvfp4_gemm" else r.baselines_us.get(name, 0.0) for r in rows]
        ax.bar([x + i * width for x in range(len(rows))], values, width, label=name)
    for x, r in enumerate(rows):
        left, right = x - width / 2, x + width * (len(names) - 0.5)
        ax.hlines(r.memory_floor_us, left, right, colors="black", linestyles="dashed",
                  label="memory floor (speed of light)" if x == 0 else None)
        ax.hlines(r.tensor_floor_us, left, right, colors="gray", linestyles="dotted",
                  label="bf16 tensor floor" if x == 0 else None)
    ax.set_xticks([x + width * (len(names) - 1) / 2 for x in range(len(rows))], labels)
    ax.set_ylabel("time per GEMM (us, median, L2 flushed)")
    ax.set_title(title or f"nvfp4_gemm ({', '.join(dict.fromkeys(r.format for r in rows))}) on {ceilings.device}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
