"""Benchmarks of the engine (they print numbers, never assert): ``exitlaw bench``, compare, batched decoding, the verifier stage and the GPU check."""

from .batch import (
    format_batch_bench,
    format_batch_verifier_stage,
    run_batch_bench,
    run_batch_decode_bench,
    run_batch_verifier_bench,
    run_batched_bench,
)
from .compare import (
    compare_files,
    compare_results,
    CompareError,
    format_comparison,
    load_results,
    per_prompt,
    t_quantile,
)
from .decoding import format_bench, outputs_of, run_bench, run_conversation, STAGES
from .gpu_check import build_pair, deep_rows, format_check, run_check
from .verifiers import BenchCase, floor_stage, KVShape, make_cases, run_verifier_bench, StandInCache

__all__ = [
    "run_batch_decode_bench",
    "run_batch_verifier_bench",
    "run_batch_bench",
    "run_batched_bench",
    "format_batch_bench",
    "format_batch_verifier_stage",
    "CompareError",
    "compare_results",
    "compare_files",
    "format_comparison",
    "load_results",
    "per_prompt",
    "t_quantile",
    "run_bench",
    "run_conversation",
    "outputs_of",
    "format_bench",
    "STAGES",
    "build_pair",
    "deep_rows",
    "run_check",
    "format_check",
    "run_verifier_bench",
    "make_cases",
    "floor_stage",
    "BenchCase",
    "KVShape",
    "StandInCache",
]
