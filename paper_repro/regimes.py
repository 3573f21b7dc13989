"""The regime and scale of the evidence behind an ExitTrain ledger row, read from the source run's own records.

A :class:`Regime` says what a verdict was decided on (issue 34, item 4: "verdicts that say their scale
and level"): the scale (``mini`` engine run on a CPU, ``simulation``, or ``paper``), the model sizes, the
fine-tuning steps, the three temperatures that matter -- the target temperature of the fine-tuning
**data**, the temperature at which the tree weights are **scored**, the temperatures the effect is
**judged** at -- and the **level** of the row's interval. The run-level fields come from the run's own
files (:func:`paper_regime_run`, :func:`sim_sweep_run`); the judged temperatures and the level come from
the records and interval the row was decided on (:meth:`Regime.judged`). A run with other temperatures
(e.g. greedy data, weights scored at T = 1, judged at T = 0 and T = 1) is one more record of this kind.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

REGIME_SCALES = ("mini", "simulation", "paper")
# a sweep config that records no ``train_temperature`` is the default sweep, which trains and scores at T = 1
# (simulate/exittrain/sweep.py, SweepConfig.train_temperature; a test pins the two together)
SWEEP_DEFAULT_TRAIN_TEMPERATURE = 1.0


class RegimeError(ValueError):
    """A run's records do not say its regime (the missing field is named in the message)."""


def _temp(t: float) -> str:
    return f"T={float(t):g}" + (" (greedy)" if float(t) == 0.0 else "")


@dataclass(frozen=True)
class Regime:
    """What one row's evidence is: scale, model sizes, steps, data / scoring / judged temperatures, level."""

    scale: str
    run: str  # the run, in words (its command and design)
    models: str  # the model sizes, in words
    steps: str  # the fine-tuning steps, in words
    data_temperature: (
        float  # the target's temperature for the fine-tuning continuations (0: greedy)
    )
    scoring_temperature: float  # the target law the training trees' weights are scored under
    source: str  # the files (and keys) the fields were read from
    judged_temperatures: tuple[float, ...] = ()  # where the row's effect is judged (set per row)
    level: float | None = None  # the row's interval level, 1 - alpha (set per row)

    def __post_init__(self) -> None:
        if self.scale not in REGIME_SCALES:
            raise RegimeError(f"scale must be one of {REGIME_SCALES}, got {self.scale!r}")
        for name in ("run", "models", "steps", "source"):
            if not str(getattr(self, name)).strip():
                raise RegimeError(f"a regime needs its {name}")
        temps = (self.data_temperature, self.scoring_temperature, *self.judged_temperatures)
        if not all(isinstance(t, (int, float)) and math.isfinite(t) and t >= 0 for t in temps):
            raise RegimeError(f"temperatures must be finite and >= 0, got {temps}")
        if self.level is not None and not 0 < self.level < 1:
            raise RegimeError(f"level must lie in (0, 1), got {self.level}")

    def judged(self, temperatures, level: float) -> "Regime":
        """This run's regime for one row: judged at ``temperatures`` with an interval of ``level``."""
        temps = tuple(sorted({float(t) for t in temperatures}))
        if not temps:
            raise RegimeError("a row is judged at one temperature at least")
        return replace(self, judged_temperatures=temps, level=float(level))

    @property
    def complete(self) -> bool:
        return bool(self.judged_temperatures) and self.level is not None

    def scale_words(self) -> str:
        return {"mini": "mini scale (CPU)", "simulation": "simulation", "paper": "paper scale"}[
            self.scale
        ]

    def temperatures(self) -> str:
        judged = " and ".join(_temp(t) for t in self.judged_temperatures) or "?"
        return (
            f"data at {_temp(self.data_temperature)}, weights scored at "
            f"{_temp(self.scoring_temperature)}, judged at {judged}"
        )

    def level_words(self) -> str:
        if self.level is None:
            return "level ?"
        return f"{100 * self.level:g} % CI (alpha {1 - self.level:.3g})"

    def tag(self, scale: bool = True) -> str:
        """The regime in words: scale (left out with ``scale=False``, where the verdict's words say it),
        models, steps, temperatures, level."""
        body = f"{self.models}; {self.steps}; {self.temperatures()}; {self.level_words()}"
        return f"{self.scale_words()}: {body}" if scale else body

    def text(self) -> str:
        """The row's scale column: the tag, then the run and the files it was read from."""
        return f"{self.tag()}. Run: {self.run}; regime read from {self.source}"

    def to_json(self) -> dict:
        d = asdict(self)
        d["judged_temperatures"] = list(self.judged_temperatures)
        return d


# ----- readers: one per kind of run -------------------------------------------------------------------------
def _get(d: dict, *keys, where: str):
    cur = d
    for k in keys:
        if not isinstance(cur, dict) or k not in cur:
            raise RegimeError(f"{where} records no {'.'.join(map(str, keys))}")
        cur = cur[k]
    return cur


def _mini_sizes(cfg: dict, where: str) -> tuple[str, str]:
    """A mini ExitTrain run's model sizes and fine-tuning steps, in words, from its recorded config."""
    tgt = _get(cfg, "base", "target", where=where)
    base = cfg["base"]
    epochs = _get(cfg, "epochs", where=where)
    prompts = _get(cfg, "ft_prompts", where=where)
    batch = _get(cfg, "batch_size", where=where)
    models = (
        f"target {tgt['num_layers']} layers, hidden {tgt['hidden_size']}, vocabulary "
        f"{_get(base, 'vocab_size', where=where)}; drafter {_get(base, 'draft_layers', where=where)} "
        f"layers, block {_get(base, 'block_size', where=where)} (Qwen3-4B/8B in the paper)"
    )
    steps = (
        f"{epochs * prompts // batch} fine-tuning steps ({epochs} epochs x {prompts} sequences, "
        f"{batch} per step) from a drafter distilled for {_get(base, 'distill_steps', where=where)} steps"
    )
    return models, steps


PAPER_REGIME_RUN = "`exitlaw repro mini --preset paper-regime`, design paper_repro/PAPER_REGIME.md"


def _mini_run(
    results: dict,
    data: dict,
    *,
    folder: str,
    run: str,
    level_key: str,
    role: str,
    level: float,
    scoring: tuple[str, ...],
) -> Regime:
    """A mini ExitTrain run's regime from ``FOLDER/results.json`` (its config; the scoring temperature at
    the key path ``scoring``) and ``FOLDER/ft_data/fresh_prompts.json`` (``continuation_temperature``);
    ``level`` must be the level the run declares at ``level_key`` for its ``role`` comparisons."""
    where = f"{folder}/results.json"
    cfg = _get(results, "config", where=where)
    declared = _get(cfg, level_key, where=where)
    if abs(float(declared) - float(level)) > 1e-12:
        raise RegimeError(
            f"the row's interval level {level:g} is not the level the run declares for its {role} "
            f"comparisons ({float(declared):g})"
        )
    models, steps = _mini_sizes(cfg, where)
    data_file = f"{folder}/ft_data/fresh_prompts.json"
    return Regime(
        scale="mini",
        run=run,
        models=models,
        steps=steps,
        data_temperature=float(_get(data, "continuation_temperature", where=data_file)),
        scoring_temperature=float(_get(results, *scoring, where=where)),
        source=f"{where} ({'config' if scoring[0] == 'config' else 'config, ' + scoring[0]}), "
        f"{data_file} (continuation_temperature)",
    )


def paper_regime_run(results: dict, data: dict, *, role: str, level: float) -> Regime:
    """The paper-regime mini run's regime from its ``results.json`` (config, ``T_s``) and its fine-tuning
    data record ``ft_data/fresh_prompts.json`` (``continuation_temperature``). ``role`` and ``level``: the
    row's role in the run's design and its interval level, which must be the level the run declares for
    that role (``primary_level`` / ``secondary_level``)."""
    return _mini_run(
        results,
        data,
        folder="paper_regime",
        run=PAPER_REGIME_RUN,
        level_key="primary_level" if role == "primary" else "secondary_level",
        role=role,
        level=level,
        scoring=("T_s",),
    )


AUTHORS_REGIME_RUN = (
    "`exitlaw repro mini --preset authors-regime`, design paper_repro/AUTHORS_REGIME.md"
)


def authors_regime_run(results: dict, data: dict, *, level: float) -> Regime:
    """The authors'-recipe mini run's regime from its ``results.json`` (config: sizes, the scoring
    temperature, the co-primary level) and ``ft_data/fresh_prompts.json`` (``continuation_temperature``).
    ``level`` is the row's interval level and must be the run's declared ``primary_level``."""
    return _mini_run(
        results,
        data,
        folder="authors_regime",
        run=AUTHORS_REGIME_RUN,
        level_key="primary_level",
        role="primary",
        level=level,
        scoring=("config", "scoring_temperature"),
    )


SIM_SWEEP_RUN = "`exitlaw simulate exittrain --sweep` (simulate/exittrain/sweep.py)"


def sim_sweep_run(files, regime: str, *, run: str = SIM_SWEEP_RUN, source: str) -> Regime:
    """A simulation sweep's regime ``regime`` (e.g. ``deep``) from the ``config`` its files record; a config
    without ``train_temperature`` is the default sweep (:data:`SWEEP_DEFAULT_TRAIN_TEMPERATURE`)."""
    configs = [
        f["config"] for f in (files if isinstance(files, list) else [files]) if "config" in f
    ]
    if not configs:
        raise RegimeError(f"{source} records no config")
    temps = {float(c.get("train_temperature", SWEEP_DEFAULT_TRAIN_TEMPERATURE)) for c in configs}
    regs = [r for c in configs for r in c.get("regimes", ()) if r.get("name") == regime]
    if not regs or len(temps) != 1:
        raise RegimeError(
            f"{source} records {len(regs)} config(s) of regime {regime!r} and training temperatures "
            f"{sorted(temps)}: need one of each"
        )
    r, (t,) = regs[0], temps
    where = f"{source} regime {regime!r}"
    models = (
        f"synthetic n-gram target, vocabulary {_get(r, 'vocab', where=where)}, zipf "
        f"{_get(r, 'zipf', where=where):g}, horizon {_get(r, 'horizon', where=where)}; drafter rank "
        f"{_get(r, 'rank', where=where)} (Qwen3-4B/8B in the paper)"
    )
    steps = (
        f"{_get(r, 'steps', where=where)} fine-tuning steps of {_get(r, 'batch', where=where)} rollouts "
        f"after {_get(r, 'pretrain_steps', where=where)} token-only pretraining steps"
    )
    return Regime(
        scale="simulation",
        run=run,
        models=models,
        steps=steps,
        data_temperature=t,
        scoring_temperature=t,  # the sweep scores its training trees at its training temperature
        source=f"{source} (config)",
    )


__all__ = [
    "Regime",
    "RegimeError",
    "REGIME_SCALES",
    "SWEEP_DEFAULT_TRAIN_TEMPERATURE",
    "authors_regime_run",
    "paper_regime_run",
    "sim_sweep_run",
]
