"""Batched device verifiers (the batched forms in exitlaw.engine.decode.verifiers) against their single-tree twins and the block law.

Oracles: the single-tree verifiers of exitlaw.engine.decode.verifiers (TEV's exit law, greedy's
walk) row by row on padded batches of trees of different shapes; and the exact block law
``theory.exact.reference_block_law`` per row. Calibrated Monte Carlo: Pearson chi-square
(simulate.stats.pooled_chisquare, cells with expected count < 5 pooled) of each row's
(exit, bonus) counts and of its exit counts; the false-failure rate of a whole test is at
most ``ALPHA`` (Bonferroni over rows and the two statistics), and a draw in a cell of
exact probability zero fails outright.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode

import exitlaw.engine.decode.verifiers.greedy as greedy_verifier
from exitlaw.engine.builders.single import build_ddtree
from exitlaw.engine.decode.batch_tree import to_batch_tree
from exitlaw.engine.decode.device_tree import to_device_tree
from exitlaw.engine.decode.dispatch import verify_batch
from exitlaw.engine.decode.verifiers import VerifierGenerators, verify_greedy
from exitlaw.engine.decode.verifiers.tev import _tev_exit_law, batch_exit_law, tev_plan
from exitlaw.simulate.stats import pooled_chisquare
from exitlaw.theory import (
    DistributionError,
    DraftTree,
    reference_block_law,
    reference_law,
    to_fractions,
)
from exitlaw.theory.sampling_settings import HF_ORDER, SamplingSettings, process_logits

ALPHA = 1e-6
VOCAB = 6


def _trees(seed: int, shapes=((1, 1), (9, 4), (5, 2), (0, 0), (12, 5))) -> list[DraftTree]:
    """DDTree trees of mixed budgets and depths (``(0, 0)``: the root-only tree), V = 6."""
    rng = np.random.default_rng(seed)
    out = []
    for budget, depth in shapes:
        root = int(rng.integers(VOCAB))
        if budget == 0:
            out.append(DraftTree.chain([], root_token=root))
            continue
        draft = torch.log_softmax(torch.tensor(rng.normal(0, 1.5, size=(depth, VOCAB))), -1)
        out.append(build_ddtree(draft, budget, root_token=root)[0])
    return out


def _logits(seed: int, bsz: int, width: int, zero_frac: float = 0.2) -> torch.Tensor:
    """``[B, N, V]`` rows that differ per node, ~``zero_frac`` of entries ``-inf``, never a whole row."""
    rng = np.random.default_rng(seed + 100)
    z = rng.normal(0.0, 1.5, size=(bsz, width, VOCAB))
    dead = rng.random(z.shape) < zero_frac
    keep = rng.integers(0, VOCAB, size=(bsz, width))
    np.put_along_axis(dead, keep[..., None], False, axis=-1)
    z[dead] = -np.inf
    return torch.tensor(z, dtype=torch.float32)


@pytest.mark.parametrize("seed,temperature", [(0, 1.0), (1, 0.6), (2, 1.7)])
def test_batched_exit_law_equals_the_single_tree_exit_law_row_by_row(seed, temperature):
    trees = _trees(seed)
    bt = to_batch_tree(trees)
    logits = _logits(seed, len(trees), bt.width)
    w = batch_exit_law(bt, logits, temperature)
    assert w.shape == (len(trees), bt.width) and w.dtype == torch.float64
    for b, tree in enumerate(trees):
        n = tree.num_nodes
        single = _tev_exit_law(to_device_tree(tree), logits[b, :n], temperature)
        torch.testing.assert_close(
            w[b, :n], single, rtol=1e-6, atol=1e-9
        )  # both float32 exponentials
        assert float(w[b, n:].abs().sum()) == 0.0  # padding slots never win
        assert abs(float(w[b].sum()) - 1.0) < 1e-5  # float32 logsumexp of the internal rows


@pytest.mark.parametrize("temperature", [1.0, 0.6])
def test_the_batch_plan_reads_exactly_each_trees_internal_rows_and_pads_the_rest(temperature):
    """Row ``b``'s padded internal slots are its internal rows then row 0 repeated; every shape is set by
    ``(B, N)`` alone; the residual masses the exit law multiplies in are each internal row's mass off its
    child tokens (float64 reference), a leaf's is its slot's whole row, and padding nodes weigh 0."""
    trees = _trees(5)
    bt = to_batch_tree(trees)
    plan = tev_plan(bt)
    bsz, n = len(trees), bt.width
    assert plan.shape == (bsz, n)
    assert plan.rows.shape == (bsz * (n + 1),) and plan.ancestor.shape == (bsz, n, 2 * n)
    rows = plan.rows.view(bsz, n + 1)
    for b, tree in enumerate(trees):
        k = tree.internal.size
        assert rows[b, :k].tolist() == [b * n + int(v) for v in tree.internal]
        assert rows[b, k:].tolist() == [b * n] * (n + 1 - k)
    logits = _logits(5, len(trees), bt.width)
    w = batch_exit_law(bt, logits, temperature)
    for b, tree in enumerate(trees):
        probs = torch.softmax(logits[b, : tree.num_nodes].double() / temperature, -1).tolist()
        want = reference_law(tree, probs, one=1.0).w
        torch.testing.assert_close(
            w[b, : tree.num_nodes],
            torch.tensor(want, dtype=torch.float64).clamp(min=0),
            rtol=1e-5,
            atol=1e-7,
        )
        assert bool((w[b, tree.num_nodes :] == 0).all())


@pytest.mark.parametrize("seed", [0, 3])
def test_batched_greedy_equals_the_single_tree_greedy_walk_row_by_row(seed):
    trees = _trees(seed)
    bt = to_batch_tree(trees)
    # peaked rows whose argmax often is a child token, so walks go deep
    logits = _logits(seed, len(trees), bt.width, zero_frac=0.0)
    rng = np.random.default_rng(seed)
    for b, tree in enumerate(trees):
        for v in range(tree.num_nodes):
            kids = tree.children[v]
            if kids.size and rng.random() < 0.8:
                logits[b, v, int(tree.token[rng.choice(kids)])] += 6.0
    results = verify_batch("greedy", bt, logits, SamplingSettings(0.0), None)
    depths = []
    for b, tree in enumerate(trees):
        single = verify_greedy(to_device_tree(tree), logits[b, : tree.num_nodes])
        assert results[b] == single
        depths.append(len(single.path_nodes))
    assert max(depths) >= 3, "the walks should be deep for this test to mean anything"
    # every sampling kind reduces to greedy at T = 0
    for kind in ("predraw", "residual", "tev"):
        assert verify_batch(kind, bt, logits, SamplingSettings(0.0), None) == results


class _HostReads(TorchFunctionMode):
    """Counts tensor-to-host reads (tolist, item, numpy, cpu, bool/int/float of a tensor)."""

    READS = {"tolist", "item", "numpy", "cpu", "__bool__", "__int__", "__float__", "__index__"}

    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in self.READS:
            self.count += 1
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize(
    "kind,settings",
    [
        ("greedy", None),
        ("predraw", None),
        ("tev", None),
        ("tev", SamplingSettings(0.8, top_k=3, top_p=0.9, min_p=0.1)),
    ],
)
def test_one_host_transfer_per_batched_call(kind, settings, monkeypatch):
    # first_argmax reads CPU rows through numpy without a copy (no transfer); off a CPU it is torch's
    # argmax, which is the form whose transfers this counts
    monkeypatch.setattr(greedy_verifier, "first_argmax", lambda x: x.argmax(-1))
    trees = _trees(4)
    bt = to_batch_tree(trees)
    logits = _logits(4, len(trees), bt.width)
    gens = VerifierGenerators(5)
    with _HostReads() as reads:
        verify_batch(
            kind, bt, logits, settings or SamplingSettings(0.0 if kind == "greedy" else 0.8), gens
        )
    assert reads.count == 1


def _chi_square_p(counts: Counter, law: list[list]) -> float:
    probs = np.array([[float(p) for p in row] for row in law])
    observed = np.zeros_like(probs)
    for (v, y), c in counts.items():
        observed[v, y] += c
    return pooled_chisquare(observed, probs / probs.sum()).pvalue


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["tev", "predraw"])
@pytest.mark.parametrize("seed,temperature", [(0, 1.0), (1, 0.7)])
def test_batched_verifier_law_is_the_block_law_of_every_row(kind, seed, temperature):
    trees = _trees(seed)
    bt = to_batch_tree(trees)
    logits = _logits(seed, len(trees), bt.width)
    probs = torch.softmax(logits.double() / temperature, dim=-1).numpy()
    laws = [
        reference_block_law(t, to_fractions(probs[b, : t.num_nodes])) for b, t in enumerate(trees)
    ]
    gens = VerifierGenerators(2000 + seed)
    n = 12000
    counts = [Counter() for _ in trees]
    for _ in range(n):
        for b, res in enumerate(
            verify_batch(kind, bt, logits, SamplingSettings(temperature), gens)
        ):
            counts[b][(res.exit_node, res.bonus)] += 1
    level = ALPHA / (2 * len(trees))
    for b, tree in enumerate(trees):
        exits = Counter()
        for (v, _), c in counts[b].items():
            exits[(v, 0)] += c
        p_exit = _chi_square_p(exits, [[sum(row)] for row in laws[b]])
        p = _chi_square_p(counts[b], laws[b])
        assert p_exit > level, (
            f"{kind} row {b}: exit chi-square p = {p_exit:.3g} on {tree}, counts {dict(exits)}"
        )
        assert p > level, f"{kind} row {b}: block chi-square p = {p:.3g} on {tree}"


SETTINGS = (
    SamplingSettings(1.0, top_k=2),
    SamplingSettings(0.7, top_p=0.75),
    SamplingSettings(1.3, min_p=0.3),
    SamplingSettings(0.9, top_k=4, top_p=0.9, min_p=0.1, order=HF_ORDER),
)


@pytest.mark.parametrize(
    "kind", ["tev", "predraw"]
)  # batched residual is the single one, row by row
@pytest.mark.parametrize("settings", SETTINGS, ids=["top_k", "top_p", "min_p", "all_hf"])
def test_batched_verifier_law_is_the_processed_block_law_of_every_row(kind, settings):
    """Per row, the block law of theory's processed rows under each setting (a dropped filter fails outright)."""
    trees = _trees(4, shapes=((9, 4), (5, 2), (12, 5)))
    bt = to_batch_tree(trees)
    logits = _logits(4, len(trees), bt.width)
    probs = process_logits(logits.double().numpy(), settings)
    laws = [
        reference_block_law(t, to_fractions(probs[b, : t.num_nodes])) for b, t in enumerate(trees)
    ]
    gens = VerifierGenerators(4000)
    n = 1500
    counts = [Counter() for _ in trees]
    for _ in range(n):
        for b, res in enumerate(verify_batch(kind, bt, logits, settings, gens)):
            counts[b][(res.exit_node, res.bonus)] += 1
    for b, tree in enumerate(trees):
        p = _chi_square_p(counts[b], laws[b])
        assert p > ALPHA / len(trees), f"{kind} under {settings}, row {b}: p = {p:.3g} on {tree}"


def test_batched_tev_draws_are_seeded_and_rows_are_independent_streams_of_one_call():
    trees = _trees(6)
    bt = to_batch_tree(trees)
    logits = _logits(6, len(trees), bt.width)
    a = verify_batch("tev", bt, logits, SamplingSettings(1.0), VerifierGenerators(9))
    b = verify_batch("tev", bt, logits, SamplingSettings(1.0), VerifierGenerators(9))
    assert a == b
    gens = VerifierGenerators(9)
    runs = {
        tuple(
            (r.exit_node, r.bonus)
            for r in verify_batch("tev", bt, logits, SamplingSettings(1.0), gens)
        )
        for _ in range(30)
    }
    assert len(runs) > 1


def test_bad_inputs_raise_named_errors():
    trees = _trees(7)
    bt = to_batch_tree(trees)
    logits = _logits(7, len(trees), bt.width)
    gens = VerifierGenerators(0)
    with pytest.raises(ValueError, match="unknown verifier"):
        verify_batch("sequoia", bt, logits, SamplingSettings(1.0), gens)
    with pytest.raises(DistributionError, match="shape"):
        verify_batch("tev", bt, logits[:, :-1], SamplingSettings(1.0), gens)
    with pytest.raises(TypeError, match="BatchTree"):
        verify_batch("tev", to_device_tree(trees[1]), logits[1], SamplingSettings(1.0), gens)
    with pytest.raises(ValueError, match="VerifierGenerators"):
        verify_batch("tev", bt, logits, SamplingSettings(1.0), None)
    bad = logits.clone()
    bad[2, 0, 0] = float("nan")
    with pytest.raises(DistributionError, match=r"rows \[2\]"):
        verify_batch("tev", bt, bad, SamplingSettings(1.0), gens)
    with pytest.raises(
        DistributionError, match=r"rows \[2\]"
    ):  # predraw reads every row: names the tree
        verify_batch("predraw", bt, bad, SamplingSettings(1.0), gens)
    with pytest.raises(ValueError, match="at least one tree"):
        to_batch_tree([])
