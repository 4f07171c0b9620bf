"""`nvfp4_gemm.bench`: the same module as nvfp4_gemm.tools.bench (the tooling's home; this name stays importable)."""

import sys

from .tools import bench

sys.modules[__name__] = bench
