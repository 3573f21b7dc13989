"""A user's verifier, ``--verifier MODULE:CALLABLE``, as the decide stage of the generate loop.

The callable has the conformance kit's signature ``f(tree, probs, rng) -> (exit_node, bonus_token)``
(``exitlaw check`` takes the same): ``tree`` a :class:`~exitlaw.theory.DraftTree`, ``probs`` the float64
target rows ``softmax(logits / T)`` ``[N, V]`` in numpy, ``rng`` a ``numpy.random.Generator`` seeded from the
request's seed. At ``T = 0`` every exact verifier reduces to greedy, which is used instead. The module is
named on the server's command line only, never by a request.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from exitlaw.engine.decode.dispatch import KINDS, verify
from exitlaw.engine.decode.sampling_settings import processed_probs
from exitlaw.engine.decode.verifiers import VerifyResult
from exitlaw.theory.infra.callable_spec import CallableSpecError, load_callable


class UserVerifierError(RuntimeError):
    """The user's verifier returned something that is not an (exit node, bonus token) of this tree."""


def is_user_verifier(spec: str) -> bool:
    return spec not in KINDS and ":" in spec


def load_user_verifier(spec: str) -> Callable:
    """``MODULE:CALLABLE`` -> the callable; a ``ValueError`` naming ``--verifier`` when it cannot be loaded."""
    try:
        return load_callable(spec)
    except CallableSpecError as err:
        raise ValueError(f"--verifier {spec}: {err}") from err


def user_decide(fn: Callable, seed: int) -> Callable:
    """A ``decide(cfg, dtree, logits, gens) -> VerifyResult`` running ``fn`` with its own seeded rng."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(3,)))

    def decide(cfg, dtree, logits: torch.Tensor, gens) -> VerifyResult:
        if cfg.temperature == 0:
            return verify("greedy", dtree, logits, cfg.settings, None)
        probs = processed_probs(logits, cfg.settings).cpu().numpy()  # temperature and filters
        out = fn(dtree.tree, probs, rng)
        try:
            v, y = (int(out[0]), int(out[1]))
            if len(out) != 2:
                raise ValueError
        except (TypeError, ValueError, IndexError):
            raise UserVerifierError(
                f"the verifier returned {out!r}, not (exit_node, bonus_token)"
            ) from None
        if not 0 <= v < dtree.num_nodes or not 0 <= y < probs.shape[1]:
            raise UserVerifierError(
                f"the verifier returned node {v} / token {y} outside the tree "
                f"({dtree.num_nodes} nodes) or vocabulary ({probs.shape[1]})"
            )
        return VerifyResult(v, y, list(dtree.tree.path_nodes(v)))

    return decide


__all__ = ["UserVerifierError", "is_user_verifier", "load_user_verifier", "user_decide"]
