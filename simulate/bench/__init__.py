"""Benchmarks of the simulated parts (they print numbers, never assert): decoding rounds per second and verifier samplers."""

from .rounds import run_sim_bench
from .verifiers import bench_tree, run_verifier_bench

__all__ = ["run_sim_bench", "run_verifier_bench", "bench_tree"]
