"""The engine's one verifier dispatch table: a registered name -> its single-tree and batched forms.

Each :class:`EngineVerifier` pairs a single-tree implementation (on a
:class:`~exitlaw.engine.decode.device_tree.DeviceTree` and ``[N, V]`` logits) with its batched twin
(on a :class:`~exitlaw.engine.decode.batch_tree.BatchTree` and ``[B, N, V]`` logits), both
registered where they are defined, in the verifier's module of :mod:`.verifiers`
(:func:`~exitlaw.engine.decode.verifiers.table.engine_verifier`), and carries the registry's facts that change how a round calls it
(:mod:`exitlaw.theory.registry`): ``rows`` -- ``"all"`` (every row processed by the sampling
settings up front: predraw draws at every node) or ``"read"`` (a processor handed to the verifier,
which filters only the rows it reads); ``tree`` -- what it reads of the device tree at ``T > 0``
(``"all"``: TEV's level-parallel matrices; ``"walk"``: the host tree only). At ``T = 0`` every
verifier is the greedy walk, which needs no generators.

:func:`verify` and :func:`verify_batch` are the only dispatchers (the engine imports them from here).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Callable

import torch

from exitlaw.engine.decode.batch_tree import BatchTree
from exitlaw.engine.decode.sampling_settings import filter_logits, rows_processor
from exitlaw.engine.decode.verifiers import KINDS, VerifierGenerators, VerifyResult
from exitlaw.engine.decode.verifiers.result import _check
from exitlaw.engine.decode.verifiers.table import BATCHED, SINGLE, engine_names
from exitlaw.theory import DistributionError, SamplingSettings
from exitlaw.theory.registry import verifier
from exitlaw.theory.sampling_settings import check_settings


@dataclass(frozen=True)
class EngineVerifier:
    """One registered verifier on the device: ``single(tree, logits, T, gens[, process])`` and its
    batched twin ``batched(batch_tree, logits, T, gens[, process])`` (None: not batched); ``rows``
    and ``tree`` are the registry's ``engine_rows`` / ``engine_tree`` facts (greedy: ``f(tree, logits)``)."""

    name: str
    single: Callable[..., VerifyResult]
    batched: Callable[..., list[VerifyResult]] | None

    @property
    def rows(self) -> str | None:
        return verifier(self.name).engine_rows

    @property
    def tree(self) -> str:
        return verifier(self.name).engine_tree

    @property
    def greedy_only(self) -> bool:
        return verifier(self.name).greedy_only


class _Dispatch(Mapping[str, EngineVerifier]):
    """A live view of the verifier table (:mod:`.verifiers.table`): registered name -> its
    :class:`EngineVerifier`, in registry order; a verifier module imported later appears in it."""

    def __getitem__(self, name: str) -> EngineVerifier:
        if name not in SINGLE:
            raise KeyError(name)
        return EngineVerifier(name, SINGLE[name], BATCHED.get(name))

    def __iter__(self) -> Iterator[str]:
        return iter(engine_names())

    def __len__(self) -> int:
        return len(SINGLE)


DISPATCH: Mapping[str, EngineVerifier] = _Dispatch()


def _run(kind: str, batched: bool, tree, logits: torch.Tensor, settings, generators):
    entry, t = DISPATCH[kind], settings.temperature
    if t == 0 or entry.greedy_only:  # every verifier is the greedy walk at T = 0
        greedy = DISPATCH["greedy"]
        return (greedy.batched if batched else greedy.single)(tree, logits)
    if generators is None:
        raise ValueError(f"verifier {kind!r} at T={t} needs VerifierGenerators")
    fn = entry.batched if batched else entry.single
    if fn is None:
        raise ValueError(f"verifier {kind!r} has no batched form")
    if entry.rows == "all":  # draws at every node: every row is processed
        return fn(tree, filter_logits(logits, settings), t, generators)
    return fn(tree, logits, t, generators, rows_processor(settings))


def _check_kind(kind: str) -> None:
    if kind not in SINGLE:
        raise ValueError(f"unknown verifier {kind!r}; choose one of {', '.join(engine_names())}")


def verify(
    kind: str,
    tree,
    logits: torch.Tensor,
    settings: SamplingSettings,
    generators: VerifierGenerators | None,
) -> VerifyResult:
    """Verify one round. ``logits``: the target's ``[N, V]`` tree-forward logits (any float dtype).

    ``settings``: the :class:`~exitlaw.theory.SamplingSettings` (temperature plus top-k / top-p /
    min-p; a bare float is refused with ``TypeError``): the rows a verifier reads are processed first (:func:`filter_logits`,
    filtered tokens at ``-inf``; predraw all ``N``, TEV the ``K`` internal rows and the exit row,
    residual its path), then verified at the settings' temperature, so ``p_v`` is the processed target.
    """
    _check_kind(kind)
    settings = check_settings(settings)
    _check(tree, logits)
    return _run(kind, False, tree, logits, settings, generators)


def verify_batch(
    kind: str,
    bt: BatchTree,
    logits: torch.Tensor,
    settings: SamplingSettings,
    generators: VerifierGenerators | None,
) -> list[VerifyResult]:
    """Verify one batched round; ``logits [B, N, V]`` from the padded tree forward. One result per row.

    ``settings``: the :class:`~exitlaw.theory.SamplingSettings`; the rows each verifier
    reads are processed first (:func:`~exitlaw.engine.decode.sampling_settings.filter_logits`), as in
    :func:`verify`.
    """
    _check_kind(kind)
    settings = check_settings(settings)
    if not isinstance(bt, BatchTree):
        raise TypeError(
            f"verify_batch needs a BatchTree (see to_batch_tree), got {type(bt).__name__}"
        )
    if logits.ndim != 3 or tuple(logits.shape[:2]) != (bt.batch_size, bt.width):
        raise DistributionError(
            f"logits must have shape [B={bt.batch_size}, N={bt.width}, V], got {tuple(logits.shape)}"
        )
    if not torch.is_floating_point(logits):
        raise DistributionError(f"logits must be floating point, got {logits.dtype}")
    for tree in bt.trees:
        tree.check_vocab(int(logits.shape[2]))
    return _run(kind, True, bt, logits, settings, generators)


__all__ = ["EngineVerifier", "DISPATCH", "KINDS", "verify", "verify_batch"]
