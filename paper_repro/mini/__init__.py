"""The mini-scale reproduction on the Python standard library: corpus, target, pipeline stages, evaluation, statistics and the results table.

Public names load their module on first access.
Names defined by more than one module here (cell_key, format_markdown) are imported from their module.
``exitlaw.paper_repro.mini`` was one module before it became this package: its public names are still
reachable here (they live in ``exitlaw.paper_repro.mini.pipeline``).
"""

from exitlaw.theory.module_faces import lazy_exports

_EXPORTS = {
    "stdlib_dir": "corpus", "list_code_files": "corpus", "split_names": "corpus",
    "load_prose_topics": "corpus", "CorpusSplit": "corpus", "make_split": "corpus",
    "train_tokenizer": "corpus", "load_tokenizer": "corpus", "encode_documents": "corpus",
    "load_token_array": "corpus", "sample_prompts": "corpus", "split_fingerprint": "corpus",
    "coverage": "evaluate", "RoundLaws": "evaluate", "eval_cell": "evaluate", "eval_ar": "evaluate",
    "eval_grid": "evaluate",
    "Arm": "paper_regime", "PaperRegimeConfig": "paper_regime", "arm_by_name": "paper_regime",
    "arm_config": "paper_regime", "run_names": "paper_regime", "eval_plan": "paper_regime",
    "config_from_json": "paper_regime",
    "arm_values": "paper_regime_report", "compare": "paper_regime_report",
    "budget_row": "paper_regime_report", "analyse": "paper_regime_report", "arm_table": "paper_regime_report",
    "training_runs": "paper_regime_report", "training_summary": "paper_regime_report",
    "write_report": "paper_regime_report",
    "prompt_sets": "paper_regime_run", "Base": "paper_regime_run", "stage_base": "paper_regime_run",
    "stage_scoring_temperature": "paper_regime_run", "fresh_prompts": "paper_regime_run",
    "stage_fresh_data": "paper_regime_run", "stage_calibration": "paper_regime_run",
    "stage_arms": "paper_regime_run", "read_all_cells": "paper_regime_run",
    "stage_evaluation": "paper_regime_run", "drafter_dirs": "paper_regime_run", "prepare": "paper_regime_run",
    "run_paper_regime": "paper_regime_run", "seed_job": "paper_regime_run",
    "run_parallel": "paper_regime_run",
    "ship": "paper_regime_ship", "rebuild": "paper_regime_ship",
    "MiniConfig": "pipeline", "prepare_out": "pipeline", "Corpus": "pipeline", "StageTimes": "pipeline",
    "drafter_name": "pipeline", "drafter_names": "pipeline", "stage_corpus": "pipeline",
    "stage_target": "pipeline", "stage_data": "pipeline", "stage_base_drafter": "pipeline",
    "objective_config": "pipeline", "stage_objectives": "pipeline", "eval_domains": "pipeline",
    "stage_eval": "pipeline", "read_cells": "pipeline", "stage_report": "pipeline", "run_mini": "pipeline",
    "config_for": "pipeline",
    "paired_analysis": "report", "analyse_cell": "report", "format_paired_markdown": "report",
    "primary_cell": "report", "PAIRS": "report", "METHOD": "report",
    "PairingError": "stats", "crossed_mean_ci": "stats", "paired_difference": "stats",
    "pair_verdict": "stats", "claim_verdict": "stats", "VERDICTS": "stats",
    "machine_info": "table", "build_results": "table",
    "TargetSpec": "target", "build_target": "target", "train_target": "target", "heldout_loss": "target",
    "save_target": "target", "spec_dict": "target",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, former_module="pipeline")
__all__ = list(_EXPORTS)
