"""The mini-scale reproduction on the Python standard library: corpus, target, pipeline stages, evaluation, statistics and the results table (the ExitTrain studies on the mini pair: :mod:`.exittrain`).

Names defined by more than one module here (cell_key, format_markdown) are imported from their module.
"""

from . import report, stats
from .corpus import (
    CorpusSplit,
    encode_documents,
    list_code_files,
    load_prose_topics,
    load_token_array,
    load_tokenizer,
    make_split,
    sample_prompts,
    split_fingerprint,
    split_names,
    stdlib_dir,
    train_tokenizer,
)
from .evaluate import RoundLaws, coverage, eval_ar, eval_cell, eval_grid
from .pipeline import (
    Corpus,
    MiniConfig,
    StageTimes,
    config_for,
    drafter_name,
    drafter_names,
    eval_domains,
    objective_config,
    prepare_out,
    read_cells,
    run_mini,
    stage_base_drafter,
    stage_corpus,
    stage_data,
    stage_eval,
    stage_objectives,
    stage_report,
    stage_target,
)
from .report import *
from .stats import *
from .table import build_results, machine_info
from .target import TargetSpec, build_target, heldout_loss, save_target, spec_dict, train_target

__all__ = [
    *report.__all__,
    *stats.__all__,
    "Corpus",
    "CorpusSplit",
    "MiniConfig",
    "RoundLaws",
    "StageTimes",
    "TargetSpec",
    "build_results",
    "build_target",
    "config_for",
    "coverage",
    "drafter_name",
    "drafter_names",
    "encode_documents",
    "eval_ar",
    "eval_cell",
    "eval_domains",
    "eval_grid",
    "heldout_loss",
    "list_code_files",
    "load_prose_topics",
    "load_token_array",
    "load_tokenizer",
    "machine_info",
    "make_split",
    "objective_config",
    "prepare_out",
    "read_cells",
    "run_mini",
    "sample_prompts",
    "save_target",
    "spec_dict",
    "split_fingerprint",
    "split_names",
    "stage_base_drafter",
    "stage_corpus",
    "stage_data",
    "stage_eval",
    "stage_objectives",
    "stage_report",
    "stage_target",
    "stdlib_dir",
    "train_target",
    "train_tokenizer",
]
