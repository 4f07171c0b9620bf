"""The GPU MODE nvfp4_gemm problem's shapes (shared/spec/task_shapes.yaml), as data the package ships.

All operands K-major, L = 1, fp16 output. tests/test_task_shapes.py checks this copy against the spec.
"""

from __future__ import annotations

# (m, n, k): correctness only, rtol = atol = 1e-3
CORRECTNESS_SHAPES = (
    (128, 256, 256),
    (128, 1536, 7168),
    (128, 3072, 1536),
    (256, 7168, 256),
    (256, 7168, 2048),
    (2304, 4608, 7168),
    (384, 7168, 2304),
    (512, 512, 7168),
    (512, 4096, 512),
    (512, 1536, 7168),
)

# (m, n, k, speed of light on a B200 in microseconds): ranked by the geometric mean of the times.
# The organisers' speed of light is total bytes (A + B + both scales + fp16 C) / 7.68 TB/s.
RANKED_SHAPES = (
    (128, 7168, 16384, 8.994),
    (128, 4096, 7168, 2.354),
    (128, 7168, 2048, 1.333),
)
