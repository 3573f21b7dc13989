"""ExitTrain on real models: the loss, node weights from the exit law, data, configs, the loop with checkpoints and resume, runs, Draft-OPD, VAT and the continuation server.

Names from modules that import torch load on first access (``exitlaw --help`` reads the objectives and presets).
"""

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes

from . import config, objectives
from .config import *
from .continuation_server import ServerError, server_continuations
from .objectives import *

if TYPE_CHECKING:
    from .batch import (
        SequenceBatch,
        block_targets,
        build_trees,
        drafter_rows,
        edge_probabilities,
        make_batch,
        sample_anchors,
        score_trees,
        tree_logit_tables,
        tree_scoring_mask,
        windowed_tree_logit_tables,
    )
    from .checkpoint import (
        CHECKPOINTS,
        TRAINER_STATE,
        dist_group,
        full_state,
        init_distributed,
        latest_checkpoint,
        load_checkpoint,
        load_full_state,
        save_checkpoint,
        save_weights,
        shard_drafter,
        truncate_metrics,
        verify_checkpoint,
    )
    from .data import (
        Sequences,
        cached_sequences,
        generate_continuations,
        load_prompts,
        target_fingerprint,
    )
    from .draft_opd import OPDChains, draft_opd_term, sample_chains
    from .exittrain import LossTerms, draft_log_normalisers, exittrain_loss, gathered_nll, token_ce
    from .law import TreeBatch, TreeLaw, objective_weights, raw_weights, tree_law
    from .loop import (
        METRIC_KEYS,
        StepMetrics,
        TrainState,
        metrics_record,
        setup_training,
        step_sequences,
        train,
        train_step,
    )
    from .run import (
        DTYPES,
        RESUME_SETTINGS,
        TrainingRunSpec,
        check_resume,
        choose_device,
        data_fingerprint,
        run_settings,
        run_training,
        saved_run,
        training_sequences,
    )
    from .vat import VAT_GAMMA, first_rejection, vat_position_weights, vat_term


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
