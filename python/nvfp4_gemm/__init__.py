"""nvfp4_gemm: ahead-of-time compiled NVFP4 x NVFP4 GEMM for PyTorch.

``out = alpha * dequant(a) @ dequant(b).T`` with FP4 (e2m1) values, one FP8 (e4m3) scale per 16
values in the cuBLAS 128x4 blocked layout, FP32 accumulation and one rounding to fp16/bf16/fp32.

Entry points: ``torch.ops.nvfp4.gemm`` and ``torch.ops.nvfp4.quantize`` (registered on import),
``nvfp4_gemm.gemm``, ``nvfp4_gemm.quantize``; the model path: ``nvfp4_gemm.nn.NVFP4Linear`` and
``nvfp4_gemm.quantize_model``; checkpoints: ``nvfp4_gemm.load_quantized`` (ModelOpt and
compressed-tensors NVFP4 files); tensor parallel: ``nvfp4_gemm.parallel.shard_model``.
"""

from . import checkpoints, nn, parallel
from .checkpoints import load_quantized
from .configs import Config
from .formats import (
    E2M1_VALUES,
    blocked_scale_numel,
    blocked_scale_shape,
    dequantize,
    from_blocked,
    gemm_alpha,
    pack_fp4,
    reference_gemm,
    round_once,
    to_blocked,
    unpack_fp4,
)
from .nn import NVFP4Linear, QuantizeSummary, quantize_model
from .ops import compiled_architectures, gemm, supported_capabilities
from .quantization import Quantized, quantize, quantize_sms, set_quantize_sms
from .resolver import Resolution, UnsupportedDeviceError, candidates, resolve
from .tools import gpumode

__version__ = "0.1.0"

__all__ = [
    "Config",
    "E2M1_VALUES",
    "NVFP4Linear",
    "Resolution",
    "UnsupportedDeviceError",
    "blocked_scale_numel",
    "blocked_scale_shape",
    "candidates",
    "checkpoints",
    "compiled_architectures",
    "dequantize",
    "from_blocked",
    "gemm",
    "gemm_alpha",
    "gpumode",
    "load_quantized",
    "pack_fp4",
    "quantize",
    "Quantized",
    "QuantizeSummary",
    "quantize_model",
    "quantize_sms",
    "nn",
    "parallel",
    "reference_gemm",
    "resolve",
    "round_once",
    "set_quantize_sms",
    "supported_capabilities",
    "to_blocked",
    "unpack_fp4",
]
