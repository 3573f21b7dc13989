"""Every categorical draw of the engine at the values its random source can really return at a boundary:
a uniform of exactly 0, one on a cumulative step, the largest double below 1, an exponential of exactly 0
next to a -inf logit. A zero-probability entry never wins, in the single-tree and the batched twins alike;
and the rows of a batch draw independently."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from exitlaw.engine.decode.batch_generate import _sample_rows
from exitlaw.engine.decode.loop import exponential_race, sample_token
from exitlaw.engine.decode.verifiers import draws as bv
from exitlaw.theory.sampling_settings import SamplingSettings

WEIGHTS = (
    [0.0, 0.5, 0.5],
    [0.5, 0.0, 0.5],
    [0.0, 0.0, 1.0],
    [0.25, 0.25, 0.0, 0.5],
    [0.5, 0.5, 0.0],
)
BELOW_ONE = float(np.nextafter(1.0, 0.0))


def _boundary_uniforms(weights) -> list[float]:
    c = np.cumsum(weights)
    return [0.0, BELOW_ONE] + [float(x) for x in c[:-1] / c[-1]]


def test_batched_inverse_cdf_at_boundary_uniforms_never_lands_on_a_zero_weight(monkeypatch):
    for weights in WEIGHTS:
        us = _boundary_uniforms(weights)
        w = torch.tensor([weights] * len(us), dtype=torch.float64)  # one row per boundary uniform
        monkeypatch.setattr(
            torch, "rand", lambda *a, _u=us, **k: torch.tensor(_u, dtype=torch.float64)[:, None]
        )
        idx, total = bv._draw_rows(w, torch.Generator())
        monkeypatch.undo()
        for u, i in zip(us, idx.tolist()):
            assert weights[i] > 0, (weights, u, i)
        assert torch.allclose(total, torch.ones(len(us), dtype=torch.float64))


def test_batched_inverse_cdf_picks_the_entry_whose_interval_holds_the_uniform(monkeypatch):
    weights = [0.25, 0.25, 0.0, 0.5]
    us = [0.0, 0.1, 0.25, 0.49, 0.5, 0.75, BELOW_ONE]
    want = [0, 0, 1, 1, 3, 3, 3]  # c = [.25, .5, .5, 1]: first i with c[i] > u
    w = torch.tensor([weights] * len(us), dtype=torch.float64)
    monkeypatch.setattr(
        torch, "rand", lambda *a, **k: torch.tensor(us, dtype=torch.float64)[:, None]
    )
    idx, _ = bv._draw_rows(w, torch.Generator())
    assert idx.tolist() == want


def _exponentials(values):
    """Stand in for ``Tensor.exponential_``: fills with the given values (row-broadcast)."""

    def fill(self, *a, **k):
        self.copy_(torch.tensor(values, dtype=self.dtype).expand_as(self))
        return self

    return fill


@pytest.mark.parametrize("draw", ["single", "batched", "race"])
def test_an_exponential_of_zero_next_to_a_minus_inf_logit_never_picks_it(monkeypatch, draw):
    logits = torch.tensor([[float("-inf"), 0.0, 1.0], [2.0, float("-inf"), 0.0]])
    for values in ([0.0, 1.0, 1.0], [0.0, 0.0, 0.0], [1.0, 0.0, 2.0]):
        monkeypatch.setattr(torch.Tensor, "exponential_", _exponentials(values))
        if draw == "single":
            got = [sample_token(row, SamplingSettings(1.0), torch.Generator()) for row in logits]
        elif draw == "batched":
            got = _sample_rows(logits, SamplingSettings(0.7), torch.Generator())
        else:
            got = exponential_race(logits, 1.3, torch.Generator()).tolist()
        monkeypatch.undo()
        assert all(torch.isfinite(logits[r, i]) for r, i in enumerate(got)), (values, got)


def test_the_exponential_race_follows_softmax_and_the_rows_of_a_batch_draw_independently():
    """Two identical rows drawn together, 6000 times: each row's marginal is softmax(z / T) and the pair's
    joint law is the product (Pearson chi-square, alpha = 1e-3 per check)."""
    from exitlaw.simulate.stats import pooled_chisquare

    logits = torch.tensor([[0.0, 1.0, -1.0, float("-inf")]] * 2)
    p = torch.softmax(logits[0].double() / 0.8, -1).numpy()
    gen = torch.Generator().manual_seed(11)
    n = 6000
    pairs = np.array([exponential_race(logits, 0.8, gen).tolist() for _ in range(n)])
    assert (pairs != 3).all()
    for r in range(2):
        counts = np.bincount(pairs[:, r], minlength=4)
        assert pooled_chisquare(counts, p).pvalue > 1e-3
    joint = np.zeros((4, 4))
    np.add.at(joint, (pairs[:, 0], pairs[:, 1]), 1)
    assert pooled_chisquare(joint, np.outer(p, p)).pvalue > 1e-3
    assert (pairs[:, 0] != pairs[:, 1]).mean() > 0.3  # not one draw copied into both rows


def test_batched_inverse_cdf_rows_draw_independently():
    from exitlaw.simulate.stats import pooled_chisquare

    w = torch.tensor([[0.2, 0.3, 0.5]] * 2, dtype=torch.float64)
    gen = torch.Generator().manual_seed(5)
    pairs = np.array([bv._draw_rows(w, gen)[0].tolist() for _ in range(6000)])
    p = np.array([0.2, 0.3, 0.5])
    joint = np.zeros((3, 3))
    np.add.at(joint, (pairs[:, 0], pairs[:, 1]), 1)
    assert pooled_chisquare(joint, np.outer(p, p)).pvalue > 1e-3


# ----- every draw site of the codebase has a boundary test -----------------------------------------------
# (file, enclosing function) of every categorical / inverse-CDF / exponential-race primitive in the library,
# and the test that checks it at boundary values. A new draw site fails the enumeration until it is listed
# here with its test (or routed through one of the listed helpers).
DRAW_SITES = {
    (
        "engine/decode/verifiers/draws.py",
        "_draw_rows",
    ): "property_tests/engine/decode/test_draw_boundaries.py::test_batched_inverse_cdf_at_boundary_uniforms_never_lands_on_a_zero_weight",
    (
        "engine/decode/verifiers/tev.py",
        "tev_finish",
    ): "property_tests/engine/decode/test_tev_decision.py::test_the_bonus_at_boundary_uniforms_is_the_reference_inverse_cdf_and_never_a_zero_weight",
    (
        "engine/decode/verifiers/tev.py",
        "draw_noise",
    ): "property_tests/engine/decode/test_tev_decision.py::test_an_exponential_of_zero_at_a_zero_weight_node_neither_wins_nor_reads_as_invalid",
    (
        "engine/decode/verifiers/tev.py",
        "_draw_with_uniform",
    ): "property_tests/engine/decode/test_tev_decision.py::test_the_reference_twin_s_inverse_cdf_at_boundary_uniforms_never_lands_on_a_zero_weight",
    (
        "engine/decode/loop.py",
        "exponential_race",
    ): "property_tests/engine/decode/test_draw_boundaries.py::test_an_exponential_of_zero_next_to_a_minus_inf_logit_never_picks_it",
    (
        "simulate/randomness.py",
        "categorical",
    ): "property_tests/test_planted_bugs.py::test_draws_at_injected_boundary_uniforms_never_land_on_zero_weight",
    (
        "simulate/kit/chain_formats.py",
        "_draw",
    ): "property_tests/engine/decode/test_draw_boundaries.py::test_the_vllm_format_s_inverse_cdf_at_boundary_uniforms_never_lands_on_a_zero_weight",
    (
        "simulate/verifiers/fast.py",
        "_inverse_cdf",
    ): "property_tests/engine/decode/test_draw_boundaries.py::test_fast_samplers_inverse_cdf_at_boundary_uniforms_never_lands_on_a_zero_weight",
}
# primitives whose own contract excludes zero-probability outcomes (not inverse CDFs written here)
LIBRARY_DRAWS = (
    "torch.multinomial",
    "rng.choice",
    ".choice(",
    "jax.random.categorical",
    "rng.gumbel",
    "random.categorical",
)
PRIMITIVES = ("searchsorted(", "exponential_(")


def _sites():
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    found = set()
    for part in ("theory", "simulate", "engine"):
        for path in sorted((root / part).rglob("*.py")):
            if "prove" in path.parts:  # the prover's exact interval stand-in: not a sampler
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for fn in [
                n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]:
                src = ast.get_source_segment(path.read_text(encoding="utf-8"), fn) or ""
                body = "\n".join(line.split("#")[0] for line in src.splitlines()[1:])
                if any(p in body for p in PRIMITIVES):
                    found.add((str(path.relative_to(root)), fn.name))
    return found


def test_every_draw_site_of_the_library_has_a_boundary_test():
    from pathlib import Path

    found = _sites()
    unlisted = sorted(found - set(DRAW_SITES))
    assert not unlisted, (
        f"draw sites without a boundary test (add one and list it in DRAW_SITES): {unlisted}"
    )
    assert set(DRAW_SITES) <= found, (
        f"listed draw sites that no longer exist: {sorted(set(DRAW_SITES) - found)}"
    )
    root = Path(__file__).resolve().parents[3]
    for test in DRAW_SITES.values():
        file, name = test.split("::")
        assert f"def {name}(" in (root / file).read_text(encoding="utf-8"), f"{test} does not exist"


def test_fast_samplers_inverse_cdf_at_boundary_uniforms_never_lands_on_a_zero_weight():
    from exitlaw.simulate.verifiers import fast as fs

    for weights in WEIGHTS:
        cdf = np.cumsum(np.asarray(weights, dtype=np.float64))[None, :]
        us = np.array(_boundary_uniforms(weights))
        got = fs._inverse_cdf(cdf, np.zeros(us.size, dtype=np.int64), us)
        assert all(weights[int(i)] > 0 for i in got), (weights, us, got)


def test_the_vllm_format_s_inverse_cdf_at_boundary_uniforms_never_lands_on_a_zero_weight():
    from exitlaw.simulate.kit.chain_formats import _draw

    for weights in WEIGHTS:
        row = np.asarray(weights, dtype=np.float64)
        for u in _boundary_uniforms(weights):
            assert weights[_draw(row, u)] > 0, (weights, u)
    assert [_draw(np.array([0.25, 0.25, 0.0, 0.5]), u) for u in (0.0, 0.25, 0.5, BELOW_ONE)] == [
        0,
        1,
        3,
        3,
    ]
