"""The conformance kit: is a user's verifier exact, and is it saturating?

``run_kit(fn)`` samples ``fn(tree, probs, rng) -> (exit_node, bonus_token)`` on the
cases of :mod:`.conformance_cases` and runs, per case, five calibrated checks:

* ``completed_block`` -- the block extended by exact target sampling to ``H + 1``
  tokens must follow the target's ``(H + 1)``-token law (exactness);
* ``block`` -- ``(exit, bonus)`` against ``P(v) p_v(y) [y not a child token]``;
* ``exit`` -- the exit node against ``w = P rho``;
* ``residual_bonus`` -- the bonus given the exit against ``p_v^res`` (chi-squares of
  the nodes summed, conditionally independent given the exit counts);
* ``mean_length`` -- ``E[L]`` against ``1 + C_p`` (z with the exact variance).

Each distribution check is the pooled Pearson chi-square at ``alpha / 2`` plus the
Bonferroni per-cell binomial at ``alpha / 2``; ``alpha`` per check is the family
rate (default ``1e-6``) divided by the number of checks, so the kit wrongly fails an
exact, saturating verifier with probability at most the family rate. Power: the
sample size per case makes each chi-square reject every alternative at total
variation ``>= delta`` (on the pooled cells) with probability ``>= power``.

Verdicts (by the fixed-tree ceiling theorem, DESIGN.md section 1):
``not exact`` if the completed-block law fails (exactness is defined by it) or
``E[L] > 1 + C_p`` (impossible for an exact verifier); ``exact but not saturating`` if
the completed-block law holds but the block, exit or residual law, or ``E[L] = 1 + C_p``,
fails (an exact verifier attains the ceiling iff its block law is canonical); else
``exact and saturating``.
In ``marginal`` mode (sampled-draft verifiers ``fn(tree, probs, draft_probs, rng)``) the
kit draws each tree from the drafter (siblings without replacement) and checks the
completed-block law only; the verdicts are ``exact averaged over the drafts`` (exit 0)
or ``not exact`` (saturation is a fixed-tree notion).
"""

from __future__ import annotations

import inspect
from dataclasses import asdict, dataclass, field
from importlib import import_module
from typing import Callable

import numpy as np
from scipy import stats as sps

from exitlaw.theory import DraftTree

from .conformance_cases import Case, MarginalCase, conditional_cases, marginal_cases
from .stats import cell_binomial, chisquare_power, pooled_chisquare, sample_size

EXACT_AND_SATURATING, NOT_EXACT, NOT_SATURATING = "exact and saturating", "not exact", "exact but not saturating"
MARGINALLY_EXACT = "exact averaged over the drafts"  # marginal mode: saturation is a fixed-tree notion
EXIT_CODES = {EXACT_AND_SATURATING: 0, MARGINALLY_EXACT: 0, NOT_EXACT: 1, NOT_SATURATING: 3}
CHECKS = ("completed_block", "block", "exit", "residual_bonus", "mean_length")
# Cells with fewer expected counts are pooled. 20 (not the textbook 5) keeps the chi-square tail
# calibrated at the kit's tiny levels: measured on 4e6 null draws with 31 cells of 20 expected,
# the rate at nominal 1e-6 was 1.25e-6 (at 5 expected, nominal 1e-5 gave 2.8e-5).
MIN_EXPECTED = 20.0


class VerifierCallError(ValueError):
    """The verifier could not be loaded, called, or returned something that is not (node, token)."""


def load_verifier(spec: str) -> Callable:
    """``MODULE:CALLABLE`` -> the callable, with a clear error when it cannot be imported."""
    if ":" not in spec:
        raise VerifierCallError(f"expected MODULE:CALLABLE, got {spec!r}")
    mod_name, _, attr = spec.partition(":")
    try:
        mod = import_module(mod_name)
    except ImportError as err:
        raise VerifierCallError(f"cannot import module {mod_name!r}: {err}") from err
    obj = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise VerifierCallError(f"module {mod_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise VerifierCallError(f"{spec} is a {type(obj).__name__}, not a callable")
    return obj


def check_signature(fn: Callable, mode: str) -> None:
    names = ("tree", "probs", "rng") if mode == "conditional" else ("tree", "probs", "draft_probs", "rng")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as err:
        raise VerifierCallError(f"cannot read the signature of {fn!r}: {err}") from err
    try:
        sig.bind(*names)
    except TypeError as err:
        raise VerifierCallError(
            f"{getattr(fn, '__name__', fn)}{sig} cannot be called as f({', '.join(names)}) "
            f"({mode} mode): {err}") from err


def _as_pair(out, tree: DraftTree, vocab: int) -> tuple[int, int]:
    ok = isinstance(out, (tuple, list, np.ndarray)) and len(out) == 2
    if ok:
        try:
            v, y = (int(x) for x in out)
            ok = all(float(x) == int(x) for x in out)
        except (TypeError, ValueError):
            ok = False
    if not ok:
        raise VerifierCallError(f"the verifier returned {out!r}; expected (exit_node, bonus_token), two integers")
    if not 0 <= v < tree.num_nodes:
        raise VerifierCallError(f"the verifier returned exit node {v}, outside 0..{tree.num_nodes - 1}")
    if not 0 <= y < vocab:
        raise VerifierCallError(f"the verifier returned bonus token {y}, outside vocabulary 0..{vocab - 1}")
    return v, y


# ----- statistics of one case -------------------------------------------------------------
@dataclass
class CheckResult:
    name: str
    statistic: float
    dof: int
    pvalue: float
    alpha: float
    rejected: bool
    power: float | None = None
    worst: dict = field(default_factory=dict)


def _dist_check(name, counts, probs, alpha, labels, delta) -> CheckResult:
    chi = pooled_chisquare(counts, probs, min_expected=MIN_EXPECTED)
    cell = cell_binomial(counts, probs, alpha=alpha / 2)
    worst = {"cell": labels(cell.cell), "count": cell.count, "expected": round(cell.expected, 3),
             "z": round(cell.z, 2), "cell_pvalue": cell.pvalue}
    if chi.zero_cell_hits:
        worst = {"cell": labels(chi.zero_cell_hits[0]), "count": int(np.ravel(counts)[chi.zero_cell_hits[0]]),
                 "expected": 0.0, "reason": "observed a zero-probability cell"}
    rejected = bool(chi.zero_cell_hits) or chi.pvalue < alpha / 2 or bool(cell.flagged)
    n = int(np.sum(counts))
    power = chisquare_power(n, max(chi.cells, 2), alpha / 2, delta) if n else None
    return CheckResult(name, chi.statistic, chi.dof, min(chi.pvalue, cell.pvalue * max(len(np.ravel(probs)), 1)),
                       alpha, rejected, power, worst)


def _extend(blocks: dict, target, horizon: int, rng) -> dict:
    """Multinomial extension of block counts by exact target sampling to ``horizon`` tokens."""
    out: dict = {}
    stack = list(blocks.items())
    while stack:
        prefix, c = stack.pop()
        if len(prefix) >= horizon:
            out[prefix] = out.get(prefix, 0) + c
            continue
        row = np.asarray(target(prefix), dtype=np.float64)
        for y, k in enumerate(rng.multinomial(c, row / row.sum())):
            if k:
                stack.append((prefix + (y,), int(k)))
    return out


def _big_sequences(target, horizon: int, thr: float) -> dict:
    """Sequences of ``horizon`` tokens with target probability ``>= thr`` (depth-first, pruned)."""
    big: dict = {}
    stack = [((), 1.0)]
    while stack:
        prefix, p = stack.pop()
        if len(prefix) == horizon:
            big[prefix] = p
            continue
        for y, q in enumerate(np.asarray(target(prefix), dtype=np.float64)):
            if p * q >= thr:
                stack.append((prefix + (y,), p * q))
    return big


def auto_samples(case: Case | MarginalCase, alpha: float, power: float, delta: float, *,
                 cap: int = 20000) -> int:
    """Samples for ``case`` so that the completed-block, block and exit chi-squares (each at level
    ``alpha``) all have power ``>= power`` at TV ``delta`` on the cells their pooling forms."""
    block = _law(case)[0] if isinstance(case, Case) else None
    n = max(sample_size(30, alpha, power, delta), getattr(case, "min_samples", 0))
    for _ in range(50):  # more samples -> more unpooled cells -> more samples; converges (cells are finite)
        need = sample_size(len(_big_sequences(case.target, case.horizon, MIN_EXPECTED / n)) + 1,
                           alpha / case.horizon, power, delta)
        if block is not None:
            need = max([need] + [sample_size(c, alpha, power, delta) for c in (
                int((n * block >= MIN_EXPECTED).sum()) + 1, int((n * block.sum(1) >= MIN_EXPECTED).sum()) + 1)])
        need = min(cap, need)
        if need <= n:
            return n
        n = need
    return n


def _seq_prob(target, seq) -> float:
    p = 1.0
    for t in range(len(seq)):
        p *= float(target(seq[:t])[seq[t]])
    return p


def _completed_check(observed: dict, target, horizon: int, n: int, alpha: float, delta: float,
                     tree: DraftTree | None) -> CheckResult:
    """The completed sequences' first ``k`` tokens against the target's ``k``-token law, for every
    ``k = 1..horizon`` at level ``alpha / horizon`` each (short prefixes have few cells, hence power
    against bonus-law bugs; the full horizon sees every token). Chi-square over the sequences of
    expected count >= MIN_EXPECTED plus one pooled remainder; the worst ``k`` is reported."""
    zero = [s for s in observed if _seq_prob(target, s) == 0.0]
    level = alpha / horizon
    results = []
    for k in range(1, horizon + 1):
        obs_k: dict = {}
        for s, c in observed.items():
            obs_k[s[:k]] = obs_k.get(s[:k], 0) + c
        big = _big_sequences(target, k, MIN_EXPECTED / n)
        seqs = sorted(big)
        counts = [obs_k.get(s, 0) for s in seqs] + [n - sum(obs_k.get(s, 0) for s in seqs)]
        probs = np.array([big[s] for s in seqs] + [max(1.0 - sum(big.values()), 0.0)])

        def label(i, seqs=seqs):
            return {"sequence": "pooled rare sequences"} if i >= len(seqs) else _seq_label(seqs[i], tree)
        res = _dist_check("completed_block", counts, probs / probs.sum(), level, label, delta)
        res.worst["prefix_length"] = k
        results.append(res)
    worst = min(results, key=lambda r: (not r.rejected, r.pvalue))
    worst.alpha = alpha
    worst.power = results[-1].power  # the power claim is for the full completed law
    if zero:
        worst.rejected = True
        worst.pvalue = 0.0
        worst.worst = {**_seq_label(zero[0], tree), "count": observed[zero[0]], "expected": 0.0,
                       "reason": "observed a sequence the target gives probability zero"}
    return worst


def _seq_label(seq, tree):
    out = {"sequence": list(seq)}
    if tree is not None:
        node = 0
        for t in seq:
            nxt = tree.child_with_token(node, t)
            if nxt is None:
                break
            node = nxt
        out["node"] = node
    return out


def _law(case: Case):
    probs = case.probs
    tree = case.tree
    edge = np.ones(tree.num_nodes)
    edge[1:] = probs[tree.parent[1:], tree.token[1:]]
    prefix = np.ones(tree.num_nodes)
    for u in range(1, tree.num_nodes):
        prefix[u] = prefix[tree.parent[u]] * edge[u]
    masked = probs.copy()
    masked[tree.parent[1:], tree.token[1:]] = 0.0
    block = prefix[:, None] * masked
    return block / block.sum(), prefix


def check_case(case: Case, exits: np.ndarray, bonus: np.ndarray, alpha: float, delta: float,
               rng: np.random.Generator) -> tuple[list[CheckResult], dict]:
    tree, n = case.tree, exits.size
    block, prefix = _law(case)
    counts = np.zeros_like(block)
    np.add.at(counts, (exits, bonus), 1)
    res = []
    blocks: dict = {}
    for (v, y), c in zip(*np.unique(np.stack([exits, bonus], 1), axis=0, return_counts=True)):
        key = tree.path(int(v)) + (int(y),)
        blocks[key] = blocks.get(key, 0) + int(c)
    observed = _extend(blocks, case.target, case.horizon, rng)
    res.append(_completed_check(observed, case.target, case.horizon, n, alpha, delta, tree))
    vocab = case.vocab
    node_label = lambda i: {"node": int(i // vocab), "bonus": int(i % vocab)}  # noqa: E731
    res.append(_dist_check("block", counts, block, alpha, node_label, delta))
    w = block.sum(1)
    res.append(_dist_check("exit", counts.sum(1), w, alpha, lambda i: {"node": int(i)}, delta))
    # residual bonus law: sum of per-node chi-squares given the exit counts
    stat, dof, worst, zero_hit = 0.0, 0, (1.0, {}), None
    for v in range(tree.num_nodes):
        m = counts[v].sum()
        if m == 0 or w[v] <= 0:
            continue
        r = block[v] / w[v]
        chi = pooled_chisquare(counts[v], r / r.sum(), min_expected=MIN_EXPECTED)
        if chi.zero_cell_hits:
            zero_hit = {"node": v, "bonus": chi.zero_cell_hits[0], "reason": "bonus is a child token"}
        stat += chi.statistic if np.isfinite(chi.statistic) else 0.0
        dof += chi.dof
        if chi.dof and chi.pvalue < worst[0]:
            worst = (chi.pvalue, {"node": v, "statistic": round(chi.statistic, 2), "dof": chi.dof})
    p = float(sps.chi2.sf(stat, dof)) if dof else 1.0
    if zero_hit:
        p, worst = 0.0, (0.0, zero_hit)
    # diagnostic (names the node whose bonus law is off); its power is not claimed
    res.append(CheckResult("residual_bonus", stat, dof, p, alpha, p < alpha, None, worst[1]))
    depth = tree.depth.astype(np.float64)
    mean = float((w * (depth + 1)).sum())
    var = float((w * (depth + 1) ** 2).sum() - mean ** 2)
    obs = float((tree.depth[exits] + 1).mean())
    z = (obs - mean) / np.sqrt(var / n) if var > 0 else (0.0 if np.isclose(obs, mean) else np.inf * np.sign(obs - mean))
    pz = float(2 * sps.norm.sf(abs(z)))
    res.append(CheckResult("mean_length", float(z), 0, pz, alpha, pz < alpha, None,
                           {"observed": round(obs, 5), "ceiling": round(mean, 5)}))
    return res, {"mean_length": obs, "ceiling": mean, "z": float(z)}


# ----- the kit ------------------------------------------------------------------------------
@dataclass
class KitReport:
    verifier: str
    mode: str
    verdict: str
    exit_code: int
    seed: int
    family_alpha: float
    alpha_per_check: float
    delta: float
    power_target: float
    total_samples: int
    min_power: float
    cases: list = field(default_factory=list)
    failure: dict = field(default_factory=dict)
    reproduce: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def _verdict(case_results: list) -> tuple[str, dict]:
    first_not_exact, first_unsat = None, None
    for case in case_results:
        checks = {c["name"]: c for c in case["checks"]}
        mean = checks["mean_length"]
        above = mean["rejected"] and mean["statistic"] > 0
        below = mean["rejected"] and mean["statistic"] < 0
        law_fail = [c for c in case["checks"] if c["rejected"] and c["name"] != "mean_length"]
        info = lambda c: {"case": case["name"], "tree": case["tree"], "check": c["name"],  # noqa: E731
                          "statistic": c["statistic"], "pvalue": c["pvalue"], **c["worst"]}
        if checks["completed_block"]["rejected"]:
            first_not_exact = first_not_exact or info(checks["completed_block"])
        elif above:
            first_not_exact = first_not_exact or info(mean)
        elif law_fail or below:
            # exact (completed-block law holds) but not the canonical block law: E[L] < 1 + C_p
            first_unsat = first_unsat or info(law_fail[0] if law_fail else mean)
    if first_not_exact:
        return NOT_EXACT, first_not_exact
    if first_unsat:
        return NOT_SATURATING, first_unsat
    return EXACT_AND_SATURATING, {}


def _tree_json(tree: DraftTree) -> dict:
    return {"parent": tree.parent.tolist(), "token": tree.token.tolist()}


def run_kit(fn: Callable, *, name: str = "verifier", mode: str = "conditional", seed: int = 0,
            budget: int = 8, vocab: int = 4, samples: int | None = None, family_alpha: float = 1e-6,
            delta: float = 0.1, power: float = 0.999, keep_going: bool = False) -> KitReport:
    """Run the kit on ``fn`` and return the report (see the module docstring).

    Unless ``keep_going``, the remaining cases are skipped once a case shows the
    verifier is not exact (the verdict cannot change).
    """
    if mode not in ("conditional", "marginal"):
        raise ValueError(f"mode must be 'conditional' or 'marginal', got {mode!r}")
    check_signature(fn, mode)
    root = np.random.SeedSequence(seed)
    cases = conditional_cases(seed, budget=budget, vocab=vocab) if mode == "conditional" else \
        marginal_cases(seed, budget=budget, vocab=vocab)
    checks_per_case = len(CHECKS) if mode == "conditional" else 1
    alpha = family_alpha / (checks_per_case * len(cases))
    report_cases, powers, sizes = [], [], []
    for case, ss in zip(cases, root.spawn(len(cases))):
        n = samples
        if n is None:
            n = auto_samples(case, alpha / 2, power, delta)
        sizes.append(n)
        verifier_seq, kit_seq = ss.spawn(2)
        rng, kit_rng = np.random.default_rng(verifier_seq), np.random.default_rng(kit_seq)
        if mode == "conditional":
            results, lengths = _run_conditional(fn, case, n, rng, kit_rng, alpha, delta)
            tree_json = _tree_json(case.tree)
        else:
            results, lengths = _run_marginal(fn, case, n, rng, kit_rng, alpha, delta)
            tree_json = {"topology": case.topology}
        powers += [r.power for r in results if r.power is not None]
        report_cases.append({"name": case.name, "tree": tree_json, "vocab": _vocab_of(case), "samples": n,
                             "verifier_seed": int(seed), "checks": [asdict(r) for r in results], **lengths})
        judge = _verdict if mode == "conditional" else _marginal_verdict
        if not keep_going and judge(report_cases[-1:])[0] == NOT_EXACT:
            break
    verdict, failure = _verdict(report_cases) if mode == "conditional" else _marginal_verdict(report_cases)
    reproduce = f"exitlaw check {name} --mode {mode} --seed {seed} --budget {budget} --vocab {vocab}"
    if samples is not None:
        reproduce += f" --samples {samples}"
    return KitReport(name, mode, verdict, EXIT_CODES[verdict], seed, family_alpha, alpha, delta, power,
                     int(sum(sizes)), float(min(powers)) if powers else 0.0, report_cases, failure, reproduce)


def _vocab_of(case) -> int:
    return case.vocab if isinstance(case, Case) else int(np.asarray(case.target(())).size)


def _call(fn, args, tree, vocab):
    try:
        out = fn(*args)
    except VerifierCallError:
        raise
    except Exception as err:  # the user's code failed: say so, with the original error chained
        raise VerifierCallError(f"the verifier raised {type(err).__name__}: {err}") from err
    return _as_pair(out, tree, vocab)


def _run_conditional(fn, case: Case, n: int, rng, kit_rng, alpha, delta):
    exits = np.empty(n, dtype=np.int64)
    bonus = np.empty(n, dtype=np.int64)
    probs = case.probs
    probs.setflags(write=False)
    for i in range(n):
        exits[i], bonus[i] = _call(fn, (case.tree, probs, rng), case.tree, case.vocab)
    return check_case(case, exits, bonus, alpha, delta, kit_rng)


def _run_marginal(fn, case: MarginalCase, n: int, rng, kit_rng, alpha, delta):
    from .verifiers.sampled_draft import draw_draft
    from .randomness import GeneratorRandomness

    draft_rand = GeneratorRandomness(kit_rng)
    built: dict = {}
    blocks: dict = {}
    total_len = 0
    for _ in range(n):
        toks = tuple(draw_draft(case.topology, case.draft, draft_rand, without_replacement=True))
        if toks not in built:
            tree = DraftTree(parent=np.array(case.topology), token=np.array(toks))
            p = np.stack([case.target(tree.path(v)) for v in range(tree.num_nodes)])
            q = np.stack([case.draft(tree.path(v)) for v in range(tree.num_nodes)])
            p.setflags(write=False)
            q.setflags(write=False)
            built[toks] = (tree, p, q)
        tree, p, q = built[toks]
        v, y = _call(fn, (tree, p, q, rng), tree, p.shape[1])
        key = tree.path(v) + (y,)
        blocks[key] = blocks.get(key, 0) + 1
        total_len += len(key)
    observed = _extend(blocks, case.target, case.horizon, kit_rng)
    res = _completed_check(observed, case.target, case.horizon, n, alpha, delta, None)
    return [res], {"mean_length": total_len / n}


def _marginal_verdict(case_results):
    for case in case_results:
        c = case["checks"][0]
        if c["rejected"]:
            return NOT_EXACT, {"case": case["name"], "tree": case["tree"], "check": c["name"],
                               "statistic": c["statistic"], "pvalue": c["pvalue"], **c["worst"]}
    return MARGINALLY_EXACT, {}


__all__ = ["run_kit", "load_verifier", "check_signature", "KitReport", "VerifierCallError", "CHECKS",
           "EXIT_CODES", "EXACT_AND_SATURATING", "MARGINALLY_EXACT", "NOT_EXACT", "NOT_SATURATING", "check_case"]
