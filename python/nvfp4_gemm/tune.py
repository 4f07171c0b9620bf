"""`nvfp4_gemm.tune`: the same module as nvfp4_gemm.tools.tune (the tooling's home; this name stays importable)."""

import sys

from .tools import tune

sys.modules[__name__] = tune
