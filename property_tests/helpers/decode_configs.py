"""Decode configurations and prompts the engine tests share."""

from __future__ import annotations

from exitlaw.engine.decode.loop import DecodeConfig
from exitlaw.theory.sampling_settings import SamplingSettings

# token-id prompts of different lengths (1 to 11 tokens) for batched and continuous decoding
RAGGED_PROMPTS = [
    [11, 42, 7, 99, 150, 3, 18],
    [5],
    [9, 8, 7, 6, 5, 4, 3, 2, 1, 200, 201],
    [33, 44],
    [120, 121, 122],
    [17, 250, 3, 3, 3, 91],
    [64],
    [7, 77, 177, 277],
]


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
