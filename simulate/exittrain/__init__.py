"""ExitTrain simulated: the trainer for a position-wise drafter on a synthetic target, its objectives, VAT and the powered sweep.

Public names load their module on first access.
"""

from exitlaw.theory.module_faces import lazy_exports

_EXPORTS = {
    "pair_grid": "fast", "ddtree_levels": "fast", "level_law": "fast", "coverage": "fast",
    "tree_term": "fast", "opd_term": "fast", "loss_one": "fast", "make_trainer": "fast",
    "make_pretrainer": "fast", "tau_table": "fast", "rollouts": "fast",
    "as_objective": "mini", "Regime": "mini", "init_params": "mini", "draft_logprobs": "mini",
    "loss_fn": "mini", "tree_weights": "mini", "stationary": "mini", "evaluate": "mini",
    "evaluate_oracle": "mini", "run_exittrain_mini": "mini", "draft_entropy": "mini", "format_table": "mini",
    "ObjectiveError": "objectives", "Objective": "objectives", "parse_objective": "objectives",
    "prefix_and_exit": "objectives", "raw_weight": "objectives", "normalise": "objectives",
    "node_coefficients": "objectives", "coefficients": "objectives",
    "SweepConfig": "sweep", "preset": "sweep", "sweep_objectives": "sweep", "comparisons": "sweep",
    "paired_interval": "sweep", "run_sweep": "sweep", "config_dict": "sweep", "provenance": "sweep",
    "decision_rule_text": "sweep", "config_from_dict": "sweep", "primary_verdicts": "sweep",
    "summarise": "sweep", "write_sweep": "sweep", "read_sweep": "sweep", "format_markdown": "sweep",
    "sweep_to_dir": "sweep",
    "first_rejection": "vat", "vat_position_weights": "vat", "vat_term": "vat",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
