"""Generation: autoregressive baseline, DFlash chain and DDTree with any verifier.

A speculative round is five functions, each testable alone and timed from the
outside by a :class:`~exitlaw.engine.decode.timing.StageTimer`:

    draft   -- drafter rows ``log q_d`` for depths 1..D         (:func:`draft_stage`)
    build   -- a DraftTree from the rows (chain or DDTree)      (:func:`build_stage`)
    verify  -- one target tree-attention forward, logits [N, V] (:func:`verify_forward_stage`)
    decide  -- a verifier picks (exit, bonus)                   (:func:`decide_stage`)
    commit  -- compact the target KV cache, advance the state   (:func:`commit_stage`)

Output block of a round = the exit node's path tokens, then the bonus (length
``depth(exit) + 1``, docs/design.md §1.2). Cache convention: see
:mod:`exitlaw.engine.models.target`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from exitlaw.engine.builders import BUILDERS
from exitlaw.engine.decode.device_tree import DeviceTree, to_device_tree
from exitlaw.engine.decode.dispatch import DISPATCH, verify
from exitlaw.engine.decode.dispatch import KINDS as VERIFIER_KINDS
from exitlaw.engine.decode.sampling_settings import filter_logits, processed_draft_logprobs
from exitlaw.engine.decode.timing import NullTimer, StageTimer
from exitlaw.engine.decode.verifiers import VerifierGenerators, VerifyResult
from exitlaw.engine.models.dflash import DFlashDrafter, DraftCache
from exitlaw.engine.models.target import TargetModel, TargetStep
from exitlaw.theory import DraftTree, TraceRound, check_temperature
from exitlaw.theory.registry import method as registry_method
from exitlaw.theory.registry import method_names
from exitlaw.theory.sampling_settings import SamplingSettings, check_settings

METHODS = method_names()


GREEDY = SamplingSettings(0.0)


@dataclass(frozen=True)
class DecodeConfig:
    """What to run: ``method`` in ar|chain|ddtree; ``verifier`` in greedy|predraw|residual|tev.

    ``settings`` (:class:`~exitlaw.theory.SamplingSettings`, default greedy): the temperature and
    the filters that make the target law the processed one every verifier uses.
    """

    method: str = "ddtree"
    verifier: str = "tev"
    budget: int = 64
    settings: SamplingSettings = GREEDY
    max_new_tokens: int = 64
    stop_tokens: tuple[int, ...] = ()
    seed: int = 0

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; choose one of {', '.join(METHODS)}")
        if self.verifier not in VERIFIER_KINDS:
            raise ValueError(
                f"unknown verifier {self.verifier!r}; choose one of {', '.join(VERIFIER_KINDS)}"
            )
        check_settings(self.settings)
        check_temperature(self.temperature, allow_zero=True)
        if self.budget < 1 or self.max_new_tokens < 1:
            raise ValueError(
                f"budget and max_new_tokens must be >= 1, got {self.budget}, {self.max_new_tokens}"
            )

    @property
    def temperature(self) -> float:
        return self.settings.temperature


class Generators:
    """Three independent streams: ``draft``, and the verifier's ``acceptance`` and ``bonus``.

    The verifier pair comes from ``SeedSequence(seed).spawn(2)`` (see
    :class:`VerifierGenerators`); the draft stream from spawn key 2 of the same seed.
    """

    def __init__(self, seed: int, device: torch.device | str = "cpu"):
        self.verifier = VerifierGenerators(seed, device)
        draft_seed = int(
            np.random.SeedSequence(int(seed), spawn_key=(2,)).generate_state(1, np.uint64)[0]
            >> np.uint64(1)
        )
        self.draft = torch.Generator(device=torch.device(device)).manual_seed(draft_seed)


def exponential_race(
    logits: torch.Tensor, temperature: float, gen: torch.Generator
) -> torch.Tensor:
    """Per row (last dim), one draw from ``softmax(logits / T)``: ``argmax_y z_y - log E_y``, ``E_y ~ Exp(1)``
    in float64 (the Gumbel-max trick). A ``-inf`` logit (probability 0) never wins, also when its
    exponential is exactly 0 (``-inf - log 0`` would be NaN, and argmax takes a NaN as the maximum)."""
    z = logits.to(torch.float64) / temperature
    e = torch.empty_like(z).exponential_(generator=gen)
    return torch.where(torch.isneginf(z), z, z - e.log()).argmax(-1)


def sample_token(logits: torch.Tensor, settings: SamplingSettings, gen: torch.Generator) -> int:
    """``argmax`` at T = 0, else one draw from the processed row ``softmax(filter_logits(logits) / T)``
    (:func:`exponential_race`) under ``settings`` (:class:`~exitlaw.theory.SamplingSettings`)."""
    settings = check_settings(settings)
    if settings.greedy:
        return int(logits.argmax())
    return int(exponential_race(filter_logits(logits, settings), settings.temperature, gen))


@dataclass
class DecodeState:
    """Everything that carries over between rounds of one sequence."""

    target_cache: object
    draft_cache: DraftCache | None
    start: int  # target cache length = position of the root
    root: int  # last committed token (not yet in the target cache)
    pending_hidden: torch.Tensor | None  # target hidden rows of positions the drafter has not seen
    tokens: list[int] = field(default_factory=list)  # generated tokens


@dataclass
class RoundRecord:
    """What a round saw and decided (read by :func:`trace_round`; nothing here forces a host sync)."""

    dtree: DeviceTree
    result: VerifyResult
    logits: torch.Tensor  # [N, V] target tree logits

    @property
    def tree(self) -> DraftTree:
        return self.dtree.tree

    @property
    def block_length(self) -> int:
        return len(self.result.path_nodes)


@dataclass
class GenerationResult:
    tokens: list[int]
    block_lengths: list[int]  # per round (AR: all ones); the prefill's first token is in no round
    decode_seconds: float  # sum of the timed per-round stages (prefill and tracing excluded)
    stages: dict[str, dict[str, float]]

    @property
    def tau(self) -> float:
        return float(np.mean(self.block_lengths)) if self.block_lengths else 0.0

    @property
    def decode_tokens(self) -> int:
        """Tokens produced by the timed rounds: all but the prefill's first token (per-token rates divide
        ``decode_seconds`` by this, as time-per-output-token does)."""
        return max(len(self.tokens) - 1, 0)


# ----------------------------------------------------------------- stages
def prefill_stage(
    target: TargetModel,
    drafter: DFlashDrafter | None,
    prompt: Sequence[int],
    settings: SamplingSettings,
    gen: torch.Generator,
) -> DecodeState:
    """Prefill the whole prompt and draw the first token from its last row (:func:`sample_token` under
    ``settings`` with ``gen``, the bonus stream); that token is the first root and the first generated
    token, so the first round drafts the second (as DDTree's and vLLM's prefill do)."""
    if len(prompt) < 1:
        raise ValueError("the prompt must hold at least one token")
    cache = target.new_cache()
    step = target.prefill(
        cache, torch.tensor(list(prompt), dtype=torch.long, device=target.device), all_logits=False
    )
    first = sample_token(step.logits[-1], settings, gen)
    return DecodeState(
        target_cache=cache,
        draft_cache=drafter.new_cache() if drafter is not None else None,
        start=len(prompt),
        root=first,
        pending_hidden=step.hidden,
    )


def draft_stage(state: DecodeState, target: TargetModel, drafter: DFlashDrafter) -> torch.Tensor:
    """Per-depth draft log-probabilities ``[block_size - 1, V]``; feeds the pending context to the draft cache."""
    rows = drafter.draft_logprobs(
        target.embed_tokens,
        target.lm_head,
        state.root,
        state.pending_hidden,
        state.start,
        state.draft_cache,
    )
    state.pending_hidden = state.pending_hidden[:0]
    return rows


def build_stage(draft_logprobs: torch.Tensor, cfg: DecodeConfig, root: int, device) -> DeviceTree:
    """Chain (top-1 per depth) or DDTree best-first with ``cfg.budget`` nodes, moved to ``device``.

    With a filter on, the tree is built from the drafter's rows processed with the same settings
    (:func:`~exitlaw.engine.decode.sampling_settings.processed_draft_logprobs`); the verifiers do
    not read ``q``, so the law is the processed target's block law for any tree.
    """
    draft_logprobs = processed_draft_logprobs(draft_logprobs, cfg.settings)
    build = BUILDERS[registry_method(cfg.method).builder]  # chain or ddtree
    tree, logq = build(draft_logprobs, cfg.budget, root)
    return to_device_tree(tree, device, logq, parts=tree_parts(cfg), cache_shapes=True)


def tree_parts(cfg: DecodeConfig) -> str:
    """What the round's verifier reads of the device tree at T > 0 (its dispatch entry's ``tree``, a
    registry fact): TEV reads every tensor (``"all"``); greedy, predraw and residual walk the host
    tree (``"walk"``: no TEV matrices). At T = 0 every verifier is the greedy walk."""
    return DISPATCH[cfg.verifier].tree if cfg.temperature > 0 else "walk"


def verify_forward_stage(state: DecodeState, target: TargetModel, dtree: DeviceTree) -> TargetStep:
    parent = dtree.tree.parent  # one path (a chain): the causal forward is its twin
    path = bool(np.array_equal(parent, np.arange(-1, parent.size - 1)))
    return target.verify_tree(
        state.target_cache, dtree.token, dtree.depth, dtree.ancestor, path=path
    )


def decide_stage(
    cfg: DecodeConfig, dtree: DeviceTree, logits: torch.Tensor, gens: Generators
) -> VerifyResult:
    return verify(cfg.verifier, dtree, logits, cfg.settings, gens.verifier)


def commit_stage(
    state: DecodeState,
    target: TargetModel,
    dtree: DeviceTree,
    step: TargetStep,
    result: VerifyResult,
) -> list[int]:
    """Keep root + accepted nodes in the KV cache; returns the round's output block."""
    path = result.path_nodes
    index = None  # the path as a device view (no host-to-device copy) when the tree holds it
    if dtree.paths is not None and list(dtree.tree.path_nodes(result.exit_node)) == list(path):
        index = dtree.path_index(result.exit_node)
    target.commit(state.target_cache, state.start, path, index)
    if step.hidden is not None:
        on = index is not None and index.device == step.hidden.device
        idx = index if on else torch.as_tensor(path, device=step.hidden.device)
        state.pending_hidden = torch.cat([state.pending_hidden, step.hidden.index_select(0, idx)])
    block = [int(t) for t in dtree.tree.token[path[1:]]] + [int(result.bonus)]
    state.start += len(path)
    state.root = int(result.bonus)
    return block


# ----------------------------------------------------------------- loops
def _append_block(tokens: list[int], block: list[int], cfg: DecodeConfig) -> bool:
    """Append up to the budget; returns True once a stop token or ``max_new_tokens`` is reached."""
    for t in block:
        tokens.append(t)
        if t in cfg.stop_tokens or len(tokens) >= cfg.max_new_tokens:
            return True
    return False


def _first_token(state: DecodeState, cfg: DecodeConfig, on_block) -> bool:
    """Emit the prefill's token (the first root) as a block of its own; True when it ends the generation."""
    done = _append_block(state.tokens, [state.root], cfg)
    if on_block is not None:
        on_block([state.root])
    return done


def speculative_round(
    state: DecodeState,
    target: TargetModel,
    drafter: DFlashDrafter,
    cfg: DecodeConfig,
    gens: Generators,
    timer=NullTimer(),
    decide=None,
) -> tuple[list[int], RoundRecord]:
    """One draft / build / verify / decide / commit round, each stage timed by ``timer``.

    ``decide`` (optional) replaces :func:`decide_stage` with the same signature (a user's verifier
    served by ``exitlaw serve --verifier MODULE:CALLABLE``)."""
    rows = timer.call("draft", draft_stage, state, target, drafter)
    dtree = timer.call("build", build_stage, rows, cfg, state.root, target.device)
    step = timer.call("verify_forward", verify_forward_stage, state, target, dtree)
    result = timer.call("decide", decide or decide_stage, cfg, dtree, step.logits, gens)
    block = timer.call("commit", commit_stage, state, target, dtree, step, result)
    return block, RoundRecord(dtree, result, step.logits)


@torch.inference_mode()  # decoding never needs autograd (training calls the stages, not this loop)
def generate(
    target: TargetModel,
    drafter: DFlashDrafter | None,
    prompt: Sequence[int],
    cfg: DecodeConfig,
    *,
    timer=None,
    trace=None,
    on_round=None,
    on_block=None,
    decide=None,
) -> GenerationResult:
    """Decode ``prompt`` with ``cfg``: the first token from the prefill (:func:`prefill_stage`), then
    rounds. ``trace`` (a TraceWriter) receives one TraceRound per round and ``on_round`` (a callable)
    each round's :class:`RoundRecord` (its tree, decision and target logits). ``on_block`` (a
    callable) receives the prefill's token, then each round's output block as it is committed (AR:
    each token); ``block_lengths`` count rounds only (the prefill's token is in ``tokens``);
    ``decide`` replaces the verifier stage (see :func:`speculative_round`)."""
    timer = timer if timer is not None else StageTimer(target.device)
    if cfg.method == "ar":
        return generate_ar(target, prompt, cfg, timer=timer, on_block=on_block)
    if drafter is None:
        raise ValueError(f"method {cfg.method!r} needs a drafter")
    gens = Generators(cfg.seed, target.device)
    state = timer.call(
        "prefill", prefill_stage, target, drafter, prompt, cfg.settings, gens.verifier.bonus
    )
    lengths: list[int] = []
    done = _first_token(state, cfg, on_block)
    while not done:
        block, rec = speculative_round(state, target, drafter, cfg, gens, timer, decide)
        lengths.append(len(block))
        if trace is not None:
            trace.write(trace_round(rec, cfg.settings))
        if on_round is not None:
            on_round(rec)
        done = _append_block(state.tokens, block, cfg)
        if on_block is not None:
            on_block(block)
    stages = timer.summary()
    decode = sum(v["total_s"] for k, v in stages.items() if k != "prefill")
    return GenerationResult(state.tokens, lengths, decode, stages)


@torch.inference_mode()
def generate_ar(
    target: TargetModel, prompt: Sequence[int], cfg: DecodeConfig, *, timer=None, on_block=None
) -> GenerationResult:
    """Autoregressive baseline on the plain causal path (no custom mask); samples use the bonus stream."""
    timer = timer if timer is not None else StageTimer(target.device)
    gens = Generators(cfg.seed, target.device)
    state = timer.call(
        "prefill", prefill_stage, target, None, prompt, cfg.settings, gens.verifier.bonus
    )
    done = _first_token(state, cfg, on_block)
    while not done:
        logits = timer.call("target_forward", target.decode, state.target_cache, state.root)
        tok = timer.call("sample", sample_token, logits, cfg.settings, gens.verifier.bonus)
        state.root = tok
        done = _append_block(state.tokens, [tok], cfg)
        if on_block is not None:
            on_block([tok])
    stages = timer.summary()
    decode = sum(v["total_s"] for k, v in stages.items() if k != "prefill")
    one_per_step = [1] * (len(state.tokens) - 1)  # one per decode step
    return GenerationResult(state.tokens, one_per_step, decode, stages)


def trace_round(rec: RoundRecord, settings: SamplingSettings) -> TraceRound:
    """The round in the theory trace format: ``a(u) = p_par(u)(x_u)`` under ``settings`` (one-hot at
    T = 0; ``p`` the processed target of the :class:`~exitlaw.theory.SamplingSettings`)."""
    settings = check_settings(settings)
    temperature = settings.temperature
    tree = rec.tree
    logits = filter_logits(rec.logits, settings).double()
    parent = torch.tensor(tree.parent[1:].tolist(), device=logits.device)
    tok = torch.tensor(tree.token[1:].tolist(), device=logits.device)
    if temperature == 0:
        edge = (logits.argmax(-1)[parent] == tok).double()
    else:
        edge = torch.log_softmax(logits / temperature, -1)[parent, tok].exp()
    edge_prob = np.concatenate([[1.0], edge.cpu().numpy()])
    logq = rec.dtree.draft_logprob
    logq = None if logq is None else logq.double().cpu().numpy()
    return TraceRound(tree, edge_prob, logq, rec.result.exit_node, rec.result.bonus)


__all__ = [
    "DecodeConfig",
    "Generators",
    "DecodeState",
    "GenerationResult",
    "RoundRecord",
    "METHODS",
    "prefill_stage",
    "draft_stage",
    "build_stage",
    "verify_forward_stage",
    "decide_stage",
    "commit_stage",
    "speculative_round",
    "generate",
    "generate_ar",
    "tree_parts",
    "sample_token",
    "exponential_race",
    "trace_round",
]
