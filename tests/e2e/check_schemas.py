#!/usr/bin/env python3
"""`replay inspect --json` and `replay classify` outputs validate against their schemas on every
bundled Kineto trace."""
import glob, os, subprocess, sys, tempfile

replay, root = sys.argv[1], sys.argv[2]
validate = [sys.executable, os.path.join(root, "tests/tools/validate_schema.py")]
failures = 0
traces = sorted(p for p in glob.glob(os.path.join(root, "traces/*/*.json.gz")) + glob.glob(os.path.join(root, "traces/*/*/*.json.gz"))
                if not p.endswith(".et.json.gz") and "linear_et" not in p)
with tempfile.TemporaryDirectory() as tmp:
    for trace in traces:
        name = os.path.relpath(trace, root)
        inspect = os.path.join(tmp, "inspect.json")
        with open(inspect, "w") as out:
            r = subprocess.run([replay, "inspect", "--json", "--quiet", trace], stdout=out, stderr=subprocess.PIPE, text=True)
        sig = os.path.join(tmp, "sig.json")
        c = subprocess.run([replay, "classify", "--quiet", trace, "-o", sig], capture_output=True, text=True)
        v1 = subprocess.run([*validate, inspect, os.path.join(root, "schemas/inspect.schema.json")], capture_output=True, text=True)
        v2 = subprocess.run([*validate, sig, os.path.join(root, "schemas/kernel_signatures.schema.json")], capture_output=True, text=True)
        ok = r.returncode == 0 and c.returncode == 0 and v1.returncode == 0 and v2.returncode == 0
        print(("ok   " if ok else "FAIL ") + name + ("" if ok else f"\n{r.stderr}{c.stderr}{v1.stdout}{v1.stderr}{v2.stdout}{v2.stderr}"))
        failures += not ok
sys.exit(1 if failures else 0)
