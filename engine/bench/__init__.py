"""Benchmarks of the engine (they print numbers, never assert): ``exitlaw bench decoding``, compare, batched decoding, the verifier stage and the GPU check.

Names from modules that import torch load on first access (comparing two result files needs no torch).
"""

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes

from . import compare
from .compare import *

if TYPE_CHECKING:
    from .batch import (
        format_batch_bench,
        format_batch_verifier_stage,
        run_batch_bench,
        run_batch_decode_bench,
        run_batch_verifier_bench,
        run_batched_bench,
    )
    from .decoding import STAGES, format_bench, outputs_of, run_bench, run_conversation
    from .gpu_check import build_pair, deep_rows, format_check, run_check
    from .verifiers import (
        BenchCase,
        KVShape,
        StandInCache,
        floor_stage,
        make_cases,
        run_verifier_bench,
    )


# PEP 562: names whose module imports torch load on first access (static tools read the block above)
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "batch": "format_batch_bench, format_batch_verifier_stage, run_batch_bench, run_batch_decode_bench, run_batch_verifier_bench, run_batched_bench",
        "decoding": "format_bench, outputs_of, run_bench, run_conversation, STAGES",
        "gpu_check": "build_pair, deep_rows, format_check, run_check",
        "verifiers": "BenchCase, floor_stage, KVShape, make_cases, run_verifier_bench, StandInCache",
    },
)


__all__ = [
    *compare.__all__,
    "BenchCase",
    "KVShape",
    "STAGES",
    "StandInCache",
    "build_pair",
    "deep_rows",
    "floor_stage",
    "format_batch_bench",
    "format_batch_verifier_stage",
    "format_bench",
    "format_check",
    "make_cases",
    "outputs_of",
    "run_batch_bench",
    "run_batch_decode_bench",
    "run_batch_verifier_bench",
    "run_batched_bench",
    "run_bench",
    "run_check",
    "run_conversation",
    "run_verifier_bench",
]
