"""Verifier formats: trees, target rows and results converted between exitlaw and EAGLE, SGLang, DDTree.

The kit calls ``f(tree, probs, rng) -> (exit_node, bonus_token)``. :func:`adapt_verifier` wraps a
verifier written in the layout of one of the big codebases into that form: it converts the tree and
the target rows into the format, calls the verifier, checks its result and converts it back to
``(exit_node, bonus_token)``. Every format numbers the root 0 and parents before children, and
node ``i`` of the exitlaw tree keeps index ``i``, so ``from_X(*to_X(tree)) == tree``.
Read from public code (facts only, nothing copied):

``eagle``: SafeAILab/EAGLE, ``eagle/model/utils.py`` at 8009b6d89d72 (``generate_tree_buffers``,
``generate_candidates``, ``tree_decoding``, ``evaluate_posterior``, ``update_inference_inputs``).
``retrieve_indices`` [P, L]: one row per root-to-leaf path, the node indices from 0 (the root), padded
with -1, rows sorted lexicographically with padding after every index; ``candidates`` [P, L]: the node
tokens gathered by those rows, -1 at padding (EAGLE appends a -1 token before gathering); ``probs``
[P, L, V]: the target row of node ``retrieve_indices[r, k]`` (``tree_logits[0, retrieve_indices]`` after
the logits processor and softmax), NaN at padding (EAGLE's index -1 would read the last node's row; a
verifier must not read it). Call ``f(candidates, retrieve_indices, probs, rng)`` -> ``(best_candidate,
accept_length, bonus_token)``, ``accept_length`` = accepted draft tokens without the root (what
``evaluate_posterior`` returns), exit node ``retrieve_indices[best_candidate, accept_length]``.
Assumed: the verifier draws the bonus itself (EAGLE's caller draws it from ``sample_p``), from ``rng``
(EAGLE uses Python's ``random``).

``sglang``: sgl-project/sglang at 6bfad8f187aa, ``sgl-kernel/python/sgl_kernel/speculative.py``
(``tree_speculative_sampling_target_only``) and its kernel ``TreeSpeculativeSamplingTargetOnly``.
Batch ``bs = 1``; ``N`` draft positions, position 0 the root (the verified token). ``candidates`` [1, N]
int64 tokens, ``retrive_index`` [1, N] the positions in the flat ``predicts`` (``arange(N)`` for one
request), ``retrive_next_token`` / ``retrive_next_sibling`` [1, N] first child / next sibling (-1: none;
siblings in increasing position, as ``build_tree_efficient`` links them: it walks the positions from
the last and prepends each to its parent's list), ``uniform_samples`` [1, N] one coin per position
(used at that position's children), ``uniform_samples_for_final_sampling`` [1] the bonus coin,
``target_probs`` [1, N, V], ``draft_probs`` [1, N, V] zeros (target-only scratch, writable). Outputs are written in
place, as upstream: ``predicts`` [N] (the next token after each accepted position, the bonus at the last),
``accept_index`` [1, num_spec_step] (accepted positions from the root, -1 after; ``num_spec_step`` =
depth + 1), ``accept_token_num`` [1] (accepted draft tokens, root excluded); the verifier returns None.
Upstream accepts the first sibling whose running sum of target probabilities reaches the node's coin
(``coin <= sum``, as EAGLE's ``r <= acp``: a coin of exactly 0 accepts a zero-probability child, which
``check --boundary`` flags). Assumed: coins are float64 from the kit's generator (upstream float32),
thresholds are left at their exact value 1.0 (not passed), and every output starts at -1 so an
unwritten entry is caught.

``ddtree``: liranringel/ddtree at c96427a18567, ``ddtree.py`` (``build_ddtree_tree``,
``compile_ddtree_tree``, ``follow_verified_tree``). ``root_token_id``; ``node_token_ids`` [B] and
``node_depths`` [B] for nodes 1..B; ``parents`` list [B + 1] (``parents[0] = -1``); ``child_maps`` list of
B + 1 dicts token -> child index; ``visibility`` [B + 1, B + 1] bool, ``[v, u]`` iff ``u`` is an
ancestor-or-self of ``v``; ``target_probs`` [1, B + 1, V] (the verify pass' rows). Call
``f(root_token_id, node_token_ids, node_depths, parents, child_maps, visibility, target_probs, rng)`` ->
``(accepted_indices, next_token)`` as ``follow_verified_tree`` returns them (indices from 0 along the
accepted path; ``next_token`` the bonus).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from exitlaw.simulate.kit.calls import VerifierCallError
from exitlaw.simulate.kit.chain_formats import (
    CHAIN_FORMATS,
    adapt_chain_verifier,
    check_callable_as,
    check_chain_format,
)
from exitlaw.theory import DraftTree

FORMATS = ("exitlaw", "eagle", "sglang", "ddtree")
PAD = -1  # padding of EAGLE's paths and SGLang's links and outputs, DDTree's root parent


class VerifierFormatError(VerifierCallError):
    """A verifier's result is malformed in its format (the kit reports it as bad input)."""


def _ints(x) -> list[int]:
    return [int(v) for v in np.asarray(x).reshape(-1)]


# ----- EAGLE -------------------------------------------------------------------------------------
def to_eagle(tree: DraftTree) -> tuple[np.ndarray, np.ndarray]:
    """``(candidates, retrieve_indices)`` [P, L], one row per leaf path, padded with -1."""
    paths = sorted(
        (list(tree.path_nodes(int(v))) for v in tree.leaves),
        key=lambda p: p + [tree.num_nodes] * (tree.max_depth + 1 - len(p)),
    )
    ret = np.full((len(paths), tree.max_depth + 1), PAD, dtype=np.int64)
    for r, p in enumerate(paths):
        ret[r, : len(p)] = p
    cand = np.where(ret >= 0, np.asarray(tree.token)[np.maximum(ret, 0)], PAD)
    return cand, ret


def from_eagle(candidates, retrieve_indices) -> DraftTree:
    """The tree whose root-to-leaf paths are the rows of ``retrieve_indices`` (tokens from ``candidates``)."""
    cand, ret = np.asarray(candidates), np.asarray(retrieve_indices)
    if cand.shape != ret.shape or ret.ndim != 2 or ret.size == 0:
        raise VerifierFormatError(
            f"candidates {cand.shape} and retrieve_indices {ret.shape} must have one [P, L] shape"
        )
    n = int(ret.max()) + 1
    parent, token = np.full(n, -2, dtype=np.int64), np.full(n, -2, dtype=np.int64)
    for r in range(ret.shape[0]):
        row = _ints(ret[r])
        length = row.index(PAD) if PAD in row else len(row)
        if row[0] != 0 or any(x != PAD for x in row[length:]):
            raise VerifierFormatError(
                f"retrieve_indices row {r} = {row}: must start at node 0, padding only at the end"
            )
        for k in range(length):
            v, par, tok = row[k], row[k - 1] if k else PAD, int(cand[r, k])
            if token[v] != -2 and (parent[v], token[v]) != (par, tok):
                raise VerifierFormatError(
                    f"node {v} has parent {parent[v]} token {token[v]} in one path and "
                    f"parent {par} token {tok} in row {r}"
                )
            parent[v], token[v] = par, tok
    missing = np.flatnonzero(token == -2)
    if missing.size:
        raise VerifierFormatError(f"nodes {missing.tolist()} lie on no row of retrieve_indices")
    return DraftTree(parent=parent, token=token)


def eagle_probs(probs: np.ndarray, retrieve_indices: np.ndarray) -> np.ndarray:
    """Node rows [N, V] -> per-path-position rows [P, L, V], NaN at padding."""
    out = np.asarray(probs, dtype=np.float64)[np.maximum(retrieve_indices, 0)]
    out[retrieve_indices < 0] = np.nan
    return out


def from_eagle_result(out, retrieve_indices: np.ndarray, vocab: int) -> tuple[int, int]:
    """``(best_candidate, accept_length, bonus_token)`` -> ``(exit_node, bonus_token)``."""
    b, k, y = _triple(out, "(best_candidate, accept_length, bonus_token)")
    num_paths, length = retrieve_indices.shape
    if not 0 <= b < num_paths:
        raise VerifierFormatError(
            f"best_candidate {b} is outside the {num_paths} paths 0..{num_paths - 1}"
        )
    if not 0 <= k < length or retrieve_indices[b, k] == PAD:
        depth = int((retrieve_indices[b] != PAD).sum()) - 1
        raise VerifierFormatError(
            f"accept_length {k} is outside path {b}, which has {depth} draft tokens"
        )
    return int(retrieve_indices[b, k]), _token(y, vocab, "bonus_token")


# ----- SGLang ------------------------------------------------------------------------------------
def to_sglang(tree: DraftTree) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(candidates, retrive_index, retrive_next_token, retrive_next_sibling)``, each [1, N]."""
    n = tree.num_nodes
    first, sibling = np.full(n, PAD, dtype=np.int64), np.full(n, PAD, dtype=np.int64)
    for v, kids in enumerate(tree.children):
        kids = sorted(int(u) for u in kids)
        if kids:
            first[v] = kids[0]
            sibling[kids[:-1]] = kids[1:]
    return (
        np.asarray(tree.token, dtype=np.int64)[None],
        np.arange(n, dtype=np.int64)[None],
        first[None],
        sibling[None],
    )


def from_sglang(candidates, retrive_next_token, retrive_next_sibling) -> DraftTree:
    """The tree of the first-child / next-sibling links (batch of one)."""
    cand, first, sib = (
        np.asarray(a) for a in (candidates, retrive_next_token, retrive_next_sibling)
    )
    if not cand.shape == first.shape == sib.shape or cand.ndim != 2 or cand.shape[0] != 1:
        raise VerifierFormatError(
            f"candidates {cand.shape}, retrive_next_token {first.shape}, retrive_next_sibling "
            f"{sib.shape} must be one [1, N] shape"
        )
    n = cand.shape[1]
    parent = np.full(n, -2, dtype=np.int64)
    parent[0] = PAD
    for v in range(n):
        u = int(first[0, v])
        while u != PAD:
            if not 0 < u < n or parent[u] != -2:
                raise VerifierFormatError(
                    f"the children links of node {v} reach {u}: out of range or seen twice"
                )
            parent[u], u = v, int(sib[0, u])
    if (parent == -2).any():
        raise VerifierFormatError(
            f"positions {np.flatnonzero(parent == -2).tolist()} are reached by no link"
        )
    return DraftTree(parent=parent, token=cand[0])


def from_sglang_result(
    tree: DraftTree, predicts, accept_index, accept_token_num, vocab: int
) -> tuple[int, int]:
    """Outputs written by the verifier -> ``(exit_node, bonus_token)``; the path and predicts must agree."""
    k = _ints(accept_token_num)[0]
    acc = _ints(accept_index)
    if not 0 <= k < len(acc):
        raise VerifierFormatError(
            f"accept_token_num {k} is outside 0..{len(acc) - 1} (accept_index has {len(acc)})"
        )
    path = acc[: k + 1]
    if path[0] != 0 or any(
        not 0 <= u < tree.num_nodes or tree.parent[u] != v for v, u in zip(path, path[1:])
    ):
        raise VerifierFormatError(
            f"accept_index {acc} with accept_token_num {k}: {path} is not a path from the root"
        )
    pred = _ints(predicts)
    for v, u in zip(path, path[1:]):
        if pred[v] != tree.token[u]:
            raise VerifierFormatError(
                f"predicts[{v}] = {pred[v]} but accepted position {u} has token {tree.token[u]}"
            )
    return path[-1], _token(pred[path[-1]], vocab, f"predicts[{path[-1]}] (the bonus)")


# ----- DDTree ------------------------------------------------------------------------------------
def to_ddtree(tree: DraftTree) -> dict:
    """DDTree's tree: root token, node tokens / depths (nodes 1..B), parents, child maps, visibility."""
    child_maps = [{int(tree.token[u]): int(u) for u in kids} for kids in tree.children]
    return {
        "root_token_id": int(tree.token[0]),
        "node_token_ids": np.asarray(tree.token[1:], dtype=np.int64),
        "node_depths": np.asarray(tree.depth[1:], dtype=np.int64),
        "parents": _ints(tree.parent),
        "child_maps": child_maps,
        "visibility": np.array(tree.ancestor_matrix, dtype=bool),
    }


def from_ddtree(root_token_id, node_token_ids, parents) -> DraftTree:
    """The tree of DDTree's parents list and node tokens."""
    tokens = [int(root_token_id)] + _ints(node_token_ids)
    if len(parents) != len(tokens):
        raise VerifierFormatError(
            f"{len(parents)} parents but {len(tokens)} nodes (root + node_token_ids)"
        )
    return DraftTree(
        parent=np.asarray(parents, dtype=np.int64), token=np.asarray(tokens, dtype=np.int64)
    )


def from_ddtree_result(out, tree: DraftTree, vocab: int) -> tuple[int, int]:
    """``(accepted_indices, next_token)`` -> ``(exit_node, bonus_token)``; the indices must be a root path."""
    if not (isinstance(out, (tuple, list)) and len(out) == 2 and np.ndim(out[0]) == 1):
        raise VerifierFormatError(
            f"the ddtree verifier returned {out!r}; expected (accepted_indices, next_token)"
        )
    try:
        path = _ints(out[0])
    except (TypeError, ValueError) as err:
        raise VerifierFormatError(f"accepted_indices {out[0]!r} is not a list of integers") from err
    if (
        not path
        or path[0] != 0
        or any(not 0 <= u < tree.num_nodes or tree.parent[u] != v for v, u in zip(path, path[1:]))
    ):
        raise VerifierFormatError(
            f"accepted_indices {path} is not a path of tree nodes from the root 0"
        )
    return path[-1], _token(_triple((out[1],), "next_token")[0], vocab, "next_token")


# ----- shared checks and the adapter -------------------------------------------------------------
def _triple(out, what: str) -> list[int]:
    n = what.count(",") + 1
    ok = isinstance(out, (tuple, list, np.ndarray)) and len(out) == n
    try:
        vals = [int(x) for x in out] if ok else []
        ok = ok and all(float(x) == v for x, v in zip(out, vals))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise VerifierFormatError(f"the verifier returned {out!r}; expected {what}, integers")
    return vals


def _token(y: int, vocab: int, what: str) -> int:
    if not 0 <= y < vocab:
        raise VerifierFormatError(f"{what} is {y}, outside the vocabulary 0..{vocab - 1}")
    return int(y)


ARGUMENTS = {
    "exitlaw": ("tree", "probs", "rng"),
    "eagle": ("candidates", "retrieve_indices", "probs", "rng"),
    "sglang": (
        "predicts",
        "accept_index",
        "accept_token_num",
        "candidates",
        "retrive_index",
        "retrive_next_token",
        "retrive_next_sibling",
        "uniform_samples",
        "uniform_samples_for_final_sampling",
        "target_probs",
        "draft_probs",
    ),
    "ddtree": (
        "root_token_id",
        "node_token_ids",
        "node_depths",
        "parents",
        "child_maps",
        "visibility",
        "target_probs",
        "rng",
    ),
}


def _readonly(*arrays):
    for a in arrays:
        a.setflags(write=False)
    return arrays


def _convert(verifier_format: str, tree: DraftTree, probs: np.ndarray):
    """The tree and target rows in ``verifier_format``'s layout, read-only (converted once per case)."""
    if verifier_format == "eagle":
        cand, ret = to_eagle(tree)
        return _readonly(cand, ret, eagle_probs(probs, ret))
    if verifier_format == "sglang":
        return _readonly(*to_sglang(tree), np.asarray(probs, dtype=np.float64)[None].copy())
    d = to_ddtree(tree)
    _readonly(d["node_token_ids"], d["node_depths"], d["visibility"])
    return d, _readonly(np.asarray(probs, dtype=np.float64)[None].copy())[0]


def _call_eagle(fn, tree: DraftTree, converted, rng, vocab: int) -> tuple[int, int]:
    """One call of an EAGLE-format verifier; its accepted path and bonus as (exit node, bonus)."""
    cand, ret, rows = converted
    out = fn(candidates=cand, retrieve_indices=ret, probs=rows, rng=rng)
    return from_eagle_result(out, ret, vocab)


def _call_sglang(fn, tree: DraftTree, converted, rng, vocab: int) -> tuple[int, int]:
    """One call of an SGLang-format verifier: it writes its outputs in place (``N`` acceptance coins,
    then the final one, drawn from ``rng``) and returns None."""
    cand, index, first, sibling, rows = converted
    n = tree.num_nodes
    outs = {
        "predicts": np.full(n, PAD, dtype=np.int64),
        "accept_index": np.full((1, tree.max_depth + 1), PAD, dtype=np.int64),
        "accept_token_num": np.full(1, PAD, dtype=np.int64),
    }
    ret = fn(
        **outs,
        candidates=cand,
        retrive_index=index,
        retrive_next_token=first,
        retrive_next_sibling=sibling,
        uniform_samples=rng.random((1, n)),
        uniform_samples_for_final_sampling=rng.random(1),
        target_probs=rows,
        draft_probs=np.zeros_like(rows),
    )
    if ret is not None:
        raise VerifierFormatError(
            f"an sglang-format verifier writes predicts, accept_index and "
            f"accept_token_num in place and returns None; it returned {ret!r}"
        )
    return from_sglang_result(tree, vocab=vocab, **outs)


def _call_ddtree(fn, tree: DraftTree, converted, rng, vocab: int) -> tuple[int, int]:
    """One call of a DDTree-format verifier, given fresh copies of the mutable lists and maps."""
    d, rows = converted
    args = {**d, "parents": list(d["parents"]), "child_maps": [dict(m) for m in d["child_maps"]]}
    out = fn(**args, target_probs=rows, rng=rng)
    return from_ddtree_result(out, tree, vocab)


_CALLS = {"eagle": _call_eagle, "sglang": _call_sglang, "ddtree": _call_ddtree}


def adapt_verifier(fn: Callable, verifier_format: str, mode: str = "conditional") -> Callable:
    """``fn`` in ``verifier_format`` as the kit's ``f(tree, probs, rng) -> (exit_node, bonus_token)``.

    ``fn`` is called with keyword arguments named as in :data:`ARGUMENTS`; a signature that cannot
    take them, or a malformed result, is a :class:`VerifierFormatError` (the kit's bad input).
    SGLang's coins are drawn from ``rng`` (``N`` acceptance coins, then the final one) on every call.
    """
    if verifier_format == "exitlaw":
        return fn
    if verifier_format in CHAIN_FORMATS or mode == "marginal":
        if verifier_format not in CHAIN_FORMATS:
            raise ValueError(
                f"--format {verifier_format} applies to --mode conditional (fixed-tree verifiers); "
                f"marginal-mode formats: exitlaw, {', '.join(CHAIN_FORMATS)}"
            )
        check_chain_format(verifier_format, mode, chains_only=True)
        return adapt_chain_verifier(fn, verifier_format)
    if verifier_format not in FORMATS:
        raise ValueError(
            f"unknown verifier format {verifier_format!r}; formats: {', '.join(FORMATS + CHAIN_FORMATS)}"
        )
    names = ARGUMENTS[verifier_format]
    check_callable_as(fn, names, f"a {verifier_format}-format verifier", VerifierFormatError)
    cache: dict = {}

    def converted(tree: DraftTree, probs: np.ndarray):
        if cache.get("key") != (id(tree), id(probs)):
            cache.update(
                key=(id(tree), id(probs)),
                tree=tree,
                probs=probs,
                value=_convert(verifier_format, tree, probs),
            )
        return cache["value"]

    def adapted(tree: DraftTree, probs: np.ndarray, rng: np.random.Generator) -> tuple[int, int]:
        vocab = int(np.shape(probs)[1])
        return _CALLS[verifier_format](fn, tree, converted(tree, probs), rng, vocab)

    adapted.__name__ = f"{getattr(fn, '__name__', 'verifier')}[{verifier_format}]"
    return adapted


__all__ = [
    "FORMATS",
    "ARGUMENTS",
    "PAD",
    "VerifierFormatError",
    "adapt_verifier",
    "to_eagle",
    "from_eagle",
    "eagle_probs",
    "from_eagle_result",
    "to_sglang",
    "from_sglang",
    "from_sglang_result",
    "to_ddtree",
    "from_ddtree",
    "from_ddtree_result",
]
