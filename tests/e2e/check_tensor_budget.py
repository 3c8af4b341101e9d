#!/usr/bin/env python3
"""A hostile recorded shape must not hang or exhaust the replay: a made-up trace whose ops carry
the dims one aten::copy_ once had (Input Dims [[1000000]*3]*2+[[]] over overlapping strides: 1e18
elements on a few bytes of storage) replays quickly on the cpu backend, exit 0, those kernels
skipped with a reason naming the tensor, its dims and the budget, the report written, and the
benign op beside them replayed. --max-tensor-bytes sets the budget."""
import json, os, subprocess, sys, tempfile, time

replay = sys.argv[1]
failures = 0

def fail(message):
    global failures
    print("FAIL " + message)
    failures += 1

HUGE = [1000000] * 3
OVERLAP = [1, 1, 1]
# (op, Input Dims, Input Strides, Input type, Concrete Inputs, kernel name)
OPS = [
    ("aten::copy_", [HUGE, HUGE, []], [OVERLAP, OVERLAP, []], ["float", "float", "Scalar"],
     ["", "", "False"], "void at::native::vectorized_elementwise_kernel<4, at::native::copy_kernel>"),
    ("aten::add", [HUGE, HUGE, []], [OVERLAP, OVERLAP, []], ["float", "float", "Scalar"],
     ["", "", "1"], "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >"),
    ("aten::bmm", [HUGE, HUGE], [OVERLAP, OVERLAP], ["float", "float"], ["", ""],
     "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"),
    ("aten::relu", [[64, 64]], [[64, 1]], ["float"], [""],
     "void at::native::vectorized_elementwise_kernel<4, at::native::relu_kernel>"),
]

def trace():
    events, ts = [], 1000.0
    for i, (op, dims, strides, types, concrete, kernel) in enumerate(OPS):
        ext, corr = 100 + i, 500 + i
        events.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": ts, "dur": 20,
                       "args": {"External id": ext, "Record function id": ext, "Input Dims": dims,
                                "Input Strides": strides, "Input type": types, "Concrete Inputs": concrete}})
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                       "ts": ts + 5, "dur": 5, "args": {"External id": ext, "correlation": corr}})
        events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": ts + 12, "dur": 3,
                       "args": {"External id": ext, "correlation": corr, "stream": 7, "device": 0,
                                "grid": [1, 1, 1], "block": [128, 1, 1]}})
        ts += 40
    return {"schemaVersion": 1, "traceEvents": events}

def run(out, *extra):
    start = time.monotonic()
    try:
        r = subprocess.run([replay, path, "--backend", "cpu", "--quiet", "--warmup", "1", "--runs", "3",
                            "--out", out, *extra], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        fail(f"replay {' '.join(extra)} still running after 120 s")
        return None
    seconds = time.monotonic() - start
    print(f"     replay {' '.join(extra)}: exit {r.returncode} in {seconds:.1f} s")
    if r.returncode != 0:
        fail(f"exit {r.returncode}: {r.stderr[-1500:]}")
        return None
    if seconds > 30:
        fail(f"took {seconds:.0f} s: the budget should skip the hostile ops before allocating")
    report = os.path.join(out, "report.json")
    if not os.path.exists(report):
        fail(f"no report.json in {out}")
        return None
    return {k["name"]: k for k in json.load(open(report))["kernels"]}

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "hostile_shapes.json")
    json.dump(trace(), open(path, "w"))
    for mode in ("sequential", "unique"):
        kernels = run(os.path.join(tmp, mode), "--mode", mode)
        if kernels is None:
            continue
        for op, *_, kernel in OPS:
            k = kernels.get(kernel)
            if k is None:
                fail(f"{mode}: no kernel {kernel[:60]} in the report")
            elif op == "aten::relu":
                if k["disposition"] != "replayed":
                    fail(f"{mode}: the benign {op} was not replayed: {k['disposition']} {k['reason']}")
            elif k["disposition"] != "skipped" or "[1000000, 1000000, 1000000]" not in k["reason"] \
                    or "tensor budget" not in k["reason"]:
                fail(f"{mode}: {op} should be skipped over the tensor budget: {k['disposition']} {k['reason']}")
            else:
                print(f"ok   {mode}: {op} skipped: {k['reason']}")

    # The option sets the budget: 1 KiB is too little for the benign op's 16 KiB, so nothing at
    # all can be replayed: exit 2, the budget named among the reasons, no output written.
    small = os.path.join(tmp, "small")
    r = subprocess.run([replay, path, "--backend", "cpu", "--quiet", "--mode", "sequential",
                        "--max-tensor-bytes", "1k", "--out", small], capture_output=True, text=True, timeout=120)
    if r.returncode != 2 or "nothing was replayed" not in r.stderr \
            or "1.0 KiB tensor budget (--max-tensor-bytes)" not in r.stderr:
        fail(f"--max-tensor-bytes 1k should skip every op (the 16 KiB aten::relu too) and exit 2: "
             f"exit {r.returncode}: {r.stderr[-1500:]}")
    elif os.path.exists(os.path.join(small, "report.json")):
        fail("--max-tensor-bytes 1k replayed nothing but wrote a report")
    else:
        print("ok   --max-tensor-bytes 1k: every op skipped over the 1.0 KiB budget, exit 2, nothing written")

sys.exit(1 if failures else 0)
