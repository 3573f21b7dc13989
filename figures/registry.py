"""The figure registry: name -> module with ``compute(seed=, quick=, **inputs) -> data`` and
``draw(data, out_dir, overwrite=) -> [png, pdf]``.

:func:`make` runs one figure end to end and also writes its data as
``NAME.json`` next to the images (the claims ledger reads these files).
``inputs`` are passed to ``compute`` as keyword arguments; figures take data
(model directories, result files) and know nothing of how a run lays out its
folders (``exitlaw.paper_repro.figure_inputs`` maps a mini run to inputs).
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from types import ModuleType

from .style import check_out, write_data

FIGURES: dict[str, str] = {
    "tree_exit": "tree_exit",
    "verifier_equivalence": "verifier_equivalence",
    "budget_sweep": "budget_sweep",
    "verifier_latency": "verifier_latency",
    "exittrain_ablation": "exittrain_ablation",
    "caddtree_throughput": "caddtree_throughput",
    "sampled_exactness": "sampled_exactness",
}


def figure_module(name: str) -> ModuleType:
    if name not in FIGURES:
        raise ValueError(f"unknown figure {name!r}; figures: {', '.join(FIGURES)}")
    return import_module(f"exitlaw.figures.{FIGURES[name]}")


def make(name: str, out_dir: str | Path, *, seed: int = 0, quick: bool = False, overwrite: bool = False,
         inputs: dict | None = None) -> list[Path]:
    """Compute figure ``name`` from its embedded defaults (and optional ``inputs``); write PNG, PDF and JSON."""
    mod = figure_module(name)
    check_out(out_dir, name, overwrite)  # fail before a long computation
    data = mod.compute(seed=seed, quick=quick, **(inputs or {}))
    data["quick"] = quick
    paths = mod.draw(data, out_dir, overwrite=overwrite)
    return paths + [write_data(data, out_dir, name, overwrite=overwrite)]
