"""exitlaw.simulate: samplers for every verifier, builders, synthetic models,
calibrated statistics, Hypothesis strategies (``exitlaw.simulate.strategies``)
and the conformance kit. Submodules are imported explicitly by their users.
"""

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes

from .builders import trees as _trees
from .builders.caddtree import LatencyModel, caddtree, first_decrease, throughput_curve
from .builders.dartree import dartree
from .builders.opt_tree import draft_expected_acceptance, opt_tree

# Builders (simulate/builders), synthetic models, simulated decoding (numpy; JAX loads on first law evaluation).
from .builders.trees import *
from .lab.decoding import RoundRecord, SimulationResult, simulate_decoding
from .lab.field_lab import FieldLabConfig, run_field_lab
from .lab.models import (
    AutoregressiveDrafter,
    NGramTarget,
    PositionWiseDrafter,
    exponent_for_entropy,
    zipf_entropy,
)
from .lab.presets import PRESETS, SimConfig, get_preset, verifier_fn
from .randomness import GeneratorRandomness, Randomness, enumerate_law
from .verifiers import greedy, hsd, predraw, residual, tev, univer

# Verifiers written once (sampling + exact enumeration), their fast samplers (numpy).
from .verifiers.fast import FAST_SAMPLERS, greedy_many, predraw_many, residual_many, tev_many

if TYPE_CHECKING:
    from exitlaw.simulate.kit.boundary import run_boundary
    from exitlaw.simulate.kit.conformance import KitReport, check_verifier, load_verifier, run_kit
    from exitlaw.simulate.kit.formats import VerifierFormatError, adapt_verifier
    from exitlaw.simulate.prove.prover import ProofReport, format_proof
    from exitlaw.simulate.prove.prover import prove as prove_verifier
    from exitlaw.simulate.prove.raw import prove_raw as prove_raw_verifier
    from exitlaw.simulate.stats import (
        cell_binomial,
        chisquare_power,
        dkw_check,
        pooled_chisquare,
        sample_size,
        seed_for,
    )


# PEP 562: names whose module imports scipy or sympy load on first access (static tools read the block
# above). `prove_verifier` and `prove_raw_verifier` differ from the names in their modules.
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "kit.boundary": "run_boundary",
        "kit.conformance": "KitReport, check_verifier, load_verifier, run_kit",
        "kit.formats": "VerifierFormatError, adapt_verifier",
        "prove.prover": "ProofReport, format_proof, prove as prove_verifier",
        "prove.raw": "prove_raw as prove_raw_verifier",
        "stats": "cell_binomial, chisquare_power, dkw_check, pooled_chisquare, sample_size, seed_for",
    },
)


__all__ = [
    *_trees.__all__,
    "AutoregressiveDrafter",
    "FAST_SAMPLERS",
    "FieldLabConfig",
    "GeneratorRandomness",
    "KitReport",
    "LatencyModel",
    "NGramTarget",
    "PRESETS",
    "PositionWiseDrafter",
    "ProofReport",
    "Randomness",
    "RoundRecord",
    "SimConfig",
    "SimulationResult",
    "VerifierFormatError",
    "adapt_verifier",
    "caddtree",
    "cell_binomial",
    "check_verifier",
    "chisquare_power",
    "dartree",
    "dkw_check",
    "draft_expected_acceptance",
    "enumerate_law",
    "exponent_for_entropy",
    "first_decrease",
    "format_proof",
    "get_preset",
    "greedy",
    "greedy_many",
    "hsd",
    "load_verifier",
    "opt_tree",
    "pooled_chisquare",
    "predraw",
    "predraw_many",
    "prove_raw_verifier",
    "prove_verifier",
    "residual",
    "residual_many",
    "run_boundary",
    "run_field_lab",
    "run_kit",
    "sample_size",
    "seed_for",
    "simulate_decoding",
    "tev",
    "tev_many",
    "throughput_curve",
    "univer",
    "verifier_fn",
    "zipf_entropy",
]
