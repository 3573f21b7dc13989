"""The bounded-exhaustive symbolic prover (``exitlaw prove``): fixed-tree, raw-uniform, sampled-draft and two-round modes, tree enumeration and the interval-uniform stand-in."""

from . import rounds, sampled, symbolic, tree_enum, uniform_intervals
from .prover import (
    EXACT_AT_POINTS,
    EXIT_CODES,
    ProofError,
    ProofReport,
    child_orders,
    format_proof,
    identities,
    load_procedure,
    prove,
    source_sha256,
)
from .raw import dyadic_rows, law_deviation, prove_raw, takes_generator
from .rounds import *
from .sampled import *
from .symbolic import *
from .tree_enum import *
from .uniform_intervals import *

__all__ = [
    *rounds.__all__,
    *sampled.__all__,
    *symbolic.__all__,
    *tree_enum.__all__,
    *uniform_intervals.__all__,
    "EXACT_AT_POINTS",
    "EXIT_CODES",
    "ProofError",
    "ProofReport",
    "child_orders",
    "dyadic_rows",
    "format_proof",
    "identities",
    "law_deviation",
    "load_procedure",
    "prove",
    "prove_raw",
    "source_sha256",
    "takes_generator",
]
