"""ExitTrain studies on the mini pair: the paper-regime run (``PAPER_REGIME.md``), the authors'-recipe run
(``AUTHORS_REGIME.md``) and the mechanism test (matched-norm gradient steps, no training noise).

Names defined by more than one module here (arm_table, rebuild, write_report, ...) are imported from their
module.
"""

from . import mechanism, mechanism_design
from .authors_regime import AUTHORS_ARMS, PAPER_TABLE2_TAU, AuthorsRegimeConfig, config_from_json
from .authors_regime_run import run_authors_regime
from .mechanism import *
from .mechanism_design import *
from .paper_regime import Arm, PaperRegimeConfig, arm_by_name, arm_config, eval_plan, run_names
from .paper_regime_report import (
    analyse,
    arm_table,
    arm_values,
    budget_row,
    compare,
    training_runs,
    training_summary,
    write_report,
)
from .paper_regime_run import (
    Base,
    drafter_dirs,
    fresh_prompts,
    prepare,
    prompt_sets,
    read_all_cells,
    run_paper_regime,
    run_parallel,
    seed_job,
    stage_arms,
    stage_base,
    stage_calibration,
    stage_evaluation,
    stage_fresh_data,
    stage_scoring_temperature,
)
from .paper_regime_ship import rebuild, ship

__all__ = [
    *mechanism.__all__,
    *mechanism_design.__all__,
    "AUTHORS_ARMS",
    "Arm",
    "AuthorsRegimeConfig",
    "Base",
    "PAPER_TABLE2_TAU",
    "PaperRegimeConfig",
    "analyse",
    "arm_by_name",
    "arm_config",
    "arm_table",
    "arm_values",
    "budget_row",
    "compare",
    "config_from_json",
    "drafter_dirs",
    "eval_plan",
    "fresh_prompts",
    "prepare",
    "prompt_sets",
    "read_all_cells",
    "rebuild",
    "run_authors_regime",
    "run_names",
    "run_paper_regime",
    "run_parallel",
    "seed_job",
    "ship",
    "stage_arms",
    "stage_base",
    "stage_calibration",
    "stage_evaluation",
    "stage_fresh_data",
    "stage_scoring_temperature",
    "training_runs",
    "training_summary",
    "write_report",
]
