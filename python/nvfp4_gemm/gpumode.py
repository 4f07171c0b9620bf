"""`nvfp4_gemm.gpumode`: the same module as nvfp4_gemm.tools.gpumode (the tooling's home; this name stays importable)."""

import sys

from .tools import gpumode

sys.modules[__name__] = gpumode
