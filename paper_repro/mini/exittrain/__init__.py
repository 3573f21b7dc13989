"""ExitTrain studies on the mini pair: the paper-regime run (``PAPER_REGIME.md``), the authors'-recipe run
(``AUTHORS_REGIME.md``) and the mechanism test (matched-norm gradient steps, no training noise).

Names defined by more than one module here (arm_table, rebuild, write_report, ...) are imported from their
module. The runs and the mechanism test (torch, the engine's training) load on first access: the
ledger reads the designs, the reports and the cells without torch.
"""

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes

from . import mechanism_design
from .authors_regime import AUTHORS_ARMS, PAPER_TABLE2_TAU, AuthorsRegimeConfig, config_from_json
from .mechanism_design import *
from .paper_regime import (
    Arm,
    PaperRegimeConfig,
    arm_by_name,
    arm_config,
    eval_plan,
    read_all_cells,
    run_names,
)
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
from .paper_regime_ship import rebuild, ship

if TYPE_CHECKING:
    from .authors_regime_run import run_authors_regime
    from .mechanism import (
        Evaluation,
        Heldout,
        MechanismConfig,
        MechanismError,
        MechanismInputs,
        anchor_positions,
        cluster_interval,
        cosine,
        directions,
        distance,
        evaluate,
        flat_norm,
        greedy_edges,
        make_heldout,
        regime_inputs,
        run_mechanism,
        stepped,
        tune_drafter,
    )
    from .paper_regime_run import (
        Base,
        drafter_dirs,
        fresh_prompts,
        prepare,
        prompt_sets,
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


# PEP 562: the runs and the mechanism test import torch and the engine's training; they load on first access
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "authors_regime_run": "run_authors_regime",
        "mechanism": "anchor_positions, cluster_interval, cosine, directions, distance, evaluate, Evaluation, flat_norm, greedy_edges, Heldout, make_heldout, MechanismConfig, MechanismError, MechanismInputs, regime_inputs, run_mechanism, stepped, tune_drafter",
        "paper_regime_run": "Base, drafter_dirs, fresh_prompts, prepare, prompt_sets, run_paper_regime, run_parallel, seed_job, stage_arms, stage_base, stage_calibration, stage_evaluation, stage_fresh_data, stage_scoring_temperature",
    },
)

__all__ = [
    *mechanism_design.__all__,
    "AUTHORS_ARMS",
    "Arm",
    "AuthorsRegimeConfig",
    "Base",
    "Evaluation",
    "Heldout",
    "MechanismConfig",
    "MechanismError",
    "MechanismInputs",
    "PAPER_TABLE2_TAU",
    "PaperRegimeConfig",
    "analyse",
    "anchor_positions",
    "arm_by_name",
    "arm_config",
    "arm_table",
    "arm_values",
    "budget_row",
    "cluster_interval",
    "compare",
    "config_from_json",
    "cosine",
    "directions",
    "distance",
    "drafter_dirs",
    "eval_plan",
    "evaluate",
    "flat_norm",
    "fresh_prompts",
    "greedy_edges",
    "make_heldout",
    "prepare",
    "prompt_sets",
    "read_all_cells",
    "rebuild",
    "regime_inputs",
    "run_authors_regime",
    "run_mechanism",
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
    "stepped",
    "training_runs",
    "training_summary",
    "tune_drafter",
    "write_report",
]
