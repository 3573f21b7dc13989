"""A powered, paired simulation sweep of ExitTrain objectives (token / prefix / exit / exit-depth / draft-opd / vat).

Design. For every regime (synthetic order-2 target + position-wise drafter,
:class:`~exitlaw.simulate.exittrain.mini.Regime`) and seed ``s``: one starting
drafter (random init from seed ``s``, then token-only pretraining on seed
``s``'s data), one stream of training contexts and target continuations, and one
key stream for on-policy draws. Every objective of
:func:`sweep_objectives` fine-tunes that same starting drafter on that same data
with the same optimizer and steps (common random numbers), at training tree
budgets 32 and 64; the drafters are scored exactly (``tau = 1 + E_pi C_p``) at
eval budgets 32/64/128 under the target at T = 0 and T = 1. Seeds and
objectives are batched with ``jax.vmap`` (:mod:`exitlaw.simulate.exittrain.fast`).

Statistics. For a comparison "A vs B" in a cell (regime, train budget, eval
budget, T), the per-seed paired difference is ``d_s = tau_A(s) - tau_B(s)``
(and ``100 d_s / tau_B(s)`` in %); we report the mean and the 95 % t-interval
over seeds, ``mean +- t_{0.975, n-1} sd / sqrt(n)``.

DECISION RULE (written before the first full run, and kept):

1. Per cell: "A > B" when the 95 % CI of the mean paired difference lies entirely
   above 0; "A < B" when entirely below 0; otherwise "undecided" (the CI's
   half-width is the resolution reached). Zero-variance differences are decided
   by their sign (identical drafters give "=").
2. "exit > prefix > token" holds in a cell when both "exit > prefix" and
   "prefix > token" hold there, for the same lambda, normalisation and edge floor.
3. Primary cells, named in advance: regime ``deep``, training budget 64 (the
   paper's Table 2), eval budget 64, T = 0 and T = 1, the paper's reading
   (weights ``exit`` vs ``prefix``, normalisation ``tree``, no floor), separately
   for lambda = 0.1 and lambda = 1. The paper's claim is supported at a lambda when
   the ordering holds in both primary cells of that lambda; contradicted when
   "exit < prefix" or "prefix < token" holds in either; otherwise inconclusive.
4. All other cells are secondary: we report in how many the ordering (and each
   comparison) holds, beside the ~2.5 % per cell and direction that chance alone
   gives when there is no effect (no multiplicity correction is claimed).

MATCHED-TEMPERATURE CELLS (preset ``matched``; declared 2026-12-02, before its first run, and kept).
The sweep above trains on continuations of the target at T = 1 and scores its training trees with the
target at T = 1, then judges at T = 0 and T = 1: only its T = 1 cells judge the law the trainer
optimises. The ``matched`` preset trains at ``T_m = 0.5`` (continuations drawn from the target at
T_m and training trees scored at T_m; contexts from the same stationary law as evaluation) and
judges at T_m, T = 0 and T = 1. It runs regime ``deep``, 5 seeds, training budget 64, eval budgets
32/64/128, lambda 0.1 and 1, normalisations ``tree`` and ``nodes`` (``nodes`` at lambda 0.1 with the
edge floor 1e-4 is the authors' strength: 0.1 x the sum over tree nodes / their number).
5. Matched cells: regime ``deep``, training budget 64, eval budget 64, T = T_m. Per lambda and
   normalisation (``tree``, ``nodes``), the paper's claim "exit > prefix > token" is supported
   when both "exit > prefix" and "prefix > token" hold there (rule 1), contradicted when
   "exit < prefix" or "prefix < token" holds, otherwise inconclusive; the same rule applies to
   "exit-depth > prefix" at the authors' floored ``nodes`` configuration. These verdicts are
   reported beside the primary cells of rule 3 and change none of them.
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from scipy import stats

from exitlaw.simulate.exittrain.fast import make_pretrainer, make_trainer, rollouts, tau_table
from exitlaw.simulate.exittrain.mini import Regime, draft_logprobs, init_params, stationary
from exitlaw.simulate.exittrain.objectives import AUTHORS_ALPHA, NORMALISATIONS, Objective
from exitlaw.theory.infra.atomic_io import atomic_write_text
from exitlaw.theory.infra.provenance import cpu_info, git_commit
from exitlaw.theory.sampling_settings import check_temperature_floor

SCHEMA, VERSION = "exitlaw.sim_exittrain_sweep", 1
# the evaluation temperatures of the default sweep (``SweepConfig.eval_temperatures``)
TEMPS = ("T=0", "T=1")
PRIMARY = {"regime": "deep", "train_budget": 64, "eval_budget": 64}

# Deep: peaked target (Zipf 3), horizon 12, rank-4 drafter pretrained 600 steps: starting tau ~6.1 (T=0), ~4.2 (T=1) at B = 64.
# Shallow: the old mini regime ("lowrank": tau ~2, most nodes are leaves, w ~ P).
SWEEP_REGIMES: dict[str, Regime] = {
    "deep": Regime(
        "deep",
        vocab=64,
        zipf=3.0,
        horizon=12,
        rank=4,
        batch=32,
        pretrain_steps=600,
        steps=150,
        pretrain_lr=3e-2,
        lr=1e-2,
    ),
    "shallow": Regime(
        "shallow",
        vocab=64,
        zipf=1.5,
        horizon=8,
        rank=4,
        batch=32,
        pretrain_steps=150,
        steps=150,
        pretrain_lr=3e-2,
        lr=1e-2,
    ),
}


@dataclass(frozen=True)
class SweepConfig:
    regimes: tuple[Regime, ...]
    seeds: int = 5
    seed0: int = 0
    lambdas: tuple[float, ...] = (0.1, 1.0)
    norms: tuple[str, ...] = NORMALISATIONS
    train_budgets: tuple[int, ...] = (32, 64)
    eval_budgets: tuple[int, ...] = (32, 64, 128)
    authors_floor: bool = (
        True  # add the authors' configs (prefix & exit-depth, norm nodes, alpha = 1e-4)
    )
    extra: dict = field(default_factory=dict)
    # the target temperature of the training trees' scoring law (and of the continuations, unless
    # data_temperature is set)
    train_temperature: float = 1.0
    eval_temperatures: tuple[float, ...] = (0.0, 1.0)
    # the target temperature of the fine-tuning continuations: None ties it to train_temperature (the
    # shipped sweeps); 0 draws them greedily (the authors' regeneration), with trees still scored at
    # train_temperature
    data_temperature: float | None = None

    def __post_init__(self):
        if self.seeds < 2:
            raise ValueError(f"paired t-intervals need >= 2 seeds, got {self.seeds}")
        if not self.regimes or not self.lambdas or not self.train_budgets or not self.eval_budgets:
            raise ValueError("regimes, lambdas, train_budgets and eval_budgets must be non-empty")
        names = [r.name for r in self.regimes]
        if len(set(names)) != len(names):
            raise ValueError(f"regime names must be distinct, got {names}")
        for b in (*self.train_budgets, *self.eval_budgets):
            if int(b) < 1:
                raise ValueError(f"tree budgets must be >= 1, got {b}")
        temps = (self.train_temperature, *self.eval_temperatures)
        if self.data_temperature is not None:
            temps = (*temps, self.data_temperature)
        if not self.eval_temperatures or not all(np.isfinite(t) and t >= 0 for t in temps):
            raise ValueError(
                f"temperatures must be finite and >= 0 with at least one eval temperature, "
                f"got train {self.train_temperature}, eval {self.eval_temperatures}"
            )
        for t in temps:
            check_temperature_floor(float(t))
        if self.train_temperature == 0:
            raise ValueError(
                "train_temperature 0 scores every training tree with a one-hot law (edges 0 or 1); use a "
                "positive temperature, and data_temperature=0 for greedy continuations"
            )
        if len(set(self.eval_temperatures)) != len(self.eval_temperatures):
            raise ValueError(f"eval temperatures must be distinct, got {self.eval_temperatures}")


def temp_label(t: float) -> str:
    """The row label of an evaluation temperature: ``T=0``, ``T=0.5``, ``T=1``."""
    return f"T={float(t):g}"


def eval_labels(cfg: dict | SweepConfig) -> tuple[str, ...]:
    """The evaluation temperatures' labels of a config (a JSON config without the field is the default sweep)."""
    temps = (
        cfg.get("eval_temperatures", (0.0, 1.0)) if isinstance(cfg, dict) else cfg.eval_temperatures
    )
    return tuple(temp_label(t) for t in temps)


MATCHED_TEMPERATURE = 0.5


def preset(name: str) -> SweepConfig:
    """``deep``, ``shallow``, ``all`` (both; the shipped sweep), ``matched`` (trained and judged at
    T = 0.5, rule 5) or ``quick`` (tiny, for tests and smoke runs)."""
    if name == "matched":
        return SweepConfig(
            (SWEEP_REGIMES["deep"],),
            norms=("tree", "nodes"),
            train_budgets=(64,),
            train_temperature=MATCHED_TEMPERATURE,
            eval_temperatures=(MATCHED_TEMPERATURE, 0.0, 1.0),
        )
    if name == "all":
        return SweepConfig((SWEEP_REGIMES["deep"], SWEEP_REGIMES["shallow"]))
    if name in SWEEP_REGIMES:
        return SweepConfig((SWEEP_REGIMES[name],))
    if name == "quick":
        tiny = Regime(
            "quick", vocab=8, zipf=2.0, horizon=4, rank=2, batch=4, pretrain_steps=5, steps=3
        )
        return SweepConfig((tiny,), seeds=2, train_budgets=(4,), eval_budgets=(4, 8))
    raise ValueError(f"unknown sweep preset {name!r}; known: deep, shallow, all, matched, quick")


def sweep_objectives(cfg: SweepConfig) -> list[Objective]:
    """Token, then per lambda: {prefix, exit, exit-depth} x norms, draft-opd, vat, and the authors' floored configs."""
    out = [Objective("token")]
    for lam in cfg.lambdas:
        out += [Objective(w, n, lam) for w in ("prefix", "exit", "exit-depth") for n in cfg.norms]
        out.append(Objective("draft-opd", "batch", lam))
        out.append(Objective("vat", "batch", lam))
        if cfg.authors_floor:
            out += [Objective(w, "nodes", lam, AUTHORS_ALPHA) for w in ("prefix", "exit-depth")]
    return out


def comparisons(cfg: SweepConfig) -> list[tuple[str, str]]:
    """``(A, B)`` name pairs compared (A minus B)."""
    pairs = []
    for lam in cfg.lambdas:
        for n in cfg.norms:
            e, p, d = (Objective(w, n, lam).name for w in ("exit", "prefix", "exit-depth"))
            pairs += [(e, p), (e, "token"), (p, "token"), (d, p), (d, e)]
        opd = Objective("draft-opd", "batch", lam).name
        pairs += [(opd, "token"), (Objective("exit", "tree", lam).name, opd)]
        vat = Objective("vat", "batch", lam).name
        pairs += [(vat, "token"), (Objective("exit", "tree", lam).name, vat)]
        # rule 5's ordering at the authors' floored configuration needs both pairs
        if cfg.authors_floor:
            floored_prefix = Objective("prefix", "nodes", lam, AUTHORS_ALPHA).name
            pairs += [
                (Objective("exit-depth", "nodes", lam, AUTHORS_ALPHA).name, floored_prefix),
                (floored_prefix, "token"),
            ]
    return pairs


# ----- paired statistics ------------------------------------------------------------------------------
def paired_interval(a, b, *, level: float = 0.95) -> dict[str, Any]:
    """Mean paired difference ``a - b`` over seeds with its t-interval (and the same in % of ``b``)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size < 2:
        raise ValueError(
            f"paired samples must be equal-length 1-D arrays of >= 2 seeds, got {a.shape} and {b.shape}"
        )
    if not np.all(b > 0):
        raise ValueError(f"relative differences need a positive reference tau, got {b.tolist()}")
    q = float(stats.t.ppf(0.5 + level / 2, a.size - 1))
    out: dict[str, Any] = {"n": int(a.size)}
    for key, d in (("diff", a - b), ("rel_pct", 100.0 * (a - b) / b)):
        mean, half = float(d.mean()), q * float(d.std(ddof=1)) / np.sqrt(d.size)
        out[key] = {"mean": mean, "lo": mean - half, "hi": mean + half, "per_seed": d.tolist()}
    lo, hi = out["diff"]["lo"], out["diff"]["hi"]
    out["verdict"] = ">" if lo > 0 else "<" if hi < 0 else ("=" if lo == hi == 0 else "undecided")
    return out


# ----- the sweep ------------------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def _pretrainer(lr: float):
    return jax.jit(jax.vmap(make_pretrainer(optax.adam(lr), draft_logprobs)))  # over seeds


@lru_cache(maxsize=None)
def _trainer(lr: float, budget: int):
    over_obj = jax.vmap(
        make_trainer(optax.adam(lr), budget, draft_logprobs),
        in_axes=(None, 0, None, None, None, None),
    )
    return jax.jit(jax.vmap(over_obj, in_axes=(0, None, 0, 0, 0, None)))  # seeds x objectives


@lru_cache(maxsize=None)
def _evaluator(budgets: tuple[int, ...], batch_dims: int):
    def one(p, mats, pi):
        return tau_table(p, mats, pi, budgets, draft_logprobs)

    for _ in range(batch_dims):
        one = jax.vmap(one, in_axes=(0, None, None))
    return jax.jit(one)


def _stack(trees):
    return jax.tree_util.tree_map(lambda *x: jnp.stack(x), *trees)


def _transition_matrices(reg: Regime, cfg: SweepConfig) -> dict[str, Any]:
    """The target's transition matrices at each temperature the regime pretrains, trains, samples and judges at."""
    target = reg.target.model()

    def at(t: float):
        return target.with_temperature(t).transition_matrix()

    m1 = target.transition_matrix()
    m0 = at(0.0)
    m_train = m1 if cfg.train_temperature == 1.0 else at(cfg.train_temperature)
    t_data = cfg.train_temperature if cfg.data_temperature is None else cfg.data_temperature
    return {
        "pi": stationary(m1),
        "pre": m1 if reg.pretrain_temperature == 1.0 else at(reg.pretrain_temperature),
        "train": m_train,
        "data": m_train if t_data == cfg.train_temperature else at(t_data),
        "eval": [m1 if t == 1.0 else m0 if t == 0.0 else at(t) for t in cfg.eval_temperatures],
    }


def _starting_drafters(reg: Regime, seeds: list[int], m_pre):
    """Init + token-only pretraining (no trees) per seed, vmapped over seeds."""
    init = _stack([init_params(reg, jax.random.PRNGKey(s)) for s in seeds])
    pre = [
        rollouts(
            np.random.default_rng([s, 1]),
            m_pre,
            stationary(m_pre),
            reg.pretrain_steps,
            reg.batch,
            reg.horizon,
        )
        for s in seeds
    ]
    return _pretrainer(reg.pretrain_lr)(
        init, jnp.asarray(np.stack([p[0] for p in pre])), jnp.asarray(np.stack([p[1] for p in pre]))
    )


def _training_data(reg: Regime, seeds: list[int], m_data, pi):
    """Contexts, continuations and on-policy keys per seed, shared by every objective and budget (CRN).

    Continuations come from the target at the data temperature, contexts from the evaluation's law.
    """
    data = [
        rollouts(np.random.default_rng([s, 2]), m_data, pi, reg.steps, reg.batch, reg.horizon)
        for s in seeds
    ]
    ctx = jnp.asarray(np.stack([d[0] for d in data]))
    cont = jnp.asarray(np.stack([d[1] for d in data]))
    keys = jnp.stack([jax.random.split(jax.random.PRNGKey(10_000 + s), reg.steps) for s in seeds])
    return ctx, cont, keys


def _regime_run(
    reg: Regime, cfg: SweepConfig, objectives: list[Objective], log: Callable[[str], None]
) -> dict:
    m = _transition_matrices(reg, cfg)
    seeds = [cfg.seed0 + i for i in range(cfg.seeds)]
    t0 = time.perf_counter()
    params0 = _starting_drafters(reg, seeds, m["pre"])
    mats, pij = tuple(jnp.asarray(e) for e in m["eval"]), jnp.asarray(m["pi"])
    judge_start, judge = (_evaluator(tuple(cfg.eval_budgets), d) for d in (1, 2))
    start = np.asarray(judge_start(params0, mats, pij))  # [seeds, nB, nT]
    log(
        f"{reg.name}: starting drafters ready ({time.perf_counter() - t0:.0f} s); tau at B={cfg.eval_budgets}: "
        + ", ".join(
            f"{lab} {np.round(start[..., i].mean(0), 3).tolist()}"
            for i, lab in enumerate(eval_labels(cfg))
        )
    )
    ctx, cont, keys = _training_data(reg, seeds, m["data"], m["pi"])
    codes = jnp.asarray(np.stack([o.code() for o in objectives]))
    out = {"start": start, "tau": {}, "loss_first_last": {}, "seconds": {}}
    for tb in cfg.train_budgets:
        t1 = time.perf_counter()
        train = _trainer(reg.lr, int(tb))
        params, losses = train(params0, codes, ctx, cont, keys, jnp.asarray(m["train"]))
        tau = np.asarray(judge(params, mats, pij))  # [seeds, O, nB, nT]
        losses = np.asarray(losses)
        k = max(1, min(10, reg.steps // 4))
        out["tau"][int(tb)] = tau
        out["loss_first_last"][int(tb)] = np.stack(
            [losses[..., :k].mean(-1), losses[..., -k:].mean(-1)], -1
        )
        out["seconds"][int(tb)] = time.perf_counter() - t1
        log(
            f"{reg.name}: train budget {tb}: {len(objectives)} objectives x {len(seeds)} seeds "
            f"in {out['seconds'][int(tb)]:.0f} s"
        )
    out["seeds"] = seeds
    return out


def run_sweep(cfg: SweepConfig, *, log: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """Run every regime of ``cfg``; return the JSON-ready result (schema :data:`SCHEMA` v :data:`VERSION`)."""
    t0, c0 = time.perf_counter(), time.process_time()
    objectives = sweep_objectives(cfg)
    names = [o.name for o in objectives]
    pairs = comparisons(cfg)
    regimes, rows = {}, []
    for reg in cfg.regimes:
        r = _regime_run(reg, cfg, objectives, log)
        reg_out = {
            "start_tau": r["start"].tolist(),
            "seeds": r["seeds"],
            "seconds": r["seconds"],
            "tau": {},
        }
        for tb, tau in r["tau"].items():
            reg_out["tau"][str(tb)] = {n: tau[:, i].tolist() for i, n in enumerate(names)}
            reg_out.setdefault("loss_first_last", {})[str(tb)] = {
                n: r["loss_first_last"][tb][:, i].tolist() for i, n in enumerate(names)
            }
            cols = {n: tau[:, i] for i, n in enumerate(names)} | {"start": r["start"]}
            for a, b in pairs + [(n, "start") for n in names]:
                for bi, eb in enumerate(cfg.eval_budgets):
                    for ti, temp in enumerate(eval_labels(cfg)):
                        rows.append(
                            {
                                "regime": reg.name,
                                "train_budget": int(tb),
                                "eval_budget": int(eb),
                                "T": temp,
                                "a": a,
                                "b": b,
                                **paired_interval(cols[a][:, bi, ti], cols[b][:, bi, ti]),
                            }
                        )
        regimes[reg.name] = reg_out
    result = {
        "schema": SCHEMA,
        "version": VERSION,
        "config": config_dict(cfg),
        "objectives": names,
        "comparisons": [list(p) for p in pairs],
        "decision_rule": decision_rule_text(),
        "regimes": regimes,
        "rows": rows,
        "provenance": provenance(),
        "seconds_total": time.perf_counter() - t0,
        "cpu_seconds_total": time.process_time() - c0,
    }
    result["primary"] = primary_verdicts(result)
    result["matched"] = matched_verdicts(result)
    result["summary"] = summarise(result)
    return result


def config_dict(cfg: SweepConfig) -> dict[str, Any]:
    """The full config as JSON; a regime's own ``train_budget``, ``lam`` and ``eval_budgets`` are not used by the sweep."""
    d = asdict(cfg)
    d["regimes"] = [{**asdict(r), "eval_budgets": list(r.eval_budgets)} for r in cfg.regimes]
    d["unused_regime_fields"] = ["train_budget", "lam", "eval_budgets"]
    return d


def provenance() -> dict[str, Any]:
    return {
        "exitlaw_version": version("exitlaw"),
        "git_commit": git_commit(Path(__file__).resolve().parent),
        "jax": jax.__version__,
        "optax": version("optax"),
        "numpy": np.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "platform": platform.platform(),
        "jax_backend": jax.default_backend(),
        "x64": bool(jax.config.jax_enable_x64),
        **cpu_info(),
    }


def decision_rule_text() -> str:
    doc = __doc__ or ""
    return doc[doc.index("DECISION RULE") :].strip()


def config_from_dict(d: dict[str, Any]) -> SweepConfig:
    """Rebuild a :class:`SweepConfig` from its JSON (``result["config"]``): a shipped sweep can be rerun."""
    regs = tuple(
        Regime(**{k: (tuple(v) if k == "eval_budgets" else v) for k, v in r.items()})
        for r in d["regimes"]
    )
    rest = {
        k: (tuple(v) if isinstance(v, list) else v)
        for k, v in d.items()
        if k not in ("regimes", "unused_regime_fields")
    }
    return replace(SweepConfig(regs), **rest)


# ----- verdicts, summary, output ----------------------------------------------------------------------------
def _row(result, **key):
    for r in result["rows"]:
        if all(r[k] == v for k, v in key.items()):
            return r
    return None


def primary_verdicts(result: dict[str, Any]) -> dict[str, Any]:
    """Rule 3 of the decision rule, per lambda (``None`` when the sweep has no primary cells)."""
    cfg = result["config"]
    if (
        PRIMARY["regime"] not in [r["name"] for r in cfg["regimes"]]
        or PRIMARY["train_budget"] not in cfg["train_budgets"]
        or PRIMARY["eval_budget"] not in cfg["eval_budgets"]
        or "tree" not in cfg["norms"]
        or cfg.get("train_temperature", 1.0) != 1.0
        or cfg.get("data_temperature") not in (None, 1.0)
        or not set(TEMPS) <= set(eval_labels(cfg))
    ):
        return {"available": False}
    out = {
        "available": True,
        "cells": PRIMARY | {"T": list(TEMPS), "norm": "tree"},
        "by_lambda": {},
    }
    for lam in cfg["lambdas"]:
        e, p = Objective("exit", "tree", lam).name, Objective("prefix", "tree", lam).name
        cells = {}
        for temp in TEMPS:
            key = dict(
                regime=PRIMARY["regime"],
                train_budget=PRIMARY["train_budget"],
                eval_budget=PRIMARY["eval_budget"],
                T=temp,
            )
            ep, pt = _row(result, a=e, b=p, **key), _row(result, a=p, b="token", **key)
            cells[temp] = {
                "exit-prefix": {k: ep[k] for k in ("diff", "rel_pct", "verdict")},
                "prefix-token": {k: pt[k] for k in ("diff", "rel_pct", "verdict")},
            }
        v = [c[k]["verdict"] for c in cells.values() for k in ("exit-prefix", "prefix-token")]
        verdict = (
            "supported"
            if all(x == ">" for x in v)
            else "contradicted"
            if any(x == "<" for x in v)
            else "inconclusive"
        )
        out["by_lambda"][f"{lam:g}"] = {"verdict": verdict, "cells": cells}
    return out


def _ordering(ep: str, pt: str) -> str:
    return "supported" if ep == pt == ">" else "contradicted" if "<" in (ep, pt) else "inconclusive"


def matched_verdicts(result: dict[str, Any]) -> dict[str, Any]:
    """Rule 5: the matched cells (trained and judged at the training temperature), per lambda and
    normalisation, and the authors' floored exit-depth vs prefix; ``available`` False without them."""
    cfg = result["config"]
    t_m = cfg.get("train_temperature", 1.0)
    if (
        PRIMARY["regime"] not in [r["name"] for r in cfg["regimes"]]
        or PRIMARY["train_budget"] not in cfg["train_budgets"]
        or PRIMARY["eval_budget"] not in cfg["eval_budgets"]
        or t_m == 1.0
        or cfg.get("data_temperature") not in (None, t_m)
        or temp_label(t_m) not in eval_labels(cfg)
    ):
        return {"available": False}
    key = dict(
        regime=PRIMARY["regime"],
        train_budget=PRIMARY["train_budget"],
        eval_budget=PRIMARY["eval_budget"],
        T=temp_label(t_m),
    )
    pick = ("diff", "rel_pct", "verdict")
    out: dict[str, Any] = {"available": True, "cells": key, "by_setting": {}}
    for lam in cfg["lambdas"]:
        for norm in cfg["norms"]:
            e, p = Objective("exit", norm, lam).name, Objective("prefix", norm, lam).name
            ep, pt, et = (
                _row(result, a=a, b=b, **key) for a, b in ((e, p), (p, "token"), (e, "token"))
            )
            out["by_setting"][f"lambda={lam:g}/{norm}"] = {
                "exit-prefix": {k: ep[k] for k in pick},
                "prefix-token": {k: pt[k] for k in pick},
                "exit-token": {k: et[k] for k in pick},
                "verdict": _ordering(ep["verdict"], pt["verdict"]),
            }
        if cfg.get("authors_floor", True):
            d = Objective("exit-depth", "nodes", lam, AUTHORS_ALPHA).name
            p = Objective("prefix", "nodes", lam, AUTHORS_ALPHA).name
            dp, pt = _row(result, a=d, b=p, **key), _row(result, a=p, b="token", **key)
            if dp is not None and pt is not None:
                out["by_setting"][f"lambda={lam:g}/authors-floored"] = {
                    "exit-depth-prefix": {k: dp[k] for k in pick},
                    "prefix-token": {k: pt[k] for k in pick},
                    "verdict": _ordering(dp["verdict"], pt["verdict"]),
                }
    return out


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    """Per comparison: counts of cells with ``>``, ``<``, undecided; and cells where exit > prefix > token holds."""
    counts: dict[str, dict[str, int]] = {}
    for r in result["rows"]:
        if r["b"] == "start":
            continue
        c = counts.setdefault(f"{r['a']} vs {r['b']}", {">": 0, "<": 0, "undecided": 0, "=": 0})
        c[r["verdict"]] += 1
    order = []
    for r in result["rows"]:
        a = r["a"].split("/")
        if r["b"] != "token" or a[0] != "prefix" or len(a) != 3:
            continue
        key = {k: r[k] for k in ("regime", "train_budget", "eval_budget", "T")}
        ep = _row(result, a="/".join(["exit", *a[1:]]), b=r["a"], **key)
        if ep is not None and r["verdict"] == ">" and ep["verdict"] == ">":
            order.append(
                key
                | {
                    "norm": a[1],
                    "lambda": a[2].split("=")[1],
                    "exit-prefix_pct": ep["rel_pct"]["mean"],
                    "prefix-token_pct": r["rel_pct"]["mean"],
                }
            )
    return {"counts": counts, "exit>prefix>token": order}


def write_sweep(
    result: dict[str, Any], out_dir: str | Path, *, overwrite: bool = False
) -> list[Path]:
    """``sweep.json``, ``sweep.md`` and ``config.json`` in ``out_dir`` (refuses to replace them unless ``overwrite``)."""
    out = Path(out_dir)
    paths = [out / "sweep.json", out / "sweep.md", out / "config.json"]
    if not overwrite and any(p.exists() for p in paths):
        raise FileExistsError(
            f"{', '.join(str(p) for p in paths if p.exists())} exist(s); pass overwrite=True (--overwrite)"
        )
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(paths[0], json.dumps(result, indent=1) + "\n")
    atomic_write_text(paths[1], format_markdown(result))
    atomic_write_text(
        paths[2],
        json.dumps(
            {"schema": SCHEMA + ".config", "version": VERSION, "config": result["config"]}, indent=1
        )
        + "\n",
    )
    return paths


def read_sweep(path: str | Path) -> dict[str, Any]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("schema") != SCHEMA or data.get("version") != VERSION:
        raise ValueError(
            f"{path}: schema {data.get('schema')!r} v{data.get('version')!r}, expected {SCHEMA!r} v{VERSION}"
        )
    return data


def _ci(x: dict, pct: bool = False) -> str:
    f = "{:+.2f}" if pct else "{:+.4f}"
    return f"{f.format(x['mean'])} [{f.format(x['lo'])}, {f.format(x['hi'])}]"


def _header_lines(result: dict[str, Any]) -> list[str]:
    """Title, the sweep's settings and one line per regime with its starting tau."""
    cfg = result["config"]
    n = cfg["seeds"]
    lines = [
        "# ExitTrain objectives: paired simulation sweep",
        "",
        f"Schema `{result['schema']}` v{result['version']}; {n} seeds; lambda {cfg['lambdas']}; "
        f"training budgets {cfg['train_budgets']}; eval budgets {cfg['eval_budgets']}; trained at "
        f"T = {cfg.get('train_temperature', 1.0):g}"
        + (
            ""
            if cfg.get("data_temperature") is None
            else f" (continuations at T = {cfg['data_temperature']:g})"
        )
        + f", judged at {', '.join(eval_labels(cfg))}; "
        f"{result['seconds_total']:.0f} s in total.",
        "Entries: mean paired difference of exact tau (A - B) over seeds, 95 % t-interval, and the "
        "verdict (`>`, `<`, `~` undecided) of the decision rule below.",
        "",
    ]
    for reg in cfg["regimes"]:
        st = np.asarray(result["regimes"][reg["name"]]["start_tau"])
        lines.append(
            f"- regime `{reg['name']}` (V={reg['vocab']}, Zipf {reg['zipf']}, H={reg['horizon']}, rank {reg['rank']}, "
            f"{reg['pretrain_steps']} pretrain + {reg['steps']} fine-tune steps x batch {reg['batch']}): starting tau "
            + ", ".join(
                f"B={b} "
                + " / ".join(
                    f"{st[:, i, j].mean():.3f} ({lab})" for j, lab in enumerate(eval_labels(cfg))
                )
                for i, b in enumerate(cfg["eval_budgets"])
            )
        )
    return lines


def _primary_lines(result: dict[str, Any]) -> list[str]:
    """The primary cells (named in advance), one table row per lambda and temperature."""
    prim = result["primary"]
    lines = ["", "## Primary cells (named in advance)", ""]
    if not prim["available"]:
        lines.append("This sweep has no primary cells.")
        return lines
    lines.append(
        f"Regime {prim['cells']['regime']}, training budget {prim['cells']['train_budget']}, eval budget "
        f"{prim['cells']['eval_budget']}, norm tree, T = 0 and 1."
    )
    lines += [
        "",
        "| lambda | T | exit - prefix (tau) | % | prefix - token (tau) | % | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for lam, v in prim["by_lambda"].items():
        for temp, c in v["cells"].items():
            lines.append(
                f"| {lam} | {temp} | {_ci(c['exit-prefix']['diff'])} {c['exit-prefix']['verdict']} | "
                f"{_ci(c['exit-prefix']['rel_pct'], True)} | {_ci(c['prefix-token']['diff'])} "
                f"{c['prefix-token']['verdict']} | {_ci(c['prefix-token']['rel_pct'], True)} | {v['verdict']} |"
            )
    return lines


def _matched_lines(result: dict[str, Any]) -> list[str]:
    """The matched cells (rule 5), or nothing when the sweep has none."""
    matched = result.get("matched", {"available": False})
    if not matched["available"]:
        return []
    c = matched["cells"]
    lines = [
        "",
        "## Matched cells: trained and judged at the same temperature (rule 5)",
        "",
        f"Regime {c['regime']}, training budget {c['train_budget']}, eval budget {c['eval_budget']}, {c['T']}.",
        "",
        "| setting | comparison | tau | % | verdict of the setting |",
        "|---|---|---|---|---|",
    ]
    for name, v in matched["by_setting"].items():
        for comp, r in v.items():
            if comp != "verdict":
                lines.append(
                    f"| {name} | {comp} | {_ci(r['diff'])} {r['verdict']} | {_ci(r['rel_pct'], True)} | "
                    f"{v['verdict']} |"
                )
    return lines


def _ordering_lines(result: dict[str, Any]) -> list[str]:
    """The cells where exit > prefix > token holds, out of all the cells that compare the three."""
    lines = ["", "## Where exit > prefix > token holds", ""]
    order = result["summary"]["exit>prefix>token"]
    total = sum(
        1
        for r in result["rows"]
        if r["b"] == "token" and r["a"].startswith("prefix/") and r["a"].count("/") == 2
    )
    lines.append(
        f"In {len(order)} of {total} cells (regime x train budget x lambda x norm x eval budget x T)."
    )
    for o in order:
        lines.append(
            f"- {o['regime']}, train B={o['train_budget']}, lambda={o['lambda']}, norm {o['norm']}, eval B={o['eval_budget']}, "
            f"{o['T']}: exit - prefix {o['exit-prefix_pct']:+.2f} %, prefix - token {o['prefix-token_pct']:+.2f} %"
        )
    return lines


def _count_lines(result: dict[str, Any]) -> list[str]:
    """Verdict counts per comparison over all cells."""
    lines = [
        "",
        "## Verdict counts per comparison (all cells)",
        "",
        "| A vs B | > | < | undecided |",
        "|---|---|---|---|",
    ]
    for k, c in result["summary"]["counts"].items():
        lines.append(f"| {k} | {c['>']} | {c['<']} | {c['undecided'] + c['=']} |")
    return lines


def _difference_tables(result: dict[str, Any]) -> list[str]:
    """One table of paired differences per regime and training budget (columns: eval budget x T)."""
    cfg = result["config"]
    cols = [(b, t) for t in eval_labels(cfg) for b in cfg["eval_budgets"]]
    mark = {">": ">", "<": "<", "undecided": "~", "=": "="}
    lines = []
    for reg in cfg["regimes"]:
        for tb in cfg["train_budgets"]:
            lines += [
                "",
                f"## {reg['name']}, training budget {tb}: paired differences in tau (A - B), 95 % CI",
                "",
                "| A | B | " + " | ".join(f"B={b} {t}" for b, t in cols) + " |",
                "|---|---|" + "---|" * len(cols),
            ]
            for a, b in [tuple(p) for p in result["comparisons"]]:
                cells = [
                    _row(result, regime=reg["name"], train_budget=tb, eval_budget=eb, T=t, a=a, b=b)
                    for eb, t in cols
                ]
                lines.append(
                    f"| {a} | {b} | "
                    + " | ".join(f"{_ci(c['diff'])} {mark[c['verdict']]}" for c in cells)
                    + " |"
                )
    return lines


def format_markdown(result: dict[str, Any]) -> str:
    """The sweep's report: settings, primary and matched cells, orderings, counts, every paired table."""
    lines = (
        _header_lines(result)
        + _primary_lines(result)
        + _matched_lines(result)
        + _ordering_lines(result)
        + _count_lines(result)
        + _difference_tables(result)
    )
    lines += ["", "## Decision rule", "", result["decision_rule"], ""]
    return "\n".join(lines)


def sweep_to_dir(
    sweep: str | Path,
    out_dir: str | Path,
    *,
    overwrite: bool = False,
    log: Callable[[str], None] = lambda s: None,
) -> dict[str, Any]:
    """Run a preset (``deep``, ``shallow``, ``all``, ``quick``) or a shipped ``config.json``; write it to ``out_dir``.

    Fails before any computation when the outputs exist and ``overwrite`` is false.
    """
    out = Path(out_dir)
    if not overwrite and any((out / f).exists() for f in ("sweep.json", "sweep.md", "config.json")):
        raise FileExistsError(
            f"{out} already holds a sweep; pass overwrite=True (--overwrite) to replace it"
        )
    path = Path(sweep)
    if path.suffix == ".json":
        if not path.is_file():
            raise FileNotFoundError(f"sweep config {str(path)!r} does not exist")
        cfg = config_from_dict(json.loads(path.read_text(encoding="utf-8"))["config"])
    else:
        cfg = preset(str(sweep))
    result = run_sweep(cfg, log=log)
    result["paths"] = [str(p) for p in write_sweep(result, out, overwrite=overwrite)]
    return result
