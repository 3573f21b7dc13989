"""The figure registry: name -> module with ``compute(seed=, quick=, **inputs) -> data`` and
``draw(data, out_dir, overwrite=) -> [png, pdf]``.

:func:`make` runs one figure end to end and also writes its data as
``NAME.json`` next to the images (the claims ledger reads these files).
``inputs`` optional per figure: ``mini_dir`` (a ``exitlaw repro mini`` run
directory) for ``tree_exit`` and ``exittrain_ablation``; ``latency_json``
(the JSON of ``exitlaw verifier-bench --json`` or ``python -m exitlaw.engine.gpu_check --json``) for
``verifier_latency``.
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


def _inputs(name: str, mini_dir: str | Path | None, latency_json: str | Path | None) -> dict:
    if name == "tree_exit":
        return {"mini_dir": mini_dir}
    if name == "exittrain_ablation":
        if mini_dir is None:
            return {}
        res = Path(mini_dir) / "results.json"
        if not res.is_file():
            raise FileNotFoundError(f"{res} does not exist: finish `exitlaw repro mini --out {mini_dir}` first")
        return {"mini_results": res}
    if name == "verifier_latency":
        return {"source": latency_json}
    return {}


def make(name: str, out_dir: str | Path, *, seed: int = 0, quick: bool = False, overwrite: bool = False,
         mini_dir: str | Path | None = None, latency_json: str | Path | None = None) -> list[Path]:
    """Compute figure ``name`` from its embedded defaults (and optional inputs); write PNG, PDF and JSON."""
    mod = figure_module(name)
    check_out(out_dir, name, overwrite)  # fail before a long computation
    data = mod.compute(seed=seed, quick=quick, **_inputs(name, mini_dir, latency_json))
    data["quick"] = quick
    paths = mod.draw(data, out_dir, overwrite=overwrite)
    return paths + [write_data(data, out_dir, name, overwrite=overwrite)]
