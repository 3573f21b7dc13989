"""exitlaw.paper_repro (see docs/architecture.md §1)."""

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes

# --- claims ledger and full-scale commands
from .full_scale import commands as full_scale_commands
from .full_scale import load_config as load_full_scale_config

# --- the full-scale commands executed on a CPU with tiny stand-ins (static: the face's name
# full_scale_dry_run is its module's name, which a lazy name could not hold; torch loads when it runs)
from .full_scale_dry_run import DryRunError, format_dry_run
from .full_scale_dry_run import dry_run as full_scale_dry_run
from .ledger import CLAIMS, STATUSES, VERDICTS, build_ledger, write_ledger
from .ledger import format_markdown as format_ledger
from .ledger_inputs import ledger_from_shipped, make_shipped_inputs

# --- mini-scale reproduction on the stdlib corpus: its configuration and statistics
from .mini.config import PRESETS as MINI_PRESETS
from .mini.config import MiniConfig
from .mini.stats import claim_verdict, crossed_mean_ci, pair_verdict, paired_difference
from .paired_effects import paired_interval
from .paired_effects import records as paired_effect_records
from .regimes import Regime
from .verdicts import Interval, Rule, Verdict, decide, decide_test

if TYPE_CHECKING:
    # the mini pipeline's corpus and stages
    from .mini.corpus import CorpusSplit, load_tokenizer, make_split, train_tokenizer
    from .mini.pipeline import (
        run_mini,
        stage_base_drafter,
        stage_corpus,
        stage_data,
        stage_eval,
        stage_objectives,
        stage_report,
        stage_target,
    )


# PEP 562: names whose module imports torch, transformers or tokenizers load on first access (the
# ledger from shipped inputs and the full-scale commands need none of them)
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "mini.corpus": "CorpusSplit, load_tokenizer, make_split, train_tokenizer",
        "mini.pipeline": "run_mini, stage_base_drafter, stage_corpus, stage_data, stage_eval, stage_objectives, stage_report, stage_target",
    },
)

__all__ = [
    "CLAIMS",
    "CorpusSplit",
    "DryRunError",
    "Interval",
    "MINI_PRESETS",
    "MiniConfig",
    "Regime",
    "Rule",
    "STATUSES",
    "VERDICTS",
    "Verdict",
    "build_ledger",
    "claim_verdict",
    "crossed_mean_ci",
    "decide",
    "decide_test",
    "format_dry_run",
    "format_ledger",
    "full_scale_commands",
    "full_scale_dry_run",
    "ledger_from_shipped",
    "load_full_scale_config",
    "load_tokenizer",
    "make_shipped_inputs",
    "make_split",
    "pair_verdict",
    "paired_difference",
    "paired_effect_records",
    "paired_interval",
    "run_mini",
    "stage_base_drafter",
    "stage_corpus",
    "stage_data",
    "stage_eval",
    "stage_objectives",
    "stage_report",
    "stage_target",
    "train_tokenizer",
    "write_ledger",
]
