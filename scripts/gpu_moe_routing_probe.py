#!/usr/bin/env python3
"""Tokens per expert: the recorded Mixtral prefill's routing against the replay's draw (issue 19;
tests/gpu/VALIDATION.md).

Runs the capture script's Mixtral prefill (examples/capture_trace.py: 8 layers, 8 experts, top-2,
bf16, b4 s128, random weights, seed 0) once under a dispatch mode that records every
`aten::_grouped_mm`'s offsets, then times the first expert GEMM ([1024, 1024] x [8, 1024, 7168])
with each layer's real group sizes, with 16 multinomial draws (each routed row picks an expert
uniformly: the replay's draw without an Execution Trace) and with equal groups. Prints the
counts, their tile sums (S128 = sum of ceil(count / 128)) and the median kernel time of each.
Usage (on the GPU machine): python3 scripts/gpu_moe_routing_probe.py
"""
import math
import random
import statistics

import torch
import transformers
from torch.profiler import profile, ProfilerActivity
from torch.utils._python_dispatch import TorchDispatchMode

torch.manual_seed(0)
cfg = transformers.MixtralConfig(vocab_size=32000, hidden_size=1024, intermediate_size=3584,
                                 num_hidden_layers=8, num_attention_heads=16, num_key_value_heads=8,
                                 num_local_experts=8, num_experts_per_tok=2, max_position_embeddings=4096)
with torch.device("cuda"):
    model = transformers.MixtralForCausalLM(cfg)
model = model.to("cuda", dtype=torch.bfloat16).eval()
ids = torch.randint(0, cfg.vocab_size, (4, 128), device="cuda")
layers = []


class GroupedMmOffsets(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if "grouped_mm" in str(func) and args[0].shape == (1024, 1024):
            offs = kwargs.get("offs", args[2] if len(args) > 2 else None)
            ends = offs.tolist()
            layers.append([ends[0]] + [ends[i] - ends[i - 1] for i in range(1, len(ends))])
        return func(*args, **kwargs)


with torch.no_grad(), GroupedMmOffsets():
    model(input_ids=ids, use_cache=False)

weights = torch.empty(8, 7168, 1024, device="cuda", dtype=torch.bfloat16).normal_(0, 0.02)
b = weights.transpose(-2, -1)
a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)


def median_us(counts, reps=12):
    offs = torch.tensor(counts, device="cuda").cumsum(0).to(torch.int32)
    torch._grouped_mm(a, b, offs=offs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(reps):
            torch._grouped_mm(a, b, offs=offs)
        torch.cuda.synchronize()
    d = sorted(e.device_time for e in p.events() if e.device_type.name == "CUDA" and "cutlass" in e.name)
    return d[len(d) // 2]


def multinomial(rows, groups, rng):
    counts = [0] * groups
    for _ in range(rows):
        counts[rng.randrange(groups)] += 1
    return counts


rng = random.Random(1)
sets = {"recorded routing": layers, "multinomial draw": [multinomial(1024, 8, rng) for _ in range(16)],
        "equal groups": [[128] * 8]}
for name, runs in sets.items():
    times = []
    for counts in runs:
        t = median_us(counts)
        times.append(t)
        s128 = sum(math.ceil(c / 128) for c in counts)
        print(f"{name:17s} S128={s128:2d} max={max(counts):3d} {t:6.1f} us  {counts}")
    print(f"{name:17s} median {statistics.median(times):6.1f} us, mean {statistics.mean(times):6.1f} us")
print(torch.cuda.get_device_name(), torch.__version__, transformers.__version__)
