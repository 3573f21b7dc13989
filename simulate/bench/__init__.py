"""Benchmarks of the simulated parts (they print numbers, never assert): decoding rounds per second and verifier samplers."""

from . import verifiers
from .rounds import run_sim_bench
from .verifiers import *

__all__ = [*verifiers.__all__, "run_sim_bench"]
