"""Settings mode of the conformance kit: targets and drafters given by logits, judged after processing.

In settings mode (``exitlaw check --settings`` or any of ``--temperature/--top-k/--top-p/--min-p``)
the verifier receives **raw logits** plus the :class:`~exitlaw.theory.SamplingSettings`:
``f(tree, logits, settings, rng)`` (conditional) or ``f(tree, logits, draft_logits, settings, rng)``
(marginal: sampled-draft and chain rules). The kit draws the drafts from the *processed* draft
distribution ``process_logits(draft_logits, settings)`` and judges the verifier against the
*processed* target law ``process_logits(logits, settings)`` (theory/sampling_settings.py), so a
verifier whose acceptance uses another ``q`` than the drafts came from, or that drops a setting on the
verified tokens (or applies it to the bonus only), is not exact and fails.

Logits are hashed from ``(seed, prefix)`` (Gaussian, scale 2, so the filters bite), the same target and
drafter under every setting (a case depends on its setting, not on its place in the panel); rows are small
(vocabulary 5) so the completed-block law has few cells and the runs stay short.
:data:`DEFAULT_PANEL` is used when no setting is given: one setting per filter, each with a
temperature other than 1 (a bug that drops the temperature shows too), and all three together in
HF's order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exitlaw.simulate.kit.cases import Case, MarginalCase
from exitlaw.theory import HF_ORDER, VLLM_ORDER, DraftTree, SamplingSettings, process_logits

SETTINGS_VOCAB = 5
DEFAULT_PANEL = (
    SamplingSettings(0.8, top_k=2),
    SamplingSettings(1.3, top_p=0.7),
    SamplingSettings(0.7, min_p=0.3),
    SamplingSettings(1.2, top_k=3, top_p=0.8, min_p=0.1, order=HF_ORDER),
)


class HashedLogits:
    """``z(. | prefix)``: Gaussian logits of scale ``scale`` hashed from ``(seed, prefix)``, plus ``base(prefix)``
    when given (a drafter that approximates the target: the target's logits plus noise)."""

    def __init__(
        self, vocab: int, seed: int, scale: float = 2.0, base: "HashedLogits | None" = None
    ):
        self.vocab, self.seed, self.scale, self.base = vocab, seed, scale, base
        self._cache: dict = {}

    def __call__(self, prefix) -> np.ndarray:
        key = tuple(int(t) for t in prefix)
        z = self._cache.get(key)
        if z is None:
            z = self.scale * np.random.default_rng([self.seed, 77, len(key), *key]).standard_normal(
                self.vocab
            )
            if self.base is not None:
                z = z + self.base(key)
            z.setflags(write=False)
            self._cache[key] = z
        return z


class ProcessedTarget:
    """``prefix -> process_logits(logits(prefix), settings)`` (cached)."""

    def __init__(self, logits: HashedLogits, settings: SamplingSettings):
        self.logits, self.settings = logits, settings
        self._cache: dict = {}

    def __call__(self, prefix) -> np.ndarray:
        key = tuple(int(t) for t in prefix)
        row = self._cache.get(key)
        if row is None:
            row = process_logits(self.logits(key), self.settings)
            self._cache[key] = row
        return row


def describe(settings: SamplingSettings) -> str:
    parts = [f"T={settings.temperature:g}"] + [
        f"{k}={getattr(settings, k):g}" for k in settings.active()
    ]
    order = (
        "vllm"
        if settings.order == VLLM_ORDER
        else "hf"
        if settings.order == HF_ORDER
        else "/".join(settings.order)
    )
    return ",".join(parts) + (f",order={order}" if len(settings.active()) > 1 else "")


@dataclass
class SettingsCase:
    """A case of settings mode: the ordinary case (judged on processed rows) plus its logits and settings."""

    case: Case | MarginalCase
    logits: HashedLogits
    draft_logits: HashedLogits | None
    settings: SamplingSettings

    @property
    def name(self) -> str:
        return self.case.name


def settings_cases(seed: int, panel, *, mode: str, chains_only: bool = False) -> list[SettingsCase]:
    """Per setting of ``panel``: conditional mode, a two-level tree along the target's likely tokens; marginal
    mode, a depth-2 chain (and, unless ``chains_only``, a root with two drafted children and a grandchild)."""
    s = seed * 1000 + 900
    v = SETTINGS_VOCAB
    out = []
    for st in panel:
        tag = describe(st)
        # one model pair for every setting; the drafter is the target plus noise
        z = HashedLogits(v, s)
        zq = HashedLogits(v, s + 50, scale=1.5, base=z)
        target = ProcessedTarget(z, st)
        if mode == "conditional":
            root = np.argsort(-target(()), kind="stable")
            a, b = int(root[0]), int(root[1])
            tree = DraftTree.from_paths([(a,), (b,), (a, int(np.argmax(target((a,)))))])
            out.append(SettingsCase(Case(f"tree[{tag}]", tree, target), z, None, st))
            continue
        draft = ProcessedTarget(zq, st)
        topologies = [("chain", [-1, 0, 1])] + (
            [] if chains_only else [("siblings", [-1, 0, 0, 1])]
        )
        for name, topo in topologies:
            if name == "siblings" and (draft(()) > 0).sum() < 2:
                continue  # a filter left one draft token at the root: two siblings cannot be drawn
            out.append(SettingsCase(MarginalCase(f"{name}[{tag}]", topo, target, draft), z, zq, st))
    return out


__all__ = [
    "SETTINGS_VOCAB",
    "DEFAULT_PANEL",
    "HashedLogits",
    "ProcessedTarget",
    "SettingsCase",
    "settings_cases",
    "describe",
]
