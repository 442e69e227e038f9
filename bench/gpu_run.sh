#!/usr/bin/env bash
# The CUDA checks of pytest-membudget, in one command for a machine with a CUDA device, within
# 10 minutes (570 s by default: GPU_RUN_BUDGET_S; the cost step measures for GPU_RUN_COSTS_S,
# 140 s by default; GPU_RUN_ARCHIVE=FILE.tgz archives OUT_DIR at the end):
#
#   bench/gpu_run.sh OUT_DIR [GPU_CHECK_SCRIPT]
#
# Runs, each step under `timeout` and independent of the others:
#   01 the GPU suite: pytest tests -m cuda (tests/gpu: serial and -n 2 inner sessions, kept
#      under 01_inner/), with the backward-leak case: gradients kept per step, allocated in
#      backward where torch records no Python frame, which the evidence must report; its
#      check and evidence get a line of the summary and 01_backward_leak.json
#   02 the rssm_collection example with --membudget-require-cuda (JSON report with samples)
#   03 the cost measurements of bench/cuda_costs.py (allocator history; synchronize per sample)
#   04 real memory_stats and snapshot captured by bench/cuda_capture.py (test data to commit)
#   05 the CPU-side CUDA tests (fakes), which must pass on a GPU machine too
#   06 GPU_CHECK_SCRIPT (e.g. a copy of gpu_check.sh), if given, in the time left
# Everything goes under OUT_DIR; summary.txt has each step's exit status and time. Nothing is
# installed: the interpreter is $PYTHON, else python3, with torch (CUDA), pytest, numpy,
# psutil and pytest-xdist; the checkout is put first on PYTHONPATH.
set -u

if [ $# -lt 1 ]; then
    echo "usage: bench/gpu_run.sh OUT_DIR [GPU_CHECK_SCRIPT]" >&2
    exit 2
fi
START=$SECONDS
BUDGET_S=${GPU_RUN_BUDGET_S:-570}
mkdir -p "$1" || exit 2
OUT=$(cd "$1" && pwd)
GPU_CHECK=${2:-}
if [ -n "$GPU_CHECK" ]; then GPU_CHECK=$(cd "$(dirname "$GPU_CHECK")" && pwd)/$(basename "$GPU_CHECK"); fi
cd "$(dirname "$0")/.." || exit 2
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"

# step NAME LIMIT_S CMD...: CMD's output in $OUT/NAME.log, within the time left.
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
import os
import sys

print("python", sys.version.split()[0], sys.executable)
for name in ("pytest", "numpy", "psutil", "pytest-xdist", "pytest-membudget"):
    try:
        print(name, md.version(name))
    except md.PackageNotFoundError:
        print(name, "not installed")
import pytest_membudget
print("pytest_membudget from", pytest_membudget.__file__)
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if not torch.cuda.is_available():
    sys.exit(3)
for i in range(torch.cuda.device_count()):
    p = torch.cuda.get_device_properties(i)
    print(f"cuda:{i} {p.name} cc {p.major}.{p.minor} {p.total_memory / 2**30:.1f} GiB")
print("allocator backend", torch.cuda.memory.get_allocator_backend())
settings = getattr(torch._C, "_accelerator_getAllocatorSettings", None)
print("allocator settings", repr(settings()) if settings else "(no query)")
for key in sorted(os.environ):
    if key.startswith(("PYTORCH_", "CUDA_", "TORCH_CUBLAS")):
        print(f"env {key}={os.environ[key]}")
PYEOF
env_rc=$?
command -v nvidia-smi > /dev/null && nvidia-smi >> "$OUT/00_env.txt" 2>&1
cat "$OUT/00_env.txt"
if [ "$env_rc" -ne 0 ]; then
    echo "FATAL: $PY has no usable torch with a CUDA device (see $OUT/00_env.txt)" | tee -a "$SUMMARY"
    exit 2
fi

# Where the package is not installed, its entry point is put on PYTHONPATH (a dist-info of
# two files, nothing installed): the tests' inner pytest sessions (pytester, subprocesses)
# then load the plugin as an installed copy would.
has_entry_point() {
    "$PY" -c 'import importlib.metadata as m, sys; sys.exit(0 if any(e.name == "membudget" for e in m.entry_points(group="pytest11")) else 1)'
}
PLUGIN=()
if ! has_entry_point; then
    SHIM=$(mktemp -d "${TMPDIR:-/tmp}/membudget_ep.XXXXXX") || exit 2
    VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -1)
    INFO=$SHIM/pytest_membudget-${VERSION:-0}.dist-info
    mkdir -p "$INFO"
    printf 'Metadata-Version: 2.1\nName: pytest-membudget\nVersion: %s\n' "${VERSION:-0}" \
        > "$INFO/METADATA"
    printf '[pytest11]\nmembudget = pytest_membudget.plugin\n' > "$INFO/entry_points.txt"
    export PYTHONPATH="$PYTHONPATH:$SHIM"
    has_entry_point || PLUGIN=(-p pytest_membudget.plugin)
    echo "the package is not installed: its entry point is read from $SHIM" >> "$OUT/00_env.txt"
fi
PYTEST=("$PY" -m pytest -p no:cacheprovider -rA ${PLUGIN[@]+"${PLUGIN[@]}"})

step 01_cuda_suite 240 "${PYTEST[@]}" tests -m cuda -v --junitxml "$OUT/01_cuda_suite.xml" \
    --basetemp "$OUT/01_inner"
timeout 30 "$PY" bench/gpu_backward_summary.py "$OUT" | tee -a "$SUMMARY"
step 02_rssm_example 120 "${PYTEST[@]}" -v examples/rssm_collection --membudget-require-cuda \
    --membudget-json "$OUT/02_rssm_example.json" --membudget-json-samples
COSTS_S=${GPU_RUN_COSTS_S:-140}
step 03_costs $((COSTS_S + 30)) "$PY" bench/cuda_costs.py --out "$OUT" --seconds "$COSTS_S"
step 04_capture 45 "$PY" bench/cuda_capture.py --out "$OUT/testdata"
step 05_cpu_side_cuda_tests 120 "${PYTEST[@]}" -q tests/unit/probes/test_cuda.py \
    tests/unit/probes/test_cuda_real_shapes.py tests/unit/probes/test_cuda_workspace.py \
    tests/unit/probes/test_cuda_history.py tests/unit/probes/test_cuda_allocator_config.py \
    tests/unit/probes/test_cuda_sync.py tests/unit/probes/test_cuda_devices.py \
    tests/unit/probes/test_fake_torch.py tests/plugin/test_cuda_wiring.py
left=$((BUDGET_S - (SECONDS - START) - 15))
if [ -n "$GPU_CHECK" ] && [ "$left" -gt 30 ]; then
    step 06_gpu_check "$left" env OUT="$OUT/gpu_check" PYTHON="$PY" \
        GPU_VERIFY_BUDGET_S="$((left - 10))" bash "$GPU_CHECK"
elif [ -n "$GPU_CHECK" ]; then
    echo "06_gpu_check: SKIPPED (only $left s left)" | tee -a "$SUMMARY"
fi
echo "total: $((SECONDS - START)) s" | tee -a "$SUMMARY"
# GPU_RUN_ARCHIVE=FILE.tgz: everything under OUT_DIR in one file, for a machine that hands
# back only a few files of a run.
if [ -n "${GPU_RUN_ARCHIVE:-}" ]; then
    tar czf "$GPU_RUN_ARCHIVE" -C "$OUT" . && echo "archive: $GPU_RUN_ARCHIVE" | tee -a "$SUMMARY"
fi
