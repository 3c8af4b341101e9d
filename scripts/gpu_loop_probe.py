#!/usr/bin/env python3
"""Run ON a GPU machine: why does unique mode's energy loop (kernels launched back to back from a
CUDA graph, the host polling NVML between launches) leave the device idle part of the time?

For a short elementwise kernel (~5 us) and a GEMM (~0.7 ms), each captured N times in one CUDA
graph, measures the device time per kernel (CUDA events around a ~0.5 s loop) under:
  deep      all launches queued at once, nothing else running (the device's own pace);
  poll-thr  the same with a second thread reading the four NVML values replay's poll reads;
  lead      replay's loop: launch graphs until 7.2 ms of work is ahead by the wall clock, then
            read the four NVML values, repeat (one thread);
  lead-nonvml  the same loop with a sleep of the same length instead of the NVML reads;
and each of these again with CUPTI's kernel activity on (torch.profiler, CUDA activities), as
replay's CUPTI timer left it on during the energy windows before 2026-11-28. The event pair
around the graph loop times the device, not the host's launches. Prints one JSON object."""
import json, statistics, threading, time
import torch
import pynvml

pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())


def nvml_poll():
    pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
    pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h)
    pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
    pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)


t0 = time.perf_counter()
for _ in range(20):
    nvml_poll()
poll_ms = (time.perf_counter() - t0) / 20 * 1e3
lead_ms = 3 * 2.4  # replay: kLeadReads x the counter read


def make(kind):
    if kind == "copy":
        x = torch.randn(4 << 20, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        body = lambda: y.copy_(x)
    else:
        a = torch.randn(6144, 6144, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(6144, 6144, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(6144, 6144, device="cuda", dtype=torch.bfloat16)
        body = lambda: torch.mm(a, b, out=c)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3):
            body()
    torch.cuda.synchronize()
    # one kernel alone, timed by events, median of 50: only to size the graph
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    alone = []
    for _ in range(50):
        e0.record(); body(); e1.record(); e1.synchronize(); alone.append(e0.elapsed_time(e1) * 1e3)
    per = statistics.median(alone)
    nodes = max(1, min(256, int(1000 / per + 0.999)))
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(nodes):
            body()
    g.replay(); torch.cuda.synchronize()
    # The device's own pace in the graph: an event pair around one kernel launched from Python
    # times the host's launch too (23 us for a 3 us copy on the H200), which made the first run's
    # "lead" rows wait on a 7x overstated estimate.
    e0.record()
    for _ in range(20):
        g.replay()
    e1.record(); e1.synchronize()
    per = e0.elapsed_time(e1) * 1e3 / (20 * nodes)
    return g, nodes, per


def loop(g, nodes, per, mode, seconds=0.5):
    graph_us = nodes * per
    launches = max(2, int(seconds * 1e6 / graph_us))
    stop = threading.Event()
    polls = [0]

    def poller():
        while not stop.is_set():
            nvml_poll(); polls[0] += 1

    th = None
    if mode == "poll-thr":
        th = threading.Thread(target=poller); th.start()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    w0 = time.perf_counter()
    if mode in ("deep", "poll-thr"):
        for _ in range(launches):
            g.replay()
    else:
        ahead, last, done = 0.0, time.perf_counter(), 0
        while done < launches:
            now = time.perf_counter()
            ahead = max(0.0, ahead - (now - last) * 1e6); last = now
            while ahead < lead_ms * 1e3 and done < launches:
                g.replay(); ahead += graph_us; done += 1
            if mode == "lead":
                nvml_poll(); polls[0] += 1
            else:
                time.sleep(poll_ms / 1e3)
    e1.record(); e1.synchronize()
    wall = time.perf_counter() - w0
    stop.set()
    if th: th.join()
    dev_us = e0.elapsed_time(e1) * 1e3
    return {"mode": mode, "launches": launches, "kernel_us": dev_us / (launches * nodes),
            "x_alone": dev_us / (launches * nodes) / per, "wall_s": wall, "polls": polls[0]}


out = {"gpu": torch.cuda.get_device_name(), "nvml_poll_ms": poll_ms, "lead_ms": lead_ms, "runs": []}
for kind in ("copy", "gemm"):
    g, nodes, per = make(kind)
    for cupti in (False, True):
        for rep in range(2):
            for mode in ("deep", "poll-thr", "lead", "lead-nonvml"):
                if cupti:
                    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
                    prof.__enter__()
                r = loop(g, nodes, per, mode)
                if cupti:
                    prof.__exit__(None, None, None)
                r.update(kind=kind, nodes=nodes, alone_us=per, cupti=cupti, rep=rep)
                out["runs"].append(r)
                print(f"{kind:4} cupti={int(cupti)} rep{rep} {mode:12} kernel {r['kernel_us']:8.2f} us "
                      f"({r['x_alone']:.2f}x alone {per:.2f}) polls {r['polls']}", flush=True)
print(json.dumps(out))
