# Sourced by the GPU scripts: puts the cuBLAS/CUPTI that PyTorch itself uses first on
# LD_LIBRARY_PATH, so that cuBLAS heuristics pick the kernels the recording picked (two copies of
# libcublas.so.13 cannot both be loaded).
nvidia_libs="$(python3 - <<'PY'
import glob, os, site
dirs = []
for base in site.getsitepackages():
    dirs += sorted(glob.glob(os.path.join(base, "nvidia", "*", "lib")))
print(":".join(dirs))
PY
)"
export LD_LIBRARY_PATH="${nvidia_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
