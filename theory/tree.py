"""The draft tree: nodes ``0..N-1`` in topological order, node 0 the root.

Pure numpy (the torch engine imports this module; it must never import JAX).
Vocabulary: ``N`` nodes, ``B = N - 1`` budget, ``D`` maximum depth.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Iterable, Sequence

import numpy as np

from .errors import TreeError

ROOT = 0
NO_PARENT = -1
ROOT_TOKEN = -1  # default token of the root; the root's token plays no role in the law


_INT64_MAX = np.iinfo(np.int64).max


def _as_int_vector(name: str, values) -> np.ndarray:
    """``values`` as a 1-D int64 array; bools, strings, complex numbers, non-integral floats
    and integers outside int64 are refused (no silent coercion, no wrap-around)."""
    if isinstance(values, (list, tuple)):
        for i, x in enumerate(values):
            if isinstance(x, (bool, np.bool_)) or isinstance(x, (str, bytes)):
                raise TreeError(
                    f"{name}[{i}] is {x!r}: {name} must hold integers, not {type(x).__name__}"
                )
            if isinstance(x, (int, np.integer)) and not -_INT64_MAX <= int(x) <= _INT64_MAX:
                raise TreeError(f"{name}[{i}] is {x}, outside the int64 range")
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as err:
        raise TreeError(f"{name} must be a 1-D sequence of integers ({err})") from None
    if arr.ndim != 1:
        raise TreeError(f"{name} must be a 1-D sequence, got shape {arr.shape}")
    if arr.size == 0:
        return arr.astype(np.int64)
    kind = arr.dtype.kind
    if kind == "b" or kind not in "iuf":
        raise TreeError(f"{name} must hold integers, got dtype {arr.dtype}")
    if kind == "u" and arr.max() > _INT64_MAX:
        i = int(np.argmax(arr))
        raise TreeError(f"{name}[{i}] is {arr[i]}, outside the int64 range")
    if kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr)) | (np.abs(arr) > 2.0**62)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise TreeError(
                f"{name} must hold integers, got {arr[i]!r} at index {i} (dtype {arr.dtype})"
            )
    return arr.astype(np.int64)


def _cycle_from(parent: np.ndarray, start: int) -> list[int] | None:
    seen: list[int] = []
    node = start
    while node != NO_PARENT:
        if node in seen:
            return seen[seen.index(node) :] + [node]
        if not 0 <= node < parent.size:
            return None
        seen.append(node)
        node = int(parent[node])
    return None


def _valid_fast(parent: np.ndarray, token: np.ndarray) -> bool:
    """Every rule of :class:`DraftTree` after the root's, in vector form (``0 <= parent[i] < i``, root
    token >= -1, other tokens >= 0, siblings' tokens distinct); False sends the tree to
    :func:`_raise_first_error` for a message naming the first broken rule."""
    n = parent.size
    par, tok = parent[1:], token[1:]
    if (
        (par < 0).any()
        or (par >= np.arange(1, n)).any()
        or token[0] < ROOT_TOKEN
        or (tok < 0).any()
    ):
        return False
    order = np.lexsort((tok, par))  # siblings adjacent, sorted by token
    ps, ts = par[order], tok[order]
    return not ((ps[1:] == ps[:-1]) & (ts[1:] == ts[:-1])).any()


def _raise_first_error(parent: np.ndarray, token: np.ndarray) -> None:
    """Raise the :class:`TreeError` of the first broken rule (node order), as the checks read in words."""
    for i in range(1, parent.size):
        p = int(parent[i])
        if p == NO_PARENT:
            raise TreeError(f"node {i} has parent -1: a second root (only node 0 may be a root)")
        if p < 0 or p >= parent.size:
            raise TreeError(f"node {i} has parent {p}, out of range [0, {parent.size})")
        if p >= i:
            cycle = _cycle_from(parent, i)
            if cycle is not None:
                raise TreeError(f"node {i} lies on a cycle {cycle}")
            raise TreeError(f"node {i} has parent {p} >= {i}: parents must come before children")
    if token[0] < ROOT_TOKEN:
        raise TreeError(f"root token must be >= -1, got {token[0]}")
    neg = np.flatnonzero(token[1:] < 0)
    if neg.size:
        i = int(neg[0]) + 1
        raise TreeError(f"node {i} has negative token {token[i]}")
    seen: dict[tuple[int, int], int] = {}
    for i in range(1, parent.size):
        key = (int(parent[i]), int(token[i]))
        if key in seen:
            raise TreeError(
                f"nodes {seen[key]} and {i} are siblings under node {key[0]} "
                f"with the same token {key[1]}"
            )
        seen[key] = i
    raise TreeError("invalid draft tree")  # unreachable: _valid_fast found a broken rule


@dataclass(frozen=True, eq=False)
class DraftTree:
    """A validated, prefix-closed draft tree (docs/design.md §1.1).

    ``parent[0] == -1``; ``0 <= parent[i] < i`` for ``i >= 1``; siblings carry
    distinct non-negative tokens. ``token[0]`` (the last committed token) is
    free: any integer >= -1.
    """

    parent: np.ndarray
    token: np.ndarray

    def __post_init__(self) -> None:
        parent = _as_int_vector("parent", self.parent)
        token = _as_int_vector("token", self.token)
        if parent.size == 0:
            raise TreeError("a draft tree needs at least the root node")
        if parent.size != token.size:
            raise TreeError(f"length mismatch: {parent.size} parents but {token.size} tokens")
        if parent[0] != NO_PARENT:
            raise TreeError(f"node 0 must be the root (parent -1), got parent {parent[0]}")
        if not _valid_fast(parent, token):
            _raise_first_error(parent, token)
        parent.setflags(write=False)
        token.setflags(write=False)
        object.__setattr__(self, "parent", parent)
        object.__setattr__(self, "token", token)

    # ----- constructors -------------------------------------------------
    @classmethod
    def from_paths(
        cls, paths: Iterable[Sequence[int]], root_token: int = ROOT_TOKEN
    ) -> "DraftTree":
        """Tree whose non-root nodes are the given token prefixes.

        Every prefix of every path must itself be listed or implied: missing
        ancestors are an error (the set must be prefix-closed). Node order is
        breadth-first by depth, then by insertion order.
        """
        ordered = sorted({tuple(int(t) for t in p) for p in paths if len(p)}, key=len)
        index: dict[tuple[int, ...], int] = {(): ROOT}
        parent, token = [NO_PARENT], [root_token]
        for path in ordered:
            if path[:-1] not in index:
                raise TreeError(f"prefix {path[:-1]} of path {path} is not in the tree")
            index[path] = len(parent)
            parent.append(index[path[:-1]])
            token.append(path[-1])
        return cls(parent=np.array(parent), token=np.array(token))

    @classmethod
    def chain(cls, tokens: Sequence[int], root_token: int = ROOT_TOKEN) -> "DraftTree":
        """A single path ``root -> tokens[0] -> tokens[1] -> ...``."""
        n = len(tokens)
        return cls(parent=np.arange(-1, n), token=np.array([root_token, *tokens]))

    # ----- derived structure ---------------------------------------------
    @property
    def num_nodes(self) -> int:
        return int(self.parent.size)

    @property
    def budget(self) -> int:
        """``B = N - 1``: the number of non-root nodes."""
        return self.num_nodes - 1

    @cached_property
    def depth(self) -> np.ndarray:
        # Python ints: a list walk is ~5x cheaper than numpy scalar indexing
        parent = self.parent.tolist()
        d = [0] * len(parent)
        for i in range(1, len(parent)):
            d[i] = d[parent[i]] + 1
        out = np.array(d, dtype=np.int64)
        out.setflags(write=False)
        return out

    @property
    def max_depth(self) -> int:
        return int(self.depth.max())

    @cached_property
    def children(self) -> tuple[np.ndarray, ...]:
        kids: list[list[int]] = [[] for _ in range(self.num_nodes)]
        for i in range(1, self.num_nodes):
            kids[self.parent[i]].append(i)
        return tuple(np.array(k, dtype=np.int64) for k in kids)

    @cached_property
    def is_leaf(self) -> np.ndarray:
        leaf = np.ones(self.num_nodes, dtype=bool)
        leaf[self.parent[1:]] = False
        return leaf

    @property
    def leaves(self) -> np.ndarray:
        return np.flatnonzero(self.is_leaf)

    @property
    def internal(self) -> np.ndarray:
        return np.flatnonzero(~self.is_leaf)

    def path(self, node: int) -> tuple[int, ...]:
        """Tokens from the root (excluded) to ``node`` (included)."""
        out = []
        while node != ROOT:
            out.append(int(self.token[node]))
            node = int(self.parent[node])
        return tuple(reversed(out))

    def path_nodes(self, node: int) -> tuple[int, ...]:
        """Node ids from the root (included) to ``node`` (included)."""
        out = []
        while node != NO_PARENT:
            out.append(int(node))
            node = int(self.parent[node])
        return tuple(reversed(out))

    def child_with_token(self, node: int, token: int) -> int | None:
        for c in self.children[node]:
            if self.token[c] == token:
                return int(c)
        return None

    @cached_property
    def ancestor_matrix(self) -> np.ndarray:
        """``A[v, u] = 1`` iff ``u`` is an ancestor-or-self of ``v``: the tree-attention mask.

        Row ``v`` as a Python-int bitset, ``bits[v] = bits[par v] | 2^v`` (parents come first), unpacked
        to bools at once (twin: :meth:`_ancestor_matrix_rows`, the row-copy loop)."""
        parent = self.parent.tolist()
        n = len(parent)
        bits = [1] + [0] * (n - 1)
        for i in range(1, n):
            bits[i] = bits[parent[i]] | (1 << i)
        width = (n + 7) // 8
        raw = np.frombuffer(
            b"".join(b.to_bytes(width, "little") for b in bits), dtype=np.uint8
        ).reshape(n, width)
        a = np.unpackbits(raw, axis=1, count=n, bitorder="little").astype(bool)
        a.setflags(write=False)
        return a

    def _ancestor_matrix_rows(self) -> np.ndarray:
        """:attr:`ancestor_matrix` by copying the parent's row (its twin, for tests)."""
        n = self.num_nodes
        a = np.zeros((n, n), dtype=bool)
        a[0, 0] = True
        for i in range(1, n):
            a[i] = a[self.parent[i]]
            a[i, i] = True
        return a

    @cached_property
    def child_matrix(self) -> np.ndarray:
        """``C[v, u] = 1`` iff ``par(u) = v`` (child incidence)."""
        n = self.num_nodes
        c = np.zeros((n, n), dtype=bool)
        c[self.parent[1:], np.arange(1, n)] = True
        c.setflags(write=False)
        return c

    def check_vocab(self, vocab_size: int) -> None:
        """Raise :class:`TreeError` if a non-root token is ``>= vocab_size``."""
        bad = np.flatnonzero(self.token[1:] >= vocab_size)
        if bad.size:
            i = int(bad[0]) + 1
            raise TreeError(
                f"node {i} has token {self.token[i]}, outside vocabulary of size {vocab_size}"
            )

    def reorder_siblings(self, rng: np.random.Generator) -> "DraftTree":
        """Same tree with node ids permuted (children order shuffled), keeping topological order."""
        order = [ROOT]
        frontier = [ROOT]
        while frontier:
            nxt = []
            for v in frontier:
                kids = list(self.children[v])
                rng.shuffle(kids)
                nxt.extend(kids)
            order.extend(nxt)
            frontier = nxt
        new_id = {old: new for new, old in enumerate(order)}
        parent = [NO_PARENT] + [new_id[int(self.parent[o])] for o in order[1:]]
        return DraftTree(parent=np.array(parent), token=self.token[order])

    def padded(self, num_nodes: int) -> "PaddedTree":
        """Arrays padded to ``num_nodes`` with a validity mask, for batching under ``vmap``."""
        return PaddedTree.from_tree(self, num_nodes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DraftTree):
            return NotImplemented
        return np.array_equal(self.parent, other.parent) and np.array_equal(self.token, other.token)

    def __hash__(self) -> int:
        return hash((self.parent.tobytes(), self.token.tobytes()))

    def __repr__(self) -> str:
        return f"DraftTree(parent={self.parent.tolist()}, token={self.token.tolist()})"


@dataclass(frozen=True)
class PaddedTree:
    """Fixed-shape arrays of a tree padded to ``N`` nodes (``valid`` marks real nodes).

    Padding nodes hang under the root with token 0 and ``valid = False``; every
    law treats their edge probability as zero, so they change nothing. Fields
    may carry a leading batch axis (see :func:`stack_trees`).
    """

    parent: np.ndarray  # [..., N] int, padding -> 0 (root -> -1)
    token: np.ndarray  # [..., N] int, padding -> 0
    depth: np.ndarray  # [..., N] int, padding -> 0
    valid: np.ndarray  # [..., N] bool
    ancestor: np.ndarray  # [..., N, N] bool, ancestor-or-self
    child: np.ndarray  # [..., N, N] bool, C[v, u] = par(u) == v (real nodes only)

    @classmethod
    def from_tree(cls, tree: DraftTree, num_nodes: int) -> "PaddedTree":
        n = tree.num_nodes
        if num_nodes < n:
            raise TreeError(f"cannot pad a tree of {n} nodes to {num_nodes} nodes")
        parent = np.zeros(num_nodes, dtype=np.int64)
        parent[:n] = tree.parent
        token = np.zeros(num_nodes, dtype=np.int64)
        token[:n] = tree.token
        token[0] = max(int(tree.token[0]), 0)
        depth = np.zeros(num_nodes, dtype=np.int64)
        depth[:n] = tree.depth
        valid = np.zeros(num_nodes, dtype=bool)
        valid[:n] = True
        anc = np.zeros((num_nodes, num_nodes), dtype=bool)
        anc[:n, :n] = tree.ancestor_matrix
        anc[np.arange(n, num_nodes), np.arange(n, num_nodes)] = True
        child = np.zeros((num_nodes, num_nodes), dtype=bool)
        child[:n, :n] = tree.child_matrix
        return cls(parent, token, depth, valid, anc, child)

    @property
    def num_nodes(self) -> int:
        return int(self.parent.shape[-1])


def stack_trees(trees: Sequence[DraftTree], num_nodes: int | None = None) -> PaddedTree:
    """Pad every tree to a common node count and stack along a leading batch axis."""
    if not trees:
        raise TreeError("stack_trees needs at least one tree")
    n = num_nodes if num_nodes is not None else max(t.num_nodes for t in trees)
    padded = [t.padded(n) for t in trees]
    return PaddedTree(
        *(
            np.stack([getattr(p, f) for p in padded])
            for f in ("parent", "token", "depth", "valid", "ancestor", "child")
        )
    )
