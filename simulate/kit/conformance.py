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

Each distribution check is two tests, each its own row of the report with its statistic, dof,
p-value and threshold: the pooled Pearson chi-square at ``alpha / 2`` and the worst cell's exact
binomial at ``alpha / 2 / K`` (Bonferroni over its ``K`` cells); a count in a zero-probability cell
is a ``zero cell`` row (rejected at any sample size). ``completed_block`` is tested at every prefix
length ``k = 1..horizon`` at ``alpha / horizon`` each. ``alpha`` per check is the family
rate (default ``1e-6``) divided by the number of checks, so the kit wrongly fails an
exact, saturating verifier with probability at most the family rate. Power: the
sample size per case makes each chi-square reject every alternative at total
variation ``>= delta`` (on the pooled cells) with probability ``>= power``.

Verdicts (by the fixed-tree ceiling theorem, docs/design.md §1.3):
``not exact`` if the completed-block law fails (exactness is defined by it) or
``E[L] > 1 + C_p`` (impossible for an exact verifier); ``exact but not saturating`` if
the completed-block law holds but the block, exit or residual law, or ``E[L] = 1 + C_p``,
fails (an exact verifier attains the ceiling iff its block law is canonical); else
``exact and saturating``.
Exit statuses follow one precedence whatever the order of the cases (:data:`PRECEDENCE`): ``not exact``
(1) > ``verifier failed`` (4: a call raised or ran past the per-call timeout; that case is reported with
its tree, seed, reproduce command and traceback, and the other cases still run) > ``exact but not
saturating`` (3) > ``insufficient samples`` (5: the computed power is below the target, so no "exact"
verdict is given) > ``exact and saturating`` (0). ``bad input`` (2) is only for the verifier's module or
signature (:func:`check_verifier`: import errors, syntax errors, ``sys.exit`` at import, wrong signature or
return type); a report is produced for it too.
In ``marginal`` mode (sampled-draft verifiers ``fn(tree, probs, draft_probs, rng)``) the
kit draws each tree from the drafter (siblings without replacement) and checks the
completed-block law only; the verdicts are ``exact averaged over the drafts`` (exit 0)
or ``not exact`` (saturation is a fixed-tree notion).
In settings mode (``settings=``, :mod:`.settings_cases`) the verifier receives raw logits and the
:class:`~exitlaw.theory.SamplingSettings` instead of probability rows; the cases are judged on the
processed rows, with the same checks and verdicts.
"""

from __future__ import annotations

import traceback
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

from exitlaw.simulate.kit.calls import (
    CallTimeout,
    VerifierCallError,
    VerifierCrash,
    _call,
    _call_limit,
    check_signature,
    load_verifier,
)
from exitlaw.simulate.kit.cases import Case, MarginalCase, conditional_cases, marginal_cases
from exitlaw.simulate.kit.chain_formats import check_chain_format
from exitlaw.simulate.kit.checks import auto_samples, check_case, completed_check, extend_counts
from exitlaw.simulate.kit.formats import adapt_verifier
from exitlaw.simulate.kit.settings_cases import DEFAULT_PANEL, settings_cases
from exitlaw.simulate.randomness import GeneratorRandomness
from exitlaw.simulate.verifiers.sampled_draft import draw_draft
from exitlaw.theory import HF_ORDER, VLLM_ORDER, DraftTree, SamplingSettings
from exitlaw.theory.sampling_settings import FILTERS

EXACT_AND_SATURATING, NOT_EXACT, NOT_SATURATING = (
    "exact and saturating",
    "not exact",
    "exact but not saturating",
)
MARGINALLY_EXACT = (
    "exact averaged over the drafts"  # marginal mode: saturation is a fixed-tree notion
)
VERIFIER_FAILED = "verifier failed"  # a call raised or ran past --timeout in some case
INSUFFICIENT = "insufficient samples"  # no rejection, but computed power below the target
BAD_INPUT = "bad input"  # the verifier's module or signature: nothing was run
EXIT_CODES = {
    EXACT_AND_SATURATING: 0,
    MARGINALLY_EXACT: 0,
    NOT_EXACT: 1,
    BAD_INPUT: 2,
    NOT_SATURATING: 3,
    VERIFIER_FAILED: 4,
    INSUFFICIENT: 5,
}
# One precedence, whatever the order of the cases: evidence of inexactness first (1), then a case that
# could not be judged (4), then evidence of lost length (3), then too little power to say "exact" (5);
# "exact ..." verdicts (0 and 3) need the computed power to reach the target, else 5.
PRECEDENCE = (NOT_EXACT, VERIFIER_FAILED, NOT_SATURATING, INSUFFICIENT)
CHECKS = ("completed_block", "block", "exit", "residual_bonus", "mean_length")


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
    total_samples: int  # samples drawn by the cases that ran (a failed case draws none it reports)
    # smallest computed power; None when no check ran (nothing was computed)
    min_power: float | None
    cases: list = field(default_factory=list)
    failure: dict = field(default_factory=dict)
    reproduce: str = ""
    # one record per case whose calls raised or timed out
    errors: list = field(default_factory=list)
    timeout: float | None = None
    error: str = ""  # bad input: why nothing was run
    verifier_format: str = "exitlaw"  # the layout fn was written in (simulate/kit/formats.py)
    settings: list = field(default_factory=list)  # settings mode: the sampling settings judged

    def to_json(self) -> dict:
        return asdict(self)


def _verdict(case_results: list, power_ok: bool = True) -> tuple[str, dict]:
    """The kit's verdict under :data:`PRECEDENCE` (independent of the order of the cases)."""
    first_not_exact, first_unsat, first_error = None, None, None
    for case in case_results:
        if case.get("error"):
            first_error = first_error or case["error"]
            continue
        checks = case["checks"]
        mean = next(c for c in checks if c["name"] == "mean_length")
        above = mean["rejected"] and mean["statistic"] > 0
        below = mean["rejected"] and mean["statistic"] < 0
        # among rejected rows, report the one that locates the failure: a zero cell, then the worst cell
        where_first = {"zero cell": 0, "max cell": 1}
        rejected = sorted(
            (c for c in checks if c["rejected"]), key=lambda c: where_first.get(c.get("test"), 2)
        )
        completed = [c for c in rejected if c["name"].startswith("completed_block")]
        law_fail = [c for c in rejected if c["name"] != "mean_length"]
        info = lambda c: {  # noqa: E731
            "case": case["name"],
            "tree": case["tree"],
            "check": c["name"],
            "statistic": c["statistic"],
            "pvalue": c["pvalue"],
            **c["worst"],
        }
        if completed:
            first_not_exact = first_not_exact or info(completed[0])
        elif above:
            first_not_exact = first_not_exact or info(mean)
        elif law_fail or below:
            # exact (completed-block law holds) but not the canonical block law: E[L] < 1 + C_p
            first_unsat = first_unsat or info(law_fail[0] if law_fail else mean)
    # "exact but not saturating" claims exactness: without the stated power it is "insufficient samples"
    # (the rejected law is still reported as the failure)
    for verdict, found in (
        (NOT_EXACT, first_not_exact),
        (VERIFIER_FAILED, first_error),
        (NOT_SATURATING if power_ok else INSUFFICIENT, first_unsat),
        (INSUFFICIENT, not power_ok),
    ):
        if found:
            return verdict, found if isinstance(found, dict) else {}
    return EXACT_AND_SATURATING, {}


def _tree_json(tree: DraftTree) -> dict:
    return {"parent": tree.parent.tolist(), "token": tree.token.tolist()}


def run_kit(
    fn: Callable,
    *,
    name: str = "verifier",
    mode: str = "conditional",
    seed: int = 0,
    budget: int = 8,
    vocab: int = 4,
    samples: int | None = None,
    family_alpha: float = 1e-6,
    delta: float = 0.1,
    power: float = 0.999,
    keep_going: bool = False,
    chains_only: bool = False,
    timeout: float | None = 10.0,
    only_case: str | None = None,
    verifier_format: str = "exitlaw",
    settings=None,
) -> KitReport:
    """Run the kit on ``fn`` and return the report (see the module docstring).

    Unless ``keep_going``, the remaining cases are skipped once a case shows the
    verifier is not exact (the verdict cannot change: it comes first in :data:`PRECEDENCE`).
    A case whose call raises or runs past ``timeout`` seconds (``None``: no limit; the limit
    uses ``SIGALRM``, so it interrupts Python code, not a blocking C call) is reported with its
    tree, seed, reproduce command and traceback, and the other cases still run.
    ``chains_only`` (marginal mode) drafts chains only; ``only_case`` runs one case by name.
    ``settings`` (a :class:`~exitlaw.theory.SamplingSettings` or a sequence of them): settings mode
    (:mod:`.settings_cases`): ``fn`` receives raw logits and the settings, ``f(tree, logits, settings, rng)``
    or ``f(tree, logits, draft_logits, settings, rng)``, and is judged against the processed target law.
    ``verifier_format``: the layout ``fn`` is written in, EAGLE's, SGLang's or DDTree's (conditional mode,
    :func:`.formats.adapt_verifier` converts trees, rows and results) or vLLM's chain rejection sampler's
    (``--mode marginal --chains-only``, :mod:`.chain_formats`).
    """
    panel = _check_kit_inputs(mode, timeout, verifier_format, chains_only, settings)
    fn = adapt_verifier(fn, verifier_format, mode=mode)
    check_signature(fn, mode, settings=bool(panel))
    cases, scases = _kit_cases(seed, panel, mode, budget, vocab, chains_only)
    if only_case is not None and only_case not in [c.name for c in cases]:
        raise ValueError(f"no case named {only_case!r}; cases: {', '.join(c.name for c in cases)}")
    checks_per_case = len(CHECKS) if mode == "conditional" else 1
    alpha = family_alpha / (checks_per_case * len(cases))
    reproduce = (
        f"exitlaw check {name} --mode {mode} --seed {seed} --budget {budget} --vocab {vocab}"
    )
    reproduce += _reproduce_flags(chains_only, verifier_format, samples, panel)
    judge = _verdict if mode == "conditional" else _marginal_verdict
    run = dict(alpha=alpha, delta=delta, timeout=timeout, seed=seed, reproduce=reproduce)
    report_cases, powers, sizes, errors = _run_cases(
        fn, mode, cases, scases, only_case, samples, power, keep_going, judge, run
    )
    min_power = float(min(powers)) if powers else None
    power_ok = min_power is not None and min_power >= power - 1e-9
    verdict, failure = judge(report_cases, power_ok)
    return KitReport(
        name,
        mode,
        verdict,
        EXIT_CODES[verdict],
        seed,
        family_alpha,
        alpha,
        delta,
        power,
        int(sum(sizes)),
        min_power,
        report_cases,
        failure,
        reproduce,
        errors,
        timeout,
        verifier_format=verifier_format,
        settings=[st.as_dict() for st in panel],
    )


def _run_cases(fn, mode, cases, scases, only_case, samples, power, keep_going, judge, run: dict):
    """Run the cases in order, each with its own seed sequence spawned from ``run["seed"]``
    (``samples`` each, or as many as :func:`.checks.auto_samples` asks for the stated ``power``);
    return the case records, the computed powers, the sample sizes of the cases that ran and the
    error records. Unless ``keep_going``, stop after the first case judged not exact."""
    alpha, delta = run["alpha"], run["delta"]
    report_cases, powers, sizes, errors = [], [], [], []
    root = np.random.SeedSequence(run["seed"])
    for i, (case, ss) in enumerate(zip(cases, root.spawn(len(cases)))):
        if only_case is not None and case.name != only_case:
            continue
        sc = scases[i] if scases else None
        n = samples if samples is not None else auto_samples(case, alpha / 2, power, delta)
        record, results = _run_case(fn, mode, case, sc, n, ss, **run)
        report_cases.append(record)
        if "error" in record:
            errors.append(record["error"])
            continue
        sizes.append(n)
        powers += [r.power for r in results if r.power is not None]
        # NOT_EXACT comes first in PRECEDENCE: no later case can change the verdict
        if not keep_going and judge(report_cases[-1:])[0] == NOT_EXACT:
            break
    return report_cases, powers, sizes, errors


def _check_kit_inputs(
    mode: str, timeout, verifier_format: str, chains_only: bool, settings
) -> list:
    """Refuse a bad mode, timeout or format before anything runs; return the settings panel
    (empty outside settings mode)."""
    if mode not in ("conditional", "marginal"):
        raise ValueError(f"mode must be 'conditional' or 'marginal', got {mode!r}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
    check_chain_format(verifier_format, mode, chains_only)
    panel = _panel(settings)
    if panel and verifier_format != "exitlaw":
        raise ValueError(
            f"settings mode takes verifiers f(tree, logits, [draft_logits,] settings, rng); --format "
            f"{verifier_format} is not supported with it"
        )
    return panel


def _kit_cases(seed: int, panel: list, mode: str, budget: int, vocab: int, chains_only: bool):
    """The cases the kit runs, and in settings mode the settings case behind each (else ``None``)."""
    if panel:
        scases = settings_cases(seed, panel, mode=mode, chains_only=chains_only)
        return [sc.case for sc in scases], scases
    if mode == "conditional":
        return conditional_cases(seed, budget=budget, vocab=vocab), None
    return marginal_cases(seed, budget=budget, vocab=vocab, chains_only=chains_only), None


def _reproduce_flags(chains_only: bool, verifier_format: str, samples, panel: list) -> str:
    """The flags the reproduce command needs beyond mode, seed, budget and vocab."""
    flags = " --chains-only" if chains_only else ""
    if verifier_format != "exitlaw":
        flags += f" --format {verifier_format}"
    if samples is not None:
        flags += f" --samples {samples}"
    if panel:
        flags += settings_flags(panel)
    return flags


def _run_case(fn, mode: str, case, sc, n: int, ss, *, alpha, delta, timeout, seed, reproduce):
    """Run one case with ``n`` samples (``ss``: its seed sequence, split into the verifier's and the
    kit's); return its report record and check results. A call that raises or runs past ``timeout``
    gives a record with an ``error`` (tree, seed, reproduce command, traceback) and no results."""
    verifier_seq, kit_seq = ss.spawn(2)
    rng, kit_rng = np.random.default_rng(verifier_seq), np.random.default_rng(kit_seq)
    tree_json = _tree_json(case.tree) if mode == "conditional" else {"topology": case.topology}
    head = {"name": case.name, "tree": tree_json, "vocab": _vocab_of(case)}
    tail = {"settings": sc.settings.as_dict()} if sc else {}
    run = _run_conditional if mode == "conditional" else _run_marginal
    try:
        with _call_limit(timeout):
            results, lengths = run(fn, case, n, rng, kit_rng, alpha, delta, timeout, sc)
    except VerifierCrash as crash:
        error = {
            "case": case.name,
            "tree": tree_json,
            "seed": int(seed),
            "check": "call",
            "error": str(crash),
            "reproduce": f"{reproduce} --case {case.name}",
            "traceback": crash.__cause__
            and "".join(traceback.format_exception(crash.__cause__))[-4000:]
            or "",
        }
        record = {
            **head,
            "samples": 0,
            "planned_samples": n,
            "verifier_seed": int(seed),
            "checks": [],
            "error": error,
            **tail,
        }
        return record, []
    record = {
        **head,
        "samples": n,
        "verifier_seed": int(seed),
        "checks": [asdict(r) for r in results],
        **lengths,
        **tail,
    }
    return record, results


def check_verifier(spec: str, **kwargs) -> KitReport:
    """Load ``MODULE:CALLABLE`` and :func:`run_kit` it; a module or signature that cannot be used gives a
    report with verdict ``bad input`` (exit status 2) and the reason, so a report is always produced."""
    try:
        fn = load_verifier(spec)
        return run_kit(fn, name=spec, **kwargs)
    except VerifierCallError as err:
        return KitReport(
            spec,
            kwargs.get("mode", "conditional"),
            BAD_INPUT,
            EXIT_CODES[BAD_INPUT],
            kwargs.get("seed", 0),
            kwargs.get("family_alpha", 1e-6),
            0.0,
            kwargs.get("delta", 0.1),
            kwargs.get("power", 0.999),
            0,
            None,
            error=str(err),
            timeout=kwargs.get("timeout"),
            verifier_format=kwargs.get("verifier_format", "exitlaw"),
        )


def _vocab_of(case) -> int:
    return case.vocab if isinstance(case, Case) else int(np.asarray(case.target(())).size)


def _panel(settings) -> tuple:
    """``settings`` -> the tuple of settings judged (empty: probability-row mode)."""
    if settings is None:
        return ()
    panel = (settings,) if isinstance(settings, SamplingSettings) else tuple(settings)
    if not panel or not all(isinstance(st, SamplingSettings) for st in panel):
        raise ValueError(
            f"settings must be a SamplingSettings or a non-empty sequence of them, got {settings!r}"
        )
    return panel


def settings_flags(panel) -> str:
    """The command-line flags that select ``panel`` (``--settings`` for the default panel)."""
    if tuple(panel) == DEFAULT_PANEL:
        return " --settings"
    if len(panel) != 1:
        return " --settings (a custom panel: see the report's settings)"
    st = panel[0]
    out = f" --temperature {st.temperature:g}"
    for name in FILTERS:
        if getattr(st, name) is not None:
            out += f" --{name.replace('_', '-')} {getattr(st, name):g}"
    return out + (
        ""
        if st.order == VLLM_ORDER
        else " --sampling-order hf"
        if st.order == HF_ORDER
        else f" --sampling-order {','.join(st.order)}"
    )


def _run_conditional(fn, case: Case, n: int, rng, kit_rng, alpha, delta, timeout=None, sc=None):
    exits = np.empty(n, dtype=np.int64)
    bonus = np.empty(n, dtype=np.int64)
    probs = case.probs
    probs.setflags(write=False)
    args = (case.tree, probs, rng)
    # settings mode: raw logits and the settings; judged on the processed rows (case.probs)
    if sc is not None:
        logits = np.stack([sc.logits(case.tree.path(v)) for v in range(case.tree.num_nodes)])
        logits.setflags(write=False)
        args = (case.tree, logits, sc.settings, rng)
    for i in range(n):
        exits[i], bonus[i] = _call(fn, args, case.tree, case.vocab, timeout, i)
    return check_case(case, exits, bonus, alpha, delta, kit_rng)


def _run_marginal(
    fn, case: MarginalCase, n: int, rng, kit_rng, alpha, delta, timeout=None, sc=None
):
    draft_rand = GeneratorRandomness(kit_rng)
    built: dict = {}
    blocks: dict = {}
    total_len = 0
    for i in range(n):
        toks = tuple(draw_draft(case.topology, case.draft, draft_rand, without_replacement=True))
        if toks not in built:
            tree = DraftTree(parent=np.array(case.topology), token=np.array(toks))
            # settings mode: raw logits (the drafts came from the processed draft rows, case.draft)
            rows, drows = (case.target, case.draft) if sc is None else (sc.logits, sc.draft_logits)
            p = np.stack([rows(tree.path(v)) for v in range(tree.num_nodes)])
            q = np.stack([drows(tree.path(v)) for v in range(tree.num_nodes)])
            p.setflags(write=False)
            q.setflags(write=False)
            built[toks] = (tree, p, q)
        tree, p, q = built[toks]
        args = (tree, p, q, rng) if sc is None else (tree, p, q, sc.settings, rng)
        v, y = _call(fn, args, tree, p.shape[1], timeout, i)
        key = tree.path(v) + (y,)
        blocks[key] = blocks.get(key, 0) + 1
        total_len += len(key)
    observed = extend_counts(blocks, case.target, case.horizon, kit_rng)
    res = completed_check(observed, case.target, case.horizon, n, alpha, delta, None)
    return res, {"mean_length": total_len / n}


def _marginal_verdict(case_results, power_ok: bool = True):
    first_error = None
    for case in case_results:
        if case.get("error"):
            first_error = first_error or case["error"]
            continue
        c = next((c for c in case["checks"] if c["rejected"]), None)
        if c is not None:
            return NOT_EXACT, {
                "case": case["name"],
                "tree": case["tree"],
                "check": c["name"],
                "statistic": c["statistic"],
                "pvalue": c["pvalue"],
                **c["worst"],
            }
    if first_error:
        return VERIFIER_FAILED, first_error
    return (MARGINALLY_EXACT, {}) if power_ok else (INSUFFICIENT, {})


__all__ = [
    "run_kit",
    "check_verifier",
    "load_verifier",
    "VerifierCrash",
    "CallTimeout",
    "PRECEDENCE",
    "VERIFIER_FAILED",
    "INSUFFICIENT",
    "BAD_INPUT",
    "check_signature",
    "KitReport",
    "VerifierCallError",
    "CHECKS",
    "EXIT_CODES",
    "EXACT_AND_SATURATING",
    "MARGINALLY_EXACT",
    "NOT_EXACT",
    "NOT_SATURATING",
    "check_case",
]
