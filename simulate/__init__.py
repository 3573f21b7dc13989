"""exitlaw.simulate: samplers for every verifier, builders, synthetic models,
calibrated statistics, Hypothesis strategies (``exitlaw.simulate.strategies``)
and the conformance kit. Submodules are imported explicitly by their users.
"""

# Synthetic models, builders, simulated decoding (numpy; JAX loads on first law evaluation).
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

# Verifiers written once (sampling + exact enumeration), fast samplers (numpy).
from exitlaw.simulate.lab.fast_samplers import (
    FAST_SAMPLERS,
    greedy_many,
    predraw_many,
    residual_many,
    tev_many,
)
from exitlaw.simulate.randomness import GeneratorRandomness, Randomness, enumerate_law
from exitlaw.simulate.verifiers import greedy, hsd, predraw, residual, tev, univer

# Calibrated statistics, the conformance kit (scipy) and the prover (sympy): loaded on first access.
_LAZY = {
    "run_kit": "kit.conformance",
    "load_verifier": "kit.conformance",
    "KitReport": "kit.conformance",
    "adapt_verifier": "kit.formats",
    "VerifierFormatError": "kit.formats",
    "check_verifier": "kit.conformance",
    "run_boundary": "kit.boundary",
    # the bounded-exhaustive prover imports sympy: loaded on first access too. Exported under names that
    # differ from its submodules (``exitlaw.simulate.prove.prover`` is the module once anything imports it).
    "prove_verifier": ("prove.prover", "prove"),
    "prove_raw_verifier": ("prove.raw", "prove_raw"),
    "format_proof": "prove.prover",
    "ProofReport": "prove.prover",
    "pooled_chisquare": "stats",
    "cell_binomial": "stats",
    "dkw_check": "stats",
    "chisquare_power": "stats",
    "sample_size": "stats",
    "seed_for": "stats",
    "FieldLabConfig": "lab.field_lab",
    "run_field_lab": "lab.field_lab",
}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        module, attr = _LAZY[name] if isinstance(_LAZY[name], tuple) else (_LAZY[name], name)
        return getattr(import_module(f".{module}", __name__), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Modules that moved into sub-packages keep their former dotted paths (users' imports and
# `--verifier module:callable` command lines): the same module objects, under their new names.
from exitlaw.theory.module_faces import alias_moved_modules  # noqa: E402

alias_moved_modules(
    __name__,
    {
        "caddtree": "builders.caddtree",
        "dartree": "builders.dartree",
        "opt_tree": "builders.opt_tree",
        "decoding": "lab.decoding",
        "models": "lab.models",
        "toy_target": "lab.toy_target",
        "presets": "lab.presets",
        "run": "lab.run",
        "field_lab": "lab.field_lab",
        "fast_samplers": "lab.fast_samplers",
        "sharded": "lab.sharded",
        "conformance": "kit.conformance",
        "conformance_boundary": "kit.boundary",
        "conformance_calls": "kit.calls",
        "conformance_cases": "kit.cases",
        "conformance_checks": "kit.checks",
        "conformance_format": "kit.report",
        "verifier_formats": "kit.formats",
        "prove_raw": "prove.raw",
        "prove_rounds": "prove.rounds",
        "prove_sampled": "prove.sampled",
        "symbolic": "prove.symbolic",
        "tree_enum": "prove.tree_enum",
        "uniform_intervals": "prove.uniform_intervals",
        "exittrain_fast": "exittrain.fast",
        "exittrain_mini": "exittrain.mini",
        "exittrain_objectives": "exittrain.objectives",
        "exittrain_sweep": "exittrain.sweep",
        "exittrain_vat": "exittrain.vat",
        "sim_bench": "bench.rounds",
        "verifier_bench": "bench.verifiers",
    },
)
