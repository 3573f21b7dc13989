"""ExitTrain on real models: the loss, node weights from the exit law, data, configs, the loop with checkpoints and resume, runs, Draft-OPD, VAT and the continuation server.

Public names load their module on first access.
"""

from exitlaw.theory.module_faces import lazy_exports

_EXPORTS = {
    "sample_anchors": "batch", "block_targets": "batch", "drafter_rows": "batch", "build_trees": "batch",
    "tree_scoring_mask": "batch", "tree_logit_tables": "batch", "windowed_tree_logit_tables": "batch",
    "edge_probabilities": "batch", "score_trees": "batch", "SequenceBatch": "batch", "make_batch": "batch",
    "CHECKPOINTS": "checkpoint", "TRAINER_STATE": "checkpoint", "dist_group": "checkpoint",
    "init_distributed": "checkpoint", "shard_drafter": "checkpoint", "full_state": "checkpoint",
    "load_full_state": "checkpoint", "latest_checkpoint": "checkpoint", "save_checkpoint": "checkpoint",
    "save_weights": "checkpoint", "load_checkpoint": "checkpoint", "verify_checkpoint": "checkpoint",
    "truncate_metrics": "checkpoint",
    "PRESETS": "config", "TrainConfig": "config", "preset_config": "config", "cosine_factor": "config",
    "ServerError": "continuation_server", "server_continuations": "continuation_server",
    "load_prompts": "data", "generate_continuations": "data", "Sequences": "data",
    "target_fingerprint": "data", "cached_sequences": "data",
    "OPDChains": "draft_opd", "sample_chains": "draft_opd", "draft_opd_term": "draft_opd",
    "LossTerms": "exittrain", "draft_log_normalisers": "exittrain", "gathered_nll": "exittrain",
    "token_ce": "exittrain", "exittrain_loss": "exittrain",
    "TreeBatch": "law", "TreeLaw": "law", "tree_law": "law", "raw_weights": "law", "objective_weights": "law",
    "METRIC_KEYS": "loop", "TrainState": "loop", "StepMetrics": "loop", "setup_training": "loop",
    "step_sequences": "loop", "train_step": "loop", "metrics_record": "loop", "train": "loop",
    "OBJECTIVES": "objectives", "NORMALISATIONS": "objectives", "AUTHORS_EDGE_FLOOR": "objectives",
    "AUTHORS_LAMBDA": "objectives", "ObjectiveError": "objectives", "check_edge_floor": "objectives",
    "check_objective": "objectives",
    "DTYPES": "run", "RESUME_SETTINGS": "run", "TrainingRunSpec": "run", "check_resume": "run",
    "choose_device": "run", "data_fingerprint": "run", "run_settings": "run", "run_training": "run",
    "saved_run": "run", "training_sequences": "run",
    "VAT_GAMMA": "vat", "first_rejection": "vat", "vat_position_weights": "vat", "vat_term": "vat",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
