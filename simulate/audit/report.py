"""The audit's findings, its verdict and exit code, as text and JSON.

Exit codes follow the conformance kit: 0 no difference found with the stated power, 1 lossy, 4 a server
failed during the run, 5 insufficient samples (the power at the samples obtained is below the target:
never a verdict of lossless), 2 bad usage or an unreachable server (raised before a report exists).
"""

from __future__ import annotations

from dataclasses import dataclass, field

EXIT = {"no difference found": 0, "lossy": 1, "server failed": 4, "insufficient samples": 5}


@dataclass
class Divergence:
    """T = 0: where the candidate's tokens first differ from the reference's."""

    prompt: int
    level: int
    repeat: int
    position: int
    candidate: int | None  # None: the sequence ended there
    reference: int | None
    margin: float | None  # top-2 log-probability margin at that position (None: unknown)
    near_tie: bool


@dataclass
class TestResult:
    kind: str  # two-sample | pooled | first-token
    level: int
    prompt: int | None
    statistic: float
    dof: int
    pvalue: float
    alpha: float
    power: float  # lower bound at the stated TV
    rejects: bool
    detail: dict = field(default_factory=dict)


@dataclass
class AuditReport:
    config: dict
    temperature: float
    num_prompts: int
    verdict: str = "no difference found"
    reasons: list[str] = field(default_factory=list)
    divergences: list[Divergence] = field(default_factory=list)
    near_ties: list[Divergence] = field(default_factory=list)
    tests: list[TestResult] = field(default_factory=list)
    samples: int | None = None
    planned_samples: int | None = None
    alpha_each: float | None = None
    planned_tests: int | None = None  # the Bonferroni denominator: alpha for the run / alpha_each
    # per level, the TV the pooled test finds with the stated power; None: none up to 1 (or no test with
    # two cells, the pooled test has no statistic)
    pooled_detectable_tv: dict = field(default_factory=dict)
    requests: int = 0
    wall_s: float = 0.0
    failure: str | None = None
    # what was sent and compared (transport.py): comparison, tokenizer, what it cannot see, per server
    transport: dict = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return EXIT[self.verdict]

    def to_json(self) -> dict:
        def row(x):
            return dict(x.__dict__)

        return {
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "reasons": self.reasons,
            "temperature": self.temperature,
            "num_prompts": self.num_prompts,
            "samples_per_prompt_and_server": self.samples,
            "planned_samples": self.planned_samples,
            "alpha_per_test": self.alpha_each,
            "planned_tests": self.planned_tests,
            "tests_run": len(self.tests),
            "pooled_detectable_tv": self.pooled_detectable_tv,
            "divergences": [row(d) for d in self.divergences],
            "near_tie_divergences": [row(d) for d in self.near_ties],
            "tests": [row(t) for t in self.tests],
            "requests": self.requests,
            "wall_s": round(self.wall_s, 3),
            "failure": self.failure,
            "transport": self.transport,
            "config": self.config,
        }


def _div(d: Divergence) -> str:
    tok = lambda t: "end" if t is None else str(t)  # noqa: E731
    margin = "unknown" if d.margin is None else f"{d.margin:.3g}"
    return (
        f"prompt {d.prompt} (concurrency {d.level}, repeat {d.repeat}): position {d.position}, candidate "
        f"{tok(d.candidate)} vs reference {tok(d.reference)}, top-2 margin {margin}"
    )


def _transport_lines(t: dict) -> list[str]:
    if not t:
        return []
    how = t["comparison"] + (f" (tokenizer {t['tokenizer']})" if t.get("tokenizer") else "")
    out = [f"  compared: {how}"]
    for side in ("candidate", "reference"):
        for endpoint, tr in t.get(side, {}).items():
            parts = [
                "token ids back" if tr["token_ids"] else "text only",
                "n honoured" if tr["n"] else "n ignored: one sample per request",
                "log-probabilities" if tr["logprobs"] else "no log-probabilities",
            ]
            if tr.get("id_prompts") is False:
                parts.append("token-id prompts sent as text")
            if tr["dropped"]:
                parts.append("fields dropped: " + ", ".join(tr["dropped"]))
            out.append(f"  {side} {endpoint}: " + "; ".join(parts))
    if t.get("cannot_see"):
        out.append(f"  not seen by this comparison: {t['cannot_see']}")
    return out


def format_audit(r: AuditReport) -> str:
    c = r.config
    lines = [
        f"exitlaw audit: {c['candidate']} (candidate) vs {c['reference']} (reference), T = {r.temperature:g}, "
        f"{r.num_prompts} prompt(s), concurrency {','.join(map(str, c['concurrency']))}"
    ]
    lines += _transport_lines(r.transport)
    if r.temperature == 0:
        what = (
            "token ids"
            if r.transport.get("comparison", "token ids") == "token ids"
            else "re-tokenised text"
        )
        lines.append(f"  T = 0: {what} of up to {c['max_tokens']} tokens compared per prompt")
        for d in r.divergences:
            lines.append("  DIVERGENCE " + _div(d))
        for d in r.near_ties:
            lines.append(f"  near-tie (margin < {c['tie_margin']:g}) " + _div(d))
    else:
        lines.append(
            f"  T > 0: first {c['tokens']} token(s) per sample; {r.samples} samples per prompt and server "
            f"(power {c['power']:g} at TV {c['tv']:g} needs {r.planned_samples}); false-failure rate "
            f"{c['alpha']:g} for the run = {r.planned_tests} planned tests x {r.alpha_each:.3g} "
            f"({len(r.tests)} run)"
        )
        for t in r.tests:
            where = f"prompt {t.prompt}" if t.prompt is not None else "all prompts"
            lines.append(
                f"  {'REJECT' if t.rejects else 'pass  ' if t.power > 0 else 'NO-POW'} {t.kind:<11} c={t.level:<3} {where:<12} "
                f"chi2 {t.statistic:9.3f} df {t.dof:<3} p {t.pvalue:.3g}  power {t.power:.3f}"
            )
        for level, tv in r.pooled_detectable_tv.items():
            pooled = [t for t in r.tests if t.kind == "pooled" and t.level == level]
            if tv is not None:
                lines.append(
                    f"  pooled test at c={level} finds a TV of {tv:.3g} on every prompt with power {c['power']:g}"
                )
            elif pooled and pooled[0].dof == 0:
                lines.append(f"  pooled test at c={level} detects no TV (no test with two cells)")
            else:
                lines.append(
                    f"  pooled test at c={level} detects no TV up to 1 with power {c['power']:g}"
                )
    if r.failure:
        lines.append(f"  server failure: {r.failure}")
    lines.append(f"  {r.requests} requests in {r.wall_s:.1f} s")
    lines.append(
        f"verdict: {r.verdict.upper()}"
        + (f" ({'; '.join(r.reasons)})" if r.reasons else "")
        + f"; exit {r.exit_code}"
    )
    return "\n".join(lines)


__all__ = ["AuditReport", "Divergence", "TestResult", "format_audit", "EXIT"]
