"""exitlaw.paper_repro (see docs/architecture.md §1)."""

# --- mini-scale reproduction on the stdlib corpus; torch is imported only when run
from exitlaw.paper_repro.mini.pipeline import PRESETS as MINI_PRESETS, MiniConfig, run_mini
from exitlaw.paper_repro.mini.pipeline import (
    stage_base_drafter,
    stage_corpus,
    stage_data,
    stage_eval,
    stage_objectives,
    stage_report,
    stage_target,
)
from exitlaw.paper_repro.mini.stats import (
    claim_verdict,
    crossed_mean_ci,
    pair_verdict,
    paired_difference,
)
from exitlaw.paper_repro.mini.corpus import CorpusSplit, load_tokenizer, make_split, train_tokenizer

# --- claims ledger and full-scale commands
from exitlaw.paper_repro.full_scale import (
    commands as full_scale_commands,
    load_config as load_full_scale_config,
)
from exitlaw.paper_repro.ledger import (
    CLAIMS,
    STATUSES,
    VERDICTS,
    build_ledger,
    format_markdown as format_ledger,
    write_ledger,
)
from exitlaw.paper_repro.ledger_inputs import ledger_from_shipped, make_shipped_inputs
from exitlaw.paper_repro.paired_effects import paired_interval, records as paired_effect_records
from exitlaw.paper_repro.verdicts import Interval, Rule, Verdict, decide, decide_test

# --- the full-scale commands executed on a CPU with tiny stand-ins
from exitlaw.paper_repro.full_scale_dry_run import (
    DryRunError,
    dry_run as full_scale_dry_run,
    format_dry_run,
)

__all__ = [
    "MINI_PRESETS",
    "MiniConfig",
    "run_mini",
    "stage_base_drafter",
    "stage_corpus",
    "stage_data",
    "stage_eval",
    "stage_objectives",
    "stage_report",
    "stage_target",
    "claim_verdict",
    "crossed_mean_ci",
    "pair_verdict",
    "paired_difference",
    "CorpusSplit",
    "load_tokenizer",
    "make_split",
    "train_tokenizer",
    "full_scale_commands",
    "load_full_scale_config",
    "CLAIMS",
    "STATUSES",
    "VERDICTS",
    "build_ledger",
    "format_ledger",
    "write_ledger",
    "ledger_from_shipped",
    "make_shipped_inputs",
    "paired_interval",
    "paired_effect_records",
    "Interval",
    "Rule",
    "Verdict",
    "decide",
    "decide_test",
    "DryRunError",
    "full_scale_dry_run",
    "format_dry_run",
]
