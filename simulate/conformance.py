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

from exitlaw.theory import DraftTree

from .conformance_cases import Case, MarginalCase, conditional_cases, marginal_cases
from .conformance_checks import auto_samples, check_case, completed_check, extend_counts

EXACT_AND_SATURATING, NOT_EXACT, NOT_SATURATING = "exact and saturating", "not exact", "exact but not saturating"
MARGINALLY_EXACT = "exact averaged over the drafts"  # marginal mode: saturation is a fixed-tree notion
EXIT_CODES = {EXACT_AND_SATURATING: 0, MARGINALLY_EXACT: 0, NOT_EXACT: 1, NOT_SATURATING: 3}
CHECKS = ("completed_block", "block", "exit", "residual_bonus", "mean_length")


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
            delta: float = 0.1, power: float = 0.999, keep_going: bool = False,
            chains_only: bool = False) -> KitReport:
    """Run the kit on ``fn`` and return the report (see the module docstring).

    Unless ``keep_going``, the remaining cases are skipped once a case shows the
    verifier is not exact (the verdict cannot change). ``chains_only`` (marginal mode)
    drafts chains only, for chain speculative sampling.
    """
    if mode not in ("conditional", "marginal"):
        raise ValueError(f"mode must be 'conditional' or 'marginal', got {mode!r}")
    check_signature(fn, mode)
    root = np.random.SeedSequence(seed)
    cases = conditional_cases(seed, budget=budget, vocab=vocab) if mode == "conditional" else \
        marginal_cases(seed, budget=budget, vocab=vocab, chains_only=chains_only)
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
    if chains_only:
        reproduce += " --chains-only"
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
    observed = extend_counts(blocks, case.target, case.horizon, kit_rng)
    res = completed_check(observed, case.target, case.horizon, n, alpha, delta, None)
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
