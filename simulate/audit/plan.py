"""What an audit asks: its settings, its prompts, and the error budget split over its tests.

The false-failure rate ``alpha`` is for the whole run: every test (per prompt, pooled, first token, at
every concurrency level) gets ``alpha / K`` (Bonferroni). The sample size per prompt and server is the
smallest with power ``>= power`` at total variation ``tv`` for one per-prompt two-sample test at that level
(:func:`~exitlaw.simulate.audit.two_sample.two_sample_size`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path

from exitlaw.simulate.audit.two_sample import two_sample_size
from exitlaw.theory.sampling_settings import FILTERS, NEAR_TIE_MARGIN, SamplingSettings


class AuditUsageError(ValueError):
    """Bad settings, an unreadable prompts file, or a server that cannot be used (exit 2)."""


@dataclass(frozen=True)
class AuditConfig:
    candidate: str
    reference: str
    prompts: str
    # temperature and the filters sent with every T > 0 request (a filter that is off is not sent): both
    # servers sample from the same processed law, so the audit judges them under it; each server applies
    # its own filter order
    sampling: SamplingSettings = SamplingSettings(0.0)
    candidate_model: str | None = None
    reference_model: str | None = None
    candidate_key: str | None = None
    reference_key: str | None = None
    max_tokens: int = 32  # T = 0: tokens compared
    tokens: int = 2  # T > 0: outcome = the first k tokens
    alpha: float = 1e-3
    power: float = 0.9
    tv: float = 0.2
    max_cells: int = 6
    samples: int | None = None
    n_per_request: int = 32
    concurrency: tuple[int, ...] = (1,)
    tie_margin: float = NEAR_TIE_MARGIN
    strict_ties: bool = False
    first_token_test: str = "auto"  # auto | on | off
    timeout: float = 120.0
    seed: int = 0
    # where a server returns text only: encode both servers' text with this tokenizer (a folder holding
    # tokenizer.json, or the file); None: a served model id that is such a folder, if any
    tokenizer: str | None = None

    def __post_init__(self):
        if not 0 < self.alpha < 1 or not 0 < self.power < 1 or not 0 < self.tv <= 1:
            raise AuditUsageError(
                f"need 0 < alpha, power < 1 and 0 < tv <= 1 (got {self.alpha}, {self.power}, {self.tv})"
            )
        if not isinstance(self.sampling, SamplingSettings):
            raise AuditUsageError(
                f"sampling must be a SamplingSettings, got {type(self.sampling).__name__}"
            )
        if self.max_cells < 2:
            raise AuditUsageError(f"max_cells must be >= 2, got {self.max_cells}")
        if not self.concurrency or min(self.concurrency) < 1:
            raise AuditUsageError(f"concurrency levels must be >= 1, got {self.concurrency}")
        if self.first_token_test not in ("auto", "on", "off"):
            raise AuditUsageError(
                f"first_token_test must be auto, on or off, got {self.first_token_test!r}"
            )
        if min(self.max_tokens, self.tokens, self.n_per_request) < 1:
            raise AuditUsageError("max_tokens, tokens and n_per_request must be >= 1")
        if self.first_token_test == "on" and self.settings:
            raise AuditUsageError(
                "the first-token test compares with the reference's log-probabilities, which "
                f"servers return unfiltered; it cannot run with {' / '.join(FILTERS)}"
            )

    @property
    def temperature(self) -> float:
        return self.sampling.temperature

    @property
    def settings(self) -> dict:
        """The filters sent with each sampling request (only those set)."""
        return {
            f: getattr(self.sampling, f) for f in FILTERS if getattr(self.sampling, f) is not None
        }

    @property
    def first_token(self) -> bool:
        return self.first_token_test == "on" or (
            self.first_token_test == "auto" and self.temperature == 1.0 and not self.settings
        )

    def public(self) -> dict:
        """The settings without the API keys (for the report)."""
        d = {  # the report's flat record: the temperature in the settings' place, the filters last
            ("temperature" if f.name == "sampling" else f.name): getattr(self, f.name)
            for f in fields(self)
        }
        d.update(temperature=self.temperature, **self.sampling.filters())
        del d["order"]  # each server applies its own order
        for k in ("candidate_key", "reference_key"):
            d[k] = "set" if d[k] else None
        d["concurrency"] = list(self.concurrency)
        return d


def read_prompts(path: str | Path) -> list:
    """Prompts of a JSONL file: ``prompt`` (text), ``prompt_ids`` (token ids) or ``messages`` (chat)."""
    p = Path(path)
    if not p.is_file():
        raise AuditUsageError(f"prompts file {path} does not exist")
    out = []
    for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as err:
            raise AuditUsageError(f"{path}:{i}: not JSON: {err}") from None
        if isinstance(rec, dict) and isinstance(rec.get("prompt"), str) and rec["prompt"]:
            out.append(rec["prompt"])
        elif (
            isinstance(rec, dict)
            and isinstance(rec.get("prompt_ids"), list)
            and rec["prompt_ids"]
            and all(
                isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in rec["prompt_ids"]
            )
        ):
            out.append(list(rec["prompt_ids"]))
        elif (
            isinstance(rec, dict)
            and isinstance(rec.get("messages"), list)
            and rec["messages"]
            and all(
                isinstance(m, dict)
                and isinstance(m.get("role"), str)
                and isinstance(m.get("content"), str)
                for m in rec["messages"]
            )
        ):
            out.append([{"role": m["role"], "content": m["content"]} for m in rec["messages"]])
        else:
            raise AuditUsageError(
                f'{path}:{i}: expected {{"prompt": str}}, {{"prompt_ids": [int, ...]}} or '
                '{"messages": [{"role", "content"}, ...]}'
            )
    if not out:
        raise AuditUsageError(f"prompts file {path} holds no prompt")
    return out


@dataclass(frozen=True)
class Budget:
    """The error budget: ``tests`` tests at ``alpha_each`` each, ``samples`` per prompt and server."""

    tests: int
    alpha_each: float
    samples: int
    planned: int  # what ``power`` at ``tv`` needs


def plan_budget(cfg: AuditConfig, num_prompts: int, first_token: bool | None = None) -> Budget:
    """``first_token``: whether first-token tests run (default ``cfg.first_token``; the probe turns them
    off where the reference returns no log-probabilities or the run compares re-tokenised text)."""
    first_token = cfg.first_token if first_token is None else first_token
    # per prompt, pooled, first token
    per_level = num_prompts + 1 + (num_prompts if first_token else 0)
    tests = per_level * len(cfg.concurrency)
    alpha_each = cfg.alpha / tests
    planned = two_sample_size(cells=cfg.max_cells, alpha=alpha_each, power=cfg.power, delta=cfg.tv)
    return Budget(tests, alpha_each, cfg.samples if cfg.samples is not None else planned, planned)


__all__ = ["AuditConfig", "AuditUsageError", "Budget", "plan_budget", "read_prompts"]
