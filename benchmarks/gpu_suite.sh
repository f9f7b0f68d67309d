#!/usr/bin/env bash
# The GPU check in one command: numbers (TF32 off/on vs Google's golden
# output), pretraining and fine-tuning throughput against Model Garden.
# Under 8 minutes on one H100/H200 (--budget_s, default 330, stops new rows);
# --smoke runs every part with tiny shapes on any machine.
#
#   bash benchmarks/gpu_suite.sh [--smoke] [--budget_s=330] [--allow_tf32]
#        [--parts=numbers,pretraining,finetuning] [--dtypes=...] [--xla=off,on]
#   bash benchmarks/gpu_suite.sh --backend=jax [--smoke] [--budget_s=330]
#        [--peak_tflops=989] [--dtypes=...] [--attention=fused,google]
#        [--record_file=gpu_suite_jax.json]     (no TensorFlow imported)
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
    --format=csv,noheader || true
fi
# --backend=jax (first argument): the TensorFlow-free suite,
# benchmarks/gpu_suite_jax.py (pretraining steps on Keras' JAX backend; its
# own flags follow). See benchmarks/README_gpu_jax.md for the wheels a JAX
# machine without TensorFlow needs.
if [[ "${1:-}" == "--backend=jax" ]]; then
  shift
  export KERAS_BACKEND=jax
  exec "${PYTHON:-python}" benchmarks/gpu_suite_jax.py "$@"
elif [[ "${1:-}" == --backend=* && "${1:-}" != "--backend=tensorflow" ]]; then
  echo "gpu_suite.sh: ${1} is not a backend here (tensorflow, jax)" >&2
  exit 2
elif [[ "${1:-}" == "--backend=tensorflow" ]]; then
  shift
fi
# $PYTHON: the interpreter to use (tests pass their own); else `python`.
exec "${PYTHON:-python}" benchmarks/gpu_suite.py "$@"
