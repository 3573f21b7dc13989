"""A mechanism test without training noise (issue 34, item 2): can one step along the exit gradient move
coverage more than a step of the same length along the prefix gradient, the CE gradient or a random
direction?

From a drafter ``theta0`` (the base drafter, and a token-tuned one) the gradients of

* ``ce``: the dense token cross-entropy,
* ``prefix``: the prefix-weighted tree term,
* ``exit``: the exit-weighted tree term (docs/design.md §1.10; weights from the frozen target at
  ``T = 1``, ``batch`` normalisation; :func:`~exitlaw.engine.training.exittrain.exittrain_loss`
  returns CE and the tree term apart),

are taken on one fixed set of training batches (the same batches for every direction: common random
numbers), and ``random`` is a seeded Gaussian direction (the null control). Every direction ``g`` is
normalised to the same length: ``theta = theta0 - eta * s * g / ||g||`` with ``s = step_scale *
||theta0||``, so ``||theta - theta0|| = eta * s`` for every direction.

Each stepped drafter builds its trees on the same held-out anchors (greedy target continuations of the
evaluation prompts) with the inference builder (DDTree best-first, the training budget), and each tree's
coverage ``C_p = sum_{v != root} P(v)`` (docs/design.md §1.2) is computed under the target at ``T = 1``
(:func:`~exitlaw.engine.training.law.tree_law` on the target's edge probabilities) and at ``T = 0``
(the same law on the greedy rows: an edge has probability 1 when its token is the target's argmax at
its parent, else 0, so ``C_p`` is the depth of the target's greedy path inside the tree). The effect of
a step is the change in ``C_p`` against ``theta0``, paired over anchors; anchors cluster within prompts,
so the interval is the t-interval over prompt-level means (:func:`cluster_interval`). Held-out CE
(the drafter's rows against the greedy continuation at the same anchors) says how far each step moved
the drafter's token loss.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from exitlaw.engine.models.checkpoint import load_drafter, load_pair
from exitlaw.engine.training.batch import (
    block_targets,
    build_trees,
    drafter_rows,
    edge_probabilities,
    make_batch,
    tree_logit_tables,
)
from exitlaw.engine.training.config import DrafterSchedule, TrainConfig
from exitlaw.engine.training.data import (
    cached_sequences,
    generate_continuations,
    target_fingerprint,
)
from exitlaw.engine.training.exittrain import batch_loss, draft_log_normalisers, gathered_nll
from exitlaw.engine.training.law import TreeBatch, tree_law
from exitlaw.engine.training.loop import step_sequences
from exitlaw.paper_repro.mini.exittrain.mechanism_design import (
    CONTRASTS,
    DIRECTIONS,
    JSON_NAME,
    SCHEMA,
    TEMPERATURES,
)
from exitlaw.paper_repro.mini.exittrain.mechanism_report import write_report
from exitlaw.paper_repro.mini.pipeline import _train_stage
from exitlaw.paper_repro.mini.stats import crossed_mean_ci
from exitlaw.theory.infra.atomic_io import atomic_write_json
from exitlaw.theory.infra.flat_fields import from_flat, group, to_flat
from exitlaw.theory.sampling_settings import SamplingSettings


class MechanismError(ValueError):
    """Bad input to the mechanism test (a negative step, a missing folder, an empty prompt set)."""


def tune_group(default: DrafterSchedule):
    """The token-tuned drafter's schedule as a config field, written ``tune_steps``, ``batch_size``,
    ``tune_lr``, ``anchors_per_seq`` (the mechanism test's and the pilot's configs)."""
    return group(
        "tune_", default=default, keys={"batch": "batch_size", "anchors": "anchors_per_seq"}
    )


@dataclass(frozen=True)
class MechanismConfig:
    """Every setting of the mechanism test (the shipped run uses the defaults)."""

    # fine-tuning data: the fresh prompts regenerated greedily by the target
    ft_tokens: int = 128
    ft_gen_seed: int = 33  # a cache key only: greedy decoding draws nothing
    # held-out anchors: greedy continuations of the evaluation prompts
    heldout_tokens: int = 48
    anchors_per_prompt: int = 8
    anchor_seed: int = 980
    budget: int = 64
    # the token-tuned drafter: token-only fine-tuning from the base (scores trees: matched compute);
    # its batches (written tune_steps, batch_size, tune_lr, anchors_per_seq) shape the gradient batches too
    tune: DrafterSchedule = tune_group(DrafterSchedule(steps=128, batch=4, lr=1e-4, anchors=8))
    tune_warmup: int = 6
    tune_seed: int = 950
    # the directions: gradients on `grad_batches` fixed batches, a seeded Gaussian
    grad_batches: int = 16
    grad_seed: int = 960
    random_seed: int = 970
    # step lengths: eta * step_scale * ||theta0||
    etas: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)
    step_scale: float = 1e-3
    level: float = 0.95
    scoring_temperature: float = 1.0

    def __post_init__(self):
        if any(
            not (isinstance(e, (int, float)) and math.isfinite(e) and e >= 0) for e in self.etas
        ):
            raise MechanismError(f"every eta must be finite and >= 0, got {list(self.etas)}")
        if not self.etas:
            raise MechanismError("need at least one eta")
        if not (math.isfinite(self.step_scale) and self.step_scale > 0):
            raise MechanismError(f"step_scale must be finite and > 0, got {self.step_scale}")
        for name in ("ft_tokens", "heldout_tokens", "anchors_per_prompt", "budget", "grad_batches"):
            if getattr(self, name) < 1:
                raise MechanismError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0 < self.level < 1 or self.scoring_temperature <= 0:
            raise MechanismError("need 0 < level < 1 and scoring_temperature > 0")

    def to_json(self) -> dict:
        """The settings as their flat JSON object (``tune.steps`` is ``tune_steps``)."""
        return to_flat(self)

    @classmethod
    def from_json(cls, data: dict) -> "MechanismConfig":
        """The settings :meth:`to_json` wrote; ``ValueError`` naming a key no field owns."""
        return from_flat(cls, data, what="mechanism configuration")


@dataclass(frozen=True)
class MechanismInputs:
    """The target, the base drafter, the fine-tuning prompts and the held-out (evaluation) prompts."""

    target_dir: Path
    drafter_dir: Path
    ft_prompts: list[list[int]]
    heldout_prompts: list[list[int]]
    provenance: dict = field(default_factory=dict)

    def __post_init__(self):
        for what, path in (("target", self.target_dir), ("base drafter", self.drafter_dir)):
            if not (Path(path) / "config.json").is_file():
                raise MechanismError(
                    f"the {what} folder {path} holds no checkpoint (no config.json)"
                )
        for what, prompts in (("fine-tuning", self.ft_prompts), ("held-out", self.heldout_prompts)):
            if not prompts or any(len(p) == 0 for p in prompts):
                raise MechanismError(
                    f"the {what} prompts must be a non-empty list of non-empty prompts"
                )
        if len(self.heldout_prompts) < 2:
            raise MechanismError("need >= 2 held-out prompts (the interval is over prompts)")


def regime_inputs(regime_dir: str | Path) -> MechanismInputs:
    """The inputs from a paper-regime run folder (``paper_repro/results/paper_regime``): ``base/target``,
    ``base/drafter_base/final``, the fresh fine-tuning prompts (the ``prompt_ids`` of the one
    ``ft_data/continuations-*.jsonl``) and the ``code`` evaluation prompts of ``prompt_sets.json``."""
    root = Path(regime_dir)
    if not root.is_dir():
        raise MechanismError(f"paper-regime folder {root} does not exist")
    base = root / "base"
    target, drafter = base / "target", base / "drafter_base" / "final"
    for what, path in (("target", target), ("base drafter", drafter)):
        if not (path / "config.json").is_file():
            raise MechanismError(
                f"{root} holds no {what} at {path.relative_to(root)} (is it a paper-regime run folder?)"
            )
    conts = sorted((root / "ft_data").glob("continuations-*.jsonl"))
    if len(conts) != 1:
        raise MechanismError(
            f"{root / 'ft_data'} must hold exactly one continuations-*.jsonl (the fresh prompts), "
            f"found {len(conts)}"
        )
    lines = conts[0].read_text(encoding="utf-8").splitlines()
    ft = [json.loads(x)["prompt_ids"] for x in lines[1:]]
    sets_path = root / "prompt_sets.json"
    if not sets_path.is_file():
        raise MechanismError(f"{root} holds no prompt_sets.json (the evaluation prompts)")
    heldout = json.loads(sets_path.read_text(encoding="utf-8"))["code"]
    return MechanismInputs(
        target,
        drafter,
        ft,
        heldout,
        {
            "regime": str(root),
            "ft_prompts_from": str(conts[0].relative_to(root)),
            "heldout_prompts_from": "prompt_sets.json[code]",
        },
    )


# ----- statistics -------------------------------------------------------------------------------------------
def cluster_interval(values, clusters, level: float = 0.95) -> dict:
    """Mean of per-anchor ``values`` with the cluster-robust interval: the t-interval over cluster means.

    ``clusters[i]`` names anchor ``i``'s prompt; the estimate is the mean of the prompt means (equal to the
    anchor mean when every prompt has as many anchors), its standard error ``sd(prompt means) / sqrt(P)``
    with ``P - 1`` degrees of freedom (:func:`~.stats.crossed_mean_ci` with one seed).
    """
    v = np.asarray(values, dtype=np.float64)
    c = np.asarray(clusters)
    if v.ndim != 1 or v.shape != c.shape or not np.isfinite(v).all():
        raise MechanismError(
            f"need finite values and clusters of one length, got {v.shape}, {c.shape}"
        )
    names = np.unique(c)
    if names.size < 2:
        raise MechanismError("need anchors from >= 2 prompts for a cluster interval")
    means = np.array([v[c == n].mean() for n in names])
    res = crossed_mean_ci(means[None], level=level)
    return {k: res[k] for k in ("mean", "lo", "hi", "se", "df", "level")} | {
        "prompts": int(names.size)
    }


# ----- data -------------------------------------------------------------------------------------------------
@dataclass
class Heldout:
    """Held-out anchors, with the target's forward over each prompt's sequence cached (it does not depend
    on the drafter). ``anchors[i] = (prompt, position)``; every drafter is evaluated on exactly these."""

    tokens: list  # per prompt: prompt + greedy continuation, [S] long
    steps: list  # per prompt: TargetStep (logits, hidden)
    caches: list  # per prompt: the target's K/V of the whole sequence
    positions: list  # per prompt: its anchors, [A] long

    @property
    def anchors(self) -> list[tuple[int, int]]:
        return [(i, int(a)) for i, pos in enumerate(self.positions) for a in pos]

    def digest(self) -> str:
        """A hash of the anchors and the sequences they sit in (the same for every evaluation)."""
        h = hashlib.sha256()
        for tok, pos in zip(self.tokens, self.positions):
            h.update(np.asarray(tok.tolist(), dtype=np.int64).tobytes())
            h.update(np.asarray(pos.tolist(), dtype=np.int64).tobytes())
        return h.hexdigest()[:16]


def anchor_positions(seq_len: int, first: int, depth: int, count: int, rng) -> np.ndarray:
    """``count`` distinct sorted anchors ``a`` with ``first - 1 <= a`` and ``a + depth <= seq_len - 1``:
    every drafted depth of every anchor has a continuation token (so held-out CE sees every depth)."""
    lo, hi = max(1, first - 1), seq_len - 1 - depth
    if hi - lo + 1 < count:
        raise MechanismError(
            f"a held-out sequence of {seq_len} tokens (prompt {first}) has {max(hi - lo + 1, 0)} anchor "
            f"positions for {count} anchors of depth {depth}; generate more held-out tokens"
        )
    return np.sort(rng.choice(np.arange(lo, hi + 1), size=count, replace=False)).astype(np.int64)


def make_heldout(target, prompts, cfg: MechanismConfig, depth: int) -> Heldout:
    """Greedy continuations of ``prompts`` (``cfg.heldout_tokens``) and ``cfg.anchors_per_prompt`` anchors
    per prompt (seed ``cfg.anchor_seed``), with the target's forward over each sequence cached."""
    conts = generate_continuations(
        target,
        prompts,
        max_new_tokens=cfg.heldout_tokens,
        settings=SamplingSettings(0.0),
        seed=0,
        batch_size=64,
    )
    rng = np.random.default_rng(cfg.anchor_seed)
    out = Heldout([], [], [], [])
    with torch.no_grad():
        for p, c in zip(prompts, conts):
            tok = torch.tensor(list(p) + list(c), dtype=torch.long, device=target.device)
            pos = anchor_positions(tok.shape[0], len(p), depth, cfg.anchors_per_prompt, rng)
            cache = target.new_cache()
            out.tokens.append(tok)
            out.steps.append(target.prefill(cache, tok))
            out.caches.append(cache)
            out.positions.append(torch.as_tensor(pos, device=target.device))
    return out


def greedy_edges(tree, table) -> np.ndarray:
    """Edge probabilities of the greedy target (``T = 0``): ``a(u) = 1`` when ``x_u`` is the first argmax
    of its parent's row, else 0 (``a(root) = 1``)."""
    if tree.num_nodes == 1:
        return np.ones(1)
    top = table.argmax(-1)
    par = torch.as_tensor(np.array(tree.parent[1:]), device=table.device)
    tok = torch.as_tensor(np.array(tree.token[1:]), device=table.device)
    return np.concatenate([[1.0], (top[par] == tok).double().cpu().numpy()])


@dataclass(frozen=True)
class Evaluation:
    """One drafter on the held-out anchors: per-anchor ``C_p`` at ``T = 0`` and ``T = 1``, CE sums."""

    cp0: np.ndarray  # [A]
    cp1: np.ndarray  # [A]
    nll: np.ndarray  # [A] mean -log q_d(x_{a+d}) over the anchor's depths
    digest: str  # Heldout.digest() of the anchors used

    def cp(self, temperature: float) -> np.ndarray:
        return self.cp0 if temperature == 0 else self.cp1


def evaluate(
    target, drafter, heldout: Heldout, cfg: MechanismConfig, on_trees: Callable | None = None
) -> Evaluation:
    """Trees of ``drafter`` on every held-out anchor (the inference builder, ``cfg.budget``) and their
    coverage under the target at ``T = 0`` and ``T = cfg.scoring_temperature`` (module docstring);
    ``on_trees(trees)`` sees each prompt's trees in anchor order (the pilot reads their depths)."""
    depth = drafter.block_size - 1
    cp0, cp1, nll = [], [], []
    with torch.no_grad():
        for tok, step, cache, pos in zip(
            heldout.tokens, heldout.steps, heldout.caches, heldout.positions
        ):
            logits = drafter_rows(drafter, target, tok, step.hidden, pos).float()
            targets, valid = block_targets(tok, pos, depth)
            steps = torch.arange(depth)[None].expand(pos.shape[0], depth)
            per = gathered_nll(logits, draft_log_normalisers(logits), steps, targets)
            nll.append((torch.where(valid, per, 0.0).sum(-1) / valid.sum(-1)).double().numpy())
            trees = build_trees(logits, tok[pos], cfg.budget)
            if on_trees is not None:
                on_trees(trees)
            tables = tree_logit_tables(
                target, cache, step.logits, pos, trees, SamplingSettings(cfg.scoring_temperature)
            )
            batch = TreeBatch.from_trees(trees, target.device, max(t.num_nodes for t in trees))
            for edges, out in (
                ([greedy_edges(t, tb) for t, tb in zip(trees, tables)], cp0),
                ([edge_probabilities(t, tb) for t, tb in zip(trees, tables)], cp1),
            ):
                pad = np.zeros(tuple(batch.valid.shape))
                for i, e in enumerate(edges):
                    pad[i, : e.size] = e
                out.append(tree_law(batch, torch.as_tensor(pad)).coverage.numpy())
    return Evaluation(
        np.concatenate(cp0), np.concatenate(cp1), np.concatenate(nll), heldout.digest()
    )


# ----- directions and steps ---------------------------------------------------------------------------------
def trainable(drafter) -> list:
    return [p for p in drafter.parameters() if p.requires_grad]


def flat_norm(tensors) -> float:
    """``sqrt(sum of squares)`` over a list of tensors (float64)."""
    return math.sqrt(sum(float(t.detach().double().pow(2).sum()) for t in tensors))


def directions(target, drafter, data, cfg: MechanismConfig) -> dict[str, list]:
    """The four directions at ``drafter`` (module docstring): mean gradients of CE and of the prefix and
    exit tree terms over ``cfg.grad_batches`` training batches (each batch drawn as the trainer draws
    step ``t``'s, seed ``cfg.grad_seed``, and shared by the three terms), and a seeded Gaussian."""
    for p in target.model.parameters():
        p.requires_grad_(False)
    params = trainable(drafter)
    tcfg = _grad_config(cfg)
    acc = {
        name: [torch.zeros_like(p, dtype=torch.float64) for p in params] for name in DIRECTIONS[:3]
    }
    for t in range(cfg.grad_batches):
        seqs, rng = step_sequences(data, tcfg, t, 0)
        batch = make_batch(
            drafter,
            target,
            seqs,
            cfg.tune.anchors,
            cfg.budget,
            rng,
            score=True,
            settings=SamplingSettings(cfg.scoring_temperature),
        )
        if batch is None:
            raise MechanismError(f"gradient batch {t}: no sequence has room for an anchor")
        terms = {}
        for objective in ("prefix", "exit"):
            lt = batch_loss(batch, objective=objective, lam=1.0)
            terms["ce"], terms[objective] = lt.ce, lt.tree
        for name in ("ce", "prefix", "exit"):
            grads = torch.autograd.grad(terms[name], params, retain_graph=name != "exit")
            for a, g in zip(acc[name], grads):
                a += g.double() / cfg.grad_batches
    gen = torch.Generator().manual_seed(cfg.random_seed)
    acc["random"] = [torch.randn(p.shape, generator=gen, dtype=torch.float64) for p in params]
    return acc


def _grad_config(cfg: MechanismConfig):
    """The trainer's config whose step-``t`` batch draw (:func:`~exitlaw.engine.training.loop.step_sequences`)
    fixes the gradient batches."""

    return TrainConfig(objective="exit", schedule=cfg.tune, budget=cfg.budget, seed=cfg.grad_seed)


def batch_ce(target, drafter, data, cfg: MechanismConfig) -> float:
    """Mean dense CE of ``drafter`` over the gradient batches (the same sequences and anchors as
    :func:`directions`): what a step along ``-grad CE`` lowers to first order."""
    tcfg, total = _grad_config(cfg), 0.0
    with torch.no_grad():
        for t in range(cfg.grad_batches):
            seqs, rng = step_sequences(data, tcfg, t, 0)
            batch = make_batch(
                drafter, target, seqs, cfg.tune.anchors, cfg.budget, rng, score=False
            )
            if batch is None:
                raise MechanismError(f"gradient batch {t}: no sequence has room for an anchor")
            terms = batch_loss(batch, objective="token", lam=0.0, scored=False)
            total += float(terms.ce) / cfg.grad_batches
    return total


def stepped(drafter, direction: list, length: float):
    """A copy of ``drafter`` moved by ``-length * g / ||g||`` (``g = direction``): ``||theta - theta0|| =
    length`` up to float rounding; ``length = 0`` returns exactly ``theta0``'s weights."""
    if not (math.isfinite(length) and length >= 0):
        raise MechanismError(f"a step length must be finite and >= 0, got {length}")
    norm = flat_norm(direction)
    if norm == 0:
        raise MechanismError("a direction of norm 0 cannot be normalised")
    out = copy.deepcopy(drafter)
    with torch.no_grad():
        for p, g in zip(trainable(out), direction):
            p.sub_((g * (length / norm)).to(p.dtype))
    return out


def distance(a, b) -> float:
    """``||theta_a - theta_b||`` over the trainable parameters."""
    return flat_norm(
        [x.detach().double() - y.detach().double() for x, y in zip(trainable(a), trainable(b))]
    )


def cosine(u: list, v: list) -> float:
    dot = sum(float((x * y).sum()) for x, y in zip(u, v))
    return dot / (flat_norm(u) * flat_norm(v))


# ----- the run ----------------------------------------------------------------------------------------------
def tune_drafter(
    out: Path, inputs: MechanismInputs, data, cfg: MechanismConfig, progress: bool
) -> Path:
    """The token-tuned drafter: token-only fine-tuning from the base (trees scored at ``T = 1``, logged
    only), cached in ``out/token``; returns its final folder."""

    tcfg = TrainConfig(
        objective="token",
        lam=0.0,
        budget=cfg.budget,
        schedule=cfg.tune,
        min_lr_ratio=0.0,
        warmup_steps=cfg.tune_warmup,
        checkpoint_every=cfg.tune.steps,
        log_every=max(1, cfg.tune.steps // 16),
        seed=cfg.tune_seed,
        score_trees=True,
        scoring=SamplingSettings(cfg.scoring_temperature),
    )
    return _train_stage(out / "token", inputs.target_dir, inputs.drafter_dir, data, tcfg, progress)


def _effects(evals: dict, base: Evaluation, clusters, cfg: MechanismConfig) -> dict:
    """Change of ``C_p`` (both temperatures) and of held-out CE of one stepped drafter against ``theta0``."""
    res = {
        f"cp_T{t:g}": cluster_interval(evals.cp(t) - base.cp(t), clusters, cfg.level)
        for t in TEMPERATURES
    }
    res["ce"] = cluster_interval(evals.nll - base.nll, clusters, cfg.level)
    return res


class _Laps:
    """Wall seconds per stage (rounded to 0.1 s), each logged as it ends."""

    def __init__(self, log: Callable[[str], None]):
        self.log = log
        self.seconds: dict[str, float] = {}

    def lap(self, name: str, t0: float) -> None:
        self.seconds[name] = round(time.perf_counter() - t0, 1)
        self.log(f"mechanism: {name} {self.seconds[name]:.0f} s")


def _ft_data(target, out: Path, inputs: MechanismInputs, cfg: MechanismConfig):
    """The target's greedy continuations of the fine-tuning prompts, cached in ``out/ft_data``."""
    return cached_sequences(
        target,
        target_fingerprint(inputs.target_dir),
        inputs.ft_prompts,
        out / "ft_data",
        max_new_tokens=cfg.ft_tokens,
        settings=SamplingSettings(0.0),
        seed=cfg.ft_gen_seed,
        batch_size=64,
    )


def _theta0(target, d0, data, heldout: Heldout, cfg: MechanismConfig, evaluate_fn: Callable):
    """``theta0``'s parameter norm, evaluation and batch CE, and its summary for ``mechanism.json``."""
    theta_norm = flat_norm(trainable(d0))
    e0 = evaluate_fn(target, d0, heldout, cfg)
    ce0 = batch_ce(target, d0, data, cfg)
    summary = {
        "param_norm": theta_norm,
        "ce_batches": ce0,
        "cp_T0": float(e0.cp0.mean()),
        "cp_T1": float(e0.cp1.mean()),
        "ce": float(e0.nll.mean()),
    }
    return theta_norm, e0, ce0, summary


def _steps_at(
    name, d0, dirs, length, eta, target, data, heldout, clusters, cfg, e0, ce0, evaluate_fn
):
    """One step of length ``length`` along each direction from ``d0``: its effect records and the
    stepped drafters' evaluations by direction (all on ``theta0``'s anchors)."""
    at, steps = {}, []
    for direction in DIRECTIONS:
        moved = stepped(d0, dirs[direction], length)
        ev = evaluate_fn(target, moved, heldout, cfg)
        if ev.digest != e0.digest:
            raise MechanismError("an evaluation used other anchors than theta0's")
        at[direction] = ev
        steps.append(
            {
                "drafter": name,
                "direction": direction,
                "eta": eta,
                "length": length,
                "measured_length": distance(moved, d0),
                "ce_batches": batch_ce(target, moved, data, cfg) - ce0,
                **_effects(ev, e0, clusters, cfg),
            }
        )
    return at, steps


def _contrasts_at(name: str, eta: float, at: dict, clusters, cfg: MechanismConfig) -> list[dict]:
    """Paired ``C_p`` differences between the directions' steps of one size, at both temperatures."""
    return [
        {
            "drafter": name,
            "eta": eta,
            "temperature": t,
            "a": a,
            "b": b,
            **cluster_interval(at[a].cp(t) - at[b].cp(t), clusters, cfg.level),
        }
        for a, b in CONTRASTS
        for t in TEMPERATURES
    ]


def _drafter_stages(name, d0, target, data, heldout, clusters, cfg, laps, evaluate_fn) -> dict:
    """Directions at ``d0``, its ``theta0`` summary and every step and contrast, per result field."""
    t0 = time.perf_counter()
    dirs = directions(target, d0, data, cfg)
    laps.lap(f"directions_{name}", t0)
    t0 = time.perf_counter()
    theta_norm, e0, ce0, summary = _theta0(target, d0, data, heldout, cfg, evaluate_fn)
    res = {
        "theta0": summary,
        "direction_norms": {k: flat_norm(v) for k, v in dirs.items()},
        "cosines": {
            f"{a}-{b}": cosine(dirs[a], dirs[b])
            for a, b in (("exit", "prefix"), ("exit", "ce"), ("prefix", "ce"))
        },
        "step_lengths": {f"{eta:g}": eta * cfg.step_scale * theta_norm for eta in cfg.etas},
        "steps": [],
        "contrasts": [],
    }
    for eta in cfg.etas:
        length = eta * cfg.step_scale * theta_norm
        at, steps = _steps_at(
            name, d0, dirs, length, eta, target, data, heldout, clusters, cfg, e0, ce0, evaluate_fn
        )
        res["steps"] += steps
        res["contrasts"] += _contrasts_at(name, eta, at, clusters, cfg)
    laps.lap(f"steps_{name}", t0)
    return res


def _cost(seconds: dict, cpu_start: float) -> dict:
    """Wall seconds per stage, CPU seconds, torch threads and peak resident memory of the run."""
    return {
        "seconds": seconds,
        "cpu_seconds": round(time.process_time() - cpu_start, 1),
        "torch_threads": torch.get_num_threads(),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def run_mechanism(
    out: str | Path,
    inputs: MechanismInputs,
    cfg: MechanismConfig = MechanismConfig(),
    *,
    progress: bool = True,
    log: Callable[[str], None] = lambda line: None,
    evaluate_fn: Callable = evaluate,
) -> dict:
    """Run every stage (module docstring) into ``out`` and write ``mechanism.json`` and ``mechanism.md``.

    Cached in ``out``: the greedy fine-tuning data (``out/ft_data``) and the token-tuned drafter
    (``out/token``); a rerun reuses them. ``evaluate_fn`` is :func:`evaluate` (tests wrap it).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t_start, cpu_start = time.perf_counter(), time.process_time()
    laps = _Laps(log)
    target, base = load_pair(inputs.target_dir, inputs.drafter_dir)
    t0 = time.perf_counter()
    data = _ft_data(target, out, inputs, cfg)
    laps.lap("ft_data", t0)
    t0 = time.perf_counter()
    token_dir = tune_drafter(out, inputs, data, cfg, progress)
    laps.lap("token_tuning", t0)
    drafters = {"base": base, "token": load_drafter(token_dir, dtype=target.dtype)}
    for d in drafters.values():
        d.eval()
    t0 = time.perf_counter()
    heldout = make_heldout(target, inputs.heldout_prompts, cfg, base.block_size - 1)
    clusters = np.array([p for p, _ in heldout.anchors])
    laps.lap("heldout", t0)
    fields = ("theta0", "direction_norms", "cosines", "step_lengths")
    per = {k: {} for k in fields}
    steps, contrasts = [], []
    for name, d0 in drafters.items():
        res = _drafter_stages(name, d0, target, data, heldout, clusters, cfg, laps, evaluate_fn)
        for k in fields:
            per[k][name] = res[k]
        steps += res["steps"]
        contrasts += res["contrasts"]
    laps.seconds["total"] = round(time.perf_counter() - t_start, 1)
    result = {
        "schema": SCHEMA,
        "config": cfg.to_json(),
        "inputs": {
            "target": str(inputs.target_dir),
            "base_drafter": str(inputs.drafter_dir),
            "ft_prompts": len(inputs.ft_prompts),
            "heldout_prompts": len(inputs.heldout_prompts),
            **inputs.provenance,
        },
        "anchors": [list(a) for a in heldout.anchors],
        "anchors_digest": heldout.digest(),
        **per,
        "steps": steps,
        "contrasts": contrasts,
        "cost": _cost(laps.seconds, cpu_start),
    }
    atomic_write_json(out / JSON_NAME, result, indent=1)
    return write_report(out)


__all__ = [
    "Evaluation",
    "Heldout",
    "MechanismConfig",
    "MechanismError",
    "MechanismInputs",
    "anchor_positions",
    "cluster_interval",
    "cosine",
    "directions",
    "distance",
    "evaluate",
    "flat_norm",
    "greedy_edges",
    "make_heldout",
    "regime_inputs",
    "run_mechanism",
    "stepped",
    "tune_drafter",
]
