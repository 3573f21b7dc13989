"""Tiny model sizes the engine tests share, written as changes to :class:`TinySpec`'s defaults."""

from __future__ import annotations

from exitlaw.engine.models.tiny import TINY_STACK, TinySpec

# TinySpec at half width (vocab 64, hidden 32, head dim 8, block 5): the pair the training tests train
SMALL_SPEC = TinySpec(
    vocab_size=64,
    target=TINY_STACK.but(hidden_size=32, intermediate_size=64, head_dim=8),
    block_size=5,
)
