"""Settings-mode zoo: chain speculative samplers ``f(tree, logits, draft_logits, settings, rng)`` with the bugs
serving engines shipped under top-k / top-p / min-p (issue 22), and the exact one they deviate from.

Each is written over the randomness interface (``procedure(tree, logits, draft_logits, settings, rand)``), so
its completed-block law can be enumerated exactly and the kit's power against it computed
(:func:`completed_power`). Written for these tests from the algorithm; none is upstream code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from exitlaw.simulate.kit.checks import MIN_EXPECTED, big_sequences
from exitlaw.simulate.lab.toy_target import block_tokens, complete_block
from exitlaw.simulate.randomness import GeneratorRandomness, enumerate_law
from exitlaw.simulate.stats import cell_power, power_against
from exitlaw.simulate.verifiers.sampled_draft import draw_draft
from exitlaw.theory import DraftTree, SamplingSettings, process_logits


def _rows(logits, settings: SamplingSettings, how: str) -> np.ndarray:
    if how == "processed":
        return process_logits(logits, settings)
    if how == "temperature":  # the temperature only: every filter dropped
        return process_logits(logits, SamplingSettings(settings.temperature))
    return process_logits(
        logits, SamplingSettings(1.0)
    )  # "raw": softmax of the logits as they came


def _chain(tree, p_acc, q_acc, p_bonus, q_bonus, rand, zeroing=False):
    """Chain rejection: accept ``min(1, p_acc / q_acc)``; on rejection the bonus from ``norm((p_bonus - q_bonus)+)``
    (or, ``zeroing``, from ``p_bonus`` with the rejected token zeroed); after the last node from ``p_bonus``."""
    v = 0
    for u in range(1, tree.num_nodes):
        x = int(tree.token[u])
        ratio = 1.0 if q_acc[v][x] <= 0 else min(1.0, float(p_acc[v][x] / q_acc[v][x]))
        if rand.bernoulli(ratio, stream="accept"):
            v = u
            continue
        if zeroing:
            r = np.array(p_bonus[v], dtype=np.float64)
            r[x] = 0.0
        else:
            r = np.maximum(np.asarray(p_bonus[v]) - np.asarray(q_bonus[v]), 0.0)
        if r.sum() <= 0:
            r = np.asarray(p_bonus[v])
        return v, rand.categorical(r, stream="bonus")
    return v, rand.categorical(p_bonus[v], stream="bonus")


def exact_chain(tree, logits, draft_logits, settings, rand):
    """Every row processed once; q the rows the drafts were sampled from: exact."""
    p, q = _rows(logits, settings, "processed"), _rows(draft_logits, settings, "processed")
    return _chain(tree, p, q, p, q, rand)


def q_unfiltered(tree, logits, draft_logits, settings, rand):
    p, q = _rows(logits, settings, "processed"), _rows(draft_logits, settings, "temperature")
    return _chain(tree, p, q, p, q, rand)


def target_rows_split(tree, logits, draft_logits, settings, rand):
    p, q = _rows(logits, settings, "processed"), _rows(draft_logits, settings, "processed")
    return _chain(tree, p, q, _rows(logits, settings, "temperature"), q, rand)


def setting_on_bonus_only(tree, logits, draft_logits, settings, rand):
    p, q = _rows(logits, settings, "processed"), _rows(draft_logits, settings, "processed")
    return _chain(tree, _rows(logits, settings, "temperature"), q, p, q, rand)


def drafter_returns_raw(tree, logits, draft_logits, settings, rand):
    p, q = _rows(logits, settings, "processed"), _rows(draft_logits, settings, "raw")
    return _chain(tree, p, q, p, q, rand)


def residual_zeroes_token(tree, logits, draft_logits, settings, rand):
    p, q = _rows(logits, settings, "processed"), _rows(draft_logits, settings, "processed")
    return _chain(tree, p, q, p, q, rand, zeroing=True)


@dataclass(frozen=True)
class SettingsMutant:
    name: str
    bug: str
    procedure: Callable

    @property
    def sample(self) -> Callable:
        proc = self.procedure

        def f(tree, logits, draft_logits, settings, rng):
            return proc(tree, logits, draft_logits, settings, GeneratorRandomness(rng))

        f.__name__ = self.name
        return f


SETTINGS_MUTANTS = [
    SettingsMutant(
        "q_unfiltered",
        "acceptance uses the unfiltered q while the drafts came from the filtered q",
        q_unfiltered,
    ),
    SettingsMutant(
        "target_rows_split",
        "target rows processed for acceptance, unprocessed for the bonus",
        target_rows_split,
    ),
    SettingsMutant(
        "setting_on_bonus_only",
        "the setting applied to the bonus token but not to the verified tokens",
        setting_on_bonus_only,
    ),
    SettingsMutant(
        "drafter_returns_raw",
        "the drafter returns its raw distribution, not the one it sampled from",
        drafter_returns_raw,
    ),
    SettingsMutant(
        "residual_zeroes_token",
        "residual formed by zeroing the rejected token instead of (p - q)+",
        residual_zeroes_token,
    ),
]
EXACT = SettingsMutant("exact_chain", "none", exact_chain)
# importable by the CLI: `exitlaw check helpers.settings_mutants:<name>_verifier --mode marginal --settings`
globals().update({f"{m.name}_verifier": m.sample for m in SETTINGS_MUTANTS + [EXACT]})


def completed_law(procedure: Callable, sc) -> dict:
    """Exact law of the completed block when the kit drafts from ``sc.case.draft`` and ``procedure`` verifies."""
    case = sc.case

    def run(rand):
        toks = draw_draft(case.topology, case.draft, rand, without_replacement=True)
        tree = DraftTree(parent=np.array(case.topology), token=np.array(toks))
        z = np.stack([sc.logits(tree.path(v)) for v in range(tree.num_nodes)])
        zq = np.stack([sc.draft_logits(tree.path(v)) for v in range(tree.num_nodes)])
        v, y = procedure(tree, z, zq, sc.settings, rand)
        return complete_block(block_tokens(tree, v, y), case.target, rand, case.horizon)

    return enumerate_law(run, one=1.0)


def _prob(target, seq) -> float:
    p = 1.0
    for t in range(len(seq)):
        p *= float(target(seq[:t])[seq[t]])
    return p


def completed_power(law: dict, target, horizon: int, n: int, alpha: float) -> float:
    """Power of the kit's completed-block check (every prefix length at ``alpha / horizon``, chi-square and worst
    cell at half each, pooled as the kit pools) against the completed-block law ``law``: the largest of the
    tests' powers, a lower bound on the power of the check."""
    level = alpha / 2 / horizon
    best = 0.0
    for k in range(1, horizon + 1):
        trunc: dict = {}
        for s, p in law.items():
            trunc[s[:k]] = trunc.get(s[:k], 0.0) + p
        big = big_sequences(target, k, MIN_EXPECTED / n)
        seqs = sorted(big)
        p_cells = np.array([big[s] for s in seqs] + [max(1.0 - sum(big.values()), 0.0)])
        forbidden = sum(p for s, p in trunc.items() if _prob(target, s) == 0.0)
        q_cells = np.array([trunc.get(s, 0.0) for s in seqs] + [0.0])
        q_cells[-1] = max(1.0 - q_cells[:-1].sum() - forbidden, 0.0)
        p_all, q_all = np.append(p_cells / p_cells.sum(), 0.0), np.append(q_cells, forbidden)
        best = max(best, power_against(n, p_all, q_all, level), cell_power(n, p_all, q_all, level))
    return best


# ----- fixed-tree (conditional settings mode): f(tree, logits, settings, rng) ------------------------------
def residual_setting_on_bonus_only(tree, logits, settings, rand):
    """Sequential residual whose acceptance walk uses temperature-only rows (the filters dropped on the verified
    tokens) while the bonus is drawn from the processed residual: not exact."""
    acc, bon = _rows(logits, settings, "temperature"), _rows(logits, settings, "processed")
    v = 0
    while True:
        ra, rb = np.array(acc[v]), np.array(bon[v])
        nxt = None
        for u in tree.children[v]:
            x = int(tree.token[u])
            if rand.bernoulli(ra[x] / ra.sum(), stream="accept"):
                nxt = int(u)
                break
            ra[x], rb[x] = 0.0, 0.0
        if nxt is None:
            return v, rand.categorical(rb if rb.sum() > 0 else bon[v], stream="bonus")
        v = nxt


def residual_setting_on_bonus_only_verifier(tree, logits, settings, rng):
    return residual_setting_on_bonus_only(tree, logits, settings, GeneratorRandomness(rng))


def fixed_tree_completed_law(procedure: Callable, sc) -> dict:
    """Exact completed-block law of a fixed-tree settings procedure on the case ``sc``."""
    case = sc.case
    z = np.stack([sc.logits(case.tree.path(v)) for v in range(case.tree.num_nodes)])

    def run(rand):
        v, y = procedure(case.tree, z, sc.settings, rand)
        return complete_block(block_tokens(case.tree, v, y), case.target, rand, case.horizon)

    return enumerate_law(run, one=1.0)
