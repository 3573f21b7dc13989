"""Boundary-coin mode of the conformance kit (``exitlaw check --boundary``).

Monte Carlo cannot find bugs that need one particular coin: a coin of exactly ``0.0``
accepted by ``coin <= p`` when ``p = 0``, or a coin so close to 1 that ``coin * total``
rounds up to the last cumulative sum and an inverse-CDF loop falls off its end. This
mode drives the verifier's ``numpy.random.Generator`` with such values and applies the
**zero-probability-cell rule**: an exact verifier never emits ``(exit v, bonus y)`` with
``P(v) p_v(y) [y not a child token of v] = 0`` (DESIGN.md section 1, block law), for any
coin value ``Generator.random()`` can return.

Coin values (each a multiple of ``2^-53`` in ``[0, 1)``, hence a possible output of
``Generator.random()``): ``0.0``; the largest double below 1; the largest float32 below 1;
and every exact cumulative boundary ``cdf_v[k] / total_v`` of every row of the case,
rounded down and up to the ``2^-53`` grid. Schedules: every draw gets the value
(``constant``), or only the ``i``-th draw does and the others are ordinary random draws
(``at draw i``, ``i < 8``).

What the stand-in (:class:`BoundaryGenerator`, a ``numpy.random.Generator`` subclass) reaches:
``random()`` (any ``size``; ``dtype=float32`` gets the value rounded to float32 and kept below 1),
``uniform(low, high)`` (``low + (high - low) * value``) and ``spawn`` (children share the schedule),
so verifiers over :class:`~.randomness.GeneratorRandomness` and raw-uniform code are covered.
What it cannot reach: every other method (``choice``, ``integers``, ``multinomial``, ``gumbel``,
``exponential``, normals, ...) draws from the real bit generator, and a verifier that makes its
own generator (or uses torch or Python's ``random``) is not driven at all; a boundary bug behind
those is not found. Passing this mode is not a proof of exactness: run the statistical kit too.
"""

from __future__ import annotations

import traceback
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

from exitlaw.simulate.kit.conformance import _tree_json
from exitlaw.simulate.kit.calls import VerifierCallError, _as_pair, check_signature
from exitlaw.simulate.kit.cases import conditional_cases
from exitlaw.simulate.kit.checks import case_block_law

BOUNDARY_OK, BOUNDARY_FLAGGED, BOUNDARY_FAILED = "passes boundary coins", "not exact", "verifier failed"
BOUNDARY_EXIT_CODES = {BOUNDARY_OK: 0, BOUNDARY_FLAGGED: 1, BOUNDARY_FAILED: 4}
F64_BELOW_ONE = float(np.nextafter(1.0, 0.0))
F32_BELOW_ONE = float(np.nextafter(np.float32(1.0), np.float32(0.0)))
GRID = 2.0 ** -53
SINGLE_DRAWS = 8


class _Schedule:
    """Which value the ``k``-th ``random()`` call (counted over every spawned child) returns."""

    def __init__(self, value: float, at: int | None):
        self.value, self.at, self.count = value, at, 0

    def next(self, fallback: Callable[[], float]) -> float:
        k, self.count = self.count, self.count + 1
        return self.value if self.at is None or k == self.at else fallback()


class BoundaryGenerator(np.random.Generator):
    """A ``Generator`` whose ``random``/``uniform`` follow a boundary schedule (module docstring)."""

    def __init__(self, schedule: _Schedule, seed: int = 0):
        super().__init__(np.random.PCG64(seed))
        self._schedule = schedule
        self._seed = seed

    def _one(self, dtype) -> float:
        v = self._schedule.next(lambda: float(super(BoundaryGenerator, self).random()))
        if np.dtype(dtype) == np.float32:
            return np.float32(min(np.float32(v), np.float32(F32_BELOW_ONE)))
        return float(v)

    def random(self, size=None, dtype=np.float64, out=None):
        if out is not None:
            raise NotImplementedError("BoundaryGenerator.random(out=...) is not supported")
        if size is None:
            return self._one(dtype)
        arr = np.empty(size, dtype=dtype)
        flat = arr.reshape(-1)
        for i in range(flat.size):
            flat[i] = self._one(dtype)
        return arr

    def uniform(self, low=0.0, high=1.0, size=None):
        u = self.random(size)
        return low + (high - low) * u

    def spawn(self, n_children: int):
        return [BoundaryGenerator(self._schedule, self._seed * 7919 + i + 1) for i in range(n_children)]


def boundary_values(probs: np.ndarray) -> list[float]:
    """The coin values of the module docstring for a case's rows ``probs`` ([N, V])."""
    vals = {0.0, F64_BELOW_ONE, F32_BELOW_ONE}
    for row in np.asarray(probs, dtype=np.float64):
        total = row.sum()
        if total <= 0:
            continue
        for c in np.cumsum(row)[:-1].tolist() + np.cumsum(row.astype(np.float32)).astype(np.float64).tolist():
            x = c / total
            for q in (np.floor(x / GRID) * GRID, np.ceil(x / GRID) * GRID):
                if 0.0 <= q < 1.0:
                    vals.add(float(q))
    return sorted(vals)


@dataclass
class BoundaryReport:
    verifier: str
    verdict: str
    exit_code: int
    seed: int
    runs: int = 0
    values: int = 0
    flagged: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    reach: str = ("drives Generator.random/uniform/spawn; choice, integers, multinomial, gumbel and every "
                  "other Generator method, and generators the verifier makes itself, are not driven")

    def to_json(self) -> dict:
        return asdict(self)


def _why(tree, prefix, v: int, y: int) -> str:
    if y in {int(tree.token[c]) for c in tree.children[v]}:
        return f"bonus {y} is a child token of node {v}"
    if prefix[v] == 0:
        return f"node {v} has prefix probability P({v}) = 0 (a zero-probability child was accepted)"
    return f"p_{v}({y}) = 0"


def run_boundary(fn: Callable, *, name: str = "verifier", seed: int = 0, budget: int = 8, vocab: int = 4,
                 max_flags: int = 20) -> BoundaryReport:
    """Run ``fn(tree, probs, rng)`` on every case under every boundary schedule; flag zero-probability cells."""
    check_signature(fn, "conditional")
    rep = BoundaryReport(name, BOUNDARY_OK, 0, seed)
    for case in conditional_cases(seed, budget=budget, vocab=vocab):
        probs = case.probs
        probs.setflags(write=False)
        block, prefix = case_block_law(case)
        values = boundary_values(probs)
        rep.values += len(values)
        for value in values:
            for at in [None] + list(range(SINGLE_DRAWS)):
                sched = _Schedule(value, at)
                rep.runs += 1
                where = {"case": case.name, "tree": _tree_json(case.tree), "coin": value.hex(),
                         "coin_decimal": repr(value), "schedule": "constant" if at is None else f"at draw {at}"}
                out = None  # a format adapter may reject the result inside the call
                try:
                    out = fn(case.tree, probs, BoundaryGenerator(sched, seed))
                    v, y = _as_pair(out, case.tree, case.vocab)
                except VerifierCallError as err:  # e.g. a fall-off returning token V: a boundary finding
                    rep.flagged.append({**where, "emitted": repr(out), "why": str(err)})
                    continue
                except Exception as err:  # the user's code failed under this coin
                    rep.errors.append({**where, "error": f"{type(err).__name__}: {err}",
                                       "traceback": "".join(traceback.format_exception(err))[-3000:]})
                    continue
                if block[v, y] == 0:
                    rep.flagged.append({**where, "emitted": [v, y], "why": _why(case.tree, prefix, v, y)})
                if at is not None and sched.count <= at:
                    break  # fewer draws than this position: later positions are the same run
                if len(rep.flagged) >= max_flags:
                    break
            if len(rep.flagged) >= max_flags:
                break
    if rep.flagged:
        rep.verdict = BOUNDARY_FLAGGED
    elif rep.errors:
        rep.verdict = BOUNDARY_FAILED
    rep.exit_code = BOUNDARY_EXIT_CODES[rep.verdict]
    return rep


def format_boundary(rep: BoundaryReport) -> str:
    out = [f"exitlaw check --boundary {rep.verifier}   seed {rep.seed}",
           f"{rep.runs} runs: {rep.values} coin values (0, largest double and float32 below 1, exact cumulative "
           f"boundaries), each as every draw and at each of the first {SINGLE_DRAWS} draws",
           f"reach: {rep.reach}"]
    for f in rep.flagged[:10]:
        out.append(f"  ZERO-PROBABILITY CELL  case {f['case']} tree {f['tree']}: coin {f['coin_decimal']} "
                   f"({f['schedule']}) -> emitted {f['emitted']}: {f['why']}")
    for e in rep.errors[:5]:
        out.append(f"  VERIFIER FAILED  case {e['case']}: coin {e['coin_decimal']} ({e['schedule']}): {e['error']}")
    out.append(f"verdict: {rep.verdict.upper() if rep.exit_code else rep.verdict}   (exit status {rep.exit_code})")
    return "\n".join(out)


__all__ = ["BoundaryGenerator", "BoundaryReport", "boundary_values", "run_boundary", "format_boundary",
           "BOUNDARY_OK", "BOUNDARY_FLAGGED", "BOUNDARY_FAILED", "F64_BELOW_ONE", "F32_BELOW_ONE"]
