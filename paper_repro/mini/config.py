"""The mini reproduction's configuration: the target's architecture and schedule (:class:`TargetSpec`),
everything that determines a run's numbers (:class:`MiniConfig`) and its presets (``exitlaw repro mini
--preset``; what each is for: :mod:`.pipeline`). No torch: the ExitTrain studies and the ledger read these.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from exitlaw.engine.models.config import StackSizes
from exitlaw.engine.training.config import DrafterSchedule, Schedule
from exitlaw.theory.infra.flat_fields import from_flat, group, replace_flat, to_flat


@dataclass(frozen=True)
class TargetSpec:
    """Architecture and training schedule of the mini target, written flat: ``hidden_size`` ...
    ``head_dim`` are its sizes', ``steps``, ``batch_size``, ``lr`` its schedule's; next-token
    windows of ``seq_len`` tokens, ``warmup`` steps."""

    sizes: StackSizes = group(
        "",
        default=StackSizes(
            hidden_size=192,
            intermediate_size=512,
            num_layers=4,
            num_heads=6,
            num_kv_heads=2,
            head_dim=32,
        ),
    )
    schedule: Schedule = group(
        "", default=Schedule(steps=300, batch=16, lr=3e-3), keys={"batch": "batch_size"}
    )
    seq_len: int = 256
    warmup: int = 20
    weight_decay: float = 0.05
    grad_clip: float = 1.0

    @classmethod
    def from_json(cls, data: dict) -> "TargetSpec":
        """The spec written as its flat JSON object (:func:`spec_dict`); absent keys take the defaults."""
        return from_flat(cls, data, what="target spec")


def spec_dict(spec: TargetSpec) -> dict:
    """``spec`` as its flat JSON object (the ``target`` of ``mini_config.json``)."""
    return to_flat(spec)


OBJECTIVES = ("token", "prefix", "exit")
DRAFTERS = ("base", *OBJECTIVES)
# the trainer's objective names (exitlaw.engine.training.objectives.OBJECTIVES, not imported: no torch at import time)
ENGINE_OBJECTIVES = ("token", "prefix", "exit", "exit-depth", "draft-opd", "vat")


@dataclass(frozen=True)
class MiniConfig:
    """Everything that determines the mini reproduction's numbers.

    ``context_init_scale``: the drafter's ``hidden_norm`` weight starts small, so the
    context's values enter the draft layers weakly at first. With the default weight 1,
    a CPU-sized distillation budget (a few hundred steps) left the drafter at the unigram
    distribution at every depth (held-out depth-1 CE 5.9 nats vs 4.7 with 0.05, same
    steps): the ~100-200 context entries swamp the root token before attention has
    learned where to look. It is an initialisation choice only; the architecture and the
    full-context attention are DFlash's.
    """

    preset: str = "full"
    seed: int = 0
    vocab_size: int = 1024
    heldout_fraction: float = 0.05
    tokenizer_docs: int = 400  # training documents the BPE is fitted on
    train_tokens: int = 4_000_000  # cap on the encoded training stream
    target: TargetSpec = field(
        default_factory=lambda: TargetSpec(
            sizes=StackSizes(
                hidden_size=128,
                intermediate_size=384,
                num_layers=4,
                num_heads=4,
                num_kv_heads=2,
                head_dim=32,
            ),
            schedule=Schedule(steps=1200, batch=16, lr=3e-3),
            seq_len=256,
            warmup=30,
        )
    )
    # the drafter's stack: the target's widths, these layers and MLP width (:meth:`drafter_sizes`)
    draft_layers: int = 2
    draft_intermediate: int = 384
    block_size: int = 8
    target_layer_ids: tuple[int, ...] = (1, 3)
    context_init_scale: float = (
        0.05  # initial hidden_norm weight of the drafter's context path (see below)
    )
    prose_share: float = 0.2  # share of training prompts cut from prose topics
    train_prompts: int = 512
    prompt_tokens: int = 64
    continuation_tokens: int = 96
    gen_temperature: float = 1.0
    # the base drafter's distillation and each objective's fine-tuning (written distill_*, ft_*)
    distill: DrafterSchedule = group(
        "distill_", default=DrafterSchedule(steps=1200, batch=4, lr=2e-3, anchors=48)
    )
    ft: DrafterSchedule = group(
        "ft_", default=DrafterSchedule(steps=300, batch=4, lr=5e-4, anchors=8)
    )
    ft_budget: int = 64  # the objectives' tree budget and tree-term weight
    ft_lam: float = 1.0
    # objective runs use seed + 100 + each of these (one run per objective and seed)
    ft_seeds: tuple[int, ...] = (0,)
    objectives: tuple[str, ...] = (
        OBJECTIVES  # trained from the base drafter (engine names: also exit-depth, draft-opd)
    )
    eval_prompts: int = 5
    eval_prompt_tokens: int = 64
    eval_new_tokens: int = 64
    budgets: tuple[int, ...] = (32, 64, 128)
    temperatures: tuple[float, ...] = (0.0, 1.0)
    verifiers: tuple[str, ...] = ("predraw", "tev")
    margin_pct: float = 4.0  # the verdict rule's margin: the smallest effect the paper reports (%)
    # a folder holding a finished base pair (target/, drafter_base/final/, corpus/tokenizer/,
    # mini_config.json), relative to paper_repro/results/ or absolute: stages 2 and 4 copy it
    base_pair: str | None = None

    def __post_init__(self):
        if (
            not self.objectives
            or len(set(self.objectives)) != len(self.objectives)
            or not set(self.objectives) <= set(ENGINE_OBJECTIVES)
        ):
            raise ValueError(
                f"objectives must be distinct names among {ENGINE_OBJECTIVES}, got {self.objectives}"
            )
        if not self.ft_seeds or len(set(self.ft_seeds)) != len(self.ft_seeds):
            raise ValueError(f"ft_seeds must be distinct and non-empty, got {self.ft_seeds}")
        if self.eval_prompts < 1 or not self.budgets or not self.temperatures or not self.verifiers:
            raise ValueError(
                "need eval_prompts >= 1 and at least one budget, temperature and verifier"
            )

    def drafter_sizes(self) -> StackSizes:
        """The DFlash drafter's stack: the target's widths and heads, its own depth and MLP width."""
        return self.target.sizes.but(
            num_layers=self.draft_layers, intermediate_size=self.draft_intermediate
        )

    def to_json(self) -> dict:
        """The configuration as its flat JSON object (``distill.steps`` is ``distill_steps``:
        :mod:`exitlaw.theory.infra.flat_fields`); ``base_pair`` only when set (runs made before it
        existed compare equal)."""
        out = to_flat(self)
        if out["base_pair"] is None:
            del out["base_pair"]
        return out

    @classmethod
    def from_json(cls, data: dict) -> "MiniConfig":
        """The configuration :meth:`to_json` wrote; ``ValueError`` naming a key no field owns."""
        return from_flat(cls, data, what="mini configuration")


QUICK = MiniConfig(
    preset="quick",
    vocab_size=512,
    tokenizer_docs=80,
    train_tokens=300_000,
    target=TargetSpec(
        sizes=StackSizes(
            hidden_size=64,
            intermediate_size=128,
            num_layers=2,
            num_heads=4,
            num_kv_heads=2,
            head_dim=16,
        ),
        schedule=Schedule(steps=120, batch=8, lr=3e-3),
        seq_len=128,
        warmup=10,
    ),
    draft_layers=1,
    draft_intermediate=128,
    target_layer_ids=(0, 1),
    train_prompts=48,
    prompt_tokens=32,
    continuation_tokens=48,
    distill=DrafterSchedule(steps=40, batch=4, lr=2e-3, anchors=48),
    ft=DrafterSchedule(steps=12, batch=2, lr=5e-4, anchors=4),
    eval_prompts=2,
    eval_prompt_tokens=32,
    eval_new_tokens=24,
)

# Deep trees on a CPU: vocabulary 512 (shorter, more predictable tokens), block 16 (horizon 15), greedy (T = 0)
# continuations for distillation and ExitTrain (the drafter learns the target's mode, which is what T = 0
# decoding accepts), the small context-path initialisation; three training seeds per objective, 40 held-out
# prompts per domain, evaluated at the verdict's cell only (T = 0 is greedy, so one verifier covers both).
# Sized for a shared 2-core machine (one torch thread): a smaller, shorter-trained target than `full`,
# objectives 100 steps at lr 1e-3. The base drafter's depth comes from data and distillation length:
# 256 prompts / 600 steps gave base tau 2.21 on held-out code; 1024 prompts reached 3.70 at step 1200 of
# 2400 (16 prompts); hence 2048 prompts and 3000 steps.
DEEP = MiniConfig(
    preset="deep",
    vocab_size=512,
    train_tokens=1_500_000,
    target=TargetSpec(
        sizes=StackSizes(
            hidden_size=96,
            intermediate_size=256,
            num_layers=3,
            num_heads=3,
            num_kv_heads=1,
            head_dim=32,
        ),
        schedule=Schedule(steps=600, batch=16, lr=3e-3),
        seq_len=128,
        warmup=20,
    ),
    draft_intermediate=256,
    target_layer_ids=(0, 2),
    block_size=16,
    train_prompts=2048,
    continuation_tokens=128,
    gen_temperature=0.0,
    distill=DrafterSchedule(steps=3000, batch=4, lr=2e-3, anchors=32),
    ft=DrafterSchedule(steps=100, batch=4, lr=1e-3, anchors=8),
    ft_seeds=(0, 1, 2),
    eval_prompts=40,
    eval_new_tokens=48,
    budgets=(64,),
    temperatures=(0.0,),
    verifiers=("predraw",),
)

# The deep preset re-run with the evaluation at every budget of the paper's Table 5 (B = 32/64/128): the input
# of the budget-robustness claim, whose rule (exit - base, equal-weight mean over the three budgets) was fixed
# in the claims ledger before this run. Training is identical to ``deep``; its B = 64 cell is a replication.
DEEP_BUDGETS = replace(DEEP, preset="deep-budgets", budgets=(32, 64, 128))

# README's main job: the ``deep`` sizes, starting from the base pair the paper-regime run shipped (target and
# drafter distilled for 3000 steps: ~55 CPU-minutes it does not redo), then each objective once from it (60
# steps) on 96 fresh greedy continuations, evaluated at B = 32/64/128, T = 0/1 with predraw and TEV on 4 held-out
# prompts per domain. A few minutes; it shows that every stage runs, it decides nothing.
SMOKE = replace(
    DEEP,
    preset="smoke",
    base_pair="paper_regime/base",
    train_prompts=96,
    ft=replace(DEEP.ft, steps=60),
    ft_seeds=(0,),
    eval_prompts=4,
    eval_new_tokens=32,
    budgets=(32, 64, 128),
    temperatures=(0.0, 1.0),
    verifiers=("predraw", "tev"),
)

PRESETS = {
    "smoke": SMOKE,
    "full": MiniConfig(),
    "quick": QUICK,
    "deep": DEEP,
    "deep-budgets": DEEP_BUDGETS,
}


def config_for(preset: str, **overrides) -> MiniConfig:
    """Preset ``preset`` with ``overrides`` replaced, each a field (``ft=...``) or a flat key
    (``ft_steps=3``); an unknown preset is an error naming the known ones."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    return replace_flat(PRESETS[preset], **overrides)
