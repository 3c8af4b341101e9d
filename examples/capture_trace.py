#!/usr/bin/env python3
"""Capture a PyTorch profiler (Kineto) trace of one model step, the way users record them.

Runs fully offline: models are built from configs with random weights. By default the trace is
recorded as most people profile: record_shapes on, no Execution Trace (--et adds one).

Writes, for --out PREFIX:
  PREFIX.json.gz           Kineto trace (prof.export_chrome_trace), gzipped
  PREFIX.timing.json       the unprofiled step: median GPU time (CUDA events), median host wall
                           time per step (each step alone, after a sync), time per step of
                           back-to-back steps (steady_us), and energy per step read from NVML's
                           energy counter
  PREFIX.et.json.gz        PyTorch Execution Trace (ExecutionTraceObserver), with --et
  PREFIX.inductor.tar.gz   Inductor's cache (Triton binaries and launch metadata), with --compile

Models (random weights) and modes:
  bloom-560m  BLOOM-560M                     inference (prefill: the default), train
  gpt2        GPT-2 small                    train (the default: bf16 autocast, AdamW), inference
  llama       Llama-architecture 1.1B        inference, decode (b1, static KV cache), train
              (TinyLlama-1.1B's config)
  mixtral     Mixtral-architecture MoE       inference, decode; 8 layers, 8 experts, top-2
              decoder
  mlp         Linear-GELU-Linear blocks      inference, train; --compile for torch.compile
  qwen2       Qwen2-architecture 0.5B        decode (the default), inference, train
              (Qwen2-0.5B's config)
  bert        BERT-base, masked LM           inference (the default), train
  t5          T5-small, encoder-decoder      train (the default), inference
  vit         ViT-B/16 classifier            inference (the default), train; --seq is the image side
  resnet      ResNet-50 classifier           train (the default), inference; --seq is the image side
  convnext    ConvNeXt-T classifier          train (the default), inference; --seq is the image side
              (depthwise 7x7 convolutions, LayerNorm over channels)
  whisper     Whisper-base's shape,          inference (the default), train; 30 s of 80 mel bins,
              speech encoder-decoder         --seq decoder tokens
  mamba       Mamba-130M's shape             inference; without the mamba-ssm package transformers
                                             scans the sequence in PyTorch: thousands of small kernels
  lstm        Embedding, 2-layer LSTM,       train (the default), inference; cuDNN's RNN kernels
              vocabulary projection
  dlrm        DLRM-shaped recommender        train (the default), inference; 8 EmbeddingBag tables
                                             of 200k rows, bags of 1..--seq rows, --batch samples
  gcn         3-layer graph convolution      train (the default), inference; --batch nodes, --seq
                                             edges per node (index_select, index_add_, scatter_add_)
  unet        diffusion-style UNet           inference (the default), train; --seq is the latent side
  mlp-fp8     Linear-GELU-Linear blocks      inference; float8 GEMMs (torch._scaled_mm), bf16 out
              in float8 (e4m3)

Examples:
  python3 examples/capture_trace.py --model bloom-560m --out /tmp/bloom
  python3 examples/capture_trace.py --model llama --mode decode --out /tmp/llama_decode
  python3 examples/capture_trace.py --model llama --mode decode --cuda-graph --out /tmp/llama_graph
  python3 examples/capture_trace.py --model mlp --compile --out /tmp/mlp_compiled
  python3 examples/capture_trace.py --model bert --compile-mode max-autotune-no-cudagraphs  # Triton GEMMs
  python3 examples/capture_trace.py --model gpt2 --et            # train step with an Execution Trace
  python3 examples/capture_trace.py --model bert --dtype fp32 --tf32   # fp32 GEMMs on TF32 tensor cores
  python3 examples/capture_trace.py --model resnet --channels-last --cudnn-benchmark  # as CNNs train
  python3 examples/capture_trace.py --model dlrm --batch 4096   # embedding bags, index ops

The hand-built models (lstm, dlrm, gcn, unet, mlp-fp8) are in examples/custom_models.py.
"""
import argparse
import gzip
import json
import os
import shutil
import statistics
import tarfile
import time

import custom_models  # beside this script

MODELS = ("bloom-560m", "gpt2", "llama", "mixtral", "mlp", "qwen2", "bert", "t5", "vit", "resnet", "convnext",
          "whisper", "mamba", "lstm", "dlrm", "gcn", "unet", "mlp-fp8")
DTYPES = ("fp16", "bf16", "fp32")
DLRM_TABLES, DLRM_ROWS = 8, 200_000
GCN_FEATURES, GCN_CLASSES = 128, 47  # ogbn-products' classes
# Per model: default mode, dtype, batch, seq (prefill length, or the KV-cache length a decode
# step sees).
DEFAULTS = {
    "bloom-560m": ("inference", "fp16", 1, 5),
    "gpt2": ("train", "bf16", 8, 128),
    "llama": ("inference", "bf16", 2, 256),
    "mixtral": ("inference", "bf16", 4, 128),
    "mlp": ("inference", "fp16", 8, 512),
    "qwen2": ("decode", "bf16", 1, 256),
    "bert": ("inference", "fp16", 8, 128),
    "t5": ("train", "bf16", 8, 128),
    "vit": ("inference", "fp16", 8, 224),
    "resnet": ("train", "bf16", 32, 224),
    "convnext": ("train", "bf16", 32, 224),
    "whisper": ("inference", "fp16", 4, 64),
    "mamba": ("inference", "fp16", 2, 64),
    "lstm": ("train", "bf16", 32, 128),
    "dlrm": ("train", "bf16", 2048, 32),  # seq: the longest bag
    "gcn": ("train", "bf16", 50000, 16),  # batch: nodes, seq: edges per node
    "unet": ("inference", "fp16", 4, 64),
    "mlp-fp8": ("inference", "bf16", 8, 512),
}
# Decode needs a model with a static KV cache (CUDA-graph capturable).
MODES = {
    "bloom-560m": ("inference", "train"),
    "gpt2": ("train", "inference"),
    "llama": ("inference", "decode", "train"),
    "mixtral": ("inference", "decode"),
    "mlp": ("inference", "train"),
    "qwen2": ("inference", "decode", "train"),
    "bert": ("inference", "train"),
    "t5": ("inference", "train"),
    "vit": ("inference", "train"),
    "resnet": ("inference", "train"),
    "convnext": ("inference", "train"),
    "whisper": ("inference", "train"),
    "mamba": ("inference",),
    "lstm": ("inference", "train"),
    "dlrm": ("inference", "train"),
    "gcn": ("inference", "train"),
    "unet": ("inference", "train"),
    "mlp-fp8": ("inference",),
}
# What each model's forward takes: token ids (causal LMs: labels are the ids), masked-LM ids,
# encoder and decoder ids, images, log-mel spectrograms and decoder ids, or float activations
# (the MLPs), a recommender's dense features and bags, a graph's node features and edges, or
# a diffusion model's noisy latents and timesteps.
INPUTS = {"dlrm": "bags", "gcn": "graph", "unet": "latents", "mlp-fp8": "floats",
          "bloom-560m": "tokens", "gpt2": "tokens", "llama": "tokens", "mixtral": "tokens",
          "qwen2": "tokens", "bert": "masked", "t5": "seq2seq", "vit": "pixels", "resnet": "pixels",
          "convnext": "pixels", "whisper": "audio", "mamba": "tokens", "lstm": "tokens", "mlp": "floats"}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=MODELS, default="bloom-560m", help="model to build (random weights)")
    p.add_argument("--mode", choices=("inference", "decode", "train"), default=None,
                   help="inference: one no_grad forward over the prompt (prefill); decode: one token "
                        "with a KV cache of --seq tokens; train: fwd+loss+bwd+AdamW step "
                        "(default: per model, see above)")
    p.add_argument("--dtype", choices=DTYPES, default=None,
                   help="inference/decode: weight and activation dtype; train: autocast dtype over "
                        "fp32 weights (fp32 = no autocast)")
    p.add_argument("--tf32", action="store_true",
                   help="fp32 GEMMs may use TF32 (torch.set_float32_matmul_precision('high'), as "
                        "torch.compile advises)")
    p.add_argument("--cudnn-benchmark", action="store_true",
                   help="torch.backends.cudnn.benchmark = True: cuDNN times its convolution "
                        "algorithms on first use and keeps the fastest (common in CNN training)")
    p.add_argument("--channels-last", action="store_true",
                   help="pixels models: weights and images in channels_last (NHWC) memory format")
    p.add_argument("--batch", type=int, default=None, help="batch size")
    p.add_argument("--seq", type=int, default=None, help="sequence length (prefill) or KV-cache length (decode)")
    p.add_argument("--hidden", type=int, default=4096, help="mlp: hidden size (default 4096)")
    p.add_argument("--layers", type=int, default=None, help="number of decoder layers (default: the config's)")
    p.add_argument("--cuda-graph", action="store_true",
                   help="capture the step in a CUDA graph once and profile its replay")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile the model (Inductor; keeps its cache in PREFIX.inductor.tar.gz)")
    p.add_argument("--compile-mode", default=None,
                   choices=("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"),
                   help="torch.compile's mode (implies --compile): reduce-overhead runs the compiled "
                        "step as CUDA graphs, max-autotune picks Triton GEMM templates too")
    p.add_argument("--et", action="store_true", help="also record a PyTorch Execution Trace")
    p.add_argument("--no-record-shapes", action="store_true", help="profile without record_shapes")
    p.add_argument("--steps", type=int, default=1, help="profiled steps, each a ProfilerStep#N range (default 1)")
    p.add_argument("--warmup", type=int, default=3, help="untraced warm-up steps (default 3)")
    p.add_argument("--runs", type=int, default=20, help="timed unprofiled steps for the medians (default 20)")
    p.add_argument("--energy-seconds", type=float, default=2.0,
                   help="how long to loop the unprofiled step for its energy (default 2 s; 0: skip)")
    p.add_argument("--seed", type=int, default=0, help="torch.manual_seed value (default 0)")
    p.add_argument("--out", default=None, help="output prefix (default traces/<model>_<mode>)")
    p.add_argument("--keep-json", action="store_true", help="keep the uncompressed .json files too")
    a = p.parse_args()
    mode, dtype, batch, seq = DEFAULTS[a.model]
    a.mode = a.mode or mode
    a.dtype = a.dtype or dtype
    if a.mode == "decode":
        batch = 1
    a.batch = a.batch if a.batch is not None else batch
    a.seq = a.seq if a.seq is not None else seq
    if a.mode not in MODES[a.model]:
        p.error(f"--model {a.model} supports --mode {', '.join(MODES[a.model])}")
    if a.mode == "train" and a.cuda_graph:
        p.error("--cuda-graph captures inference or decode steps")
    if a.channels_last and INPUTS[a.model] != "pixels":
        p.error("--channels-last applies to image models (vit, resnet, convnext)")
    a.out = a.out or os.path.join("traces", f"{a.model}_{a.mode}")
    if a.compile_mode is not None:
        a.compile = True
    return a


def build_model(args, torch):
    """Return (model, vocab_size or number of classes); None for the float-input MLPs."""
    if args.model == "mlp-fp8":
        return custom_models.mlp_fp8(torch, args.hidden, args.layers or 2), None
    if args.model == "dlrm":
        return custom_models.dlrm(torch, DLRM_TABLES, DLRM_ROWS, dim=64), DLRM_ROWS
    if args.model == "gcn":
        return custom_models.gcn(torch, GCN_FEATURES, hidden=256, classes=GCN_CLASSES,
                                 layers=args.layers or 3), GCN_CLASSES
    if args.model == "unet":
        return custom_models.unet(torch), 0
    if args.model == "mlp":
        h = args.hidden
        layers = []
        for _ in range(args.layers or 2):
            layers += [torch.nn.Linear(h, h * 4), torch.nn.GELU(), torch.nn.Linear(h * 4, h)]
        return torch.nn.Sequential(*layers), None
    import transformers
    layers = args.layers
    if args.model == "bloom-560m":  # matches bigscience/bloom-560m
        cfg = transformers.BloomConfig(vocab_size=250880, hidden_size=1024, n_layer=layers or 24, n_head=16,
                                       layer_norm_epsilon=1e-5)
        return transformers.BloomForCausalLM(cfg), cfg.vocab_size
    if args.model == "gpt2":
        cfg = transformers.GPT2Config(n_layer=layers or 12)  # GPT-2 small defaults
        return transformers.GPT2LMHeadModel(cfg), cfg.vocab_size
    if args.model == "llama":  # TinyLlama-1.1B's shape
        cfg = transformers.LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632,
                                       num_hidden_layers=layers or 22, num_attention_heads=32,
                                       num_key_value_heads=4, max_position_embeddings=2048)
        return transformers.LlamaForCausalLM(cfg), cfg.vocab_size
    if args.model == "mixtral":
        cfg = transformers.MixtralConfig(vocab_size=32000, hidden_size=1024, intermediate_size=3584,
                                         num_hidden_layers=layers or 8, num_attention_heads=16,
                                         num_key_value_heads=8, num_local_experts=8, num_experts_per_tok=2,
                                         max_position_embeddings=4096)
        return transformers.MixtralForCausalLM(cfg), cfg.vocab_size
    if args.model == "qwen2":  # Qwen2-0.5B's shape
        cfg = transformers.Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864,
                                       num_hidden_layers=layers or 24, num_attention_heads=14,
                                       num_key_value_heads=2, max_position_embeddings=32768,
                                       tie_word_embeddings=True)
        return transformers.Qwen2ForCausalLM(cfg), cfg.vocab_size
    if args.model == "bert":  # bert-base-uncased's shape
        cfg = transformers.BertConfig(num_hidden_layers=layers or 12)
        return transformers.BertForMaskedLM(cfg), cfg.vocab_size
    if args.model == "t5":  # t5-small's shape
        cfg = transformers.T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=layers or 6,
                                    num_heads=8, decoder_start_token_id=0)
        return transformers.T5ForConditionalGeneration(cfg), cfg.vocab_size
    if args.model == "vit":  # ViT-B/16
        cfg = transformers.ViTConfig(image_size=args.seq, num_hidden_layers=layers or 12, num_labels=1000)
        return transformers.ViTForImageClassification(cfg), cfg.num_labels
    if args.model == "resnet":
        cfg = transformers.ResNetConfig(num_labels=1000)  # ResNet-50 (the config's defaults)
        return transformers.ResNetForImageClassification(cfg), cfg.num_labels
    if args.model == "convnext":
        cfg = transformers.ConvNextConfig(num_labels=1000)  # ConvNeXt-T (the config's defaults)
        return transformers.ConvNextForImageClassification(cfg), cfg.num_labels
    if args.model == "whisper":  # whisper-base's shape
        cfg = transformers.WhisperConfig(vocab_size=51865, num_mel_bins=80, d_model=512, encoder_layers=layers or 6,
                                         decoder_layers=layers or 6, encoder_attention_heads=8,
                                         decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                                         max_source_positions=1500, max_target_positions=448)
        return transformers.WhisperForConditionalGeneration(cfg), cfg.vocab_size
    if args.model == "mamba":  # mamba-130m's shape
        cfg = transformers.MambaConfig(vocab_size=50280, hidden_size=768, num_hidden_layers=layers or 24,
                                       state_size=16, expand=2, conv_kernel=4)
        return transformers.MambaForCausalLM(cfg), cfg.vocab_size
    return custom_models.lstm_language_model(torch, vocab=32000, hidden=1024, layers=layers or 2), 32000


def forward_inputs(args, torch, device, vocab, float_dtype):
    """The forward's keyword arguments: (for inference, for training, with labels)."""
    kind = INPUTS[args.model]
    b, s = args.batch, args.seq
    if kind == "bags":
        return custom_models.dlrm_inputs(torch, device, b, DLRM_TABLES, DLRM_ROWS, s, float_dtype)
    if kind == "graph":
        return custom_models.gcn_inputs(torch, device, b, s, GCN_FEATURES, GCN_CLASSES, float_dtype)
    if kind == "latents":
        return custom_models.unet_inputs(torch, device, b, s, float_dtype)
    if kind == "pixels":
        pixels = torch.randn(b, 3, s, s, device=device, dtype=float_dtype)
        if args.channels_last:
            pixels = pixels.contiguous(memory_format=torch.channels_last)
        labels = torch.randint(0, vocab, (b,), device=device)
        return {"pixel_values": pixels}, {"pixel_values": pixels, "labels": labels}
    ids = torch.randint(0, vocab, (b, s), device=device)
    if kind == "audio":  # 30 s of log-mel frames (Whisper's encoder takes exactly 3000)
        features = torch.randn(b, 80, 3000, device=device, dtype=float_dtype)
        return ({"input_features": features, "decoder_input_ids": ids, "use_cache": False},
                {"input_features": features, "labels": ids, "use_cache": False})
    if kind == "masked":
        return {"input_ids": ids}, {"input_ids": ids, "labels": ids}
    if kind == "seq2seq":  # a decoder a quarter of the encoder's length
        target = ids[:, : max(1, s // 4)].contiguous()
        return ({"input_ids": ids, "decoder_input_ids": target, "use_cache": False},
                {"input_ids": ids, "labels": target, "use_cache": False})
    return {"input_ids": ids, "use_cache": False}, {"input_ids": ids, "labels": ids, "use_cache": False}


def static_cache(model, args, torch, dtype):
    """A KV cache of fixed size (CUDA-graph capturable), across transformers versions."""
    import inspect
    import transformers
    params = inspect.signature(transformers.StaticCache.__init__).parameters
    kwargs = {"config": model.config, "max_cache_len": args.seq + 1}
    if "max_batch_size" in params:
        kwargs["max_batch_size"] = args.batch
    elif "batch_size" in params:
        kwargs["batch_size"] = args.batch
    if "device" in params:
        kwargs["device"] = next(model.parameters()).device
    if "dtype" in params:
        kwargs["dtype"] = dtype
    return transformers.StaticCache(**kwargs)


def make_step(args, torch, device):
    """Build the model and inputs and return a zero-argument step function."""
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    with torch.device(device):  # initialise the random weights where they run: fast on a GPU
        model, vocab = build_model(args, torch)
    train = args.mode == "train"
    if args.model == "mlp-fp8":  # its float8 weights and float32 scales keep their dtypes
        model = model.to(device).train(train)
    else:
        model = model.to(device, dtype=torch.float32 if train else dtype).train(train)
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    eager_model = model
    if args.compile:
        model = torch.compile(model, mode=args.compile_mode)
    float_dtype = torch.float32 if train else dtype
    if vocab is None:
        x = torch.randn(args.batch, args.seq, args.hidden, device=device, dtype=float_dtype)
    else:
        infer_inputs, train_inputs = forward_inputs(args, torch, device, vocab, float_dtype)
        ids = infer_inputs.get("input_ids")

    if train:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def step():
            with torch.autocast(device, dtype=dtype, enabled=dtype != torch.float32):
                if vocab is None:
                    loss = model(x).float().pow(2).mean()  # MSE against zero
                else:
                    loss = model(**train_inputs).loss
            loss.backward()
            opt.step()
            opt.zero_grad()
        return step

    if args.mode == "inference":
        @torch.no_grad()
        def step():
            return model(x) if vocab is None else model(**infer_inputs).logits
        return step

    # Decode: fill a static cache with the prompt once; every step then decodes the token at
    # position --seq. The cache counts the tokens it holds on the GPU (transformers 5), so each
    # step first sets that count back: every step does the same work, in a CUDA graph too.
    # The prompt runs eagerly: the cache allocates its tensors on first use, and allocated inside
    # reduce-overhead's CUDA graphs they would be graph outputs that the next step overwrites.
    cache = static_cache(model, args, torch, dtype)
    with torch.no_grad():
        eager_model(input_ids=ids, past_key_values=cache, use_cache=True)
    token = torch.randint(0, vocab, (args.batch, 1), device=device)
    position = torch.full((1, 1), args.seq, device=device, dtype=torch.long)
    counters = [layer.cumulative_length for layer in getattr(cache, "layers", [])
                if isinstance(getattr(layer, "cumulative_length", None), torch.Tensor)]

    @torch.no_grad()
    def step():
        for counter in counters:
            counter.fill_(args.seq)
        return model(input_ids=token, past_key_values=cache, use_cache=True, position_ids=position).logits
    return step


def graph_step(step, torch):
    """Capture `step` in a CUDA graph (after warm-up on a side stream) and return its replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph.replay


def time_steps(step, runs, torch):
    """Median GPU time (CUDA events) and host wall time (with a sync) of one step, microseconds."""
    gpu, host = [], []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        start.record()
        step()
        end.record()
        end.synchronize()
        host.append((time.perf_counter() - t0) * 1e6)
        gpu.append(start.elapsed_time(end) * 1000.0)  # ms -> us
    return statistics.median(gpu), statistics.median(host)


def steady_steps(step, torch, windows=5, seconds=0.3):
    """Microseconds per step of back-to-back steps (one sync per window, as a training loop runs),
    per window: a step timed alone (time_steps) starts from an idle GPU and a sleeping host
    thread, which on these hosts moves a host-bound step by -45% to +85%."""
    per_step = []
    for _ in range(windows):
        torch.cuda.synchronize()
        t0, steps = time.perf_counter(), 0
        while time.perf_counter() - t0 < seconds:
            step()
            steps += 1
        torch.cuda.synchronize()
        per_step.append((time.perf_counter() - t0) * 1e6 / steps)
    return per_step


def settled_power_mw(pynvml, handle, timeout_s=10.0):
    """The board's power once it has stopped falling after the last work: NVML's reading is an
    average over about a second, and the clocks take seconds to come down, so a reading 0.5 s
    after a training step read 172-211 W where the board idles at 120-127 W. Polls every 100 ms
    until a second's median is within 1 W of the one before (or `timeout_s`)."""
    def second():
        readings = []
        for _ in range(10):
            readings.append(pynvml.nvmlDeviceGetPowerUsage(handle))
            time.sleep(0.1)
        return statistics.median(readings)
    t0, last = time.perf_counter(), second()
    while time.perf_counter() - t0 < timeout_s:
        now = second()
        if last - now < 1000:  # mW
            return now
        last = now
    return last


def measure_energy(step, seconds, torch):
    """Energy per step from NVML's board energy counter over `seconds` of back-to-back steps, and
    the idle power before; None where NVML or the counter is missing."""
    try:
        import pynvml
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        torch.cuda.synchronize()
        idle_mw = settled_power_mw(pynvml, handle)
        e0 = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)  # mJ
        t0, steps = time.perf_counter(), 0
        while time.perf_counter() - t0 < seconds:
            step()
            steps += 1
            if steps % 8 == 0:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - t0
        e1 = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        return {"energy_mj_per_step": (e1 - e0) / steps, "energy_steps": steps, "energy_window_s": elapsed,
                "average_power_w": (e1 - e0) / 1000.0 / elapsed, "idle_power_w": idle_mw / 1000.0}
    except Exception as e:  # NVML missing, counter not supported: say so, never zero
        return {"energy_note": f"energy not measured: {e}"}


def gzip_file(path, keep):
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    if not keep:
        os.remove(path)
    return path + ".gz"


def main():
    args = parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    inductor_dir = os.path.abspath(args.out + ".inductor")
    if args.compile:
        # Inductor writes its Triton binaries and their launch metadata here (read before torch
        # is imported); `replay --inductor-cache` loads them.
        shutil.rmtree(inductor_dir, ignore_errors=True)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = inductor_dir
        os.environ["TRITON_CACHE_DIR"] = os.path.join(inductor_dir, "triton")
    import torch  # imported lazily so that --help works without torch
    from torch.profiler import ExecutionTraceObserver, ProfilerActivity, profile, schedule

    if not torch.cuda.is_available():
        raise SystemExit("capture_trace.py needs a CUDA GPU")
    torch.manual_seed(args.seed)
    if args.tf32:
        torch.set_float32_matmul_precision("high")
    if args.cudnn_benchmark:
        torch.backends.cudnn.benchmark = True
    step = make_step(args, torch, "cuda")
    if args.compile_mode == "reduce-overhead":
        # CUDA graph trees: each step is a new invocation whose outputs may overwrite the last
        # step's (what users call before each step, as PyTorch's docs say).
        compiled_step = step

        def step():
            torch.compiler.cudagraph_mark_step_begin()
            return compiled_step()
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    if args.cuda_graph:
        step = graph_step(step, torch)
        for _ in range(args.warmup):
            step()
        torch.cuda.synchronize()

    median_us, host_us = time_steps(step, args.runs, torch)
    timing = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(),
              "model": args.model, "mode": args.mode, "dtype": args.dtype, "batch": args.batch,
              "seq": args.seq, "cuda_graph": args.cuda_graph, "compile": args.compile,
              "compile_mode": args.compile_mode, "tf32": args.tf32,
              "cudnn_benchmark": args.cudnn_benchmark, "channels_last": args.channels_last,
              "median_us": median_us, "host_median_us": host_us, "runs": args.runs}
    windows = steady_steps(step, torch)
    timing.update({"steady_us": statistics.median(windows), "steady_windows_us": windows})
    if args.energy_seconds > 0:
        timing.update(measure_energy(step, args.energy_seconds, torch))

    trace_path, et_path = args.out + ".json", args.out + ".et.json"
    et = None
    if args.et:
        et = ExecutionTraceObserver()
        et.register_callback(et_path)
    # One untraced step (wait), one traced warm-up, then --steps recorded steps, each its own
    # ProfilerStep#N range, as users' profiler schedules record them.
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 record_shapes=not args.no_record_shapes,
                 schedule=schedule(wait=1, warmup=1, active=args.steps, repeat=1)) as prof:
        for i in range(2 + args.steps):
            if et is not None and i == 2:
                et.start()
            step()
            torch.cuda.synchronize()
            prof.step()
        if et is not None:
            et.stop()
    if et is not None:
        et.unregister_callback()
    prof.export_chrome_trace(trace_path)

    written = [gzip_file(trace_path, args.keep_json)]
    if args.et:
        written.append(gzip_file(et_path, args.keep_json))
    if args.compile:
        with tarfile.open(args.out + ".inductor.tar.gz", "w:gz") as tar:
            tar.add(inductor_dir, arcname=os.path.basename(inductor_dir))
        written.append(args.out + ".inductor.tar.gz")
    with open(args.out + ".timing.json", "w") as f:
        json.dump(timing, f, indent=2)
    written.append(args.out + ".timing.json")

    energy = timing.get("energy_mj_per_step")
    print(f"{args.model} {args.mode} {args.dtype} batch={args.batch} seq={args.seq}"
          f"{' cuda-graph' if args.cuda_graph else ''}{' compiled' if args.compile else ''}: "
          f"median {median_us:.1f} us GPU, {host_us:.1f} us host per step over {args.runs} runs, "
          f"{timing['steady_us']:.1f} us back to back"
          f"{f', {energy:.1f} mJ/step' if energy is not None else ''} on {timing['gpu']}")
    for path in written:
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
