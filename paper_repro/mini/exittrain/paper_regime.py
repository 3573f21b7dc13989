"""``exitlaw repro mini --preset paper-regime``: ExitTrain decided in the paper's regime, its plan.

The design, the verdict rules and the precondition were fixed before any objective result, in
``paper_repro/PAPER_REGIME.md``; :class:`PaperRegimeConfig` holds every number it fixes, :data:`ARMS` the
arms, :func:`arm_config` each run's trainer settings, :func:`eval_plan` every evaluation cell,
:class:`Paths` where a run keeps each product, and :func:`make_plan` all of it as one :class:`Plan`.
This module is data only and imports none of the others:

* :mod:`.paper_regime_run` executes a plan and writes its records;
* :mod:`.paper_regime_report` reads the records (and the plan) and renders the report;
* :mod:`.paper_regime_ship` copies a run's small products and rebuilds the report from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

from exitlaw.engine.training.config import DrafterSchedule, TrainConfig
from exitlaw.paper_repro.mini.cells import read_cells
from exitlaw.paper_repro.mini.config import DEEP, QUICK, MiniConfig
from exitlaw.theory.infra.flat_fields import group, to_flat
from exitlaw.theory.sampling_settings import SamplingSettings

# the paper's fine-tuning rate over DFlash training's (SpecForge configs)
PAPER_LR_RATIO = 1e-4 / 6e-4


@dataclass(frozen=True)
class Arm:
    """One fine-tuning arm: its objective and tree-term settings; ``literal``: the authors' recipe."""

    name: str
    objective: str
    lam: float
    weight_norm: str = "batch"
    edge_floor: float | None = None
    literal: bool = False


ARMS = (
    Arm("token", "token", 0.0),
    Arm("prefix", "prefix", 0.1),
    Arm("exit", "exit", 0.1),
    Arm("prefix-l1", "prefix", 1.0),
    Arm("exit-l1", "exit", 1.0),
    Arm("exit-depth", "exit-depth", 0.1, "nodes", 1e-4),
    Arm("prefix-nodes", "prefix", 0.1, "nodes", 1e-4),
    Arm("authors", "prefix", 0.1, "nodes", 1e-4, literal=True),
    Arm("authors-token", "token", 0.0, "nodes", None, literal=True),
)


@dataclass(frozen=True)
class TreeRecipe:
    """How an arm's fine-tuning scores trees and warms up: tree budget ``budget``, ``anchors`` block
    anchors per sequence, linear warm-up over ``warmup_ratio`` of the steps (the design's recipe and
    the authors' literal one, each written flat: ``budget``, ``literal_budget``)."""

    budget: int
    anchors: int
    warmup_ratio: float


@dataclass(frozen=True)
class PaperRegimeConfig:
    """Every setting ``paper_repro/PAPER_REGIME.md`` fixes (its sections in the comments)."""

    preset: str = "paper-regime"
    base: MiniConfig = DEEP  # "Base drafter": the deep preset, rebuilt the same way
    # "Prompt sets"
    eval_split_seed: int = 51
    eval_prompts: int = 40
    eval_prompt_tokens: int = 64
    eval_seed_code: int = 21
    eval_seed_prose: int = 22
    calibration_seed_prompts: int = 41
    # "Scoring temperature"
    scoring_temperature: float = 0.5
    fallback_temperature: float = 0.25
    informative_coverage: float = 1.0
    # "Fresh fine-tuning data"
    ft_prompts: int = 1024
    ft_prose_share: float = 0.2
    ft_seed_code: int = 31
    ft_seed_prose: int = 32
    ft_continuation_tokens: int = 128
    ft_gen_seed: int = 33
    # "Learning rate, schedule, optimizer"
    lr_grid: tuple[float, ...] = (5e-5, 1e-4, 2e-4, 3e-4)
    calibration_seed: int = 900
    tie_tolerance: float = 0.005
    epochs: int = 2
    batch_size: int = 4
    recipe: TreeRecipe = group("", default=TreeRecipe(budget=64, anchors=8, warmup_ratio=0.05))
    min_lr_ratio: float = 0.0
    # "The authors' literal recipe" (its rate fixed, its trees scored over the last literal_window tokens)
    literal: TreeRecipe = group(
        "literal_", default=TreeRecipe(budget=32, anchors=32, warmup_ratio=0.005)
    )
    literal_lr: float = 1e-4
    literal_window: int = 64
    # "Arms", "Seeds"
    arms: tuple[str, ...] = tuple(a.name for a in ARMS)
    seeds: tuple[int, ...] = tuple(range(8))
    # "Evaluation and estimands"
    eval_new_tokens: int = 48
    decode_seed: int = 1000
    eval_budget: int = 64
    budget_row: tuple[int, ...] = (32, 64, 128)
    budget_row_drafters: tuple[str, ...] = ("base", "token", "exit")
    literal_eval_budget: int = 32
    verifier: str = "predraw"
    # "Verdict rules"
    primary_level: float = 0.975
    secondary_level: float = 0.95
    margins_pct: dict = field(default_factory=lambda: {"exit-prefix": 4.4, "exit-token": 5.9})

    def __post_init__(self):
        known = {a.name for a in self.arm_table()}
        if not set(self.arms) <= known or not self.seeds:
            raise ValueError(f"arms must be among {sorted(known)} and seeds non-empty")
        cap = self.base.distill.lr * PAPER_LR_RATIO  # the drafter's peak rate x the paper's ratio
        if max(self.lr_grid) > cap * (1 + 1e-9) or self.literal_lr > cap * (1 + 1e-9):
            raise ValueError(
                f"every fine-tuning rate must be <= distillation peak x 1e-4/6e-4 = {cap:.3g}"
            )

    @property
    def steps(self) -> int:
        """Two epochs of the fresh data at ``batch_size`` sequences per step."""
        return self.epochs * self.ft_prompts // self.batch_size

    def to_json(self) -> dict:
        """The configuration as JSON, its base written as :meth:`MiniConfig.to_json` writes it."""
        return {**to_flat(self), "base": self.base.to_json()}

    # ----- what a design decides; a design with other rules overrides these (``authors_regime``) -----
    @staticmethod
    def arm_table() -> tuple[Arm, ...]:
        """Every arm this design knows ("Arms")."""
        return ARMS

    def arm(self, name: str) -> Arm:
        """The arm ``name`` of this design ("Arms")."""
        return arm_by_name(name)

    def ft_temperature(self, t_s: float) -> float:
        """The temperature of the fine-tuning continuations ("Fresh fine-tuning data": ``T_s``)."""
        return t_s

    def drafter_cells(self, drafter: str, arm: str, t_s: float) -> list[Cell]:
        """The evaluation cells of one drafter ("Evaluation and estimands")."""
        cells = [Cell(drafter, "code", t, self.eval_budget) for t in (t_s, 0.0, 1.0)]
        cells.append(Cell(drafter, "prose", t_s, self.eval_budget))
        if arm in self.budget_row_drafters:
            cells += [
                Cell(drafter, "code", t_s, b) for b in self.budget_row if b != self.eval_budget
            ]
        if arm in ("authors", "authors-token") and self.literal_eval_budget != self.eval_budget:
            cells.append(Cell(drafter, "code", t_s, self.literal_eval_budget))
        return cells


PAPER_REGIME = PaperRegimeConfig()
# a CI-sized twin of the same pipeline (the quick mini preset as its base): exercises every stage
PAPER_REGIME_QUICK = replace(
    PAPER_REGIME,
    preset="paper-regime-quick",
    base=QUICK,
    eval_prompts=2,
    eval_prompt_tokens=24,
    ft_prompts=8,
    ft_continuation_tokens=16,
    lr_grid=(5e-5, 1e-4),
    recipe=replace(PAPER_REGIME.recipe, budget=8, anchors=2),
    literal=replace(PAPER_REGIME.literal, budget=6, anchors=3),
    literal_window=8,
    literal_lr=1e-4,
    seeds=(0, 1),
    eval_new_tokens=8,
    budget_row=(4, 8),
    literal_eval_budget=6,
    eval_budget=8,
)


def arm_by_name(name: str) -> Arm:
    for a in ARMS:
        if a.name == name:
            return a
    raise ValueError(f"unknown arm {name!r}")


def arm_config(cfg: PaperRegimeConfig, arm: Arm, seed: int, lr: float, t_s: float):
    """The engine's ``TrainConfig`` of ``arm`` with training seed ``seed`` (engine seed 100 + seed)."""
    recipe = cfg.literal if arm.literal else cfg.recipe
    schedule = DrafterSchedule(
        steps=cfg.steps,
        batch=cfg.batch_size,
        lr=cfg.literal_lr if arm.literal else lr,
        anchors=recipe.anchors,
    )
    steps = schedule.steps
    return TrainConfig(
        objective=arm.objective,
        lam=arm.lam,
        weight_norm=arm.weight_norm,
        edge_floor=arm.edge_floor,
        budget=recipe.budget,
        schedule=schedule,
        min_lr_ratio=cfg.min_lr_ratio,
        warmup_steps=max(1, round(recipe.warmup_ratio * steps)),
        checkpoint_every=max(1, steps // 4),
        seed=100 + seed,
        score_trees=True,
        scoring=SamplingSettings(t_s),
        prefix_window=cfg.literal_window if arm.literal else None,
    )


def run_names(cfg: PaperRegimeConfig) -> list[tuple[str, int]]:
    """Every ``(arm, seed)`` run, seeds outermost (an interrupted stage has whole seeds done)."""
    return [(a, s) for s in cfg.seeds for a in cfg.arms]


def cell_key(drafter: str, domain: str, temperature: float, budget: int) -> str:
    return f"{drafter}|{domain}|T{temperature:g}|B{budget}"


class Cell(NamedTuple):
    """One evaluation cell: a drafter decoded on one domain at one temperature and budget."""

    drafter: str
    domain: str
    temperature: float
    budget: int

    @property
    def key(self) -> str:
        """Its key in the cell records (``cells*.jsonl``)."""
        return cell_key(*self)


def eval_plan(cfg: PaperRegimeConfig, t_s: float) -> list[Cell]:
    """Every evaluation cell ``(drafter, domain, temperature, budget)`` of the design."""
    drafters = ["base"] + [f"{a}-s{s}" for a, s in run_names(cfg)]
    plan = []
    for d in drafters:
        plan += cfg.drafter_cells(d, d.rsplit("-s", 1)[0] if d != "base" else "base", t_s)
    return plan


@dataclass(frozen=True)
class Paths:
    """Where a run keeps each product under ``out`` (the stages of ``paper_repro/PAPER_REGIME.md``)."""

    out: Path

    @property
    def config(self) -> Path:
        return self.out / "paper_regime_config.json"

    @property
    def base(self) -> Path:
        return self.out / "base"

    @property
    def prompt_sets(self) -> Path:
        return self.out / "prompt_sets.json"

    @property
    def scoring_temperature(self) -> Path:
        return self.out / "scoring_temperature.json"

    @property
    def ft_data(self) -> Path:
        return self.out / "ft_data"

    @property
    def fresh_prompts(self) -> Path:
        return self.ft_data / "fresh_prompts.json"

    @property
    def calibration(self) -> Path:
        return self.out / "calibration.json"

    @property
    def eval(self) -> Path:
        return self.out / "eval"

    @property
    def training(self) -> Path:
        """Per-run training summaries of a shipped folder (its arms' folders are not shipped)."""
        return self.out / "training.json"

    @property
    def results_json(self) -> Path:
        return self.out / "results.json"

    @property
    def results_md(self) -> Path:
        return self.out / "results.md"

    def calibration_run(self, lr: float) -> Path:
        return self.out / "calibration" / f"token-lr{lr:g}"

    def arm_run(self, name: str) -> Path:
        return self.out / "arms" / name

    def cells(self, shard: str = "") -> Path:
        """The cell records of one evaluation worker: ``""`` (the base drafter) or ``"-s<seed>"``."""
        return self.eval / f"cells{shard}.jsonl"


@dataclass(frozen=True)
class TrainingRun:
    """One fine-tuning run from the base drafter: its name, arm, training seed, folder and settings."""

    name: str
    arm: str
    seed: int
    dir: Path
    config: object  # the engine's TrainConfig (:func:`arm_config`)


def calibration_runs(cfg: PaperRegimeConfig, paths: Paths, t_s: float) -> tuple[TrainingRun, ...]:
    """Token-only at every rate of the grid, calibration seed (stage 4, before any prefix or exit arm)."""
    token = arm_by_name("token")
    return tuple(
        TrainingRun(
            f"token-lr{lr:g}",
            "token",
            cfg.calibration_seed,
            paths.calibration_run(lr),
            replace(arm_config(cfg, token, 0, lr, t_s), seed=cfg.calibration_seed),
        )
        for lr in cfg.lr_grid
    )


@dataclass(frozen=True)
class Plan:
    """Every unit of a run once ``T_s`` and the rate are known: the training runs (seeds outermost), the
    evaluation cells (:func:`eval_plan`) and, per drafter, its cells."""

    cfg: PaperRegimeConfig
    paths: Paths
    t_s: float
    lr: float
    runs: tuple[TrainingRun, ...]
    cells: tuple[Cell, ...]
    cells_of: dict[str, tuple[Cell, ...]]
    base_drafter: Path | None = None  # the drafter every arm starts from; None: the base stage's


def make_plan(
    cfg: PaperRegimeConfig, out: str | Path, t_s: float, lr: float, base_drafter: Path | None = None
) -> Plan:
    """The plan of a run in ``out`` at scoring temperature ``t_s`` and fine-tuning rate ``lr``, every arm
    starting from ``base_drafter`` (None: the base stage's distilled drafter)."""
    paths = Paths(Path(out))
    runs = tuple(
        TrainingRun(
            f"{a}-s{s}", a, s, paths.arm_run(f"{a}-s{s}"), arm_config(cfg, cfg.arm(a), s, lr, t_s)
        )
        for a, s in run_names(cfg)
    )
    cells = tuple(eval_plan(cfg, t_s))
    cells_of: dict[str, list[Cell]] = {}
    for c in cells:
        cells_of.setdefault(c.drafter, []).append(c)
    return Plan(
        cfg,
        paths,
        t_s,
        lr,
        runs,
        cells,
        {d: tuple(cs) for d, cs in cells_of.items()},
        None if base_drafter is None else Path(base_drafter),
    )


PRESETS = {"paper-regime": PAPER_REGIME, "paper-regime-quick": PAPER_REGIME_QUICK}


def read_all_cells(out: Path) -> dict:
    """Every finished cell of ``out/eval/cells*.jsonl`` (one file per evaluation worker)."""
    done = {}
    for path in sorted(Paths(Path(out)).eval.glob("cells*.jsonl")):
        done.update(read_cells(path))
    return done
