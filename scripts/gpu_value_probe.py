#!/usr/bin/env python3
"""Do a kernel's input values change its time? (issue 19; tests/gpu/VALIDATION.md)

Times, with the PyTorch profiler (CUPTI), SiLU on the strided [1024, 3584] bf16 half of a
[1024, 7168] tensor (Mixtral's gate) and Mixtral's first expert GEMM (`torch._grouped_mm`,
[1024, 1024] x [8, 1024, 7168]) for several fills of the same buffers: normal values, zeros,
half-zero rows, NaN, denormals, and bit patterns of other dtypes (what a replay gets when it
reads a buffer filled for another type). The GEMM also runs with two recorded routings and
equal groups. Prints the median of 20-30 runs of each. Usage (on the GPU machine):
python3 scripts/gpu_value_probe.py
"""
import torch
from torch.profiler import profile, ProfilerActivity


def median_us(fn, match, reps=30):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    d = sorted(e.device_time for e in p.events() if e.device_type.name == "CUDA" and match in e.name)
    return d[len(d) // 2]


base = torch.empty(1024, 7168, device="cuda", dtype=torch.bfloat16)
f32 = torch.empty(1024 * 7168 // 2, device="cuda", dtype=torch.float32)
fills = {
    "normal(0, 0.1)": lambda: base.normal_(0, 0.1),
    "normal(0, 1)": lambda: base.normal_(0, 1),
    "normal(0, 100)": lambda: base.normal_(0, 100),
    "zeros": lambda: base.zero_(),
    "half the rows zero": lambda: (base.normal_(0, 1), base[::2].zero_()),
    "NaN": lambda: base.fill_(float("nan")),
    "denormal 1e-39": lambda: base.fill_(1e-39),
    "float32 bits": lambda: base.view(-1).copy_(f32.normal_(0, 0.1).view(torch.bfloat16)),
    "int64 bits < 8": lambda: base.view(-1).copy_(
        torch.randint(0, 8, (1024 * 7168 // 4,), device="cuda").view(torch.bfloat16)),
}
print("SiLU, strided [1024, 3584] bf16:")
for name, fill in fills.items():
    fill()
    gate = base[:, :3584]
    print(f"  {name:20s} {median_us(lambda: torch.nn.functional.silu(gate), 'silu'):6.2f} us")

weights = torch.empty(8, 7168, 1024, device="cuda", dtype=torch.bfloat16)
b = weights.transpose(-2, -1)  # the recorded [8, 1024, 7168] view, strides [7340032, 1, 1024]
a = base.view(-1)[: 1024 * 1024].view(1024, 1024)
routings = {  # tokens per expert of two layers of the recorded Mixtral prefill, and equal groups
    "recorded layer 0": [185, 81, 167, 84, 150, 29, 74, 254],
    "recorded layer 4": [262, 187, 64, 61, 75, 187, 61, 127],
    "equal": [128] * 8,
}
print("_grouped_mm [1024, 1024] x [8, 1024, 7168] bf16:")
for rname, counts in routings.items():
    offs = torch.tensor(counts, device="cuda").cumsum(0).to(torch.int32)
    for aname in ("normal(0, 1)", "normal(0, 0.1)", "half the rows zero"):
        for wstd in (0.02, 0.1):
            fills[aname]()
            weights.normal_(0, wstd)
            t = median_us(lambda: torch._grouped_mm(a, b, offs=offs), "cutlass")
            print(f"  {rname:17s} A {aname:18s} B normal(0, {wstd}) {t:6.1f} us")
print(torch.cuda.get_device_name())
