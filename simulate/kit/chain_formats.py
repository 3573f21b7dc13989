"""Chain rejection samplers in the serving engines' layout (vLLM's), as the kit's marginal form.

The kit's marginal mode calls ``f(tree, probs, draft_probs, rng) -> (exit_node, bonus_token)`` on a
realised chain. :func:`adapt_chain_verifier` wraps a chain sampler written in vLLM's layout into that
form. Read from public code (facts only, nothing copied): vllm-project/vllm, ``vllm/v1/sample/
rejection_sampler.py`` at 0097a7bbf1d9 (``RejectionSampler.forward``, ``rejection_sample``,
``generate_uniform_probs``, ``rejection_random_sample_kernel``, ``sample_recovered_tokens``).

``vllm`` (batch of one request, ``K`` draft tokens, vocabulary ``V``): ``draft_token_ids`` [K] int64;
``cu_num_draft_tokens`` [1] = ``[K]``; ``draft_probs`` [K, V], row ``k`` the distribution draft token
``k`` was sampled from; ``target_probs`` [K, V], row ``k`` the (processed) target distribution that
verifies draft token ``k``; ``bonus_token_ids`` [1, 1], the token appended when every draft token is
accepted, drawn by the kit from the target row after the last draft token (upstream the ordinary
sampler draws it before the rejection sampler runs); ``uniform_probs`` [K] float32, one acceptance coin
per draft token, pre-drawn by the kit from its generator (upstream ``torch.rand(dtype=float32)``; a
torch generator cannot be steered to boundary values, the kit's can); ``rng`` a ``numpy.random.Generator``
for the sampler's own draws (upstream the recovered tokens use exponential noise from the request's
generator). Call ``f(draft_token_ids=..., cu_num_draft_tokens=..., draft_probs=..., target_probs=...,
bonus_token_ids=..., uniform_probs=..., rng=...)`` -> ``output_token_ids`` [1, K + 1]: the accepted
draft tokens, then the recovered token at the first rejected position (or the bonus after ``K``
accepted), then :data:`PLACEHOLDER` (-1) at every later position. Kit draws, in this order: the bonus
(one ``random()``), then the ``K`` coins, then whatever ``f`` draws. Exit node = number of accepted
tokens, bonus = the last non-placeholder entry. Inputs are read-only.
"""

from __future__ import annotations

import inspect
from typing import Callable

import numpy as np

from exitlaw.simulate.kit.calls import VerifierCallError
from exitlaw.theory import DraftTree

CHAIN_FORMATS = ("vllm",)
PLACEHOLDER = -1
VLLM_ARGUMENTS = (
    "draft_token_ids",
    "cu_num_draft_tokens",
    "draft_probs",
    "target_probs",
    "bonus_token_ids",
    "uniform_probs",
    "rng",
)


class ChainFormatError(VerifierCallError):
    """A chain sampler's input cannot be built or its output is malformed in its format."""


def _draw(row: np.ndarray, u: float) -> int:
    """Inverse CDF of ``row`` at ``u`` in [0, 1): never a zero-probability token (kept below the last positive)."""
    cdf = np.cumsum(row)
    i = int(np.searchsorted(cdf, u * cdf[-1], side="right"))
    return min(i, int(np.flatnonzero(row > 0)[-1]))


def to_vllm(tree: DraftTree, probs: np.ndarray, draft_probs: np.ndarray) -> dict:
    """The chain, target rows and draft rows in vLLM's layout (without the kit's draws)."""
    k = tree.num_nodes - 1
    if any(int(tree.parent[u]) != u - 1 for u in range(1, tree.num_nodes)):
        raise ChainFormatError(
            "the vllm format takes chains (run with --mode marginal --chains-only)"
        )
    out = {
        "draft_token_ids": np.asarray(tree.token[1:], dtype=np.int64),
        "cu_num_draft_tokens": np.array([k], dtype=np.int64),
        "draft_probs": np.array(draft_probs[:k], dtype=np.float32),
        "target_probs": np.array(probs[:k], dtype=np.float32),
    }
    for a in out.values():
        a.setflags(write=False)
    return out


def from_vllm_result(out, draft_token_ids: np.ndarray, vocab: int) -> tuple[int, int]:
    """``output_token_ids`` [1, K + 1] -> ``(exit_node, bonus_token)``; accepted entries must be the drafts."""
    k = int(np.size(draft_token_ids))
    try:
        arr = np.asarray(out)
        ok = arr.shape == (1, k + 1) and np.issubdtype(arr.dtype, np.integer)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ChainFormatError(
            f"the vllm-format sampler returned {out!r}; expected output_token_ids, integers "
            f"of shape [1, {k + 1}]"
        )
    row = [int(x) for x in arr[0]]
    n = row.index(PLACEHOLDER) if PLACEHOLDER in row else len(row)
    if n == 0 or any(x != PLACEHOLDER for x in row[n:]):
        raise ChainFormatError(
            f"output_token_ids {row}: expected tokens, then only the placeholder {PLACEHOLDER}"
        )
    for i in range(n - 1):
        if row[i] != int(draft_token_ids[i]):
            raise ChainFormatError(
                f"output_token_ids {row}: position {i} holds {row[i]}, but a token before the "
                f"last written one is an accepted draft token, {int(draft_token_ids[i])}"
            )
    if not 0 <= row[n - 1] < vocab:
        raise ChainFormatError(
            f"output_token_ids {row}: token {row[n - 1]} is outside the vocabulary 0..{vocab - 1}"
        )
    return n - 1, row[n - 1]


def check_chain_format(verifier_format: str, mode: str, chains_only: bool) -> None:
    """A chain format needs ``--mode marginal --chains-only``: a clear error otherwise."""
    if verifier_format in CHAIN_FORMATS and (mode != "marginal" or not chains_only):
        raise ValueError(
            f"--format {verifier_format} is a chain rejection sampler's layout: run it with "
            "--mode marginal --chains-only"
        )


def check_callable_as(fn: Callable, names, what: str, error: type[Exception]) -> None:
    """Refuse (``error``) a ``fn`` that cannot take keyword arguments ``names``, before any call."""
    try:
        inspect.signature(fn).bind(**dict.fromkeys(names))
    except (TypeError, ValueError) as err:
        raise error(
            f"{getattr(fn, '__name__', fn)} cannot be called as {what} f({', '.join(names)}): {err}"
        ) from err


def adapt_chain_verifier(fn: Callable, verifier_format: str) -> Callable:
    """``fn`` in ``verifier_format`` as the kit's ``f(tree, probs, draft_probs, rng) -> (exit_node, bonus_token)``."""
    if verifier_format not in CHAIN_FORMATS:
        raise ValueError(
            f"unknown chain format {verifier_format!r}; formats: {', '.join(CHAIN_FORMATS)}"
        )
    check_callable_as(fn, VLLM_ARGUMENTS, "a vllm-format sampler", ChainFormatError)

    def adapted(
        tree: DraftTree, probs: np.ndarray, draft_probs: np.ndarray, rng: np.random.Generator
    ):
        args = to_vllm(tree, probs, draft_probs)
        last = np.asarray(probs[tree.num_nodes - 1], dtype=np.float64)
        bonus = np.array([[_draw(last, rng.random())]], dtype=np.int64)
        coins = np.asarray(rng.random(tree.num_nodes - 1, dtype=np.float32), dtype=np.float32)
        for a in (bonus, coins):
            a.setflags(write=False)
        out = fn(**args, bonus_token_ids=bonus, uniform_probs=coins, rng=rng)
        return from_vllm_result(out, args["draft_token_ids"], int(np.shape(probs)[1]))

    adapted.__name__ = f"{getattr(fn, '__name__', 'sampler')}[{verifier_format}]"
    return adapted


__all__ = [
    "CHAIN_FORMATS",
    "PLACEHOLDER",
    "VLLM_ARGUMENTS",
    "ChainFormatError",
    "to_vllm",
    "from_vllm_result",
    "check_chain_format",
    "adapt_chain_verifier",
]
