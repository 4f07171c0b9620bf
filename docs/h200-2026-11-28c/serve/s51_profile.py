"""Where a graphed decode step of serve_bench's model goes: kernels by total device time (one replay)."""
import sys, collections
sys.path.insert(0, "benchmarks")
import torch, transformers
from torch.profiler import profile, ProfilerActivity
from torch.autograd import DeviceType
from serve_bench import LLAMA3_8B, make_model, variant

print("transformers", transformers.__version__, "torch", torch.__version__)
with torch.inference_mode():
    base, config = make_model(LLAMA3_8B, 32, torch.device("cuda"))
    for name in sys.argv[1].split(","):
        model = variant(base, name)
        for batch in (int(b) for b in sys.argv[2].split(",")):
            cache = transformers.StaticCache(config=config, max_cache_len=248)
            ids = torch.randint(0, config.vocab_size, (batch, 128), device="cuda")
            logits = model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1).logits
            next_ids = logits[:, -1].argmax(-1, keepdim=True)
            position = torch.tensor([128], device="cuda")
            def step():
                out = model(input_ids=next_ids, past_key_values=cache, cache_position=position, use_cache=True).logits
                next_ids.copy_(out[:, -1].argmax(-1, keepdim=True)); position.add_(1)
            step()
            s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                step(); g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, stream=s):
                    step()
            torch.cuda.current_stream().wait_stream(s)
            for _ in range(3): g.replay()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                g.replay(); torch.cuda.synchronize()
            ev = [e for e in prof.events() if e.device_type == DeviceType.CUDA]
            span = (max(e.time_range.end for e in ev) - min(e.time_range.start for e in ev)) / 1e3
            busy = sum(e.time_range.end - e.time_range.start for e in ev) / 1e3
            tot = collections.Counter(); cnt = collections.Counter()
            for e in ev:
                k = e.name[:90]; tot[k] += (e.time_range.end - e.time_range.start) / 1e3; cnt[k] += 1
            print(f"== {name} batch {batch}: step span {span:.2f} ms, kernels busy {busy:.2f} ms, {len(ev)} kernels")
            for k, v in tot.most_common(8):
                print(f"   {v:7.3f} ms  x{cnt[k]:4d}  {k}")
        if model is not base:
            del model; torch.cuda.empty_cache()
