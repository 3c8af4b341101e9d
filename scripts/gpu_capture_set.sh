#!/usr/bin/env bash
# Run ON a GPU machine: captures the validation set the way users record traces (record_shapes,
# no Execution Trace unless the name says .et), each with its unprofiled timing and energy, and
# packs them into OUT_DIR/captures_<gpu>.tar.gz. Every capture is independent: one that fails is
# logged and the others go on.
#
# Usage: scripts/gpu_capture_set.sh OUT_DIR [names...]   (default: all of them)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: gpu_capture_set.sh OUT_DIR [names...]}"
shift
gpu="$(python3 -c 'import re, torch; m = re.search(r"[A-Z]\d{2,3}", torch.cuda.get_device_name()); print(m.group(0).lower() if m else "gpu")' 2>/dev/null || echo gpu)"
# Captures go to a scratch folder; OUT_DIR gets the one archive (the device tool brings back few files).
dir="${TMPDIR:-/tmp}/captures_$gpu"
mkdir -p "$dir" "$out"
export PYTHONUNBUFFERED=1

# name: capture_trace.py arguments
declare -A sets=(
  [bloom_b1]="--model bloom-560m"
  [bloom_b1.et]="--model bloom-560m --et"
  [bloom_b4s128]="--model bloom-560m --batch 4 --seq 128"
  [llama_decode]="--model llama --mode decode --seq 256"
  [llama_decode_graph]="--model llama --mode decode --seq 256 --cuda-graph"
  [llama_prefill]="--model llama --batch 2 --seq 256"
  [gpt2_train]="--model gpt2"
  [gpt2_train.et]="--model gpt2 --et"
  [mlp_compiled]="--model mlp --compile"
  [mixtral_prefill]="--model mixtral --batch 4 --seq 128"
  [mixtral_decode]="--model mixtral --mode decode --seq 128"
  # Architectures the engine was not developed on (scripts/gpu_unseen.sh).
  [qwen2_decode]="--model qwen2 --mode decode --seq 256"
  [qwen2_decode_graph]="--model qwen2 --mode decode --seq 256 --cuda-graph"
  [bert_infer]="--model bert"
  [t5_train]="--model t5"
  [vit_infer]="--model vit"
  [resnet_train]="--model resnet"
  [resnet_compiled]="--model resnet --mode inference --batch 16 --compile"
  [qwen2_prefill]="--model qwen2 --mode inference --batch 2 --seq 256"
  [bert_train]="--model bert --mode train"
  [vit_train]="--model vit --mode train"
  [gpt2_compiled]="--model gpt2 --compile"
  [resnet_infer]="--model resnet --mode inference --batch 16"
  [vit_compiled]="--model vit --compile"
  [qwen2_prefill_compiled]="--model qwen2 --mode inference --batch 2 --seq 256 --compile"
  [bert_compiled]="--model bert --compile"
  [qwen2_decode_compiled]="--model qwen2 --mode decode --seq 256 --compile"
  [vit_train_compiled]="--model vit --mode train --compile"
  [bert_compiled_autotune]="--model bert --compile-mode max-autotune-no-cudagraphs"
  [qwen2_decode_compiled_graph]="--model qwen2 --mode decode --seq 256 --compile-mode reduce-overhead"
  [bert_compiled_graph]="--model bert --compile-mode reduce-overhead"
  [resnet_compiled_graph]="--model resnet --mode inference --batch 16 --compile-mode reduce-overhead"
  [vit_compiled_graph]="--model vit --compile-mode reduce-overhead"
  [qwen2_prefill_compiled_graph]="--model qwen2 --mode inference --batch 2 --seq 256 --compile-mode reduce-overhead"
  [llama_decode_compiled_graph]="--model llama --mode decode --seq 256 --compile-mode reduce-overhead"
  [bert_infer_fp32]="--model bert --dtype fp32"
  [bert_infer_tf32]="--model bert --dtype fp32 --tf32"
  [gpt2_train_tf32]="--model gpt2 --dtype fp32 --tf32"
  [t5_infer]="--model t5 --mode inference"
  [llama_train]="--model llama --mode train --batch 4 --seq 256"
  [gpt2_infer]="--model gpt2 --mode inference"
  [resnet_train_nhwc_bench]="--model resnet --channels-last --cudnn-benchmark"
  [resnet_infer_bench]="--model resnet --mode inference --batch 16 --cudnn-benchmark"
  [qwen2_train]="--model qwen2 --mode train --batch 4 --seq 256"
  [convnext_train]="--model convnext"
  [whisper_infer]="--model whisper"
  [mamba_infer]="--model mamba"
  [lstm_train]="--model lstm"
  [lstm_infer]="--model lstm --mode inference --batch 8"
  [dlrm_train]="--model dlrm"
  [dlrm_infer]="--model dlrm --mode inference"
  [gcn_train]="--model gcn"
  [unet_infer]="--model unet"
  [unet_train]="--model unet --mode train"
  [mlp_fp8_infer]="--model mlp-fp8"
  # The same hand-built models as users also run them: torch.compile, a CUDA graph, both.
  [dlrm_infer_graph]="--model dlrm --mode inference --cuda-graph"
  [dlrm_infer_compiled]="--model dlrm --mode inference --compile"
  [dlrm_train_compiled]="--model dlrm --compile"
  [gcn_train_compiled]="--model gcn --compile"
  [unet_infer_graph]="--model unet --cuda-graph"
  [unet_infer_compiled]="--model unet --compile"
  [unet_infer_compiled_graph]="--model unet --compile-mode reduce-overhead"
  [unet_train_compiled]="--model unet --mode train --compile"
)
order=(bloom_b1 bloom_b1.et bloom_b4s128 llama_decode llama_decode_graph llama_prefill gpt2_train gpt2_train.et
       mlp_compiled mixtral_prefill mixtral_decode qwen2_decode qwen2_decode_graph bert_infer t5_train vit_infer
       resnet_train resnet_compiled qwen2_prefill bert_train vit_train gpt2_compiled resnet_infer vit_compiled
       qwen2_prefill_compiled bert_compiled qwen2_decode_compiled vit_train_compiled bert_compiled_autotune
       qwen2_decode_compiled_graph bert_compiled_graph resnet_compiled_graph vit_compiled_graph
       qwen2_prefill_compiled_graph llama_decode_compiled_graph bert_infer_fp32 bert_infer_tf32 gpt2_train_tf32 t5_infer llama_train gpt2_infer
       resnet_train_nhwc_bench resnet_infer_bench qwen2_train convnext_train whisper_infer mamba_infer lstm_train
       lstm_infer dlrm_train dlrm_infer gcn_train unet_infer unet_train mlp_fp8_infer dlrm_infer_graph
       dlrm_infer_compiled dlrm_train_compiled gcn_train_compiled unet_infer_graph unet_infer_compiled
       unet_infer_compiled_graph unet_train_compiled)
[ $# -gt 0 ] && order=("$@")
for name in "${order[@]}"; do
  start=$(date +%s)
  # shellcheck disable=SC2086
  if python3 examples/capture_trace.py ${sets[$name]} --out "$dir/$name" > "$dir/$name.log" 2>&1; then
    echo "ok   $name ($(( $(date +%s) - start )) s): $(grep -m1 'median' "$dir/$name.log")"
  else
    echo "FAIL $name ($(( $(date +%s) - start )) s):"; tail -15 "$dir/$name.log"
  fi
done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv > "$dir/nvidia_smi.csv" 2>&1
tar -C "$(dirname "$dir")" -czf "$out/captures_$gpu.tar.gz" "captures_$gpu"
ls -la "$out/captures_$gpu.tar.gz"
