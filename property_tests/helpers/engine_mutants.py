"""Deliberately wrong decode loops, planted by monkeypatching, that a losslessness test must reject.

``restart_streams_each_round`` gives every round of ``generate`` and ``generate_batch`` fresh
streams seeded with ``cfg.seed``: each round's verifier reuses the first round's uniforms. Every
per-round law and every T = 0 test still pass; the rounds are no longer independent given the
context, so the output is not the target's autoregressive law (docs/design.md §1.3).
"""

from __future__ import annotations


def restart_streams_each_round(monkeypatch) -> None:
    """Plant the mutant in :mod:`~exitlaw.engine.decode.loop` and :mod:`~exitlaw.engine.decode.batch_generate`."""
    from exitlaw.engine.decode import batch_generate, loop

    real_round, real_batch_round = loop.speculative_round, batch_generate.batch_round

    def speculative_round(state, target, drafter, cfg, gens, *rest, **kw):
        return real_round(
            state, target, drafter, cfg, loop.Generators(cfg.seed, target.device), *rest, **kw
        )

    def batch_round(state, target, drafter, cfg, gens, *rest, **kw):
        return real_batch_round(
            state, target, drafter, cfg, loop.Generators(cfg.seed, target.device), *rest, **kw
        )

    monkeypatch.setattr(loop, "speculative_round", speculative_round)
    monkeypatch.setattr(batch_generate, "batch_round", batch_round)


__all__ = ["restart_streams_each_round"]
