#!/usr/bin/env python3
"""Capture one Kineto trace per rank of a tensor-parallel step, for multi-rank replay.

A Llama-architecture decoder (TinyLlama-1.1B's shapes by default: hidden 2048, 32 heads of 64,
4 KV heads, MLP 5632, bf16 on GPUs) split Megatron-style over the ranks: q/k/v and gate/up are
column-parallel (heads and MLP columns divided by the world size), o_proj and down_proj
row-parallel, each followed by an all_reduce over the default group. Random weights, no download.
Start it with torchrun; NCCL on GPUs, Gloo on CPUs (--device cpu). Writes OUT/rank{RANK}.json.gz
with record_shapes and a ProfilerStep# range (schedule wait 1, warmup 1, active 1).

  torchrun --nproc-per-node 2 examples/capture_tp.py --out /tmp/tp2
  torchrun --no-python --nproc-per-node 2 build/cli/replay '/tmp/tp2/rank{rank}.json.gz' --backend cpu --out /tmp/tp2_replay
"""
import argparse, gzip, os, shutil

import torch
import torch.distributed as dist
import torch.nn.functional as F


class Layer(torch.nn.Module):
    def __init__(self, a, world, dtype, device):
        super().__init__()
        kw = dict(dtype=dtype, device=device, bias=False)
        self.heads, self.kv_heads, self.head_dim = a.heads // world, max(a.kv_heads // world, 1), a.hidden // a.heads
        self.qkv = torch.nn.Linear(a.hidden, (self.heads + 2 * self.kv_heads) * self.head_dim, **kw)
        self.o = torch.nn.Linear(self.heads * self.head_dim, a.hidden, **kw)
        self.gate_up = torch.nn.Linear(a.hidden, 2 * (a.mlp // world), **kw)
        self.down = torch.nn.Linear(a.mlp // world, a.hidden, **kw)
        self.norm1 = torch.nn.RMSNorm(a.hidden, dtype=dtype, device=device)
        self.norm2 = torch.nn.RMSNorm(a.hidden, dtype=dtype, device=device)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(
            [self.heads * self.head_dim, self.kv_heads * self.head_dim, self.kv_heads * self.head_dim], dim=-1)
        q = q.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = v.view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        out = self.o(att.transpose(1, 2).reshape(b, s, -1))
        dist.all_reduce(out)  # row-parallel o_proj
        x = x + out
        gate, up = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        out = self.down(F.silu(gate) * up)
        dist.all_reduce(out)  # row-parallel down_proj
        return x + out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for rank{RANK}.json.gz")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--mlp", type=int, default=5632)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=512)
    a = p.parse_args()
    cuda = a.device == "cuda"
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    dist.init_process_group("nccl" if cuda else "gloo")
    device = torch.device("cuda" if cuda else "cpu")
    dtype = torch.bfloat16 if cuda else torch.float32
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[Layer(a, world, dtype, device) for _ in range(a.layers)])
    x = torch.randn(a.batch, a.seq, a.hidden, dtype=dtype, device=device)
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
    os.makedirs(a.out, exist_ok=True)
    plain = os.path.join(a.out, f"rank{rank}.json")
    with torch.no_grad(), torch.profiler.profile(
            activities=activities, record_shapes=True,
            schedule=torch.profiler.schedule(wait=1, warmup=1, active=1),
            on_trace_ready=lambda prof: prof.export_chrome_trace(plain)) as prof:
        for _ in range(3):
            model(x)
            if cuda:
                torch.cuda.synchronize()
            prof.step()
    with open(plain, "rb") as src, gzip.open(plain + ".gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.remove(plain)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank}: wrote {plain}.gz")


if __name__ == "__main__":
    main()
