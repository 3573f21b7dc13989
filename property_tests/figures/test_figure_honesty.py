"""Figures a reader can trust (docs/design.md §1.11; issue 38): each figure's data JSON names its scale in
its title, defines its symbols, names its pipeline checks, and no labelled floor is beaten.

Every registered figure is made through :func:`exitlaw.figures.registry.make` at small sizes and its
``NAME.json`` read back; the shipped figure data (``paper_repro/results/ledger_inputs``) are read as they
are. The checks are written here, not imported: they do not trust the code they check.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exitlaw.figures import FIGURES
from exitlaw.figures.registry import make
from exitlaw.paper_repro.ledger_inputs import FIGURE_INPUTS, RESULTS

SCALES = ("simulation", "cpu", "mini-scale", "synthetic tree", "exact enumeration")
NOT_EVIDENCE = "not evidence"

SMALL = {
    "verifier_equivalence": dict(vocab=32, budget=12, horizon=4, samples=2000),
    "budget_sweep": dict(budgets=(4, 8), rounds=6, vocab=32),
    "caddtree_throughput": dict(vocab=32, horizon=4, max_budget=40, contexts=2),
    "sampled_exactness": dict(vocab=2, horizon=2),
    "verifier_latency": dict(vocab=2000, trees=1, repeats=3),
    "tree_exit": dict(budget=8, max_new_tokens=4),
    "exittrain_ablation": dict(steps=2),
}


def problems(data: dict) -> list[str]:
    """What a reader could be misled by in one figure's data (empty: nothing)."""
    name, out = data.get("figure", "?"), []
    title = str(data.get("title", ""))
    if not any(w in title.lower() for w in SCALES):
        out.append(f"{name}: title {title!r} names no scale ({', '.join(SCALES)})")
    if not data.get("symbols"):
        out.append(f"{name}: no symbol is defined")
    floors = data.get("floors", {})
    for row in data.get("rows", ()):
        ms = row.get("ms", {})
        for key in ms:
            if "floor" in key and key not in floors:
                out.append(f"{name}: a bar {key!r} is not declared as whose floor it is")
        for key, of in floors.items():
            if key in ms and of in ms and ms[key] > ms[of]:
                out.append(
                    f"{name}: the floor {key!r} ({ms[key]:.3f}) is beaten by {of!r} ({ms[of]:.3f}) "
                    f"at B = {row.get('budget')}"
                )
    for src, s in (data.get("sources") or {}).items():
        if s.get("pipeline_check") and (
            NOT_EVIDENCE not in s.get("label", "") or NOT_EVIDENCE not in title
        ):
            out.append(f"{name}: the pipeline check {src!r} does not say it is not evidence")
    return out


def _mini(tmp_path: Path) -> Path:
    cells = [
        {
            "drafter": d,
            "domain": "code",
            "budget": b,
            "temperature": t,
            "verifier": "tev",
            "tau": 2.0 + i / 10,
            "tau_se": 0.05,
        }
        for i, d in enumerate(("base", "token", "prefix", "exit"))
        for b in (32, 64, 128)
        for t in (0.0, 1.0)
    ]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"config": {"preset": "full"}, "cells": cells}))
    return path


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_figure_json_names_its_scale_and_no_floor_is_beaten(name, tmp_path):
    inputs = dict(SMALL[name])
    if name == "exittrain_ablation":  # a shallow mini run: a pipeline check
        inputs["mini_results"] = _mini(tmp_path)
    make(name, tmp_path / "out", quick=True, inputs=inputs)
    data = json.loads((tmp_path / "out" / f"{name}.json").read_text())
    assert problems(data) == []
    assert data["provenance"]["git_commit"] and data["provenance"]["exitlaw_version"]
    if name == "exittrain_ablation":
        assert data["sources"]["mini"]["pipeline_check"] and NOT_EVIDENCE in data["title"]


@pytest.mark.parametrize("name", FIGURE_INPUTS)
def test_the_shipped_figure_data_name_their_scale_and_no_floor_is_beaten(name):
    data = json.loads((RESULTS / "ledger_inputs" / f"{name}.json").read_text())
    assert problems(data) == []


def test_the_checks_fail_on_a_beaten_floor_a_title_without_scale_and_an_unnamed_check():
    data = json.loads((RESULTS / "ledger_inputs" / "verifier_latency.json").read_text())
    assert data["floors"] == {"floor": "tev"}
    beaten = json.loads(json.dumps(data))
    beaten["rows"][0]["ms"]["floor"] = beaten["rows"][0]["ms"]["tev"] * 2
    assert any("beaten" in p for p in problems(beaten))
    undeclared = {**data, "floors": {}}
    assert any("not declared" in p for p in problems(undeclared))
    assert any("names no scale" in p for p in problems({**data, "title": "Verifier stage"}))
    check = {
        "figure": "x",
        "title": "simulation",
        "symbols": {"tau": "t"},
        "sources": {"mini": {"pipeline_check": True, "label": "mini run"}},
    }
    assert any("not evidence" in p for p in problems(check))


def test_a_title_without_scale_is_refused_when_drawn(tmp_path):
    from exitlaw.figures import verifier_latency

    data = json.loads((RESULTS / "ledger_inputs" / "verifier_latency.json").read_text())
    with pytest.raises(ValueError, match="names no scale"):
        verifier_latency.draw({**data, "title": "Verifier stage"}, tmp_path)
