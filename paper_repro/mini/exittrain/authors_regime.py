"""``exitlaw repro mini --preset authors-regime``: ExitTrain on the authors' recipe, its plan.

The design was fixed before any arm ran, in ``paper_repro/AUTHORS_REGIME.md``: the fine-tuning data are
the target's greedy continuations (the authors regenerate theirs at T = 0), the tree weights come from
the target at T = 1 (their ``softmax(logits)``), and every drafter is judged at T = 0 and T = 1 as
co-primary cells, in per-step acceptance ``a = 1 - 1/tau`` against margins derived from the paper's
Table 2 (:func:`paper_margin`). :class:`AuthorsRegimeConfig` is the paper-regime configuration with these
rules; it reuses the paper-regime stages (:mod:`.paper_regime_run`). This module is data only; it also
reads back either design's configuration (:func:`config_from_json`), since it knows both.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from exitlaw.paper_repro.mini.exittrain.paper_regime import (
    PAPER_REGIME,
    PAPER_REGIME_QUICK,
    Arm,
    Cell,
    PaperRegimeConfig,
    Paths,
    Plan,
    make_plan,
)
from exitlaw.theory.infra.flat_fields import from_flat

# "Schedule and arms": lam None is measured at calibration (2 % of CE, "Strength of the authors' tree term")
AUTHORS_ARMS = (
    Arm("token", "token", 0.0),
    Arm("prefix", "prefix", 0.1),
    Arm("exit", "exit", 0.1),
    Arm("exit-strength", "exit", None),
    Arm("authors", "prefix", 0.1, "nodes", 1e-4, literal=True),
    Arm("authors-token", "token", 0.0, "nodes", None, literal=True),
)
LITERAL_ARMS = ("authors", "authors-token")

# the paper's Table 2 (Qwen3-4B, B = 64): tau at T = 0 and T = 1 of each drafter
PAPER_TABLE2_TAU = {
    "base": {0.0: 7.80, 1.0: 7.08},
    "token": {0.0: 8.36, 1.0: 7.47},
    "prefix": {0.0: 8.21, 1.0: 7.72},
    "exit": {0.0: 8.85, 1.0: 8.06},
}
# the co-primary family (Bonferroni over all four): exit against each control at each judged temperature
PRIMARY = (("exit", "prefix"), ("exit", "token"))


def acceptance(tau: float) -> float:
    """Per-step acceptance ``a = 1 - 1/tau``: the acceptance rate of a chain with expected block ``tau``."""
    if not tau >= 1.0:
        raise ValueError(f"a block length is at least 1 token, got tau = {tau}")
    return 1.0 - 1.0 / tau


def paper_margin(a: str, b: str, temperature: float) -> float:
    """The paper's effect of ``a`` over ``b`` at ``temperature`` in per-step acceptance (Table 2)."""
    table = PAPER_TABLE2_TAU
    if a not in table or b not in table or temperature not in table[a]:
        raise ValueError(f"Table 2 has no tau for {a!r} / {b!r} at T = {temperature:g}")
    return acceptance(table[a][temperature]) - acceptance(table[b][temperature])


def translated_relative(delta_a: float, tau_b: float) -> float:
    """A per-step-acceptance effect ``delta_a`` over a drafter of tau ``tau_b``, as a relative tau effect
    (percent): ``tau' = 1 / (1/tau_b - delta_a)``."""
    return 100.0 * (1.0 / (1.0 / tau_b - delta_a) / tau_b - 1.0)


@dataclass(frozen=True)
class AuthorsRegimeConfig(PaperRegimeConfig):
    """Every setting ``paper_repro/AUTHORS_REGIME.md`` fixes, on top of the paper-regime numbers it keeps
    (prompt sets, fresh prompts, grid, schedule, seeds, evaluation size). Fields of the paper-regime design
    this one does not use are neutralised: no ``T_s`` check (``fallback_temperature`` equals
    ``scoring_temperature``), no prose or budget row, no relative margins."""

    preset: str = "authors-regime"
    scoring_temperature: float = 1.0  # "Tree weights": the target at T = 1
    fallback_temperature: float = 1.0  # no T_s check: the weights' temperature is fixed
    informative_coverage: float = 0.0
    data_temperature: float = 0.0  # "Fine-tuning data": regenerated greedily
    judged_temperatures: tuple[float, ...] = (0.0, 1.0)
    arms: tuple[str, ...] = tuple(a.name for a in AUTHORS_ARMS)
    budget_row: tuple[int, ...] = ()
    budget_row_drafters: tuple[str, ...] = ()
    margins_pct: dict = field(default_factory=dict)
    # "Calibration of the rate"
    tie_tolerance: float = 0.005  # percentage points of the mean relative gain, as a fraction
    strength_of_ce: float = 0.02  # the authors' tree term, as a share of CE
    strength_last_steps: int = 10
    # "Base drafter, and the pre-registered fallback"
    fallback_base_step: int = 1500
    # "Precondition"
    precondition_level: float = 0.95
    depth_tolerance: float = 0.10
    # "Verdict rules": 4 co-primary comparisons, alpha 0.05 / 4
    primary_level: float = 0.9875
    secondary_level: float = 0.95
    strength_lam: float | None = None  # measured at calibration; None until then

    @staticmethod
    def arm_table() -> tuple[Arm, ...]:
        return AUTHORS_ARMS

    def __post_init__(self):
        if self.base.distill.steps % 4 or self.fallback_base_step % (self.base.distill.steps // 4):
            raise ValueError(
                f"the fallback base step {self.fallback_base_step} is not a checkpoint of the "
                f"{self.base.distill.steps}-step distillation (every {self.base.distill.steps // 4})"
            )
        if not 0 < self.fallback_base_step < self.base.distill.steps:
            raise ValueError("the fallback base is an earlier checkpoint of the distillation")
        super().__post_init__()

    def arm(self, name: str) -> Arm:
        for a in AUTHORS_ARMS:
            if a.name == name:
                if a.lam is None:
                    if self.strength_lam is None:
                        raise ValueError(
                            f"arm {name!r}: its lambda is measured at calibration; not measured yet"
                        )
                    return replace(a, lam=self.strength_lam)
                return a
        raise ValueError(f"unknown arm {name!r} of the authors-regime design")

    def ft_temperature(self, t_s: float) -> float:
        return self.data_temperature

    def drafter_cells(self, drafter: str, arm: str, t_s: float) -> list[Cell]:
        """Code at every judged temperature and the evaluation budget; the literal arms also at their
        training budget ("Evaluation and estimands")."""
        budgets = [self.eval_budget]
        if arm in LITERAL_ARMS and self.literal_eval_budget != self.eval_budget:
            budgets.append(self.literal_eval_budget)
        return [Cell(drafter, "code", t, b) for b in budgets for t in self.judged_temperatures]


AUTHORS_REGIME = AuthorsRegimeConfig(base=PAPER_REGIME.base)
# the CI-sized twin: the quick paper-regime sizes with these rules
AUTHORS_REGIME_QUICK = AuthorsRegimeConfig(
    **{
        k: getattr(PAPER_REGIME_QUICK, k)
        for k in (
            "base eval_prompts eval_prompt_tokens ft_prompts ft_continuation_tokens lr_grid recipe "
            "literal literal_window literal_lr seeds eval_new_tokens "
            "literal_eval_budget eval_budget"
        ).split()
    },
    preset="authors-regime-quick",
    fallback_base_step=PAPER_REGIME_QUICK.base.distill.steps // 2,
    strength_last_steps=3,
)


def plan_of(paths: Paths, cfg: AuthorsRegimeConfig, calibration: dict) -> Plan:
    """The run's plan once calibration is done: its rate, its base drafter and its measured lambda."""
    measured = replace(cfg, strength_lam=calibration["strength"]["lambda"])
    return make_plan(
        measured,
        paths.out,
        cfg.scoring_temperature,
        float(calibration["chosen_lr"]),
        base_drafter=paths.out / calibration["base_drafter"],
    )


def config_from_json(data: dict) -> PaperRegimeConfig:
    """The configuration a run wrote (``paper_regime_config.json``): an :class:`AuthorsRegimeConfig` when
    its preset is an authors-regime one, else a :class:`PaperRegimeConfig`."""
    kind = (
        AuthorsRegimeConfig
        if str(data.get("preset", "")).startswith("authors-regime")
        else PaperRegimeConfig
    )
    return from_flat(kind, data, what="paper-regime configuration")


PRESETS = {"authors-regime": AUTHORS_REGIME, "authors-regime-quick": AUTHORS_REGIME_QUICK}
