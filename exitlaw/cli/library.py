"""Every library callable the command line's handlers call, loaded on first use.

A handler calls ``lib.run_decoding_bench(...)`` (``from . import library as lib``); the name's
module loads when it is first read, through the faces' PEP 562 mechanism
(:func:`exitlaw.theory.infra.lazy.lazy_attributes`, docs/architecture.md §2), so building the parser
(``exitlaw --help``) loads no torch and no JAX, and the engine's commands load no JAX. Nothing is
cached here: a name is read from its module at each access. The ``TYPE_CHECKING`` block imports
the same names so static tools follow them; ``property_tests/test_cli_library.py`` checks that
every name of :data:`LIBRARY` resolves and that every ``lib.NAME`` the handlers read is listed.
Names are the library's own, ``attribute as name`` where two modules export the same one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from exitlaw.theory.infra.lazy import lazy_attributes, lazy_table

if TYPE_CHECKING:
    from exitlaw.engine.bench.batch import (
        format_batch_bench,
        format_batch_verifier_stage,
        run_batch_bench,
        run_batch_verifier_stage,
        run_batched_bench,
    )
    from exitlaw.engine.bench.compare import compare_files, format_comparison
    from exitlaw.engine.bench.ddtree_reference import ReferenceError as DDTreeReferenceError
    from exitlaw.engine.bench.ddtree_reference import load_reference as load_ddtree_reference
    from exitlaw.engine.bench.ddtree_run import run_ddtree_bench
    from exitlaw.engine.bench.decoding import format_bench as format_decoding_bench
    from exitlaw.engine.bench.decoding import run_bench as run_decoding_bench
    from exitlaw.engine.bench.gpu_check import format_check as format_gpu_check
    from exitlaw.engine.bench.gpu_check import run_check as run_gpu_check
    from exitlaw.engine.bench.settings import run_settings_bench
    from exitlaw.engine.bench.side_by_side import SideBySideConfig, format_side_by_side
    from exitlaw.engine.bench.source import BenchSource
    from exitlaw.engine.bench.verifiers import run_verifier_bench as run_verifier_stage_bench
    from exitlaw.engine.decode.verifiers import engine_names
    from exitlaw.engine.decode.verifiers.tev import TevGraphs, compiled_decide, use_decider
    from exitlaw.engine.models.checkpoint import check_model_paths
    from exitlaw.engine.models.tiny import write_tiny_models
    from exitlaw.engine.serve.engine import ServeConfig
    from exitlaw.engine.serve.limits import ServeLimits
    from exitlaw.engine.serve.server import serve
    from exitlaw.engine.training.config import preset_config
    from exitlaw.engine.training.run import TrainingRunSpec, run_training
    from exitlaw.figures.exittrain_sweep import draw as draw_exittrain_sweep
    from exitlaw.figures.registry import FIGURES
    from exitlaw.figures.style import check_out as check_figure_out
    from exitlaw.paper_repro.figure_inputs import make_figure
    from exitlaw.paper_repro.full_scale import render_all as render_full_scale
    from exitlaw.paper_repro.full_scale_dry_run import Shrink, dry_run, format_dry_run
    from exitlaw.paper_repro.ledger_inputs import RESULTS as LEDGER_RESULTS
    from exitlaw.paper_repro.ledger_inputs import (
        ledger_from_shipped,
        make_ledger,
        make_shipped_inputs,
    )
    from exitlaw.paper_repro.mini.exittrain.authors_regime import PRESETS as AUTHORS_REGIME_PRESETS
    from exitlaw.paper_repro.mini.exittrain.authors_regime_run import run_authors_regime
    from exitlaw.paper_repro.mini.exittrain.mechanism import regime_inputs, run_mechanism
    from exitlaw.paper_repro.mini.exittrain.mechanism_design import JSON_NAME as MECHANISM_JSON
    from exitlaw.paper_repro.mini.exittrain.mechanism_design import MD_NAME as MECHANISM_MD
    from exitlaw.paper_repro.mini.exittrain.mechanism_report import (
        render_markdown as render_mechanism,
    )
    from exitlaw.paper_repro.mini.exittrain.paper_regime import PRESETS as PAPER_REGIME_PRESETS
    from exitlaw.paper_repro.mini.exittrain.paper_regime_run import run_paper_regime
    from exitlaw.paper_repro.mini.exittrain.pilot import CANDIDATES as PILOT_CANDIDATES
    from exitlaw.paper_repro.mini.exittrain.pilot import format_markdown as format_pilot
    from exitlaw.paper_repro.mini.exittrain.pilot import report as pilot_report
    from exitlaw.paper_repro.mini.exittrain.pilot import run as run_pilot
    from exitlaw.paper_repro.mini.exittrain.sim_authors import FILES as SIM_AUTHORS_FILES
    from exitlaw.paper_repro.mini.exittrain.sim_authors import run_to as run_sim_authors
    from exitlaw.paper_repro.mini.exittrain.units import write_regime_units
    from exitlaw.paper_repro.mini.pair import mini_pair, mini_prompts, quick_pair
    from exitlaw.paper_repro.mini.pipeline import config_for, run_mini
    from exitlaw.paper_repro.reproduce import reproduce
    from exitlaw.simulate.audit import AuditConfig, AuditUsageError, format_audit, run_audit
    from exitlaw.simulate.audit.bench import format_bench as format_serve_bench
    from exitlaw.simulate.audit.bench import run_serve_bench
    from exitlaw.simulate.bench.rounds import run_sim_bench
    from exitlaw.simulate.bench.verifiers import run_verifier_bench as run_sim_verifier_bench
    from exitlaw.simulate.exittrain.mini import REGIMES as EXITTRAIN_REGIMES
    from exitlaw.simulate.exittrain.mini import format_table as format_exittrain_table
    from exitlaw.simulate.exittrain.mini import run_exittrain_mini
    from exitlaw.simulate.exittrain.sweep import sweep_to_dir
    from exitlaw.simulate.kit.boundary import format_boundary, run_boundary
    from exitlaw.simulate.kit.chain_formats import check_chain_format
    from exitlaw.simulate.kit.conformance import BAD_INPUT, check_verifier, load_verifier
    from exitlaw.simulate.kit.formats import adapt_verifier
    from exitlaw.simulate.kit.report import format_report
    from exitlaw.simulate.kit.settings_cases import DEFAULT_PANEL
    from exitlaw.simulate.lab.field_lab import FieldLabConfig, run_field_lab
    from exitlaw.simulate.lab.field_lab import render_markdown as render_field_lab
    from exitlaw.simulate.lab.presets import PRESETS as SIM_PRESETS
    from exitlaw.simulate.lab.presets import SimConfig, get_preset, with_overrides
    from exitlaw.simulate.lab.run import run_simulation
    from exitlaw.simulate.prove.run import run_prove
    from exitlaw.theory.bench import run_law_bench
    from exitlaw.theory.demo import demo_trace, format_demo_tree
    from exitlaw.theory.trace.bench import run_trace_bench
    from exitlaw.theory.trace.summary import format_summary, summarize_trace, summarize_trace_file

# module (relative to the package ``exitlaw``) -> its names, one entry per module, by command family
LIBRARY = {
    # exitlaw law, bench law (cli/theory.py)
    "theory.trace.summary": "format_summary, summarize_trace, summarize_trace_file",
    "theory.demo": "demo_trace, format_demo_tree",
    "theory.trace.bench": "run_trace_bench",
    "theory.bench": "run_law_bench",
    # simulate run|exittrain|field-lab, check, prove, bench simulate|sim-verifiers (cli/simulate.py)
    "simulate.lab.presets": "PRESETS as SIM_PRESETS, SimConfig, get_preset, with_overrides",
    "simulate.lab.run": "run_simulation",
    "simulate.exittrain.sweep": "sweep_to_dir",
    "figures.exittrain_sweep": "draw as draw_exittrain_sweep",
    "simulate.exittrain.mini": "REGIMES as EXITTRAIN_REGIMES, "
    "format_table as format_exittrain_table, run_exittrain_mini",
    "simulate.bench.rounds": "run_sim_bench",
    "simulate.lab.field_lab": "FieldLabConfig, render_markdown as render_field_lab, run_field_lab",
    "simulate.kit.conformance": "BAD_INPUT, check_verifier, load_verifier",
    "simulate.kit.report": "format_report",
    "simulate.kit.settings_cases": "DEFAULT_PANEL",
    "simulate.kit.boundary": "format_boundary, run_boundary",
    "simulate.kit.chain_formats": "check_chain_format",
    "simulate.kit.formats": "adapt_verifier",
    "simulate.prove.run": "run_prove",
    "simulate.bench.verifiers": "run_verifier_bench as run_sim_verifier_bench",
    # train (cli/train.py)
    "engine.training.config": "preset_config",
    "engine.training.run": "TrainingRunSpec, run_training",
    # serve, audit, bench serve (cli/serve.py)
    "engine.serve.engine": "ServeConfig",
    "engine.serve.limits": "ServeLimits",
    "engine.serve.server": "serve",
    "simulate.audit": "AuditConfig, AuditUsageError, format_audit, run_audit",
    "simulate.audit.bench": "format_bench as format_serve_bench, run_serve_bench",
    "engine.models.checkpoint": "check_model_paths",
    # tiny-models, gpu-check, bench decoding|verifiers|batch (cli/engine.py)
    "engine.decode.verifiers": "engine_names",
    "engine.decode.verifiers.tev": "TevGraphs, compiled_decide, use_decider",
    "engine.bench.source": "BenchSource",
    "engine.bench.decoding": "format_bench as format_decoding_bench, "
    "run_bench as run_decoding_bench",
    "engine.bench.batch": "format_batch_bench, format_batch_verifier_stage, run_batch_bench, "
    "run_batch_verifier_stage, run_batched_bench",
    "engine.bench.compare": "compare_files, format_comparison",
    "engine.bench.settings": "run_settings_bench",
    "engine.bench.verifiers": "run_verifier_bench as run_verifier_stage_bench",
    "engine.bench.gpu_check": "format_check as format_gpu_check, run_check as run_gpu_check",
    "engine.models.tiny": "write_tiny_models",
    # bench ddtree (cli/bench_ddtree.py)
    "engine.bench.ddtree_reference": "ReferenceError as DDTreeReferenceError, "
    "load_reference as load_ddtree_reference",
    "engine.bench.ddtree_run": "run_ddtree_bench",
    "engine.bench.side_by_side": "SideBySideConfig, format_side_by_side",
    "paper_repro.mini.pair": "mini_pair, mini_prompts, quick_pair",
    # repro mini|all|full, figures, ledger (cli/repro.py)
    "paper_repro.mini.pipeline": "config_for, run_mini",
    "paper_repro.mini.exittrain.paper_regime": "PRESETS as PAPER_REGIME_PRESETS",
    "paper_repro.mini.exittrain.paper_regime_run": "run_paper_regime",
    "paper_repro.mini.exittrain.authors_regime": "PRESETS as AUTHORS_REGIME_PRESETS",
    "paper_repro.mini.exittrain.authors_regime_run": "run_authors_regime",
    "paper_repro.mini.exittrain.mechanism": "regime_inputs, run_mechanism",
    "paper_repro.mini.exittrain.mechanism_design": "JSON_NAME as MECHANISM_JSON, "
    "MD_NAME as MECHANISM_MD",
    "paper_repro.mini.exittrain.mechanism_report": "render_markdown as render_mechanism",
    "paper_repro.mini.exittrain.sim_authors": "FILES as SIM_AUTHORS_FILES, "
    "run_to as run_sim_authors",
    "paper_repro.mini.exittrain.pilot": "CANDIDATES as PILOT_CANDIDATES, "
    "format_markdown as format_pilot, report as pilot_report, run as run_pilot",
    "paper_repro.mini.exittrain.units": "write_regime_units",
    "paper_repro.reproduce": "reproduce",
    "paper_repro.full_scale": "render_all as render_full_scale",
    "paper_repro.full_scale_dry_run": "Shrink, dry_run, format_dry_run",
    "figures.registry": "FIGURES",
    "figures.style": "check_out as check_figure_out",
    "paper_repro.figure_inputs": "make_figure",
    "paper_repro.ledger_inputs": "RESULTS as LEDGER_RESULTS, ledger_from_shipped, make_ledger, "
    "make_shipped_inputs",
}

_NAMES = lazy_table(LIBRARY)  # name -> (module, attribute)
_load, _ = lazy_attributes("exitlaw", LIBRARY)  # its __dir__ would list the package exitlaw's names


def __getattr__(name: str) -> object:
    """PEP 562: a name of :data:`LIBRARY` loads its module; any other is an AttributeError."""
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (not in LIBRARY)")
    return _load(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_NAMES})


__all__ = [
    "AUTHORS_REGIME_PRESETS",
    "AuditConfig",
    "AuditUsageError",
    "BAD_INPUT",
    "BenchSource",
    "DDTreeReferenceError",
    "DEFAULT_PANEL",
    "EXITTRAIN_REGIMES",
    "FIGURES",
    "FieldLabConfig",
    "LEDGER_RESULTS",
    "MECHANISM_JSON",
    "MECHANISM_MD",
    "PAPER_REGIME_PRESETS",
    "PILOT_CANDIDATES",
    "SIM_AUTHORS_FILES",
    "SIM_PRESETS",
    "ServeConfig",
    "ServeLimits",
    "Shrink",
    "SideBySideConfig",
    "SimConfig",
    "TevGraphs",
    "TrainingRunSpec",
    "adapt_verifier",
    "check_chain_format",
    "check_figure_out",
    "check_model_paths",
    "check_verifier",
    "compare_files",
    "compiled_decide",
    "config_for",
    "demo_trace",
    "draw_exittrain_sweep",
    "dry_run",
    "engine_names",
    "format_audit",
    "format_batch_bench",
    "format_batch_verifier_stage",
    "format_boundary",
    "format_comparison",
    "format_decoding_bench",
    "format_demo_tree",
    "format_dry_run",
    "format_exittrain_table",
    "format_gpu_check",
    "format_pilot",
    "format_report",
    "format_serve_bench",
    "format_side_by_side",
    "format_summary",
    "get_preset",
    "ledger_from_shipped",
    "load_ddtree_reference",
    "load_verifier",
    "make_figure",
    "make_ledger",
    "make_shipped_inputs",
    "mini_pair",
    "mini_prompts",
    "pilot_report",
    "preset_config",
    "quick_pair",
    "regime_inputs",
    "render_field_lab",
    "render_full_scale",
    "render_mechanism",
    "reproduce",
    "run_audit",
    "run_authors_regime",
    "run_batch_bench",
    "run_batch_verifier_stage",
    "run_batched_bench",
    "run_boundary",
    "run_ddtree_bench",
    "run_decoding_bench",
    "run_exittrain_mini",
    "run_field_lab",
    "run_gpu_check",
    "run_law_bench",
    "run_mechanism",
    "run_mini",
    "run_paper_regime",
    "run_pilot",
    "run_prove",
    "run_serve_bench",
    "run_settings_bench",
    "run_sim_authors",
    "run_sim_bench",
    "run_sim_verifier_bench",
    "run_simulation",
    "run_trace_bench",
    "run_training",
    "run_verifier_stage_bench",
    "serve",
    "summarize_trace",
    "summarize_trace_file",
    "sweep_to_dir",
    "use_decider",
    "with_overrides",
    "write_regime_units",
    "write_tiny_models",
]
