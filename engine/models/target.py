"""The target model: a Hugging Face causal LM driven with tree attention.

Cache convention (shared by the whole engine): the KV cache holds the committed
context *excluding* the last committed token. A round's tree has that token at
its root, at position ``start = cache length``; node ``v`` sits at position
``start + depth(v)`` and sees the whole context plus its ancestors-or-self
(docs/design.md §1.1). Row ``v`` of the tree logits is ``p_v`` before softmax.
After the verifier picks the exit, :meth:`TargetModel.commit` keeps the K/V of
root + accepted path nodes and drops the rest; the bonus token becomes the next
root.

Tested with transformers 5.24 and 5.25 (``pyproject.toml``: ``>=5.24,<6``; 5.23, 5.21, 5.17 and 5.0
fail the engine tests: before 5.24 the mask builder and the model forward take ``past_key_values=``,
and the plain forward silently ignores ``cache=`` (an empty cache, wrong rows: hence the version check
in :class:`TargetModel`); 5.17 and older also lack ``slice_logits_to_keep``): the forward
takes ``cache=`` (``past_key_values`` is deprecated), a 4D ``attention_mask`` is
passed through unchanged, ``hidden_states[0]`` is the embedding output and
``hidden_states[i + 1]`` the output of decoder layer ``i``, and a
``DynamicCache`` stores ``layers[i].keys/values`` as ``[1, heads, S, head_dim]``.

Sliding-window targets (Gemma-4): every cache layer keeps every position and the
window is applied in the masks, one per layer type (:mod:`.attention_window`); a
sliding layer's K/V then cost the whole context, not the last ``W - 1`` positions.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Sequence

import torch
import transformers
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.modules.module import _global_forward_hooks, _global_forward_pre_hooks
from transformers import DynamicCache
from transformers import cache_utils as _cache_utils

from exitlaw.engine.models.attention_window import (
    full_cache,
    is_windowed,
    layer_masks,
    layer_windows,
    mask_to,
)
from exitlaw.engine.models.lean_forward import LeanForward, lean_support

SUPPORTED_TRANSFORMERS = ((5, 24), (6, 0))  # [low, high): the engine suite fails on 5.21 and 5.17
# KV-sharing consumer layers hold nothing. Read without importing it by name, so that an untested
# release that lacks it (5.17, the GPU image's) fails at TargetModel with the version check's message,
# not at import.
_DummyLayer = getattr(_cache_utils, "DummyLayer", None)

# Attention kernels for forwards with a custom mask (tree verification, padded batches), where the
# exactness of the engine rests on them. "math": SDPA's math kernel on CUDA (the default); "auto":
# torch's own choice. Why math: on an H200 with torch 2.11, under torch's choice (memory-efficient or
# cuDNN: flash takes no custom mask; which one ran was not recorded) DDTree's T = 0 tokens differed
# from greedy AR in 4 of 128 prompt-budget runs, at a logit margin of 4.7 (no near-tie), and the math
# kernel alone made all 128 agree (paper_repro/results/gpu/README.md). Elsewhere (CPU) the choice is
# torch's. The drafter's masked forwards use the same kernels (they decide tau, not exactness).
MASKED_ATTENTION = ("math", "auto")
_MATH_MASKED_DEVICES = frozenset({"cuda"})


def masked_kernels(
    device: torch.device, setting: str = "math"
) -> contextlib.AbstractContextManager:
    """The SDPA kernels a forward with a custom mask on ``device`` may use: the math kernel alone on
    CUDA under ``"math"``, torch's choice otherwise (:data:`MASKED_ATTENTION`)."""
    if setting == "auto" or torch.device(device).type not in _MATH_MASKED_DEVICES:
        return contextlib.nullcontext()
    return sdpa_kernel(SDPBackend.MATH)


def check_transformers_version(version: str = transformers.__version__) -> None:
    """Raise ``RuntimeError`` unless ``version`` lies in the tested range ``[5.24, 6.0)``."""
    try:
        major, minor = (int(x) for x in version.split(".")[:2])
    except ValueError:
        raise RuntimeError(f"cannot parse the transformers version {version!r}") from None
    lo, hi = SUPPORTED_TRANSFORMERS
    if not lo <= (major, minor) < hi:
        raise RuntimeError(
            f"exitlaw.engine is tested with transformers >= {lo[0]}.{lo[1]}, < {hi[0]}.{hi[1]}; "
            f"found {version} (the cache and mask APIs differ outside that range)"
        )


def tree_attention_mask(
    ancestor: torch.Tensor,
    context_len: int,
    dtype: torch.dtype,
    *,
    depth: torch.Tensor | None = None,
    windows=None,
):
    """Float *additive* mask ``[1, 1, N, context_len + N]``: 0 where visible, ``finfo.min`` elsewhere.

    Context columns are fully visible; among tree nodes, ``v`` sees ``u`` iff
    ``ancestor[v, u]`` (ancestor-or-self). With a sliding layer in ``windows``
    (:func:`~exitlaw.engine.models.attention_window.layer_windows`) the result is
    ``{layer type: mask}``, node ``v`` at position ``context_len + depth[v]`` and
    context column ``j`` at position ``j`` (:func:`~exitlaw.engine.models.attention_window.layer_masks`).
    """
    n = ancestor.shape[0]
    if ancestor.shape != (n, n) or ancestor.dtype != torch.bool:
        raise ValueError(
            f"ancestor must be a bool [N, N] matrix, got {tuple(ancestor.shape)} {ancestor.dtype}"
        )
    dev = ancestor.device
    if not is_windowed(windows):
        return tree_mask_fast(ancestor, context_len, dtype)
    visible = torch.cat(
        [torch.ones(n, context_len, dtype=torch.bool, device=dev), ancestor], dim=1
    )[None]
    if depth is None or depth.shape != (n,):
        raise ValueError(f"a sliding-window tree mask needs depth [N={n}]")
    node_pos = context_len + depth.to(dev)
    key_pos = torch.cat([torch.arange(context_len, device=dev), node_pos])
    return layer_masks(visible, dtype, windows, query_pos=node_pos[None], key_pos=key_pos[None])


def tree_mask_fast(ancestor: torch.Tensor, context_len: int, dtype: torch.dtype) -> torch.Tensor:
    """The full-attention :func:`tree_attention_mask` written into one zero tensor: only the ``[N, N]``
    tree block is masked (no ``[N, context + N]`` bool copy). Same values as ``layer_masks`` of the
    concatenated visibility (its twin)."""
    n = ancestor.shape[0]
    mask = torch.zeros(1, 1, n, context_len + n, dtype=dtype, device=ancestor.device)
    mask[0, 0, :, context_len:].masked_fill_(~ancestor, torch.finfo(dtype).min)
    return mask


def batch_attention_mask(
    visible: torch.Tensor,
    context_len: Sequence[int],
    past: int,
    dtype: torch.dtype,
    *,
    check_diagonal: bool = True,
    query_pos: torch.Tensor | None = None,
    windows=None,
):
    """Float additive mask ``[B, 1, Q, past + Q]`` for ``B`` rows with per-row committed lengths.

    Row layout ("per-row offsets", see :func:`compact_rows_`): row ``b`` holds its
    committed K/V at cache columns ``0 .. context_len[b] - 1``; columns
    ``context_len[b] .. past - 1`` are stale and invisible; the ``Q`` new queries
    sit at columns ``past .. past + Q - 1`` and see each other by ``visible [B, Q, Q]``
    (bool; the ancestor-or-self matrix of a padded tree, or causal for a prefill).
    ``context_len`` is a host sequence (no device sync). A query row must see at
    least itself, so no softmax row is empty; ``check_diagonal=False`` skips that
    check (one host sync) for callers whose ``visible`` guarantees it by construction
    (:class:`~exitlaw.engine.decode.batch_tree.BatchTree` pads with the identity).
    With a sliding layer in ``windows`` the result is ``{layer type: mask}`` and
    ``query_pos [B, Q]`` (the queries' positions) is required; committed column ``j``
    is at position ``j`` (:func:`~exitlaw.engine.models.attention_window.layer_masks`).
    """
    b, q, q2 = visible.shape
    if q != q2 or visible.dtype != torch.bool:
        raise ValueError(
            f"visible must be a bool [B, Q, Q] tensor, got {tuple(visible.shape)} {visible.dtype}"
        )
    lengths = [int(x) for x in context_len]
    if len(lengths) != b or any(not 0 <= x <= past for x in lengths):
        raise ValueError(f"context_len must give B={b} lengths in [0, past={past}], got {lengths}")
    if check_diagonal and not bool(visible.diagonal(dim1=1, dim2=2).all()):
        raise ValueError("every query must see itself (a row of visible has a False diagonal)")
    dev = visible.device
    cols = torch.arange(past, device=dev)
    limit = torch.tensor(lengths, device=dev)
    ctx_ok = (cols[None, :] < limit[:, None])[:, None, :].expand(b, q, past)  # [B, Q, past]
    ok = torch.cat([ctx_ok, visible], dim=-1)  # [B, Q, past + Q]
    if not is_windowed(windows):
        return layer_masks(ok, dtype)
    if query_pos is None:
        raise ValueError("a sliding-window batch mask needs query_pos [B, Q]")
    query_pos = query_pos.to(dev)
    key_pos = torch.cat([cols[None].expand(b, past), query_pos], dim=-1)  # [B, past + Q]
    return layer_masks(ok, dtype, windows, query_pos=query_pos, key_pos=key_pos)


def compact_rows_(tensor: torch.Tensor, base: int, dest: torch.Tensor, src: torch.Tensor) -> None:
    """Per-row KV commit in place: ``tensor[b, :, dest[b] + j] = tensor[b, :, base + src[b, j]]``.

    ``tensor [B, heads, T, D]`` (a cache layer's keys or values), ``dest [B]`` the
    row's committed length, ``src [B, L]`` offsets (tree node ids) of the entries to
    keep, past ``base`` (the cache length before the forward). All ``L`` columns are
    written for every row (a row keeping fewer pads ``src``; its extra writes land
    past its new length, in the stale region); the gather happens before the scatter,
    so overlapping ranges are safe. ``dest[b] + L <= T`` must hold.
    """
    bsz, _, total, _ = tensor.shape
    if src.ndim != 2 or src.shape[0] != bsz or dest.shape != (bsz,):
        raise ValueError(
            f"src must be [B={bsz}, L] and dest [B={bsz}], got {tuple(src.shape)}, {tuple(dest.shape)}"
        )
    if src.shape[1] == 0:
        return
    dev = tensor.device
    rows = torch.arange(bsz, device=dev)[:, None]  # [B, 1]
    to = dest.to(dev)[:, None] + torch.arange(src.shape[1], device=dev)[None]  # [B, L]
    view = tensor.transpose(1, 2)  # [B, T, heads, D], a view
    view[rows, to] = view[rows, base + src.to(dev)]


def _kv_layers(cache: DynamicCache):
    """``(index, layer)`` of the cache layers that hold K/V; a layer that cannot be compacted raises.

    ``DummyLayer`` (a KV-sharing consumer, holding nothing) is skipped; a rolling
    sliding-window layer keeps only its last ``W - 1`` positions, so it cannot be.
    """
    for i, layer in enumerate(cache.layers):
        if _DummyLayer is not None and isinstance(layer, _DummyLayer):
            continue
        if getattr(layer, "is_sliding", False) or getattr(layer, "keys", None) is None:
            raise ValueError(
                f"cache layer {i} ({type(layer).__name__}) cannot be compacted; build the cache with "
                "TargetModel.new_cache (every layer keeps every position)"
            )
        yield i, layer


class TreeMaskBuffer:
    """:func:`tree_mask_fast` without a fresh ``[N, context + N]`` tensor per round: one zero buffer,
    grown on demand; each :meth:`write` re-zeroes the previous tree block and masks the new one, and
    returns a view ``[1, 1, N, context + N]`` (valid until the next write; the same values as
    :func:`tree_attention_mask`). For forwards without autograd only (a view that a graph saved would
    be overwritten)."""

    def __init__(self):
        self.buf: torch.Tensor | None = None
        self.last: tuple[int, int] | None = None  # (rows, first column) of the masked tree block

    def write(self, ancestor: torch.Tensor, context_len: int, dtype: torch.dtype) -> torch.Tensor:
        n = ancestor.shape[0]
        if ancestor.shape != (n, n) or ancestor.dtype != torch.bool:
            raise ValueError(
                f"ancestor must be a bool [N, N] matrix, got {tuple(ancestor.shape)} {ancestor.dtype}"
            )
        cols = context_len + n
        buf = self.buf
        if (
            buf is None
            or buf.dtype != dtype
            or buf.device != ancestor.device
            or buf.shape[2] < n
            or buf.shape[3] < cols
        ):
            # a normal tensor: writable in and out of inference mode
            with torch.inference_mode(False):
                rows = max(n, 0 if buf is None else buf.shape[2])
                buf = self.buf = torch.zeros(
                    1, 1, rows, max(2 * cols, 256), dtype=dtype, device=ancestor.device
                )
            self.last = None
        elif self.last is not None:
            r, c = self.last
            buf[0, 0, :r, c : c + r].zero_()
        buf[0, 0, :n, context_len:cols].masked_fill_(~ancestor, torch.finfo(dtype).min)
        self.last = (n, context_len)
        return buf[:, :, :n, :cols]


@dataclass
class TargetStep:
    """One target forward: ``logits [S, V]`` (float32) and the selected layers' hidden states ``[S, L*H]``."""

    logits: torch.Tensor
    hidden: torch.Tensor | None


class TargetModel:
    """A causal LM plus the hidden-state layers a drafter conditions on.

    ``layer_ids`` index decoder layers (0-based), as in DFlash's
    ``target_layer_ids``; the context feature is their outputs concatenated.
    Wrap the model on its final device and dtype: its device, dtype, vocabulary size and
    embedding / output modules are read once here (the decode loop reads them every round).

    ``lean=True`` (default) runs forwards without autograd through
    :class:`~exitlaw.engine.models.lean_forward.LeanForward` where it covers the model (same
    operations as the transformers forward, bit-identical, without its per-module overhead);
    ``lean=False``, forwards with autograd, a model in training mode and uncovered models take the
    transformers forward. :attr:`lean_reason` says why the lean path is off. Hooks: a hook on any
    submodule when wrapped, or later on the model itself or globally (``register_module_forward_hook``),
    turns the lean path off; a hook added to a *submodule after wrapping* is not seen (the lean forward
    does not call submodules), so wrap after registering it, or pass ``lean=False``.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        layer_ids: Sequence[int] = (),
        *,
        lean: bool = True,
        masked_attention: str = "math",
    ):
        check_transformers_version()
        if masked_attention not in MASKED_ATTENTION:
            raise ValueError(
                f"masked_attention must be one of {MASKED_ATTENTION}, got {masked_attention!r}"
            )
        self.masked_attention = masked_attention
        self.model = model.eval()
        num_layers = model.config.num_hidden_layers
        bad = [i for i in layer_ids if not 0 <= i < num_layers]
        if bad:
            raise ValueError(
                f"hidden-state layer ids {bad} are outside the target's {num_layers} decoder layers"
            )
        self.layer_ids = list(layer_ids)
        self.windows = layer_windows(model.config)  # {layer type: sliding window or None}
        self._masks = TreeMaskBuffer()
        self.lean_reason = "lean=False" if not lean else lean_support(model)
        self._lean = LeanForward(model) if self.lean_reason is None else None
        # read once: each is a parameter walk or a config lookup (~10 us), several times per round
        self._constants = (
            model.device,
            model.dtype,
            int(model.config.vocab_size),
            model.get_input_embeddings(),
            model.get_output_embeddings(),
        )

    @property
    def device(self) -> torch.device:
        return self._constants[0]

    @property
    def dtype(self) -> torch.dtype:
        return self._constants[1]

    @property
    def vocab_size(self) -> int:
        return self._constants[2]

    @property
    def embed_tokens(self) -> torch.nn.Module:
        return self._constants[3]

    @property
    def lm_head(self) -> torch.nn.Module:
        return self._constants[4]

    def new_cache(self) -> DynamicCache:
        """An empty cache whose layers keep every position (sliding layers included, see
        :func:`~exitlaw.engine.models.attention_window.full_cache`), so :meth:`commit` can compact it."""
        return full_cache()

    # ----- forwards ---------------------------------------------------------
    def mask_kernels(self, attention_mask) -> contextlib.AbstractContextManager:
        """The SDPA kernels a forward with ``attention_mask`` may use (see :data:`MASKED_ATTENTION`);
        the drafter's masked forwards beside this target use the same (:func:`masked_kernels`)."""
        if attention_mask is None:
            return contextlib.nullcontext()
        return masked_kernels(self.device, self.masked_attention)

    def _lean_now(self) -> LeanForward | None:
        """The lean forward when this call may take it: covered model, no autograd, eval mode, no hook on
        the model itself (hooks found on submodules when wrapped turn the lean path off for good)."""
        m = self.model
        if (
            self._lean is None
            or torch.is_grad_enabled()
            or m.training
            or m._forward_hooks
            or m._forward_pre_hooks
        ):
            return None
        # torch's module-wide hooks: the model runs them
        if _global_forward_hooks or _global_forward_pre_hooks:
            return None
        return self._lean

    def _run(
        self, cache, input_ids, position_ids, attention_mask, logits_to_keep: int = 0
    ) -> TargetStep:
        with self.mask_kernels(attention_mask):
            return self._run_forward(cache, input_ids, position_ids, attention_mask, logits_to_keep)

    def _run_forward(
        self, cache, input_ids, position_ids, attention_mask, logits_to_keep: int = 0
    ) -> TargetStep:
        want_hidden = bool(self.layer_ids)
        lean = self._lean_now()
        if lean is not None:
            logits, hid = lean(
                input_ids[None],
                position_ids[None],
                attention_mask,
                cache,
                self.layer_ids,
                logits_to_keep,
            )
            hidden = torch.cat([hid[i][0] for i in self.layer_ids], dim=-1) if want_hidden else None
            return TargetStep(logits=logits[0].float(), hidden=hidden)
        out = self.model(
            input_ids=input_ids[None],
            position_ids=position_ids[None],
            attention_mask=attention_mask,
            cache=cache,
            use_cache=True,
            output_hidden_states=want_hidden,
            logits_to_keep=logits_to_keep,
        )
        hidden = None
        if want_hidden:
            hidden = torch.cat([out.hidden_states[i + 1][0] for i in self.layer_ids], dim=-1)
        return TargetStep(logits=out.logits[0].float(), hidden=hidden)

    @torch.no_grad()
    def forward_rows(
        self,
        cache: DynamicCache,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        logits_at: torch.Tensor | None = None,
    ) -> TargetStep:
        """Batched forward: ``input_ids, position_ids [B, Q]``, a float mask ``[B, 1, Q, past + Q]``
        (:func:`batch_attention_mask`; ``{layer type: mask}`` for a sliding-window target). Appends ``Q``
        columns to every cache row; returns logits ``[B, Q, V]`` (float32; ``[B, K, V]`` at the ``K``
        query columns ``logits_at`` only, sparing ``[B, Q, V]`` on long prompts) and hidden states
        ``[B, Q, L*H]``."""
        with self.mask_kernels(attention_mask):
            return self._forward_rows(cache, input_ids, position_ids, attention_mask, logits_at)

    def _forward_rows(
        self, cache, input_ids, position_ids, attention_mask, logits_at
    ) -> TargetStep:
        want_hidden = bool(self.layer_ids)
        lean = self._lean_now()
        if lean is not None:
            logits, hid = lean(
                input_ids.to(self.device),
                position_ids.to(self.device),
                mask_to(attention_mask, self.device),
                cache,
                self.layer_ids,
                0 if logits_at is None else logits_at.to(self.device),
            )
            hidden = torch.cat([hid[i] for i in self.layer_ids], dim=-1) if want_hidden else None
            return TargetStep(logits=logits.float(), hidden=hidden)
        keep = {} if logits_at is None else {"logits_to_keep": logits_at.to(self.device)}
        out = self.model(
            input_ids=input_ids.to(self.device),
            position_ids=position_ids.to(self.device),
            attention_mask=mask_to(attention_mask, self.device),
            cache=cache,
            use_cache=True,
            output_hidden_states=want_hidden,
            **keep,
        )
        hidden = None
        if want_hidden:
            hidden = torch.cat([out.hidden_states[i + 1] for i in self.layer_ids], dim=-1)
        return TargetStep(logits=out.logits.float(), hidden=hidden)

    @torch.no_grad()
    def prefill(
        self, cache: DynamicCache, input_ids: torch.Tensor, *, all_logits: bool = True
    ) -> TargetStep:
        """Append ``input_ids [S]`` to ``cache`` with causal attention; rows are next-token logits.

        The model builds its own causal (and, for sliding layers, windowed) masks: the
        cache's layers are all full and contiguous, so cache column = position.

        ``all_logits=False`` keeps only the last row (``[1, V]``), sparing an
        ``[S, V]`` float32 copy on long prompts; hidden states are always ``[S, L*H]``.
        """
        start = cache.get_seq_length()
        if input_ids.numel() == 0:
            h = len(self.layer_ids) * self.model.config.hidden_size
            return TargetStep(
                torch.empty(0, self.vocab_size, device=self.device),
                torch.empty(0, h, device=self.device, dtype=self.dtype) if self.layer_ids else None,
            )
        pos = torch.arange(start, start + input_ids.numel(), device=self.device)
        return self._run(
            cache, input_ids.to(self.device), pos, None, logits_to_keep=0 if all_logits else 1
        )

    def decode(self, cache: DynamicCache, token: int) -> torch.Tensor:
        """Autoregressive baseline step: feed ``token`` at position ``cache length``; returns logits ``[V]``."""
        if torch.is_grad_enabled():  # no context switch per step inside generate's inference mode
            with torch.no_grad():
                return self.decode(cache, token)
        start = cache.get_seq_length()
        ids = torch.tensor([[token, start]], device=self.device)  # token and position in one tensor
        lean = self._lean_now()
        if lean is not None:
            return lean(ids[:, :1], ids[:, 1:], None, cache)[0][0, -1].float()
        out = self.model(input_ids=ids[:, :1], position_ids=ids[:, 1:], cache=cache, use_cache=True)
        return out.logits[0, -1].float()

    def verify_tree(
        self,
        cache: DynamicCache,
        token: torch.Tensor,
        depth: torch.Tensor,
        ancestor: torch.Tensor,
        *,
        path: bool = False,
    ) -> TargetStep:
        """One tree-attention forward over the ``N`` tree nodes (root first).

        ``token [N]`` (token[0] = last committed token), ``depth [N]``,
        ``ancestor [N, N]`` bool ancestor-or-self. Appends ``N`` K/V entries to
        ``cache``; call :meth:`commit` afterwards. Returns logits ``[N, V]``
        (row ``v`` is ``p_v`` before softmax) and hidden states ``[N, L*H]``.

        ``path=True`` says the tree is one path (node ``i`` at depth ``i``, as a DFlash chain): its
        ancestor mask is then the causal mask, so the model's own causal path runs (no custom mask;
        same attention pattern, twin of the tree-mask forward). Runs without autograd.
        """
        if torch.is_grad_enabled():
            with torch.no_grad():
                return self.verify_tree(cache, token, depth, ancestor, path=path)
        if path:
            n = token.shape[0]
            start = cache.get_seq_length()
            pos = torch.arange(start, start + n, device=self.device)
            return self._run(cache, token.to(self.device), pos, None)
        return self.tree_forward(cache, token, depth, ancestor)

    def tree_forward(
        self, cache: DynamicCache, token: torch.Tensor, depth: torch.Tensor, ancestor: torch.Tensor
    ) -> TargetStep:
        """:meth:`verify_tree` without ``no_grad`` (ExitTrain scores trees with a frozen target)."""
        start = cache.get_seq_length()
        n = token.shape[0]
        if depth.shape != (n,) or int(depth[0]) != 0:
            raise ValueError(f"depth must have shape ({n},) with depth[0] = 0 (the root)")
        if torch.is_grad_enabled() or is_windowed(self.windows):
            mask = tree_attention_mask(
                ancestor.to(self.device),
                start,
                self.dtype,
                depth=depth.to(self.device),
                windows=self.windows,
            )
        else:  # decoding: the same mask, written into a reused buffer (nothing keeps it past the forward)
            mask = self._masks.write(ancestor.to(self.device), start, self.dtype)
        return self._run(cache, token.to(self.device), (start + depth).to(self.device), mask)

    # ----- cache commit -----------------------------------------------------
    @staticmethod
    def commit(
        cache: DynamicCache,
        start: int,
        path_nodes: torch.Tensor | Sequence[int],
        index: torch.Tensor | None = None,
    ) -> None:
        """Compact ``cache`` in place after a tree forward that began at ``start``.

        Keeps the K/V of ``path_nodes`` (root first, node ids into the tree) at
        positions ``start .. start + len(path) - 1`` and drops every other tree
        entry, so the cache length becomes ``start + len(path)``. ``index``: the same
        path already on the cache's device (e.g. :meth:`DeviceTree.path_index`), so the
        gather needs no host-to-device copy; without it one is made from ``path_nodes``.
        """
        if isinstance(path_nodes, torch.Tensor):
            if path_nodes.ndim != 1:
                raise ValueError(
                    f"path_nodes must be one root path, got shape {tuple(path_nodes.shape)}"
                )
            path_nodes = path_nodes.tolist()
        nodes = [int(x) for x in path_nodes]
        if not nodes or nodes[0] != 0:
            raise ValueError(f"path_nodes must start at the root node 0, got {nodes}")
        keep, top = len(nodes), max(nodes)
        if index is not None and tuple(index.shape) != (keep,):
            raise ValueError(
                f"index must hold the {keep} path nodes, got shape {tuple(index.shape)}"
            )
        # the kept entries already sit at start .. start + keep - 1
        in_place = nodes == list(range(keep))
        on_device: dict[torch.device, torch.Tensor] = {}
        if index is not None:
            on_device[index.device] = index
        for i, layer in _kv_layers(cache):
            total = layer.keys.shape[-2]
            if start + top >= total:
                raise ValueError(
                    f"path node {top} is beyond the {total - start} tree entries of cache layer {i}"
                )
            if not in_place:
                dev = layer.keys.device
                if dev not in on_device:
                    on_device[dev] = torch.tensor(nodes, dtype=torch.long, device=dev)
                # gather first (a copy), then write: overlap is safe
                for t in (layer.keys, layer.values):
                    t.narrow(-2, start, keep).copy_(
                        t.narrow(-2, start, total - start).index_select(-2, on_device[dev])
                    )
            drop = total - (start + keep)
            if drop:
                layer.crop(-drop)

    @staticmethod
    def commit_rows(
        cache: DynamicCache, base: int, lengths: torch.Tensor, src: torch.Tensor, keep: torch.Tensor
    ) -> torch.Tensor:
        """Batched :meth:`commit` under per-row offsets (:func:`compact_rows_`).

        After a forward that appended ``Q`` columns past ``base``, row ``b`` keeps
        ``keep[b]`` of them, ``src[b, :keep[b]]`` (node ids), at columns
        ``lengths[b] ..``; the cache is then cropped to the longest row. Returns the
        new lengths ``[B]`` (a row with ``keep[b] = 0`` is untouched below its length).
        """
        new = lengths + keep
        longest = int(new.max()) if new.numel() else 0
        for i, layer in _kv_layers(cache):
            total = layer.keys.shape[-2]
            if src.numel() and base + int(src.max()) >= total:
                raise ValueError(
                    f"kept column {int(src.max())} is beyond the {total - base} new entries of cache layer {i}"
                )
            compact_rows_(layer.keys, base, lengths, src)
            compact_rows_(layer.values, base, lengths, src)
            drop = total - longest
            if drop:
                layer.crop(-drop)
        return new


__all__ = [
    "TargetModel",
    "TargetStep",
    "tree_attention_mask",
    "tree_mask_fast",
    "TreeMaskBuffer",
    "batch_attention_mask",
    "compact_rows_",
    "masked_kernels",
    "MASKED_ATTENTION",
    "check_transformers_version",
    "SUPPORTED_TRANSFORMERS",
]
