"""``exitlaw prove --mode marginal``: sampled-draft verifiers, exact averaged over the drafts, proved with
symbolic target **and** draft rows, and a symbolic witness that they are not exact on a fixed tree.

A rule is a procedure ``f(topology, target, draft, rand) -> block`` (a tuple of emitted tokens):
``target(prefix)`` and ``draft(prefix)`` give the rows ``p(. | prefix)`` and ``q(. | prefix)``; the rule
draws the tree's tokens from ``q`` (stream ``draft``) and verifies them (docs/design.md §1.8, "Verifiers over
sampled drafts"). :func:`chain_rule`, :func:`specinfer_rule`, :func:`without_replacement_rule` and
:func:`tsubame_rule` wrap :mod:`.verifiers.sampled_draft`.

**Marginal exactness** (the kit's ``--mode marginal``): with the horizon ``H = depth + 1`` of the
topology, the emitted block completed by exact target sampling to ``H`` tokens has the target's law
on every ``H``-token sequence ``s``:  ``M(s) = T(s)`` with ``M(s[:k]) = M(s[:k-1]) p(s_k | s[:k-1]) +
Pr[block = s[:k]]`` and ``T(s) = prod_k p(s_k | s[:k-1])``.

Every row of every prefix shorter than ``H`` is symbolic (:mod:`.symbolic`: ``p`` and ``q`` each
``V - 1`` free positive symbols per prefix). Recursive rejection compares ``p`` with ``q`` (``min(1, p/q)``,
``(p - q)+``), which no coefficient sign decides, so the prover **splits into sign regions**: each
undecided difference is assumed ``> 0``, then ``< 0`` (depth-first over the differences met, like
the replay of :func:`~.randomness.enumerate_law`), and in each region the identity is checked as an
identity of rational functions. Holding in every region is the proof; its scope is the open regions
(points where a compared difference is exactly zero are not covered). Where an identity fails, a
rational point inside the region is searched for (the region's assumptions checked exactly), the rule
is re-run there with ``Fraction`` rows, and the difference is confirmed. A rule that cannot run on
symbols at all (Tsubame plans its topology from float draft scores) is searched at rational points.

**Conditional witness** (:func:`conditional_witness`): on a fixed drafted tree (a token assignment,
siblings distinct), the rule's ``(exit, bonus)`` law against the block law ``P(v) p_v(y)``, region by
region; the first region where they differ gives a rational point where the fixed-tree law is not
the block law.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from typing import Callable

import numpy as np

from exitlaw.simulate.prove.prover import (
    COUNTEREXAMPLE,
    EXIT_CODES,
    PROVED,
    UNPROVED,
    ProofError,
    ReportClock,
    identities,
    laws_compared,
    report_text,
    source_sha256,
    unproved_on_symbols,
)
from exitlaw.simulate.prove.symbolic import (
    Sym,
    SymbolicError,
    assuming,
    rows_at,
    symbolic_one,
    symbolic_rows,
)
from exitlaw.simulate.prove.tree_enum import token_assignments, tree_shapes
from exitlaw.simulate.randomness import enumerate_law
from exitlaw.simulate.verifiers.sampled_draft import (
    speculative_round,
    tsubame_round,
    verify_sampled,
)
from exitlaw.theory import DistributionError, DraftTree


class RegionLimit(ProofError):
    """More sign regions than the prover allows."""


# ----- the rules --------------------------------------------------------------------------------------
def chain_rule(topology, target, draft, rand):
    """Chain speculative sampling (a chain topology)."""
    return speculative_round(topology, target, draft, rand, rule="chain")[0]


def specinfer_rule(topology, target, draft, rand):
    """SpecInfer: i.i.d. children from ``q``, recursive rejection sampling."""
    return speculative_round(topology, target, draft, rand, rule="specinfer")[0]


def without_replacement_rule(topology, target, draft, rand):
    """Siblings drawn without replacement, recursive rejection with ``q`` renormalised (EAGLE-2 / Sequoia)."""
    return speculative_round(topology, target, draft, rand, rule="without_replacement")[0]


def tsubame_rule(topology, target, draft, rand):
    """Tsubame two-pass with the topology's budget: plan from draft scores, re-sample, verify."""
    return tsubame_round(target, draft, rand, budget=len(topology) - 1)


RULES = {
    "chain": chain_rule,
    "specinfer": specinfer_rule,
    "without_replacement": without_replacement_rule,
    "tsubame": tsubame_rule,
}


# ----- symbolic rows per prefix ------------------------------------------------------------------------
def prefixes(vocab: int, horizon: int) -> list[tuple]:
    """Every prefix of length ``< horizon`` (by length, then lexicographic)."""
    return [t for k in range(horizon) for t in itertools.product(range(vocab), repeat=k)]


def prefix_rows(vocab: int, horizon: int, point: dict | None = None):
    """``(target, draft, one, index)``: symbolic (or, at ``point``, rational) rows for every prefix."""
    pre = prefixes(vocab, horizon)
    index = {t: i for i, t in enumerate(pre)}
    if point is None:
        rows, one = symbolic_rows(2 * len(pre), vocab), symbolic_one(2 * len(pre), vocab)
    else:
        rows, one = rows_at(2 * len(pre), vocab, point), Fraction(1)

    def target(prefix):
        return list(rows[index[tuple(prefix)]])

    def draft(prefix):
        return list(rows[len(pre) + index[tuple(prefix)]])

    return target, draft, one, index


def horizon_of(topology) -> int:
    depth = [0] * len(topology)
    for u in range(1, len(topology)):
        depth[u] = depth[topology[u]] + 1
    return max(depth) + 1


def marginal_gaps(law: dict, target, vocab: int, horizon: int, one) -> dict:
    """``{s: M(s) - T(s)}`` over the ``H``-token sequences (module docstring); all zero iff marginally exact."""
    zero = one - one
    for block in law:
        if not (
            isinstance(block, tuple)
            and 1 <= len(block) <= horizon
            and all(isinstance(y, int) and 0 <= y < vocab for y in block)
        ):
            raise ProofError(
                f"the rule returned {block!r}; expected a block of 1..{horizon} tokens in 0..{vocab - 1}"
            )
    level = {(): (zero, one)}
    for _ in range(horizon):
        nxt = {}
        for s, (m, t) in level.items():
            row = target(s)
            for y in range(vocab):
                nxt[s + (y,)] = (m * row[y] + law.get(s + (y,), zero), t * row[y])
        level = nxt
    return {s: m - t for s, (m, t) in level.items()}


# ----- sign regions ------------------------------------------------------------------------------------
def _key(diff: Sym):
    """``(field element up to sign, multiplier)``: ``diff`` and ``-diff`` share one assumption."""
    lc = diff.f.numer.LC * diff.f.denom.LC
    return (diff.f, 1) if lc > 0 else (-diff.f, -1)


def _forced(k, trace) -> int | None:
    """The sign of ``k`` when its ratio to an assumed difference has a certified sign (no new branch)."""
    for k2, s2, d2 in trace:
        q = Sym.of(k / k2, d2.K).sign()
        if q:
            return q * s2
    return None


class _EmptyRegion(Exception):
    """The assumptions so far are contradictory (certified): the region is empty."""


def _numerator(d: Sym) -> Sym:
    """``d``'s numerator times the sign of its denominator when that sign is certified (same sign as ``d``):
    differences of rows normalised differently then add up to polynomial identities."""
    den = d.f.denom
    sg = 1 if all(c > 0 for c in den.coeffs()) else -1 if all(c < 0 for c in den.coeffs()) else 0
    return Sym.of(d.K(d.f.numer) * sg, d.K) if sg else d


def _contradicts(new: Sym, trace, max_terms: int = 3) -> bool:
    """Certified: ``new > 0`` together with the assumptions of ``trace`` is impossible, because ``new`` plus
    at most ``max_terms`` of the assumed-positive ``s_i d_i`` (each as its numerator, :func:`_numerator`)
    has a certified sign ``<= 0``."""
    terms = [_numerator(d) * s for _, s, d in trace]
    new = _numerator(new)
    for r in range(0, min(max_terms, len(terms)) + 1):
        for combo in itertools.combinations(terms, r):
            total = new
            for t in combo:
                total = total + t
            sg = total.sign()
            if sg is not None and sg <= 0:
                return True
    return False


def by_region(compute: Callable, *, max_regions: int = 4096):
    """Yield ``(assumptions, result)`` for every sign region ``compute()`` meets (depth-first).

    ``assumptions`` is a list of ``(Sym difference, sign)``; ``result`` is ``compute()``'s value when the
    undecided comparisons are answered by them, or ``None`` for a region certified empty (a sign forced by a
    certified ratio, or a contradiction of :func:`_contradicts`, is not a branch)."""
    prefix: list[tuple] = []
    for _ in range(max_regions):
        fixed = dict((k, s) for k, s, _ in prefix)
        trace = list(prefix)

        def oracle(diff):
            k, mult = _key(diff)
            s = fixed.get(k)
            if s is None:
                forced = _forced(k, trace)
                if forced is None:
                    d = diff if mult == 1 else -diff
                    up, down = _contradicts(d, trace), _contradicts(-d, trace)
                    if up and down:
                        raise _EmptyRegion()
                    forced = -1 if up else 1 if down else None
                if forced is not None:
                    fixed[k] = forced
                    return forced * mult
                s = fixed[k] = 1
                trace.append((k, 1, diff if mult == 1 else -diff))
            return s * mult

        try:
            with assuming(oracle):
                result = compute()
        except _EmptyRegion:
            result = None
        yield [(d, s) for _, s, d in trace], result
        k = len(trace) - 1
        while k >= 0 and trace[k][1] == -1:
            k -= 1
        if k < 0:
            return
        prefix = trace[:k] + [(trace[k][0], -1, trace[k][2])]
    raise RegionLimit(f"more than {max_regions} sign regions")


def point_in_region(
    assumptions, num_symbols: int, rng: random.Random, also=None, tries: int = 3000
):
    """A rational point satisfying every ``(difference, sign)`` (and where ``also`` is non-zero), or ``None``."""
    for _ in range(tries):
        pt = {i: Fraction(rng.randint(1, 19), rng.randint(1, 6)) for i in range(num_symbols)}
        if all((d.at(pt) > 0) == (s > 0) and d.at(pt) != 0 for d, s in assumptions) and (
            also is None or also.at(pt) != 0
        ):
            return pt
    return None


# ----- the report ---------------------------------------------------------------------------------------
@dataclass
class MarginalReport:
    rule: str
    status: str
    exit_code: int
    max_nodes: int
    vocab: int
    source_sha256: str
    topologies: int = 0
    regions: int = 0
    empty_regions: int = 0  # regions certified empty (contradictory sign assumptions)
    unresolved: int = 0  # regions where an identity fails but no rational point was found
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    symbolic: bool = True
    note: str = ""
    counterexample: dict = field(default_factory=dict)
    conditional_witness: dict = field(default_factory=dict)
    scope: str = (
        "every rooted topology with <= max_nodes nodes (chains only for the chain rule), vocabularies "
        "2..vocab, symbolic target and draft rows for every prefix shorter than the horizon, interior "
        "rows; sign regions of the compared differences are open (boundaries excluded)"
    )

    def to_json(self) -> dict:
        return asdict(self)


def _fmt_rows(fn, pre):
    return {",".join(map(str, t)) or "()": [str(x) for x in fn(t)] for t in pre}


def _chains_only(proc) -> bool:
    # Tsubame reads only the topology's size (its budget): one topology per size
    return proc is chain_rule or proc is tsubame_rule


def _horizon(proc, topo) -> int:
    # Tsubame plans its own topology: any depth up to the budget
    return len(topo) if proc is tsubame_rule else horizon_of(topo)


def prove_marginal(
    proc: Callable,
    *,
    name: str = "rule",
    max_nodes: int = 3,
    vocab: int = 2,
    seed: int = 0,
    search_points: int = 6,
    witness: bool = True,
    chains_only: bool | None = None,
    max_regions: int = 4096,
) -> MarginalReport:
    """Marginal exactness of ``proc`` on every topology (module docstring); stops at the first counterexample.

    With ``witness`` the conditional (fixed-tree) witness is searched too (:func:`conditional_witness`,
    for the built-in rules, which verify with :func:`~.verifiers.sampled_draft.verify_sampled`)."""
    if not 1 <= max_nodes <= 5:
        raise ProofError(f"--max-nodes must be in 1..5 in marginal mode, got {max_nodes}")
    if not 2 <= vocab <= 4:
        raise ProofError(f"--vocab must be in 2..4 in marginal mode, got {vocab}")
    chains_only = _chains_only(proc) if chains_only is None else chains_only
    rng = random.Random(seed)
    rep = MarginalReport(name, PROVED, EXIT_CODES[PROVED], max_nodes, vocab, source_sha256(proc))
    done = ReportClock(rep).done

    for n in range(1, max_nodes + 1):
        for topo in tree_shapes(n):
            if chains_only and any(topo[u] != u - 1 for u in range(1, n)):
                continue
            kids = max([topo[1:].count(v) for v in range(n)] + [0])
            for V in range(max(2, kids), vocab + 1):
                rep.topologies += 1
                cex = _one_topology(proc, topo, V, rep, rng, search_points, max_regions)
                if cex:
                    rep.counterexample = cex
                    return done(COUNTEREXAMPLE)
    if witness and proc in (chain_rule, specinfer_rule, without_replacement_rule, tsubame_rule):
        rep.conditional_witness = (
            conditional_witness(
                max_nodes=max_nodes,
                vocab=vocab,
                seed=seed,
                chains_only=chains_only,
                without_replacement=proc is not specinfer_rule,
            )
            or {}
        )
    return done(PROVED if rep.symbolic and not rep.unresolved else UNPROVED)


def _law(proc, topo, target, draft, one):
    return enumerate_law(
        lambda r: tuple(int(y) for y in proc(list(topo), target, draft, r)), one=one
    )


def _concrete_gaps(proc, topo, V, H, point):
    target, draft, one, _ = prefix_rows(V, H, point)
    law = _law(proc, topo, target, draft, one)
    return law, marginal_gaps(law, target, V, H, one), target, draft


def _cex(proc, topo, V, H, point, how, region=None):
    pre = prefixes(V, H)
    try:
        law, gaps, target, draft = _concrete_gaps(proc, topo, V, H, point)
    except (DistributionError, ZeroDivisionError) as err:
        target, draft, _, _ = prefix_rows(V, H, point)
        return {
            "topology": list(topo),
            "vocab": V,
            "horizon": H,
            "found_by": how,
            "error": repr(err),
            "target_rows": _fmt_rows(target, pre),
            "draft_rows": _fmt_rows(draft, pre),
            "block_law": {},
            "completed_minus_target": {},
            **({"region": region} if region is not None else {}),
        }
    bad = {",".join(map(str, s)): str(g) for s, g in gaps.items() if g != 0}
    if not bad:
        return None
    out = {
        "topology": list(topo),
        "vocab": V,
        "horizon": H,
        "found_by": how,
        "target_rows": _fmt_rows(target, pre),
        "draft_rows": _fmt_rows(draft, pre),
        "block_law": {",".join(map(str, b)): str(p) for b, p in sorted(law.items())},
        "completed_minus_target": bad,
    }
    if region is not None:
        out["region"] = region
    return out


def _guarded(compute):
    """``compute()``, or the error a rule raises in a region (an all-zero residual: empty or a real bug)."""
    try:
        return compute()
    except (DistributionError, ZeroDivisionError) as err:
        return err


def _one_topology(proc, topo, V, rep, rng, search_points, max_regions):
    H = _horizon(proc, topo)
    nsym = 2 * len(prefixes(V, H)) * (V - 1)
    if rep.symbolic:
        target, draft, one, _ = prefix_rows(V, H)
        try:
            for assumptions, law in by_region(
                lambda: _guarded(lambda: _law(proc, topo, target, draft, one)),
                max_regions=max_regions,
            ):
                rep.regions += 1
                if law is None:
                    rep.empty_regions += 1
                    continue
                if isinstance(law, Exception):
                    bad = [None]
                else:
                    gaps = marginal_gaps(law, target, V, H, one)
                    bad = [g for g in gaps.values() if g != 0]
                if not bad:
                    continue
                pt = point_in_region(assumptions, nsym, rng, also=bad[0])
                # possibly empty: the proof cannot use it, and there is nothing to report
                if pt is None:
                    rep.unresolved += 1
                    rep.note = rep.note or (
                        f"a sign region where the identity fails has no rational point found "
                        f"(possibly empty; topology {list(topo)}, V={V}): not a proof"
                    )
                    continue
                region = [f"{d} {'>' if s > 0 else '<'} 0" for d, s in assumptions]
                cex = _cex(
                    proc,
                    topo,
                    V,
                    H,
                    pt,
                    "symbolic identity in a sign region, then rational point",
                    region,
                )
                if cex:
                    return cex
        except SymbolicError as err:
            rep.symbolic = False
            rep.note = (
                f"not symbolic: {err} (topology {list(topo)}, V={V}); searched {search_points} rational "
                "points per topology instead"
            )
        else:
            return None
    for _ in range(search_points):
        pt = {i: Fraction(rng.randint(1, 19), rng.randint(1, 6)) for i in range(nsym)}
        cex = _cex(proc, topo, V, H, pt, "search at rational points")
        if cex:
            return cex
    return None


def conditional_witness(
    *,
    max_nodes: int = 3,
    vocab: int = 2,
    seed: int = 0,
    chains_only: bool = False,
    without_replacement: bool = True,
    max_regions: int = 4096,
) -> dict | None:
    """A drafted tree and rational rows where recursive rejection's ``(exit, bonus)`` law differs from the
    block law (found symbolically in a sign region, confirmed at a rational point), or ``None``."""
    rng = random.Random(seed)
    for n in range(2, max_nodes + 1):
        for topo in tree_shapes(n):
            if chains_only and any(topo[u] != u - 1 for u in range(1, n)):
                continue
            for V in range(2, vocab + 1):
                for tokens in token_assignments(topo, V):
                    tree = DraftTree(parent=np.array(topo), token=np.array(tokens))
                    H = horizon_of(topo)
                    target, draft, one, _ = prefix_rows(V, H)
                    p = [target(tree.path(v)) for v in range(n)]
                    q = [draft(tree.path(v)) for v in range(n)]

                    def law():
                        return enumerate_law(
                            lambda r: verify_sampled(
                                topo, tokens, p, q, r, without_replacement=without_replacement
                            ),
                            one=one,
                        )

                    nsym = 2 * len(prefixes(V, H)) * (V - 1)
                    for assumptions, lw in by_region(
                        lambda: _guarded(law), max_regions=max_regions
                    ):
                        if lw is None or isinstance(lw, Exception):
                            continue
                        ids = identities(tree, p, lw, one)
                        if ids["block"]:
                            continue
                        diff = next(
                            ids["impl"][v][y] - ids["canonical"][v][y]
                            for v in range(n)
                            for y in range(V)
                            if ids["impl"][v][y] != ids["canonical"][v][y]
                        )
                        pt = point_in_region(assumptions, nsym, rng, also=diff)
                        if pt is None:
                            continue
                        tg, dr, one_q, _ = prefix_rows(V, H, pt)
                        pq = [tg(tree.path(v)) for v in range(n)]
                        qq = [dr(tree.path(v)) for v in range(n)]
                        lq = enumerate_law(
                            lambda r: verify_sampled(
                                topo, tokens, pq, qq, r, without_replacement=without_replacement
                            ),
                            one=one_q,
                        )
                        idq = identities(tree, pq, lq, one_q)
                        if idq["block"]:
                            continue
                        return {
                            "tree": {"parent": list(topo), "token": list(tokens)},
                            "vocab": V,
                            "target_rows": [[str(x) for x in r] for r in pq],
                            "draft_rows": [[str(x) for x in r] for r in qq],
                            "region": [f"{d} {'>' if s > 0 else '<'} 0" for d, s in assumptions],
                            **laws_compared(idq, n, V, str),
                        }
    return None


def _marginal_counterexample(c: dict) -> list[str]:
    """The topology, target and draft rows, and where the completed block leaves the target's law."""
    out = [
        f"COUNTEREXAMPLE (not marginally exact; found by {c['found_by']})",
        f"  topology {c['topology']}, vocabulary {c['vocab']}, horizon {c['horizon']}",
    ]
    for k, r in c["target_rows"].items():
        out.append(f"  p(.|{k}) = [{', '.join(r)}]   q(.|{k}) = [{', '.join(c['draft_rows'][k])}]")
    if c.get("error"):
        out.append(f"  the rule raises there: {c['error']}")
    for s, g in c["completed_minus_target"].items():
        out.append(f"  sequence {s}: completed block - target = {g}")
    return out


def _witness_lines(w: dict) -> list[str]:
    """A drafted tree on which the rule is not conditionally exact, its law beside the block law."""
    if not w:
        return []
    out = [
        f"NOT CONDITIONALLY EXACT (witness): drafted tree parent {w['tree']['parent']} token "
        f"{w['tree']['token']}, vocabulary {w['vocab']}"
    ]
    for v, (pr, qr) in enumerate(zip(w["target_rows"], w["draft_rows"])):
        out.append(f"  p_{v} = [{', '.join(pr)}]   q_{v} = [{', '.join(qr)}]")
    for k in w["block_law"]:
        mark = "" if w["implementation_law"][k] == w["block_law"][k] else "   <-"
        out.append(
            f"  (exit, bonus) {k:<6} {w['implementation_law'][k]:>14} {w['block_law'][k]:>14}{mark}"
        )
    out.append(f"  E[L] given the tree = {w['mean_length']}   1 + C_p = {w['ceiling']}")
    return out


def format_marginal(rep: MarginalReport) -> str:
    says = {
        PROVED: "PROVED (marginally exact): the block completed by the target has the target's law on "
        "every horizon-length sequence, averaged over the drafts, as identities of rational functions "
        "in every sign region",
        UNPROVED: unproved_on_symbols("the rule", " in every region"),
    }
    return report_text(
        rep,
        f"exitlaw prove --mode marginal {rep.rule}   max nodes {rep.max_nodes}   vocabularies 2..{rep.vocab}",
        f"{rep.topologies} (topology, vocabulary) pairs, {rep.regions} sign regions",
        says,
        _marginal_counterexample,
        _witness_lines(rep.conditional_witness),
    )


__all__ = [
    "prove_marginal",
    "conditional_witness",
    "format_marginal",
    "marginal_gaps",
    "by_region",
    "prefix_rows",
    "MarginalReport",
    "chain_rule",
    "specinfer_rule",
    "without_replacement_rule",
    "tsubame_rule",
    "RULES",
]
