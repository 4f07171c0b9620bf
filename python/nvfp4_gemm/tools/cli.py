"""`python -m nvfp4_gemm` (also `nvfp4-gemm`): the main job.

    python -m nvfp4_gemm [--format F] [--shapes MxNxK ...] [--json FILE] [--plot FILE]
        On a GPU this wheel has kernels for: verify each shape against the exact reference, then time
        it next to the vendor baseline (CUDA events, L2 flushed, median) and print the table.
        Elsewhere: run one small GEMM through the CPU reference path and say why (with --shapes,
        --json or --plot: exit status 2, saying why, since there is nothing to time).
    python -m nvfp4_gemm tune [--format F] [--shapes MxNxK ...] [--out FILE] [--iters N]
        Measure every valid config on this GPU and write the tuned table the resolver reads.
    python -m nvfp4_gemm model [--format F] [--arch sm100|sm120] [--sm-count N]
        Print a family's model's predicted times per config for the ranked shapes' weights at
        M = 1, 16, 64, 128, 256: sm100 (B200, the tables in docs/b200_model.md; default) or sm120
        (RTX 5090, secondary-source constants). Needs no GPU.
    python -m nvfp4_gemm gpumode [--shapes MxNxK ...] [--inputs N] [--max-seconds S] [--json FILE]
        Time `gpumode.custom_kernel` the way the GPU MODE leaderboard does (nvfp4_gemm.harness):
        distinct inputs checked first, then all of them back to back between two CUDA events.
    python -m nvfp4_gemm report [--out-dir DIR] [--tests PATH] [--skip PART ...] [--tune-iters N]
        Run the GPU tests, the main job, the tuner, the GPU MODE timing and the host-cost
        measurement, and write DIR/report.md and DIR/report.json (nvfp4_gemm.report).

--format F (the main job, tune, model): the GEMM format of the operands, one of dtypes.GEMM_FORMATS (nvfp4,
the default; the MX formats; the weight-only ones, fp16 or bf16 activations as given times FP4 weights); a
GPU runs the formats of its kernel family (families.Family.formats), the CPU reference path every one. The
main job's baselines: for a block-scaled format the same vendor calls on NVFP4 operands of the shape (one
yardstick for all of them); for a weight-only format cuBLAS in the activations' 16-bit dtype and FP8 row-wise
on the same activations, the weights dequantized ahead of time. gpumode and report run the GPU MODE task's
NVFP4 only.

Exit status 1 if any verification fails; 2 when a command needs a GPU this wheel has kernels for
and there is none (`report` still writes its report then), or when the GPU (`model`: the family) has
no kernel for the format, saying in one line what runs it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional

import torch

from .. import compiled_architectures, families
from ..configs import shape_rule_violation
from ..dtypes import GEMM_FORMATS
from ..ops import unsupported_reason
from .bench import format_unavailable
from .report import PARTS
from .task_shapes import RANKED_SHAPES
from .testing import check_against_reference, random_operands

# The decode sweep of the benchmark suite: M tokens against a 7168 x 7168 weight.
DECODE_SWEEP = tuple((m, 7168, 7168) for m in (1, 16, 64, 128, 256))

FORMAT_NAMES = tuple(f.name for f in GEMM_FORMATS)  # --format's choices; the first is the default


def _parse_shape(text: str) -> tuple[int, int, int]:
    try:
        m, n, k = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape must be MxNxK, e.g. 128x7168x2048, got {text!r}") from None
    # the shapes are run with fp16 output: the gemm's own rules, said before anything runs
    violation = shape_rule_violation(m, n, k, 1, "float16")
    if violation:
        raise argparse.ArgumentTypeError(f"shape {text}: {violation}")
    return m, n, k


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _supported_gpu() -> tuple[bool, str]:
    reason = unsupported_reason()
    if reason is not None:
        return False, f"{reason}; running the CPU reference path"
    capability = torch.cuda.get_device_capability()
    archs = ", ".join(compiled_architectures())
    return True, f"{torch.cuda.get_device_name()} (compute capability {capability[0]}.{capability[1]}), kernels: {archs}"


def _cpu_demo(format: str) -> int:
    m, n, k = 128, 256, 512
    ops = random_operands(m, n, k, seed=0, with_alpha=True, format=format)
    out = torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, torch.float16)
    passed, summary = check_against_reference(out, ops, roundings=k // 16 + 2)
    print(f"M={m} N={n} K={k} {format} -> fp16 on cpu: {'PASS' if passed else 'FAIL'} ({summary})")
    return 0 if passed else 1


def _gpu_without_format(format: str) -> Optional[str]:
    """None if this GPU's kernel family runs `format`, else the one line that says what does."""
    major = torch.cuda.get_device_capability()[0]
    return format_unavailable(format, major, torch.cuda.get_device_name())


def _unrunnable_shape(format: str, shapes) -> Optional[str]:
    """The first shape no config of this GPU runs in `format` (e.g. MXFP8 x MXFP4 needs K % 128 on
    sm100), as one line; None when every shape runs."""
    from ..resolver import candidates

    configs = candidates(torch.cuda.get_device_capability()[0], format)
    for m, n, k in shapes:
        rules = {c.supports(m, n, k, 1, "float16") for c in configs}
        if None not in rules:
            return f"--shapes {m}x{n}x{k}: no {format} config of this GPU runs it: {'; '.join(sorted(rules))}"
    return None


def _main_job(args) -> int:
    from . import bench

    shapes = args.shapes or [s[:3] for s in RANKED_SHAPES]
    unrunnable = _unrunnable_shape(args.format, shapes)
    if unrunnable:
        print(unrunnable, file=sys.stderr)
        return 2
    ceilings = bench.measure_ceilings()
    rows = []
    for i, (m, n, k) in enumerate(shapes):
        rows.append(bench.run_shape(m, n, k, ceilings=ceilings, seed=i, format=args.format))
        print(f"  {m}x{n}x{k}: {rows[-1].check}", flush=True)
    print(bench.format_table(rows, ceilings))
    if args.json:
        from .tune import environment

        bench.write_json(args.json, rows, ceilings, environment())
        print(f"wrote {args.json}")
    if args.plot:
        bench.plot(args.plot, rows, ceilings)
        print(f"wrote {args.plot}")
    return 0 if all(r.verified for r in rows) else 1


def _tune(args) -> int:
    from .tune import tune, write_table

    shapes = args.shapes or [s[:3] for s in RANKED_SHAPES] + list(DECODE_SWEEP)
    unrunnable = _unrunnable_shape(args.format, shapes)
    if unrunnable:
        print(unrunnable, file=sys.stderr)
        return 2
    table = tune(shapes, iters=args.iters, format=args.format)
    path = write_table(table, args.out, args.format)
    print(f"wrote {path}; point NVFP4_GEMM_TUNED_TABLE at it (or copy it into the package's tuned/ folder)")
    return 0


def _model(args) -> int:
    from ..resolver import candidates

    family = families.by_name(args.arch)
    missing = format_unavailable(args.format, family.sm_major, f"the {family.name} family ({family.reference_gpu})")
    if missing:
        print(missing, file=sys.stderr)
        return 2
    model = family.model_module()
    machine = model.for_device(args.sm_count or family.reference_sm_count)
    weights = tuple(dict.fromkeys((n, k) for _, n, k, _ in RANKED_SHAPES))
    print(model.report(candidates(family.sm_major, args.format), weights, machine))
    return 0


def _model_families() -> tuple:
    """The families whose model prints a report (`model --arch`): the analytic models of the CUTLASS
    families (the sm90 model only picks, from fitted costs)."""
    return tuple(f for f in families.FAMILIES if hasattr(f.model_module(), "report"))


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")
    return value


def _gpumode_cpu_check() -> None:
    from .gpumode import custom_kernel
    from .harness import generate_input

    m, n, k = 128, 256, 512
    data, ops = generate_input(m, n, k, 1, seed=0)
    passed, summary = check_against_reference(custom_kernel(data).permute(2, 0, 1), ops, roundings=k // 16 + 2)
    print(f"custom_kernel on a {m}x{n}x{k} harness tuple on cpu: {'PASS' if passed else 'FAIL'} ({summary})")


def _gpumode(args) -> int:
    import json
    from dataclasses import asdict

    from .harness import time_like_harness
    from .timing import geomean

    shapes = args.shapes or [s[:3] for s in RANKED_SHAPES]
    sol = {s[:3]: s[3] for s in RANKED_SHAPES}
    timings = []
    for m, n, k in shapes:
        print(f"{m}x{n}x{k}: {args.inputs} inputs", flush=True)
        timing = time_like_harness(m, n, k, inputs=args.inputs, max_seconds=args.max_seconds,
                                   progress=lambda line: print(line, flush=True))
        timings.append(timing)
        if not timing.verified:
            print(f"  FAILED verification: {timing.check}", flush=True)
            continue
        speed_of_light = f", B200 speed of light {sol[(m, n, k)]} us" if (m, n, k) in sol else ""
        print(f"  mean {timing.mean_us:.2f} us (std err {timing.err_us:.3f}, best {timing.best_us:.2f}, "
              f"{timing.runs} runs){speed_of_light}", flush=True)
    passed = all(t.verified for t in timings)
    if passed:
        print(f"geomean of the means: {geomean(t.mean_us for t in timings):.2f} us")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([asdict(t) for t in timings], f, indent=1)
        print(f"wrote {args.json}")
    return 0 if passed else 1


def _report(args) -> int:
    from pathlib import Path

    from .report import run

    return run(Path(args.out_dir), tests_path=Path(args.tests), skip=frozenset(args.skip or ()),
               tune_iters=args.tune_iters, progress=lambda line: print(line, flush=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nvfp4_gemm", description="NVFP4 GEMM: benchmark and tune")
    parser.add_argument("--shapes", nargs="+", type=_parse_shape, help="MxNxK ... (default: the ranked shapes)")
    parser.add_argument("--json", help="write the results as JSON")
    parser.add_argument("--plot", help="draw the results as a PNG bar chart (needs matplotlib)")
    format_help = f"the GEMM format of the operands: {', '.join(FORMAT_NAMES)} (default {FORMAT_NAMES[0]})"
    parser.add_argument("--format", choices=FORMAT_NAMES, default=FORMAT_NAMES[0], help=format_help)
    sub = parser.add_subparsers(dest="command")
    tune_parser = sub.add_parser("tune", help="measure every valid config and write a tuned table")
    tune_parser.add_argument("--shapes", nargs="+", type=_parse_shape, help="default: ranked shapes + decode sweep")
    tune_parser.add_argument(
        "--out", help="tuned table path (default here: <gpu name>.json, <gpu name>_<format>.json for another format)"
    )
    tune_parser.add_argument("--iters", type=_positive_int, default=50, help="timed calls per candidate")
    # SUPPRESS: a subcommand's own default would overwrite `--format` given before the subcommand
    tune_parser.add_argument("--format", choices=FORMAT_NAMES, default=argparse.SUPPRESS, help=format_help)
    model_parser = sub.add_parser("model", help="print a family's model's predicted times (no GPU needed)")
    modeled = _model_families()
    model_parser.add_argument(
        "--arch", choices=[f.name for f in modeled], default=families.DEFAULT_FAMILY,
        help=f"the family: {', '.join(f'{f.name} ({f.reference_gpu} model)' for f in modeled)}; "
             f"default {families.DEFAULT_FAMILY}",
    )
    model_parser.add_argument(
        "--sm-count", type=_positive_int, default=None,
        help="multiprocessors (default: the family's reference GPU: "
             f"{', '.join(f'{f.reference_gpu} {f.reference_sm_count}' for f in modeled)})",
    )
    model_parser.add_argument("--format", choices=FORMAT_NAMES, default=argparse.SUPPRESS, help=format_help)
    gpumode_parser = sub.add_parser("gpumode", help="time gpumode.custom_kernel the way the GPU MODE leaderboard does")
    gpumode_parser.add_argument("--shapes", nargs="+", type=_parse_shape, help="default: the ranked shapes")
    gpumode_parser.add_argument("--inputs", type=_positive_int, default=50,
                                help="distinct inputs per shape, called back to back (default: the leaderboard's 50)")
    gpumode_parser.add_argument("--max-seconds", type=_positive_seconds, default=10.0,
                                help="stop a shape once its runs add up to this much measured time (default 10)")
    gpumode_parser.add_argument("--json", help="write the timings as JSON")
    report_parser = sub.add_parser("report", help="run everything on this GPU and write report.md + report.json")
    report_parser.add_argument("--out-dir", default="nvfp4_gemm_report", help="where to write (default: %(default)s)")
    report_parser.add_argument("--tests", default="tests/test_gpu.py",
                               help="the GPU tests of the source checkout (default: %(default)s)")
    report_parser.add_argument("--skip", nargs="+", choices=PARTS, help="parts not to run")
    report_parser.add_argument("--tune-iters", type=_positive_int, default=50, help="timed calls per tuner candidate")
    args = parser.parse_args(argv)
    if args.command in ("gpumode", "report") and args.format != FORMAT_NAMES[0]:
        parser.error(f"--format {args.format}: {args.command} runs the GPU MODE task's {FORMAT_NAMES[0]} GEMM only; "
                     f"the main job, tune and model take --format")
    if args.command == "model":
        return _model(args)
    if args.command == "report":
        return _report(args)

    supported, how = _supported_gpu()
    print(f"nvfp4_gemm: {how}", flush=True)
    if args.command == "tune":
        if not supported:
            print("tune needs a GPU this wheel has kernels for", file=sys.stderr)
            return 2
        missing = _gpu_without_format(args.format)
        if missing:
            print(missing, file=sys.stderr)
            return 2
        return _tune(args)
    if args.command == "gpumode":
        if not supported:
            _gpumode_cpu_check()
            print("gpumode timing needs a GPU this wheel has kernels for; nothing was timed", file=sys.stderr)
            return 2
        return _gpumode(args)
    if not supported:
        asked = [flag for flag, value in (("--shapes", args.shapes), ("--json", args.json), ("--plot", args.plot)) if value]
        if asked:
            print(f"{', '.join(asked)}: the main job verifies and times the GPU kernels, and this machine has none "
                  f"to run ({unsupported_reason()}); without them it runs one CPU reference GEMM", file=sys.stderr)
            return 2
        return _cpu_demo(args.format)
    missing = _gpu_without_format(args.format)
    if missing:
        print(missing, file=sys.stderr)
        return 2
    return _main_job(args)


if __name__ == "__main__":
    sys.exit(main())
