"""T = 0 divergences from greedy AR: first difference, greedy's margin there, near-tie or error.

The real case is the H200 run's (paper_repro/results/gpu/): DDTree's token 63 of prompt 10 was an
error (greedy led by 0.97, the emitted token trailed by 4.69), recomputed here on the CPU from the
shipped outputs and the shipped mini target."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from exitlaw.engine.bench.decoding import format_bench, t0_divergences
from exitlaw.engine.bench.exactness import divergence, first_difference, summary
from exitlaw.engine.models.checkpoint import load_target
from exitlaw.theory.sampling_settings import NEAR_TIE_MARGIN

ROOT = Path(__file__).resolve().parents[3]
GPU = ROOT / "paper_repro" / "results" / "gpu"
BASE = ROOT / "paper_repro" / "results" / "paper_regime" / "base"


class FixedTarget:
    """A stand-in target whose next-token log-probabilities after any context are ``logits``."""

    def __init__(self, logits):
        self.logits = torch.tensor(logits, dtype=torch.float32)
        self.contexts = []

    def new_cache(self):
        return None

    def prefill(self, cache, ids, *, all_logits=True):
        self.contexts.append(ids.tolist())
        return SimpleNamespace(logits=self.logits[None])


@given(st.lists(st.integers(0, 3), max_size=6), st.lists(st.integers(0, 3), max_size=6))
def test_first_difference_is_the_first_index_where_the_sequences_part(a, b):
    j = first_difference(a, b)
    if a == b:
        assert j is None
    else:
        assert a[:j] == b[:j] and (j == min(len(a), len(b)) or a[j] != b[j])


def test_a_small_lead_is_a_near_tie_and_a_large_one_an_error():
    tie = FixedTarget([1.0, 1.0 - NEAR_TIE_MARGIN / 2, -5.0])
    d = divergence(tie, [7, 8], [0, 1], [0, 0])
    assert d["kind"] == "near-tie" and d["position"] == 1 and (d["ar_token"], d["token"]) == (0, 1)
    assert d["ar_margin"] == pytest.approx(NEAR_TIE_MARGIN / 2, rel=1e-5)
    assert tie.contexts == [[7, 8, 0]]  # the context, then AR's tokens before the difference
    far = divergence(FixedTarget([3.0, 0.0, -5.0]), [7], [1], [0])
    assert far["kind"] == "error" and far["ar_margin"] == pytest.approx(3.0, rel=1e-5)
    assert far["token_gap"] == pytest.approx(3.0, rel=1e-5)
    assert divergence(tie, [7], [0, 1], [0, 1]) is None
    assert divergence(tie, [7], [0, 1], [0, 1, 2])["kind"] == "length"


def test_the_h200_mismatch_was_an_error_not_a_near_tie():
    runs = json.loads((GPU / "decoding" / "results.json").read_text())["runs"]
    ar = next(r for r in runs if r["method"] == "ar" and r["temperature"] == 0)
    bad = next(
        r
        for r in runs
        if (r["method"], r["verifier"], r["budget"], r["temperature"])
        == ("ddtree", "predraw", 64, 0)
    )
    prompt = [
        json.loads(line)["prompt_ids"] for line in (GPU / "prompts.jsonl").read_text().splitlines()
    ][10]
    target = load_target(BASE / "target")
    d = divergence(target, prompt, bad["outputs"][10]["tokens"], ar["outputs"][10]["tokens"])
    assert d["kind"] == "error" and d["position"] == 63 and (d["ar_token"], d["token"]) == (10, 69)
    assert d["ar_margin"] == pytest.approx(0.97, abs=0.01)
    assert d["token_gap"] == pytest.approx(4.69, abs=0.01)


def test_a_turn_after_a_differing_one_is_only_marked_and_the_table_says_the_kinds():
    def res(tokens):
        return SimpleNamespace(tokens=tokens)

    ar = [[res([0, 0]), res([0, 0])], [res([0])]]
    out = [[res([0, 1]), res([1, 1])], [res([0])]]
    rows = t0_divergences(FixedTarget([1.0, 0.99, -5.0]), out, ar, [[5], [5, 6], [9]])
    assert [(r["prompt"], r["turn"], r["kind"]) for r in rows] == [
        (0, 0, "near-tie"),
        (0, 1, "after an earlier turn"),
    ]
    assert summary(rows) == "1 after an earlier turn, 1 near-tie"
    assert summary([]) == "none"
    assert summary([{"kind": "error"}] * 2) == "2 errors"
    run = {
        "method": "ddtree",
        "verifier": "tev",
        "budget": 32,
        "temperature": 0.0,
        "tau": 2.0,
        "SR": 1.0,
        "tpot_ms": 1.0,
        "stage_ms": {},
        "matches_ar": False,
        "t0_divergences": rows,
    }
    assert "T=0 MISMATCH vs AR (1 after an earlier turn, 1 near-tie)" in format_bench(
        {"runs": [run]}
    )
