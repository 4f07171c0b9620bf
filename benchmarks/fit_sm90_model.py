"""Fit the resolver's sm90 wgmma cost model to a Hopper sweep and check the choices it makes.

    python benchmarks/fit_sm90_model.py SWEEP.json [SWEEP.json ...] [--check-only]

Every timed (wgmma config, split_k) candidate of every shape with M > 16 (decode runs the direct
kernel) is one equation of the model in nvfp4_gemm/sm90_model.py:

    us = fixed[tile] + per_stage[tile] * waves * ceil(stages / split)
         + (global split) * (split_fixed + split_reduction * (split - 1) * M * N / 1e6)
         + (cluster split) * cluster_split_fixed

solved by least squares (relative error: every equation divided by its measured time). Prints the
constants to paste into `sm90_model.WGMMA_COST`, then, per shape, the model's pick (among the measured
candidates) against the measured best, with the slowdown; `--check-only` skips the fit and checks the
resolver's current constants (e.g. on another GPU's sweep).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from nvfp4_gemm import sm90_model
from nvfp4_gemm.configs import load_table


def _rows(paths: list[str]):
    table = load_table()
    for path in paths:
        with open(path) as f:
            sweep = json.load(f)
        sm_count = sweep["environment"]["sm_count"]
        for row in sweep["rows"]:
            m, n, k = row["shape"]
            if m <= 16:
                continue
            candidates = []
            for key, us in row["candidates"].items():
                name, _, split = key.partition(":")
                try:
                    config = table.by_name(name)
                except KeyError:
                    continue  # a config this build no longer has
                if config.mma == "wgmma":
                    candidates.append((config, int(split), us))
            if candidates:
                yield (m, n, k), sm_count, candidates


def fit(paths: list[str]) -> tuple[dict, float, float, float]:
    """(WGMMA_COST, SPLIT_FIXED_US, SPLIT_REDUCTION_US_PER_MELEMENT, CLUSTER_SPLIT_FIXED_US)."""
    tiles = sorted({(c.tile[0], c.tile[1]) for c in load_table().configs if c.family == "sm90" and c.mma == "wgmma"})
    column = {tile: i for i, tile in enumerate(tiles)}
    a_rows, b = [], []
    for (m, n, k), sm_count, candidates in _rows(paths):
        for config, split, us in candidates:
            row = [0.0] * (2 * len(tiles) + 3)
            i = column[(config.tile[0], config.tile[1])]
            row[2 * i] = 1.0
            row[2 * i + 1], row[-3], row[-2], row[-1] = sm90_model.wgmma_terms(config, m, n, k, 1, split, sm_count)
            a_rows.append([x / us for x in row])
            b.append(1.0)
    solution, *_ = np.linalg.lstsq(np.array(a_rows), np.array(b), rcond=None)
    cost = {tile: (round(float(solution[2 * i]), 2), round(float(solution[2 * i + 1]), 4)) for tile, i in column.items()}
    return cost, round(float(solution[-3]), 2), round(float(solution[-2]), 2), round(float(solution[-1]), 2)


def check(paths: list[str]) -> float:
    """Per shape: measured time of the model's pick over the measured best; returns the worst ratio."""
    worst = 1.0
    for (m, n, k), sm_count, candidates in _rows(paths):
        predicted = [(sm90_model.wgmma_predict_us(c, m, n, k, 1, s, sm_count), c, s, us) for c, s, us in candidates]
        _, pick, pick_split, pick_us = min(predicted, key=lambda p: p[0])
        best_us = min(us for *_, us in predicted)
        ratio = pick_us / best_us
        worst = max(worst, ratio)
        flag = "" if ratio <= 1.10 else "  <-- more than 10 % off"
        print(f"{m:5d}x{n:5d}x{k:5d}: model {pick.name}:{pick_split} {pick_us:8.2f} us, best {best_us:8.2f} us, "
              f"x{ratio:.3f}{flag}")
    return worst


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="+")
    parser.add_argument("--check-only", action="store_true")
    args = parser.parse_args(argv)
    if not args.check_only:
        cost, split_fixed, reduction, cluster_fixed = fit(args.sweeps)
        print(f"fitted on {sum(len(c) for *_, c in _rows(args.sweeps))} timings")
        print("WGMMA_COST = {")
        for tile, (fixed, per_stage) in cost.items():
            print(f"    {tile}: ({fixed}, {per_stage}),")
        print("}")
        print(f"SPLIT_FIXED_US = {split_fixed}")
        print(f"SPLIT_REDUCTION_US_PER_MELEMENT = {reduction}")
        print(f"CLUSTER_SPLIT_FIXED_US = {cluster_fixed}")
        sm90_model.WGMMA_COST.update(cost)
        sm90_model.SPLIT_FIXED_US = split_fixed
        sm90_model.SPLIT_REDUCTION_US_PER_MELEMENT = reduction
        sm90_model.CLUSTER_SPLIT_FIXED_US = cluster_fixed
    worst = check(args.sweeps)
    print(f"worst slowdown of the model's pick against the measured best: x{worst:.3f}")
    return 0 if worst <= 1.10 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
