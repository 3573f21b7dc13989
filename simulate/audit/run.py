"""``exitlaw audit``: is a candidate OpenAI-compatible server lossless against a reference server?

* ``T = 0``: per prompt (and per concurrency level ``c``, with at least ``c`` requests in flight on each
  server), the candidate's token ids must equal the reference's; a divergence where the reference's top-2
  log-probability margin is below ``tie_margin`` is a *near-tie* (batch-variant numerics flip such argmaxes
  on GPUs), reported apart and lossy only with ``strict_ties``.
* ``T > 0``: per prompt and level, ``samples`` outcomes (the first ``tokens`` tokens) from each server, a
  two-sample chi-square test per prompt and one pooled over prompts
  (:mod:`~exitlaw.simulate.audit.two_sample`), and where the reference serves log-probabilities of the
  sampled law, a one-sample test of the candidate's first token against the reference's top ones with the
  tail pooled (:func:`~exitlaw.simulate.stats.pooled_chisquare`). The run's false-failure rate is ``alpha``
  (:mod:`~exitlaw.simulate.audit.plan`); a run whose power at the samples obtained is below ``power`` ends in
  "insufficient samples", never in a verdict of lossless.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import stats as sps

from exitlaw.simulate.audit.client import Client, ServerFailed, ServerRefused, Unreachable
from exitlaw.simulate.audit.plan import AuditConfig, AuditUsageError, plan_budget, read_prompts
from exitlaw.simulate.audit.report import AuditReport, Divergence, TestResult
from exitlaw.simulate.audit.transport import (
    TEXT,
    TEXT_BLIND,
    TOKEN_IDS,
    Retokeniser,
    default_tokenizer,
    probe,
    probe_id_prompts,
)
from exitlaw.simulate.audit.two_sample import (
    pooled_detectable_tv,
    pooled_power,
    realised_power,
    two_sample_chisquare,
)
from exitlaw.simulate.stats import chisquare_power, pooled_chisquare

MAX_TOP = 20  # the most top log-probabilities servers return (vLLM's default limit)


class _Run:
    def __init__(self, cfg: AuditConfig):
        self.cfg = cfg
        self.cand = Client("candidate", cfg.candidate, cfg.candidate_key, cfg.timeout)
        self.ref = Client("reference", cfg.reference, cfg.reference_key, cfg.timeout)
        self.first_token = cfg.first_token  # off where the transport cannot serve it (probe)
        self.first_token_off: str | None = None  # why
        self.listed: dict[str, list] = {}  # each server's /v1/models ids

    def model(self, client: Client, wanted: str | None) -> str:
        try:
            served = client.models()
        except (Unreachable, ServerRefused, ServerFailed) as err:
            raise AuditUsageError(f"{err} (checked before the run)") from None
        self.listed[client.name] = served
        if wanted is None:
            if not served:
                raise AuditUsageError(
                    f"{client.name} server {client.base} lists no model: name one with "
                    f"--{client.name}-model or --model"
                )
            return served[0]
        # a model not listed may still be served: a server that loads models on demand lists only those
        # loaded (transformers serve without a pinned model); the probe asks for it, and a server that
        # does not serve it says so there (its own message, a usage error)
        return wanted

    def seed(self, *key) -> int:
        digest = hashlib.sha256(repr((self.cfg.seed,) + key).encode()).digest()
        return int.from_bytes(digest[:8], "little") >> 1

    def fetch(self, jobs: list[tuple], level: int) -> list:
        """Run ``(client, model, prompt, kwargs)`` jobs, both servers at once with ``level`` requests in
        flight on each (one pool per server); results in job order."""
        pools = {c.name: ThreadPoolExecutor(max_workers=level) for c, *_ in jobs}
        try:
            futures = [pools[c.name].submit(c.sample, p, model=m, **kw) for c, m, p, kw in jobs]
            return [f.result() for f in futures]
        finally:
            for pool in pools.values():
                pool.shutdown(wait=True, cancel_futures=True)


def _margin(top: dict | None) -> float | None:
    if not top or len(top) < 2:
        return None
    a, b = sorted(top.values(), reverse=True)[:2]
    return float(a - b)


def _greedy(run: _Run, prompts, models, report: AuditReport) -> None:
    cfg = run.cfg
    for level in cfg.concurrency:
        repeats = max(1, math.ceil(level / len(prompts)))
        keys = [(i, r) for r in range(repeats) for i in range(len(prompts))]
        kw = dict(n=1, max_tokens=cfg.max_tokens, temperature=0.0, seed=None, top_logprobs=2)
        jobs = [(run.cand, models[0], prompts[i], kw) for i, _ in keys] + [
            (run.ref, models[1], prompts[i], kw) for i, _ in keys
        ]
        out = run.fetch(jobs, level)
        cand, ref = out[: len(keys)], out[len(keys) :]
        for (i, r), [c], [f] in zip(keys, cand, ref):
            if c.tokens == f.tokens:
                continue
            j = next(
                (k for k in range(min(len(c.tokens), len(f.tokens))) if c.tokens[k] != f.tokens[k]),
                min(len(c.tokens), len(f.tokens)),
            )
            margins = [
                m
                for m in (
                    _margin(f.top[j] if j < len(f.top) else None),
                    _margin(c.top[j] if j < len(c.top) else None),
                )
                if m is not None
            ]
            margin = min(margins) if margins else None
            tie = (
                margin is not None
                and margin < cfg.tie_margin
                and j < min(len(c.tokens), len(f.tokens))
            )
            d = Divergence(
                i,
                level,
                r,
                j,
                c.tokens[j] if j < len(c.tokens) else None,
                f.tokens[j] if j < len(f.tokens) else None,
                margin,
                tie,
            )
            (report.near_ties if tie and not cfg.strict_ties else report.divergences).append(d)
    if report.divergences:
        report.verdict = "lossy"
        d = report.divergences[0]
        report.reasons.append(
            f"{len(report.divergences)} divergence(s) at T = 0; first: prompt {d.prompt}, "
            f"position {d.position}"
        )


def _outcomes(samples) -> Counter:
    return Counter(tuple(s.tokens) for s in samples)


def _test_result(kind: str, level: int, prompt, res, alpha: float, power: float, detail: dict):
    """The :class:`TestResult` of a chi-square test ``res`` judged at ``alpha``."""
    return TestResult(
        kind,
        level,
        prompt,
        res.statistic,
        res.dof,
        res.pvalue,
        alpha,
        power,
        res.rejects(alpha),
        detail,
    )


def _first_token_test(cand_samples, ref_top: dict, budget, cfg, level, prompt) -> TestResult | None:
    if not ref_top:
        return None
    toks = sorted(ref_top, key=lambda t: -ref_top[t])
    probs = np.exp(np.array([ref_top[t] for t in toks], dtype=np.float64))
    tail = max(0.0, 1.0 - probs.sum())
    probs = np.append(probs, tail)
    probs = probs / probs.sum()
    index = {t: k for k, t in enumerate(toks)}
    counts = np.zeros(len(probs))
    for s in cand_samples:
        counts[index.get(s.tokens[0], len(toks)) if s.tokens else len(toks)] += 1
    res = pooled_chisquare(counts, probs)
    n = int(counts.sum())
    # one cell (every candidate token outside the reference's listed ones): no test, no power
    power = chisquare_power(n, res.cells, budget.alpha_each, cfg.tv) if res.cells >= 2 else 0.0
    return _test_result(
        "first-token",
        level,
        prompt,
        res,
        budget.alpha_each,
        power,
        {
            "reference_tokens": len(toks),
            "tail_mass": float(tail),
            "zero_cell_hits": len(res.zero_cell_hits),
        },
    )


def _record_budget(run: _Run, budget, report: AuditReport) -> None:
    """The planned tests, samples and per-test level on the report (and why no first-token test)."""
    if run.first_token_off:
        report.reasons.append(f"first-token test not run: {run.first_token_off}")
    report.planned_tests = budget.tests
    report.samples, report.planned_samples, report.alpha_each = (
        budget.samples,
        budget.planned,
        budget.alpha_each,
    )


def _sample_jobs(run: _Run, prompts, models, budget, level: int) -> tuple[list, list]:
    """One level's fetch jobs and their owners: ``budget.samples`` outcomes per prompt from each server
    (``("c", i)``, ``("r", i)``), in requests of at most ``n_per_request``, then the reference's top
    log-probabilities of each prompt's first token (``("top", i)``) where the first-token test runs."""
    cfg = run.cfg
    jobs, owners = [], []
    for side, client, model in (("c", run.cand, models[0]), ("r", run.ref, models[1])):
        for i, p in enumerate(prompts):
            left, j = budget.samples, 0
            while left > 0:
                n = min(left, cfg.n_per_request)
                jobs.append(
                    (
                        client,
                        model,
                        p,
                        dict(
                            n=n,
                            max_tokens=cfg.tokens,
                            temperature=cfg.temperature,
                            seed=run.seed(level, side, i, j),
                            top_logprobs=None,
                            settings=cfg.settings,
                        ),
                    )
                )
                owners.append((side, i))
                left, j = left - n, j + 1
    if run.first_token:
        for i, p in enumerate(prompts):
            jobs.append(
                (
                    run.ref,
                    models[1],
                    p,
                    dict(
                        n=1,
                        max_tokens=1,
                        temperature=cfg.temperature,
                        seed=run.seed(level, "top", i),
                        top_logprobs=MAX_TOP,
                    ),
                )
            )
            owners.append(("top", i))
    return jobs, owners


def _by_owner(owners, out, num_prompts: int) -> tuple[dict, dict]:
    """The fetched samples per ``(side, prompt)`` and the reference's first-token top per prompt."""
    got = {("c", i): [] for i in range(num_prompts)} | {("r", i): [] for i in range(num_prompts)}
    tops = {}
    for (side, i), samples in zip(owners, out):
        if side == "top":
            tops[i] = samples[0].top[0] if samples[0].top else {}
        else:
            got[(side, i)].extend(samples)
    return got, tops


def _two_sample_test(a, b, budget, cfg, level: int, prompt: int, report: AuditReport):
    """Prompt ``prompt``'s two-sample test of candidate samples ``a`` against reference samples ``b``,
    appended to the report (with a reason where it has one cell, hence no power); its chi-square result."""
    res = two_sample_chisquare(_outcomes(a), _outcomes(b), max_cells=cfg.max_cells)
    power = realised_power(
        res, len(a), len(b), cells=cfg.max_cells, alpha=budget.alpha_each, delta=cfg.tv
    )
    if len(res.cells) < 2:
        report.reasons.append(
            f"concurrency {level}, prompt {prompt}: all {len(a) + len(b)} samples fell into one "
            "cell (no outcome common enough to stand alone): this test has no power"
        )
    report.tests.append(
        _test_result(
            "two-sample",
            level,
            prompt,
            res,
            budget.alpha_each,
            power,
            {
                "cells": [list(c) if isinstance(c, tuple) else c for c in res.cells],
                "candidate": res.counts_a,
                "reference": res.counts_b,
            },
        )
    )
    return res


def _record_first_token(a, ref_top: dict, budget, cfg, level: int, prompt: int, report) -> None:
    """Prompt ``prompt``'s first-token test appended to the report, or the reason it was not run."""
    t = _first_token_test(a, ref_top, budget, cfg, level, prompt)
    if t is not None:
        report.tests.append(t)
    else:
        report.reasons.append(
            f"prompt {prompt}: the reference returned no log-probabilities (first-token "
            "test not run)"
        )


def _record_pooled(stat: float, dof: int, sizes, budget, cfg, level: int, report) -> None:
    """The level's test pooled over prompts (sum of statistics and degrees of freedom) and the TV it
    detects with power ``cfg.power``, on the report."""
    p = float(sps.chi2.sf(stat, dof)) if dof > 0 else 1.0
    pw = pooled_power(sizes, cells=cfg.max_cells, alpha=budget.alpha_each, delta=cfg.tv)
    report.tests.append(
        TestResult(
            "pooled", level, None, stat, dof, p, budget.alpha_each, pw, p < budget.alpha_each
        )
    )
    tv = pooled_detectable_tv(sizes, cells=cfg.max_cells, alpha=budget.alpha_each, power=cfg.power)
    # None (JSON null): no TV up to 1 is found with that power (or no test had two cells)
    report.pooled_detectable_tv[level] = tv if math.isfinite(tv) else None


def _sampled_level(run: _Run, prompts, models, budget, level: int, report: AuditReport) -> None:
    """At concurrency ``level``: fetch both servers' samples, then every prompt's tests and the pooled one."""
    cfg = run.cfg
    jobs, owners = _sample_jobs(run, prompts, models, budget, level)
    got, tops = _by_owner(owners, run.fetch(jobs, level), len(prompts))
    stat, dof, sizes = 0.0, 0, []
    for i in range(len(prompts)):
        a, b = got[("c", i)], got[("r", i)]
        res = _two_sample_test(a, b, budget, cfg, level, i, report)
        stat, dof = stat + res.statistic, dof + res.dof
        if len(res.cells) >= 2:  # a one-cell test adds nothing to the pooled statistic
            sizes.append((len(a), len(b)))
        if run.first_token:
            _record_first_token(a, tops.get(i, {}), budget, cfg, level, i, report)
    _record_pooled(stat, dof, sizes, budget, cfg, level, report)


def _sampled_verdict(cfg: AuditConfig, budget, report: AuditReport) -> None:
    """The verdict: "lossy" where any test rejects, else "insufficient samples" where a two-sample test
    lacks power."""
    rejected = [t for t in report.tests if t.rejects]
    weak = [t for t in report.tests if t.kind == "two-sample" and t.power < cfg.power]
    if rejected:
        report.verdict = "lossy"
        t = rejected[0]
        report.reasons.append(
            f"{len(rejected)} test(s) reject at {budget.alpha_each:.3g} each; first: {t.kind}, "
            f"concurrency {t.level}, "
            + (f"prompt {t.prompt}, " if t.prompt is not None else "")
            + f"p = {t.pvalue:.3g}"
        )
    elif weak:
        report.verdict = "insufficient samples"
        report.reasons.append(
            f"power {min(t.power for t in weak):.3f} < {cfg.power:g} at TV {cfg.tv:g} with "
            f"{budget.samples} samples per prompt and server (needs {budget.planned})"
        )


def _sampled(run: _Run, prompts, models, report: AuditReport) -> None:
    """The ``T > 0`` audit: per concurrency level, two-sample (and first-token) tests per prompt and one
    pooled over prompts, then the verdict."""
    cfg = run.cfg
    budget = plan_budget(cfg, len(prompts), run.first_token)
    _record_budget(run, budget, report)
    for level in cfg.concurrency:
        _sampled_level(run, prompts, models, budget, level, report)
    _sampled_verdict(cfg, budget, report)


def _advice(err: ServerRefused) -> str:
    """What to change for a refused request, by its cause (the server's own message comes first)."""
    text = str(err)
    if err.status in (401, 403):
        return " (check --api-key, or the candidate's / reference's own key)"
    if err.status == 404:
        return " (check the server URL and --model)"
    if err.status == 422:
        return " (the server refuses a request the probe before the run did not; its message names why)"
    if err.status == 413 or any(k in text for k in ("max_tokens", "max_n", " n ", "too long")):
        return " (lower --n-per-request or --max-new-tokens)"
    return ""


def _transport(run: _Run, prompts, models) -> dict:
    """Probe both servers (:mod:`~exitlaw.simulate.audit.transport`), choose the comparison, set the
    clients up for it; the report's record of what was sent and compared."""
    cfg = run.cfg
    chats = [p for p in prompts if isinstance(p, list) and p and isinstance(p[0], dict)]
    plain = [p for p in prompts if isinstance(p, str)]
    ids = [p for p in prompts if isinstance(p, list) and p and not isinstance(p[0], dict)]
    settings = cfg.settings if cfg.temperature > 0 else None  # sent with sampling requests only
    for client, model in ((run.cand, models[0]), (run.ref, models[1])):
        try:
            if chats:
                client.transports[True] = probe(client, model, chats[0], True, settings)
            if plain or ids:
                # a text prompt (a token-id prompt may be refused: that is probed apart)
                t = probe(client, model, plain[0] if plain else "Hello", False, settings)
                if ids:
                    probe_id_prompts(client, model, ids[0], t)
                client.transports[False] = t
        except (Unreachable, ServerFailed) as err:
            listed = run.listed.get(client.name)
            hint = (
                f"; {model!r} is not in its /v1/models list {listed}"
                if listed is not None and model not in listed
                else ""
            )
            raise AuditUsageError(f"{err} (the probe before the run{hint})") from None
    transports = [t for c in (run.cand, run.ref) for t in c.transports.values()]
    comparison = TOKEN_IDS if all(t.token_ids for t in transports) else TEXT
    tokenizer = None
    needs_tokenizer = comparison == TEXT or any(t.id_prompts is False for t in transports)
    if needs_tokenizer:
        path = cfg.tokenizer or default_tokenizer(models)
        if path is None:
            why = (
                "returns text only"
                if comparison == TEXT
                else "refuses token-id prompts (they are sent as text)"
            )
            who = [
                c.name
                for c in (run.cand, run.ref)
                if any(not t.token_ids or t.id_prompts is False for t in c.transports.values())
            ]
            raise AuditUsageError(
                f"the {' and '.join(who)} server {why}: name the target's tokenizer with --tokenizer "
                "PATH (a model folder holding tokenizer.json)"
            )
        retok = Retokeniser(path)
        tokenizer = retok.path
        for client in (run.cand, run.ref):
            client.id_prompt_text = _id_prompt_text(retok)
            if comparison == TEXT:
                client.retokenise = retok.encode
        if any(t.id_prompts is False for t in transports):
            for p in ids:
                client.id_prompt_text(p)  # a prompt that cannot go as text: a usage error now
    ref_logprobs = all(t.logprobs for t in run.ref.transports.values())
    if run.first_token and (comparison == TEXT or not ref_logprobs):
        run.first_token = False
        run.first_token_off = (
            "the run compares re-tokenised text"
            if comparison == TEXT
            else "the reference returns no log-probabilities"
        )
    return {
        "comparison": comparison,
        "tokenizer": tokenizer,
        "cannot_see": TEXT_BLIND if comparison == TEXT else None,
        "candidate": {
            ("chat" if k else "completions"): t.to_json() for k, t in run.cand.transports.items()
        },
        "reference": {
            ("chat" if k else "completions"): t.to_json() for k, t in run.ref.transports.items()
        },
    }


def _id_prompt_text(retok: Retokeniser):
    def text(ids):
        t = retok.decode(ids)
        if retok.encode(t) != tuple(ids):
            raise AuditUsageError(
                f"a token-id prompt ({list(ids)[:8]}...) is refused by a server that takes text, and "
                "its text does not encode back to the same ids: give it as text"
            )
        return t

    return text


def run_audit(cfg: AuditConfig) -> AuditReport:
    """Audit ``cfg.candidate`` against ``cfg.reference``; raises :class:`AuditUsageError` for exit 2."""
    t0 = time.perf_counter()
    prompts = read_prompts(cfg.prompts)
    try:
        run = _Run(cfg)
    except ValueError as err:
        raise AuditUsageError(str(err)) from None
    models = (run.model(run.cand, cfg.candidate_model), run.model(run.ref, cfg.reference_model))
    report = AuditReport(cfg.public(), cfg.temperature, len(prompts))
    report.transport = _transport(run, prompts, models)
    try:
        (_greedy if cfg.temperature == 0 else _sampled)(run, prompts, models, report)
    except ServerRefused as err:
        raise AuditUsageError(f"{err}{_advice(err)}") from None
    except (ServerFailed, Unreachable) as err:
        report.verdict, report.failure = "server failed", str(err)
        report.reasons.append("a server failed during the run")
    report.requests = run.cand.requests + run.ref.requests  # HTTP requests: n split counts each
    report.wall_s = time.perf_counter() - t0
    return report


__all__ = ["run_audit"]
