"""exitlaw.simulate: samplers for every verifier, builders, synthetic models,
calibrated statistics, Hypothesis strategies (``exitlaw.simulate.strategies``)
and the conformance kit. Submodules are imported explicitly by their users.
"""

# Synthetic models, builders, simulated decoding (numpy; JAX loads on first law evaluation).
from .builders import Built, chain, ddtree, ddtree_order, eagle_dynamic, oracle, static_tree, tsubame
from .caddtree import LatencyModel, caddtree, first_decrease, throughput_curve
from .dartree import dartree
from .opt_tree import draft_expected_acceptance, opt_tree
from .decoding import RoundRecord, SimulationResult, simulate_decoding
from .models import AutoregressiveDrafter, NGramTarget, PositionWiseDrafter, exponent_for_entropy, zipf_entropy
from .presets import PRESETS, SimConfig, get_preset, verifier_fn

# Verifiers written once (sampling + exact enumeration), fast samplers (numpy).
from .fast_samplers import FAST_SAMPLERS, greedy_many, predraw_many, residual_many, tev_many
from .randomness import GeneratorRandomness, Randomness, enumerate_law
from .verifiers import greedy, hsd, predraw, residual, tev, univer

# Calibrated statistics, the conformance kit (scipy) and the prover (sympy): loaded on first access.
_LAZY = {
    "run_kit": "conformance", "load_verifier": "conformance", "KitReport": "conformance",
    "adapt_verifier": "verifier_formats", "VerifierFormatError": "verifier_formats",
    "check_verifier": "conformance", "run_boundary": "conformance_boundary",
    # the bounded-exhaustive prover imports sympy: loaded on first access too. Exported under names that
    # differ from its submodules (``exitlaw.simulate.prove`` is the module once anything imports it).
    "prove_verifier": ("prove", "prove"), "prove_raw_verifier": ("prove_raw", "prove_raw"),
    "format_proof": "prove", "ProofReport": "prove",
    "pooled_chisquare": "stats", "cell_binomial": "stats", "dkw_check": "stats",
    "chisquare_power": "stats", "sample_size": "stats", "seed_for": "stats",
    "FieldLabConfig": "field_lab", "run_field_lab": "field_lab",
}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        module, attr = _LAZY[name] if isinstance(_LAZY[name], tuple) else (_LAZY[name], name)
        return getattr(import_module(f".{module}", __name__), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
