"""Streaming exact laws of a trace file, in bounded memory (numpy only).

A trace may hold millions of rounds of very different sizes. Reading it whole
and padding every round to the largest tree costs ``rounds x N_max^2``; here
rounds are read one line at a time and *bucketed* by node count (a power of
two, >= 8): a bucket holds at most ``chunk_nodes / bucket`` rounds, and a full
bucket is validated and reduced at once, then dropped. Peak memory is a few
chunks plus the largest single round, whatever the number of rounds.

Per chunk (``K`` rounds padded to ``b`` nodes, padding hangs under the root with
edge 0, docs/design.md §1.2):

* depth and ``log P(v) = sum_{u in path(v)} log a(u)`` by pointer doubling,
  ``log2 b`` steps (``b`` a power of two covers every depth ``< b``); zero edges
  are counted apart so no ``-inf`` enters a sum;
* child mass ``m(v) = sum_{par(u)=v} a(u)`` by ``bincount``; ``w = P (1 - m)``;
* ``C_p = sum_{v != root} P(v)``; the exact exit-depth law ``sum_{depth(v)=d} w(v)``.

This is the fast twin of :func:`exitlaw.theory.law.exit_law_from_edges` (the JAX
reference); the suite checks they agree. Validation is vectorised over the chunk
with the rules of :class:`~exitlaw.theory.tree.DraftTree` and
:func:`~exitlaw.theory.distributions.check_edge_probs`; a chunk that fails (or
holds anything unusual: bools, optional arrays, extra fields) is re-read round by
round with :func:`~exitlaw.theory.trace.format.parse_round`, whose error names the line.
Lines are parsed by orjson when it is installed (the ``theory`` extra; ~4x faster
than the json module); any record that leaves the fast path is parsed again by
the json module, so values orjson cannot hold exactly (integers beyond 64 bits)
are judged, and named in errors, as they are written.
"""

from __future__ import annotations

import gc
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from exitlaw.theory.distributions import ROW_SUM_ATOL
from exitlaw.theory.trace.format import (
    Span,
    TraceFormatError,
    TraceRound,
    exact_record,
    iter_records,
    parse_round,
    split_spans,
)

DEFAULT_CHUNK_NODES = 1 << 16  # padded nodes per chunk: ~10 arrays of this many words
# smaller files are read by one process (starting workers costs ~0.3 s)
PARALLEL_MIN_BYTES = 16 << 20
_FAST_KEYS = frozenset(
    {"round", "parent", "token", "edge_prob", "exit_node", "bonus", "draft_logprob"}
)


def bucket_size(num_nodes: int) -> int:
    """Node count rounded up to a power of two, at least 8."""
    return max(8, 1 << (max(num_nodes, 1) - 1).bit_length())


@dataclass(frozen=True)
class ChunkLaw:
    """Laws of ``K`` rounds of one bucket: per-round scalars and the exit-depth law summed over them."""

    index: np.ndarray  # [K] round index in the file
    budget: np.ndarray  # [K] B = N - 1
    max_depth: np.ndarray  # [K]
    coverage: np.ndarray  # [K] C_p(T)
    block_length: np.ndarray  # [K] depth(exit) + 1, or -1 when the exit was not recorded
    depth_law: np.ndarray  # [D + 1] sum over rounds of Pr[depth(V) = d]


def edge_law_batch(
    parent: np.ndarray, valid: np.ndarray, edge: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(coverage [K], depth [K, b], w [K, b])`` of padded trees (module docstring).

    ``parent``: ``[K, b]`` int, root -1, padding 0; ``valid``: ``[K, b]`` bool;
    ``edge``: ``[K, b]`` float, the root's entry ignored. ``b`` a power of two.
    """
    k, b = parent.shape
    real = valid.copy()
    real[:, 0] = False  # non-root real nodes
    a = np.where(real, edge, 0.0)
    a[:, 0] = 1.0
    positive = a > 0
    log_a = np.log(np.where(positive, a, 1.0))
    zeros = (~positive).astype(np.int64)
    depth = real.astype(np.int64)
    rows = np.arange(k)[:, None]
    jump = np.maximum(parent, 0)
    for _ in range(max(1, (b - 1).bit_length())):  # 2^steps >= b > any depth
        log_a = log_a + log_a[rows, jump]
        zeros = zeros + zeros[rows, jump]
        depth = depth + depth[rows, jump]
        jump = jump[rows, jump]
    prefix = np.where(zeros > 0, 0.0, np.exp(log_a))
    flat_parent = np.where(real, parent + rows * b, k * b)  # root and padding go to a spare slot
    mass = np.bincount(flat_parent.ravel(), weights=a.ravel(), minlength=k * b + 1)[
        : k * b
    ].reshape(k, b)
    # residual-mass rule, part 2 (theory.law)
    w = np.where(valid, prefix * np.maximum(1.0 - mass, 0.0), 0.0)
    coverage = np.where(real, prefix, 0.0).sum(axis=1)
    return coverage, depth, w


class _Bucket:
    """Raw round records of one bucket size, waiting to be reduced."""

    def __init__(self, size: int, capacity: int):
        self.size, self.capacity = size, capacity
        self.records: list[
            tuple[int, str, dict[str, Any], bytes]
        ] = []  # (index, where, record, line)

    def full(self) -> bool:
        return len(self.records) >= self.capacity


def _first_bad(mask_rows: np.ndarray) -> int:
    return int(np.flatnonzero(mask_rows)[0])


def _reduce(bucket: _Bucket, atol: float) -> ChunkLaw:
    recs = bucket.records
    k, b = len(recs), bucket.size
    parents = [r[2]["parent"] for r in recs]
    tokens = [r[2]["token"] for r in recs]
    edges = [r[2]["edge_prob"] for r in recs]
    n = np.fromiter((len(p) for p in parents), dtype=np.int64, count=k)
    try:
        fp = np.array(list(chain.from_iterable(parents)))
        ft = np.array(list(chain.from_iterable(tokens)))
        fe = np.array(list(chain.from_iterable(edges)))
    except (ValueError, TypeError):
        fp = ft = fe = None
    drafts = [(i, r[2]["draft_logprob"]) for i, r in enumerate(recs) if "draft_logprob" in r[2]]
    if drafts:
        if any(type(d) is not list or len(d) != n[i] for i, d in drafts):
            return _reduce_slow(bucket, atol)
        try:
            fd = np.array(list(chain.from_iterable(d for _, d in drafts)))
        except (ValueError, TypeError):
            return _reduce_slow(bucket, atol)
        # NaN, > 0: named by the slow path
        if fd.size and (fd.dtype.kind not in "if" or not (fd <= atol).all()):
            return _reduce_slow(bucket, atol)
    if fp is None or fp.dtype.kind != "i" or ft.dtype.kind != "i" or fe.dtype.kind not in "if":
        return _reduce_slow(bucket, atol)
    fe = fe.astype(np.float64)
    rows = np.repeat(np.arange(k), n)
    cols = np.arange(rows.size) - np.repeat(np.cumsum(n) - n, n)
    parent = np.zeros((k, b), dtype=np.int64)
    token = np.zeros((k, b), dtype=np.int64)
    edge = np.zeros((k, b))
    parent[rows, cols], token[rows, cols], edge[rows, cols] = fp, ft, fe
    valid = np.arange(b)[None, :] < n[:, None]
    real = valid.copy()
    real[:, 0] = False
    col = np.arange(b)[None, :]
    bad = (parent[:, 0] != -1) | (token[:, 0] < -1)
    bad |= (real & ((parent < 0) | (parent >= col) | (token < 0))).any(axis=1)
    bad |= (real & ~(np.isfinite(edge) & (edge >= 0) & (edge <= 1 + atol))).any(axis=1)
    # distinct sibling tokens: sort (round, parent, token) of the real nodes, look for neighbours
    rr, pp, tt = np.broadcast_to(np.arange(k)[:, None], (k, b))[real], parent[real], token[real]
    order = np.lexsort((tt, pp, rr))
    rr, pp, tt = rr[order], pp[order], tt[order]
    dup = (rr[1:] == rr[:-1]) & (pp[1:] == pp[:-1]) & (tt[1:] == tt[:-1])
    if dup.any():
        bad[rr[1:][dup]] = True
    if bad.any():
        _raise_first(bucket, _first_bad(bad), atol)
    coverage, depth, w = edge_law_batch(np.where(valid, parent, 0), valid, edge)
    flat_parent = np.where(real, parent + np.arange(k)[:, None] * b, k * b)
    mass = np.bincount(
        flat_parent.ravel(), weights=np.where(real, edge, 0.0).ravel(), minlength=k * b + 1
    )[: k * b].reshape(k, b)
    over = (mass > 1 + atol).any(axis=1)
    if over.any():
        _raise_first(bucket, _first_bad(over), atol)
    written = [r[2].get("exit_node") for r in recs]  # None: no exit recorded
    bonus = [r[2].get("bonus") for r in recs]
    # checked as written, before -1 stands for "no exit": a written -1 is not a node
    bad_exit = [
        i
        for i, (e, m) in enumerate(zip(written, n))
        if not (e is None or (type(e) is int and 0 <= e < m))
    ]
    bad_exit += [
        i for i, x in enumerate(bonus) if x is not None and not (type(x) is int and 0 <= x < 2**63)
    ]
    if bad_exit:
        _raise_first(bucket, min(bad_exit), atol)
    ex = np.array([-1 if e is None else e for e in written], dtype=np.int64)
    block = np.where(ex >= 0, depth[np.arange(k), np.maximum(ex, 0)] + 1, -1)
    max_depth = np.where(valid, depth, 0).max(axis=1)
    depth_law = np.bincount(depth.ravel(), weights=w.ravel(), minlength=int(max_depth.max()) + 1)
    return ChunkLaw(np.array([r[0] for r in recs]), n - 1, max_depth, coverage, block, depth_law)


def _raise_first(bucket: _Bucket, i: int, atol: float) -> None:
    index, where, _, raw = bucket.records[i]
    parse_round(exact_record(raw), where, atol=atol)  # raises the exact, named error
    # twin disagreement: still refuse
    raise TraceFormatError(f"{where}: round {index} failed validation")


def _reduce_slow(bucket: _Bucket, atol: float) -> ChunkLaw:
    """Round-by-round twin used when a chunk holds anything the fast path does not read."""
    rounds = [
        parse_round(exact_record(raw), where, atol=atol) for _, where, _, raw in bucket.records
    ]
    return _law_of_rounds([r[0] for r in bucket.records], rounds, bucket.size)


def _law_of_rounds(index: list[int], rounds: list[TraceRound], size: int) -> ChunkLaw:
    k = len(rounds)
    parent = np.zeros((k, size), dtype=np.int64)
    edge = np.zeros((k, size))
    valid = np.zeros((k, size), dtype=bool)
    for i, r in enumerate(rounds):
        m = r.tree.num_nodes
        parent[i, :m], edge[i, :m], valid[i, :m] = r.tree.parent, r.edge_prob, True
    coverage, depth, w = edge_law_batch(np.where(valid, parent, 0), valid, edge)
    max_depth = np.where(valid, depth, 0).max(axis=1)
    block = np.array(
        [-1 if r.exit_node is None else r.block_length for r in rounds], dtype=np.int64
    )
    depth_law = np.bincount(depth.ravel(), weights=w.ravel(), minlength=int(max_depth.max()) + 1)
    return ChunkLaw(
        np.asarray(index),
        np.array([r.tree.budget for r in rounds]),
        max_depth,
        coverage,
        block,
        depth_law,
    )


def laws_of_rounds(
    rounds: list[TraceRound], *, chunk_nodes: int = DEFAULT_CHUNK_NODES
) -> Iterator[ChunkLaw]:
    """Chunk laws of rounds already in memory (same buckets as the file reader)."""
    by_size: dict[int, list[int]] = {}
    for i, r in enumerate(rounds):
        by_size.setdefault(bucket_size(r.tree.num_nodes), []).append(i)
    for size, idx in sorted(by_size.items()):
        step = max(1, chunk_nodes // size)
        for s in range(0, len(idx), step):
            part = idx[s : s + step]
            yield _law_of_rounds(part, [rounds[i] for i in part], size)


def stream_trace_laws(
    path: str | Path,
    on_meta: Callable[[dict], None],
    *,
    allow_incomplete: bool = False,
    chunk_nodes: int = DEFAULT_CHUNK_NODES,
    atol: float = ROW_SUM_ATOL,
    workers: int = 1,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
) -> Iterator[ChunkLaw]:
    """Read ``path`` line by line and yield a :class:`ChunkLaw` whenever a bucket fills (then the rest).

    ``on_meta`` receives the header's meta first. Every round is validated; errors name the line.
    ``workers > 1`` (files of at least ``parallel_min_bytes``): the file is cut into that many
    spans at line boundaries, each read by its own process (spawned, so no thread state is forked);
    each worker's memory is bounded as above, and the result is the same.
    """
    path = Path(path)
    if workers > 1 and path.is_file() and path.stat().st_size >= parallel_min_bytes:
        yield from _parallel(path, on_meta, allow_incomplete, chunk_nodes, atol, workers)
        return
    yield from _paused_gc(_stream(path, on_meta, allow_incomplete, chunk_nodes, atol, None))


def _paused_gc(it: Iterator[ChunkLaw]) -> Iterator[ChunkLaw]:
    # the held records are many small lists: the cyclic GC would rescan them on every allocation burst
    # (no cycles are created here); it is paused while streaming and restored after
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield from it
    finally:
        if was_enabled:
            gc.enable()


def _merge(chunks: list[ChunkLaw]) -> ChunkLaw | None:
    if not chunks:
        return None
    depth = max(c.depth_law.size for c in chunks)
    law = np.zeros(depth)
    for c in chunks:
        law[: c.depth_law.size] += c.depth_law
    cat = lambda f: np.concatenate([getattr(c, f) for c in chunks])  # noqa: E731
    return ChunkLaw(
        cat("index"), cat("budget"), cat("max_depth"), cat("coverage"), cat("block_length"), law
    )


def _span_worker(path: str, span: Span, allow_incomplete: bool, chunk_nodes: int, atol: float):
    """One worker's share: ``(meta or None, its rounds' laws merged into one ChunkLaw or None)``."""
    meta: dict = {}
    chunks = list(
        _paused_gc(_stream(Path(path), meta.update, allow_incomplete, chunk_nodes, atol, span))
    )
    return (meta if span.first else None), _merge(chunks)


def _parallel(
    path: Path, on_meta, allow_incomplete: bool, chunk_nodes: int, atol: float, workers: int
):
    spans = split_spans(path, workers)
    if len(spans) == 1:
        yield from _paused_gc(_stream(path, on_meta, allow_incomplete, chunk_nodes, atol, None))
        return
    ctx = multiprocessing.get_context("spawn")
    # the first span is read here while the others' processes start and run: one process fewer to start
    with ProcessPoolExecutor(max_workers=len(spans) - 1, mp_context=ctx) as pool:
        futures = [
            pool.submit(_span_worker, str(path), sp, allow_incomplete, chunk_nodes, atol)
            for sp in spans[1:]
        ]
        try:
            results = [_span_worker(str(path), spans[0], allow_incomplete, chunk_nodes, atol)]
        except BaseException:
            for fut in futures:
                fut.cancel()
            raise
        # in file order: first error wins
        for meta, chunk in results + [fut.result() for fut in futures]:
            if meta is not None:
                on_meta(meta)
            if chunk is not None:
                yield chunk


def _stream(
    path, on_meta, allow_incomplete: bool, chunk_nodes: int, atol: float, span: Span | None
) -> Iterator[ChunkLaw]:
    buckets: dict[int, _Bucket] = {}
    parsed: dict[
        int, list[tuple[int, TraceRound]]
    ] = {}  # unusual records, read exactly (rows dropped)
    index = 0 if span is None or span.first else span.first_lineno - 2
    sizes = [bucket_size(n) for n in range(1025)]
    for where, rec, raw in iter_records(
        path, allow_incomplete=allow_incomplete, with_line=True, span=span, fast=True
    ):
        if where == "meta":
            on_meta(rec)
            continue
        get = rec.get
        parent, token, edge = get("parent"), get("token"), get("edge_prob")
        # the fast path reads plain records only; JSON true/false anywhere (numpy would read a bool in a
        # list of ints as 0/1), optional arrays other than draft_logprob, or odd shapes: the exact reader
        if not (
            type(parent) is list
            and type(token) is list
            and type(edge) is list
            and 0 < len(parent) == len(token) == len(edge)
            and rec.keys() <= _FAST_KEYS
            and type(get("exit_node", 0)) is int
            and type(get("bonus", 0)) is int
            and b"true" not in raw
            and b"false" not in raw
        ):
            # unusual: the exact reader (raises when malformed)
            r = parse_round(exact_record(raw), where, atol=atol)
            size = bucket_size(r.tree.num_nodes)
            held = parsed.setdefault(size, [])
            held.append((index, TraceRound(r.tree, r.edge_prob, exit_node=r.exit_node)))
            index += 1
            if len(held) >= max(1, chunk_nodes // size):
                yield _law_of_rounds([i for i, _ in held], [x for _, x in held], size)
                held.clear()
            continue
        n = len(parent)
        size = sizes[n] if n < len(sizes) else bucket_size(n)
        bucket = buckets.get(size)
        if bucket is None:
            bucket = buckets[size] = _Bucket(size, max(1, chunk_nodes // size))
        bucket.records.append((index, where, rec, raw))
        index += 1
        if bucket.full():
            yield _reduce(bucket, atol)
            bucket.records = []
    for size in sorted(buckets):
        if buckets[size].records:
            yield _reduce(buckets[size], atol)
    for size in sorted(parsed):
        if parsed[size]:
            yield _law_of_rounds([i for i, _ in parsed[size]], [x for _, x in parsed[size]], size)


__all__ = [
    "ChunkLaw",
    "DEFAULT_CHUNK_NODES",
    "bucket_size",
    "edge_law_batch",
    "laws_of_rounds",
    "stream_trace_laws",
]
