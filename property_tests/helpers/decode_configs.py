"""Decode configurations the engine tests share."""

from __future__ import annotations

from exitlaw.engine.decode.loop import DecodeConfig
from exitlaw.theory.sampling_settings import SamplingSettings


def sampled_tree(
    budget: int, max_new_tokens: int, seed: int, verifier: str = "tev", settings=None
) -> DecodeConfig:
    """A seeded DDTree decode sampling under ``settings`` (default: temperature 1, no filters),
    checked by ``verifier``."""
    return DecodeConfig(
        method="ddtree",
        verifier=verifier,
        budget=budget,
        settings=SamplingSettings(1.0) if settings is None else settings,
        max_new_tokens=max_new_tokens,
        seed=seed,
    )
