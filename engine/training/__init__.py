"""ExitTrain on real models: the loss, node weights from the exit law, data, configs, the loop with checkpoints and resume, runs, Draft-OPD, VAT and the continuation server.

Names from modules that import torch load on first access (``exitlaw --help`` reads the objectives and presets).
"""

from importlib import import_module
from typing import TYPE_CHECKING

from .config import cosine_factor, preset_config, PRESETS, TrainConfig
from .continuation_server import server_continuations, ServerError
from .objectives import (
    AUTHORS_EDGE_FLOOR,
    AUTHORS_LAMBDA,
    check_edge_floor,
    check_objective,
    NORMALISATIONS,
    ObjectiveError,
    OBJECTIVES,
)

if TYPE_CHECKING:
    from .batch import (
        block_targets,
        build_trees,
        drafter_rows,
        edge_probabilities,
        make_batch,
        sample_anchors,
        score_trees,
        SequenceBatch,
        tree_logit_tables,
        tree_scoring_mask,
        windowed_tree_logit_tables,
    )
    from .checkpoint import (
        CHECKPOINTS,
        dist_group,
        full_state,
        init_distributed,
        latest_checkpoint,
        load_checkpoint,
        load_full_state,
        save_checkpoint,
        save_weights,
        shard_drafter,
        TRAINER_STATE,
        truncate_metrics,
        verify_checkpoint,
    )
    from .data import (
        cached_sequences,
        generate_continuations,
        load_prompts,
        Sequences,
        target_fingerprint,
    )
    from .draft_opd import draft_opd_term, OPDChains, sample_chains
    from .exittrain import draft_log_normalisers, exittrain_loss, gathered_nll, LossTerms, token_ce
    from .law import objective_weights, raw_weights, tree_law, TreeBatch, TreeLaw
    from .loop import (
        METRIC_KEYS,
        metrics_record,
        setup_training,
        step_sequences,
        StepMetrics,
        train,
        train_step,
        TrainState,
    )
    from .run import (
        check_resume,
        choose_device,
        data_fingerprint,
        DTYPES,
        RESUME_SETTINGS,
        run_settings,
        run_training,
        saved_run,
        training_sequences,
        TrainingRunSpec,
    )
    from .vat import first_rejection, VAT_GAMMA, vat_position_weights, vat_term


# PEP 562: names whose module imports torch load on first access (static tools read the block above)
_LAZY = {
    "sample_anchors": ("batch", "sample_anchors"),
    "block_targets": ("batch", "block_targets"),
    "drafter_rows": ("batch", "drafter_rows"),
    "build_trees": ("batch", "build_trees"),
    "tree_scoring_mask": ("batch", "tree_scoring_mask"),
    "tree_logit_tables": ("batch", "tree_logit_tables"),
    "windowed_tree_logit_tables": ("batch", "windowed_tree_logit_tables"),
    "edge_probabilities": ("batch", "edge_probabilities"),
    "score_trees": ("batch", "score_trees"),
    "SequenceBatch": ("batch", "SequenceBatch"),
    "make_batch": ("batch", "make_batch"),
    "CHECKPOINTS": ("checkpoint", "CHECKPOINTS"),
    "TRAINER_STATE": ("checkpoint", "TRAINER_STATE"),
    "dist_group": ("checkpoint", "dist_group"),
    "init_distributed": ("checkpoint", "init_distributed"),
    "shard_drafter": ("checkpoint", "shard_drafter"),
    "full_state": ("checkpoint", "full_state"),
    "load_full_state": ("checkpoint", "load_full_state"),
    "latest_checkpoint": ("checkpoint", "latest_checkpoint"),
    "save_checkpoint": ("checkpoint", "save_checkpoint"),
    "save_weights": ("checkpoint", "save_weights"),
    "load_checkpoint": ("checkpoint", "load_checkpoint"),
    "verify_checkpoint": ("checkpoint", "verify_checkpoint"),
    "truncate_metrics": ("checkpoint", "truncate_metrics"),
    "load_prompts": ("data", "load_prompts"),
    "generate_continuations": ("data", "generate_continuations"),
    "Sequences": ("data", "Sequences"),
    "target_fingerprint": ("data", "target_fingerprint"),
    "cached_sequences": ("data", "cached_sequences"),
    "OPDChains": ("draft_opd", "OPDChains"),
    "sample_chains": ("draft_opd", "sample_chains"),
    "draft_opd_term": ("draft_opd", "draft_opd_term"),
    "LossTerms": ("exittrain", "LossTerms"),
    "draft_log_normalisers": ("exittrain", "draft_log_normalisers"),
    "gathered_nll": ("exittrain", "gathered_nll"),
    "token_ce": ("exittrain", "token_ce"),
    "exittrain_loss": ("exittrain", "exittrain_loss"),
    "TreeBatch": ("law", "TreeBatch"),
    "TreeLaw": ("law", "TreeLaw"),
    "tree_law": ("law", "tree_law"),
    "raw_weights": ("law", "raw_weights"),
    "objective_weights": ("law", "objective_weights"),
    "METRIC_KEYS": ("loop", "METRIC_KEYS"),
    "TrainState": ("loop", "TrainState"),
    "StepMetrics": ("loop", "StepMetrics"),
    "setup_training": ("loop", "setup_training"),
    "step_sequences": ("loop", "step_sequences"),
    "train_step": ("loop", "train_step"),
    "metrics_record": ("loop", "metrics_record"),
    "train": ("loop", "train"),
    "DTYPES": ("run", "DTYPES"),
    "RESUME_SETTINGS": ("run", "RESUME_SETTINGS"),
    "TrainingRunSpec": ("run", "TrainingRunSpec"),
    "check_resume": ("run", "check_resume"),
    "choose_device": ("run", "choose_device"),
    "data_fingerprint": ("run", "data_fingerprint"),
    "run_settings": ("run", "run_settings"),
    "run_training": ("run", "run_training"),
    "saved_run": ("run", "saved_run"),
    "training_sequences": ("run", "training_sequences"),
    "VAT_GAMMA": ("vat", "VAT_GAMMA"),
    "first_rejection": ("vat", "first_rejection"),
    "vat_position_weights": ("vat", "vat_position_weights"),
    "vat_term": ("vat", "vat_term"),
}


def __getattr__(name: str):
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(import_module(f".{module}", __name__), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "sample_anchors",
    "block_targets",
    "drafter_rows",
    "build_trees",
    "tree_scoring_mask",
    "tree_logit_tables",
    "windowed_tree_logit_tables",
    "edge_probabilities",
    "score_trees",
    "SequenceBatch",
    "make_batch",
    "CHECKPOINTS",
    "TRAINER_STATE",
    "dist_group",
    "init_distributed",
    "shard_drafter",
    "full_state",
    "load_full_state",
    "latest_checkpoint",
    "save_checkpoint",
    "save_weights",
    "load_checkpoint",
    "verify_checkpoint",
    "truncate_metrics",
    "PRESETS",
    "TrainConfig",
    "preset_config",
    "cosine_factor",
    "ServerError",
    "server_continuations",
    "load_prompts",
    "generate_continuations",
    "Sequences",
    "target_fingerprint",
    "cached_sequences",
    "OPDChains",
    "sample_chains",
    "draft_opd_term",
    "LossTerms",
    "draft_log_normalisers",
    "gathered_nll",
    "token_ce",
    "exittrain_loss",
    "TreeBatch",
    "TreeLaw",
    "tree_law",
    "raw_weights",
    "objective_weights",
    "METRIC_KEYS",
    "TrainState",
    "StepMetrics",
    "setup_training",
    "step_sequences",
    "train_step",
    "metrics_record",
    "train",
    "OBJECTIVES",
    "NORMALISATIONS",
    "AUTHORS_EDGE_FLOOR",
    "AUTHORS_LAMBDA",
    "ObjectiveError",
    "check_edge_floor",
    "check_objective",
    "DTYPES",
    "RESUME_SETTINGS",
    "TrainingRunSpec",
    "check_resume",
    "choose_device",
    "data_fingerprint",
    "run_settings",
    "run_training",
    "saved_run",
    "training_sequences",
    "VAT_GAMMA",
    "first_rejection",
    "vat_position_weights",
    "vat_term",
]
