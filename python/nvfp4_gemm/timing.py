"""`nvfp4_gemm.timing`: the same module as nvfp4_gemm.tools.timing (the tooling's home; this name stays importable)."""

import sys

from .tools import timing

sys.modules[__name__] = timing
