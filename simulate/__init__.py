"""exitlaw.simulate: samplers for every verifier, builders, synthetic models,
calibrated statistics, Hypothesis strategies (``exitlaw.simulate.strategies``)
and the conformance kit. Submodules are imported explicitly by their users.
"""

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes

# Builders (simulate/builders), synthetic models, simulated decoding (numpy; JAX loads on first law evaluation).
from exitlaw.simulate.builders.trees import (
    Built,
    chain,
    ddtree,
    ddtree_order,
    eagle_dynamic,
    oracle,
    static_tree,
    tsubame,
)
from exitlaw.simulate.builders.caddtree import (
    LatencyModel,
    caddtree,
    first_decrease,
    throughput_curve,
)
from exitlaw.simulate.builders.dartree import dartree
from exitlaw.simulate.builders.opt_tree import draft_expected_acceptance, opt_tree
from exitlaw.simulate.lab.decoding import RoundRecord, SimulationResult, simulate_decoding
from exitlaw.simulate.lab.models import (
    AutoregressiveDrafter,
    NGramTarget,
    PositionWiseDrafter,
    exponent_for_entropy,
    zipf_entropy,
)
from exitlaw.simulate.lab.presets import PRESETS, SimConfig, get_preset, verifier_fn
from exitlaw.simulate.lab.field_lab import FieldLabConfig, run_field_lab

# Verifiers written once (sampling + exact enumeration), their fast samplers (numpy).
from exitlaw.simulate.verifiers.fast import (
    FAST_SAMPLERS,
    greedy_many,
    predraw_many,
    residual_many,
    tev_many,
)
from exitlaw.simulate.randomness import GeneratorRandomness, Randomness, enumerate_law
from exitlaw.simulate.verifiers import greedy, hsd, predraw, residual, tev, univer

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
_LAZY = {
    "run_kit": ("kit.conformance", "run_kit"),
    "load_verifier": ("kit.conformance", "load_verifier"),
    "KitReport": ("kit.conformance", "KitReport"),
    "check_verifier": ("kit.conformance", "check_verifier"),
    "adapt_verifier": ("kit.formats", "adapt_verifier"),
    "VerifierFormatError": ("kit.formats", "VerifierFormatError"),
    "run_boundary": ("kit.boundary", "run_boundary"),
    "prove_verifier": ("prove.prover", "prove"),
    "prove_raw_verifier": ("prove.raw", "prove_raw"),
    "format_proof": ("prove.prover", "format_proof"),
    "ProofReport": ("prove.prover", "ProofReport"),
    "pooled_chisquare": ("stats", "pooled_chisquare"),
    "cell_binomial": ("stats", "cell_binomial"),
    "dkw_check": ("stats", "dkw_check"),
    "chisquare_power": ("stats", "chisquare_power"),
    "sample_size": ("stats", "sample_size"),
    "seed_for": ("stats", "seed_for"),
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY)


__all__ = [
    "Built",
    "chain",
    "ddtree",
    "ddtree_order",
    "eagle_dynamic",
    "oracle",
    "static_tree",
    "tsubame",
    "LatencyModel",
    "caddtree",
    "first_decrease",
    "throughput_curve",
    "dartree",
    "draft_expected_acceptance",
    "opt_tree",
    "RoundRecord",
    "SimulationResult",
    "simulate_decoding",
    "AutoregressiveDrafter",
    "NGramTarget",
    "PositionWiseDrafter",
    "exponent_for_entropy",
    "zipf_entropy",
    "PRESETS",
    "SimConfig",
    "get_preset",
    "verifier_fn",
    "FAST_SAMPLERS",
    "greedy_many",
    "predraw_many",
    "residual_many",
    "tev_many",
    "GeneratorRandomness",
    "Randomness",
    "enumerate_law",
    "greedy",
    "hsd",
    "predraw",
    "residual",
    "tev",
    "univer",
    "FieldLabConfig",
    "run_field_lab",
    "run_kit",
    "load_verifier",
    "KitReport",
    "check_verifier",
    "adapt_verifier",
    "VerifierFormatError",
    "run_boundary",
    "prove_verifier",
    "prove_raw_verifier",
    "format_proof",
    "ProofReport",
    "pooled_chisquare",
    "cell_binomial",
    "dkw_check",
    "chisquare_power",
    "sample_size",
    "seed_for",
]
