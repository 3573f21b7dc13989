"""Benchmarks of the simulated parts (they print numbers, never assert): decoding rounds per second and verifier samplers."""

from .rounds import run_sim_bench
from .verifiers import *
from . import verifiers

__all__ = [*verifiers.__all__, "run_sim_bench"]
