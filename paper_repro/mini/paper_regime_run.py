"""The paper-regime run's stages (settings: :mod:`.paper_regime`; design: ``paper_repro/PAPER_REGIME.md``).

Cached under ``OUT``; a rerun skips finished work and resumes an interrupted training run:

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
import time
from dataclasses import dataclass, replace
from pathlib import Path

from exitlaw.theory.infra.atomic_io import atomic_write_json

from exitlaw.paper_repro.mini.paper_regime import (
    PAPER_REGIME,
    PaperRegimeConfig,
    arm_by_name,
    arm_config,
    cell_key,
    eval_plan,
    run_names,
)
from exitlaw.paper_repro.mini.pipeline import StageTimes, read_cells


# ----- prompt sets ------------------------------------------------------------------------------------------
def prompt_sets(cfg: PaperRegimeConfig, corpus) -> dict[str, list[list[int]]]:
    """``code`` (evaluation files), ``prose`` and ``calibration`` (calibration files): disjoint by file."""
    import numpy as np

    from exitlaw.paper_repro.mini import corpus as mc

    tok, split = corpus.tokenizer, corpus.split
    names = sorted(split.heldout_code)
    order = np.random.default_rng(cfg.eval_split_seed).permutation(len(names))
    half = len(names) // 2
    eval_files = [names[i] for i in sorted(order[:half])]
    calib_files = [names[i] for i in sorted(order[half:])]
    root = Path(split.root)
    read = lambda files: [(root / n).read_text(encoding="utf-8", errors="replace") for n in files]  # noqa: E731
    return {
        "code": mc.sample_prompts(
            tok,
            read(eval_files),
            count=cfg.eval_prompts,
            prompt_tokens=cfg.eval_prompt_tokens,
            seed=cfg.eval_seed_code,
        ),
        "prose": mc.sample_prompts(
            tok,
            split.prose_texts("heldout"),
            count=cfg.eval_prompts,
            prompt_tokens=cfg.eval_prompt_tokens,
            seed=cfg.eval_seed_prose,
        ),
        "calibration": mc.sample_prompts(
            tok,
            read(calib_files),
            count=cfg.eval_prompts,
            prompt_tokens=cfg.eval_prompt_tokens,
            seed=cfg.calibration_seed_prompts,
        ),
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


def stage_base(out: Path, cfg: PaperRegimeConfig, progress: bool) -> Base:
    """The ``deep`` preset's stages 1-4 in ``out/base`` (resumed; a finished one is only read)."""
    from exitlaw.engine.models.checkpoint import load_target

    from exitlaw.paper_repro.mini.pipeline import (
        prepare_out,
        stage_base_drafter,
        stage_corpus,
        stage_data,
        stage_target,
    )

    bdir = out / "base"
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
    from exitlaw.engine.models.checkpoint import load_drafter

    from exitlaw.paper_repro.mini.evaluate import eval_cell

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


def stage_scoring_temperature(
    out: Path, cfg: PaperRegimeConfig, base: Base, prompts: dict
) -> float:
    """``T_s`` by the design's rule: ``scoring_temperature`` unless the base drafter's calibration trees
    have mean ``C_p`` below ``informative_coverage`` there, then ``fallback_temperature``."""
    path = out / "scoring_temperature.json"
    if path.is_file():
        return float(json.loads(path.read_text(encoding="utf-8"))["T_s"])
    res = _eval(
        base.target,
        base.drafter_dir,
        prompts["calibration"],
        cfg,
        temperature=cfg.scoring_temperature,
        budget=cfg.eval_budget,
        scoring_temperature=cfg.scoring_temperature,
    )
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
    import numpy as np

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


def stage_fresh_data(out: Path, cfg: PaperRegimeConfig, base: Base, t_s: float):
    """Fresh prompts and the target's continuations at ``T_s`` (cached in ``out/ft_data``)."""
    from exitlaw.engine.training.data import cached_sequences, target_fingerprint

    split = base.corpus.split
    prompts, dropped = fresh_prompts(
        cfg,
        base.corpus.tokenizer,
        split.code_texts("train"),
        split.prose_texts("train"),
        _distill_prompts(base),
    )
    meta = out / "ft_data" / "fresh_prompts.json"
    if not meta.is_file():
        atomic_write_json(
            meta,
            {
                "prompts": len(prompts),
                "redrawn_equal_to_distillation": dropped,
                "continuation_temperature": t_s,
                "continuation_tokens": cfg.ft_continuation_tokens,
                "seed": cfg.ft_gen_seed,
            },
            indent=1,
        )
    return cached_sequences(
        base.target,
        target_fingerprint(base.target_dir),
        prompts,
        out / "ft_data",
        max_new_tokens=cfg.ft_continuation_tokens,
        temperature=t_s,
        seed=cfg.ft_gen_seed,
        batch_size=64,
    )


def _distill_prompts(base: Base) -> list[list[int]]:
    from exitlaw.paper_repro.mini import corpus as mc

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


def _train(run_dir: Path, base: Base, data, tcfg, progress: bool) -> Path:
    from exitlaw.paper_repro.mini.pipeline import _train_stage

    return _train_stage(run_dir, base.target_dir, base.drafter_dir, data, tcfg, progress)


def stage_calibration(
    out: Path, cfg: PaperRegimeConfig, base: Base, data, prompts: dict, t_s: float, progress: bool
) -> float:
    """Token-only at each rate of the grid (calibration seed), judged on the calibration prompts at ``T_s``."""
    import numpy as np

    path = out / "calibration.json"
    if path.is_file():
        return float(json.loads(path.read_text(encoding="utf-8"))["chosen_lr"])
    token = arm_by_name("token")
    rows = {}
    for lr in cfg.lr_grid:
        final = _train(
            out / "calibration" / f"token-lr{lr:g}",
            base,
            data,
            replace(arm_config(cfg, token, 0, lr, t_s), seed=cfg.calibration_seed),
            progress,
        )
        res = _eval(
            base.target,
            final,
            prompts["calibration"],
            cfg,
            temperature=t_s,
            budget=cfg.eval_budget,
            scoring_temperature=t_s,
        )
        rows[f"{lr:g}"] = {
            "lr": lr,
            "mean_rb_tau": float(np.mean(res["per_prompt_rb_tau"])),
            "cell": res,
        }
    best = max(r["mean_rb_tau"] for r in rows.values())
    near = [r["lr"] for r in rows.values() if r["mean_rb_tau"] >= best * (1 - cfg.tie_tolerance)]
    chosen = min(near)
    base_cell = _eval(
        base.target,
        base.drafter_dir,
        prompts["calibration"],
        cfg,
        temperature=t_s,
        budget=cfg.eval_budget,
        scoring_temperature=t_s,
    )
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


def stage_arms(
    out: Path,
    cfg: PaperRegimeConfig,
    base: Base,
    data,
    lr: float,
    t_s: float,
    progress: bool,
    only: list[tuple[str, int]] | None = None,
) -> dict[str, Path]:
    """Train every ``(arm, seed)`` (or those in ``only``) from the base drafter; ``name -> final drafter``.
    Each run's seconds are recorded in its own ``seconds.json`` (also when runs are spread over workers)."""
    finals = {}
    for arm, seed in only if only is not None else run_names(cfg):
        name = f"{arm}-s{seed}"
        run_dir = out / "arms" / name
        fresh = not (run_dir / "final" / "model.safetensors").is_file()
        t0 = time.perf_counter()
        finals[name] = _train(
            run_dir, base, data, arm_config(cfg, arm_by_name(arm), seed, lr, t_s), progress
        )
        if fresh:
            atomic_write_json(
                run_dir / "seconds.json", {"seconds": time.perf_counter() - t0}, indent=1
            )
    return finals


def read_all_cells(out: Path) -> dict:
    """Every finished cell of ``out/eval/cells*.jsonl`` (one file per evaluation worker)."""
    done = {}
    for path in sorted((out / "eval").glob("cells*.jsonl")):
        done.update(read_cells(path))
    return done


def stage_evaluation(
    out: Path,
    cfg: PaperRegimeConfig,
    base: Base,
    prompts: dict,
    t_s: float,
    drafter_dirs: dict[str, Path],
    progress: bool,
    only: list | None = None,
    shard: str = "",
) -> dict:
    """Every cell of :func:`eval_plan` (or of ``only``) not yet finished, appended one line per cell to
    ``out/eval/cells{shard}.jsonl``; returns every finished cell."""
    path = out / "eval" / f"cells{shard}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    done = read_all_cells(out)
    todo = [
        c for c in (only if only is not None else eval_plan(cfg, t_s)) if cell_key(*c) not in done
    ]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc="eval", unit="cell")
    for drafter, domain, t, b in todo:
        res = _eval(
            base.target,
            drafter_dirs[drafter],
            prompts[domain],
            cfg,
            temperature=t,
            budget=b,
            scoring_temperature=t_s,
        )
        res.update({"drafter": drafter, "domain": domain, "temperature": t, "budget": b})
        key = cell_key(drafter, domain, t, b)
        done[key] = res
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"key": key, "result": res}) + "\n")
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return read_all_cells(out)


def drafter_dirs(out: Path, cfg: PaperRegimeConfig, base: Base) -> dict[str, Path]:
    dirs = {"base": base.drafter_dir}
    for a, s in run_names(cfg):
        dirs[f"{a}-s{s}"] = out / "arms" / f"{a}-s{s}" / "final"
    return dirs


def prepare(out: Path, cfg: PaperRegimeConfig) -> None:
    """Create ``out`` or check it holds a run of this configuration (never overwritten)."""
    marker = out / "paper_regime_config.json"
    if marker.is_file():
        old = json.loads(marker.read_text(encoding="utf-8"))
        if old != cfg.to_json():
            diff = sorted(k for k in old if old[k] != cfg.to_json().get(k))
            raise FileExistsError(
                f"{out} holds a paper-regime run of another configuration (differs in {diff}); "
                "choose another --out"
            )
        return
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(marker, cfg.to_json(), indent=1)


def run_paper_regime(
    out: str | Path,
    cfg: PaperRegimeConfig = PAPER_REGIME,
    *,
    progress: bool = True,
    workers: int = 1,
) -> dict:
    """Run (or resume) every stage; returns the report written to ``out/results.json``."""
    from exitlaw.paper_repro.mini.paper_regime_report import write_report

    out = Path(out)
    prepare(out, cfg)
    times = StageTimes(out)
    t0 = time.perf_counter()
    base = stage_base(out, cfg, progress)
    _stage_done("base", t0)
    prompts = prompt_sets(cfg, base.corpus)
    if not (out / "prompt_sets.json").is_file():
        atomic_write_json(out / "prompt_sets.json", prompts)
    with times("scoring_temperature"):
        t_s = stage_scoring_temperature(out, cfg, base, prompts)
    with times("fresh_data"):
        data = stage_fresh_data(out, cfg, base, t_s)
    with times("calibration"):
        lr = stage_calibration(out, cfg, base, data, prompts, t_s, progress)
    _stage_done("calibration", t0)
    plan = eval_plan(cfg, t_s)
    dirs = drafter_dirs(out, cfg, base)
    with times("evaluation_base"):
        stage_evaluation(
            out, cfg, base, prompts, t_s, dirs, progress, only=[c for c in plan if c[0] == "base"]
        )
    with times("seeds"):
        if workers > 1:
            run_parallel(out, cfg, workers, [[s] for s in cfg.seeds])
        else:
            for seed in cfg.seeds:
                seed_job(out, cfg, base, data, prompts, lr, t_s, seed, progress)
    _stage_done("arms and evaluation", t0)
    cells = stage_evaluation(out, cfg, base, prompts, t_s, dirs, progress)
    return write_report(out, cfg, cells, t_s, lr, times.times, prompts["_files"])


def seed_job(
    out: Path,
    cfg: PaperRegimeConfig,
    base: Base,
    data,
    prompts: dict,
    lr: float,
    t_s: float,
    seed: int,
    progress: bool,
) -> None:
    """One training seed, arm by arm: each arm trained, then every cell of its drafter evaluated
    (``cells-s<seed>.jsonl``) before the next arm trains, so an interrupted seed keeps every finished arm
    on disk as cells (shippable without weights); an arm whose cells are all done is not retrained.
    Every run and cell is seeded by itself, so the order changes no result."""
    plan = eval_plan(cfg, t_s)
    for arm in cfg.arms:
        name = f"{arm}-s{seed}"
        cells = [c for c in plan if c[0] == name]
        if all(cell_key(*c) in read_all_cells(out) for c in cells):
            continue  # evaluated (perhaps in an earlier session)
        stage_arms(out, cfg, base, data, lr, t_s, progress, only=[(arm, seed)])
        stage_evaluation(
            out,
            cfg,
            base,
            prompts,
            t_s,
            drafter_dirs(out, cfg, base),
            progress,
            only=cells,
            shard=f"-s{seed}",
        )


def run_parallel(out: Path, cfg: PaperRegimeConfig, workers: int, jobs: list) -> None:
    """Spread seed jobs (:func:`seed_job`) over ``workers`` processes of one torch thread each.

    Each worker resumes the cached stages (nothing is recomputed), then takes its share round-robin.
    The results do not depend on the number of workers (every run and cell is seeded by itself).
    """
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    procs = [
        ctx.Process(target=_worker, args=(str(out), cfg, jobs[k::workers])) for k in range(workers)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    failed = [k for k, p in enumerate(procs) if p.exitcode != 0]
    if failed:
        raise RuntimeError(
            f"paper-regime: workers {failed} failed (see their output above); rerun to resume"
        )


def _worker(out: str, cfg: PaperRegimeConfig, jobs: list) -> None:
    import torch

    torch.set_num_threads(1)
    out_p = Path(out)
    base = stage_base(out_p, cfg, progress=False)
    prompts = prompt_sets(cfg, base.corpus)
    t_s = stage_scoring_temperature(out_p, cfg, base, prompts)
    data = stage_fresh_data(out_p, cfg, base, t_s)
    lr = stage_calibration(out_p, cfg, base, data, prompts, t_s, progress=False)
    for (seed,) in jobs:
        seed_job(out_p, cfg, base, data, prompts, lr, t_s, seed, progress=False)


def _stage_done(name: str, t0: float) -> None:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"paper-regime: {name} done at {time.perf_counter() - t0:.0f} s, peak RSS {peak:.0f} MiB",
        flush=True,
    )
