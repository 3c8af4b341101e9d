#!/usr/bin/env python3
"""Do PyTorch's caching allocator and plain cudaMalloc place a small GEMM input differently? (issue 10)

Allocates 32 inputs of BLOOM's dense GEMM ([5, 1024] fp16), each with an output and a bias beside
it (a replay's pattern), and times addmm(bias, input, weight.t()) per input with the L2 emptied by
a clean read before each run (CUPTI, torch.profiler). Prints how many run fast (< 6.5 us) and each
input's offset within its 2 MiB page with its median time. Run it twice, once with
PYTORCH_NO_CUDA_MEMORY_CACHING=1 (every tensor its own cudaMalloc):
python3 scripts/gpu_allocator_probe.py; PYTORCH_NO_CUDA_MEMORY_CACHING=1 python3 scripts/gpu_allocator_probe.py
"""
import os, statistics as st, torch
from torch.profiler import profile, ProfilerActivity
dev = 'cuda'
MB = 1 << 20
torch.manual_seed(0)
flush = torch.ones(256 * MB // 4, device=dev, dtype=torch.float32)
W = torch.randn(1024, 1024, device=dev, dtype=torch.float16) * 0.02
B = torch.randn(1024, device=dev, dtype=torch.float16)
N = 32
xs = []
for k in range(N):
    xs.append(torch.randn(5, 1024, device=dev, dtype=torch.float16))  # input
    xs.append(torch.randn(5, 1024, device=dev, dtype=torch.float16))  # an output beside it
    xs.append(torch.randn(1024, device=dev, dtype=torch.float16))     # a bias beside it
keep = xs
xs = xs[0::3]
def run(k):
    flush.sum()
    torch.addmm(B, xs[k], W.t())
for k in range(N): run(k)
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for r in range(3):
        for k in range(N): run(k)
    torch.cuda.synchronize()
t = [e.device_time for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and 'nvjet' in e.name]
per = [st.median(t[k::N]) for k in range(N)]
mode = 'cudaMalloc each' if os.environ.get('PYTORCH_NO_CUDA_MEMORY_CACHING') else 'caching allocator'
print('%s: fast (<6.5 us) %d of %d, median %.2f' % (mode, sum(p < 6.5 for p in per), N, st.median(per)))
print(' '.join('%x:%.1f' % (x.data_ptr() & 0x1fffff, p) for x, p in zip(xs, per)))
