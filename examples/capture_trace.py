#!/usr/bin/env python3
"""Capture a PyTorch profiler (Kineto) trace and an Execution Trace of one model step.

Runs fully offline: models are built from configs with random weights.

Writes, for --out PREFIX:
  PREFIX.json.gz      Kineto trace (prof.export_chrome_trace), gzipped
  PREFIX.et.json.gz   PyTorch Execution Trace (ExecutionTraceObserver), gzipped
  PREFIX.timing.json  unprofiled median step time measured with CUDA events

Examples:
  python3 examples/capture_trace.py --model bloom-560m --out /tmp/bloom
  python3 examples/capture_trace.py --model gpt2            # train step, bf16 autocast
  python3 examples/capture_trace.py --model mlp             # quick smoke test
"""
import argparse
import gzip
import json
import os
import shutil
import statistics

MODELS = ("bloom-560m", "gpt2", "mlp")
DTYPES = ("fp16", "bf16", "fp32")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=MODELS, default="bloom-560m", help="model to build (random weights)")
    p.add_argument("--mode", choices=("inference", "train"), default=None,
                   help="inference (no_grad forward) or train (fwd+loss+bwd+AdamW step); "
                        "default: train for gpt2, inference otherwise")
    p.add_argument("--dtype", choices=DTYPES, default=None,
                   help="inference: weight/activation dtype (default fp16); "
                        "train: autocast dtype over fp32 weights (default bf16, fp32 = no autocast)")
    p.add_argument("--batch", type=int, default=None, help="batch size (default 1 inference, 8 train)")
    p.add_argument("--seq", type=int, default=None, help="sequence length (default 5 inference, 128 train)")
    p.add_argument("--warmup", type=int, default=3, help="untraced warm-up steps (default 3)")
    p.add_argument("--runs", type=int, default=20, help="timed unprofiled steps for the median (default 20)")
    p.add_argument("--seed", type=int, default=0, help="torch.manual_seed value (default 0)")
    p.add_argument("--out", default=None, help="output prefix (default traces/<model>_<dtype|mode>)")
    p.add_argument("--keep-json", action="store_true", help="keep the uncompressed .json files too")
    a = p.parse_args()
    a.mode = a.mode or ("train" if a.model == "gpt2" else "inference")
    train = a.mode == "train"
    a.dtype = a.dtype or ("bf16" if train else "fp16")
    a.batch = a.batch if a.batch is not None else (8 if train else 1)
    a.seq = a.seq if a.seq is not None else (128 if train else 5)
    a.out = a.out or os.path.join("traces", f"{a.model}_{a.mode if train else a.dtype}")
    return a


def build_model(name, torch):
    """Return (model, vocab_size); vocab_size is None for the float-input MLP."""
    if name == "mlp":
        hidden = 256
        layers = []
        for _ in range(4):
            layers += [torch.nn.Linear(hidden, hidden * 4), torch.nn.GELU(), torch.nn.Linear(hidden * 4, hidden)]
        return torch.nn.Sequential(*layers), None
    import transformers
    if name == "bloom-560m":  # matches bigscience/bloom-560m
        cfg = transformers.BloomConfig(vocab_size=250880, hidden_size=1024, n_layer=24, n_head=16,
                                       layer_norm_epsilon=1e-5)
        return transformers.BloomForCausalLM(cfg), cfg.vocab_size
    cfg = transformers.GPT2Config()  # GPT-2 small defaults
    return transformers.GPT2LMHeadModel(cfg), cfg.vocab_size


def make_step(args, torch):
    """Build the model and inputs on the GPU and return a zero-argument step function."""
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    model, vocab = build_model(args.model, torch)
    train = args.mode == "train"
    model = model.to("cuda", dtype=torch.float32 if train else dtype).train(train)
    if vocab is None:
        x = torch.randn(args.batch, args.seq, 256, device="cuda", dtype=torch.float32 if train else dtype)
    else:
        ids = torch.randint(0, vocab, (args.batch, args.seq), device="cuda")

    if not train:
        @torch.no_grad()
        def step():
            return model(x) if vocab is None else model(input_ids=ids, use_cache=False).logits
        return step

    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        with torch.autocast("cuda", dtype=dtype, enabled=dtype != torch.float32):
            if vocab is None:
                loss = model(x).float().pow(2).mean()  # MSE against zero
            else:
                loss = model(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    return step


def time_steps(step, runs, torch):
    """Median wall time of one step on the GPU, in microseconds, via CUDA events."""
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)  # ms -> us
    return statistics.median(times)


def gzip_file(path, keep):
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    if not keep:
        os.remove(path)
    return path + ".gz"


def main():
    args = parse_args()
    import torch  # imported lazily so that --help works without torch
    from torch.profiler import ExecutionTraceObserver, ProfilerActivity, profile

    if not torch.cuda.is_available():
        raise SystemExit("capture_trace.py needs a CUDA GPU")
    torch.manual_seed(args.seed)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    step = make_step(args, torch)

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()

    median_us = time_steps(step, args.runs, torch)
    timing = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(),
              "model": args.model, "mode": args.mode, "median_us": median_us, "runs": args.runs,
              "dtype": args.dtype, "batch": args.batch, "seq": args.seq}

    trace_path, et_path = args.out + ".json", args.out + ".et.json"
    et = ExecutionTraceObserver()
    et.register_callback(et_path)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        et.start()
        step()
        torch.cuda.synchronize()
        et.stop()
    et.unregister_callback()
    prof.export_chrome_trace(trace_path)

    written = [gzip_file(trace_path, args.keep_json), gzip_file(et_path, args.keep_json)]
    if args.keep_json:
        written += [trace_path, et_path]
    with open(args.out + ".timing.json", "w") as f:
        json.dump(timing, f, indent=2)
    written.append(args.out + ".timing.json")

    print(f"{args.model} {args.mode} {args.dtype} batch={args.batch} seq={args.seq}: "
          f"median {median_us:.1f} us/step over {args.runs} runs on {timing['gpu']}")
    for path in written:
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
