#!/usr/bin/env python3
"""Is a small kernel recorded longer inside a CUDA graph? (issue 10; tests/gpu/VALIDATION.md)

Times, with the PyTorch profiler (CUPTI), 25 pairs of x.add_(y) and x.mul_(0.5) on 4096 fp16
values: launched eagerly back to back, eagerly with the GPU idle between, as one CUDA graph of the
50 nodes, and the add as a graph of its own and right after another node (a 4 MiB multiply).
Prints the median duration of each kind of kernel. Usage (on the GPU machine):
python3 scripts/gpu_graph_node_probe.py
"""
import time, statistics as st, torch
from torch.profiler import profile, ProfilerActivity
dev = 'cuda'
x = torch.randn(4096, device=dev, dtype=torch.float16)
y = torch.randn(4096, device=dev, dtype=torch.float16)
big = torch.randn(1 << 20, device=dev)
def step():
    for _ in range(25):
        x.add_(y); x.mul_(0.5)
def busy(us):
    t = time.perf_counter() + us * 1e-6
    while time.perf_counter() < t: pass
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    step(); torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s): step()
    g1 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g1, stream=s): x.add_(y)
    g2 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g2, stream=s): big.mul_(1.0); x.add_(y)
torch.cuda.synchronize()
def kernels(prof):
    return [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and 'elementwise' in e.name]
def run(name, fn):
    fn(); torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(4): fn()
        torch.cuda.synchronize()
    ev = kernels(prof)
    by = {}
    for e in ev: by.setdefault('add' if 'Add' in e.name or 'add' in e.name.lower() else 'mul', []).append(e.device_time)
    print('%-28s n=%d  add median %.3f us  mul median %.3f us' % (name, len(ev), st.median(by.get('add', [0])), st.median(by.get('mul', [0]))))
def queued():  # launched ahead of the GPU: back to back
    torch.cuda._sleep(2_000_000); step()
def spaced():
    for _ in range(25):
        torch.cuda.synchronize(); busy(30); x.add_(y)
        torch.cuda.synchronize(); busy(30); x.mul_(0.5)
def graphed(): g.replay()
def one_node():
    for _ in range(25): g1.replay(); x.mul_(0.5)
def one_node_spaced():
    for _ in range(25):
        torch.cuda.synchronize(); busy(30); g1.replay()
        torch.cuda.synchronize(); busy(30); x.mul_(0.5)
def after_other_node():
    for _ in range(25): g2.replay(); x.mul_(0.5)
def graphed_after_sleep(): torch.cuda._sleep(2_000_000); g.replay()
print(torch.cuda.get_device_name())
for n, f in [('eager, queued back to back', queued), ('eager, GPU idle between', spaced), ('CUDA graph', graphed), ('CUDA graph, queued', graphed_after_sleep), ('add alone in a graph', one_node), ('add alone in a graph, idle', one_node_spaced), ('add after a node in a graph', after_other_node)]:
    run(n, f)
