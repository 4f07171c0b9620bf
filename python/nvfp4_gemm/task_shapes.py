"""`nvfp4_gemm.task_shapes`: the same module as nvfp4_gemm.tools.task_shapes (the tooling's home; this name stays importable)."""

import sys

from .tools import task_shapes

sys.modules[__name__] = task_shapes
