"""The paper-regime run: executes the plan of :mod:`.paper_regime` and writes its records.

Design: ``paper_repro/PAPER_REGIME.md``. Where each product lives is :class:`~.paper_regime.Paths`; once
``T_s`` and the rate are known, every training run and evaluation cell is read from one
:class:`~.paper_regime.Plan`, built once. Cached under ``OUT``; a rerun skips finished work and resumes
an interrupted training run:

1. :func:`stage_base`: the ``deep`` preset's corpus, target, distillation data and distilled drafter
   (:mod:`.pipeline`'s stages 1-4, same settings) in ``OUT/base``;
2. :func:`stage_scoring_temperature`: ``T_s`` and its fallback rule, from the base drafter's trees on
   the calibration prompts (``OUT/scoring_temperature.json``);
3. :func:`stage_fresh_data`: fine-tuning prompts at new offsets of the training split, the target's
   continuations at ``T_s`` (``OUT/ft_data``);
4. :func:`stage_calibration`: token-only at every rate of the grid, calibration seed and prompts; the
   chosen rate (``OUT/calibration.json``), before any prefix or exit arm;
5. the base drafter's evaluation cells (``OUT/eval/cells.jsonl``), then per training seed
   (:func:`seed_job`, spread over ``--workers`` processes), arm by arm: the arm trained from the base
   drafter (``OUT/arms/<arm>-s<seed>``), then its cells evaluated (``OUT/eval/cells-s<seed>.jsonl``, one
   line per finished cell), so every finished arm is complete on disk;
6. the report (:mod:`.paper_regime_report`): ``OUT/results.json`` and ``OUT/results.md``.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import resource
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from exitlaw.engine.models.checkpoint import load_drafter, load_target
from exitlaw.engine.training.data import cached_sequences, target_fingerprint
from exitlaw.paper_repro.mini import corpus as mc
from exitlaw.paper_repro.mini.evaluate import eval_cell
from exitlaw.paper_repro.mini.exittrain.paper_regime import (
    PAPER_REGIME,
    Cell,
    PaperRegimeConfig,
    Paths,
    Plan,
    TrainingRun,
    calibration_runs,
    make_plan,
    read_all_cells,
)
from exitlaw.paper_repro.mini.exittrain.paper_regime_report import write_report
from exitlaw.paper_repro.mini.pipeline import (
    StageTimes,
    _train_stage,
    prepare_out,
    stage_base_drafter,
    stage_corpus,
    stage_data,
    stage_target,
)
from exitlaw.theory.infra.atomic_io import atomic_write_json
from exitlaw.theory.sampling_settings import SamplingSettings


# ----- prompt sets ------------------------------------------------------------------------------------------
def prompt_sets(cfg: PaperRegimeConfig, corpus) -> dict[str, list[list[int]]]:
    """``code`` (evaluation files), ``prose`` and ``calibration`` (calibration files): disjoint by file."""
    tok, split = corpus.tokenizer, corpus.split
    names = sorted(split.heldout_code)
    order = np.random.default_rng(cfg.eval_split_seed).permutation(len(names))
    half = len(names) // 2
    eval_files = [names[i] for i in sorted(order[:half])]
    calib_files = [names[i] for i in sorted(order[half:])]
    root = Path(split.root)
    read = lambda files: [(root / n).read_text(encoding="utf-8", errors="replace") for n in files]  # noqa: E731
    sets = {
        "code": (read(eval_files), cfg.eval_seed_code),
        "prose": (split.prose_texts("heldout"), cfg.eval_seed_prose),
        "calibration": (read(calib_files), cfg.calibration_seed_prompts),
    }
    return {
        **{
            name: mc.sample_prompts(
                tok, texts, count=cfg.eval_prompts, prompt_tokens=cfg.eval_prompt_tokens, seed=seed
            )
            for name, (texts, seed) in sets.items()
        },
        "_files": {"evaluation": eval_files, "calibration": calib_files},
    }


# ----- stages -----------------------------------------------------------------------------------------------
@dataclass
class Base:
    """Stage 1's products."""

    dir: Path
    corpus: object
    target_dir: Path
    target: object
    drafter_dir: Path


def stage_base(paths: Paths, cfg: PaperRegimeConfig, progress: bool) -> Base:
    """The ``deep`` preset's stages 1-4 in ``paths.base`` (resumed; a finished one is only read)."""
    bdir = paths.base
    prepare_out(bdir, cfg.base, overwrite=False)
    times = StageTimes(bdir)
    with times("corpus"):
        corpus = stage_corpus(bdir, cfg.base)
    with times("target"):
        tdir = stage_target(bdir, cfg.base, corpus, progress)
    target = load_target(tdir, layer_ids=cfg.base.target_layer_ids)
    final = bdir / "drafter_base" / "final"
    if (
        final / "model.safetensors"
    ).is_file():  # distilled (or shipped): its data is not needed again
        return Base(bdir, corpus, tdir, target, final)
    with times("continuations"):
        data = stage_data(bdir, cfg.base, corpus, target, tdir)
    with times("distill"):
        drafter = stage_base_drafter(bdir, cfg.base, target, tdir, data, progress)
    return Base(bdir, corpus, tdir, target, drafter)


def _eval(
    target,
    drafter_dir: Path,
    prompts,
    cfg: PaperRegimeConfig,
    *,
    temperature: float,
    budget: int,
    scoring_temperature: float,
) -> dict:
    drafter = load_drafter(drafter_dir, dtype=target.dtype)
    return eval_cell(
        target,
        drafter,
        prompts,
        budget=budget,
        temperature=temperature,
        verifier=cfg.verifier,
        max_new_tokens=cfg.eval_new_tokens,
        seed=cfg.decode_seed,
        scoring_temperature=scoring_temperature,
    )


def _eval_at(base: Base, drafter_dir: Path, prompts, cfg: PaperRegimeConfig, t: float) -> dict:
    """A cell of ``drafter_dir`` at temperature ``t``, the evaluation budget, scored at ``t`` (stages 2, 4)."""
    return _eval(
        base.target,
        drafter_dir,
        prompts,
        cfg,
        temperature=t,
        budget=cfg.eval_budget,
        scoring_temperature=t,
    )


def stage_scoring_temperature(
    paths: Paths, cfg: PaperRegimeConfig, base: Base, prompts: dict
) -> float:
    """``T_s`` by the design's rule: ``scoring_temperature`` unless the base drafter's calibration trees
    have mean ``C_p`` below ``informative_coverage`` there, then ``fallback_temperature``."""
    path = paths.scoring_temperature
    if path.is_file():
        return float(json.loads(path.read_text(encoding="utf-8"))["T_s"])
    res = _eval_at(base, base.drafter_dir, prompts["calibration"], cfg, cfg.scoring_temperature)
    mean_cp = res["ceiling_ts"] - 1.0
    informative = mean_cp >= cfg.informative_coverage
    t_s = cfg.scoring_temperature if informative else cfg.fallback_temperature
    atomic_write_json(
        path,
        {
            "T_s": t_s,
            "checked_temperature": cfg.scoring_temperature,
            "mean_coverage": mean_cp,
            "threshold": cfg.informative_coverage,
            "informative": informative,
            "fallback_applied": not informative,
            "base_calibration_cell": res,
        },
        indent=1,
    )
    return t_s


def fresh_prompts(
    cfg: PaperRegimeConfig, tokenizer, code_texts, prose_texts, distill_prompts: list[list[int]]
) -> tuple[list[list[int]], int]:
    """``ft_prompts`` windows of ``prompt_tokens`` tokens at random offsets of random training documents
    (code: seed ``ft_seed_code``, prose: ``ft_seed_prose``); a window equal to a distillation prompt (or to
    an earlier fresh one) is dropped and the next draw taken. Returns ``(prompts, dropped)``."""
    seen = {tuple(p) for p in distill_prompts}
    n_prose = int(round(cfg.ft_prompts * cfg.ft_prose_share))
    length = cfg.base.prompt_tokens
    out, dropped = [], 0
    for texts, count, seed in (
        (code_texts, cfg.ft_prompts - n_prose, cfg.ft_seed_code),
        (prose_texts, n_prose, cfg.ft_seed_prose),
    ):
        docs = [
            ids
            for ids in (tokenizer.encode(t, add_special_tokens=False) for t in texts)
            if len(ids) > length
        ]
        if count and not docs:
            raise ValueError(f"no training document is longer than {length} tokens")
        rng = np.random.default_rng(seed)
        got = 0
        while got < count:
            ids = docs[int(rng.integers(len(docs)))]
            start = int(rng.integers(0, len(ids) - length))
            window = tuple(int(t) for t in ids[start : start + length])
            if window in seen:
                dropped += 1
                continue
            seen.add(window)
            out.append(list(window))
            got += 1
    return out, dropped


def stage_fresh_data(paths: Paths, cfg: PaperRegimeConfig, base: Base, t_s: float):
    """Fresh prompts and the target's continuations at the design's data temperature
    (``cfg.ft_temperature(t_s)``; cached in ``paths.ft_data``)."""
    temperature = cfg.ft_temperature(t_s)
    split = base.corpus.split
    prompts, dropped = fresh_prompts(
        cfg,
        base.corpus.tokenizer,
        split.code_texts("train"),
        split.prose_texts("train"),
        _distill_prompts(base),
    )
    meta = paths.fresh_prompts
    if not meta.is_file():
        atomic_write_json(
            meta,
            {
                "prompts": len(prompts),
                "redrawn_equal_to_distillation": dropped,
                "continuation_temperature": temperature,
                "continuation_tokens": cfg.ft_continuation_tokens,
                "seed": cfg.ft_gen_seed,
            },
            indent=1,
        )
    return cached_sequences(
        base.target,
        target_fingerprint(base.target_dir),
        prompts,
        paths.ft_data,
        max_new_tokens=cfg.ft_continuation_tokens,
        settings=SamplingSettings(temperature),
        seed=cfg.ft_gen_seed,
        batch_size=64,
    )


def _distill_prompts(base: Base) -> list[list[int]]:
    cfg = json.loads((base.dir / "mini_config.json").read_text(encoding="utf-8"))
    tok, split = base.corpus.tokenizer, base.corpus.split
    n_prose = int(round(cfg["train_prompts"] * cfg["prose_share"]))
    return mc.sample_prompts(
        tok,
        split.code_texts("train"),
        count=cfg["train_prompts"] - n_prose,
        prompt_tokens=cfg["prompt_tokens"],
        seed=cfg["seed"] + 11,
    ) + mc.sample_prompts(
        tok,
        split.prose_texts("train"),
        count=n_prose,
        prompt_tokens=cfg["prompt_tokens"],
        seed=cfg["seed"] + 12,
    )


def _train(base: Base, data, run: TrainingRun, progress: bool) -> Path:
    return _train_stage(run.dir, base.target_dir, base.drafter_dir, data, run.config, progress)


def stage_calibration(
    paths: Paths,
    cfg: PaperRegimeConfig,
    base: Base,
    data,
    prompts: dict,
    runs: tuple[TrainingRun, ...],
    t_s: float,
    progress: bool,
) -> float:
    """The calibration ``runs`` (token-only at each rate of the grid, calibration seed), judged on the
    calibration prompts at ``T_s``; the chosen rate."""
    path = paths.calibration
    if path.is_file():
        return float(json.loads(path.read_text(encoding="utf-8"))["chosen_lr"])
    rows = {}
    for run in runs:
        lr = run.config.schedule.lr
        res = _eval_at(base, _train(base, data, run, progress), prompts["calibration"], cfg, t_s)
        rows[f"{lr:g}"] = {
            "lr": lr,
            "mean_rb_tau": float(np.mean(res["per_prompt_rb_tau"])),
            "cell": res,
        }
    best = max(r["mean_rb_tau"] for r in rows.values())
    near = [r["lr"] for r in rows.values() if r["mean_rb_tau"] >= best * (1 - cfg.tie_tolerance)]
    chosen = min(near)
    base_cell = _eval_at(base, base.drafter_dir, prompts["calibration"], cfg, t_s)
    atomic_write_json(
        path,
        {
            "chosen_lr": chosen,
            "rule": "highest mean Rao-Blackwellised tau on the calibration "
            f"prompts at T_s; within {cfg.tie_tolerance:.1%} of the best the smaller rate wins",
            "grid": rows,
            "base_mean_rb_tau": float(np.mean(base_cell["per_prompt_rb_tau"])),
            "T_s": t_s,
        },
        indent=1,
    )
    return chosen


def stage_arms(base: Base, data, runs: tuple[TrainingRun, ...], progress: bool) -> dict[str, Path]:
    """Train every run of ``runs`` from the base drafter; ``name -> final drafter``. Each run's seconds
    are recorded in its own ``seconds.json`` (also when runs are spread over workers)."""
    finals = {}
    for run in runs:
        fresh = not (run.dir / "final" / "model.safetensors").is_file()
        t0 = time.perf_counter()
        finals[run.name] = _train(base, data, run, progress)
        if fresh:
            atomic_write_json(
                run.dir / "seconds.json", {"seconds": time.perf_counter() - t0}, indent=1
            )
    return finals


def stage_evaluation(
    plan: Plan,
    base: Base,
    prompts: dict,
    drafter_dirs: dict[str, Path],
    progress: bool,
    cells: tuple[Cell, ...] | None = None,
    shard: str = "",
) -> dict:
    """Every cell of the plan (or of ``cells``) not yet finished, appended one line per cell to
    ``cells{shard}.jsonl``; returns every finished cell."""
    path = plan.paths.cells(shard)
    path.parent.mkdir(parents=True, exist_ok=True)
    done = read_all_cells(plan.paths.out)
    todo = [c for c in (plan.cells if cells is None else cells) if c.key not in done]
    bar = None
    if progress:
        bar = tqdm(total=len(todo), desc="eval", unit="cell")
    for c in todo:
        res = _eval(
            base.target,
            drafter_dirs[c.drafter],
            prompts[c.domain],
            plan.cfg,
            temperature=c.temperature,
            budget=c.budget,
            scoring_temperature=plan.t_s,
        )
        res.update(
            {
                "drafter": c.drafter,
                "domain": c.domain,
                "temperature": c.temperature,
                "budget": c.budget,
            }
        )
        done[c.key] = res
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"key": c.key, "result": res}) + "\n")
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return read_all_cells(plan.paths.out)


def starting_point(plan: Plan, base: Base) -> Base:
    """``base`` with the drafter every arm of ``plan`` starts from (``plan.base_drafter`` when set)."""
    return base if plan.base_drafter is None else replace(base, drafter_dir=plan.base_drafter)


def drafter_dirs(plan: Plan, base: Base) -> dict[str, Path]:
    """Every drafter to evaluate: the base drafter of stage 1 and each planned run's final drafter."""
    return {"base": base.drafter_dir, **{r.name: r.dir / "final" for r in plan.runs}}


def prepare(paths: Paths, cfg: PaperRegimeConfig) -> None:
    """Create ``paths.out`` or check it holds a run of this configuration (never overwritten)."""
    marker = paths.config
    if marker.is_file():
        old = json.loads(marker.read_text(encoding="utf-8"))
        if old != cfg.to_json():
            diff = sorted(k for k in old if old[k] != cfg.to_json().get(k))
            raise FileExistsError(
                f"{paths.out} holds a paper-regime run of another configuration (differs in {diff}); "
                "choose another --out"
            )
        return
    paths.out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(marker, cfg.to_json(), indent=1)


def run_paper_regime(
    out: str | Path,
    cfg: PaperRegimeConfig = PAPER_REGIME,
    *,
    progress: bool = True,
    workers: int = 1,
) -> dict:
    """Run (or resume) every stage; returns the report written to ``out/results.json``."""
    paths = Paths(Path(out))
    prepare(paths, cfg)
    times = StageTimes(paths.out)
    t0 = time.perf_counter()
    base = stage_base(paths, cfg, progress)
    _stage_done("base", t0)
    prompts = prompt_sets(cfg, base.corpus)
    if not paths.prompt_sets.is_file():
        atomic_write_json(paths.prompt_sets, prompts)
    with times("scoring_temperature"):
        t_s = stage_scoring_temperature(paths, cfg, base, prompts)
    with times("fresh_data"):
        data = stage_fresh_data(paths, cfg, base, t_s)
    with times("calibration"):
        lr = stage_calibration(
            paths, cfg, base, data, prompts, calibration_runs(cfg, paths, t_s), t_s, progress
        )
    _stage_done("calibration", t0)
    plan = make_plan(cfg, paths.out, t_s, lr)
    dirs = drafter_dirs(plan, base)
    with times("evaluation_base"):
        stage_evaluation(plan, base, prompts, dirs, progress, cells=plan.cells_of["base"])
    with times("seeds"):
        if workers > 1:
            run_parallel(plan, workers, [[s] for s in cfg.seeds])
        else:
            for seed in cfg.seeds:
                seed_job(plan, base, data, prompts, seed, progress)
    _stage_done("arms and evaluation", t0)
    cells = stage_evaluation(plan, base, prompts, dirs, progress)
    return write_report(plan, cells, times.times, prompts["_files"])


def seed_job(plan: Plan, base: Base, data, prompts: dict, seed: int, progress: bool) -> None:
    """One training seed, arm by arm: each arm trained, then every cell of its drafter evaluated
    (``cells-s<seed>.jsonl``) before the next arm trains, so an interrupted seed keeps every finished arm
    on disk as cells (shippable without weights); an arm whose cells are all done is not retrained.
    Every run and cell is seeded by itself, so the order changes no result."""
    for run in (r for r in plan.runs if r.seed == seed):
        cells = plan.cells_of[run.name]
        done = read_all_cells(plan.paths.out)
        if all(c.key in done for c in cells):
            continue  # evaluated (perhaps in an earlier session)
        stage_arms(base, data, (run,), progress)
        stage_evaluation(
            plan, base, prompts, drafter_dirs(plan, base), progress, cells=cells, shard=f"-s{seed}"
        )


def run_parallel(plan: Plan, workers: int, jobs: list) -> None:
    """Spread seed jobs (:func:`seed_job`) over ``workers`` processes of one torch thread each.

    Each worker resumes the cached stages (nothing is recomputed), then takes its share round-robin.
    The results do not depend on the number of workers (every run and cell is seeded by itself).
    """
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_worker, args=(plan, jobs[k::workers])) for k in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    failed = [k for k, p in enumerate(procs) if p.exitcode != 0]
    if failed:
        raise RuntimeError(
            f"paper-regime: workers {failed} failed (see their output above); rerun to resume"
        )


def _worker(plan: Plan, jobs: list) -> None:
    torch.set_num_threads(1)
    base = starting_point(plan, stage_base(plan.paths, plan.cfg, progress=False))
    prompts = prompt_sets(plan.cfg, base.corpus)
    data = stage_fresh_data(plan.paths, plan.cfg, base, plan.t_s)
    for (seed,) in jobs:
        seed_job(plan, base, data, prompts, seed, progress=False)


def _stage_done(name: str, t0: float) -> None:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"paper-regime: {name} done at {time.perf_counter() - t0:.0f} s, peak RSS {peak:.0f} MiB",
        flush=True,
    )
