"""Peak host memory of loading an NVFP4 checkpoint with nvfp4_gemm.checkpoints.from_pretrained,
next to the checkpoint's size.

    PYTHONPATH=python python3 scripts/measure_checkpoint_load.py [--layers 8] [--dir /tmp/ckpt]

The checkpoint is written here by `write_checkpoint`, a builder that follows the compressed-tensors
`nvfp4-pack-quantized` file layout llmcompressor writes (tests/fixtures/llama_tiny_nvfp4_llmcompressor
shows it): Llama-3-8B's shapes (hidden 4096, intermediate 14336, 32 heads, 8 KV heads, vocab
128256), `--layers` of its 32 blocks, random codes and scales. It is NOT a tool's output (quantizing
an 8B-shaped model with llmcompressor on this CPU is out of reach); the loader reads it the same
way. The load runs in a fresh process that samples its resident memory (VmRSS, split into
anonymous and file-backed pages) every millisecond; the report gives the peak over the load and
the kernel's high-water mark (VmHWM) minus the resident memory before the load.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

LLAMA3_8B = dict(hidden=4096, intermediate=14336, heads=32, kv_heads=8, vocab=128256)


def write_checkpoint(directory: Path, layers: int, shard_layers: int = 4) -> int:
    """Write the checkpoint (config.json + shards of `shard_layers` blocks); return its bytes."""
    from safetensors.torch import save_file

    c = LLAMA3_8B
    head_dim = c["hidden"] // c["heads"]
    directory.mkdir(parents=True, exist_ok=True)
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": c["hidden"],
        "intermediate_size": c["intermediate"], "num_attention_heads": c["heads"], "num_key_value_heads": c["kv_heads"],
        "num_hidden_layers": layers, "vocab_size": c["vocab"], "max_position_embeddings": 8192, "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "hidden_act": "silu",
        "quantization_config": {
            "quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "ignore": ["lm_head"],
            "config_groups": {"group_0": {
                "targets": ["Linear"], "format": "nvfp4-pack-quantized",
                "weights": {"num_bits": 4, "type": "float", "group_size": 16, "strategy": "tensor_group", "symmetric": True},
                "input_activations": {"num_bits": 4, "type": "float", "group_size": 16, "strategy": "tensor_group",
                                      "symmetric": True, "dynamic": "local"},
            }},
        },
    }
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    gen = torch.Generator().manual_seed(0)
    shapes = {
        "self_attn.q_proj": (c["heads"] * head_dim, c["hidden"]), "self_attn.k_proj": (c["kv_heads"] * head_dim, c["hidden"]),
        "self_attn.v_proj": (c["kv_heads"] * head_dim, c["hidden"]), "self_attn.o_proj": (c["hidden"], c["heads"] * head_dim),
        "mlp.gate_proj": (c["intermediate"], c["hidden"]), "mlp.up_proj": (c["intermediate"], c["hidden"]),
        "mlp.down_proj": (c["hidden"], c["intermediate"]),
    }

    def sixteen_bit(*shape):
        return (torch.randn(*shape, generator=gen) * 0.02).to(torch.bfloat16)

    shards = [{"model.embed_tokens.weight": sixteen_bit(c["vocab"], c["hidden"]), "model.norm.weight": sixteen_bit(c["hidden"])}]
    for layer in range(layers):
        if layer % shard_layers == 0 and layer:
            shards.append({})
        tensors = shards[-1]
        prefix = f"model.layers.{layer}"
        tensors[f"{prefix}.input_layernorm.weight"] = sixteen_bit(c["hidden"])
        tensors[f"{prefix}.post_attention_layernorm.weight"] = sixteen_bit(c["hidden"])
        for name, (n, k) in shapes.items():
            tensors[f"{prefix}.{name}.weight_packed"] = torch.randint(0, 256, (n, k // 2), generator=gen, dtype=torch.uint8)
            tensors[f"{prefix}.{name}.weight_scale"] = (torch.rand(n, k // 16, generator=gen) * 400 + 1).to(torch.float8_e4m3fn)
            tensors[f"{prefix}.{name}.weight_global_scale"] = torch.tensor([20000.0])
            tensors[f"{prefix}.{name}.input_global_scale"] = torch.tensor([300.0])
    shards.append({"lm_head.weight": sixteen_bit(c["vocab"], c["hidden"])})
    total = 0
    for index, tensors in enumerate(shards):
        path = directory / f"model-{index + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(tensors, str(path))
        total += path.stat().st_size
    return total


_CHILD = r"""
import sys, threading, time, json
import torch
torch.set_num_threads(1)
from nvfp4_gemm.checkpoints import from_pretrained

def status():
    fields = {}
    for line in open("/proc/self/status"):
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            fields[key] = int(value.split()[0]) * 1024
    return fields

peak = {"VmRSS": 0, "RssAnon": 0, "RssFile": 0}
done = False
def sample():
    while not done:
        now = status()
        for key in peak:
            peak[key] = max(peak[key], now[key])
        time.sleep(0.001)

before = status()
thread = threading.Thread(target=sample, daemon=True)
thread.start()
start = time.perf_counter()
model = from_pretrained(sys.argv[1])
seconds = time.perf_counter() - start
done = True
thread.join()
after = status()
# safetensors may hand out tensors that map the file (pages read on first touch): read every byte
checksum = max(int(t.detach().reshape(-1).view(torch.uint8).max()) for t in (*model.parameters(), *model.buffers()))
touched = status()
print(json.dumps({"before": before, "peak": peak, "after": after, "touched": touched, "seconds": seconds}))
"""


def measure(directory: Path) -> dict:
    result = subprocess.run([sys.executable, "-c", _CHILD, str(directory)], capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"the loading process failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=8, help="Llama-3-8B blocks to write (of 32)")
    parser.add_argument("--dir", type=Path, default=None, help="where to write it (default: a temporary directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = args.dir or Path(tmp) / "checkpoint"
        size = write_checkpoint(directory, args.layers)
        m = measure(directory)
    gib = 2.0**30
    base = m["before"]["VmRSS"]
    hwm = m["after"]["VmHWM"] - base
    print(f"checkpoint: Llama-3-8B shapes, {args.layers} of 32 blocks, {size / gib:.2f} GiB on disk")
    print(f"load: {m['seconds']:.1f} s; resident before {base / gib:.2f} GiB")
    print(f"  peak resident over the load (VmHWM - before): {hwm / gib:.2f} GiB = {hwm / size:.2f}x the checkpoint")
    print(f"  sampled peaks above before: anonymous {(m['peak']['RssAnon'] - m['before']['RssAnon']) / gib:.2f} GiB, "
          f"file-backed {(m['peak']['RssFile'] - m['before']['RssFile']) / gib:.2f} GiB")
    print(f"  resident after (model held): {(m['after']['VmRSS'] - base) / gib:.2f} GiB")
    touched = m["touched"]
    print(f"after reading every byte of the model: resident {(touched['VmRSS'] - base) / gib:.2f} GiB "
          f"(anonymous {(touched['RssAnon'] - m['before']['RssAnon']) / gib:.2f}, file-backed "
          f"{(touched['RssFile'] - m['before']['RssFile']) / gib:.2f}), high-water mark "
          f"{(touched['VmHWM'] - base) / gib:.2f} GiB = {(touched['VmHWM'] - base) / size:.2f}x the checkpoint")
    return 0


if __name__ == "__main__":
    sys.exit(main())
