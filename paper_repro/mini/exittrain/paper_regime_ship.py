"""Shipping a paper-regime run's small products (no arm weights) and rebuilding its report from them.

:func:`ship` copies what the report needs (configuration, prompt sets, ``T_s`` check, calibration,
every evaluation cell, per-run training summaries) and, with ``with_base``, the base a later
session resumes from; :func:`rebuild` recomputes ``results.json`` / ``results.md`` from a shipped folder
(the report of :mod:`.paper_regime_report`, over the plan of :mod:`.paper_regime`).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

from exitlaw.paper_repro.mini.exittrain.authors_regime import config_from_json
from exitlaw.paper_repro.mini.exittrain.paper_regime import (
    PaperRegimeConfig,
    Paths,
    eval_plan,
    make_plan,
    read_all_cells,
)
from exitlaw.paper_repro.mini.exittrain.paper_regime_report import (
    training_runs,
    training_summary,
    write_report,
)
from exitlaw.theory.infra.atomic_io import atomic_write_json

SHIPPED = (
    "paper_regime_config.json",
    "prompt_sets.json",
    "scoring_temperature.json",
    "calibration.json",
    "ft_data/fresh_prompts.json",
    "base/timings.json",
    "timings.json",
)
# the base a later session resumes from (a few MB: target, tokenizer, distilled drafter, fresh data)
SHIPPED_BASE = (
    "base/mini_config.json",
    "base/corpus/split.json",
    "base/corpus/tokenizer",
    "base/target",
    "base/drafter_base/final",
    "ft_data",
)


def ship(out: str | Path, dest: str | Path, *, with_base: bool = False) -> list[Path]:
    """Copy a run's small products into ``dest``: configuration, the ``T_s`` check, calibration, the cells
    of every finished drafter (:func:`finished_cells`), per-run training summaries (``training.json``) and, when present, the report;
    ``with_base``: also the base (:data:`SHIPPED_BASE`) so that copying ``dest`` to a run directory
    resumes the run there (finished seeds are not retrained: their cells are done).
    Nothing is deleted; existing files in ``dest`` are replaced by the run's newer ones."""
    out, dest = Path(out), Path(dest)
    cfg = _config(Paths(out))
    written = []
    for rel, lines in finished_cells(out, cfg).items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text("".join(ln + "\n" for ln in lines), encoding="utf-8")
        written.append(dest / rel)
    for rel in SHIPPED + ("results.json", "results.md"):
        src = out / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest / rel)
            written.append(dest / rel)
    for rel in SHIPPED_BASE if with_base else ():
        src = out / rel
        files = sorted(p for p in src.rglob("*") if p.is_file()) if src.is_dir() else [src]
        for f in files:
            if f.is_file() and "checkpoints" not in f.parts:
                target = dest / f.relative_to(out)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, target)
                written.append(target)
    runs = training_runs(Paths(out), cfg)
    atomic_write_json(
        dest / "training.json", {"runs": runs, "summary": training_summary(runs, cfg)}, indent=1
    )
    written.append(dest / "training.json")
    return written


def finished_cells(out: Path, cfg) -> dict[str, list[str]]:
    """The finished drafters' cell lines of ``out/eval``, per cell file relative to ``out``: a line is kept
    when every cell of its drafter (the base, or one arm of one seed) is in that file, so a shipped folder
    never holds half a drafter; an arm still being evaluated is left out and evaluated again on resumption."""
    drafter_of = {c.key: c.drafter for c in eval_plan(cfg, _t_s(Paths(out)))}
    keep = {}
    for path in sorted((out / "eval").glob("cells*.jsonl")):
        shard = path.stem[len("cells") :]
        if not (shard == "" or (shard.startswith("-s") and shard[2:].isdigit())):
            raise ValueError(
                f"{path}: not a cell file of the paper-regime run (cells.jsonl or cells-s<seed>.jsonl)"
            )
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        keys = [json.loads(ln)["key"] for ln in lines]
        unplanned = sorted(set(keys) - set(drafter_of))
        if unplanned:
            raise ValueError(
                f"{path}: cells {unplanned[:3]} are not in the paper-regime evaluation plan"
            )
        whole = {
            d
            for d in set(drafter_of.values())
            if all(k in keys for k, dd in drafter_of.items() if dd == d)
        }
        mine = [ln for ln, k in zip(lines, keys) if drafter_of[k] in whole]
        if mine:
            keep[str(path.relative_to(out))] = mine
    return keep


def rebuild(shipped: str | Path) -> dict:
    """Recompute ``results.json`` / ``results.md`` in a shipped folder from its cells and summaries only."""
    paths = Paths(Path(shipped))
    lr = float(_read(paths.calibration)["chosen_lr"])
    plan = make_plan(_config(paths), paths.out, _t_s(paths), lr)
    timings = _read(paths.out / "timings.json") if (paths.out / "timings.json").is_file() else {}
    files = _read(paths.prompt_sets)["_files"]
    return write_report(plan, read_all_cells(paths.out), timings, files)


def _read(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def _config(paths: Paths) -> PaperRegimeConfig:
    """The run's configuration, with a lambda measured at calibration (``authors_regime``) filled in."""
    cfg = config_from_json(_read(paths.config))
    measured = _read(paths.calibration).get("strength") if paths.calibration.is_file() else None
    return replace(cfg, strength_lam=measured["lambda"]) if measured else cfg


def _t_s(paths: Paths) -> float:
    return float(_read(paths.scoring_temperature)["T_s"])
