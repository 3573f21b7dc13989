"""Benchmarks of the simulated parts (they print numbers, never assert): decoding rounds per second and verifier samplers.

Public names load their module on first access.
"""

from exitlaw.theory.module_faces import lazy_exports

_EXPORTS = {"run_sim_bench": "rounds", "run_verifier_bench": "verifiers", "bench_tree": "verifiers"}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
