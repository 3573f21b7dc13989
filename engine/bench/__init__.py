"""Benchmarks of the engine (they print numbers, never assert): ``exitlaw bench decoding``, compare, batched decoding, the verifier stage and the GPU check.

Names from modules that import torch load on first access (comparing two result files needs no torch).
"""

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes

from .compare import (
    compare_files,
    compare_results,
    CompareError,
    format_comparison,
    load_results,
    per_prompt,
    t_quantile,
)

if TYPE_CHECKING:
    from .batch import (
        format_batch_bench,
        format_batch_verifier_stage,
        run_batch_bench,
        run_batch_decode_bench,
        run_batch_verifier_bench,
        run_batched_bench,
    )
    from .decoding import format_bench, outputs_of, run_bench, run_conversation, STAGES
    from .gpu_check import build_pair, deep_rows, format_check, run_check
    from .verifiers import (
        BenchCase,
        floor_stage,
        KVShape,
        make_cases,
        run_verifier_bench,
        StandInCache,
    )


# PEP 562: names whose module imports torch load on first access (static tools read the block above)
_LAZY = {
    "run_batch_decode_bench": ("batch", "run_batch_decode_bench"),
    "run_batch_verifier_bench": ("batch", "run_batch_verifier_bench"),
    "run_batch_bench": ("batch", "run_batch_bench"),
    "run_batched_bench": ("batch", "run_batched_bench"),
    "format_batch_bench": ("batch", "format_batch_bench"),
    "format_batch_verifier_stage": ("batch", "format_batch_verifier_stage"),
    "run_bench": ("decoding", "run_bench"),
    "run_conversation": ("decoding", "run_conversation"),
    "outputs_of": ("decoding", "outputs_of"),
    "format_bench": ("decoding", "format_bench"),
    "STAGES": ("decoding", "STAGES"),
    "build_pair": ("gpu_check", "build_pair"),
    "deep_rows": ("gpu_check", "deep_rows"),
    "run_check": ("gpu_check", "run_check"),
    "format_check": ("gpu_check", "format_check"),
    "run_verifier_bench": ("verifiers", "run_verifier_bench"),
    "make_cases": ("verifiers", "make_cases"),
    "floor_stage": ("verifiers", "floor_stage"),
    "BenchCase": ("verifiers", "BenchCase"),
    "KVShape": ("verifiers", "KVShape"),
    "StandInCache": ("verifiers", "StandInCache"),
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)


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
