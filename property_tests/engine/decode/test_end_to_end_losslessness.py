"""End-to-end losslessness of the engine at T > 0 (docs/design.md §1.3: repeating rounds reproduces the
target's autoregressive law ``prod_t p(y_t | c, y_<t)``).

A random Qwen3-architecture target with a vocabulary of 3 and a random DFlash drafter of block 3
(:mod:`property_tests.helpers.tiny_law`): the prefill draws the first token and a round emits at most 3,
and the first ``K = 5`` tokens are compared, so every run covers at least two rounds. With 3 tokens a
budget-4 DDTree holds much of the target's mass whatever the drafter proposes, so accepted paths are
long (a first round's block is 2.0 tokens on average; a quarter to a third of first rounds accept two
draft nodes) and the multi-node KV commit and the drafter's context feed are exercised.
The exact law of the first ``K`` tokens is computed by enumerating ``V^K = 243`` sequences through the
target's own causal forward passes, never from the engine's tree logits.

**Calibration.** Pearson chi-square (:func:`~exitlaw.simulate.stats.pooled_chisquare`, cells of
expected count below 5 pooled from the expected counts only) at ``ALPHA = 1e-3`` per test; every test
asserts its own power bound (:func:`~exitlaw.simulate.stats.chisquare_power`) of at least ``POWER = 0.9``
against every alternative at total variation ``>= DELTA = 0.2`` on its pooled cells. ``generate``: 250
seeds per case; ``generate_batch``: 1000 rows of one batch, each an independent stream. Seeds derive
from the case's name (:func:`~exitlaw.simulate.stats.seed_for`), so a run is reproducible. Besides DDTree
(budget 4) with every sampling verifier at T = 1 and T = 0.6, the batched path also runs the chain
builder and the autoregressive baseline (greedy is T = 0 only, covered by ``test_generate.py``).

**Independence of rounds.** Grouped by the first round's output block (the context of the second),
the second round's (exit, bonus) must follow the block law of its own tree in that context, computed
from causal forwards; the groups' Pearson statistics add up (conditionally independent given the
group sizes) to one chi-square at ``ALPHA``. A decode loop whose verifier streams restart from the
same seed every round (:func:`~property_tests.helpers.engine_mutants.restart_streams_each_round`)
passes every per-round law and every T = 0 test, and must fail this one: it does, below (batched:
every verifier; ``generate``: TEV), and the k-token law test sees it too where its effect is large.

Time: 140 s wall (80 s CPU) for the whole module on the shared 2-core box (the ``generate`` cases
dominate: 1500 single-sequence decodes plus 100 for the mutant); the runs are shared between the law and
the independence tests.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from scipy import stats

from exitlaw.engine.decode.batch_generate import generate_batch
from exitlaw.engine.decode.loop import DecodeConfig, generate
from exitlaw.simulate.stats import chisquare_power, pooled_chisquare, seed_for
from exitlaw.theory.sampling_settings import SamplingSettings
from property_tests.helpers.engine_mutants import restart_streams_each_round
from property_tests.helpers.tiny_law import (
    PROMPT,
    VOCAB,
    K,
    RoundRecorder,
    block_tokens,
    round_block_law,
    sequence_index,
    sequence_law,
    tiny_law_pair,
)

ALPHA, POWER, DELTA = 1e-3, 0.9, 0.2
N_SINGLE, N_BATCH, N_MUTANT = 250, 1000, 100
BUDGET = 4
VERIFIERS = ("predraw", "residual", "tev")
TEMPERATURES = (1.0, 0.6)


@pytest.fixture(scope="module")
def law_pair():
    return tiny_law_pair(seed=0)


def _config(method: str, verifier: str, temperature: float, seed: int) -> DecodeConfig:
    return DecodeConfig(
        method=method,
        verifier=verifier,
        budget=BUDGET,
        settings=SamplingSettings(temperature),
        max_new_tokens=K,
        seed=seed,
    )


def _seeds(name: str, n: int) -> list[int]:
    return [int(s) for s in seed_for(name).generate_state(n, np.uint32)]


def decode_runs(
    pair, path: str, method: str, verifier: str, temperature: float, n: int | None = None
) -> tuple[list, list]:
    """``(first K tokens, (round 1, round 2) trace records)`` of every run: ``generate`` over ``n``
    (default ``N_SINGLE``) seeds, or one ``generate_batch`` of ``n`` (``N_BATCH``) rows of the same prompt."""
    target, drafter = pair
    name = f"e2e-{path}-{method}-{verifier}-{temperature}"
    if path == "single":
        tokens, rounds = [], []
        for seed in _seeds(name, n or N_SINGLE):
            rec = RoundRecorder()
            out = generate(
                target,
                drafter,
                list(PROMPT),
                _config(method, verifier, temperature, seed),
                trace=rec,
            )
            tokens.append(out.tokens)
            rounds.append(tuple(rec.rounds[:2]))
        return tokens, rounds
    rec, n = RoundRecorder(), n or N_BATCH
    out = generate_batch(
        target,
        drafter,
        [list(PROMPT)] * n,
        _config(method, verifier, temperature, _seeds(name, 1)[0]),
        trace=rec,
    )
    # rows stay active for two rounds (K = 5 > 3 tokens per round): round r's records are rows 0..n-1 in order
    return out.tokens, list(zip(rec.rounds[:n], rec.rounds[n : 2 * n]))


@pytest.fixture(scope="module")
def runs(law_pair):
    """Decode runs shared by the law and the independence tests (computed once per case)."""
    memo = {}

    def get(path, method, verifier, temperature):
        key = (path, method, verifier, temperature)
        if key not in memo:
            memo[key] = decode_runs(law_pair, *key)
        return memo[key]

    return get


def assert_follows_k_token_law(
    target, tokens: list[list[int]], temperature: float, what: str
) -> None:
    assert all(len(t) == K for t in tokens), f"{what}: every run must emit exactly K = {K} tokens"
    law = sequence_law(target, PROMPT, K, temperature)
    counts = np.bincount([sequence_index(t, VOCAB) for t in tokens], minlength=law.size)
    res = pooled_chisquare(counts, law)
    power = chisquare_power(len(tokens), max(res.cells, 2), ALPHA, DELTA)
    assert power >= POWER, (
        f"{what}: calibration: power {power:.3f} < {POWER} at TV {DELTA} with {res.cells} cells"
    )
    assert not res.rejects(ALPHA), (
        f"{what}: the first {K} tokens do not follow the target's law: "
        f"chi2={res.statistic:.1f}, dof={res.dof}, p={res.pvalue:.2e}, "
        f"zero-probability sequences seen: {res.zero_cell_hits}"
    )


def second_round_pvalue(target, pairs, temperature: float) -> tuple[float, int]:
    """p-value of "round 2 follows its block law given the context after round 1", and the group count."""
    groups = defaultdict(list)
    for first, second in pairs:
        tree = second.tree
        # round 1's root is the prefill's token; its block ends in round 2's root
        before = (int(first.tree.token[0]),) + block_tokens(first)
        groups[(before, tuple(tree.parent.tolist()), tuple(tree.token.tolist()))].append(second)
    statistic, dof = 0.0, 0
    for (before, _, _), records in groups.items():
        law = round_block_law(target, list(PROMPT) + list(before), records[0].tree, temperature)
        counts = np.bincount([r.exit_node * VOCAB + r.bonus for r in records], minlength=law.size)
        res = pooled_chisquare(counts, law)
        if res.zero_cell_hits:
            return 0.0, len(groups)
        statistic, dof = statistic + res.statistic, dof + res.dof
    return (float(stats.chi2.sf(statistic, dof)) if dof else 1.0), len(groups)


# ----------------------------------------------------------------- the k-token law
@pytest.mark.parametrize("temperature", TEMPERATURES)
@pytest.mark.parametrize("verifier", VERIFIERS)
def test_generate_reproduces_the_targets_k_token_law(law_pair, runs, verifier, temperature):
    tokens, rounds = runs("single", "ddtree", verifier, temperature)
    assert np.mean([len(block_tokens(r[0])) >= 3 for r in rounds]) > 0.15, (
        "the first round should often accept two draft nodes (a multi-node commit)"
    )
    assert_follows_k_token_law(
        law_pair[0], tokens, temperature, f"generate {verifier} T={temperature}"
    )


@pytest.mark.parametrize(
    "method,verifier,temperature",
    [("ddtree", v, t) for v in VERIFIERS for t in TEMPERATURES]
    + [("chain", "tev", 1.0), ("chain", "predraw", 0.6)]
    + [("ar", "tev", t) for t in TEMPERATURES],
)
def test_generate_batch_rows_reproduce_the_targets_k_token_law(
    law_pair, runs, method, verifier, temperature
):
    tokens, _ = runs("batch", method, verifier, temperature)
    assert len(tokens) == N_BATCH
    assert_follows_k_token_law(
        law_pair[0], tokens, temperature, f"generate_batch {method} {verifier} T={temperature}"
    )


# ----------------------------------------------------------------- independence of consecutive rounds
@pytest.mark.parametrize("temperature", TEMPERATURES)
@pytest.mark.parametrize("verifier", VERIFIERS)
@pytest.mark.parametrize("path", ("single", "batch"))
def test_consecutive_rounds_are_independent_given_the_context(
    law_pair, runs, path, verifier, temperature
):
    _, pairs = runs(path, "ddtree", verifier, temperature)
    p, groups = second_round_pvalue(law_pair[0], pairs, temperature)
    assert groups >= 3, "the first round should end in several different contexts"
    assert p >= ALPHA, (
        f"{path} {verifier} T={temperature}: given the context after round 1, round 2 does not "
        f"follow its block law (p={p:.2e} over {groups} contexts)"
    )


@pytest.mark.parametrize("path,verifier", [("batch", v) for v in VERIFIERS] + [("single", "tev")])
def test_a_decode_loop_restarting_its_streams_each_round_fails_round_independence(
    law_pair, monkeypatch, path, verifier
):
    restart_streams_each_round(monkeypatch)
    _, pairs = decode_runs(
        law_pair, path, "ddtree", verifier, 1.0, N_MUTANT if path == "single" else None
    )
    p, groups = second_round_pvalue(law_pair[0], pairs, 1.0)
    assert p < ALPHA, f"the stream-restarting mutant ({path} {verifier}) went unnoticed: p={p:.2e}"


def test_a_decode_loop_restarting_its_streams_each_round_fails_the_k_token_law(
    law_pair, monkeypatch
):
    """The law test alone also sees the mutant where its effect is large (batched TEV at T = 1)."""
    restart_streams_each_round(monkeypatch)
    tokens, _ = decode_runs(law_pair, "batch", "ddtree", "tev", 1.0)
    with pytest.raises(AssertionError, match="do not follow the target's law"):
        assert_follows_k_token_law(law_pair[0], tokens, 1.0, "mutant")
