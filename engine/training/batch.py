"""One ExitTrain batch: anchors -> drafter rows -> inference trees -> frozen-target edge probabilities.

For a training sequence ``x_0 .. x_{S-1}`` (a prompt and its target-generated
continuation) and anchors ``a_1 .. a_K``:

1. the frozen target runs causally over the whole sequence once (its K/V cache
   kept): hidden states of the drafter's layers and next-token logits ``[S, V]``;
2. the drafter sees, for anchor ``a``, the context ``x_<a`` (as key/value only) and
   the block ``[x_a, MASK x (D)]`` at positions ``a .. a + D``: all ``K`` blocks go in
   one forward with a block-diagonal mask (block ``k`` sees context columns ``< a_k``
   and its own block, non-causally), giving rows ``[K, D, V]``;
3. the *inference* builder (:func:`~exitlaw.engine.builders.single.build_ddtree`, same
   budget) builds each anchor's tree from the detached ``log_softmax`` rows;
4. the target scores every non-root node under its actual tree-parent context over
   the full context: one forward of all ``K`` trees' nodes against the cached
   sequence, node ``v`` of tree ``k`` at position ``a_k + depth(v)`` seeing cached
   positions ``<= a_k`` and its own ancestors-or-self (tree attention);
   ``a(u) = exp(z_par(u)[x_u] / T - logsumexp(z_par(u) / T))`` with the root's row
   ``z = `` the causal logits at ``a_k``;
5. for ``draft-opd`` the drafter also samples one chain per anchor
   (:mod:`~exitlaw.engine.training.draft_opd`), scored in the same forward as the trees.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from exitlaw.engine.builders.single import build_ddtree
from exitlaw.engine.decode.sampling_settings import filter_logits
from exitlaw.engine.models.attention_window import layer_masks, mask_to
from exitlaw.engine.models.dflash import DFlashDrafter
from exitlaw.engine.models.target import TargetModel
from exitlaw.engine.training.draft_opd import OPDChains, sample_chains
from exitlaw.engine.training.law import TreeBatch
from exitlaw.theory import DraftTree
from exitlaw.theory.sampling_settings import SamplingSettings, check_settings

UNFILTERED = SamplingSettings(1.0)  # the default scoring law: T_s = 1, no filter


def sample_anchors(
    seq_len: int, first_generated: int, count: int, rng: np.random.Generator
) -> np.ndarray:
    """Up to ``count`` distinct sorted anchors ``a`` with ``max(1, first_generated - 1) <= a <= seq_len - 2``.

    ``x_{a+1}`` is then a target-generated token and ``x_<a`` is non-empty context.
    """
    lo, hi = max(1, first_generated - 1), seq_len - 2
    if hi < lo:
        return np.zeros(0, dtype=np.int64)
    choices = np.arange(lo, hi + 1)
    take = min(count, choices.size)
    return np.sort(rng.choice(choices, size=take, replace=False)).astype(np.int64)


def block_targets(
    tokens: torch.Tensor, anchors: torch.Tensor, depth: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``targets [K, D]`` = ``x_{a+d}`` for ``d = 1..D`` and the mask of those inside the sequence."""
    idx = anchors[:, None] + torch.arange(1, depth + 1, device=anchors.device)[None]
    valid = idx < tokens.shape[0]
    return tokens[idx.clamp(max=tokens.shape[0] - 1)], valid


def drafter_rows(
    drafter: DFlashDrafter,
    target: TargetModel,
    tokens: torch.Tensor,
    hidden: torch.Tensor,
    anchors: torch.Tensor,
) -> torch.Tensor:
    """Draft logits ``[K, D, V]`` (``D = block_size - 1``) for all anchors in one drafter forward."""
    bs = drafter.block_size
    k, s = anchors.shape[0], tokens.shape[0]
    dev = hidden.device
    block = torch.full((k, bs), drafter.config.mask_token_id, dtype=torch.long, device=dev)
    block[:, 0] = tokens[anchors]
    emb = target.embed_tokens(block).reshape(1, k * bs, -1)
    ctx_pos = torch.arange(s, device=dev)[None]
    blk_pos = (anchors[:, None] + torch.arange(bs, device=dev)[None]).reshape(1, -1)
    owner = torch.arange(k, device=dev).repeat_interleave(bs)  # block of each query row
    ctx_vis = torch.arange(s, device=dev)[None, :] < anchors[owner][:, None]  # [K*bs, S]
    blk_vis = owner[:, None] == owner[None, :]  # [K*bs, K*bs]
    mask = torch.cat([ctx_vis, blk_vis], dim=1)[None, None]
    with target.mask_kernels(mask):
        h = drafter(emb, hidden[None].to(emb.dtype), ctx_pos, blk_pos, cache=None, attn_mask=mask)
    h = h.reshape(k, bs, -1)[:, 1:]
    return target.lm_head(h)


@torch.no_grad()
def build_trees(logits: torch.Tensor, roots: torch.Tensor, budget: int) -> list[DraftTree]:
    """The inference builder on the detached rows (one tree per anchor)."""
    logprobs = torch.log_softmax(logits.detach().float(), dim=-1)
    return [build_ddtree(logprobs[i], budget, int(roots[i]))[0] for i in range(logprobs.shape[0])]


def tree_scoring_mask(
    trees: list[DraftTree], anchors: torch.Tensor, seq_len: int, dtype: torch.dtype, windows=None
):
    """Queries, positions and the float additive mask ``[1, 1, Q, S + Q]`` of the tree-scoring forward.

    Returns ``(token [Q], position [Q], mask)``; tree ``k``'s node ``v >= 1`` is query
    row ``sum_{j<k} (N_j - 1) + v - 1``. With a sliding layer in ``windows`` the mask is
    ``{layer type: mask}`` (:func:`~exitlaw.engine.models.attention_window.layer_masks`;
    sequence column ``j`` at position ``j``).
    """
    dev = anchors.device
    sizes = [t.num_nodes - 1 for t in trees]
    q = sum(sizes)
    visible = torch.zeros(q, seq_len + q, dtype=torch.bool, device=dev)
    tok, pos = [], []
    off = 0
    for k, t in enumerate(trees):
        n = sizes[k]
        a = int(anchors[k])
        visible[off : off + n, : a + 1] = True
        anc = torch.as_tensor(np.array(t.ancestor_matrix[1:, 1:]), device=dev)
        visible[off : off + n, seq_len + off : seq_len + off + n] = anc
        tok.append(torch.as_tensor(np.array(t.token[1:]), device=dev))
        pos.append(a + torch.as_tensor(np.array(t.depth[1:]), device=dev))
        off += n
    tok = torch.cat(tok).long() if tok else torch.empty(0, dtype=torch.long, device=dev)
    pos = torch.cat(pos).long() if pos else torch.empty(0, dtype=torch.long, device=dev)
    key_pos = torch.cat([torch.arange(seq_len, device=dev), pos])
    return (
        tok,
        pos,
        layer_masks(visible[None], dtype, windows, query_pos=pos[None], key_pos=key_pos[None]),
    )


@torch.no_grad()
def _scoring_settings(settings: SamplingSettings) -> SamplingSettings:
    """``settings`` (a bare float is a ``TypeError``), refused when ``T_s`` is not > 0."""
    settings = check_settings(settings)
    if settings.temperature <= 0:
        raise ValueError(f"tree scoring needs a temperature > 0, got {settings.temperature}")
    return settings


def scoring_table(logits: torch.Tensor, settings: SamplingSettings) -> torch.Tensor:
    """``filter_logits(z) / T_s``: the scoring law's log-weights, so ``softmax`` of a row is the processed
    target at ``T_s`` (filtered tokens ``-inf``; with no filter, ``z / T_s`` as before)."""
    return filter_logits(logits, settings) / settings.temperature


@torch.no_grad()
def tree_logit_tables(
    target: TargetModel,
    cache,
    seq_logits: torch.Tensor,
    anchors: torch.Tensor,
    trees: list[DraftTree],
    settings: SamplingSettings = UNFILTERED,
) -> list[torch.Tensor]:
    """The target's next-token logits of every node divided by ``T``: ``[N_k, V]`` per tree (float32).

    ``settings``: the scoring :class:`~exitlaw.theory.SamplingSettings` (``T_s`` and filters; a bare
    float is a ``TypeError``): the rows are the processed target's (:func:`scoring_table`, filtered
    tokens ``-inf``).

    Row 0 is the root (the causal logits at ``a_k``), row ``v >= 1`` node ``v``'s
    tree-attention query row. One forward for all trees; ``cache`` holds the target's
    K/V of the whole sequence (length ``S``) and is cropped back to ``S`` afterwards.
    """
    settings = _scoring_settings(settings)
    seq_len = seq_logits.shape[0]
    if cache.get_seq_length() != seq_len:
        raise ValueError(
            f"cache holds {cache.get_seq_length()} positions, expected the sequence length {seq_len}"
        )
    tok, pos, mask = tree_scoring_mask(trees, anchors, seq_len, target.dtype, target.windows)
    rows = torch.empty(0, seq_logits.shape[1], device=seq_logits.device)
    if tok.numel():
        with target.mask_kernels(mask):
            out = target.model(
                input_ids=tok[None].to(target.device),
                position_ids=pos[None].to(target.device),
                attention_mask=mask_to(mask, target.device),
                cache=cache,
                use_cache=True,
            )
        rows = out.logits[0].float()
        cache.crop(-tok.numel())  # drop the tree entries again
    tables = []
    off = 0
    for k, t in enumerate(trees):
        n = t.num_nodes
        tables.append(
            scoring_table(
                torch.cat([seq_logits[int(anchors[k])][None].float(), rows[off : off + n - 1]]),
                settings,
            )
        )
        off += n - 1
    return tables


@torch.no_grad()
def windowed_tree_logit_tables(
    target: TargetModel,
    tokens: torch.Tensor,
    anchors: torch.Tensor,
    trees: list[DraftTree],
    window: int,
    settings: SamplingSettings = UNFILTERED,
) -> list[torch.Tensor]:
    """:func:`tree_logit_tables` as the authors' code scores trees: over only the last ``window`` context tokens.

    Per anchor ``a`` the target runs afresh over ``[tokens[a - W : a] | tokens[a] | tree nodes]`` (no
    cache): the window and the anchor causally, node ``v`` on the window, the anchor and its own
    ancestors. Positions are the sequence's own (``a - W .. a``, node ``v`` at ``a + depth(v)``); a
    window cut by the sequence start is left-padded with slots nothing attends to. Row 0 (the root)
    is the anchor's output of this forward, so no row sees a token before the window.
    """
    settings = _scoring_settings(settings)
    if window < 1:
        raise ValueError(f"the prefix window must be >= 1 token, got {window}")
    if not trees:
        return []
    dev = target.device
    k_trees = len(trees)
    n_max = max(t.num_nodes for t in trees) - 1
    length = window + 1 + n_max  # [W window slots | anchor | n_max node slots]
    ids = torch.zeros(k_trees, length, dtype=torch.long)
    pos = torch.zeros(k_trees, length, dtype=torch.long)
    visible = torch.zeros(k_trees, length, length, dtype=torch.bool)
    visible[:, torch.arange(length), torch.arange(length)] = (
        True  # padding slots see themselves only
    )
    causal = torch.ones(window + 1, window + 1, dtype=torch.bool).tril()
    seq = tokens.detach().cpu()
    for k, t in enumerate(trees):
        a = int(anchors[k])
        left = max(0, a - window)
        first = window - (a - left)  # first real slot of the window
        ids[k, first : window + 1] = seq[left : a + 1]
        pos[k, first : window + 1] = torch.arange(left, a + 1)
        visible[k, first : window + 1, first : window + 1] = causal[first:, first:]
        n = t.num_nodes - 1
        if n:
            rows = slice(window + 1, window + 1 + n)
            ids[k, rows] = torch.as_tensor(np.array(t.token[1:]))
            pos[k, rows] = a + torch.as_tensor(np.array(t.depth[1:]))
            visible[k, rows, first : window + 1] = True
            visible[k, rows, rows] = torch.as_tensor(np.array(t.ancestor_matrix[1:, 1:]))
    mask = layer_masks(
        visible.to(dev), target.dtype, target.windows, query_pos=pos.to(dev), key_pos=pos.to(dev)
    )
    with target.mask_kernels(mask):
        out = target.model(
            input_ids=ids.to(dev),
            position_ids=pos.to(dev),
            attention_mask=mask_to(mask, dev),
            use_cache=False,
        )
    logits = out.logits.float()
    return [
        scoring_table(logits[k, window : window + t.num_nodes], settings)
        for k, t in enumerate(trees)
    ]


def edge_probabilities(tree: DraftTree, table: torch.Tensor) -> np.ndarray:
    """``a(u) = p_par(u)(x_u)`` (float64, ``a(root) = 1``) from a tree's logit table ``[N, V]``.

    One normaliser per row and gathered logits: no per-node distribution is formed.
    """
    if tree.num_nodes == 1:
        return np.ones(1)
    par = torch.as_tensor(np.array(tree.parent[1:]), device=table.device)
    tok_u = torch.as_tensor(np.array(tree.token[1:]), device=table.device)
    log_a = table[par, tok_u] - torch.logsumexp(table, -1)[par]
    return np.concatenate([[1.0], torch.exp(log_a.double()).cpu().numpy()])


@torch.no_grad()
def score_trees(
    target: TargetModel,
    cache,
    seq_logits: torch.Tensor,
    anchors: torch.Tensor,
    trees: list[DraftTree],
    settings: SamplingSettings = UNFILTERED,
) -> list[np.ndarray]:
    """Edge probabilities ``a(u)`` of each tree (float64 arrays, ``a(root) = 1``); see :func:`tree_logit_tables`."""
    tables = tree_logit_tables(target, cache, seq_logits, anchors, trees, settings)
    return [edge_probabilities(t, table) for t, table in zip(trees, tables)]


@dataclass
class SequenceBatch:
    """Everything the loss needs for the anchors of a batch of sequences."""

    logits: torch.Tensor  # [K, D, V] drafter rows (differentiable)
    targets: torch.Tensor  # [K, D]
    target_valid: torch.Tensor  # [K, D]
    trees: TreeBatch | None  # None when trees are not scored
    edge: torch.Tensor | None  # [K, N] float64
    tokens_seen: int  # sequence tokens processed by the target
    opd: OPDChains | None = None  # the drafter's scored chains (draft-opd only)


def _pad_edges(edges: list[np.ndarray], n: int, device) -> torch.Tensor:
    out = np.zeros((len(edges), n))
    for i, e in enumerate(edges):
        out[i, : e.size] = e
    return torch.as_tensor(out, device=device)


def _scored_trees(
    target, cache, step, tokens, anchors, logits, *, budget, settings, chain_rng, prefix_window
):
    """One sequence's trees built from the drafter's ``logits`` at ``anchors``, with (``chain_rng``)
    one sampled chain per anchor, and the target's logit table of each, trees first (``step``: the target's
    prefill of ``cache``; ``prefix_window``: score over the last tokens only)."""
    trees = build_trees(logits, tokens[anchors], budget)
    chains = [] if chain_rng is None else sample_chains(logits, tokens[anchors], chain_rng)
    both = torch.cat([anchors, anchors]) if chains else anchors
    if prefix_window is not None:
        tables = windowed_tree_logit_tables(target, tokens, anchors, trees, prefix_window, settings)
    else:
        tables = tree_logit_tables(target, cache, step.logits, both, trees + chains, settings)
    return trees, tables, chains


def _opd_chains(chains: list, edges: list, rows: list, device) -> OPDChains:
    """The batch's sampled chains, their edge probabilities and target log-rows, padded to the
    longest chain."""
    n = max(c.num_nodes for c in chains)
    padded = torch.zeros(len(chains), n, rows[0].shape[-1], device=device)
    for i, r in enumerate(rows):
        padded[i, : r.shape[0]] = r
    return OPDChains(TreeBatch.from_trees(chains, device, n), _pad_edges(edges, n, device), padded)


def make_batch(
    drafter: DFlashDrafter,
    target: TargetModel,
    sequences: list[tuple[torch.Tensor, int]],
    anchors_per_seq: int,
    budget: int,
    rng: np.random.Generator,
    *,
    score: bool = True,
    settings: SamplingSettings = UNFILTERED,
    chain_rng: np.random.Generator | None = None,
    prefix_window: int | None = None,
) -> SequenceBatch | None:
    """Build one training batch from ``(tokens [S], first_generated)`` pairs (``None`` if no anchor fits).

    ``rng`` draws the anchors. ``chain_rng`` (draft-opd): the drafter also samples one
    chain per anchor from it (:func:`~exitlaw.engine.training.draft_opd.sample_chains`), scored in
    the same target forward as the trees, with full target rows kept for the chains only.
    ``prefix_window`` (the authors' code): trees are scored over only the last ``prefix_window``
    context tokens (:func:`windowed_tree_logit_tables`); ``None`` scores them over the whole context.
    """
    settings = check_settings(settings)
    if prefix_window is not None and chain_rng is not None:
        raise ValueError(
            "prefix_window scores trees only: it does not combine with draft-opd's sampled chains"
        )
    if chain_rng is not None and not score:
        raise ValueError("sampled chains are scored by the target: chain_rng needs score=True")
    d = drafter.block_size - 1
    all_logits, all_targets, all_valid, all_trees, all_edges = [], [], [], [], []
    all_chains, chain_edges, chain_rows = [], [], []
    seen = 0
    opts = dict(budget=budget, settings=settings, chain_rng=chain_rng, prefix_window=prefix_window)
    for tokens, first in sequences:
        tokens = tokens.to(target.device)
        anchors_np = sample_anchors(tokens.shape[0], first, anchors_per_seq, rng)
        if anchors_np.size == 0:
            continue
        anchors = torch.as_tensor(anchors_np, device=target.device)
        cache = target.new_cache()
        step = target.prefill(cache, tokens)
        seen += tokens.shape[0]
        logits = drafter_rows(drafter, target, tokens, step.hidden, anchors)
        targets, valid = block_targets(tokens, anchors, d)
        all_logits.append(logits)
        all_targets.append(targets)
        all_valid.append(valid)
        if not score:
            continue
        trees, tables, chains = _scored_trees(target, cache, step, tokens, anchors, logits, **opts)
        all_trees.extend(trees)
        all_edges.extend(edge_probabilities(t, tb) for t, tb in zip(trees, tables))
        for c, tb in zip(chains, tables[len(trees) :]):
            all_chains.append(c)
            chain_edges.append(edge_probabilities(c, tb))
            chain_rows.append(torch.log_softmax(tb, dim=-1))
    if not all_logits:
        return None
    tree_batch = edge = opd = None
    if score:
        n = max(t.num_nodes for t in all_trees)
        tree_batch = TreeBatch.from_trees(all_trees, target.device, n)
        edge = _pad_edges(all_edges, n, target.device)
    if all_chains:
        opd = _opd_chains(all_chains, chain_edges, chain_rows, target.device)
    return SequenceBatch(
        torch.cat(all_logits),
        torch.cat(all_targets),
        torch.cat(all_valid),
        tree_batch,
        edge,
        seen,
        opd,
    )


__all__ = [
    "sample_anchors",
    "block_targets",
    "drafter_rows",
    "build_trees",
    "tree_scoring_mask",
    "tree_logit_tables",
    "windowed_tree_logit_tables",
    "scoring_table",
    "edge_probabilities",
    "score_trees",
    "SequenceBatch",
    "make_batch",
]
