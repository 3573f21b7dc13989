"""Every batched verifier equals its single-tree twin row by row, over every configuration the batched
dispatcher accepts: every registered verifier with a batched form, ragged batches (different sizes and
depths per row, padding slots), temperatures including 0, every sampling setting and order, every
floating logit dtype.

The batched and single forms draw the same *law*, but a row's draws depend on the batch it sits in (row
``b`` takes the ``b``-th uniform of a call), so they are compared under a coupling: the same uniforms
reach the same row. :data:`COUPLINGS` says, per verifier, how its uniforms are laid out:

* ``"node"``: one uniform per tree node per call (predraw's ``R_v``): the batched call's flattened row
  ``b N + v`` and row ``b``'s single call's row ``v`` get the same value;
* ``"tree"``: one uniform per tree per call and stream;
* ``"rows"``: each row on its own seeded streams (:class:`RowGenerators`), drawing exactly what its
  single twin draws on the same streams (TEV: one exponential per real node for the exit's race, one
  uniform for the bonus), so a row decodes alike alone or in any batch;
* ``"sequential"``: the batched form is the single one row after row on one generator (residual): the
  same seeded generators, consumed in row order, give the same results;
* ``None``: no randomness (greedy).

The uniforms themselves come from a seeded generator with edge values (0, the largest double below 1)
mixed in, so the accepted path and the bonus token must agree exactly. A coverage test derives the
verifier list from the registry and fails when a batched verifier has no coupling (so no twin case).
"""

from __future__ import annotations

from contextlib import contextmanager
from unittest import mock

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from exitlaw.engine.decode.batch_tree import to_batch_tree
from exitlaw.engine.decode.device_tree import to_device_tree
from exitlaw.engine.decode.dispatch import DISPATCH, verify, verify_batch
from exitlaw.engine.decode.verifiers import RowGenerators, VerifierGenerators, engine_names
from exitlaw.simulate.strategies import draft_trees
from exitlaw.theory.registry import verifier
from exitlaw.theory.sampling_settings import FILTERS, MIN_TEMPERATURE, SamplingSettings

VOCAB = 7
BELOW_ONE = float(np.nextafter(1.0, 0.0))
DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
# how each batched verifier's uniforms line up with its single twin's (see the module docstring)
COUPLINGS = {"greedy": None, "predraw": "node", "tev": "rows", "residual": "sequential"}
BATCHED = engine_names(batched=True)  # from the engine's table, never a literal


class _Tape:
    """Stands in for ``torch.rand`` on the verifier streams: uniform ``(stream, call, tree, node)`` is a
    fixed function of those four, so a batched call and a single call read the same values per row."""

    def __init__(self, seed: int, gens: VerifierGenerators, layout: str):
        self.seed, self.layout = seed, layout
        self.streams = {id(gens.acceptance): 0, id(gens.bonus): 1}

    def value(self, stream: int, call: int, b: int, v: int) -> float:
        edge = (stream + call + 3 * b + v + self.seed) % 11
        if edge == 0:
            return 0.0
        if edge == 1:
            return BELOW_ONE
        return float(np.random.default_rng([self.seed, stream, call, b, v]).random())

    @contextmanager
    def feed(self, *, row: int | None = None, width: int | None = None):
        """``row``: a single call for tree ``row``; ``width``: a batched call over ``N = width`` slots."""
        calls = [0, 0]

        def rand(*size, generator=None, dtype=None, device=None):
            stream = self.streams[id(generator)]
            n = size[0]
            k = calls[stream]
            calls[stream] += 1
            if row is not None:
                at = [(row, v if self.layout == "node" else 0) for v in range(n)]
            elif self.layout == "node":
                at = [divmod(r, width) for r in range(n)]
            else:
                at = [(r, 0) for r in range(n)]
            out = torch.tensor([self.value(stream, k, b, v) for b, v in at], dtype=torch.float64)
            return out.reshape(size)

        with mock.patch.object(torch, "rand", rand):
            yield


@st.composite
def sampling(draw):
    return SamplingSettings(
        draw(
            st.one_of(
                st.just(0.0), st.sampled_from([1.0, 0.6]), st.floats(0.1, 3.0), st.floats(1e-3, 0.1)
            )
        ),
        top_k=draw(st.one_of(st.none(), st.integers(1, VOCAB + 1))),
        top_p=draw(st.one_of(st.none(), st.floats(0.05, 1.0))),
        min_p=draw(st.one_of(st.none(), st.floats(0.0, 0.9))),
        order=draw(st.permutations(FILTERS)),
    )


@st.composite
def batches(draw):
    """A ragged batch of trees (1..4 rows, 1..10 nodes each, depths up to 4) and ``[B, N, V]`` logits
    whose rows often favour a child token (deep walks), with ties and padding rows of any finite value."""
    trees = draw(
        st.lists(draft_trees(max_nodes=10, max_depth=4, vocab_size=VOCAB), min_size=1, max_size=4)
    )
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    width = max(t.num_nodes for t in trees)
    z = rng.normal(0.0, 1.5, size=(len(trees), width, VOCAB))
    z[rng.random(z.shape) < 0.15] = 0.5  # ties
    for b, tree in enumerate(trees):
        for v in range(tree.num_nodes):
            kids = tree.children[v]
            if kids.size and rng.random() < 0.7:
                z[b, v, int(tree.token[rng.choice(kids)])] += 3.0
    return trees, torch.tensor(z).to(draw(st.sampled_from(DTYPES))), seed


def _single_results(kind, trees, logits, s, seed, coupling):
    if coupling == "rows":
        return [
            verify(
                kind, to_device_tree(t), logits[b, : t.num_nodes], s, VerifierGenerators(seed + b)
            )
            for b, t in enumerate(trees)
        ]
    gens = VerifierGenerators(seed)
    tape = _Tape(seed, gens, coupling) if coupling in ("node", "tree") else None
    out = []
    for b, tree in enumerate(trees):
        rows = logits[b, : tree.num_nodes]
        if tape is None:
            out.append(verify(kind, to_device_tree(tree), rows, s, gens))
        else:
            with tape.feed(row=b):
                out.append(verify(kind, to_device_tree(tree), rows, s, gens))
    return out


def _batched_results(kind, trees, logits, s, seed, coupling):
    gens = VerifierGenerators(seed)
    bt = to_batch_tree(trees)
    if coupling == "rows":
        rows = RowGenerators([VerifierGenerators(seed + b) for b in range(len(trees))])
        return verify_batch(kind, bt, logits, s, rows)
    if coupling in ("node", "tree"):
        with _Tape(seed, gens, coupling).feed(width=bt.width):
            return verify_batch(kind, bt, logits, s, gens)
    return verify_batch(kind, bt, logits, s, gens)


@pytest.mark.parametrize("kind", BATCHED)
@settings(max_examples=40, deadline=None)
@given(batch=batches(), s=sampling())
def test_every_batched_verifier_equals_its_single_twin_row_by_row_under_every_setting(
    kind, batch, s
):
    trees, logits, seed = batch
    coupling = COUPLINGS[
        kind
    ]  # KeyError: a batched verifier without a coupling (see the coverage test)
    want = _single_results(kind, trees, logits, s, seed, coupling)
    got = _batched_results(kind, trees, logits, s, seed, coupling)
    assert len(got) == len(trees)
    for b, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g == w, f"{kind} row {b} under {s} ({logits.dtype}): batched {g}, single {w}"
        assert 0 <= g.exit_node < trees[b].num_nodes and g.path_nodes[-1] == g.exit_node


@pytest.mark.parametrize("kind", BATCHED)
@settings(max_examples=40, deadline=None)
@given(batch=batches(), s=sampling())
def test_with_row_streams_every_row_equals_its_single_twin_on_its_own_seed(kind, batch, s):
    """Continuous batching's streams (:class:`RowGenerators`): row ``b`` of a ragged batch, verified with
    its own seeded streams, equals the single-tree verifier on a fresh generator of that seed -- no
    coupling: the row draws exactly what its twin draws (predraw one uniform per real node, none
    for padding slots), and then the same again on the next call."""
    trees, logits, seed = batch
    seeds = [seed + 7919 * b for b in range(len(trees))]
    rows = RowGenerators([VerifierGenerators(x) for x in seeds])
    bt = to_batch_tree(trees)
    alone = [VerifierGenerators(x) for x in seeds]
    for call in range(2):  # the second call checks that each row's streams advanced as its twin's
        got = verify_batch(kind, bt, logits, s, rows)
        for b, tree in enumerate(trees):
            want = verify(kind, to_device_tree(tree), logits[b, : tree.num_nodes], s, alone[b])
            assert got[b] == want, (
                f"{kind} call {call} row {b} under {s}: batched {got[b]}, single {want}"
            )


@pytest.mark.parametrize("kind", BATCHED)
def test_padding_rows_do_not_change_any_row(kind):
    """The same trees with other finite values in the padding slots give the same results."""
    trees = _fixed_trees()
    bt = to_batch_tree(trees)
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(len(trees), bt.width, VOCAB, generator=g)
    other = logits.clone()
    for b, t in enumerate(trees):
        other[b, t.num_nodes :] = 40.0 * torch.randn(bt.width - t.num_nodes, VOCAB, generator=g)
    s = SamplingSettings(0.9, top_p=0.8)
    coupling = COUPLINGS[kind]
    assert _batched_results(kind, trees, logits, s, 3, coupling) == _batched_results(
        kind, trees, other, s, 3, coupling
    )


def _fixed_trees():
    from exitlaw.theory import DraftTree

    return [
        DraftTree(parent=[-1], token=[2]),
        DraftTree(parent=[-1, 0, 0, 1, 3, 3], token=[1, 4, 5, 0, 2, 6]),
        DraftTree(parent=[-1, 0, 1], token=[3, 3, 3]),
    ]


def test_every_batched_verifier_of_the_registry_has_a_coupling_and_a_dispatch_entry():
    """Coverage: the registry's batched verifiers, the dispatch table's batched forms and the couplings
    here name the same verifiers (a new batched verifier without a twin case fails)."""
    with_batched = {name for name, e in DISPATCH.items() if e.batched is not None}
    assert set(BATCHED) == with_batched, (set(BATCHED), with_batched)
    assert set(COUPLINGS) == set(BATCHED), (
        f"batched verifiers without a coupling: {set(BATCHED) - set(COUPLINGS)}"
    )
    for name in (
        BATCHED
    ):  # a sequential verifier is batched row by row: only the "sequential" coupling fits
        assert (COUPLINGS[name] == "sequential") == verifier(name).sequential, name
        assert (COUPLINGS[name] is None) == verifier(name).greedy_only, name


@st.composite
def floor_batches(draw):
    """Trees and ``[B, N, V]`` logits of magnitude up to ``1e3`` with a clear argmax per row (gaps that
    are exact in the dtype; the argmax often a child's token, so walks go deep), some ``-inf`` entries."""
    trees = draw(
        st.lists(draft_trees(max_nodes=8, max_depth=4, vocab_size=VOCAB), min_size=1, max_size=3)
    )
    dtype = draw(st.sampled_from(DTYPES))
    coarse = dtype in (torch.bfloat16, torch.float16)  # multiples of 8 up to 2048 are exact in both
    base = 8.0 * draw(st.integers(-125, 125)) if coarse else draw(st.floats(-1e3, 1e3))
    step = 8.0 if coarse else draw(st.floats(1e-3, 10.0))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    width = max(t.num_nodes for t in trees)
    z = np.empty((len(trees), width, VOCAB))
    for b in range(len(trees)):
        for v in range(width):
            rank = rng.permutation(VOCAB).astype(float)  # 0 .. V-1, the top one at V-1
            kids = trees[b].children[v] if v < trees[b].num_nodes else np.array([], int)
            if kids.size and rng.random() < 0.7:  # a child's token on top
                top = int(trees[b].token[rng.choice(kids)])
                rank[[top, int(rank.argmax())]] = rank[[int(rank.argmax()), top]]
            z[b, v] = base + step * rank
            z[b, v, rank < 2] = -np.inf if rng.random() < 0.3 else z[b, v, rank < 2]
    return trees, torch.tensor(z).to(dtype)


@settings(max_examples=30, deadline=None)
@given(
    batch=floor_batches(),
    t=st.sampled_from([MIN_TEMPERATURE, float(np.nextafter(MIN_TEMPERATURE, 1.0))]),
    top_k=st.none() | st.integers(1, VOCAB),
    top_p=st.none() | st.floats(0.05, 1.0),
)
def test_every_verifier_runs_at_the_temperature_floor_and_follows_the_clear_argmax(
    batch, t, top_k, top_p
):
    """At ``T = MIN_TEMPERATURE`` (and just above) every engine verifier, single and batched, runs
    without error on logits up to 1e3 in every dtype, and -- every other token's weight being
    ``exp(-gap / T) = 0`` in float64 -- returns exactly the greedy walk's exit, bonus and path."""
    trees, logits = batch
    s = SamplingSettings(t, top_k=top_k, top_p=top_p)
    bt = to_batch_tree(trees)
    greedy = verify_batch("greedy", bt, logits, SamplingSettings(0.0), None)
    for kind, entry in sorted(DISPATCH.items()):
        single = [
            verify(
                kind, to_device_tree(tree), logits[b, : tree.num_nodes], s, VerifierGenerators(b)
            )
            for b, tree in enumerate(trees)
        ]
        assert single == greedy, f"{kind} at T={t!r} ({logits.dtype}): {single} != {greedy}"
        if entry.batched is not None:
            got = verify_batch(kind, bt, logits, s, VerifierGenerators(7))
            assert got == greedy, f"batched {kind} at T={t!r} ({logits.dtype}): {got}"
