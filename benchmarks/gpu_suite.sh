#!/usr/bin/env bash
# The GPU check in one command: numbers (TF32 off/on vs Google's golden
# output), pretraining and fine-tuning throughput against Model Garden.
# Under 8 minutes on one H100/H200 (--budget_s, default 330, stops new rows);
# --smoke runs every part with tiny shapes on any machine.
#
#   bash benchmarks/gpu_suite.sh [--smoke] [--budget_s=330] [--allow_tf32]
#        [--parts=numbers,pretraining,finetuning] [--dtypes=...] [--xla=off,on]
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
    --format=csv,noheader || true
fi
# $PYTHON: the interpreter to use (tests pass their own); else `python`.
exec "${PYTHON:-python}" benchmarks/gpu_suite.py "$@"
