"""Which cuBLAS kernels PyTorch picks for fp32 linear layers, with the environment it runs in.

Run it with and without CUBLASLT_WORKSPACE_SIZE (KiB) set: when the names change, PyTorch's
default cuBLASLt workspace is not the size that was set. Prints one line per shape:
  M N K bias -> kernel names (CUPTI, torch.profiler)
Usage: python3 scripts/gpu_lt_workspace_probe.py [--tf32]
"""
import sys

import torch
from torch.profiler import ProfilerActivity, profile

if "--tf32" in sys.argv:
    torch.set_float32_matmul_precision("high")
# BERT-base b8 s128 fp32: q/k/v/o, FFN up, FFN down, the MLM head.
SHAPES = [(1024, 768, 768), (1024, 3072, 768), (1024, 768, 3072), (1024, 30522, 768)]
for m, n, k in SHAPES:
    x = torch.randn(m, k, device="cuda")
    w = torch.randn(n, k, device="cuda")
    b = torch.randn(n, device="cuda")
    for bias in (b, None):
        for _ in range(3):
            torch.nn.functional.linear(x, w, bias)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            torch.nn.functional.linear(x, w, bias)
            torch.cuda.synchronize()
        names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        print(m, n, k, "bias" if bias is not None else "none", "->", " | ".join(names), flush=True)
