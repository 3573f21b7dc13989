"""A target small enough to enumerate: its exact ``k``-token law and the block law of a round.

The end-to-end losslessness tests (docs/design.md §1.3: repeating rounds reproduces the
target's autoregressive law ``prod_t p(y_t | c, y_<t)``) compare the real engine with laws
computed here from the target's *own causal forward passes*, never from the engine's tree
logits:

* :func:`tiny_law_pair` -- a random Qwen3-architecture target with a vocabulary of
  :data:`VOCAB` = 3 and a random DFlash drafter of block :data:`BLOCK` = 3 (a round emits
  at most 3 tokens), built in memory from :class:`~exitlaw.engine.models.tiny.TinySpec`;
  ``init_std = 1`` gives peaked rows. With 3 tokens a budget-4 DDTree holds a large part
  of the target's mass whatever the drafter proposes, so accepted paths are long.
* :func:`sequence_law` -- ``Pr[y_1..y_k]`` for every ``y in V^k`` (index: base-``V`` digits).
* :func:`round_block_law` -- ``Pr[exit = v, bonus = y] = P(v) p_v(y) [y not a child of v]``
  of a recorded tree in a given context (``reference_block_law`` on rows from causal forwards).
* :class:`RoundRecorder` -- a ``trace=`` sink for ``generate``/``generate_batch`` that keeps
  every :class:`~exitlaw.theory.TraceRound` in order.
"""

from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np
import torch

from exitlaw.engine.models.config import StackSizes
from exitlaw.engine.models.target import TargetModel
from exitlaw.engine.models.tiny import TinySpec, build_tiny_drafter, build_tiny_target
from exitlaw.theory import DraftTree
from exitlaw.theory.exact import reference_block_law

VOCAB = 3
BLOCK = 3  # drafter block: depth 2 + the bonus, so a round emits at most 3 tokens
K = 5  # tokens compared: at least two rounds, usually three
PROMPT = (0, 1, 2, 1)
SPEC = TinySpec(
    vocab_size=VOCAB,
    target=StackSizes(
        hidden_size=16, intermediate_size=32, num_layers=2, num_heads=2, num_kv_heads=1, head_dim=8
    ),
    draft_layers=1,
    block_size=BLOCK,
    target_layer_ids=(0, 1),
    init_std=1.0,
)


def tiny_law_pair(seed: int = 0):
    """``(TargetModel, DFlashDrafter)`` with :data:`SPEC`; the drafter's mask token is token ``VOCAB - 1``."""
    target = TargetModel(build_tiny_target(SPEC, seed), SPEC.target_layer_ids)
    return target, build_tiny_drafter(SPEC, VOCAB - 1, seed)


@torch.no_grad()
def _next_rows(
    target: TargetModel, contexts: Sequence[Sequence[int]], temperature: float
) -> np.ndarray:
    """``p(. | context)`` at ``temperature`` for each context (equal lengths), float64 ``[n, V]``."""
    ids = torch.tensor([list(c) for c in contexts], dtype=torch.long, device=target.device)
    logits = target.model(input_ids=ids).logits[:, -1].double()
    return torch.softmax(logits / temperature, -1).cpu().numpy()


@torch.no_grad()
def sequence_law(
    target: TargetModel, prompt: Sequence[int], k: int, temperature: float
) -> np.ndarray:
    """``Pr[y_1..y_k | prompt] = prod_t p(y_t | prompt, y_<t)`` over ``V^k`` (float64, sums to 1).

    One causal forward over every ``prompt + y_1..y_{k-1}``; cell ``sequence_index(y)``."""
    vocab = target.vocab_size
    seqs = torch.tensor(
        [list(prompt) + list(s) for s in itertools.product(range(vocab), repeat=k)],
        dtype=torch.long,
        device=target.device,
    )
    logp = torch.log_softmax(target.model(input_ids=seqs).logits.double() / temperature, -1)
    start = len(prompt) - 1
    rows = torch.arange(seqs.shape[0], device=seqs.device)
    total = sum(logp[rows, start + t, seqs[:, start + 1 + t]] for t in range(k))
    return total.exp().cpu().numpy()


def sequence_index(tokens: Sequence[int], vocab: int) -> int:
    """Base-``vocab`` index of a token sequence (first token most significant, as ``itertools.product``)."""
    idx = 0
    for t in tokens:
        idx = idx * vocab + int(t)
    return idx


def round_block_law(
    target: TargetModel, context: Sequence[int], tree: DraftTree, temperature: float
) -> np.ndarray:
    """Block law of ``tree`` in ``context`` (whose last token is the root), flattened ``[N * V]``.

    Row ``p_v`` is the target's causal next-token row after ``context + path tokens of v``."""
    contexts = [
        list(context) + [int(tree.token[u]) for u in tree.path_nodes(v)[1:]]
        for v in range(tree.num_nodes)
    ]
    rows = [_next_rows(target, [c], temperature)[0].tolist() for c in contexts]
    law = np.asarray(reference_block_law(tree, rows, one=1.0), dtype=np.float64)
    return (law / law.sum()).ravel()


class RoundRecorder:
    """A ``trace=`` sink: keeps the :class:`~exitlaw.theory.TraceRound` of every round, in order."""

    def __init__(self):
        self.rounds = []

    def write(self, record) -> None:
        self.rounds.append(record)


def block_tokens(record) -> tuple[int, ...]:
    """A recorded round's output block: the exit node's path tokens, then the bonus."""
    tree = record.tree
    return tuple(int(tree.token[u]) for u in tree.path_nodes(record.exit_node)[1:]) + (
        int(record.bonus),
    )


__all__ = [
    "VOCAB",
    "BLOCK",
    "K",
    "PROMPT",
    "SPEC",
    "tiny_law_pair",
    "sequence_law",
    "sequence_index",
    "round_block_law",
    "RoundRecorder",
    "block_tokens",
]
