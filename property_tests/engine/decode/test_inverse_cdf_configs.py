"""The engine's inverse-CDF draws against an independent float64 inverse CDF of the processed row, over every
sampling configuration :class:`~exitlaw.theory.SamplingSettings` accepts.

Every categorical draw of the device verifiers is one uniform per row through
:func:`~exitlaw.engine.decode.verifiers.draws._draw_rows` (``c = cumsum(w)``, the first ``i`` with
``c[i] > u c[-1]``): predraw's ``R_v`` (:func:`~exitlaw.engine.decode.verifiers.predraw_rows` on rows the
dispatcher processed with :func:`~exitlaw.engine.decode.sampling_settings.filter_logits`), and the
residual/TEV bonus (:func:`~exitlaw.engine.decode.verifiers.draws._draw_logits`). With the uniform ``u`` fed in,
the token drawn must be the reference's: the processed row computed here from the settings' text
(temperature, then top-k / top-p / min-p in ``settings.order``, ties kept) in float64, and its inverse
CDF with left-closed intervals ``[C_{i-1}, C_i)``. Configurations: every order, each filter on or off,
temperatures 1e-3..4, every floating logit dtype, rows with ties, ``-inf`` entries, a single survivor;
``u`` at 0, just below 1, exactly 1 (a source over ``(0, 1]``: the last survivor), on every CDF step
and in between. A row drawn alone and the same row among
others in one batched call give the same token for the same ``u``.

Where float64 rounding can decide (``u`` within 1e-9 of a step, or a filter threshold within 1e-9 of a
value) the draw must be one of the two adjacent positive-weight tokens; on rows whose steps are exact
(``2^m`` tied survivors, ``u = j / 2^m``) the left-closed convention is checked exactly.
"""

from __future__ import annotations

import ast
import itertools
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from exitlaw.engine.decode.sampling_settings import filter_logits
from exitlaw.engine.decode.verifiers import predraw_rows
from exitlaw.engine.decode.verifiers.draws import _draw_logits
from exitlaw.theory.sampling_settings import FILTERS, SamplingSettings

BELOW_ONE = float(np.nextafter(1.0, 0.0))
DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
TOL = 1e-9  # float64 rounding margin around a CDF step or a filter threshold


@contextmanager
def _uniforms(us):
    """``torch.rand`` returns ``us`` (float64, one per row) for the draws inside the block."""
    values = torch.tensor(us, dtype=torch.float64)

    def rand(*size, **kw):
        n = size[0] if size and isinstance(size[0], int) else size[0][0]
        assert n == len(us), f"the draw asked for {n} uniforms, the test feeds {len(us)}"
        return values.reshape(n, *([1] if len(size) > 1 else []))

    with mock.patch.object(torch, "rand", rand):
        yield


# ----------------------------------------------------------------- the reference (the settings' text)
def _top_k(live, k, total):
    kth = np.sort(live)[::-1][min(k, live.size) - 1]
    return live >= kth, np.zeros(live.size, bool)


def _top_p(live, t, total):
    above = np.array([live[live > x].sum() for x in live])  # mass strictly above each entry
    return above < t * total, np.abs(above - t * total) <= TOL * total


def _min_p(live, m, total):
    bar = m * live.max()
    return live >= bar, (np.abs(live - bar) <= TOL * live.max()) & (live > 0)


REFERENCE_RULES = {"top_k": _top_k, "top_p": _top_p, "min_p": _min_p}
OFF = {"top_k": (None,), "top_p": (None, 1.0), "min_p": (None, 0.0)}


def reference_row(z: np.ndarray, s: SamplingSettings) -> tuple[np.ndarray, bool]:
    """The processed row (float64 probabilities) and whether a filter decision sat within rounding."""
    e = np.exp((z - z.max()) / s.temperature)
    keep, ambiguous = e > 0, False
    for name in s.order:
        value = getattr(s, name)
        if value in OFF[name]:
            continue
        live = np.where(keep, e, 0.0)
        kept, near = REFERENCE_RULES[name](live, value, live.sum())
        if (
            name == "top_k"
        ):  # logits a float64 exp cannot tell apart (e.g. 0 and 1e-311) tie here only
            by_logit, _ = _top_k(np.where(keep, z, -np.inf), value, None)
            near = near | (by_logit != kept)
        ambiguous |= bool((near & keep).any())
        keep &= kept
    p = np.where(keep, e, 0.0)
    return p / p.sum(), ambiguous


def reference_draws(p: np.ndarray, u: float) -> set[int]:
    """The token(s) the inverse CDF gives at ``u``: the first ``i`` with ``C_i > u`` among positive
    weights; both neighbours of a step within :data:`TOL` of ``u``."""
    c = np.cumsum(p)
    lo = np.concatenate([[0.0], c[:-1]])
    pos = np.flatnonzero(p > 0)
    exact = [i for i in pos if lo[i] <= u < c[i]] or [int(pos[-1])]  # u past C_last by rounding
    near = [i for i in pos if lo[i] - TOL <= u < c[i] + TOL]
    return set(exact) if not near or near == exact else set(near) | set(exact)


# ----------------------------------------------------------------- the engine's draws at given uniforms
def engine_draws(row: torch.Tensor, s: SamplingSettings, us: list[float]) -> list[list[int]]:
    """For each ``u``: predraw of the row alone, predraw of the row among copies in one batched call, and
    the bonus draw ``_draw_logits`` (TEV's float64 ``z / T``)."""
    processed = filter_logits(row[None], s)  # what dispatch hands predraw (every row processed)
    out = []
    with _uniforms(us):
        batched = predraw_rows(processed.expand(len(us), -1), s.temperature, torch.Generator())[0]
    for r, u in enumerate(us):
        with _uniforms([u]):
            alone, ok = predraw_rows(processed, s.temperature, torch.Generator())
        assert bool(ok.all())
        z = processed[0].to(torch.float64) * (1.0 / s.temperature)
        with _uniforms([u]):
            bonus, total = _draw_logits(z, torch.Generator())
        assert float(total) >= 1.0
        out.append([int(alone[0]), int(batched[r]), int(bonus)])
    return out


# ----------------------------------------------------------------- strategies
FILTER_VALUES = {
    "top_k": st.one_of(st.none(), st.integers(1, 14)),
    "top_p": st.one_of(st.none(), st.just(1.0), st.floats(0.02, 1.0)),
    "min_p": st.one_of(st.none(), st.just(0.0), st.floats(0.0, 0.95, exclude_max=True)),
}


@st.composite
def configurations(draw):
    s = SamplingSettings(
        draw(
            st.one_of(st.sampled_from([1.0, 0.5, 2.0]), st.floats(0.05, 4.0), st.floats(1e-3, 0.05))
        ),
        **{f: draw(FILTER_VALUES[f]) for f in FILTERS},
        order=draw(st.permutations(FILTERS)),
    )
    vocab = draw(st.integers(1, 12))
    # logits from a small grid (ties) or any float, some -inf, never all
    cell = st.one_of(
        st.sampled_from([0.0, 1.0, -1.0, 2.5]), st.floats(-6, 6), st.just(float("-inf"))
    )
    z = draw(st.lists(cell, min_size=vocab, max_size=vocab))
    z[draw(st.integers(0, vocab - 1))] = draw(st.floats(-6, 6))
    dtype = draw(st.sampled_from(DTYPES))
    return (
        s,
        torch.tensor(z, dtype=torch.float64).to(dtype),
        draw(st.lists(st.floats(0, 1, exclude_max=True), max_size=4)),
    )


@settings(max_examples=200, deadline=None)
@given(config=configurations())
@example(  # found by CI: top-k = 1 keeps the larger logit; float64 probabilities round the two to a tie
    config=(
        SamplingSettings(1.0, top_k=1, order=("top_k", "top_p", "min_p")),
        torch.tensor([0.0, 2.2251e-311], dtype=torch.float64),
        [],
    )
)
def test_every_draw_is_the_reference_inverse_cdf_of_the_processed_row(config):
    s, row, extra = config
    p, ambiguous = reference_row(row.double().numpy(), s)
    c = np.cumsum(p)
    # 1.0: a source whose range is (0, 1] (u * total = total), which must fall back to the last survivor
    us = [0.0, BELOW_ONE, 1.0, *extra, *[float(x) for x in c[:-1] if 0 <= x < 1]]
    for u, got in zip(us, engine_draws(row, s, us), strict=True):
        alone, batched, bonus = got
        assert alone == batched == bonus, f"u={u}: alone {alone}, batched {batched}, bonus {bonus}"
        assert p[alone] > 0 or ambiguous, f"u={u} drew token {alone} of probability 0 under {s}"
        if not ambiguous:
            want = reference_draws(p, u)
            assert alone in want, f"u={u}: drew {alone}, the inverse CDF gives {want} of {p} ({s})"


@pytest.mark.parametrize("survivors", [1, 2, 4, 8])
@pytest.mark.parametrize("order", list(itertools.permutations(FILTERS)), ids="-".join)
def test_exact_steps_are_left_closed_and_a_single_survivor_always_wins(survivors, order):
    """``2^m`` tied maxima among lower logits removed by top-k (ties kept) and min-p: the weights are
    exactly 1 and 0, so ``u = j / 2^m`` lies exactly on a step and must draw the ``(j+1)``-th survivor."""
    vocab = 11
    rng = np.random.default_rng(survivors)
    places = np.sort(rng.choice(vocab, survivors, replace=False))
    z = np.full(vocab, -3.0)
    z[rng.integers(vocab)] = float("-inf")
    z[places] = 1.5
    s = SamplingSettings(0.7, top_k=survivors, min_p=0.5, top_p=0.999, order=order)
    p, ambiguous = reference_row(z, s)
    assert not ambiguous and np.flatnonzero(p).tolist() == places.tolist()
    us = [j / survivors for j in range(survivors)] + [BELOW_ONE, 1.0]
    want = [int(places[j]) for j in range(survivors)] + [int(places[-1])] * 2
    got = engine_draws(torch.tensor(z, dtype=torch.float32), s, us)
    assert [g[0] for g in got] == want and all(len(set(g)) == 1 for g in got), (us, got, want)


def test_rows_of_a_batched_draw_each_take_their_own_uniform():
    """Different rows in one call: row ``r`` is drawn by ``u_r`` alone (the batched inverse CDF does not
    mix rows), checked against the reference of each row."""
    g = torch.Generator().manual_seed(0)
    rows = torch.randn(6, 9, generator=g)
    rows[2, 3:] = float("-inf")  # a short row
    rows[4] = 0.0  # all tied
    s = SamplingSettings(0.8, top_p=0.9, min_p=0.05)
    us = [0.0, 0.3, BELOW_ONE, 0.5, 0.77, 0.999]
    with _uniforms(us):
        got = predraw_rows(filter_logits(rows, s), s.temperature, torch.Generator())[0].tolist()
    for r, (u, i) in enumerate(zip(us, got)):
        p, _ = reference_row(rows[r].double().numpy(), s)
        assert i in reference_draws(p, u), (r, u, i)


# ----------------------------------------------------------------- coverage
ROOT = Path(__file__).resolve().parents[3]
# each engine function that calls the inverse-CDF primitive, and the test that drives it at given uniforms
HERE = "property_tests/engine/decode/test_inverse_cdf_configs.py"
DRIVEN = {
    "_draw_with_total": f"{HERE}::test_every_draw_is_the_reference_inverse_cdf_of_the_processed_row",
    "predraw_rows": f"{HERE}::test_every_draw_is_the_reference_inverse_cdf_of_the_processed_row",
}


def test_every_filter_and_every_inverse_cdf_call_site_has_a_twin_case():
    """Coverage: a filter :class:`SamplingSettings` accepts without a value strategy and a reference rule
    here fails, as does an engine function calling ``_draw_rows`` that no twin test drives."""
    assert set(FILTER_VALUES) == set(REFERENCE_RULES) == set(OFF) == set(FILTERS)
    callers = set()
    for path in sorted((ROOT / "engine").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for fn in ast.walk(ast.parse(source)):
            if isinstance(fn, ast.FunctionDef) and fn.name != "_draw_rows":
                calls = {
                    n.func.id
                    for n in ast.walk(fn)
                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                }
                if "_draw_rows" in calls:
                    callers.add(fn.name)
    assert callers == set(DRIVEN), (
        f"inverse-CDF callers without a twin test: {callers ^ set(DRIVEN)}"
    )
    for test in DRIVEN.values():
        file, name = test.split("::")
        assert f"def {name}(" in (ROOT / file).read_text(encoding="utf-8"), f"{test} does not exist"
