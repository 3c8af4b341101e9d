#!/usr/bin/env python3
"""Does a small GEMM's time depend on where its operands lie in GPU memory? (issue 10)

BLOOM-560M's attention output projection (addmm: bias [1024], input [5, 1024], weight [1024, 1024],
fp16) recorded on an H200 alternates layer by layer between ~5.5 and ~7.1 us, and its replayed
instances split the same way in another proportion. This probe times the same call with the L2
emptied before each run (a clean read of 256 MiB) while moving one operand at a time, and prints
per placement the median of the CUPTI-timed runs (torch.profiler):

  weight_1mib   the weight at 1 MiB steps through one allocation (its contents the same kind)
  input_512b    the same input values copied to 512-byte steps
  input_64kib   ... to 64 KiB steps
  input_values  other input values, copied to one fixed address
  bias_256b     the bias at 2304-byte steps
  output_256b   the output at 256-byte steps
  warm_weight   the weight read by the same GEMM just before (fixed placements)

Usage (on the GPU machine): python3 scripts/gpu_placement_probe.py [OUT.json]
"""
import json
import statistics as st
import sys

import torch
from torch.profiler import ProfilerActivity, profile

MB = 1 << 20
N = 32      # placements per variant
ROUNDS = 3  # runs per placement


def main():
    dev = "cuda"
    torch.manual_seed(0)
    flush = torch.ones(256 * MB // 4, device=dev, dtype=torch.float32)
    weight = torch.randn(1024, 1024, device=dev, dtype=torch.float16) * 0.02
    x = torch.randn(5, 1024, device=dev, dtype=torch.float16)
    bias = torch.randn(1024, device=dev, dtype=torch.float16)
    pool = torch.randn(4 * MB, device=dev, dtype=torch.float16).view(torch.uint8)  # 8 MiB
    big = torch.randn(36 * MB, device=dev, dtype=torch.float16).view(torch.uint8)  # 72 MiB

    def at(buffer, offset, elements, shape):
        return buffer[offset:offset + 2 * elements].view(torch.float16).view(*shape)

    inputs = [torch.randn(5, 1024, device=dev, dtype=torch.float16) for _ in range(N)]
    fixed = at(pool, 6 * MB, 5120, (5, 1024))

    def copied(dst, src):
        dst.copy_(src)
        return dst

    variants = {
        "weight_1mib": lambda k: torch.addmm(bias, x, at(big, k * MB, MB, (1024, 1024)).t()),
        "input_512b": lambda k: torch.addmm(bias, copied(at(pool, k * 512, 5120, (5, 1024)), x), weight.t()),
        "input_64kib": lambda k: torch.addmm(bias, copied(at(pool, k * 65536, 5120, (5, 1024)), x), weight.t()),
        "input_values": lambda k: torch.addmm(bias, copied(fixed, inputs[k]), weight.t()),
        "bias_256b": lambda k: torch.addmm(at(pool, 2 * MB + k * 2304, 1024, (1024,)), x, weight.t()),
        "output_256b": lambda k: torch.addmm(bias, x, weight.t(), out=at(pool, 4 * MB + k * 256, 5120, (5, 1024))),
        "warm_weight": None,
    }

    def run(name, k):
        flush.sum()  # a clean read: the L2 holds no dirty lines the GEMM must write back
        if name == "warm_weight":
            torch.addmm(bias, x, weight.t())
            return torch.addmm(bias, x, weight.t())
        return variants[name](k)

    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "variants": {}}
    print(out["gpu"], "torch", out["torch"])
    for name in variants:
        for k in range(N):
            run(name, k)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(ROUNDS):
                for k in range(N):
                    run(name, k)
            torch.cuda.synchronize()
        gemms = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                 and ("nvjet" in e.name or "gemm" in e.name.lower())]
        times = [e.device_time for e in gemms]
        if name == "warm_weight":
            times = times[1::2]
        per_placement = [st.median(times[k::N]) for k in range(N)]
        out["variants"][name] = {"kernels": sorted({e.name for e in gemms}), "per_placement_us": per_placement}
        print("%-13s median %.2f  min %.2f  max %.2f us | %s | %s" % (
            name, st.median(per_placement), min(per_placement), max(per_placement),
            " ".join("%.1f" % t for t in per_placement), ",".join(out["variants"][name]["kernels"])))
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
