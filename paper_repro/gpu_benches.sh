#!/usr/bin/env bash
# One GPU session's measurements, in one script (the device lease is short: about 5 minutes on an H200):
#   1. gpu_check.sh: draft, verify-forward and verifier-stage latencies on a random-weight
#      Qwen3-4B-shaped pair (bf16, V = 151936) at B = 32/64/128, T = 1 and T = 0.6 (the paper's Table 3);
#   2. bench verifiers: the verifier stage alone on realised DDTree trees at V = 151936, bf16,
#      B = 32/64/128, T = 1 and T = 0.6 (Table 3's cells): TEV, predraw, residual and DDTree's
#      multinomial predraw; TEV eager, compiled and replayed as a CUDA graph (--compiled); the stage
#      interval and the authors' interval; op counts per decision and the per-launch cost;
#   3. bench decoding (single sequence) and 4. bench batch (B rows per round) on the shipped
#      paper-regime mini pair (paper_repro/results/paper_regime/base) with its held-out prompts
#      (paper_repro/results/gpu/prompts.jsonl, written by `mini_prompts(base, 64, 64)`);
#   5. bench decoding at T = 0 on all 64 prompts under torch's own masked-attention kernels
#      (--masked-attention auto): does DDTree still equal greedy AR without the math kernel?
#   6. bench serve with the four servers on the GPU (AR and DDTree + TEV, continuous and serial) at
#      concurrency 1 and 8, audited at T = 0: issue 37's c8/c1 where a batched forward costs about
#      what one row's does (on the 2-core CPU the tree forward is compute-bound; serve_bench/README.md).
# On the lent H200 (no network) the project runs from a wheel built here, with transformers >= 5.24
# carried as a wheel too (the image's 5.17 is below the tested range): see
# paper_repro/results/gpu/README.md.
# Usage: paper_repro/gpu_benches.sh OUT_DIR [cpu]   (cpu: a short smoke run of the same commands)
# Writes OUT_DIR/{gpu_check_T1,gpu_check_T0.6,verifiers_T1,verifiers_T0.6,decoding,batch,decoding_auto,serve}/results.json
# (eight files; the device returns at most eight) and prints
# every table; each step has its own time limit so one hang cannot take the others with it.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu_benches.sh OUT_DIR [cpu]}
mode=${2:-cuda}
pair=paper_repro/results/paper_regime/base
prompts=paper_repro/results/gpu/prompts.jsonl
serve_prompts=paper_repro/results/serve_bench/prompts.jsonl
mkdir -p "$out"
status=0

step() {  # step SECONDS NAME COMMAND...
  local limit=$1 name=$2
  shift 2
  echo "=== $name ($(date -u +%H:%M:%S))"
  timeout "$limit" "$@" || { echo "=== $name FAILED (exit $?)"; status=1; }
}

if [[ $mode == cpu ]]; then
  step 300 gpu_check_T1 paper_repro/gpu_check.sh --tiny --device cpu --repeats 3 --out "$out/gpu_check_T1"
  step 240 verifiers_T1 exitlaw bench verifiers --device cpu --budget 32 --vocab 4096 --temperature 1 \
    --trees 1 --repeats 2 --compiled --out "$out/verifiers_T1"
  step 300 decoding exitlaw bench decoding --target $pair/target --draft $pair/drafter_base/final \
    --prompts "jsonl:$prompts" --num-prompts 2 --budget 32 --temperature 0,1 --verifier predraw,tev \
    --max-new-tokens 16 --device cpu --threads 1 --warmup 0 --out "$out/decoding"
  step 300 batch exitlaw bench batch --target $pair/target --draft $pair/drafter_base/final \
    --prompts "jsonl:$prompts" --num-prompts 4 --batch-size 1,2 --budget 32 --verifier tev \
    --temperature 1 --max-new-tokens 16 --device cpu --threads 1 --warmup 0 --out "$out/batch"
  step 120 decoding_auto exitlaw bench decoding --target $pair/target --draft $pair/drafter_base/final \
    --prompts "jsonl:$prompts" --num-prompts 2 --budget 32 --temperature 0 --verifier predraw \
    --max-new-tokens 16 --device cpu --threads 1 --warmup 0 --masked-attention auto --out "$out/decoding_auto"
  step 300 serve exitlaw bench serve --target $pair/target --draft $pair/drafter_base/final \
    --prompts "$serve_prompts" --concurrency 1,2 --requests 2 --max-new-tokens 4 \
    --audit-temperatures 0 --audit-concurrency 2 --repeats 1 --threads 1 --device cpu --out "$out/serve"
  exit $status
fi

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv || true
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, torch.cuda.get_device_name())"
step 150 gpu_check_T1 paper_repro/gpu_check.sh --device cuda --budget 32,64,128 --context 512 \
  --repeats 30 --temperature 1 --out "$out/gpu_check_T1"
step 100 gpu_check_T0.6 paper_repro/gpu_check.sh --device cuda --budget 32,64,128 --context 512 \
  --repeats 30 --temperature 0.6 --out "$out/gpu_check_T0.6"
step 150 verifiers_T1 exitlaw bench verifiers --device cuda --budget 32,64,128 --vocab 151936 \
  --temperature 1 --dtype bfloat16 --trees 4 --repeats 20 --compiled --out "$out/verifiers_T1"
step 150 verifiers_T0.6 exitlaw bench verifiers --device cuda --budget 32,64,128 --vocab 151936 \
  --temperature 0.6 --dtype bfloat16 --trees 4 --repeats 20 --compiled --out "$out/verifiers_T0.6"
step 150 decoding exitlaw bench decoding --target $pair/target --draft $pair/drafter_base/final \
  --prompts "jsonl:$prompts" --num-prompts 16 --budget 32,64 --temperature 0,1 --verifier predraw,tev \
  --max-new-tokens 64 --device cuda --warmup 2 --out "$out/decoding"
step 150 batch exitlaw bench batch --target $pair/target --draft $pair/drafter_base/final \
  --prompts "jsonl:$prompts" --num-prompts 32 --batch-size 1,4,8,16,32 --budget 32 --verifier tev \
  --temperature 1 --max-new-tokens 64 --device cuda --warmup 1 --out "$out/batch"
step 120 decoding_auto exitlaw bench decoding --target $pair/target --draft $pair/drafter_base/final \
  --prompts "jsonl:$prompts" --budget 64,128 --temperature 0 --verifier predraw \
  --max-new-tokens 64 --device cuda --warmup 0 --masked-attention auto --out "$out/decoding_auto"
step 300 serve exitlaw bench serve --target $pair/target --draft $pair/drafter_base/final \
  --prompts "$serve_prompts" --concurrency 1,8 --requests 32 --max-new-tokens 64 \
  --audit-temperatures 0 --audit-concurrency 8 --repeats 1 --device cuda --out "$out/serve"
exit $status
