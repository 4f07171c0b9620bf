"""`python -m nvfp4_gemm` (also `nvfp4-gemm`): the main job.

    python -m nvfp4_gemm [--shapes MxNxK ...] [--json FILE] [--plot FILE]
        On a GPU this wheel has kernels for: verify each shape against the exact reference, then time
        it next to the vendor baseline (CUDA events, L2 flushed, median) and print the table.
        Elsewhere: run one small GEMM through the CPU reference path and say why (with --shapes,
        --json or --plot: exit status 2, saying why, since there is nothing to time).
    python -m nvfp4_gemm tune [--shapes MxNxK ...] [--out FILE] [--iters N]
        Measure every valid config on this GPU and write the tuned table the resolver reads.
    python -m nvfp4_gemm model [--sm-count N]
        Print the sm100 (B200) model's predicted times per config for the ranked shapes' weights
        at M = 1, 16, 64, 128, 256 (the tables in docs/b200_model.md). Needs no GPU.

Exit status 1 if any verification fails.
"""

from __future__ import annotations

import argparse
import sys

import torch

from . import compiled_architectures
from .configs import shape_rule_violation
from .ops import unsupported_reason
from .task_shapes import RANKED_SHAPES
from .testing import check_against_reference, random_operands

# The decode sweep of the benchmark suite: M tokens against a 7168 x 7168 weight.
DECODE_SWEEP = tuple((m, 7168, 7168) for m in (1, 16, 64, 128, 256))


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


def _cpu_demo() -> int:
    m, n, k = 128, 256, 512
    ops = random_operands(m, n, k, seed=0, with_alpha=True)
    out = torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, torch.float16)
    passed, summary = check_against_reference(out, ops, roundings=k // 16 + 2)
    print(f"M={m} N={n} K={k} fp16 on cpu: {'PASS' if passed else 'FAIL'} ({summary})")
    return 0 if passed else 1


def _main_job(args) -> int:
    from . import bench

    shapes = args.shapes or [s[:3] for s in RANKED_SHAPES]
    ceilings = bench.measure_ceilings()
    rows = []
    for i, (m, n, k) in enumerate(shapes):
        rows.append(bench.run_shape(m, n, k, ceilings=ceilings, seed=i))
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
    table = tune(shapes, iters=args.iters)
    path = write_table(table, args.out)
    print(f"wrote {path}; point NVFP4_GEMM_TUNED_TABLE at it (or copy it into the package's tuned/ folder)")
    return 0


def _model(args) -> int:
    from . import sm100_model
    from .resolver import candidates

    machine = sm100_model.for_device(args.sm_count)
    weights = tuple(dict.fromkeys((n, k) for _, n, k, _ in RANKED_SHAPES))
    print(sm100_model.report(candidates(10), weights, machine))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nvfp4_gemm", description="NVFP4 GEMM: benchmark and tune")
    parser.add_argument("--shapes", nargs="+", type=_parse_shape, help="MxNxK ... (default: the ranked shapes)")
    parser.add_argument("--json", help="write the results as JSON")
    parser.add_argument("--plot", help="draw the results as a PNG bar chart (needs matplotlib)")
    sub = parser.add_subparsers(dest="command")
    tune_parser = sub.add_parser("tune", help="measure every valid config and write a tuned table")
    tune_parser.add_argument("--shapes", nargs="+", type=_parse_shape, help="default: ranked shapes + decode sweep")
    tune_parser.add_argument("--out", help="tuned table path (default: <gpu name>.json here)")
    tune_parser.add_argument("--iters", type=_positive_int, default=50, help="timed calls per candidate")
    model_parser = sub.add_parser("model", help="print the B200 model's predicted times (no GPU needed)")
    model_parser.add_argument(
        "--sm-count", type=_positive_int, default=148, help="multiprocessors (default: B200's 148)"
    )
    args = parser.parse_args(argv)
    if args.command == "model":
        return _model(args)

    supported, how = _supported_gpu()
    print(f"nvfp4_gemm: {how}", flush=True)
    if args.command == "tune":
        if not supported:
            print("tune needs a GPU this wheel has kernels for", file=sys.stderr)
            return 2
        return _tune(args)
    if not supported:
        asked = [flag for flag, value in (("--shapes", args.shapes), ("--json", args.json), ("--plot", args.plot)) if value]
        if asked:
            print(f"{', '.join(asked)}: the main job verifies and times the GPU kernels, and this machine has none "
                  f"to run ({unsupported_reason()}); without them it runs one CPU reference GEMM", file=sys.stderr)
            return 2
        return _cpu_demo()
    return _main_job(args)


if __name__ == "__main__":
    sys.exit(main())
