"""The mini-scale reproduction on the Python standard library: corpus, target, pipeline stages, evaluation, statistics and the results table (the ExitTrain studies on the mini pair: :mod:`.exittrain`).

Names defined by more than one module here (cell_key, format_markdown) are imported from their module.
Names from modules that import torch, transformers or tokenizers (the corpus, target, pipeline,
evaluation and table) load on first access: the ledger reads the configuration, the cells and the
statistics without them.
"""

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes

from . import report, stats
from .cells import read_cells
from .config import MiniConfig, TargetSpec, config_for, spec_dict
from .report import *
from .stats import *

if TYPE_CHECKING:
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
        StageTimes,
        drafter_name,
        drafter_names,
        eval_domains,
        objective_config,
        prepare_out,
        run_mini,
        stage_base_drafter,
        stage_corpus,
        stage_data,
        stage_eval,
        stage_objectives,
        stage_report,
        stage_target,
    )
    from .table import build_results, machine_info
    from .target import build_target, heldout_loss, save_target, train_target


# PEP 562: names whose module imports torch, transformers or tokenizers load on first access
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "corpus": "CorpusSplit, encode_documents, list_code_files, load_prose_topics, load_token_array, load_tokenizer, make_split, sample_prompts, split_fingerprint, split_names, stdlib_dir, train_tokenizer",
        "evaluate": "coverage, eval_ar, eval_cell, eval_grid, RoundLaws",
        "pipeline": "Corpus, drafter_name, drafter_names, eval_domains, objective_config, prepare_out, run_mini, stage_base_drafter, stage_corpus, stage_data, stage_eval, stage_objectives, stage_report, stage_target, StageTimes",
        "table": "build_results, machine_info",
        "target": "build_target, heldout_loss, save_target, train_target",
    },
)

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
