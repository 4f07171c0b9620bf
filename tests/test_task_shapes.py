import re
from pathlib import Path

import pytest

from nvfp4_gemm.task_shapes import CORRECTNESS_SHAPES, RANKED_SHAPES

SPEC = Path(__file__).resolve().parents[2] / "shared" / "spec" / "task_shapes.yaml"


def test_shipped_shapes_match_the_spec():
    if not SPEC.is_file():
        pytest.skip(f"{SPEC} not beside this checkout")
    text = SPEC.read_text()
    tests_part, bench_part = text.split("benchmarks:")
    rows = lambda part: [tuple(int(x) for x in r) for r in re.findall(r"\{m:\s*(\d+),\s*n:\s*(\d+),\s*k:\s*(\d+)", part)]
    assert tuple(rows(tests_part)) == CORRECTNESS_SHAPES
    sol = [float(x) for x in re.findall(r"sol_us_b200:\s*([\d.]+)", bench_part)]
    assert tuple((m, n, k, s) for (m, n, k), s in zip(rows(bench_part), sol)) == RANKED_SHAPES
