#!/usr/bin/env bash
# The CUDA checks, for a GPU machine: the CUDA tests (which skip on a CPU host: the sandbox,
# fused-gelu's bandwidth check, a kernel profile), a profiled fused-gelu grade with its
# roofline picture, and the grading latency benchmark on a CPU task and on the GPU task, then a
# short summary.
# Budget: under 5 minutes on a warm machine with the venv installed (Quick start, command 2).
# Run from the repository root: bash bench/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
OUT=${OUT:-$(mktemp -d)}
started=$(date +%s)

$PY - <<'PY' | tee "$OUT/device.txt"
import torch
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, available: {torch.cuda.is_available()}")
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print(f"GPU: {p.name}, {p.total_memory / 2**30:.0f} GiB, L2 {p.L2_cache_size / 2**20:.0f} MiB")
PY

timeout 180 $PY -m pytest -q -rs -p no:cacheprovider \
    tests/sandbox/test_cuda.py tests/graders/test_roofline.py tests/sandbox/test_profile.py \
    2>&1 | tee "$OUT/tests.txt" | tail -15
tests_rc=${PIPESTATUS[0]}

timeout 60 $PY -m bot worker --check 2>&1 | tail -3 | tee "$OUT/check.txt"

# the bound named on a GPU, and the picture (fused-gelu prefers CUDA where there is one)
cp tests/graders/solutions/roofline/correct_compiled.py "$OUT/fused.py"
timeout 90 $PY -m bot grade "$OUT/fused.py" --task roofline/fused-gelu --profile \
    2>&1 | tee "$OUT/profile.txt" | tail -8

timeout 90 $PY bench/grading_latency.py --jobs 10 --burst 30 --baseline-runs 2 \
    2>&1 | tee "$OUT/latency_cpu_task.txt" | tail -12
timeout 90 $PY bench/grading_latency.py --jobs 10 --burst 30 --baseline-runs 2 \
    --task roofline/fused-gelu --solution tests/graders/solutions/roofline/correct.py \
    2>&1 | tee "$OUT/latency_gpu_task.txt" | tail -12

echo
echo "== summary ($(( $(date +%s) - started )) s) =="
head -2 "$OUT/device.txt"
echo "CUDA tests: $(tail -1 "$OUT/tests.txt") (exit $tests_rc)"
grep -h "bound\|below both roofs\|Profile (\|roofline:" "$OUT/profile.txt"
grep -h "task, and the burst\|queue-to-result\|grading in a warm worker" \
    "$OUT/latency_cpu_task.txt" "$OUT/latency_gpu_task.txt"
echo "logs in $OUT"
exit "$tests_rc"
