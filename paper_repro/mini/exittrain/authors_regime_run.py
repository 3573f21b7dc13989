"""The authors-regime run: the design of ``paper_repro/AUTHORS_REGIME.md`` executed on the paper-regime stages.

Cached under ``OUT`` and resumable like the paper-regime run (:mod:`.paper_regime_run`, whose stages it
reuses); what differs is the design's:

1. the base: the paper-regime run's shipped base pair, copied (:func:`copy_shipped_base`), or built by the
   paper-regime base stage when the preset's base is another (the CI-sized twin);
2. the fine-tuning data: the same fresh prompts, the target's greedy continuations;
3. calibration (:func:`stage_calibration`): token-only at every rate, judged at T = 0 and T = 1; the
   pre-registered fallback base (:func:`stage_fallback_base`) when no rate beats the base at both; the
   strength arm's lambda measured from the chosen run (:func:`measured_strength`);
4. the base's cells, then per seed every arm trained and its cells evaluated (:func:`~.paper_regime_run.seed_job`);
5. the report (:mod:`.authors_regime_report`) once every cell is done.
"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import shutil
import time
from dataclasses import replace
from pathlib import Path

import torch

from exitlaw.engine.training.checkpoint import latest_checkpoint
from exitlaw.paper_repro.mini.exittrain.authors_regime import (
    AUTHORS_REGIME,
    AuthorsRegimeConfig,
    plan_of,
)
from exitlaw.paper_repro.mini.exittrain.authors_regime_report import write_report
from exitlaw.paper_repro.mini.exittrain.paper_regime import (
    PAPER_REGIME,
    Paths,
    TrainingRun,
    arm_config,
    read_all_cells,
)
from exitlaw.paper_repro.mini.exittrain.paper_regime_run import (
    Base,
    _eval_at,
    _train,
    prepare,
    prompt_sets,
    run_parallel,
    seed_job,
    stage_base,
    stage_evaluation,
    stage_fresh_data,
    starting_point,
)
from exitlaw.paper_repro.mini.pipeline import StageTimes, stage_base_drafter, stage_data
from exitlaw.theory.infra.atomic_io import atomic_write_json

SHIPPED_BASE = Path(__file__).resolve().parents[2] / "results" / "paper_regime" / "base"


def copy_shipped_base(paths: Paths, cfg: AuthorsRegimeConfig, shipped: Path = SHIPPED_BASE) -> bool:
    """Copy the paper-regime run's shipped base pair into ``paths.base`` when the preset's base is that
    run's (the full preset) and ``paths.base`` holds none yet; whether it copied."""
    if cfg.base != PAPER_REGIME.base or (paths.base / "mini_config.json").is_file():
        return False
    if not (shipped / "drafter_base" / "final" / "model.safetensors").is_file():
        raise FileNotFoundError(
            f"{shipped}: the paper-regime run's base pair is not there (target, tokenizer, drafter)"
        )
    shutil.copytree(shipped, paths.base, dirs_exist_ok=True)
    return True


def write_scoring_temperature(paths: Paths, cfg: AuthorsRegimeConfig) -> float:
    """The weights' temperature is fixed by the design (T = 1): recorded, not checked."""
    if not paths.scoring_temperature.is_file():
        atomic_write_json(
            paths.scoring_temperature,
            {
                "T_s": cfg.scoring_temperature,
                "rule": "fixed by the design: the authors' softmax(logits), T = 1; no check",
                "data_temperature": cfg.data_temperature,
            },
            indent=1,
        )
    return cfg.scoring_temperature


# ----- calibration ------------------------------------------------------------------------------------------
def calibration_runs(
    cfg: AuthorsRegimeConfig, paths: Paths, fallback: bool
) -> tuple[TrainingRun, ...]:
    """Token-only at every rate of the grid, calibration seed; from the fallback base in their own folder."""
    folder = paths.out / ("calibration-fallback" if fallback else "calibration")
    return tuple(
        TrainingRun(
            f"token-lr{lr:g}",
            "token",
            cfg.calibration_seed,
            folder / f"token-lr{lr:g}",
            replace(
                arm_config(cfg, cfg.arm("token"), 0, lr, cfg.scoring_temperature),
                seed=cfg.calibration_seed,
            ),
        )
        for lr in cfg.lr_grid
    )


def _calibration_cells(
    base: Base, drafter_dir: Path, prompts, cfg: AuthorsRegimeConfig, cache: Path
) -> dict:
    """The calibration prompts decoded by ``drafter_dir`` at every judged temperature (cached in ``cache``)."""
    if cache.is_file():
        return json.loads(cache.read_text(encoding="utf-8"))
    cells = {
        f"{t:g}": _eval_at(base, drafter_dir, prompts, cfg, t) for t in cfg.judged_temperatures
    }
    atomic_write_json(cache, cells, indent=1)
    return cells


def _calibrate_one(base: Base, data, prompts, cfg: AuthorsRegimeConfig, run: TrainingRun) -> dict:
    final = _train(base, data, run, progress=False)
    return _calibration_cells(base, final, prompts, cfg, run.dir / "calibration_cells.json")


def _calibration_worker(paths: Paths, cfg: AuthorsRegimeConfig, drafter: Path, runs) -> None:
    torch.set_num_threads(1)
    base = replace(stage_base(paths, cfg, progress=False), drafter_dir=drafter)
    prompts = prompt_sets(cfg, base.corpus)["calibration"]
    data = stage_fresh_data(paths, cfg, base, cfg.scoring_temperature)
    for run in runs:
        _calibrate_one(base, data, prompts, cfg, run)


def _mean_rb(cell: dict) -> float:
    vals = cell["per_prompt_rb_tau"]
    return sum(vals) / len(vals)


def choose_rate(cfg: AuthorsRegimeConfig, base_cells: dict, run_cells: dict[float, dict]) -> dict:
    """The design's rule: a rate's score is its mean relative gain over the base across the judged
    temperatures; the best wins, a smaller rate within ``tie_tolerance`` of it wins the tie; ``gains_all``
    says whether some rate beats the base at every judged temperature (else the fallback applies)."""
    rows = {}
    for lr, cells in run_cells.items():
        gains = {t: _mean_rb(cells[t]) / _mean_rb(base_cells[t]) - 1.0 for t in base_cells}
        rows[f"{lr:g}"] = {
            "lr": lr,
            "mean_rb_tau": {t: _mean_rb(cells[t]) for t in cells},
            "gain": gains,
            "score": sum(gains.values()) / len(gains),
        }
    best = max(r["score"] for r in rows.values())
    chosen = min(r["lr"] for r in rows.values() if r["score"] >= best - cfg.tie_tolerance)
    return {
        "chosen_lr": chosen,
        "grid": rows,
        "base_mean_rb_tau": {t: _mean_rb(c) for t, c in base_cells.items()},
        "gains_all": any(all(g > 0 for g in r["gain"].values()) for r in rows.values()),
    }


def measured_strength(cfg: AuthorsRegimeConfig, run_dir: Path) -> dict:
    """The strength arm's lambda: ``strength_of_ce x C / E`` from the last logged steps of a token-only run
    (``C`` its mean CE, ``E`` its mean logged exit term), rounded to 3 significant digits."""
    lines = (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    recs = [json.loads(ln) for ln in lines if ln.strip()][-cfg.strength_last_steps :]
    ce = sum(r["ce"] for r in recs) / len(recs)
    tree = sum(r["tree"] for r in recs) / len(recs)
    if not (tree > 0 and math.isfinite(ce)):
        raise ValueError(f"{run_dir}: no positive logged exit term to measure the strength from")
    raw = cfg.strength_of_ce * ce / tree
    lam = float(f"{raw:.3g}")
    return {
        "lambda": lam,
        "ce": ce,
        "exit_term": tree,
        "steps": len(recs),
        "share_of_ce": cfg.strength_of_ce,
    }


def stage_fallback_base(paths: Paths, cfg: AuthorsRegimeConfig, base: Base, progress: bool) -> Path:
    """The pre-registered fallback base: the base's distillation replayed with the same settings, data and
    seeds up to ``fallback_base_step`` of its schedule; the checkpoint the trainer writes there."""
    out = paths.out / "base_fallback"
    ckpt = out / "drafter_base" / "checkpoints" / f"step_{cfg.fallback_base_step:06d}"
    if (ckpt / "model.safetensors").is_file():
        return ckpt
    data = stage_data(base.dir, cfg.base, base.corpus, base.target, base.target_dir)
    latest = latest_checkpoint(out / "drafter_base") if (out / "drafter_base").is_dir() else None
    done = int(latest.name[len("step_") :]) if latest is not None else 0
    stage_base_drafter(
        out, cfg.base, base.target, base.target_dir, data, progress, cfg.fallback_base_step - done
    )
    if not (ckpt / "model.safetensors").is_file():
        raise RuntimeError(f"the distillation replay wrote no checkpoint at {ckpt}")
    return ckpt


def stage_calibration(
    paths: Paths,
    cfg: AuthorsRegimeConfig,
    base: Base,
    data,
    prompts: dict,
    workers: int,
    progress: bool,
) -> dict:
    """Calibration from the full base and, if it cannot gain, once more from the fallback base; the
    chosen rate, the base every arm starts from and the strength arm's lambda (``calibration.json``)."""
    if paths.calibration.is_file():
        return json.loads(paths.calibration.read_text(encoding="utf-8"))
    record = {"rule": "AUTHORS_REGIME.md, 'Calibration of the rate'", "attempts": []}
    drafter = base.drafter_dir
    for fallback in (False, True):
        if fallback:
            drafter = stage_fallback_base(paths, cfg, base, progress)
        runs = calibration_runs(cfg, paths, fallback)
        if workers > 1:
            _spread(paths, cfg, drafter, runs, workers)
        b = replace(base, drafter_dir=drafter)
        cells = {
            run.config.schedule.lr: _calibrate_one(b, data, prompts["calibration"], cfg, run)
            for run in runs
        }
        folder = runs[0].dir.parent
        base_cells = _calibration_cells(
            b, drafter, prompts["calibration"], cfg, folder / "base_cells.json"
        )
        rule = choose_rate(cfg, base_cells, cells)
        record["attempts"].append(
            {"base": "fallback" if fallback else "full", "drafter": str(drafter), **rule}
        )
        if rule["gains_all"] or fallback:
            break
    chosen = next(r for r in runs if r.config.schedule.lr == rule["chosen_lr"])
    record.update(
        {
            "chosen_lr": rule["chosen_lr"],
            "base": record["attempts"][-1]["base"],
            "base_drafter": str(drafter.relative_to(paths.out)),
            "fallback_applied": len(record["attempts"]) > 1,
            "strength": measured_strength(cfg, chosen.dir),
            "T_s": cfg.scoring_temperature,
        }
    )
    atomic_write_json(paths.calibration, record, indent=1)
    return record


def _spread(paths: Paths, cfg: AuthorsRegimeConfig, drafter: Path, runs, workers: int) -> None:
    ctx = mp.get_context("spawn")
    procs = [
        ctx.Process(target=_calibration_worker, args=(paths, cfg, drafter, runs[k::workers]))
        for k in range(workers)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    if any(p.exitcode != 0 for p in procs):
        raise RuntimeError(
            "authors-regime: a calibration worker failed (see above); rerun to resume"
        )


# ----- the run ----------------------------------------------------------------------------------------------
def run_authors_regime(
    out: str | Path,
    cfg: AuthorsRegimeConfig = AUTHORS_REGIME,
    *,
    progress: bool = True,
    workers: int = 1,
    seeds_only: tuple[int, ...] | None = None,
) -> dict | None:
    """Run (or resume) every stage; the report (``out/results.json``) once every cell is done, else None.
    ``seeds_only``: train and evaluate only these seeds now (the rest on a later call)."""
    paths = Paths(Path(out))
    prepare(paths, cfg)
    times = StageTimes(paths.out)
    t0 = time.perf_counter()
    copy_shipped_base(paths, cfg)
    base = stage_base(paths, cfg, progress)
    prompts = prompt_sets(cfg, base.corpus)
    if not paths.prompt_sets.is_file():
        atomic_write_json(paths.prompt_sets, prompts)
    t_s = write_scoring_temperature(paths, cfg)
    with times("fresh_data"):
        data = stage_fresh_data(paths, cfg, base, t_s)
    with times("calibration"):
        calibration = stage_calibration(paths, cfg, base, data, prompts, workers, progress)
    _done("calibration", t0)
    plan = plan_of(paths, cfg, calibration)
    base = starting_point(plan, base)
    dirs = {"base": base.drafter_dir, **{r.name: r.dir / "final" for r in plan.runs}}
    with times("evaluation_base"):
        stage_evaluation(plan, base, prompts, dirs, progress, cells=plan.cells_of["base"])
    seeds = cfg.seeds if seeds_only is None else tuple(s for s in cfg.seeds if s in seeds_only)
    with times("seeds"):
        if workers > 1:
            run_parallel(plan, workers, [[s] for s in seeds])
        else:
            for seed in seeds:
                seed_job(plan, base, data, prompts, seed, progress)
    _done("arms and evaluation", t0)
    cells = read_all_cells(paths.out)
    if any(c.key not in cells for c in plan.cells):
        return None
    return write_report(plan, cells, times.times, calibration)


def _done(name: str, t0: float) -> None:
    print(f"authors-regime: {name} done at {time.perf_counter() - t0:.0f} s", flush=True)
