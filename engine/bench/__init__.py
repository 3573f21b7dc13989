"""Benchmarks of the engine (they print numbers, never assert): ``exitlaw bench decoding``, compare, batched decoding, the verifier stage and the GPU check.

Public names load their module on first access.
``exitlaw.engine.bench`` was one module before it became this package: its public names are still
reachable here (they live in ``exitlaw.engine.bench.decoding``).
"""

from exitlaw.theory.module_faces import lazy_exports

_EXPORTS = {
    "run_batch_decode_bench": "batch",
    "run_batch_verifier_bench": "batch",
    "run_batch_bench": "batch",
    "run_batched_bench": "batch",
    "format_batch_bench": "batch",
    "format_batch_verifier_stage": "batch",
    "CompareError": "compare",
    "compare_results": "compare",
    "compare_files": "compare",
    "format_comparison": "compare",
    "load_results": "compare",
    "per_prompt": "compare",
    "t_quantile": "compare",
    "run_bench": "decoding",
    "run_conversation": "decoding",
    "outputs_of": "decoding",
    "format_bench": "decoding",
    "STAGES": "decoding",
    "build_pair": "gpu_check",
    "deep_rows": "gpu_check",
    "run_check": "gpu_check",
    "format_check": "gpu_check",
    "run_verifier_bench": "verifiers",
    "make_cases": "verifiers",
    "floor_stage": "verifiers",
    "BenchCase": "verifiers",
    "KVShape": "verifiers",
    "StandInCache": "verifiers",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, former_module="decoding")
__all__ = list(_EXPORTS)
