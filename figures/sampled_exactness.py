"""Figure: sampled-draft verifiers are exact marginally, not conditionally (docs/design.md §1.8, sampled drafts).

A chain of ``H`` tokens is drafted from ``q`` (a :class:`~exitlaw.simulate.lab.toy_target.ToyModel`)
and verified by chain speculative sampling (:func:`exitlaw.simulate.verifiers.verify_sampled`,
accept ``min(1, p/q)``, bonus ``norm((p - q)+)``); every realised draft is enumerated.
For each realised tree ``T``, exact laws by enumeration
(:func:`exitlaw.simulate.randomness.enumerate_law`) give the conditional
``E[L | T]`` and the total-variation distance between the *completed-block law*
(the block extended by exact target sampling to ``H + 1`` tokens) and the
target's ``(H + 1)``-token law. TEV on the same fixed tree is the control:
``E[L | T] = 1 + C_p(T)`` and distance 0 for every ``T``. Speculative sampling
exceeds the fixed-tree ceiling on some trees and is off the target law
conditionally, yet its draft-averaged law is the target's (distance ~ 0).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from exitlaw.simulate.lab.toy_target import ToyModel, block_tokens, complete_block
from exitlaw.simulate.randomness import enumerate_law
from exitlaw.simulate.verifiers import tev_procedure, verify_sampled
from exitlaw.theory import DraftTree, reference_law

from .style import COLORS, headline, new_figure, require, save

NAME = "sampled_exactness"


def _tv(law: dict, truth: dict) -> float:
    keys = set(law) | set(truth)
    return 0.5 * float(sum(abs(law.get(k, 0.0) - truth.get(k, 0.0)) for k in keys))


def _mix(acc: dict, law: dict, weight: float) -> None:
    for k, v in law.items():
        acc[k] = acc.get(k, 0.0) + weight * v


def compute(*, seed: int = 0, quick: bool = False, vocab: int = 3, horizon: int = 2) -> dict:
    """Exact laws on every realised draft of toy models ``ToyModel(vocab, seed + 3)`` (target) and
    ``ToyModel(vocab, seed + 10)`` (drafter); seed 0 gives a target with no deterministic root row."""
    target = ToyModel(vocab, seed + 3, exact=False)
    drafter = ToyModel(vocab, seed + 10, zero_prob=0.0, exact=False)
    truth = target.sequence_law(horizon + 1)
    trees, marg = [], {"speculative": {}, "tev": {}}
    for tokens in itertools.product(range(vocab), repeat=horizon):
        q_prob = float(np.prod([drafter(tokens[:d])[tokens[d]] for d in range(horizon)]))
        if q_prob <= 0:
            continue
        tree = DraftTree.chain(list(tokens))
        p_rows, q_rows = target.tree_rows(tree), drafter.tree_rows(tree)
        parents, toks = [int(x) for x in tree.parent], [int(x) for x in tree.token]
        ceiling = float(reference_law(tree, p_rows, one=1.0).expected_length)
        runs = {
            "speculative": lambda r: verify_sampled(
                parents, toks, p_rows, q_rows, r, without_replacement=False
            ),
            "tev": lambda r: tev_procedure(tree, p_rows, r),
        }
        row = {"tokens": list(tokens), "q_prob": q_prob, "ceiling": ceiling}
        for name, run in runs.items():
            exit_law = enumerate_law(run, one=1.0)
            row[f"{name}_mean_length"] = float(
                sum((int(tree.depth[v]) + 1) * pr for (v, _), pr in exit_law.items())
            )
            completed = enumerate_law(
                lambda r, run=run: complete_block(
                    block_tokens(tree, *run(r)), target, r, horizon + 1
                ),
                one=1.0,
            )
            row[f"{name}_tv"] = _tv(completed, truth)
            _mix(marg[name], completed, q_prob)
        trees.append(row)
    total_q = sum(t["q_prob"] for t in trees)
    return {
        "figure": NAME,
        "seed": seed,
        "vocab": vocab,
        "horizon": horizon,
        "trees": trees,
        "marginal_tv": {
            k: _tv({s: v / total_q for s, v in law.items()}, truth) for k, law in marg.items()
        },
        "marginal_mean_length": {
            k: sum(t["q_prob"] * t[f"{k}_mean_length"] for t in trees) / total_q
            for k in ("speculative", "tev")
        },
        "marginal_ceiling": sum(t["q_prob"] * t["ceiling"] for t in trees) / total_q,
        "title": (
            f"Exact enumeration of every drafted chain of a toy pair (V = {vocab}, H = {horizon}): "
            "sampled-draft verification is exact on average, not given the draft"
        ),
        "symbols": {
            "T": "the realised draft tree (here a chain of H drafted tokens)",
            "q(T)": "the drafter's probability of drafting T",
            "E[L | T]": "expected output-block length given T, incl. the bonus token",
            "C_p(T)": "coverage of T under the target p; 1 + C_p(T) is the fixed-tree ceiling",
            "TV": "total-variation distance of the completed (H + 1)-token block law to the target's",
            "V, H": "vocabulary size, draft horizon",
        },
    }


def draw(data: dict, out_dir: str | Path, *, overwrite: bool = False) -> list[Path]:
    require(
        data, ("trees", "marginal_tv", "marginal_mean_length", "marginal_ceiling", "title"), NAME
    )
    trees = sorted(data["trees"], key=lambda t: -t["q_prob"])
    fig, (ax, axb) = new_figure(2, width=4.6, height=3.6)
    x = np.array([t["ceiling"] for t in trees])
    qp = np.array([t["q_prob"] for t in trees])
    spec = np.array([t["speculative_mean_length"] for t in trees])
    tev = np.array([t["tev_mean_length"] for t in trees])
    lo, hi = 0.0, max(x.max(), spec.max()) + 0.05  # both axes from 0
    ax.plot([lo, hi], [lo, hi], color="0.5", lw=1, ls="--", label="E[L | T] = 1 + C_p(T) (ceiling)")
    ax.scatter(
        x, spec, s=20 + 300 * qp, color="#9467bd", alpha=0.7, label="chain speculative sampling"
    )
    ax.scatter(x, tev, marker="x", color=COLORS["tev"], s=30, label="TEV on the same tree")
    ax.plot(
        [data["marginal_ceiling"]],
        [data["marginal_mean_length"]["speculative"]],
        "D",
        color="k",
        ms=6,
        mfc="none",
        label="speculative, averaged over drafts",
    )
    ax.set_xlabel("1 + C_p(T) of the realised draft (tokens)")
    ax.set_ylabel("conditional E[L | T] (tokens)")
    ax.set_title(
        f"conditional block length (V = {data['vocab']}, H = {data['horizon']}; marker area ~ q(T))"
    )
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.legend(loc="upper left", frameon=False, fontsize=7)
    idx = np.arange(len(trees))
    axb.bar(
        idx - 0.2,
        [t["speculative_tv"] for t in trees],
        width=0.4,
        color="#9467bd",
        label="speculative sampling",
    )
    axb.bar(idx + 0.2, [t["tev_tv"] for t in trees], width=0.4, color=COLORS["tev"], label="TEV")
    m = len(trees)
    axb.bar(
        [m - 0.2],
        [data["marginal_tv"]["speculative"]],
        width=0.4,
        color="#9467bd",
        hatch="//",
        edgecolor="k",
    )
    axb.bar(
        [m + 0.2],
        [data["marginal_tv"]["tev"]],
        width=0.4,
        color=COLORS["tev"],
        hatch="//",
        edgecolor="k",
    )
    for xpos, key in ((m - 0.2, "speculative"), (m + 0.2, "tev")):
        axb.annotate(
            f"{data['marginal_tv'][key]:.0e}",
            (xpos, 0),
            xytext=(0, 3),
            textcoords="offset points",
            ha="center",
            fontsize=6,
            rotation=90,
        )
    labels = ["".join(str(s) for s in t["tokens"]) for t in trees] + ["avg over\ndrafts"]
    axb.set_xticks(np.arange(m + 1), labels, fontsize=7)
    axb.set_xlabel("realised draft tokens (sorted by q(T)); last: marginal over drafts")
    axb.set_ylabel("TV distance to the target law (H + 1 tokens)")
    axb.set_title("completed-block law: conditional vs marginal")
    axb.legend(loc="upper right", frameon=False, fontsize=7)
    headline(fig, data)
    return save(fig, out_dir, NAME, overwrite=overwrite)
