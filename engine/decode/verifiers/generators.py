"""The verifiers' random streams: two seeded generators per round (acceptance, bonus), one set per
batch row for continuous batching, and float64 uniforms drawn from either.

Streams: acceptance decisions (predraw's ``R_v``, residual's uniforms, TEV's exit draw) use
``generators.acceptance``; bonus draws use ``generators.bonus`` (predraw has no separate bonus draw:
its bonus is ``R_exit``). A batched verifier given one :class:`VerifierGenerators` gives row ``b``
the ``b``-th uniform of each call, so a row's draws depend on the batch it sits in (the law does
not); given a :class:`RowGenerators` (one per row), each row draws from its own streams exactly what
its single-tree twin draws, so a seeded row decodes alike in any batch.
"""

from __future__ import annotations

import numpy as np
import torch


class VerifierGenerators:
    """Two independent seeded ``torch.Generator`` streams: ``acceptance`` and ``bonus``.

    The two seeds are spawned from ``numpy.random.SeedSequence(seed)``, so they
    never coincide and never overlap the drafter's stream (seed that separately).
    """

    def __init__(self, seed: int, device: torch.device | str = "cpu"):
        acc_seed, bonus_seed = (
            int(s.generate_state(1, np.uint64)[0] >> np.uint64(1))
            for s in np.random.SeedSequence(int(seed)).spawn(2)
        )
        self.seed = int(seed)
        self.device = torch.device(device)
        self.acceptance = torch.Generator(device=self.device).manual_seed(acc_seed)
        self.bonus = torch.Generator(device=self.device).manual_seed(bonus_seed)


class RowGenerators:
    """One :class:`VerifierGenerators` per batch row, for a batch whose rows are separate requests.

    A batched verifier given these draws row ``b``'s uniforms from row ``b``'s own streams only, as
    many and in the order its single-tree twin draws them for that row alone (predraw: one per real
    node, not per padding slot). A row's draws then depend on its own seed and tree, never on the
    other rows or the padded width (continuous batching, :mod:`exitlaw.engine.decode.continuous`).
    ``acceptance`` / ``bonus`` are the rows' streams as lists, which :func:`_draw_rows` accepts.
    """

    def __init__(self, rows):
        self.rows = list(rows)
        bad = [b for b, g in enumerate(self.rows) if not isinstance(g, VerifierGenerators)]
        if bad:
            raise TypeError(f"rows {bad} are not VerifierGenerators")

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, b: int) -> VerifierGenerators:
        return self.rows[b]

    @property
    def acceptance(self) -> list[torch.Generator]:
        return [g.acceptance for g in self.rows]

    @property
    def bonus(self) -> list[torch.Generator]:
        return [g.bonus for g in self.rows]


# a uniform source: one generator, or one entry per row (a generator, or None: a padding row, no draw)
Uniforms = torch.Generator | list


def uniforms(count: int, gen: Uniforms, device) -> torch.Tensor:
    """``[count, 1]`` float64 uniforms on ``device``: from ``gen`` in one call, or, with a list of
    ``count`` entries, row ``r``'s from its own generator (consecutive rows of one generator in one
    call; a ``None`` row gets 0.5 and consumes nothing). CPU streams are shape-independent, so a row
    drawn here gets the numbers its single-sequence twin draws."""
    if isinstance(gen, torch.Generator):
        return torch.rand(count, 1, dtype=torch.float64, device=device, generator=gen)
    if len(gen) != count:
        raise ValueError(f"{len(gen)} row generators for {count} rows")
    out = torch.full((count, 1), 0.5, dtype=torch.float64, device=device)
    start = 0
    while start < count:
        end = start
        while end < count and gen[end] is gen[start]:
            end += 1
        if gen[start] is not None:
            out[start:end] = torch.rand(
                end - start, 1, dtype=torch.float64, device=device, generator=gen[start]
            )
        start = end
    return out


__all__ = ["VerifierGenerators", "RowGenerators", "Uniforms", "uniforms"]
