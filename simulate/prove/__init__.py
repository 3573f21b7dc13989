"""The bounded-exhaustive symbolic prover (``exitlaw prove``): fixed-tree, raw-uniform, sampled-draft and two-round modes, tree enumeration and the interval-uniform stand-in.

Public names load their module on first access.
``exitlaw.simulate.prove`` was one module before it became this package: its public names are still
reachable here (they live in ``exitlaw.simulate.prove.prover``).
"""

from exitlaw.theory.module_faces import lazy_exports

_EXPORTS = {
    "EXACT_AT_POINTS": "prover",
    "prove": "prover",
    "load_procedure": "prover",
    "identities": "prover",
    "child_orders": "prover",
    "format_proof": "prover",
    "source_sha256": "prover",
    "ProofReport": "prover",
    "ProofError": "prover",
    "EXIT_CODES": "prover",
    "prove_raw": "raw",
    "takes_generator": "raw",
    "dyadic_rows": "raw",
    "law_deviation": "raw",
    "prove_two_rounds": "rounds",
    "two_round_law": "rounds",
    "format_rounds": "rounds",
    "trees": "rounds",
    "RoundsReport": "rounds",
    "prove_marginal": "sampled",
    "conditional_witness": "sampled",
    "format_marginal": "sampled",
    "marginal_gaps": "sampled",
    "by_region": "sampled",
    "prefix_rows": "sampled",
    "MarginalReport": "sampled",
    "chain_rule": "sampled",
    "specinfer_rule": "sampled",
    "without_replacement_rule": "sampled",
    "tsubame_rule": "sampled",
    "RULES": "sampled",
    "Sym": "symbolic",
    "SymbolicError": "symbolic",
    "assuming": "symbolic",
    "symbolic_rows": "symbolic",
    "symbolic_one": "symbolic",
    "rows_at": "symbolic",
    "tree_shapes": "tree_enum",
    "token_assignments": "tree_enum",
    "vocabularies": "tree_enum",
    "all_trees": "tree_enum",
    "IntervalGenerator": "uniform_intervals",
    "LazyUniform": "uniform_intervals",
    "LazyUniformArray": "uniform_intervals",
    "CannotFollow": "uniform_intervals",
    "TooManyBranches": "uniform_intervals",
    "raw_law": "uniform_intervals",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, former_module="prover")
__all__ = list(_EXPORTS)
