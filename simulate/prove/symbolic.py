"""Symbolic probabilities: rational functions of per-row symbols, run through the same verifier code.

A target row of vocabulary ``V`` is parametrised by ``V - 1`` positive symbols
``s_{v,0..V-2}`` and the constant ``s_{v,V-1} = 1``:

    p_v(y) = s_{v,y} / (1 + sum_{z < V-1} s_{v,z}),      s > 0,

so every row sums to one identically and every point of the open simplex has
exactly one such representation. :class:`Sym` wraps an element of a sympy
rational-function field (``sympy.polys.fields``: canonical, gcd-cancelled
numerator / denominator, so ``==`` is equality of rational functions) and gives
it the arithmetic and the comparisons a verifier uses:

* ``+ - * /`` and integer powers with ``int``, ``Fraction`` and other ``Sym``;
* comparisons decide the **sign over the whole domain** ``s > 0``: identically
  zero, or numerator and denominator each with coefficients of one sign (a
  positivity certificate). A comparison that these cannot decide, ``float()``,
  ``int()`` or ``floor()`` of a non-constant value raise :class:`SymbolicError`:
  the verifier's branch would depend on *where* in the simplex the rows are, so
  it cannot be enumerated symbolically (the prover then searches rational points).

Because the randomness replay of :func:`~exitlaw.simulate.randomness.enumerate_law`
only compares weights with ``0`` and ``1``, running it with ``one = Sym`` one
enumerates the implementation's branches with symbolic branch probabilities and
certifies on the way that every Bernoulli probability lies in ``[0, 1]`` and every
categorical weight is ``>= 0`` on the whole domain.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from sympy import QQ
from sympy.polys.fields import field

# Verifiers are re-run once per branch (replay), so the same operations recur on the same operands:
# results are memoised (rational functions are canonical, hence usable as keys).
_MEMO: dict = {}
_INTERN: dict = {}
_MEMO_LIMIT = 500_000
_NEXT_ID = 0


# An optional sign oracle (:func:`assuming`): decides comparisons the coefficients cannot, by case split.
_ORACLE = None


class SymbolicError(TypeError):
    """A symbolic probability was used in a way whose outcome depends on the point of the simplex."""


@lru_cache(maxsize=None)
def _field(num_nodes: int, vocab: int):
    """The field ``QQ(s_{v,y} : v < num_nodes, y < vocab - 1)`` and its generators (``[N][V-1]``)."""
    names = [f"s{v}_{y}" for v in range(num_nodes) for y in range(vocab - 1)]
    if not names:  # vocabulary 1: rows are the constant [1]
        names = ["s_unused"]
    K, *gens = field(",".join(names), QQ)
    per_row = (
        [gens[v * (vocab - 1) : (v + 1) * (vocab - 1)] for v in range(num_nodes)]
        if vocab > 1
        else [[] for _ in range(num_nodes)]
    )
    return K, per_row


def _coeff_sign(poly) -> int:
    """+1 / -1 if every coefficient of ``poly`` has that sign, else 0 (undecided)."""
    signs = {1 if c > 0 else -1 for c in poly.coeffs()}
    return signs.pop() if len(signs) == 1 else 0


class Sym:
    """A rational function of the row symbols (see the module docstring). Immutable, hashable.

    Values are interned (one object per rational function while the tables last) and carry an
    integer ``id``, so the memo of operations and ``==`` are dictionary look-ups on integers.
    """

    __slots__ = ("f", "K", "id", "_sign")

    def __init__(self, f, K):
        global _NEXT_ID
        self.f, self.K, self._sign = f, K, False
        self.id = _NEXT_ID
        _NEXT_ID += 1

    @staticmethod
    def of(f, K) -> "Sym":
        """The interned :class:`Sym` of the field element ``f``."""
        out = _INTERN.get(f)
        if out is None:
            if len(_INTERN) >= _MEMO_LIMIT:
                _INTERN.clear()
                _MEMO.clear()
            out = _INTERN[f] = Sym(f, K)
        return out

    # ----- coercion ----------------------------------------------------------------------------
    def _lift(self, other) -> "Sym":
        if isinstance(other, Sym):
            return other
        if isinstance(other, bool):
            other = int(other)
        if isinstance(other, (int, Fraction)):
            return Sym.of(self.K(QQ(other.numerator, other.denominator)), self.K)
        raise SymbolicError(
            f"cannot combine a symbolic probability with {type(other).__name__} {other!r} "
            "(a float would make the law inexact)"
        )

    def _op(self, name: str, a: "Sym", b: "Sym") -> "Sym":
        key = (name, a.id, b.id)
        out = _MEMO.get(key)
        if out is None:
            if name == "+":
                f = a.f + b.f
            elif name == "-":
                f = a.f - b.f
            elif name == "*":
                f = a.f * b.f
            else:
                if not b.f:
                    raise ZeroDivisionError(
                        "division by a symbolic probability that is identically zero"
                    )
                f = a.f / b.f
            out = _MEMO[key] = Sym.of(f, self.K)
        return out

    def __add__(self, o):
        return self._op("+", self, self._lift(o))

    __radd__ = __add__

    def __sub__(self, o):
        return self._op("-", self, self._lift(o))

    def __rsub__(self, o):
        return self._op("-", self._lift(o), self)

    def __mul__(self, o):
        return self._op("*", self, self._lift(o))

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._op("/", self, self._lift(o))

    def __rtruediv__(self, o):
        return self._op("/", self._lift(o), self)

    def __neg__(self):
        return Sym.of(-self.f, self.K)

    def __pos__(self):
        return self

    def __pow__(self, k):
        if isinstance(k, int) and not isinstance(k, bool):
            return Sym.of(self.f**k, self.K)
        if isinstance(k, Fraction) and k.denominator == 1:
            return Sym.of(self.f ** int(k), self.K)
        raise SymbolicError(f"a symbolic probability raised to the non-integer power {k!r}")

    # ----- sign and comparisons ------------------------------------------------------------------
    def constant(self) -> Fraction | None:
        """The value if the function is constant, else ``None``."""
        num, den = self.f.numer, self.f.denom
        if num.is_ground and den.is_ground:
            q = QQ(num.LC if num else 0) / QQ(den.LC)
            return Fraction(int(q.numerator), int(q.denominator))
        return None

    def sign(self) -> int | None:
        """Sign on the whole domain ``s > 0``: 0 (identically zero), +1, -1, or ``None`` if not certified."""
        if self._sign is False:
            if not self.f:
                self._sign = 0
            else:
                n, d = _coeff_sign(self.f.numer), _coeff_sign(self.f.denom)
                self._sign = n * d if n and d else None
        return self._sign

    def _cmp_sign(self, other, op: str) -> int:
        diff = self if isinstance(other, int) and other == 0 else self - other
        s = diff.sign()
        if s is None and _ORACLE is not None:
            s = _ORACLE(diff)
        if s is None:
            raise SymbolicError(
                f"the sign of ({self}) {op} ({other}) depends on the rows: the verifier "
                "branches on a comparison of probabilities"
            )
        return s

    def __lt__(self, o):
        return self._cmp_sign(o, "<") < 0

    def __le__(self, o):
        return self._cmp_sign(o, "<=") <= 0

    def __gt__(self, o):
        return self._cmp_sign(o, ">") > 0

    def __ge__(self, o):
        return self._cmp_sign(o, ">=") >= 0

    def __eq__(self, o):
        try:
            o = self._lift(o)
        except SymbolicError:
            return NotImplemented
        return self.id == o.id or self.f == o.f

    def __hash__(self):
        return hash(self.f)

    def __bool__(self):
        return bool(self.f)

    def _const_or_raise(self, what: str) -> Fraction:
        c = self.constant()
        if c is None:
            raise SymbolicError(
                f"{what} of a symbolic probability ({self}): the verifier leaves exact arithmetic"
            )
        return c

    def __float__(self):
        return float(self._const_or_raise("float()"))

    def __int__(self):
        return int(self._const_or_raise("int()"))

    def __index__(self):
        c = self._const_or_raise("use as an index")
        if c.denominator != 1:
            raise SymbolicError(f"use as an index of the non-integer {c}")
        return int(c)

    def __floor__(self):
        return self._const_or_raise("floor()").__floor__()

    def __ceil__(self):
        return self._const_or_raise("ceil()").__ceil__()

    def __round__(self, n=None):
        return round(self._const_or_raise("round()"), n)

    def __abs__(self):
        s = self.sign()
        if s is None:
            raise SymbolicError(f"abs() of a symbolic probability of unknown sign ({self})")
        return self if s >= 0 else -self

    def __array__(self, *args, **kwargs):
        raise SymbolicError(
            "a symbolic probability was converted to a numpy array (numpy float arithmetic "
            "is not exact); write the verifier over plain lists or Python numbers"
        )

    def __repr__(self):
        return f"Sym({self.f.as_expr()})"

    __str__ = __repr__

    # ----- evaluation ------------------------------------------------------------------------------
    def at(self, point: dict) -> Fraction:
        """Exact value at ``point`` (``{symbol index: Fraction}`` over the field's generators, in order)."""
        vals = [point[i] for i in range(len(self.K.gens))]

        def ev(poly) -> Fraction:
            total = Fraction(0)
            for monom, c in poly.terms():
                term = Fraction(int(c.numerator), int(c.denominator))
                for v, e in zip(vals, monom):
                    if e:
                        term *= v**e
                total += term
            return total

        return ev(self.f.numer) / ev(self.f.denom)


class assuming:
    """Context manager: comparisons whose sign the coefficients cannot certify are answered by
    ``oracle(diff) -> +1 / -1`` (a case split over sign regions, :mod:`.prove_sampled`)."""

    def __init__(self, oracle):
        self.oracle = oracle

    def __enter__(self):
        global _ORACLE
        self.saved, _ORACLE = _ORACLE, self.oracle
        return self

    def __exit__(self, *exc):
        global _ORACLE
        _ORACLE = self.saved
        return False


def symbolic_one(num_nodes: int, vocab: int) -> Sym:
    K, _ = _field(num_nodes, vocab)
    return Sym.of(K.one, K)


@lru_cache(maxsize=None)
def _rows(num_nodes: int, vocab: int) -> tuple:
    K, gens = _field(num_nodes, vocab)
    rows = []
    for v in range(num_nodes):
        den = K.one + sum(gens[v], K.zero)
        rows.append(tuple([Sym.of(g / den, K) for g in gens[v]] + [Sym.of(K.one / den, K)]))
    return tuple(rows)


def symbolic_rows(num_nodes: int, vocab: int) -> list[list[Sym]]:
    """``rows[v][y] = s_{v,y} / (1 + sum_z s_{v,z})`` as :class:`Sym` (shape ``[N][V]``; rows sum to one)."""
    if num_nodes < 1 or vocab < 1:
        raise ValueError(
            f"need at least one node and one token, got {num_nodes} nodes, vocabulary {vocab}"
        )
    return [list(r) for r in _rows(num_nodes, vocab)]


def rows_at(num_nodes: int, vocab: int, point: dict) -> list[list[Fraction]]:
    """The rational rows of :func:`symbolic_rows` at ``point`` (``{symbol index: positive Fraction}``)."""
    rows = []
    for v in range(num_nodes):
        s = [point[v * (vocab - 1) + y] for y in range(vocab - 1)] + [Fraction(1)]
        tot = sum(s, Fraction(0))
        rows.append([x / tot for x in s])
    return rows


__all__ = ["Sym", "SymbolicError", "assuming", "symbolic_rows", "symbolic_one", "rows_at"]
