"""Device verifiers (exitlaw.engine.decode.verifiers) against the exact block law.

Calibrated Monte Carlo: Pearson chi-square (simulate.stats) of the observed
(exit, bonus) counts against ``theory.exact.reference_block_law`` (exact
rationals of the float64 rows), cells with expected count < 5 pooled,
false-failure rate ``ALPHA`` per test; any draw in a cell of exact probability
zero fails outright. Finally the device verifiers are wrapped as
``f(tree, probs, rng)`` and must pass the conformance kit (conditional mode).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from exitlaw.engine.builders.single import build_ddtree
from exitlaw.engine.decode.device_tree import to_device_tree
from exitlaw.engine.decode.dispatch import verify
from exitlaw.engine.decode.verifiers import KINDS, VerifierGenerators
from exitlaw.engine.decode.verifiers.draws import _draw, _draw_logits
from exitlaw.engine.decode.verifiers.greedy import _greedy_reference
from exitlaw.engine.decode.verifiers.predraw import _predraw_reference
from exitlaw.engine.decode.verifiers.tev import _tev_exit_law, _tev_reference
from exitlaw.simulate.kit.conformance import EXACT_AND_SATURATING, run_kit
from exitlaw.simulate.stats import pooled_chisquare
from exitlaw.simulate.strategies import draft_trees
from exitlaw.theory import (
    DistributionError,
    DraftTree,
    reference_block_law,
    reference_law,
    to_fractions,
)
from exitlaw.theory.sampling_settings import HF_ORDER, SamplingSettings, process_logits

ALPHA = 1e-6
SAMPLERS = ("predraw", "residual", "tev")


def _random_logits(
    rng: np.random.Generator,
    tree: DraftTree,
    vocab: int,
    *,
    zero_frac: float = 0.2,
    scale: float = 1.5,
) -> torch.Tensor:
    """Rows that differ per node; about ``zero_frac`` of entries are ``-inf`` (probability 0), never a whole row."""
    z = rng.normal(0.0, scale, size=(tree.num_nodes, vocab))
    dead = rng.random(z.shape) < zero_frac
    dead[np.arange(tree.num_nodes), rng.integers(0, vocab, tree.num_nodes)] = False
    z[dead] = -np.inf
    return torch.tensor(z, dtype=torch.float32)


def _probs64(logits: torch.Tensor, temperature: float) -> np.ndarray:
    return torch.softmax(logits.to(torch.float64) / temperature, dim=-1).numpy()


def _chi_square_p(counts: Counter, law: list[list], n: int) -> float:
    """p-value of ``counts[(v, y)]`` under ``law[v][y]`` (simulate.stats.pooled_chisquare: cells with
    expected < 5 pooled by expected counts only; 0.0 if a zero-probability cell was hit)."""
    probs = np.array([[float(p) for p in row] for row in law])
    observed = np.zeros_like(probs)
    for (v, y), c in counts.items():
        observed[v, y] += c
    assert observed.sum() == n
    return pooled_chisquare(observed, probs / probs.sum()).pvalue


def _law_case(seed: int):
    """A deep DDTree-built tree (draft rows resemble the target) and per-node target logits, V = 5."""
    rng = np.random.default_rng(seed)
    vocab, depth = 5, 4
    draft = torch.log_softmax(torch.tensor(rng.normal(0, 1.5, size=(depth, vocab))), -1)
    tree, _ = build_ddtree(draft, budget=9, root_token=int(rng.integers(vocab)))
    return tree, _random_logits(rng, tree, vocab)


@pytest.mark.slow
@pytest.mark.parametrize("kind", SAMPLERS)
@pytest.mark.parametrize("seed,temperature", [(0, 1.0), (1, 0.7)])
def test_device_verifier_matches_exact_block_law(kind, seed, temperature):
    tree, logits = _law_case(seed)
    dt = to_device_tree(tree)
    law = reference_block_law(tree, to_fractions(_probs64(logits, temperature)))
    gens = VerifierGenerators(1000 + seed)
    n = 20000
    counts = Counter()
    for _ in range(n):
        res = verify(kind, dt, logits, SamplingSettings(temperature), gens)
        counts[(res.exit_node, res.bonus)] += 1
    p = _chi_square_p(counts, law, n)
    exits = Counter()
    for (v, _), c in counts.items():
        exits[(v, 0)] += c
    p_exit = _chi_square_p(
        exits, [[sum(row)] for row in law], n
    )  # fewer cells: more power on the exit law
    assert p_exit > ALPHA / 2, (
        f"{kind}: exit-law chi-square p = {p_exit:.3g} on {tree}, counts {dict(exits)}"
    )
    assert p > ALPHA / 2, (
        f"{kind}: chi-square p = {p:.3g} <= {ALPHA} on {tree}, counts {dict(counts)}"
    )


# every filter alone, and all three in HF's order (the law is theory's processed target, numpy reference)
SETTINGS = (
    SamplingSettings(1.0, top_k=2),
    SamplingSettings(0.7, top_p=0.75),
    SamplingSettings(1.3, min_p=0.3),
    SamplingSettings(0.9, top_k=4, top_p=0.9, min_p=0.1, order=HF_ORDER),
)


def _exit_bonus_counts(kind, dt, logits, settings, gens, n: int) -> Counter:
    """How often each (exit node, bonus) came out of ``n`` calls of the ``kind`` verifier."""
    counts = Counter()
    for _ in range(n):
        res = verify(kind, dt, logits, settings, gens)
        counts[(res.exit_node, res.bonus)] += 1
    return counts


@pytest.mark.parametrize("kind", SAMPLERS)
@pytest.mark.parametrize("settings", SETTINGS, ids=["top_k", "top_p", "min_p", "all_hf"])
def test_device_verifier_matches_the_processed_block_law(kind, settings):
    """Under top-k / top-p / min-p the verifier's (exit, bonus) law is the block law of the processed
    rows ``theory.process_logits`` (a dropped filter hits a cell of probability 0 and fails outright)."""
    tree, logits = _law_case(7)
    dt = to_device_tree(tree)
    law = reference_block_law(tree, to_fractions(process_logits(logits.double().numpy(), settings)))
    n = 2500
    counts = _exit_bonus_counts(kind, dt, logits, settings, VerifierGenerators(3000), n)
    assert _chi_square_p(counts, law, n) > ALPHA, f"{kind} under {settings}: counts {dict(counts)}"


TINY_SEED = 2  # the shared ``tiny`` fixture (conftest.py) uses this seed


@pytest.fixture(scope="module")
def tiny_target(tiny):
    from exitlaw.engine.models.checkpoint import load_target

    return load_target(tiny[0])


def _tiny_model_case(target, temperature: float, budget: int = 10, depth: int = 4):
    """A DDTree tree drafted from the tiny target's own rows along its greedy continuation, and the
    target's tree-attention logits for it (the real engine path: prefill, then verify_tree)."""
    prompt = torch.tensor([5, 17, 42, 9])
    cache = target.new_cache()
    last = target.prefill(cache, prompt).logits[-1]
    rows = []
    for _ in range(depth):
        rows.append(last)
        last = target.decode(cache, int(last.argmax()))
    draft = torch.log_softmax(torch.stack(rows) / temperature, dim=-1)
    tree, logq = build_ddtree(draft, budget, root_token=int(prompt[-1]))
    dt = to_device_tree(tree, draft_logprob=logq)
    cache = target.new_cache()
    target.prefill(cache, prompt[:-1])
    logits = target.verify_tree(cache, dt.token, dt.depth, dt.ancestor).logits
    return dt, logits


@pytest.mark.slow
@pytest.mark.parametrize("kind", SAMPLERS)
def test_device_verifier_matches_exact_block_law_on_tiny_model_rows(kind, tiny_target):
    temperature = 0.3  # random-init rows are flat at T = 1; T = 0.3 gives top-1 mass ~0.6
    dt, logits = _tiny_model_case(tiny_target, temperature)
    assert dt.tree.max_depth >= 2 and dt.internal.numel() >= 2
    law = reference_block_law(dt.tree, to_fractions(_probs64(logits, temperature)))
    n = 10000
    counts = _exit_bonus_counts(
        kind, dt, logits, SamplingSettings(temperature), VerifierGenerators(77), n
    )
    exits = Counter()
    for (v, _), c in counts.items():
        exits[(v, 0)] += c
    assert _chi_square_p(exits, [[sum(row)] for row in law], n) > ALPHA / 2
    assert _chi_square_p(counts, law, n) > ALPHA / 2


@given(
    tree=draft_trees(max_nodes=10, vocab_size=4),
    seed=st.integers(0, 2**32 - 1),
    kind=st.sampled_from(KINDS),
    temperature=st.sampled_from([0.0, 1.0]),
)
def test_greedy_limit_follows_the_argmax(tree, seed, kind, temperature):
    """At T = 0 every kind (and the greedy kind at any T) walks the argmax; bonus = argmax of the exit row."""
    logits = _random_logits(np.random.default_rng(seed), tree, 4)
    dt = to_device_tree(tree)
    got = verify(
        kind if temperature == 0 else "greedy",
        dt,
        logits,
        SamplingSettings(temperature),
        VerifierGenerators(seed),
    )
    assert got == _greedy_reference(dt, logits)
    assert got.path_nodes == list(tree.path_nodes(got.exit_node))


@given(
    tree=draft_trees(max_nodes=12, vocab_size=5),
    seed=st.integers(0, 2**32 - 1),
    temperature=st.sampled_from([0.5, 1.0, 2.0]),
    dtype=st.sampled_from([torch.float32, torch.bfloat16]),
)
def test_tev_exit_law_equals_the_per_node_reference(tree, seed, temperature, dtype):
    """The level-parallel ``w`` (K internal rows only) equals theory.exact's per-node law on full rows."""
    logits = _random_logits(np.random.default_rng(seed), tree, 5).to(dtype)
    w = _tev_exit_law(to_device_tree(tree), logits, temperature)
    logits = logits.float()
    ref = reference_law(tree, _probs64(logits, temperature).tolist(), one=1.0)
    np.testing.assert_allclose(w.numpy(), np.maximum(ref.w, 0.0), rtol=1e-5, atol=1e-6)


@given(tree=draft_trees(max_nodes=12, vocab_size=5), seed=st.integers(0, 2**32 - 1))
def test_tev_draws_equal_the_reference_twin(tree, seed):
    """Same generators, same (exit, bonus): the fast path and its full-row twin make the same draws."""
    logits = _random_logits(np.random.default_rng(seed), tree, 5)
    dt = to_device_tree(tree)
    fast, ref = VerifierGenerators(seed), VerifierGenerators(seed)
    for _ in range(5):
        assert verify("tev", dt, logits, SamplingSettings(1.0), fast) == _tev_reference(
            dt, logits, 1.0, ref
        )


@given(
    tree=draft_trees(max_nodes=12, max_branching=4, vocab_size=6), seed=st.integers(0, 2**32 - 1)
)
def test_tev_exit_law_is_sibling_order_invariant(tree, seed):
    """Shuffling the children (node ids) leaves the law of (exit path, bonus) unchanged."""
    rng = np.random.default_rng(seed)
    logits = _random_logits(rng, tree, 6)
    shuffled = tree.reorder_siblings(rng)
    # rows follow their node: node i of `shuffled` has the path of some node j of `tree`
    index = {tree.path(j): j for j in range(tree.num_nodes)}
    perm = [index[shuffled.path(i)] for i in range(shuffled.num_nodes)]
    w1 = _tev_exit_law(to_device_tree(tree), logits, 1.0)
    w2 = _tev_exit_law(to_device_tree(shuffled), logits[perm], 1.0)
    np.testing.assert_allclose(w2.numpy(), w1.numpy()[perm], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kind", SAMPLERS)
def test_zero_probability_children_and_child_bonus_never_happen(kind):
    """A child whose edge probability is 0 is never accepted; the bonus is never a child token of the exit
    nor a zero-probability token."""
    rng = np.random.default_rng(7)
    tree = DraftTree.from_paths([(0,), (1,), (2,), (0, 1), (0, 3), (1, 0), (0, 1, 2)])
    logits = _random_logits(rng, tree, 4, zero_frac=0.0, scale=0.3)
    node = {tree.path(v): v for v in range(tree.num_nodes)}
    logits[0, 1] = float("-inf")  # node (1,) unreachable
    logits[node[(0,)], 3] = float("-inf")  # node (0, 3) unreachable
    dt, gens = to_device_tree(tree), VerifierGenerators(3)
    probs = _probs64(logits, 1.0)
    for _ in range(300):
        res = verify(kind, dt, logits, SamplingSettings(1.0), gens)
        assert all(tree.path(v) not in {(1,), (0, 3)} for v in res.path_nodes)
        assert res.bonus not in set(tree.token[tree.children[res.exit_node]].tolist())
        assert probs[res.exit_node, res.bonus] > 0


@pytest.mark.slow
def test_predraw_reference_loop_matches_exact_block_law():
    """DDTree's literal per-node loop (the twin of the batched predraw) has the block law too."""
    tree, logits = _law_case(2)
    dt, gens = to_device_tree(tree), VerifierGenerators(5)
    law = reference_block_law(tree, to_fractions(_probs64(logits, 1.0)))
    n = 2000
    counts = Counter()
    for _ in range(n):
        res = _predraw_reference(dt, logits, 1.0, gens)
        counts[(res.exit_node, res.bonus)] += 1
    assert _chi_square_p(counts, law, n) > ALPHA


def test_float64_draw_never_returns_a_zero_weight():
    g = torch.Generator().manual_seed(0)
    for weights, allowed in [
        ([0.5, 0.5, 0.0, 0.0], {0, 1}),
        ([0.0, 0.0, 1.0], {2}),
        ([0.0, 1e-300, 0.0], {1}),
    ]:
        w = torch.tensor(weights, dtype=torch.float64)
        assert {int(_draw(w, g)) for _ in range(300)} <= allowed


@pytest.mark.slow
def test_bonus_draw_has_no_float32_tail_bias_on_a_large_vocabulary():
    """Head logit 0, 100k tail tokens at -17.5 (each 2.5e-8, together 0.25 %): a float32 Gumbel-max cannot
    give a tail token more than ~16.6 of noise, so it hits the tail far too rarely (2 hits where 15 were
    expected, in a 6000-draw trial); the float64 inverse-CDF draw hits it at the right rate (binomial test)."""
    vocab, n = 100_000, 15_000
    z = torch.full((vocab,), -17.5, dtype=torch.float64)
    z[0] = 0.0
    p_tail = float(1 - torch.softmax(z, 0)[0])
    g = torch.Generator().manual_seed(1)
    hits = sum(int(_draw_logits(z.clone(), g)[0]) != 0 for _ in range(n))
    assert stats.binomtest(hits, n, p_tail).pvalue > ALPHA, (hits, n * p_tail)


@pytest.mark.parametrize(
    "kind,temperature",
    [
        ("tev", SamplingSettings(1.0)),
        ("tev", SamplingSettings(0.7)),
        ("predraw", SamplingSettings(1.0)),
        ("greedy", SamplingSettings(0.0)),
        ("tev", SamplingSettings(0.8, top_k=5, top_p=0.9, min_p=0.05)),
        ("predraw", SamplingSettings(1.0, top_p=0.8)),
    ],
)
def test_device_verifiers_have_fixed_shapes_and_one_host_transfer(kind, temperature):
    """Every aten op of a round, logged by a dispatch mode: no data-dependent shape (nonzero, masked
    select, boolean indexing), no per-node sampling in TEV (multinomial), no implicit host read (a 0-d tensor used
    as an index or in ``if``); the one transfer is the final ``tolist``."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Log(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__
            if name == "index":
                assert all(i is None or i.dtype != torch.bool for i in args[1]), (
                    "boolean-mask indexing"
                )
            self.ops.append(name)
            return func(*args, **(kwargs or {}))

    rows = torch.log_softmax(torch.randn(6, 64, generator=torch.Generator().manual_seed(0)) * 3, -1)
    tree, logq = build_ddtree(rows, 24, root_token=1)
    dt, logits = to_device_tree(tree, draft_logprob=logq), torch.randn(tree.num_nodes, 64)
    transfers = []
    tolist = torch.Tensor.tolist
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(
            torch.Tensor, "tolist", lambda self: transfers.append(self.shape) or tolist(self)
        )
        with Log() as log:
            verify(kind, dt, logits, temperature, VerifierGenerators(0))
    banned = {"nonzero", "masked_select", "unique", "_local_scalar_dense"} | (
        {"multinomial"} if kind == "tev" else set()
    )
    assert not banned & set(log.ops)
    assert len(transfers) == 1


def test_generator_streams_are_distinct_and_seeded():
    a, b = VerifierGenerators(0), VerifierGenerators(0)
    assert a.acceptance.initial_seed() == b.acceptance.initial_seed()
    assert a.acceptance.initial_seed() != a.bonus.initial_seed()
    assert VerifierGenerators(1).acceptance.initial_seed() != a.acceptance.initial_seed()


def test_bad_inputs_raise_clear_errors():
    tree = DraftTree.chain([1, 2])
    dt = to_device_tree(tree)
    with pytest.raises(ValueError, match="unknown verifier"):
        verify("nope", dt, torch.zeros(3, 4), SamplingSettings(1.0), VerifierGenerators(0))
    with pytest.raises(DistributionError, match="shape"):
        verify("tev", dt, torch.zeros(2, 4), SamplingSettings(1.0), VerifierGenerators(0))
    with pytest.raises(DistributionError, match="temperature"):
        verify("tev", dt, torch.zeros(3, 4), SamplingSettings(-1.0), VerifierGenerators(0))
    with pytest.raises(ValueError, match="outside vocabulary"):
        verify("tev", dt, torch.zeros(3, 2), SamplingSettings(1.0), VerifierGenerators(0))
    bad = torch.zeros(3, 4)
    bad[0, 0] = float("nan")
    with pytest.raises(DistributionError, match="NaN"):
        verify("tev", dt, bad, SamplingSettings(1.0), VerifierGenerators(0))
    # predraw draws every row: NaN, +inf or an all -inf row anywhere is named, not drawn from
    for value in (float("nan"), float("inf")):
        bad = torch.zeros(3, 4)
        bad[2, 1] = value
        with pytest.raises(DistributionError, match="NaN"):
            verify("predraw", dt, bad, SamplingSettings(1.0), VerifierGenerators(0))
    bad = torch.zeros(3, 4)
    bad[1] = float("-inf")
    with pytest.raises(DistributionError, match="all -inf"):
        verify("predraw", dt, bad, SamplingSettings(1.0), VerifierGenerators(0))


# ----------------------------------------------------------------- conformance kit
def _kit_verifier(kind: str, temperature: float = 0.8):
    """``f(tree, probs, rng)`` over the device verifier: logits ``T log p`` (so ``softmax(logits / T) = p``),
    one DeviceTree and one VerifierGenerators per case (seeded from the kit's ``rng``)."""
    cache: dict = {}

    def fn(tree, probs, rng):
        key = (id(tree), id(probs))
        if key not in cache:
            with np.errstate(divide="ignore"):
                logits = torch.tensor(np.log(probs) * temperature, dtype=torch.float32)
            cache[key] = (
                to_device_tree(tree),
                logits,
                VerifierGenerators(int(rng.integers(2**62))),
            )
        dt, logits, gens = cache[key]
        res = verify(kind, dt, logits, SamplingSettings(temperature), gens)
        return res.exit_node, res.bonus

    fn.__name__ = f"device_{kind}"
    return fn


@pytest.mark.slow
@pytest.mark.parametrize("kind", SAMPLERS)
def test_device_verifiers_pass_the_conformance_kit(kind):
    rep = run_kit(_kit_verifier(kind), name=f"device_{kind}", seed=11)
    assert rep.verdict == EXACT_AND_SATURATING, rep.failure
    assert rep.min_power >= rep.power_target - 1e-9


def test_conformance_kit_rejects_tev_without_child_masking(monkeypatch):
    """Negative control: the same wrapper around a TEV whose bonus may repeat a child token fails the kit."""
    import exitlaw.engine.decode.verifiers.tev as tev

    monkeypatch.setattr(tev, "_mask_children", lambda z, plan, v: z)
    rep = run_kit(_kit_verifier("tev"), name="device_tev_unmasked", seed=11, samples=3000)
    assert rep.verdict != EXACT_AND_SATURATING
