"""`nvfp4_gemm.harness`: the same module as nvfp4_gemm.tools.harness (the tooling's home; this name stays importable)."""

import sys

from .tools import harness

sys.modules[__name__] = harness
