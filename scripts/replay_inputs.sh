# Sourced: replay_inputs TRACE sets the array `extra` to what replays that capture the way it was
# made, by its name (scripts/gpu_capture_set.sh's names): a reduce-overhead or compiled capture
# takes its Inductor cache beside it, a CUDA-graph capture the recipes of its eager capture.
replay_inputs() {
  local trace="$1" dir name
  dir="$(dirname "$trace")"
  name="$(basename "$trace" .json.gz)"
  extra=()
  case "$name" in
    *_compiled_graph)  # torch.compile's reduce-overhead: Triton kernels and others in CUDA graphs;
      # the wrapper code's library calls give the others their recipes
      extra=(--inductor-cache "$dir/$name.inductor.tar.gz") ;;
    *_graph) extra=(--recipes "$dir/${name%_graph}.json.gz") ;;
    *_compiled | *_compiled_*) extra=(--inductor-cache "$dir/$name.inductor.tar.gz") ;;
  esac
}
