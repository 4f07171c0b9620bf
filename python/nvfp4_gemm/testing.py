"""`nvfp4_gemm.testing`: the same module as nvfp4_gemm.tools.testing (the tooling's home; this name stays importable)."""

import sys

from .tools import testing

sys.modules[__name__] = testing
