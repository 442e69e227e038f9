#!/usr/bin/env bash
# The device checks of the JAX, CuPy and torch-accelerator probes, in one command for a
# machine with a GPU (JAX's CUDA build; CuPy where installed), within 9 minutes (540 s by
# default: DEVICE_CHECK_BUDGET_S):
#
#   bench/device_check.sh OUT_DIR
#
# Runs, each step under `timeout` and independent of the others:
#   00 the environment: JAX's version, backend, devices and one device's memory_stats() key
#      set; CuPy's version and pools; what torch.accelerator reports
#   01 real allocator figures captured as test data (01_capture.json): memory_stats() before
#      and after arrays are made and freed, the peak's behaviour, CuPy's pool figures
#   02 the workloads of bench/device_check/test_device_workloads.py (JAX's device allocator:
#      a leak, a clean step, a peak inside a call; arrays and recompiles on the GPU; CuPy: a
#      leak, a clean step, a peak inside a call), JSON report, summary against expectations
#   03 the same with XLA_PYTHON_CLIENT_PREALLOCATE=false (jax_device_reserved then grows)
#   04 the examples/jax_replay suite on the GPU (its pairs must come out as declared)
#   05 the CPU-side tests of these probes (stand-ins), which must pass on a GPU machine too
# Everything goes under OUT_DIR; summary.txt has each step's exit status and time. Nothing is
# installed: the interpreter is $PYTHON, else python3, with jax (CUDA), pytest, numpy and
# psutil; the checkout is put first on PYTHONPATH.
set -u

if [ $# -lt 1 ]; then
    echo "usage: bench/device_check.sh OUT_DIR" >&2
    exit 2
fi
START=$SECONDS
BUDGET_S=${DEVICE_CHECK_BUDGET_S:-540}
mkdir -p "$1" || exit 2
OUT=$(cd "$1" && pwd)
cd "$(dirname "$0")/.." || exit 2
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"

step() {
    local name=$1 limit=$2 left t0 rc
    shift 2
    left=$((BUDGET_S - (SECONDS - START)))
    if [ "$left" -le 10 ]; then
        echo "$name: SKIPPED (time budget of ${BUDGET_S} s spent)" | tee -a "$SUMMARY"
        return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    t0=$SECONDS
    timeout -k 5 "$limit" "$@" > "$OUT/$name.log" 2>&1
    rc=$?
    echo "$name: rc=$rc in $((SECONDS - t0)) s (limit $limit s)" | tee -a "$SUMMARY"
}

"$PY" - > "$OUT/00_env.txt" 2>&1 <<'PYEOF'
import importlib.metadata as md
import sys

print("python", sys.version.split()[0], sys.executable)
for name in ("pytest", "numpy", "psutil", "jax", "jaxlib", "cupy", "torch", "pytest-membudget"):
    try:
        print(name, md.version(name))
    except md.PackageNotFoundError:
        print(name, "not installed")
import pytest_membudget
print("pytest_membudget from", pytest_membudget.__file__)
import jax
print("jax backend", jax.default_backend(), "devices", jax.devices())
stats = jax.local_devices()[0].memory_stats()
print("memory_stats keys", sorted(stats) if stats else stats)
if jax.default_backend() == "cpu":
    sys.exit(3)
try:
    import cupy
    print("cupy available", cupy.cuda.is_available())
except Exception as exc:
    print("cupy:", type(exc).__name__, exc)
try:
    import torch
    print("torch.accelerator", torch.accelerator.is_available(),
          torch.accelerator.current_accelerator())
except Exception as exc:
    print("torch:", type(exc).__name__, exc)
from pytest_membudget.probes import create
for name in ("jax_device_used", "jax_device_reserved", "cupy_used", "xpu_allocated",
             "mps_allocated"):
    print(f"unavailable({name}):", create(name).unavailable())
PYEOF
env_rc=$?
command -v nvidia-smi > /dev/null && nvidia-smi >> "$OUT/00_env.txt" 2>&1
cat "$OUT/00_env.txt"
if [ "$env_rc" -ne 0 ]; then
    echo "FATAL: $PY has no JAX with a GPU backend (see $OUT/00_env.txt)" | tee -a "$SUMMARY"
    exit 2
fi

step 01_capture 60 "$PY" - "$OUT/01_capture.json" <<'PYEOF'
import json
import sys

import jax
import jax.numpy as jnp

device = jax.local_devices()[0]
found = {"device": str(device), "at_start": device.memory_stats()}
kept = [jnp.ones((1024, 1024), jnp.float32) for _ in range(4)]
found["with_16_MiB_of_arrays"] = device.memory_stats()
del kept
found["after_freeing_them"] = device.memory_stats()
jax.jit(lambda x: jnp.outer(x, x).sum())(jnp.ones((8192,), jnp.float32)).block_until_ready()
found["after_a_256_MiB_intermediate"] = device.memory_stats()
try:
    import cupy

    pool = cupy.get_default_memory_pool()
    x = cupy.ones((1024, 1024), cupy.float32)
    found["cupy"] = {"used": pool.used_bytes(), "total": pool.total_bytes(),
                     "free_blocks": pool.n_free_blocks()}
    del x
    found["cupy"]["after_free"] = {"used": pool.used_bytes(), "total": pool.total_bytes(),
                                   "free_blocks": pool.n_free_blocks()}
except Exception as exc:
    found["cupy"] = f"{type(exc).__name__}: {exc}"
json.dump(found, open(sys.argv[1], "w"), indent=1, default=str)
print(json.dumps(found, indent=1, default=str))
PYEOF

PYTEST=("$PY" -m pytest -p no:cacheprovider -p no:randomly -rA)
step 02_workloads 150 "${PYTEST[@]}" bench/device_check/test_device_workloads.py \
    --membudget-json "$OUT/02_workloads.json"
"$PY" bench/device_check/summary.py "$OUT" | tee -a "$SUMMARY"
step 03_no_preallocation 120 env XLA_PYTHON_CLIENT_PREALLOCATE=false "${PYTEST[@]}" \
    bench/device_check/test_device_workloads.py -k "jax_device" \
    --membudget-json "$OUT/03_no_preallocation.json"
step 04_jax_example 150 "${PYTEST[@]}" examples/jax_replay \
    --membudget-json "$OUT/04_jax_example.json"
step 05_cpu_side_tests 90 "${PYTEST[@]}" -q tests/unit/probes/jax \
    tests/unit/probes/test_cupy_probe.py tests/unit/probes/test_accelerator.py \
    tests/plugin/test_jax_probes.py tests/plugin/test_jax_device.py
echo "total: $((SECONDS - START)) s" | tee -a "$SUMMARY"
