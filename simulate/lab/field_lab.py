"""Lab comparison of sampled-draft verifiers on the same drafted trees (UniVer, HSD against RRS).

For each seed, ``contexts`` contexts are drawn by running the synthetic target
from a random prompt. At each context one topology is planned and populated by
sampling (Tsubame's two passes, :func:`.builders.tsubame`: DDTree topology from
the position-wise drafter, siblings re-sampled without replacement), and on that
*same* realised tree the rules are run with independent verification streams:

* ``univer``: :func:`.verifiers.univer` (siblings without replacement);
* ``rrs_wo``: recursive rejection without replacement (:func:`.verifiers.specinfer_without_replacement`);
* ``rrs_iid``: recursive rejection with replacement, on the same topology with its
  tokens re-drawn i.i.d. from the same rows (its own drafting, since the i.i.d.
  rule is exact only for i.i.d. siblings); its realised tree is another tree.

Chains: a chain of ``horizon`` tokens drafted from the same rows is verified by
``hsd`` (:func:`.verifiers.hsd`) and by chain speculative sampling (``chain_sd``).

Per rule the record holds the mean block length ``tau`` and the mean fixed-tree
ceiling ``1 + C_p(T)`` of the trees it verified (the two notions of exactness side
by side: marginally exact rules may exceed the realised trees' ceiling). Paired
effects (``A - B`` per seed, mean over contexts; 95 % t-interval over seeds; the
relative effect ``100 (A - B) / tau_B`` per seed, t-interval likewise) are written
as ledger records (:mod:`exitlaw.paper_repro.paired_effects`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from exitlaw import __version__
from exitlaw.simulate.builders.settings import check_fields
from exitlaw.simulate.builders.trees import tsubame
from exitlaw.simulate.lab.flat import from_flat, to_flat
from exitlaw.simulate.lab.models import NGramTarget
from exitlaw.simulate.lab.world import (
    SyntheticDrafter,
    SyntheticTarget,
    drafter_field,
    target_field,
)
from exitlaw.simulate.randomness import enumerate_law
from exitlaw.simulate.verifiers import hsd_procedure, univer_procedure, verify_sampled
from exitlaw.theory import DraftTree, gather_edge_probs
from exitlaw.theory.infra.atomic_io import atomic_write_text
from exitlaw.theory.registry import verifier

# output columns: the registry's field labels of these sampled-draft rules, in this order
RULES = tuple(
    verifier(name).field_label
    for name in ("univer", "specinfer-without-replacement", "specinfer", "hsd", "chain-speculative")
)
PAIRS = (("univer", "rrs_wo"), ("univer", "rrs_iid"), ("hsd", "chain_sd"))
SCHEMA = "exitlaw.field-lab"
NOTES = (
    "univer is UniVer as read in exitlaw.simulate.verifiers.univer (HSD along each node's first-drawn spine, "
    "then the stopped level's residual transported onto the later sibling drafts); the source's own algorithm "
    "was not available, so the measured gain is that of this reading. tau is the exact E[L | T] per drafted "
    "tree (enumerated), averaged over contexts; rules exact only over the drafts may exceed the realised "
    "trees' ceiling 1 + C_p(T)."
)


# the flat keys of a field-lab config, in the order its results have always held them (:mod:`.flat`);
# the world's other fields (FIXED: the target's jitter, the drafter's mode) keep their defaults here
KEYS = (
    "vocab",
    "order",
    "zipf",
    "temperature",
    "drafter_noise",
    "drafter_temperature",
    "drafter_eps",
    "horizon",
    "budget",
    "seeds",
    "contexts",
    "target_seed",
    "drafter_seed",
)

# the world's defaults: the keys outside KEYS keep these
FIXED = {"jitter": SyntheticTarget().jitter, "drafter_mode": SyntheticDrafter().mode}


@dataclass(frozen=True)
class FieldLabConfig:
    target: SyntheticTarget = target_field(SyntheticTarget(zipf=2.0))
    drafter: SyntheticDrafter = drafter_field(SyntheticDrafter(noise=1.0))
    horizon: int = 6
    budget: int = 16
    seeds: int = 20
    contexts: int = 200

    def __post_init__(self) -> None:
        check_fields(self)
        if not isinstance(self.target, SyntheticTarget) or not isinstance(
            self.drafter, SyntheticDrafter
        ):
            raise ValueError(
                f"a field-lab config holds a SyntheticTarget and a SyntheticDrafter, got "
                f"{self.target!r} and {self.drafter!r}"
            )
        hidden = {k: v for k, v in to_flat(self).items() if k not in KEYS}
        moved = {k: v for k, v in hidden.items() if k not in FIXED or v != FIXED[k]}
        if moved:
            raise ValueError(
                f"the field lab keeps {sorted(FIXED)} at their defaults {FIXED}, got {moved}"
            )
        for name in ("horizon", "budget", "seeds", "contexts"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.seeds < 2:
            raise ValueError(f"seeds must be >= 2 for a confidence interval, got {self.seeds}")

    def to_dict(self) -> dict[str, Any]:
        """The flat JSON form, the keys :data:`KEYS` in that order (results' ``"config"``)."""
        flat = to_flat(self)
        return {k: flat[k] for k in KEYS}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FieldLabConfig":
        """The config of the flat keys in ``data`` (:data:`KEYS`) over the defaults."""
        unknown = sorted(set(data) - set(KEYS))
        if unknown:
            raise ValueError(f"unknown field-lab config keys {unknown}; known keys: {sorted(KEYS)}")
        return from_flat(cls(), data)


def _coverage(tree: DraftTree, probs: np.ndarray) -> float:
    edge = gather_edge_probs(tree, probs)
    prefix = np.ones(tree.num_nodes)
    for u in range(1, tree.num_nodes):
        prefix[u] = prefix[tree.parent[u]] * edge[u]
    return float(prefix[1:].sum())


def _rows(target: NGramTarget, ctx: tuple[int, ...], tree: DraftTree) -> np.ndarray:
    return np.stack([target.probs(ctx + tree.path(v)) for v in range(tree.num_nodes)])


def _iid_tokens(tree: DraftTree, rows: np.ndarray, rng: np.random.Generator) -> list[int]:
    toks = [int(tree.token[0])]
    for u in range(1, tree.num_nodes):
        toks.append(int(rng.choice(rows.shape[1], p=rows[tree.parent[u]])))
    return toks


def _iid_coverage(target, ctx, parents, tokens) -> float:
    # i.i.d. siblings may repeat a token: C_p sums P over the distinct prefixes (the tree they span)
    paths = [()]
    for u in range(1, len(parents)):
        paths.append(paths[parents[u]] + (tokens[u],))
    tree = DraftTree.from_paths(sorted(set(paths[1:]), key=lambda p: (len(p), p)))
    return _coverage(tree, _rows(target, ctx, tree))


class _LengthOnly:
    """Passes coins through and answers the bonus draw with token 0 without branching:
    the exit is fixed before the bonus, so enumerating this gives the exact law of ``L``."""

    def __init__(self, rand):
        self.rand = rand

    def bernoulli(self, p, *, stream: str) -> bool:
        return self.rand.bernoulli(p, stream=stream)

    def categorical(self, weights, *, stream: str) -> int:
        return 0 if stream == "bonus" else self.rand.categorical(weights, stream=stream)


def expected_length(procedure, parents, tokens, p_rows, q_rows, **kwargs) -> float:
    """``E[L | T]`` of a sampled-draft procedure on one realised tree, exact (float64) by enumeration."""
    depth = [0] * len(parents)
    for u in range(1, len(parents)):
        depth[u] = depth[parents[u]] + 1
    law = enumerate_law(
        lambda r: procedure(parents, tokens, p_rows, q_rows, _LengthOnly(r), **kwargs)[0], one=1.0
    )
    return float(sum(pr * (depth[v] + 1) for v, pr in law.items()))


def _record(out: dict, rules, target, ctx, tree: DraftTree, q) -> list[int]:
    """Each rule's exact ``E[L]`` on one realised tree (draft rows ``q``), beside the tree's ceiling
    ``1 + C_p`` under the target after ``ctx``; returns the tree's parents."""
    p = _rows(target, ctx, tree)
    ceiling = 1.0 + _coverage(tree, p)
    parents, tokens = [int(x) for x in tree.parent], [int(x) for x in tree.token]
    for rule, proc, kw in rules:
        out[rule]["L"].append(expected_length(proc, parents, tokens, p, q, **kw))
        out[rule]["ceiling"].append(ceiling)
    return parents


def run_seed(cfg: FieldLabConfig, seed: int) -> dict[str, dict[str, list[float]]]:
    """Block lengths and ceilings ``{rule: {"L": [...], "ceiling": [...]}}`` for one seed."""
    target = cfg.target.model()
    drafter = cfg.drafter.position_wise(target)
    streams = np.random.SeedSequence([seed, 0xF1E1D]).spawn(3)
    ctx_rng, draft_rng, iid_rng = (np.random.default_rng(s) for s in streams[:3])
    out = {r: {"L": [], "ceiling": []} for r in RULES}
    window = max(target.context_length, 1)
    context = [int(t) for t in ctx_rng.integers(0, cfg.target.vocab, size=4)]
    for _ in range(cfg.contexts):
        context += target.sample(context, 3, ctx_rng)  # a fresh context along the target's own text
        ctx = tuple(context[-window:])
        marg = drafter.marginals(ctx, cfg.horizon)
        built = tsubame(marg, cfg.budget, draft_rng)
        tree, q = built.tree, built.draft_rows
        rules = (
            ("univer", univer_procedure, {}),
            ("rrs_wo", verify_sampled, {"without_replacement": True}),
        )
        parents = _record(out, rules, target, ctx, tree, q)
        iid = _iid_tokens(tree, q, iid_rng)
        paths = [()]
        for u in range(1, len(parents)):
            paths.append(paths[parents[u]] + (iid[u],))
        p_iid = np.stack([target.probs(ctx + pa) for pa in paths])
        out["rrs_iid"]["L"].append(
            expected_length(verify_sampled, parents, iid, p_iid, q, without_replacement=False)
        )
        out["rrs_iid"]["ceiling"].append(1.0 + _iid_coverage(target, ctx, parents, iid))
        chain_toks = [int(draft_rng.choice(target.vocab, p=marg[d])) for d in range(cfg.horizon)]
        chain = DraftTree.chain(chain_toks)
        qc = np.asarray(marg, dtype=np.float64)[np.minimum(chain.depth, cfg.horizon - 1)]
        rules = (
            ("hsd", hsd_procedure, {}),
            ("chain_sd", verify_sampled, {"without_replacement": False}),
        )
        _record(out, rules, target, ctx, chain, qc)
    return out


def _t_interval(x: np.ndarray, level: float = 0.95) -> dict[str, float]:
    from scipy import (  # lazy: `import exitlaw.simulate` loads this module and must load no scipy (property_tests/test_faces.py)
        stats,
    )

    n = x.size
    mean = float(x.mean())
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return {"mean": mean, "lo": mean - half, "hi": mean + half}


def summarise(cfg: FieldLabConfig, per_seed: list[dict]) -> dict[str, Any]:
    """Per-rule means and the paired records (see the module docstring)."""
    rules = {}
    for r in RULES:
        tau = np.array([np.mean(s[r]["L"]) for s in per_seed])
        ceil = np.array([np.mean(s[r]["ceiling"]) for s in per_seed])
        rules[r] = {
            "tau": _t_interval(tau),
            "mean_ceiling": float(ceil.mean()),
            "tau_minus_ceiling": _t_interval(tau - ceil),
        }
    records = []
    for a, b in PAIRS:
        ta = np.array([np.mean(s[a]["L"]) for s in per_seed])
        tb = np.array([np.mean(s[b]["L"]) for s in per_seed])
        records.append(
            {
                "comparison": f"{a}-{b}",
                "metric": "tau",
                "setting": {
                    "lab": "field",
                    "topology": "chain" if a == "hsd" else "tsubame",
                    "vocab": cfg.target.vocab,
                    "budget": cfg.horizon if a == "hsd" else cfg.budget,
                    "horizon": cfg.horizon,
                    "temperature": float(cfg.target.temperature),
                    "drafter_noise": cfg.drafter.noise,
                },
                "diff": _t_interval(ta - tb),
                "rel_pct": _t_interval(100.0 * (ta - tb) / tb),
                "level": 0.95,
                "n_seeds": len(per_seed),
                "n_units": cfg.contexts,
                "method": "paired on the same drafted trees and contexts; per-seed mean over contexts; "
                "t-interval over seeds",
            }
        )
    return {"rules": rules, "paired_effects": records}


def run_field_lab(
    configs: list[FieldLabConfig],
    out: str | Path,
    *,
    overwrite: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Run every config, write ``out`` (JSON) and ``out`` with suffix ``.md``; return the results."""
    out = Path(out)
    md = out.with_suffix(".md")
    for path in (out, md):
        if path.exists() and not overwrite:
            raise FileExistsError(f"{path} already exists; pass overwrite=True to replace it")
    it = [(c, s) for c in configs for s in range(c.seeds)]
    if progress:
        from tqdm import (  # lazy: `exitlaw --help` and `import exitlaw.simulate` load this module; tqdm is an extra's
            tqdm,
        )

        it = tqdm(it, desc="field lab", unit="seed")
    per: dict[int, list] = {}
    for c, s in it:
        per.setdefault(id(c), []).append(run_seed(c, s))
    runs = [{"config": c.to_dict(), **summarise(c, per[id(c)])} for c in configs]
    result = {
        "schema": SCHEMA,
        "version": 1,
        "exitlaw_version": __version__,
        "produced_by": "exitlaw.simulate.lab.field_lab.run_field_lab",
        "notes": NOTES,
        "runs": runs,
        "paired_effects": [r for run in runs for r in run["paired_effects"]],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(md, render_markdown(result))
    atomic_write_text(out, json.dumps(result, indent=1))
    return result


def render_markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Field lab: UniVer and HSD against recursive rejection sampling",
        "",
        "Same drafted trees and contexts per rule (Tsubame two-pass trees; chains for HSD). "
        "tau = mean block length; 1 + C_p = mean fixed-tree ceiling of the realised trees. "
        "Intervals: 95 % t over seeds.",
        "",
        result.get("notes", ""),
        "",
    ]
    for run in result["runs"]:
        c = run["config"]
        lines += [
            f"## V={c['vocab']} B={c['budget']} H={c['horizon']} T={c['temperature']} "
            f"noise={c['drafter_noise']} seeds={c['seeds']} contexts={c['contexts']}",
            "",
            "| rule | tau [95 % CI] | mean 1 + C_p | tau - (1 + C_p) [95 % CI] |",
            "|---|---|---|---|",
        ]
        for r, v in run["rules"].items():
            t, d = v["tau"], v["tau_minus_ceiling"]
            lines.append(
                f"| {r} | {t['mean']:.4f} [{t['lo']:.4f}, {t['hi']:.4f}] | {v['mean_ceiling']:.4f} | "
                f"{d['mean']:+.4f} [{d['lo']:+.4f}, {d['hi']:+.4f}] |"
            )
        lines += ["", "| comparison | diff [95 % CI] | rel % [95 % CI] |", "|---|---|---|"]
        for rec in run["paired_effects"]:
            d, r = rec["diff"], rec["rel_pct"]
            lines.append(
                f"| {rec['comparison']} | {d['mean']:+.4f} [{d['lo']:+.4f}, {d['hi']:+.4f}] | "
                f"{r['mean']:+.2f} [{r['lo']:+.2f}, {r['hi']:+.2f}] |"
            )
        lines.append("")
    return "\n".join(lines)


__all__ = [
    "FieldLabConfig",
    "FIXED",
    "KEYS",
    "run_field_lab",
    "run_seed",
    "summarise",
    "render_markdown",
    "RULES",
    "PAIRS",
]
