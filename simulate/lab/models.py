"""Synthetic target LMs with exact conditionals, and drafters with controllable mismatch.

Target (:class:`NGramTarget`): the next-token law depends on the last
``order - 1`` tokens only. Each such suffix is hashed (``numpy.random.SeedSequence``)
to a random ranking of the vocabulary, and the rank-``r`` token gets logit
``-zipf * log r`` (a Zipf spectrum, ``p ∝ r^(-zipf/T)``), optionally jittered by
Gaussian noise. ``p(. | c) = softmax(logit / T)``; ``T = 0`` is the greedy one-hot
limit. Every row is exact and reproducible from ``(seed, suffix)``.

Drafters (mismatch ``q ∝ exp((log q_base + noise * g) / temperature)``, ``g``
standard Gaussian keyed on the context, ``q_base = (1 - eps) q_ideal + eps / V``;
``q_ideal`` is built from the target's sampling law, its T = 1 law when the
target is greedy, as a real drafter has its own soft probabilities):

* :class:`PositionWiseDrafter` (DFlash-like): one row ``q_d(. | c)`` per depth
  ``d = 1..H`` from the context only, *not* from the drafted path. ``mode="marginal"``
  takes ``q_ideal`` = the exact ``d``-step marginal of an order-2 target
  (``e_c M^d``, ``M`` the transition matrix); ``mode="greedy_path"`` takes the
  target row after the greedy path ``x_1..x_{d-1}`` (works for any order and V).
* :class:`AutoregressiveDrafter` (EAGLE-like): ``q(. | c, path)``, the target's row
  at the same path, mismatched as above.

Numpy only; rows are float64 and are cached per context suffix (LRU bounded
by ``cache_mib`` MiB per model).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Sequence

import numpy as np

from exitlaw.theory import check_temperature, softmax_with_temperature

PAD = -1  # token used to left-pad contexts shorter than the model's window


def _suffix(context: Sequence[int], length: int) -> tuple[int, ...]:
    ctx = tuple(int(t) for t in context[len(context) - length :]) if length else ()
    return (PAD,) * (length - len(ctx)) + ctx


def _keyed_rng(*words: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([w + 1 for w in words])))


class _LRU:
    """Least-recently-used cache of numpy arrays bounded by total bytes (always keeps the newest entry)."""

    def __init__(self, max_bytes: int):
        self.max_bytes, self.bytes, self.data = max_bytes, 0, OrderedDict()

    def get(self, key, make):
        if key in self.data:
            self.data.move_to_end(key)
            return self.data[key]
        val = make()
        self.data[key] = val
        self.bytes += val.nbytes
        while self.bytes > self.max_bytes and len(self.data) > 1:
            _, old = self.data.popitem(last=False)
            self.bytes -= old.nbytes
        return val


def zipf_entropy(vocab: int, exponent: float) -> float:
    """Entropy (nats) of ``p_r ∝ r^(-exponent)``, ``r = 1..vocab``."""
    logp = -exponent * np.log(np.arange(1, vocab + 1))
    logp -= np.logaddexp.reduce(logp)
    return float(-(np.exp(logp) * logp).sum())


def exponent_for_entropy(vocab: int, entropy: float, *, tol: float = 1e-9) -> float:
    """Zipf exponent whose spectrum has the given entropy (bisection; entropy in (0, log V))."""
    if not 0 < entropy < np.log(vocab):
        raise ValueError(f"entropy must lie in (0, log V = {np.log(vocab):.4f}), got {entropy}")
    lo, hi = 0.0, 1.0
    while zipf_entropy(vocab, hi) > entropy:
        hi *= 2
        if hi > 1e4:
            raise ValueError(
                f"entropy {entropy} is too small to reach with a Zipf spectrum over {vocab} tokens"
            )
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if zipf_entropy(vocab, mid) > entropy else (lo, mid)
    return 0.5 * (lo + hi)


class NGramTarget:
    """Hashed n-gram target with a Zipf spectrum: exact ``p(. | c)`` for any context."""

    def __init__(
        self,
        vocab: int,
        *,
        order: int = 2,
        zipf: float = 1.1,
        temperature: float = 1.0,
        jitter: float = 0.0,
        seed: int = 0,
        cache_mib: float = 128.0,
    ):
        if vocab < 2:
            raise ValueError(f"vocab must be >= 2, got {vocab}")
        if order < 1:
            raise ValueError(f"order must be >= 1 (order 1 ignores the context), got {order}")
        if not zipf > 0:
            raise ValueError(f"zipf exponent must be > 0, got {zipf}")
        if jitter < 0:
            raise ValueError(f"jitter must be >= 0, got {jitter}")
        self.vocab, self.order, self.zipf, self.jitter, self.seed = (
            vocab,
            order,
            float(zipf),
            float(jitter),
            seed,
        )
        self.temperature = check_temperature(temperature, allow_zero=True)
        self._spectrum = -self.zipf * np.log(np.arange(1, vocab + 1, dtype=np.float64))
        self._cache = _LRU(int(cache_mib * 2**20))

    @property
    def context_length(self) -> int:
        """How many trailing context tokens a row depends on."""
        return self.order - 1

    def with_temperature(self, temperature: float) -> "NGramTarget":
        return NGramTarget(
            self.vocab,
            order=self.order,
            zipf=self.zipf,
            temperature=temperature,
            jitter=self.jitter,
            seed=self.seed,
        )

    def logits(self, context: Sequence[int]) -> np.ndarray:
        """``[V]`` logits before temperature for the suffix of ``context``."""
        key = _suffix(context, self.context_length)
        rng = _keyed_rng(self.seed, 0x7A4, *key)
        out = np.empty(self.vocab)
        out[rng.permutation(self.vocab)] = self._spectrum
        if self.jitter:
            out += self.jitter * rng.standard_normal(self.vocab)
        return out

    def probs(self, context: Sequence[int]) -> np.ndarray:
        """``p(. | context)`` as a ``[V]`` float64 row (read-only, cached)."""
        key = _suffix(context, self.context_length)

        def make():
            row = softmax_with_temperature(self.logits(key), self.temperature)
            row.setflags(write=False)
            return row

        return self._cache.get(key, make)

    __call__ = probs

    def rows(self, contexts: Sequence[Sequence[int]]) -> np.ndarray:
        """``[N, V]`` rows, one per context."""
        return np.stack([self.probs(c) for c in contexts])

    def prefix_target(self, context: Sequence[int]):
        """``prefix -> p(. | context + prefix)``: the callable ``oracle_tree`` takes."""
        ctx = tuple(context)
        return lambda prefix: self.probs(ctx + tuple(prefix))

    def transition_matrix(self) -> np.ndarray:
        """``M[a, b] = p(b | a)`` for an order-2 target (``[V, V]``; V at most 4096)."""
        if self.order != 2:
            raise ValueError(
                f"a transition matrix exists for order-2 targets only, this one has order {self.order}"
            )
        if self.vocab > 4096:
            raise ValueError(
                f"transition matrix of V={self.vocab} would need {self.vocab**2 * 8 / 2**30:.1f} GiB"
            )
        return np.stack([self.probs((a,)) for a in range(self.vocab)])

    def sample(self, context: Sequence[int], length: int, rng: np.random.Generator) -> list[int]:
        """``length`` tokens drawn autoregressively from the target."""
        ctx, out = list(context), []
        for _ in range(length):
            tok = int(rng.choice(self.vocab, p=self.probs(ctx)))
            out.append(tok)
            ctx.append(tok)
        return out


def _mismatch(
    q: np.ndarray, *, noise: float, temperature: float, eps: float, rng_key: tuple[int, ...]
) -> np.ndarray:
    """``q ∝ exp((log((1-eps) q + eps/V) + noise * g) / temperature)``, ``g ~ N(0, 1)`` keyed on ``rng_key``."""
    v = q.shape[-1]
    logq = np.log((1.0 - eps) * q + eps / v)
    if noise:
        logq = logq + noise * _keyed_rng(*rng_key).standard_normal(q.shape)
    return softmax_with_temperature(logq, temperature)


class _Mismatched:
    def __init__(
        self,
        target: NGramTarget,
        *,
        noise: float = 0.5,
        temperature: float = 1.0,
        eps: float = 1e-3,
        seed: int = 1,
        cache_mib: float = 128.0,
    ):
        if noise < 0:
            raise ValueError(f"drafter noise must be >= 0, got {noise}")
        check_temperature(temperature, allow_zero=False)
        if not 0 <= eps < 1:
            raise ValueError(f"eps must lie in [0, 1), got {eps}")
        # a drafter models the target's sampling law; for a greedy (T=0) target that is its T=1 law
        self.base = target if target.temperature > 0 else target.with_temperature(1.0)
        self.target, self.noise, self.temperature, self.eps, self.seed = (
            target,
            noise,
            temperature,
            eps,
            seed,
        )
        self.vocab = target.vocab
        self._cache = _LRU(int(cache_mib * 2**20))

    @property
    def context_length(self) -> int:
        return self.target.context_length


class PositionWiseDrafter(_Mismatched):
    """DFlash-like: ``q_d(. | c)`` for ``d = 1..H`` from the context alone (see module docstring)."""

    def __init__(
        self,
        target: NGramTarget,
        *,
        mode: str = "greedy_path",
        noise: float = 0.5,
        temperature: float = 1.0,
        eps: float = 1e-3,
        seed: int = 1,
    ):
        if mode not in ("greedy_path", "marginal"):
            raise ValueError(f"mode must be 'greedy_path' or 'marginal', got {mode!r}")
        super().__init__(target, noise=noise, temperature=temperature, eps=eps, seed=seed)
        self.mode = mode
        self._matrix = self.base.transition_matrix() if mode == "marginal" else None

    def ideal(self, context: Sequence[int], horizon: int) -> np.ndarray:
        """Unperturbed rows ``[H, V]`` (exact marginals or greedy-path rows)."""
        rows = np.empty((horizon, self.vocab))
        if self.mode == "marginal":
            row = self.base.probs(context)
            for d in range(horizon):
                rows[d] = row
                row = row @ self._matrix
            return rows
        path = list(context)
        for d in range(horizon):
            rows[d] = self.base.probs(path)
            path.append(int(np.argmax(rows[d])))
        return rows

    def marginals(self, context: Sequence[int], horizon: int) -> np.ndarray:
        """``q_d(. | c)`` for ``d = 1..horizon`` as ``[H, V]`` probabilities."""
        if horizon < 1:
            raise ValueError(f"horizon must be >= 1, got {horizon}")
        key = _suffix(context, self.context_length)

        def make():
            q = _mismatch(
                self.ideal(key, horizon),
                noise=self.noise,
                temperature=self.temperature,
                eps=self.eps,
                rng_key=(self.seed, 0xD1F, horizon, *key),
            )
            q.setflags(write=False)
            return q

        return self._cache.get((horizon, key), make)


class AutoregressiveDrafter(_Mismatched):
    """EAGLE-like: ``q(. | c, path)``, the target's row at the same path, mismatched."""

    def probs(self, context: Sequence[int]) -> np.ndarray:
        key = _suffix(context, self.context_length)

        def make():
            q = _mismatch(
                self.base.probs(key),
                noise=self.noise,
                temperature=self.temperature,
                eps=self.eps,
                rng_key=(self.seed, 0xEA6, *key),
            )
            q.setflags(write=False)
            return q

        return self._cache.get(key, make)

    __call__ = probs


def kl_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Row-wise ``KL(p || q)`` in nats (``0 log 0 = 0``); a measure of drafter mismatch."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    safe = np.where(p > 0, p, 1.0)
    return np.sum(
        np.where(p > 0, p * (np.log(safe) - np.log(np.where(p > 0, q, 1.0))), 0.0), axis=-1
    )


def mean_depth1_kl(target: NGramTarget, drafter, contexts: Sequence[Sequence[int]]) -> float:
    """Mean ``KL(p(.|c) || q_1(.|c))`` over contexts: the drafter's mismatch at depth 1."""
    kls = []
    for c in contexts:
        q = (
            drafter.marginals(c, 1)[0]
            if isinstance(drafter, PositionWiseDrafter)
            else drafter.probs(c)
        )
        kls.append(float(kl_divergence(target.probs(c), q)))
    return float(np.mean(kls))
