"""Verifiers written in EAGLE's, SGLang's and DDTree's layouts (simulate/kit/formats.py), exact ones
and mutants, for the format adapter's tests. Written for these tests from the formats' documented
semantics; none is upstream code."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import numpy as np

from exitlaw.simulate.kit.chain_formats import VLLM_ARGUMENTS
from exitlaw.simulate.kit.formats import ARGUMENTS


def _layout(names):
    """Give a ``**arrays`` verifier the signature of a format's layout (the adapters bind to it)."""

    def wrap(fn):
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        fn.__signature__ = inspect.Signature([inspect.Parameter(n, kind) for n in names])
        return fn

    return wrap


def _draw(row, u: float) -> int:
    """Inverse CDF of the unnormalised ``row`` at ``u`` in [0, 1): the first token whose cumsum exceeds u * mass."""
    c = np.cumsum(row)
    return int(np.searchsorted(c, u * c[-1], side="right"))


# ----- EAGLE: sequential residual over the candidate paths -----------------------------------------
def _eagle_walk(candidates, probs, rng, leq=False):
    """Accept children level by level (tried in path order, duplicates once); returns the state at the exit."""
    live = np.ones(candidates.shape[0], dtype=bool)
    best, accepted = 0, 0
    r = np.array(probs[0, 0], dtype=np.float64)
    while accepted + 1 < candidates.shape[1]:
        tried, nxt = set(), None
        for j in np.flatnonzero(live & (candidates[:, accepted + 1] != -1)):
            x = int(candidates[j, accepted + 1])
            if x in tried:
                continue
            tried.add(x)
            u = rng.random() * r.sum()
            if u < r[x] or (leq and u == r[x]):  # accept w.p. r(x) / (mass left)
                nxt = int(j)
                break
            r[x] = 0.0  # rejected: drop it from the row
        if nxt is None:
            break
        best, accepted = nxt, accepted + 1
        live &= candidates[:, accepted] == candidates[nxt, accepted]
        r = np.array(probs[nxt, accepted], dtype=np.float64)
    return best, accepted, r


def eagle_residual(candidates, retrieve_indices, probs, rng):
    """EAGLE-style sequential residual: exact and saturating."""
    best, accepted, r = _eagle_walk(candidates, probs, rng)
    return best, accepted, _draw(r, rng.random())


def eagle_bonus_full_row(candidates, retrieve_indices, probs, rng):
    """Mutant: the bonus from the exit node's full row, rejected children included: not exact."""
    best, accepted, _ = _eagle_walk(candidates, probs, rng)
    return best, accepted, _draw(probs[best, accepted], rng.random())


def eagle_leq_coin(candidates, retrieve_indices, probs, rng):
    """Boundary mutant: ``coin <= r(x)`` (EAGLE's ``r <= acp``): a coin of 0 accepts a zero-probability child."""
    best, accepted, r = _eagle_walk(candidates, probs, rng, leq=True)
    return best, accepted, _draw(r, rng.random())


def eagle_accept_length_with_root(candidates, retrieve_indices, probs, rng):
    """Malformed: counts the root in accept_length (EAGLE's internal count), one past a leaf's path."""
    best, accepted, r = _eagle_walk(candidates, probs, rng)
    return best, accepted + 1, _draw(r, rng.random())


# ----- SGLang: one coin per position, cumulative over the siblings ---------------------------------
def _sglang(*, cumulative=True, leq=False, **arrays):
    """Walk SGLang's links with one coin per position; writes predicts, accept_index, accept_token_num."""
    a = SimpleNamespace(**arrays)
    cur, num = 0, 0
    coin = a.uniform_samples[0, 0]
    last = int(a.retrive_index[0, 0])
    a.accept_index[0, 0] = last
    for _ in range(1, a.accept_index.shape[1]):
        child, acc = int(a.retrive_next_token[0, cur]), 0.0
        while child != -1:
            x = int(a.candidates[0, child])
            p = a.target_probs[0, cur, x]
            acc = acc + p if cumulative else p
            if coin < acc or (leq and coin == acc):
                a.predicts[last] = x
                num += 1
                last = int(a.retrive_index[0, child])
                a.accept_index[0, num] = last
                cur, coin = child, a.uniform_samples[0, child]
                break
            a.draft_probs[0, cur, x] = p  # rejected: its target mass leaves the residual
            child = int(a.retrive_next_sibling[0, child])
        if child == -1:
            break
    a.accept_token_num[0] = num
    residual = np.maximum(a.target_probs[0, cur] - a.draft_probs[0, cur], 0.0)
    a.predicts[last] = _draw(residual, a.uniform_samples_for_final_sampling[0])


@_layout(ARGUMENTS["sglang"])
def sglang_target_only(**arrays):
    """Coin-driven residual in SGLang's layout: exact and saturating."""
    _sglang(**arrays)


@_layout(ARGUMENTS["sglang"])
def sglang_coin_not_cumulative(**arrays):
    """Mutant: the node's one coin compared with each sibling's own probability, not the running sum."""
    _sglang(cumulative=False, **arrays)


@_layout(ARGUMENTS["sglang"])
def sglang_forgets_accept_token_num(**arrays):
    """Malformed: never writes accept_token_num (it stays at the kit's -1)."""
    _sglang(**{**arrays, "accept_token_num": np.array(arrays["accept_token_num"])})


@_layout(ARGUMENTS["sglang"])
def sglang_leq_coin(**arrays):
    """Boundary mutant: ``coin <= running sum`` (as the upstream kernel compares): a coin of exactly 0
    accepts a zero-probability first child. No sample size sees it; ``check --boundary`` does."""
    _sglang(leq=True, **arrays)


# ----- DDTree: predraw one token per node, follow the child maps -----------------------------------
def _follow(child_maps, posterior):
    accepted, cur = [0], 0
    while posterior[cur] in child_maps[cur]:
        cur = child_maps[cur][posterior[cur]]
        accepted.append(cur)
    return accepted, posterior[cur]


def ddtree_predraw(
    root_token_id, node_token_ids, node_depths, parents, child_maps, visibility, target_probs, rng
):
    """Predraw-and-follow: exact and saturating."""
    posterior = [_draw(row, u) for row, u in zip(target_probs[0], rng.random(len(parents)))]
    return _follow(child_maps, posterior)


def ddtree_rows_shifted(
    root_token_id, node_token_ids, node_depths, parents, child_maps, visibility, target_probs, rng
):
    """Mutant: node v's token drawn from its parent's row (rows off by one tree level): not exact."""
    rows = [target_probs[0, max(p, 0)] for p in parents]
    posterior = [_draw(row, u) for row, u in zip(rows, rng.random(len(parents)))]
    return _follow(child_maps, posterior)


def ddtree_skips_root(
    root_token_id, node_token_ids, node_depths, parents, child_maps, visibility, target_probs, rng
):
    """Malformed: accepted_indices without the root 0."""
    posterior = [_draw(row, u) for row, u in zip(target_probs[0], rng.random(len(parents)))]
    accepted, token = _follow(child_maps, posterior)
    return accepted[1:], token


# ----- vLLM: chain rejection sampler, pre-drawn coins, placeholder after the first rejection ------------
def _vllm(
    *,
    draft_token_ids,
    draft_probs,
    target_probs,
    bonus_token_ids,
    uniform_probs,
    rng,
    leq=False,
    recovered_from_target=False,
    **_unused,
):
    k = int(draft_token_ids.shape[0])
    out = np.full((1, k + 1), -1, dtype=np.int64)
    for pos in range(k):
        x = int(draft_token_ids[pos])
        q, p = float(draft_probs[pos, x]), float(target_probs[pos, x])
        ratio = p / q if q > 0 else 0.0
        coin = float(uniform_probs[pos])
        if q > 0 and (coin < ratio or (leq and coin == ratio)):
            out[0, pos] = x
            continue
        resid = np.maximum(
            np.asarray(target_probs[pos], np.float64) - np.asarray(draft_probs[pos], np.float64), 0
        )
        if recovered_from_target or resid.sum() <= 0:
            resid = np.asarray(target_probs[pos], np.float64)
        out[0, pos] = _draw_safe(resid, rng.random())
        return out
    out[0, k] = int(bonus_token_ids[0, 0])
    return out


def _draw_safe(row, u: float) -> int:
    c = np.cumsum(row)
    return min(int(np.searchsorted(c, u * c[-1], side="right")), int(np.flatnonzero(row > 0)[-1]))


@_layout(VLLM_ARGUMENTS)
def vllm_chain(**arrays):
    """Chain rejection sampling in vLLM's layout, accept iff ``coin < p / q``, recovered ~ norm((p - q)+): exact."""
    return _vllm(**arrays)


@_layout(VLLM_ARGUMENTS)
def vllm_recovered_from_target(**arrays):
    """Mutant: the recovered token drawn from the target row p instead of the residual (p - q)+: not exact."""
    return _vllm(recovered_from_target=True, **arrays)


@_layout(VLLM_ARGUMENTS)
def vllm_leq_coin(**arrays):
    """Boundary mutant: accept iff ``p / q >= coin`` (the comparison of vLLM's kernel at 0097a7bbf1d9): a coin of
    exactly 0 accepts a draft token the target gives 0. No sample size sees it; ``check --boundary`` does."""
    return _vllm(leq=True, **arrays)


@_layout(VLLM_ARGUMENTS)
def vllm_writes_after_rejection(**arrays):
    """Malformed: writes the bonus after a rejected position instead of the placeholder."""
    out = _vllm(**arrays)
    out[0, -1] = int(arrays["bonus_token_ids"][0, 0])
    return out
