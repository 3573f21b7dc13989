"""Gathering the claims ledger's inputs (figure data, the mini run) and writing the ledger."""

from __future__ import annotations

from pathlib import Path

NEEDED = ("verifier_equivalence", "budget_sweep", "verifier_latency", "exittrain_ablation", "sampled_exactness")


def gather_inputs(figures_dir: str | Path, *, mini_dir: str | Path | None = None, latency_json=None,
                  quick: bool = False, seed: int = 0) -> tuple[dict, dict]:
    """``(inputs, provenance)``: figure data (computed and saved when missing) and the mini results."""
    from exitlaw.figures.style import read_data

    from .figure_inputs import make_figure

    figures_dir = Path(figures_dir)
    inputs, prov = {}, {}
    for name in NEEDED:
        path = figures_dir / f"{name}.json"
        if not path.is_file():
            make_figure(name, figures_dir, seed=seed, quick=quick, mini_dir=mini_dir, latency_json=latency_json)
        inputs[name] = read_data(path)
        prov[name] = str(path)
    inputs["mini"] = None
    if mini_dir is not None:
        res = Path(mini_dir) / "results.json"
        inputs["mini"] = read_data(res)
        prov["mini"] = str(res)
    return inputs, prov


def make_ledger(figures_dir, out_dir, *, mini_dir=None, latency_json=None, quick: bool = False, seed: int = 0,
                overwrite: bool = False, extra_rows=(), extra_provenance: dict | None = None):
    """Gather the inputs, build the rows (``extra_rows`` first), write ledger.md/json; return ``(rows, md, js)``."""
    from .ledger import build_ledger, write_ledger

    inputs, prov = gather_inputs(figures_dir, mini_dir=mini_dir, latency_json=latency_json, quick=quick, seed=seed)
    prov.update(extra_provenance or {})
    rows = list(extra_rows) + build_ledger(inputs)
    md, js = write_ledger(rows, out_dir, prov, overwrite=overwrite)
    return rows, md, js
