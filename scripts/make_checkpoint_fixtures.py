"""Make tests/fixtures/llama_tiny_nvfp4_*: a tiny random Llama (2 layers, hidden 256, intermediate
512, vocab 320) quantized by the real tools, and check each file against the tool's own
dequantization.

    python3 -m venv --system-site-packages /tmp/venv16
    /tmp/venv16/bin/pip install llmcompressor==0.14.0.1 nvidia-modelopt==0.47.0   # CPU torch is reused
    PYTHONPATH=python /tmp/venv16/bin/python scripts/make_checkpoint_fixtures.py [--out tests/fixtures]

Writes, per tool, the directory the tool's own save wrote (config.json, model.safetensors, ...) and
PROVENANCE.json: tool versions, the recipe, and per quantized layer the largest relative difference
between the tool's own float32 dequantization of the file and the exact value of the weight
nvfp4_gemm loads from it; the script fails when one exceeds the tool's float32 roundings
(ROUNDING_BOUND). Needs no GPU (both tools quantize on the CPU).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

import torch

VOCAB = 320
CALIBRATION = dict(batches=8, tokens=32, seed=1)


def tiny_llama(directory: Path) -> None:
    """Save the random bf16 model and a word-level tokenizer (the tools load models from disk)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=VOCAB, hidden_size=256, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    with torch.no_grad():  # varied magnitudes per layer, so the global scales differ
        for i, linear in enumerate(m for m in model.modules() if isinstance(m, torch.nn.Linear)):
            linear.weight.mul_(1.0 + 0.37 * i)
    model.save_pretrained(directory)
    words = Tokenizer(models.WordLevel(vocab={f"t{i}": i for i in range(VOCAB)}, unk_token="t0"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, unk_token="t0", pad_token="t1", eos_token="t2", bos_token="t3")
    tokenizer.save_pretrained(directory)


def calibration_ids() -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(CALIBRATION["seed"])
    return [torch.randint(0, VOCAB, (1, CALIBRATION["tokens"]), generator=gen) for _ in range(CALIBRATION["batches"])]


def quantize_llmcompressor(base: Path, out: Path, scheme: str) -> dict:
    from datasets import Dataset
    from llmcompressor import oneshot
    from llmcompressor.modifiers.quantization import QuantizationModifier
    from transformers import AutoTokenizer, LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(base, dtype=torch.bfloat16)
    ids = [b[0].tolist() for b in calibration_ids()]
    dataset = Dataset.from_dict({"input_ids": ids, "attention_mask": [[1] * len(i) for i in ids]})
    recipe = QuantizationModifier(targets="Linear", scheme=scheme, ignore=["lm_head"])
    oneshot(
        model=model, dataset=dataset, recipe=recipe, processor=AutoTokenizer.from_pretrained(base),
        max_seq_length=CALIBRATION["tokens"], num_calibration_samples=len(ids),
    )
    model.save_pretrained(out, save_compressed=True)
    return {
        "tool": "llmcompressor", "versions": {p: version(p) for p in ("llmcompressor", "compressed-tensors", "transformers", "torch")},
        "recipe": f"QuantizationModifier(targets='Linear', scheme={scheme!r}, ignore=['lm_head'])",
        "calibration": CALIBRATION,
    }


def quantize_modelopt(base: Path, out: Path) -> dict:
    import modelopt.torch.quantization as mtq
    from modelopt.torch.export import export_hf_checkpoint
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(base, dtype=torch.bfloat16)
    batches = calibration_ids()

    def forward_loop(m):
        for ids in batches:
            m(ids)

    model = mtq.quantize(model, mtq.NVFP4_DEFAULT_CFG, forward_loop)
    export_hf_checkpoint(model, export_dir=out)
    return {
        "tool": "nvidia-modelopt", "versions": {p: version(p) for p in ("nvidia-modelopt", "transformers", "torch")},
        "recipe": "mtq.quantize(model, mtq.NVFP4_DEFAULT_CFG, forward_loop); export_hf_checkpoint(model, export_dir)",
        "calibration": CALIBRATION,
    }


def tool_dequantized(directory: Path, tool: str) -> dict[str, torch.Tensor]:
    """Each quantized layer's weight as the tool itself dequantizes the saved file (float32)."""
    from safetensors.torch import load_file

    tensors = {}
    for file in sorted(directory.glob("*.safetensors")):
        tensors.update(load_file(file))
    weights = {}
    if tool == "llmcompressor":
        from compressed_tensors.compressors.nvfp4.helpers import unpack_fp4_from_uint8
        from compressed_tensors.quantization.lifecycle.forward import dequantize
        from compressed_tensors.quantization.quant_scheme import NVFP4

        for name in (n for n in tensors if n.endswith(".weight_packed")):
            layer = name.removesuffix(".weight_packed")
            packed = tensors[name]
            codes = unpack_fp4_from_uint8(packed, packed.shape[0], packed.shape[1] * 2, dtype=torch.float32)
            weights[layer] = dequantize(
                x_q=codes, scale=tensors[f"{layer}.weight_scale"].to(torch.float32), args=NVFP4["weights"],
                global_scale=tensors[f"{layer}.weight_global_scale"], dtype=torch.float32,
            )
    else:
        from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor

        for name in (n for n in tensors if n.endswith(".weight_scale_2")):
            layer = name.removesuffix(".weight_scale_2")
            packed = tensors[f"{layer}.weight"]
            shape = torch.Size((packed.shape[0], packed.shape[1] * 2))
            qtensor = NVFP4QTensor(shape, torch.float32, packed)
            weights[layer] = qtensor.dequantize(
                dtype=torch.float32, scale=tensors[f"{layer}.weight_scale"],
                double_scale=tensors[name], block_sizes={-1: 16},
            )
    return weights


# The tool's float32 dequantization rounds up to three times (its scale product or quotient, then
# the product with the e2m1 value); nvfp4_gemm's buffers give the value exactly (float64). A wrong
# nibble order, scale layout or scale direction is off by factors of 2 or more, not by these.
ROUNDING_BOUND = 4 * 2.0**-24


def check_against_tool(directory: Path, tool: str) -> dict[str, float]:
    """Per layer: max |tool's dequantized weight - nvfp4_gemm's| / |nvfp4_gemm's| (relative)."""
    from nvfp4_gemm import formats
    from nvfp4_gemm.checkpoints import from_pretrained
    from nvfp4_gemm.nn import NVFP4Linear

    model = from_pretrained(directory, activations="bf16")
    ours = {
        name: (formats.dequantize(m.weight, m.weight_scale, torch.float64) / m.weight_global_scale.double())
        for name, m in model.named_modules() if isinstance(m, NVFP4Linear)
    }
    theirs = tool_dequantized(directory, tool)
    if set(ours) != set(theirs):
        raise SystemExit(f"{tool}: layers differ: ours {sorted(ours)}, the tool's {sorted(theirs)}")
    relative = {}
    for name in sorted(ours):
        difference = (theirs[name].double() - ours[name]).abs()
        zero = ours[name] == 0
        if bool((difference[zero] != 0).any()):
            raise SystemExit(f"{tool}: {name}: the tool dequantizes a zero of ours to non-zero")
        relative[name] = float((difference[~zero] / ours[name][~zero].abs()).max())
    return relative


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "tests" / "fixtures")
    args = parser.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        tiny_llama(base)
        jobs = {
            "llama_tiny_nvfp4_llmcompressor": lambda out: quantize_llmcompressor(base, out, "NVFP4"),
            "llama_tiny_nvfp4a16_llmcompressor": lambda out: quantize_llmcompressor(base, out, "NVFP4A16"),
            "llama_tiny_nvfp4_modelopt": lambda out: quantize_modelopt(base, out),
        }
        for name, job in jobs.items():
            out = args.out / name
            shutil.rmtree(out, ignore_errors=True)
            provenance = job(out)
            provenance["max_relative_difference_from_tool_dequantization"] = differences = check_against_tool(
                out, "llmcompressor" if "llmcompressor" in name else "modelopt"
            )
            worst = max(differences.values())
            failures += worst > ROUNDING_BOUND
            (out / "PROVENANCE.json").write_text(json.dumps(provenance, indent=2) + "\n")
            size = sum(f.stat().st_size for f in out.iterdir())
            print(f"{name}: {size / 2**20:.2f} MiB, {len(differences)} layers, worst |tool - ours| / |ours| = {worst:.3g} (bound {ROUNDING_BOUND:.3g})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
