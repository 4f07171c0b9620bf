"""W4A16 decode A/B: the direct kernel at M = 1, 4, 16 on the model layers: the layer (resolver's pick) and the best
direct split, against cuBLAS bf16 in the same run; every timed (config, split) checked against the exact reference."""
import sys, torch, nvfp4_gemm
sys.path.insert(0, "benchmarks")
from sweep_hopper import MODEL_LAYERS
from nvfp4_gemm import gemm
from nvfp4_gemm.nn import NVFP4Linear
from nvfp4_gemm.formats import reference_gemm_float64
from nvfp4_gemm.testing import earned_tolerance, fp32_roundings
from nvfp4_gemm.timing import geomean, time_cuda
label = sys.argv[1]
CFG = "sm90_direct_16x128x128_splitk_bf16xnvfp4"
ratios, rows = [], []
with torch.no_grad():
    for m in (1, 4, 16):
        for n, k in MODEL_LAYERS:
            torch.manual_seed(m + n + k)
            linear = torch.nn.Linear(k, n, bias=False, dtype=torch.bfloat16, device="cuda")
            layer = NVFP4Linear.from_linear(linear, activations="bf16")
            x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
            alpha = nvfp4_gemm.formats.gemm_alpha(layer.weight_global_scale)
            b, bs = layer.weight, layer.weight_scale
            exact = reference_gemm_float64(x, b, None, bs, alpha)
            tol = earned_tolerance(exact, reference_gemm_float64(x, b, None, bs, alpha, magnitude=True), torch.bfloat16, fp32_roundings(k))
            out = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
            best = None
            for split in (1, 2, 3, 4, 6, 8, 12, 14, 16):
                if split > 1 and -(-n // 128) * split > 3 * 132:
                    continue
                out.fill_(float("nan"))
                gemm(x, b, None, bs, alpha, out=out, config=CFG, split_k=split)
                worst = float(((out.double() - exact).abs() / tol).max())
                assert worst <= 1.0, (label, m, n, k, split, worst)
                t = time_cuda(lambda s=split: gemm(x, b, None, bs, alpha, out=out, config=CFG, split_k=s), iters=100).median_us
                best = (t, split) if best is None or t < best[0] else best
            got = layer(x)
            assert float(((got.double() - exact).abs() / tol).max()) <= 1.0
            lt = time_cuda(lambda: layer(x), iters=100).median_us
            ct = time_cuda(lambda: linear(x), iters=100).median_us
            ratios.append(ct / lt)
            rows.append(f"{m}x{n}x{k} layer {lt:6.2f} best {best[0]:6.2f}@{best[1]:<2d} cublas {ct:6.2f}")
print(f"{label}: W4A16 layer x cuBLAS bf16 geomean {geomean(ratios):.3f}x | " + " | ".join(rows), flush=True)
