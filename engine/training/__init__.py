"""ExitTrain on real models: the loss, node weights from the exit law, data, configs, the loop with checkpoints and resume, runs, Draft-OPD, VAT and the continuation server.

Names from modules that import torch load on first access (``exitlaw --help`` reads the objectives and presets).
"""

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes

from .config import *
from .continuation_server import server_continuations, ServerError
from .objectives import *
from . import config, objectives

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
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "batch": "block_targets, build_trees, drafter_rows, edge_probabilities, make_batch, sample_anchors, score_trees, SequenceBatch, tree_logit_tables, tree_scoring_mask, windowed_tree_logit_tables",
        "checkpoint": "CHECKPOINTS, dist_group, full_state, init_distributed, latest_checkpoint, load_checkpoint, load_full_state, save_checkpoint, save_weights, shard_drafter, TRAINER_STATE, truncate_metrics, verify_checkpoint",
        "data": "cached_sequences, generate_continuations, load_prompts, Sequences, target_fingerprint",
        "draft_opd": "draft_opd_term, OPDChains, sample_chains",
        "exittrain": "draft_log_normalisers, exittrain_loss, gathered_nll, LossTerms, token_ce",
        "law": "objective_weights, raw_weights, tree_law, TreeBatch, TreeLaw",
        "loop": "METRIC_KEYS, metrics_record, setup_training, step_sequences, StepMetrics, train, train_step, TrainState",
        "run": "check_resume, choose_device, data_fingerprint, DTYPES, RESUME_SETTINGS, run_settings, run_training, saved_run, training_sequences, TrainingRunSpec",
        "vat": "first_rejection, VAT_GAMMA, vat_position_weights, vat_term",
    },
)


__all__ = [
    *config.__all__,
    *objectives.__all__,
    "CHECKPOINTS",
    "DTYPES",
    "LossTerms",
    "METRIC_KEYS",
    "OPDChains",
    "RESUME_SETTINGS",
    "SequenceBatch",
    "Sequences",
    "ServerError",
    "StepMetrics",
    "TRAINER_STATE",
    "TrainState",
    "TrainingRunSpec",
    "TreeBatch",
    "TreeLaw",
    "VAT_GAMMA",
    "block_targets",
    "build_trees",
    "cached_sequences",
    "check_resume",
    "choose_device",
    "data_fingerprint",
    "dist_group",
    "draft_log_normalisers",
    "draft_opd_term",
    "drafter_rows",
    "edge_probabilities",
    "exittrain_loss",
    "first_rejection",
    "full_state",
    "gathered_nll",
    "generate_continuations",
    "init_distributed",
    "latest_checkpoint",
    "load_checkpoint",
    "load_full_state",
    "load_prompts",
    "make_batch",
    "metrics_record",
    "objective_weights",
    "raw_weights",
    "run_settings",
    "run_training",
    "sample_anchors",
    "sample_chains",
    "save_checkpoint",
    "save_weights",
    "saved_run",
    "score_trees",
    "server_continuations",
    "setup_training",
    "shard_drafter",
    "step_sequences",
    "target_fingerprint",
    "token_ce",
    "train",
    "train_step",
    "training_sequences",
    "tree_law",
    "tree_logit_tables",
    "tree_scoring_mask",
    "truncate_metrics",
    "vat_position_weights",
    "vat_term",
    "verify_checkpoint",
    "windowed_tree_logit_tables",
]
