"""A whole model served: a transformers Llama with Llama-3-8B's shapes and random weights, as bf16, fp8
row-wise (cuBLAS through torch._scaled_mm), NVFP4 W4A4 and weight-only NVFP4 W4A16 (nvfp4_gemm.quantize_model
with activations="nvfp4" / "bf16"), in one run:
weight memory, prefill of a long prompt, and greedy decode steps at several batch sizes from a static KV
cache, each step captured once in a CUDA graph and replayed (issue 16, item 4).

    python benchmarks/serve_bench.py [--layers 32] [--prefill 2048] [--batches 1 16 64] [--json FILE] [--profile N]

Decode: a batch of prompts fills a StaticCache, then one step (forward of one token per sequence, greedy
argmax fed back as the next input) is captured in a CUDA graph and replayed; tokens/s = batch / median
step time (CUDA events around `--steps` replays, median of `--repeats`). Prefill: one forward of
`--prefill` tokens (batch 1, logits of the last token only, as serving stacks compute them), CUDA
events, median of `--repeats`. No torch.compile (its compile time for 32 layers is minutes per variant;
the graphs remove the Python launch cost it would remove). `--profile N` (GPU) replays one more step of each
decode timing under the CUDA profiler and prints its N costliest kernels: how much of a step the projections
are, and so how far a faster GEMM can move tokens/s. `--tiny` runs a 2-layer, 256-wide model on the CPU (a
smoke test of this script).
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import statistics
import subprocess
import sys
import time

import torch
from torch import nn

import nvfp4_gemm
from fp8_rowwise import swap_fp8
from nvfp4_gemm.timing import kernel_breakdown

LLAMA3_8B = dict(
    hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
    num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192, rope_theta=500000.0,
    rms_norm_eps=1e-5, tie_word_embeddings=False,
)
TINY = dict(LLAMA3_8B, hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=320)


def make_model(shape: dict, layers: int, device: torch.device):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**dict(shape, num_hidden_layers=layers), attn_implementation="sdpa")
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    for module in model.modules():  # random weights at the scale of trained ones (std 0.02)
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
    return model.eval(), config


def variant(base: nn.Module, name: str) -> nn.Module:
    if name == "bf16":
        return base
    model = copy.deepcopy(base)
    if name == "fp8":
        swap_fp8(model)
    elif name == "w4a4":
        nvfp4_gemm.quantize_model(model, activations="nvfp4")
    elif name == "w4a16":
        nvfp4_gemm.quantize_model(model, activations="bf16")
    else:
        raise ValueError(f"unknown variant {name!r}")
    return model


def weight_bytes(model: nn.Module) -> dict[str, int]:
    """Bytes of the decoder layers' projection weights (what quantization changes) and of everything."""
    def nbytes(tensors):
        return sum(t.numel() * t.element_size() for t in tensors)

    layers = model.model.layers
    return {
        "projections": nbytes(list(layers.parameters()) + list(layers.buffers())) - nbytes(
            p for n, p in layers.named_parameters() if "norm" in n
        ),
        "model": nbytes(list(model.parameters()) + list(model.buffers())),
    }


class Timer:
    """CUDA events on a GPU, perf_counter on the CPU; milliseconds."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def __call__(self, fn, repeats: int) -> float:
        fn()  # warm-up (and plans made)
        times = []
        for _ in range(repeats):
            if self.cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            else:
                begin = time.perf_counter()
                fn()
                times.append(1e3 * (time.perf_counter() - begin))
        return statistics.median(times)


def prefill_ms(model, config, tokens: int, timer: Timer, repeats: int, device) -> float:
    from transformers import StaticCache

    ids = torch.randint(0, config.vocab_size, (1, tokens), device=device)
    cache = StaticCache(config=config, max_cache_len=tokens)

    def run():
        cache.reset()
        model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)

    return timer(run, repeats)


def decode_step_ms(model, config, batch: int, prompt: int, steps: int, timer: Timer, repeats: int, device,
                   profile_top: int = 0):
    """Median time of one greedy decode step at `batch` (ms), whether it ran from a CUDA graph, and with
    `profile_top` > 0 on a GPU the step's device span (ms) and its `profile_top` costliest kernels (name, ms,
    launches) from one more step under the profiler (else None)."""
    from transformers import StaticCache

    cache = StaticCache(config=config, max_cache_len=prompt + steps * (repeats + 2) + 8)
    ids = torch.randint(0, config.vocab_size, (batch, prompt), device=device)
    logits = model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1).logits
    next_ids = logits[:, -1].argmax(-1, keepdim=True)
    position = torch.tensor([prompt], device=device)

    def step():
        out = model(input_ids=next_ids, past_key_values=cache, cache_position=position, use_cache=True).logits
        next_ids.copy_(out[:, -1].argmax(-1, keepdim=True))
        position.add_(1)

    step()  # every layer's plan made outside the capture
    graphed = False
    if device.type == "cuda":
        try:
            stream = torch.cuda.Stream(device)
            stream.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(stream):
                step()  # warm-up on the capture stream (its per-stream scratch)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, stream=stream):
                    step()
            torch.cuda.current_stream(device).wait_stream(stream)
            run_step, graphed = graph.replay, True
        except Exception as error:  # noqa: BLE001 - measured eagerly instead, and said so
            print(f"  CUDA graph capture failed ({type(error).__name__}: {error}); timing eager steps", flush=True)
            run_step = step
    else:
        run_step = step

    def run():
        for _ in range(steps):
            run_step()

    step_ms = timer(run, repeats) / steps
    breakdown = None
    if profile_top > 0 and device.type == "cuda":
        span_us, kernels = kernel_breakdown(run_step)
        breakdown = {"span_ms": span_us / 1e3,
                     "kernels": [(k.name, k.total_us / 1e3, k.count) for k in kernels[:profile_top]]}
    return step_ms, graphed, breakdown


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=32, help="decoder layers (Llama-3-8B has 32)")
    parser.add_argument("--prefill", type=int, default=2048, help="prefill tokens (batch 1)")
    parser.add_argument("--prompt", type=int, default=128, help="prompt tokens before the decode steps")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--steps", type=int, default=16, help="decode steps per timing")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--variants", nargs="+", default=["bf16", "fp8", "w4a4", "w4a16"])
    parser.add_argument("--tiny", action="store_true", help="2 layers, width 256, on the CPU")
    parser.add_argument("--json", help="write the rows as JSON")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="after each decode timing, one more step under the CUDA profiler: its N costliest kernels")
    args = parser.parse_args(argv)

    if args.tiny and args.profile:
        parser.error("--profile reads the CUDA profiler's kernel records: a GPU run, not --tiny")
    device = torch.device("cpu" if args.tiny else "cuda")
    if device.type == "cuda" and not torch.cuda.is_available():
        print("serve_bench needs a CUDA GPU (or --tiny for the CPU smoke test)", file=sys.stderr)
        return 2
    shape = TINY if args.tiny else LLAMA3_8B
    layers = 2 if args.tiny else args.layers
    timer = Timer(device)
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    import transformers  # the model's own code: its version moves the non-GEMM share of every step

    print(f"{gpu}, torch {torch.__version__}, transformers {transformers.__version__}, commit {git_commit()}, "
          f"{datetime.date.today()}: Llama-3-8B shapes, "
          f"{layers} layers, random weights (std 0.02)", flush=True)
    with torch.inference_mode():
        base, config = make_model(shape, layers, device)
        rows = []
        for name in args.variants:
            begin = time.perf_counter()
            model = variant(base, name)
            row = {"variant": name, "weights": weight_bytes(model), "prepare_s": time.perf_counter() - begin}
            row["prefill_ms"] = prefill_ms(model, config, args.prefill, timer, args.repeats, device)
            row["decode"] = {}
            for batch in args.batches:
                step_ms, graphed, breakdown = decode_step_ms(model, config, batch, args.prompt, args.steps, timer,
                                                             args.repeats, device, args.profile)
                row["decode"][batch] = {"step_ms": step_ms, "tokens_per_s": 1e3 * batch / step_ms, "cuda_graph": graphed,
                                        "profile": breakdown}
                if breakdown is not None:
                    print(f"  {name} b{batch}: step {step_ms:.2f} ms, profiled span {breakdown['span_ms']:.2f} ms:", flush=True)
                    for kernel, ms, count in breakdown["kernels"]:
                        print(f"    {ms:7.3f} ms {count:5d}x  {kernel[:100]}", flush=True)
            print(f"  {name}: projections {row['weights']['projections'] / 2**30:.2f} GiB, prefill {args.prefill} "
                  f"{row['prefill_ms']:.1f} ms, decode " + ", ".join(
                      f"b{b} {d['tokens_per_s']:.0f} tok/s" for b, d in row["decode"].items()), flush=True)
            rows.append(row)
            if model is not base:
                del model
                if device.type == "cuda":
                    torch.cuda.empty_cache()
    print(format_table(rows, args))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": gpu, "torch": torch.__version__, "transformers": transformers.__version__,
                       "commit": git_commit(), "date": str(datetime.date.today()),
                       "layers": layers, "args": vars(args), "rows": rows}, f, indent=1)
    return 0


def format_table(rows: list[dict], args) -> str:
    base = next((r for r in rows if r["variant"] == "bf16"), None)
    header = ["variant", "projection weights GiB", f"prefill {args.prefill} ms"] + [f"decode b{b} tok/s" for b in args.batches]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for r in rows:
        cells = [r["variant"], f"{r['weights']['projections'] / 2**30:.2f}", f"{r['prefill_ms']:.1f}"]
        cells += [f"{r['decode'][b]['tokens_per_s']:.0f}" for b in args.batches]
        if base is not None and r is not base:
            cells[1] += f" ({r['weights']['projections'] / base['weights']['projections']:.2f}x)"
            cells[2] += f" ({base['prefill_ms'] / r['prefill_ms']:.2f}x)"
            for i, b in enumerate(args.batches):
                cells[3 + i] += f" ({r['decode'][b]['tokens_per_s'] / base['decode'][b]['tokens_per_s']:.2f}x)"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
