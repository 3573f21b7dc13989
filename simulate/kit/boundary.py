"""Boundary-coin mode of the conformance kit (``exitlaw check --boundary``).

Monte Carlo cannot find bugs that need one particular coin: a coin of exactly ``0.0``
accepted by ``coin <= p`` (or ``coin <= p / q``) when ``p = 0``, or a coin so close to 1 that
``coin * total`` rounds up to the last cumulative sum and an inverse-CDF loop falls off its end.
This mode drives the verifier's ``numpy.random.Generator`` with such values and applies the
**zero-probability rule**, which follows exactness: an exact verifier never emits a block whose
tokens the target gives probability 0, ``P(v) p_v(y) = 0`` (docs/design.md §1.2), for any coin
values ``Generator.random()`` can return (each has probability ``>= 2^-53`` per draw), and, in
marginal mode, for any draft the drafter gives positive probability. An exact verifier that does not
saturate (emits a child token of ``v`` as the bonus, e.g. one that follows only some children) is
therefore never flagged: the block law's extra zero cells are a saturation question (the statistical kit).

Coin values (each a possible output of ``Generator.random()``, a multiple of ``2^-53`` in ``[0, 1)``;
in float32, ``random(dtype=float32)``, the value floored to the ``2^-24`` grid): ``0.0``; the largest
double below 1; the largest float32 below 1; every exact cumulative boundary ``cdf_v[k] / total_v``
of every row of the case (marginal mode: of the target and residual ``(p - q)+`` rows, and every
acceptance ratio ``p(x) / q(x)`` of a drafted token), rounded down and up to the grid.

Schedules are systematic (no draw is filled from a seeded stream): every draw at the value; and for
each draw position ``i < positions`` (default 8) and each of the ``2^i`` ways to set every earlier draw to
``0`` or to the largest double below 1, the value at draw ``i`` and ``0`` at every later draw. (Earlier
draws at the extremes accept or reject every earlier sibling, so a late sibling's boundary is reached
whatever the tree; the zeros after draw ``i`` try ``coin <= p`` at every node a boundary value leads to.)
A pattern whose run made no more than ``i`` draws never read its value: its extensions are skipped.

Marginal mode (``fn(tree, probs, draft_probs, rng)``, sampled-draft and chain rules): the cases of
:func:`.cases.boundary_marginal_cases` (the target gives 0 to a token the drafter gives positive
probability, in every row), and every realised draft of positive draft probability (siblings without
replacement, as the statistical kit drafts them).

What the stand-in (:class:`BoundaryGenerator`, a ``numpy.random.Generator`` subclass) reaches:
``random()`` (any ``size``), ``uniform(low, high)`` (``low + (high - low) * value``) and ``spawn``
(children share the schedule), so verifiers over :class:`~.randomness.GeneratorRandomness` and
raw-uniform code are covered. What it cannot reach: every other method (``choice``, ``integers``,
``multinomial``, ``gumbel``, ``exponential``, normals, ...) draws from the real bit generator, and a
verifier that makes its own generator (or uses torch or Python's ``random``) is not driven at all; a
boundary bug behind those is not found. Passing this mode is not a proof of exactness: run the
statistical kit too.
"""

from __future__ import annotations

import traceback
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

from exitlaw.simulate.kit.calls import VerifierCallError, _as_pair, check_signature
from exitlaw.simulate.kit.cases import boundary_marginal_cases, conditional_cases
from exitlaw.simulate.kit.conformance import _tree_json
from exitlaw.theory import DraftTree

BOUNDARY_OK, BOUNDARY_FLAGGED, BOUNDARY_FAILED = (
    "passes boundary coins",
    "not exact",
    "verifier failed",
)
BOUNDARY_EXIT_CODES = {BOUNDARY_OK: 0, BOUNDARY_FLAGGED: 1, BOUNDARY_FAILED: 4}
F64_BELOW_ONE = float(np.nextafter(1.0, 0.0))
F32_BELOW_ONE = float(np.nextafter(np.float32(1.0), np.float32(0.0)))
GRID = 2.0**-53
GRID32 = 2.0**-24
SINGLE_DRAWS = 8  # draw positions i whose 2^i earlier-draw patterns are enumerated
EXTREMES = (0.0, F64_BELOW_ONE)


class _Schedule:
    """Draw ``k`` (counted over every spawned child) returns ``prefix[k]`` for ``k < len(prefix)``, ``value`` at
    ``k = len(prefix)``, and ``tail`` after it (``tail = None``: ``value`` for every later draw too)."""

    def __init__(self, prefix: tuple, value: float, tail: float | None = None):
        self.prefix, self.value, self.count = tuple(prefix), float(value), 0
        self.tail = self.value if tail is None else float(tail)
        self.constant = tail is None and not self.prefix

    def _at(self, k: int) -> float:
        n = len(self.prefix)
        return self.prefix[k] if k < n else (self.value if k == n else self.tail)

    def next(self) -> float:
        k, self.count = self.count, self.count + 1
        return self._at(k)

    def read(self) -> list[str]:
        """The draws this run read, in order (hex)."""
        return [self._at(k).hex() for k in range(self.count)]

    def describe(self) -> str:
        if self.constant:
            return "every draw"
        pat = "".join("0" if x == 0.0 else "1" for x in self.prefix)
        head = (
            f"draws 0..{len(self.prefix) - 1} at {pat} (0: 0.0, 1: largest double below 1), "
            if pat
            else ""
        )
        return f"{head}the value at draw {len(self.prefix)}, {self.tail!r} after"


class BoundaryGenerator(np.random.Generator):
    """A ``Generator`` whose ``random``/``uniform`` follow a boundary schedule (module docstring)."""

    def __init__(self, schedule: _Schedule, seed: int = 0, bit_generator=None):
        super().__init__(bit_generator if bit_generator is not None else np.random.PCG64(seed))
        self._schedule = schedule
        self._seed = seed

    def _one(self, dtype) -> float:
        v = self._schedule.next()
        # random(dtype=float32) returns multiples of 2^-24 below 1
        if np.dtype(dtype) == np.float32:
            return np.float32(np.floor(v / GRID32) * GRID32)
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
        # children share the schedule and the bit generator (cheap: verifiers spawn a stream per name)
        return [
            BoundaryGenerator(self._schedule, self._seed, self.bit_generator)
            for _ in range(n_children)
        ]


def _grid(x: float, vals: set) -> None:
    for q in (np.floor(x / GRID) * GRID, np.ceil(x / GRID) * GRID):
        if 0.0 <= q < 1.0:
            vals.add(float(q))


def boundary_values(probs: np.ndarray, ratios=()) -> list[float]:
    """The coin values of the module docstring for rows ``probs`` ([N, V]) and acceptance ``ratios``."""
    vals = {0.0, F64_BELOW_ONE, F32_BELOW_ONE}
    for row in np.asarray(probs, dtype=np.float64):
        total = row.sum()
        if total <= 0:
            continue
        for c in (
            np.cumsum(row)[:-1].tolist()
            + np.cumsum(row.astype(np.float32)).astype(np.float64).tolist()
        ):
            _grid(c / total, vals)
    for r in ratios:
        if np.isfinite(r):
            _grid(min(float(r), 1.0), vals)
            _grid(float(np.float32(min(float(r), 1.0))), vals)
    return sorted(vals)


def schedules(values, positions: int = SINGLE_DRAWS):
    """Yield the schedules of the module docstring: for each value, every draw at the value, then for each
    position ``i < positions`` and each pattern of earlier draws in :data:`EXTREMES`, the value at draw ``i``
    and 0.0 after. The caller runs each before the next is made: a pattern run that drew ``<= i`` times never
    read its value, so the extensions of its pattern are skipped (for every value)."""
    exhausted: set = set()
    for value in values:
        if value != 0.0:  # at 0.0 the constant schedule is the first pattern schedule
            yield _Schedule((), value)
        level: list[tuple] = [()]
        for i in range(positions):
            longer = []
            for bits in level:
                if bits in exhausted:
                    continue
                sched = _Schedule(bits, value, 0.0)
                yield sched
                # the run never read draw i: every extension of bits is the same run
                if sched.count <= i:
                    exhausted.add(bits)
                else:
                    longer += [bits + (e,) for e in EXTREMES]
            level = longer


@dataclass
class BoundaryReport:
    verifier: str
    verdict: str
    exit_code: int
    seed: int
    mode: str = "conditional"
    runs: int = 0
    calls_ok: int = 0  # runs whose call returned a block (flagged or not)
    values: int = 0
    drafts: int = 0  # marginal mode: realised drafts tried
    positions: int = SINGLE_DRAWS
    flagged: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    reach: str = (
        "drives Generator.random/uniform/spawn; choice, integers, multinomial, gumbel and every "
        "other Generator method, and generators the verifier makes itself, are not driven"
    )

    def to_json(self) -> dict:
        return asdict(self)


def _seq_zero(target, seq) -> int | None:
    """The first position at which ``target`` gives the token sequence ``seq`` probability 0, else None."""
    for t in range(len(seq)):
        if float(np.asarray(target(seq[:t]))[seq[t]]) == 0.0:
            return t
    return None


def _why(seq, t: int, v: int) -> str:
    if t < len(seq) - 1:
        return (
            f"the block {list(seq)} has target probability 0: token {seq[t]} at position {t} has p = 0 "
            f"(a zero-probability child was accepted; exit node {v})"
        )
    return f"the bonus {seq[t]} has p_{v}({seq[t]}) = 0 at the exit node {v}"


def _probe(
    rep: BoundaryReport, call: Callable, where: dict, values, target, positions: int, max_flags: int
) -> None:
    """Run ``call(generator) -> (tree, out)`` under every schedule; record flags and errors into ``rep``."""
    seen: set = set()
    for sched in schedules(values, positions):
        rep.runs += 1
        here = {
            **where,
            "coin": sched.value.hex(),
            "coin_decimal": repr(sched.value),
            "schedule": sched.describe(),
        }
        out = None  # a format adapter may reject the result inside the call
        try:
            tree, out, vocab = call(BoundaryGenerator(sched, rep.seed))
            v, y = _as_pair(out, tree, vocab)
        except VerifierCallError as err:  # e.g. a fall-off returning token V: a boundary finding
            rep.flagged.append(
                {**here, "draws": sched.read(), "emitted": repr(out), "why": str(err)}
            )
        except Exception as err:  # the user's code failed under this coin
            rep.errors.append(
                {
                    **here,
                    "draws": sched.read(),
                    "error": f"{type(err).__name__}: {err}",
                    "traceback": "".join(traceback.format_exception(err))[-3000:],
                }
            )
        else:
            rep.calls_ok += 1
            seq = tree.path(v) + (y,)
            t = _seq_zero(target, seq)
            draws = sched.read()
            if t is not None and (where["case"], str(where["tree"]), tuple(draws)) not in seen:
                # another schedule, the same draws
                seen.add((where["case"], str(where["tree"]), tuple(draws)))
                rep.flagged.append(
                    {
                        **here,
                        "draws": draws,
                        "emitted": [v, y],
                        "block": list(seq),
                        "why": _why(seq, t, v),
                    }
                )
        if len(rep.flagged) >= max_flags:
            return


def _drafts(topology, draft) -> list[tuple[int, ...]]:
    """Every token assignment of ``topology`` with positive draft probability, siblings distinct."""
    out: list = []

    def rec(u, toks):
        if u == len(topology):
            out.append(tuple(toks))
            return
        par = topology[u]
        path, w = [], par
        while w > 0:
            path.append(toks[w])
            w = topology[w]
        row = np.asarray(draft(tuple(reversed(path))))
        used = {toks[s] for s in range(1, u) if topology[s] == par}
        for x in np.flatnonzero(row > 0):
            if int(x) not in used:
                rec(u + 1, toks + [int(x)])

    rec(1, [0])
    return out


def _marginal_values(tree: DraftTree, p: np.ndarray, q: np.ndarray) -> list[float]:
    pn, qn = p / p.sum(1, keepdims=True), q / q.sum(1, keepdims=True)
    resid = np.maximum(pn - qn, 0.0)
    ratios = [
        pn[tree.parent[u], tree.token[u]] / qn[tree.parent[u], tree.token[u]]
        for u in range(1, tree.num_nodes)
        if qn[tree.parent[u], tree.token[u]] > 0
    ]
    # the drafts are the kit's draws: q's own cdf is not
    return boundary_values(np.vstack([p, resid]), ratios)


def run_boundary(
    fn: Callable,
    *,
    name: str = "verifier",
    mode: str = "conditional",
    seed: int = 0,
    budget: int = 8,
    vocab: int = 4,
    chains_only: bool = False,
    positions: int = SINGLE_DRAWS,
    max_flags: int = 20,
) -> BoundaryReport:
    """Run ``fn`` on every case (and, in marginal mode, every realised draft) under every boundary schedule;
    flag every emitted block of target probability 0 (module docstring)."""
    if mode not in ("conditional", "marginal"):
        raise ValueError(f"mode must be 'conditional' or 'marginal', got {mode!r}")
    if positions < 1:
        raise ValueError(f"positions must be >= 1, got {positions}")
    check_signature(fn, mode)
    rep = BoundaryReport(name, BOUNDARY_OK, 0, seed, mode, positions=positions)

    def probe(call: Callable, case, tree: DraftTree, values) -> bool:
        """Probe one call at every boundary schedule of ``values``; True once enough are flagged."""
        rep.values += len(values)
        _probe(
            rep,
            call,
            {"case": case.name, "tree": _tree_json(tree)},
            values,
            case.target,
            positions,
            max_flags,
        )
        return len(rep.flagged) >= max_flags

    if mode == "conditional":
        for case in conditional_cases(seed, budget=budget, vocab=vocab):
            probs = case.probs
            probs.setflags(write=False)
            if probe(
                lambda g, case=case, probs=probs: (case.tree, fn(case.tree, probs, g), case.vocab),
                case,
                case.tree,
                boundary_values(probs),
            ):
                break
    else:
        for case in boundary_marginal_cases(seed, vocab=vocab, chains_only=chains_only):
            for toks in _drafts(case.topology, case.draft):
                tree = DraftTree(parent=np.array(case.topology), token=np.array(toks))
                p = np.stack([case.target(tree.path(v)) for v in range(tree.num_nodes)])
                q = np.stack([case.draft(tree.path(v)) for v in range(tree.num_nodes)])
                p.setflags(write=False)
                q.setflags(write=False)
                rep.drafts += 1
                if probe(
                    lambda g, tree=tree, p=p, q=q: (tree, fn(tree, p, q, g), p.shape[1]),
                    case,
                    tree,
                    _marginal_values(tree, p, q),
                ):
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
    drafts = f" on {rep.drafts} realised drafts" if rep.mode == "marginal" else ""
    out = [
        f"exitlaw check --boundary {rep.verifier}   mode {rep.mode}   seed {rep.seed}",
        f"{rep.runs} runs{drafts}: {rep.values} coin values (0, largest double and float32 below 1, exact "
        f"cumulative boundaries{', acceptance ratios' if rep.mode == 'marginal' else ''}), each at every draw "
        f"and at draw i < {rep.positions} after every pattern of earlier draws at 0 / largest double below 1 "
        f"(0 after)",
        "rule: no emitted block may have target probability 0 (exactness; a non-saturating bonus is not flagged)",
        f"reach: {rep.reach}",
    ]
    if rep.errors and rep.calls_ok == 0 and not rep.flagged:
        out.append(
            f"every call of the verifier failed ({len(rep.errors)} runs): nothing was checked"
        )
    for f in rep.flagged[:10]:
        draws = ", ".join(repr(float.fromhex(x)) for x in f["draws"])
        out.append(
            f"  ZERO-PROBABILITY BLOCK  case {f['case']} tree {f['tree']}: draws [{draws}] "
            f"({f['schedule']}) -> emitted {f['emitted']}: {f['why']}"
        )
    for e in rep.errors[:5]:
        out.append(
            f"  VERIFIER FAILED  case {e['case']}: coin {e['coin_decimal']} ({e['schedule']}): {e['error']}"
        )
    out.append(
        f"verdict: {rep.verdict.upper() if rep.exit_code else rep.verdict}   (exit status {rep.exit_code})"
    )
    return "\n".join(out)


__all__ = [
    "BoundaryGenerator",
    "BoundaryReport",
    "boundary_values",
    "run_boundary",
    "format_boundary",
    "schedules",
    "BOUNDARY_OK",
    "BOUNDARY_FLAGGED",
    "BOUNDARY_FAILED",
    "F64_BELOW_ONE",
    "F32_BELOW_ONE",
]
