#!/usr/bin/env python3
"""Run ON a GPU machine: measures what the replay's energy and launch-bound models rest on.

1. NVML: how often the board energy counter (nvmlDeviceGetTotalEnergyConsumption) and the power
   reading (nvmlDeviceGetPowerUsage) actually change, polled as fast as NVML answers under a steady
   load, and the counter's resolution (smallest step).
2. Launch-bound kernels: per-kernel GPU durations of the same small kernels (an elementwise add on
   a few MB, a GEMV streaming a weight matrix, a tiny softmax) launched back to back vs with the
   host idling between launches (as a launch-bound eager step does), vs with a GPU-side spin
   between them, from the profiler's kernel records; plus the SM clock NVML reports in each case.
Prints one JSON object."""
import json, statistics, time
import torch

out = {"gpu": torch.cuda.get_device_name()}


def change_periods(read, seconds, load):
    values, times = [], []
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        load()
        values.append(read()); times.append(time.perf_counter())
    changes = [times[i] for i in range(1, len(values)) if values[i] != values[i - 1]]
    gaps = [b - a for a, b in zip(changes, changes[1:])]
    steps = sorted({abs(values[i] - values[i - 1]) for i in range(1, len(values)) if values[i] != values[i - 1]})
    return {"polls": len(values), "poll_us": 1e6 * seconds / max(len(values), 1), "changes": len(changes),
            "period_ms_median": 1e3 * statistics.median(gaps) if gaps else None,
            "period_ms_p10": 1e3 * sorted(gaps)[len(gaps) // 10] if gaps else None,
            "smallest_step": steps[0] if steps else None}


try:
    import pynvml
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    pending = []

    def load():  # keep the GPU busy without blocking the poller
        if len(pending) < 4:
            pending.append(a @ a)
        elif pending[0].is_cuda and torch.cuda.current_stream().query():
            pending.clear()

    out["energy_counter"] = change_periods(lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(h), 3.0, load)
    out["power_usage"] = change_periods(lambda: pynvml.nvmlDeviceGetPowerUsage(h), 3.0, load)
    torch.cuda.synchronize()
    try:
        out["power_limit_w"] = pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000
    except Exception as e:
        out["power_limit_w"] = repr(e)
    clock = lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
except Exception as e:
    out["nvml_error"] = repr(e)
    clock = lambda: None


def kernel_durations(fn, mode, n=200, gap_s=20e-6):
    from torch.profiler import profile, ProfilerActivity
    spin = torch.cuda._sleep
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    clocks = []
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(n):
            fn()
            if mode == "host_gap":
                t = time.perf_counter() + gap_s
                while time.perf_counter() < t:
                    pass
            elif mode == "gpu_gap":
                spin(40000)  # ~20 us of SM cycles
            if i % (n // 4) == 0:
                clocks.append(clock())
        torch.cuda.synchronize()
    durs = [e.device_time for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
            and "spin" not in e.name and "sleep" not in e.name and e.device_time > 0]
    return {"median_us": statistics.median(durs) if durs else None, "kernels": len(durs),
            "sm_clock_mhz": clocks}


x = torch.randn(4 << 20, device="cuda", dtype=torch.float16)
y = torch.randn(4 << 20, device="cuda", dtype=torch.float16)
w = torch.randn(8192, 2048, device="cuda", dtype=torch.float16)  # 32 MiB of weights
v = torch.randn(2048, 1, device="cuda", dtype=torch.float16)
s = torch.randn(32, 256, device="cuda", dtype=torch.float16)
kernels = {"add_8MB": lambda: x + y, "gemv_32MB": lambda: w @ v, "softmax_tiny": lambda: s.softmax(-1)}
out["launch_bound"] = {name: {mode: kernel_durations(fn, mode) for mode in ("back_to_back", "host_gap", "gpu_gap")}
                       for name, fn in kernels.items()}
# A decode step keeps the GPU ~10% busy for tens of ms: does the clock (or anything else) sag?
time.sleep(1.0)
out["launch_bound_long_idle"] = {name: kernel_durations(fn, "host_gap", n=4000, gap_s=100e-6)
                                 for name, fn in kernels.items()}
print(json.dumps(out, indent=1))
