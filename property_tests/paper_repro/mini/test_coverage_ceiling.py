"""The oracle ceiling 1 + C*_p(B) of a causal LM: the top-B prefixes of its own law (docs/design.md §1.5),
checked against brute force over every prefix on a 3-token model; contexts and bad input."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from exitlaw.paper_repro.mini.coverage_ceiling import ModelRows, ceiling, sampled_contexts

V = 3


class HashModel:
    """A causal 'LM' over 3 tokens whose next-token logits are a fixed function of the whole sequence."""

    def __call__(self, input_ids):
        seq = tuple(int(x) for x in input_ids[0])
        rng = np.random.default_rng(abs(hash(seq)) % (2**32))
        logits = torch.tensor(rng.normal(0, 2.0, V))[None, None, :].repeat(1, len(seq), 1)
        return SimpleNamespace(logits=logits)


def _brute_force(model, context, temperature, budget):
    """The sum of the ``budget`` largest P(prefix) over every prefix up to depth ``budget``."""
    rows = ModelRows(model, context, temperature)
    probs = []
    for d in range(1, budget + 1):
        for prefix in itertools.product(range(V), repeat=d):
            p = 1.0
            for i in range(d):
                p *= rows(prefix[:i])[prefix[i]]
            probs.append(p)
    return 1.0 + float(np.sum(sorted(probs, reverse=True)[:budget]))


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("budget", [1, 3, 5])
def test_the_ceiling_is_the_top_budget_prefixes_by_brute_force(temperature, budget):
    model = HashModel()
    for context in ([0], [1, 2], [2, 2, 0]):
        got = ceiling(model, [context], temperature=temperature, budget=budget)
        assert got["per_context"][0] == pytest.approx(
            _brute_force(model, context, temperature, budget), rel=1e-12
        )
        assert 1.0 < got["mean_ceiling"] <= 1.0 + budget


def test_rows_are_laws_memoised_per_prefix_and_a_zero_temperature_is_refused():
    model = HashModel()
    rows = ModelRows(model, [1], 1.0)
    p = rows((0, 2))
    assert p.sum() == pytest.approx(1.0) and rows.calls == 1
    rows((0, 2))
    assert rows.calls == 1
    with pytest.raises(ValueError, match="temperature must be > 0"):
        ModelRows(model, [1], 0.0)


def test_contexts_are_the_prompt_then_seeded_samples_cut_where_asked():
    model = HashModel()
    a = sampled_contexts(
        model, [[0], [1, 1]], temperature=1.0, new_tokens=6, cuts=(0, 3, 6), seed=5
    )
    b = sampled_contexts(
        model, [[0], [1, 1]], temperature=1.0, new_tokens=6, cuts=(0, 3, 6), seed=5
    )
    assert a == b and [len(c) for c in a] == [1, 4, 7, 2, 5, 8]
    assert a[2][:4] == a[1] and a[0] == [0] and a[3] == [1, 1]
    with pytest.raises(ValueError, match="cuts"):
        sampled_contexts(model, [[0]], temperature=1.0, new_tokens=4, cuts=(5,), seed=0)


def test_the_shipped_ceiling_is_consistent_with_its_contexts():
    path = (
        Path(__file__).resolve().parents[3]
        / "paper_repro/results/coverage_ceiling/coverage_ceiling.json"
    )
    res = json.loads(path.read_text(encoding="utf-8"))
    for t, r in res["by_temperature"].items():
        vals = np.asarray(r["per_context"])
        assert r["contexts"] == len(vals) == res["prompts"] * len(res["cuts"])
        assert r["mean_ceiling"] == pytest.approx(vals.mean()) and r["max_ceiling"] == vals.max()
        assert np.all((vals >= 1.0) & (vals <= 1.0 + r["budget"]))
