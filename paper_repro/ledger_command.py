"""``exitlaw ledger``: the claims ledger (Markdown + JSON) from figure data and the mini-scale run."""

from __future__ import annotations

import argparse
from pathlib import Path

NEEDED = ("verifier_equivalence", "budget_sweep", "verifier_latency", "exittrain_ablation", "sampled_exactness")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ledger", help="claims ledger: paper's numbers vs exitlaw's, with a status per claim",
                       description="Reads FIGURES/NAME.json written by `exitlaw figures` (computing and drawing any "
                                   "missing one first) and, with --mini, the mini run's results.json.")
    p.add_argument("--out", default="runs/ledger", help="directory for ledger.md and ledger.json (default: runs/ledger)")
    p.add_argument("--figures", default="runs/figures", help="figure data directory (default: runs/figures)")
    p.add_argument("--mini", default=None, help="an `exitlaw repro mini --out DIR` run directory")
    p.add_argument("--latency-json", default=None, help="verifier-bench / gpu_check JSON for the latency claim")
    p.add_argument("--quick", action="store_true", help="quick sizes for figure data computed here")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--overwrite", action="store_true", help="replace an existing ledger")
    p.set_defaults(func=_ledger)


def gather_inputs(figures_dir: str | Path, *, mini_dir: str | Path | None = None, latency_json=None,
                  quick: bool = False, seed: int = 0) -> tuple[dict, dict]:
    """``(inputs, provenance)``: figure data (computed and saved when missing) and the mini results."""
    from exitlaw.figures.registry import make
    from exitlaw.figures.style import read_data

    figures_dir = Path(figures_dir)
    inputs, prov = {}, {}
    for name in NEEDED:
        path = figures_dir / f"{name}.json"
        if not path.is_file():
            make(name, figures_dir, seed=seed, quick=quick, mini_dir=mini_dir, latency_json=latency_json)
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
    """Gather the inputs, build the rows (``extra_rows`` first), write ledger.md/json and print the table."""
    from .ledger import build_ledger, format_markdown, write_ledger

    inputs, prov = gather_inputs(figures_dir, mini_dir=mini_dir, latency_json=latency_json, quick=quick, seed=seed)
    prov.update(extra_provenance or {})
    rows = list(extra_rows) + build_ledger(inputs)
    md, js = write_ledger(rows, out_dir, prov, overwrite=overwrite)
    print(format_markdown(rows, prov))
    print(f"ledger: {md} and {js}")
    return rows, md, js


def _ledger(args: argparse.Namespace) -> int:
    make_ledger(args.figures, args.out, mini_dir=args.mini, latency_json=args.latency_json, quick=args.quick,
                seed=args.seed, overwrite=args.overwrite)
    return 0
