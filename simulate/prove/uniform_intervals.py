"""An exact "interval uniform" stand-in for ``numpy.random.Generator``: the law of raw-uniform verifiers.

A verifier ``f(tree, probs, rng)`` that calls ``rng.random()`` directly cannot be run on the
two-call randomness interface. :class:`IntervalGenerator` (a ``Generator`` subclass, so
``GeneratorRandomness(rng)`` and ``rng.spawn`` work too) hands out :class:`LazyUniform` objects
instead of floats. A lazy uniform is ``a * U + b`` for a fresh real ``U ~ Uniform[0, 1)`` whose
*current interval* ``[lo, hi)`` starts at ``[0, 1)``. Whatever the verifier does that depends on
the value splits the current branch of :func:`~.randomness.enumerate_law`'s replay, with the exact
conditional probabilities (interval lengths over the current length):

* comparisons ``<, <=, >, >=`` with a number (``float``, numpy scalar, ``Fraction``): two branches;
* ``np.floor`` / ``np.ceil`` / ``np.rint`` / ``np.round`` (and ``math.floor``): one branch per integer
  cell the current interval meets (a quantised coin ``floor(u * 2^b) / 2^b`` is enumerated exactly);
* ``np.searchsorted(cdf, u)``: one branch per interval between consecutive cumulative sums;
* ``+ - * /`` with numbers: a new affine map of the same ``U`` (no branch).

``rng.random(n)`` gives a :class:`LazyUniformArray` with the same element-wise operations. Any
other use (``float(u)``, ``np.log(u)``, a numpy array of lazy uniforms, another ``Generator``
method) raises :class:`CannotFollow`; the caller reports the verifier *unproved* with that reason,
never a verdict. The law so obtained is the exact law of the code with ``U`` a **real** uniform and
the verifier's own float arithmetic on the rows as it is (float thresholds are converted exactly by
``Fraction(float)``); measure-zero events such as a coin of exactly ``0`` are ``exitlaw check
--boundary``'s job, and so is the rounding of ``u * c`` itself.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np

from exitlaw.simulate.randomness import enumerate_law


class CannotFollow(TypeError):
    """The verifier used a lazy uniform in a way the interval stand-in cannot enumerate exactly."""


def _exact(x, what: str) -> Fraction:
    if isinstance(x, LazyUniform | LazyUniformArray):
        raise CannotFollow(
            f"{what} of two uniforms: only affine maps of one uniform with numbers are followed"
        )
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (bool, np.bool_)):
        return Fraction(int(x))
    if isinstance(x, (numbers.Integral, np.integer)):
        return Fraction(int(x))
    if isinstance(x, (float, np.floating)):
        if not math.isfinite(float(x)):
            raise CannotFollow(f"{what} with the non-finite number {x!r}")
        return Fraction(float(x))
    if isinstance(x, np.ndarray) and x.ndim == 0:
        return _exact(x.item(), what)
    raise CannotFollow(f"{what} with a {type(x).__name__} ({x!r})")


class _Base:
    """One real uniform ``U`` of one replay run: its current interval ``[lo, hi)``."""

    __slots__ = ("lo", "hi", "replay")

    def __init__(self, replay):
        self.lo, self.hi, self.replay = Fraction(0), Fraction(1), replay

    def options(self, cuts: list[tuple[Fraction, Fraction, object]]) -> list:
        """The sub-intervals ``[l, h)`` (each with a label) that meet the current interval, with their
        conditional probabilities."""
        width = self.hi - self.lo
        options = []
        for l, h, label in cuts:
            l, h = max(l, self.lo), min(h, self.hi)
            if h > l:
                options.append(((l, h, label), (h - l) / width))
        if not options:
            raise CannotFollow("no branch of a uniform has positive length (internal error)")
        return options

    def take(self, options: list):
        """Branch of the replay over ``options``; narrows the interval to the branch taken."""
        l, h, label = self.replay._branch(options)
        self.lo, self.hi = l, h
        return label

    def split(self, cuts: list[tuple[Fraction, Fraction, object]]):
        return self.take(self.options(cuts))


# The replay re-runs the verifier once per branch, so the same cell enumerations recur: memoised.
_MEMO: dict = {}
_MEMO_LIMIT = 100_000


def _memo(key, make):
    out = _MEMO.get(key)
    if out is None:
        if len(_MEMO) >= _MEMO_LIMIT:
            _MEMO.clear()
        out = _MEMO[key] = make()
    return out


_INF = None  # an open end of a cut


class LazyUniform:
    """``a * U + b`` for the real uniform ``U`` of :class:`_Base` (see the module docstring)."""

    __slots__ = ("base", "a", "b")

    def __init__(self, base: _Base, a: Fraction = Fraction(1), b: Fraction = Fraction(0)):
        self.base, self.a, self.b = base, a, b

    # ----- affine maps (no branch) ---------------------------------------------------------------
    def _affine(self, a, b):
        if a == 0:
            return b
        return LazyUniform(self.base, a, b)

    def __add__(self, o):
        return self._affine(self.a, self.b + _exact(o, "addition"))

    __radd__ = __add__

    def __sub__(self, o):
        return self._affine(self.a, self.b - _exact(o, "subtraction"))

    def __rsub__(self, o):
        return self._affine(-self.a, _exact(o, "subtraction") - self.b)

    def __mul__(self, o):
        c = _exact(o, "multiplication")
        return self._affine(self.a * c, self.b * c)

    __rmul__ = __mul__

    def __truediv__(self, o):
        c = _exact(o, "division")
        if c == 0:
            raise ZeroDivisionError("a uniform divided by zero")
        return self._affine(self.a / c, self.b / c)

    def __rtruediv__(self, o):
        raise CannotFollow("a number divided by a uniform (not an affine map of it)")

    def __neg__(self):
        return self._affine(-self.a, -self.b)

    def __pos__(self):
        return self

    # ----- branching ---------------------------------------------------------------------------
    def _on_base(self, t: Fraction) -> Fraction:
        return (t - self.b) / self.a

    def below(self, t) -> bool:
        """``a U + b < t`` (equality has probability zero for a real uniform)."""
        s = self._on_base(_exact(t, "comparison"))
        if self.a > 0:
            return self.base.split([(Fraction(-1), s, True), (s, Fraction(2), False)])
        return self.base.split([(Fraction(-1), s, False), (s, Fraction(2), True)])

    def __lt__(self, o):
        return self.below(o)

    __le__ = __lt__

    def __gt__(self, o):
        return not self.below(o)

    __ge__ = __gt__

    def __eq__(self, o):
        raise CannotFollow("equality test on a uniform")

    __hash__ = None

    def cell(self, kind: str):
        """``floor`` / ``ceil`` / ``rint`` of ``a U + b``: one branch per integer cell."""
        base = self.base
        key = (kind, self.a, self.b, base.lo, base.hi)
        return base.take(_memo(key, lambda: base.options(self._cell_cuts(kind))))

    def _cell_cuts(self, kind: str) -> list:
        lo = self.a * self.base.lo + self.b
        hi = self.a * self.base.hi + self.b
        lo, hi = min(lo, hi), max(lo, hi)
        cuts = []
        for k in range(math.floor(lo) - 1, math.ceil(hi) + 2):
            l, h = {
                "floor": (k, k + 1),
                "ceil": (k - 1, k),
                "rint": (k - Fraction(1, 2), k + Fraction(1, 2)),
            }[kind]
            l, h = Fraction(l), Fraction(h)
            bl, bh = sorted((self._on_base(l), self._on_base(h)))
            cuts.append((bl, bh, k))
        return cuts

    def __floor__(self):
        return self.cell("floor")

    def __ceil__(self):
        return self.cell("ceil")

    def __round__(self, n=None):
        if n:
            raise CannotFollow(f"round(uniform, {n})")
        return self.cell("rint")

    def index_in(self, cdf) -> int:
        """``np.searchsorted(cdf, self)`` (either side: ties have probability zero)."""
        edges = tuple(_exact(c, "searchsorted") for c in np.asarray(cdf).reshape(-1).tolist())
        base = self.base
        key = ("searchsorted", self.a, self.b, base.lo, base.hi, edges)
        return base.take(_memo(key, lambda: base.options(self._index_cuts(edges))))

    def _index_cuts(self, edges) -> list:
        if any(b < a for a, b in zip(edges, edges[1:])):
            raise CannotFollow("np.searchsorted on an unsorted array")
        ends = [None, *edges, None]
        cuts = []
        for i in range(len(edges) + 1):
            l, h = ends[i], ends[i + 1]
            if l is not None and h is not None and h <= l:
                continue
            lb = Fraction(-1) if l is None else self._on_base(l)
            hb = Fraction(2) if h is None else self._on_base(h)
            cuts.append((min(lb, hb), max(lb, hb), i))
        return cuts

    # ----- what cannot be followed -------------------------------------------------------------
    def _refuse(self, what):
        raise CannotFollow(
            f"{what} of a uniform: the stand-in follows only comparisons, floor/ceil/round, "
            "np.searchsorted and affine maps"
        )

    def __float__(self):
        self._refuse("float()")

    def __int__(self):
        self._refuse("int()")

    def __index__(self):
        self._refuse("use as an index")

    def __bool__(self):
        self._refuse("truth value")

    def __array__(self, *args, **kwargs):
        self._refuse("conversion to a numpy array")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _array_function(func, args, kwargs)

    def __repr__(self):
        return f"LazyUniform({self.a} * U + {self.b}, U in [{self.base.lo}, {self.base.hi}))"


class LazyUniformArray:
    """A 1-d array of independent lazy uniforms (``rng.random(n)``), with element-wise operations."""

    __slots__ = ("items",)

    def __init__(self, items: list):
        self.items = items

    @property
    def size(self):
        return len(self.items)

    @property
    def shape(self):
        return (len(self.items),)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        if isinstance(i, (int, np.integer)):
            return self.items[i]
        raise CannotFollow(f"indexing an array of uniforms with {i!r}")

    def __iter__(self):
        return iter(self.items)

    def _map(self, f):
        out = [f(x) for x in self.items]
        if any(isinstance(x, LazyUniform) for x in out):
            return LazyUniformArray(out)
        return np.array([float(x) for x in out])  # every element is now a concrete number

    def _zip(self, o, f):
        if isinstance(o, np.ndarray) and o.ndim == 1 and o.size == len(self.items):
            return self._map_pairs(o.tolist(), f)
        if isinstance(o, (list, tuple)) and len(o) == len(self.items):
            return self._map_pairs(list(o), f)
        return self._map(lambda x: f(x, o))

    def _map_pairs(self, others, f):
        out = [f(x, y) for x, y in zip(self.items, others)]
        if any(isinstance(x, LazyUniform) for x in out):
            return LazyUniformArray(out)
        return np.array([float(x) for x in out])

    def __add__(self, o):
        return self._zip(o, lambda x, y: x + y)

    __radd__ = __add__

    def __sub__(self, o):
        return self._zip(o, lambda x, y: x - y)

    def __rsub__(self, o):
        return self._zip(o, lambda x, y: y - x)

    def __mul__(self, o):
        return self._zip(o, lambda x, y: x * y)

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._zip(o, lambda x, y: x / y)

    def __neg__(self):
        return self._map(lambda x: -x)

    def _cells(self, kind):
        return self._map(lambda x: x.cell(kind) if isinstance(x, LazyUniform) else x)

    def round(self, decimals=0, out=None):
        if decimals or out is not None:
            raise CannotFollow("round of uniforms with decimals or out=")
        return self._cells("rint")

    def __float__(self):
        raise CannotFollow("float() of an array of uniforms")

    def __bool__(self):
        raise CannotFollow("truth value of an array of uniforms")

    def __array__(self, *args, **kwargs):
        raise CannotFollow(
            "conversion of lazy uniforms to a numpy array: the stand-in follows only "
            "comparisons, floor/ceil/round, np.searchsorted and affine maps"
        )

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _array_function(func, args, kwargs)

    def __repr__(self):
        return f"LazyUniformArray({self.items!r})"


_CELLS = {np.floor: "floor", np.ceil: "ceil", np.rint: "rint"}
_ARITH = {
    np.add: lambda x, y: x + y,
    np.subtract: lambda x, y: x - y,
    np.multiply: lambda x, y: x * y,
    np.true_divide: lambda x, y: x / y,
}
_COMPARE = {
    np.less: lambda x, y: x < y,
    np.less_equal: lambda x, y: x <= y,
    np.greater: lambda x, y: x > y,
    np.greater_equal: lambda x, y: x >= y,
}


def _lazy(x) -> bool:
    return isinstance(x, LazyUniform | LazyUniformArray)


def _ufunc(ufunc, method, inputs, kwargs):
    if method != "__call__" or kwargs:
        raise CannotFollow(f"np.{ufunc.__name__}.{method} on a uniform")
    if ufunc in _CELLS and len(inputs) == 1:
        x = inputs[0]
        return (
            x._cells(_CELLS[ufunc])
            if isinstance(x, LazyUniformArray)
            else np.float64(x.cell(_CELLS[ufunc]))
        )
    if ufunc is np.negative:
        return -inputs[0]
    if ufunc in _ARITH and len(inputs) == 2:
        x, y = inputs
        return _ARITH[ufunc](x, y) if _lazy(x) else _reflect(ufunc, x, y)
    if ufunc in _COMPARE and len(inputs) == 2:
        x, y = inputs
        if isinstance(x, LazyUniformArray) or isinstance(y, LazyUniformArray):
            raise CannotFollow(f"np.{ufunc.__name__} on an array of uniforms")
        return bool(_COMPARE[ufunc](x, y)) if _lazy(x) else _compare_reflected(ufunc, x, y)
    raise CannotFollow(
        f"np.{ufunc.__name__} of a uniform: the stand-in follows only comparisons, "
        "floor/ceil/rint/round, np.searchsorted and affine maps"
    )


def _compare_reflected(ufunc, x, y):
    """``x OP y`` with ``y`` lazy and ``x`` a number."""
    if ufunc is np.less or ufunc is np.less_equal:
        return bool(y > x)
    return bool(y < x)


def _reflect(ufunc, x, y):
    if ufunc is np.add:
        return y + x
    if ufunc is np.multiply:
        return y * x
    if ufunc is np.subtract:
        return (-y) + x
    raise CannotFollow("a number divided by a uniform (not an affine map of it)")


def _array_function(func, args, kwargs):
    if func is np.searchsorted:
        a, v = args[0], args[1] if len(args) > 1 else kwargs.get("v")
        if kwargs.get("sorter") is not None or _lazy(a):
            raise CannotFollow("np.searchsorted with a sorter or over an array of uniforms")
        if isinstance(v, LazyUniformArray):
            return np.array(
                [
                    x.index_in(a) if isinstance(x, LazyUniform) else int(np.searchsorted(a, x))
                    for x in v.items
                ],
                dtype=np.intp,
            )
        return np.intp(v.index_in(a))
    if (
        func in (np.round, np.around)
        and len(args) == 1
        and not kwargs.get("decimals")
        and kwargs.get("out") is None
    ):
        x = args[0]
        return x._cells("rint") if isinstance(x, LazyUniformArray) else np.float64(x.cell("rint"))
    raise CannotFollow(
        f"np.{func.__name__} of a uniform: the stand-in follows only comparisons, "
        "floor/ceil/round, np.searchsorted and affine maps"
    )


def _refuse_method(name):
    def method(self, *args, **kwargs):
        raise CannotFollow(
            f"Generator.{name}: the interval stand-in follows only random, uniform and spawn"
        )

    method.__name__ = name
    return method


class IntervalGenerator(np.random.Generator):
    """A ``Generator`` whose ``random`` / ``uniform`` return lazy uniforms of one replay run."""

    def __init__(self, replay):
        super().__init__(np.random.PCG64(0))
        self._replay = replay

    def random(self, size=None, dtype=np.float64, out=None):
        if out is not None or np.dtype(dtype) != np.float64:
            raise CannotFollow(
                "Generator.random with out= or a dtype other than float64 (float32 coins are "
                "exitlaw check --boundary's job)"
            )
        if size is None:
            return LazyUniform(_Base(self._replay))
        n = size if isinstance(size, (int, np.integer)) else (size[0] if len(size) == 1 else None)
        if n is None:
            raise CannotFollow(
                f"Generator.random(size={size!r}): only scalars and 1-d sizes are followed"
            )
        return LazyUniformArray([LazyUniform(_Base(self._replay)) for _ in range(int(n))])

    def uniform(self, low=0.0, high=1.0, size=None):
        return self.random(size) * (_exact(high, "uniform") - _exact(low, "uniform")) + _exact(
            low, "uniform"
        )

    def spawn(self, n_children: int):
        return [IntervalGenerator(self._replay) for _ in range(n_children)]


for _name in dir(np.random.Generator):
    if (
        not _name.startswith("_")
        and _name not in ("random", "uniform", "spawn", "bit_generator")
        and callable(getattr(np.random.Generator, _name))
    ):
        setattr(IntervalGenerator, _name, _refuse_method(_name))


class TooManyBranches(CannotFollow):
    """The verifier's law has more branches than the enumeration allows (e.g. several fine quantised coins)."""


def raw_law(fn, tree, probs, *, max_runs: int = 2_000_000) -> dict:
    """Exact law ``{(exit, bonus): Fraction}`` of ``fn(tree, probs, rng)`` under :class:`IntervalGenerator`."""
    try:
        return enumerate_law(
            lambda rep: fn(tree, probs, IntervalGenerator(rep)), one=Fraction(1), max_runs=max_runs
        )
    except ValueError as err:
        if str(err).startswith("enumerate_law: more than"):
            raise TooManyBranches(
                f"more than {max_runs} branches (each quantised coin branches into its cells)"
            ) from err
        raise


__all__ = [
    "IntervalGenerator",
    "LazyUniform",
    "LazyUniformArray",
    "CannotFollow",
    "TooManyBranches",
    "raw_law",
]
