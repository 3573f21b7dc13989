#!/usr/bin/env bash
# GPU check for the exitlaw engine: random-weight Qwen3-4B-shaped target + DFlash-b16-shaped
# drafter (no downloads); prints draft, verify-forward and verifier-stage latencies (predraw vs TEV)
# at B = 32/64/128. Takes a few minutes on one GPU (model init + ~20 reps per cell).
#   paper_repro/gpu_check.sh                 # on a GPU machine
#   paper_repro/gpu_check.sh --tiny          # CPU smoke test with the tiny test sizes
# Extra arguments go to `exitlaw gpu-check` (see --help).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ " $* " == *" --tiny "* ]]; then
  exec timeout 600 exitlaw gpu-check --context 200 --repeats 5 "$@"
fi
exec timeout 600 exitlaw gpu-check "$@"
