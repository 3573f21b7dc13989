"""The lab: synthetic targets and drafters, multi-round simulated decoding with the builders of ``exitlaw.simulate.builders``, presets and runs, the field lab, fast samplers and sharded Monte Carlo.

Public names load their module on first access.
"""

from exitlaw.theory.module_faces import lazy_exports

_EXPORTS = {
    "tree_coverage": "decoding",
    "RoundRecord": "decoding",
    "SimulationResult": "decoding",
    "aggregate": "decoding",
    "simulate_decoding": "decoding",
    "predraw_many": "fast_samplers",
    "residual_many": "fast_samplers",
    "tev_many": "fast_samplers",
    "greedy_many": "fast_samplers",
    "chain_speculative_many": "fast_samplers",
    "recursive_rejection_many": "fast_samplers",
    "FAST_SAMPLERS": "fast_samplers",
    "FieldLabConfig": "field_lab",
    "run_field_lab": "field_lab",
    "run_seed": "field_lab",
    "summarise": "field_lab",
    "render_markdown": "field_lab",
    "RULES": "field_lab",
    "PAIRS": "field_lab",
    "zipf_entropy": "models",
    "exponent_for_entropy": "models",
    "NGramTarget": "models",
    "PositionWiseDrafter": "models",
    "AutoregressiveDrafter": "models",
    "kl_divergence": "models",
    "mean_depth1_kl": "models",
    "SimConfig": "presets",
    "WorkBoundError": "presets",
    "estimated_work": "presets",
    "check_work_bounds": "presets",
    "row_label": "presets",
    "verifier_fn": "presets",
    "sampled_verifier_fn": "presets",
    "get_preset": "presets",
    "with_overrides": "presets",
    "commit_outputs": "run",
    "row_names": "run",
    "output_paths": "run",
    "table_header": "run",
    "table_row": "run",
    "run_simulation": "run",
    "tev_samples": "sharded",
    "ToyModel": "toy_target",
    "block_tokens": "toy_target",
    "complete_block": "toy_target",
    "decode_rounds": "toy_target",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
