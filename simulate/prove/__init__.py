"""The bounded-exhaustive symbolic prover (``exitlaw prove``): fixed-tree, raw-uniform, sampled-draft and two-round modes, tree enumeration and the interval-uniform stand-in."""

from .prover import (
    child_orders,
    EXACT_AT_POINTS,
    EXIT_CODES,
    format_proof,
    identities,
    load_procedure,
    ProofError,
    ProofReport,
    prove,
    source_sha256,
)
from .raw import dyadic_rows, law_deviation, prove_raw, takes_generator
from .rounds import *
from .sampled import *
from .symbolic import *
from .tree_enum import *
from .uniform_intervals import *
from . import rounds, sampled, symbolic, tree_enum, uniform_intervals

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
