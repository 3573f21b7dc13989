"""The figure registry: name -> module with ``compute(seed=, quick=, **inputs) -> data`` and
``draw(data, out_dir, overwrite=) -> [png, pdf]``.

:func:`make` runs one figure end to end and also writes its data as
``NAME.json`` next to the images (the claims ledger reads these files).
Nothing half-written: a figure is drawn into ``OUT/.figures-partial/NAME/`` and moved
into ``OUT`` by :func:`~.style.commit_figure` (``NAME.json`` last, marking it complete).
``inputs`` are passed to ``compute`` as keyword arguments; figures take data
(model directories, result files) and know nothing of how a run lays out its
folders (``exitlaw.paper_repro.figure_inputs`` maps a mini run to inputs).
"""

from __future__ import annotations

import shutil
from importlib import import_module
from pathlib import Path
from types import ModuleType

from exitlaw import __version__
from exitlaw.theory.infra.provenance import git_commit

from .style import check_out, commit_figure, write_data

STAGE = ".figures-partial"

FIGURES: dict[str, str] = {
    "tree_exit": "tree_exit",
    "verifier_equivalence": "verifier_equivalence",
    "budget_sweep": "budget_sweep",
    "verifier_latency": "verifier_latency",
    "exittrain_ablation": "exittrain_ablation",
    "caddtree_throughput": "caddtree_throughput",
    "sampled_exactness": "sampled_exactness",
}


def provenance() -> dict:
    """The exitlaw version and git commit (``-dirty`` with uncommitted changes) the data are made with
    (docs/design.md §1.11: every verdict carries its inputs' provenance)."""
    return {
        "exitlaw_version": __version__,
        "git_commit": git_commit(Path(__file__).resolve().parent),
    }


def figure_module(name: str) -> ModuleType:
    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; figures: {', '.join(FIGURES)}")
    return import_module(f"exitlaw.figures.{FIGURES[name]}")


def make(
    name: str,
    out_dir: str | Path,
    *,
    seed: int = 0,
    quick: bool = False,
    overwrite: bool = False,
    inputs: dict | None = None,
) -> list[Path]:
    """Compute figure ``name`` from its embedded defaults (and optional ``inputs``); write PNG, PDF and JSON."""
    mod = figure_module(name)
    check_out(out_dir, name, overwrite)  # fail before a long computation
    data = mod.compute(seed=seed, quick=quick, **(inputs or {}))
    data["quick"] = quick
    data.setdefault("provenance", provenance())
    stage = Path(out_dir) / STAGE / name
    shutil.rmtree(stage, ignore_errors=True)  # what an interrupted earlier attempt left
    mod.draw(data, stage, overwrite=True)
    write_data(data, stage, name, overwrite=True)
    # still free (another process may have written it meanwhile)
    check_out(out_dir, name, overwrite)
    paths = commit_figure(stage, out_dir, name)
    stage.rmdir()
    try:
        stage.parent.rmdir()
    except OSError:  # another figure is being staged beside it
        pass
    return paths
