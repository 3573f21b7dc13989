"""One simulation run: every builder of a :class:`SimConfig` against one target and verifier.

:func:`run_simulation` writes ``OUT/results.json`` (schema ``exitlaw.simulate-results``)
and one tree trace per builder (``OUT/trace_<builder>.jsonl``, readable by
``exitlaw law``), and reports one table row per builder through ``log``.
Existing outputs are never replaced without ``overwrite``.

Nothing half-written: a run writes into ``OUT/.simulate-partial/`` and moves its
files into ``OUT`` only once every builder has finished, ``results.json`` last
(its presence marks a complete folder). With ``overwrite`` the old run's files
stay untouched until then; the old ``results.json`` is removed first, then the
new traces move in, the old run's traces that the new run does not write are
removed, and the new ``results.json`` moves in. An interrupted run leaves the
old folder as it was (plus the staging folder, cleared by the next run), or, killed
inside those renames, a folder without ``results.json`` (incomplete), never a mix.

Rows: ``tsubame`` is labelled ``tsubame+<verifier>`` (Tsubame's tree under the
config's verifier); when ``caddtree`` runs, a row ``ddtree-matched`` follows it:
DDTree at the fixed budget ``round(mean CaDDTree budget)`` of the same run, so the
two are compared at a matched mean budget; EAGLE-2's speedup charges one drafter
call per depth level (:meth:`SimConfig.builder_latency`).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from exitlaw.simulate.lab.decoding import simulate_decoding
from exitlaw.simulate.lab.presets import SimConfig, row_label, sampled_verifier_fn, verifier_fn
from exitlaw.theory import TraceWriter
from exitlaw.theory.infra.atomic_io import atomic_write_text

RESULTS_SCHEMA = "exitlaw.simulate-results"
LATENCY_MODEL = (
    "round = calls * C_draft + C_verify(n); C_verify(n) = base + linear*(n+1) + quadratic*(n+1)^2 + "
    "tile_cost*ceil((n+1)/tile); autoregressive token = C_verify(0); calls = 1 drafter call per round "
    "(DFlash-style position-wise drafter), eagle_depth sequential calls for EAGLE-2"
)
MATCHED = "ddtree-matched"
STAGE = ".simulate-partial"


def commit_outputs(stage: Path, out: Path, traces: list[str]) -> None:
    """Move a finished run from ``stage`` into ``out`` (module docstring): old results.json out first,
    new traces in, the old run's other traces out, the new results.json in last; then drop ``stage``."""
    old_results = out / "results.json"
    stale: list[Path] = []
    if old_results.exists():
        try:
            old = json.loads(old_results.read_text(encoding="utf-8"))
            stale = [
                out / Path(b["trace"]).name
                for b in old.get("builders", {}).values()
                if "trace" in b
            ]
        except (ValueError, AttributeError, TypeError, KeyError):
            stale = []  # an unreadable old results.json names no traces: only it is replaced
        old_results.unlink()
    for name in traces:
        (stage / name).replace(out / name)
    for path in stale:
        if path.name not in traces and path.name.startswith("trace_") and path.exists():
            path.unlink()
    (stage / "results.json").replace(out / "results.json")
    shutil.rmtree(stage)


def row_names(cfg: SimConfig) -> list[str]:
    """The rows of a run: the builders, with ``ddtree-matched`` right after ``caddtree``."""
    out = []
    for b in cfg.builders:
        out += [b, MATCHED] if b == "caddtree" else [b]
    return out


def output_paths(cfg: SimConfig, out: Path) -> list[Path]:
    """The files a run of ``cfg`` writes into ``out``."""
    return [out / "results.json"] + [out / f"trace_{b}.jsonl" for b in row_names(cfg)]


def table_header(cfg: SimConfig) -> str:
    w = cfg.target
    return (
        f"simulate {cfg.name}: V={w.vocab} order={w.order} zipf={w.zipf} T={w.temperature} "
        f"B={cfg.budget} H={cfg.horizon} verifier={cfg.verifier} rounds={cfg.rounds}\n"
        f"{'builder':>14} {'B':>6} {'tau':>7} {'+-se':>6} {'1+C_p':>7} {'1+C*_p':>7} {'gap':>6} "
        f"{'z':>6} {'speedup':>7} {'sec':>5}"
    )


def _num(x, width: int, digits: int) -> str:
    """A table cell: ``-`` for a value a short run cannot give (a standard error of one round)."""
    return f"{'-':>{width}}" if x is None else f"{x:>{width}.{digits}f}"


def table_row(name: str, aggregates: dict, seconds: float, oracle: bool) -> str:
    a = aggregates
    oc = (
        f"{_num(1 + a['mean_oracle_coverage'], 7, 3)} {_num(a['mean_allocation_gap'], 6, 3)}"
        if oracle
        else f"{'-':>7} {'-':>6}"
    )
    return (
        f"{name:>14} {_num(a['mean_budget'], 6, 1)} {_num(a['tau'], 7, 3)} {_num(a['tau_stderr'], 6, 3)} "
        f"{_num(a['mean_ceiling'], 7, 3)} {oc} {_num(a['tau_minus_ceiling_z'], 6, 2)} {_num(a['speedup'], 7, 3)} "
        f"{seconds:>5.1f}"
    )


def run_simulation(
    cfg: SimConfig,
    out: str | Path,
    *,
    overwrite: bool = False,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> dict:
    """Run every builder of ``cfg``; write results and traces into ``out``; return the results dict."""
    out = Path(out)
    _check_out(cfg, out, overwrite)
    verifier = verifier_fn(cfg.verifier)
    target = cfg.target.model()
    pos, ar = cfg.drafter.models(target)
    stage = _fresh_stage(out, log)
    results = {
        "schema": RESULTS_SCHEMA,
        "version": 1,
        "config": cfg.to_dict(),
        "latency_model": LATENCY_MODEL,
        "builders": {},
    }
    log(table_header(cfg))
    for name in row_names(cfg):
        row = _builder_row(cfg, name, results, (target, pos, ar, verifier), stage, out, progress)
        results["builders"][name] = row
        log(table_row(row["label"], row["aggregates"], row["seconds"], cfg.oracle))
    atomic_write_text(stage / "results.json", json.dumps(results, indent=1))
    commit_outputs(stage, out, [f"trace_{n}.jsonl" for n in row_names(cfg)])
    _log_notes(cfg, results, log)
    log(
        f"wrote {out / 'results.json'} and {len(row_names(cfg))} traces; read one with: "
        f"exitlaw law {out / ('trace_' + cfg.builders[0] + '.jsonl')}"
    )
    return results


def _check_out(cfg: SimConfig, out: Path, overwrite: bool) -> None:
    """Refuse an ``out`` that is a file, or that holds this run's outputs without ``overwrite``."""
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"--out {out} is a file, not a directory")
    existing = [str(t) for t in output_paths(cfg, out) if t.exists()]
    if existing and not overwrite:
        raise FileExistsError(
            f"{', '.join(existing)} already exist; pass --overwrite to replace them"
        )


def _fresh_stage(out: Path, log: Callable[[str], None]) -> Path:
    """An empty staging directory in ``out`` (one left by an interrupted run is removed first)."""
    out.mkdir(parents=True, exist_ok=True)
    stage = out / STAGE
    if stage.exists():
        log(f"removing {stage}, left by an interrupted run")
        shutil.rmtree(stage)
    stage.mkdir()
    return stage


def _builder_row(cfg: SimConfig, name: str, results: dict, world, stage: Path, out: Path, progress):
    """Simulate one row of the table (``world``: target, drafters and verifier), its trace written
    into ``stage``; return its results entry. The matched row runs DDTree at CaDDTree's mean budget
    (read from ``results``), same run, same seed."""
    target, pos, ar, verifier = world
    t0 = time.perf_counter()
    run_cfg, builder, extra = cfg, name, {}
    if name == MATCHED:
        matched = max(1, round(results["builders"]["caddtree"]["aggregates"]["mean_budget"]))
        run_cfg, builder, extra = (
            replace(cfg, budget=matched),
            "ddtree",
            {"matched_budget": matched},
        )
    meta = {"source": "exitlaw simulate", "builder": name, "config": run_cfg.to_dict()}
    with TraceWriter(stage / f"trace_{name}.jsonl", meta) as tw:
        res = simulate_decoding(
            target,
            run_cfg.make_builder(builder, target, pos, ar),
            verifier,
            rounds=cfg.rounds,
            seed=cfg.seed,
            prompt_length=cfg.prompt_length,
            oracle=cfg.oracle,
            latency=cfg.builder_latency(builder),
            trace=tw,
            store_rows=cfg.store_rows,
            progress=progress,
            desc=name,
            sampled_verifier=sampled_verifier_fn(name),
        )
    secs = time.perf_counter() - t0
    label = row_label(name, cfg) if name != MATCHED else f"ddtree@B={extra['matched_budget']}"
    return {
        **res.to_json(),
        "seconds": secs,
        "trace": str(out / f"trace_{name}.jsonl"),
        "label": label,
        "drafter_calls_per_round": cfg.drafter_calls(builder),
        **extra,
    }


def _log_notes(cfg: SimConfig, results: dict, log: Callable[[str], None]) -> None:
    """The notes under the table: how to read z, and what each special row is."""
    log(
        "\nz = mean(L - (1 + C_p)) / s.e.: |z| < 3.3 is expected from an exact saturating verifier (alpha = 0.001)"
    )
    if "tsubame" in cfg.builders:
        log(
            f"{row_label('tsubame', cfg)}: Tsubame's two-pass tree (DDTree topology, re-sampled tokens) verified by "
            f"{cfg.verifier}, not by Tsubame's own rule (that row is tsubame-rrs)"
        )
    if "caddtree" in cfg.builders:
        log(
            f"ddtree@B={results['builders'][MATCHED]['matched_budget']}: DDTree at CaDDTree's mean budget, rounded "
            "(matched mean budget, same run and seed)"
        )
    if "eagle" in cfg.builders:
        log(
            f"eagle: speedup charges {cfg.drafter_calls('eagle')} sequential drafter calls per round (one per depth level)"
        )
    if "tsubame-rrs" in cfg.builders:
        log(
            "tsubame-rrs is verified by recursive rejection on its sampled tree: exact only averaged over drafts, "
            "so its tau is not bounded by 1 + C_p of the realised trees"
        )
