"""One unit policy for the ExitTrain rows (issue 49, item 4): per-step acceptance ``a`` primary, relative tau beside.

``a = 1 - 1/tau`` is the acceptance rate of a chain with the same expected block length; a fixed gain in
``a`` moves tau by a relative amount that grows with tau, so relative effects measured at tau 2.5 (mini)
and tau 8 (the paper) cannot be compared and effects in ``a`` can (``paper_repro/AUTHORS_REGIME.md``,
"The unit"). This module gives every ExitTrain source both units, each with its interval:

* :func:`regime_units`: the paper-regime run's comparisons recomputed from its shipped cells (the same
  crossed seed x prompt intervals as its report), at its primary cell (code, T = T_s, B = 64), over its
  budget row, and at the T = 0 / T = 1 cells its rows did not judge;
* :func:`sweep_units`: a simulation sweep's comparison from its per-seed exact tau (paired t over seeds),
  pooled with equal weight over the judged temperatures;
* :func:`paper_effect_a`: the paper's Table 2 effect in ``a`` (the smallest over T = 0 and T = 1);
* :func:`power_against`: the power of a row's interval against the paper's effect in its unit.

``exitlaw repro units --overwrite`` (:func:`write_regime_units`) writes ``paper_regime/acceptance.json`` from the
shipped paper-regime folder (seconds; the ledger reads it).
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import NormalDist

import numpy as np

from exitlaw import __version__
from exitlaw.paper_repro.mini.exittrain.authors_regime import (
    PAPER_TABLE2_TAU,
    config_from_json,
    paper_margin,
)
from exitlaw.paper_repro.mini.exittrain.authors_regime_report import compare
from exitlaw.paper_repro.mini.exittrain.paper_regime import Paths, read_all_cells
from exitlaw.paper_repro.mini.exittrain.paper_regime_report import arm_values
from exitlaw.paper_repro.mini.stats import crossed_mean_ci
from exitlaw.theory.infra.atomic_io import atomic_write_json
from exitlaw.theory.infra.provenance import git_commit

SCHEMA = "exitlaw.exittrain_units/1"
RESULTS = Path(__file__).resolve().parents[2] / "results"
UNIT_A, UNIT_REL = "a (= 1 - 1/tau)", "relative tau (%)"
# the paper-regime rows' comparisons: (a, b, temperature or "T_s", budget or "row", level)
REGIME_RECORDS = (
    ("exit", "token", "T_s", 64, 0.975),
    ("exit", "prefix", "T_s", 64, 0.975),
    ("exit", "base", "T_s", 64, 0.95),
    ("exit", "base", "T_s", "row", 0.95),
    ("token", "base", "T_s", 64, 0.95),
    *(
        (a, b, t, 64, 0.95)
        for t in (0.0, 1.0)
        for a, b in (("exit", "base"), ("exit", "token"), ("exit", "prefix"), ("token", "base"))
    ),
)
_N = NormalDist()


def paper_effect_a(a: str, b: str) -> float:
    """The paper's effect of ``a`` over ``b`` in ``a`` units: the smaller of Table 2's T = 0 and T = 1."""
    if a not in PAPER_TABLE2_TAU or b not in PAPER_TABLE2_TAU:
        raise ValueError(f"Table 2 has no {a!r} / {b!r}")
    return min(paper_margin(a, b, t) for t in (0.0, 1.0))


def power_against(effect: float, lo: float, hi: float, level: float) -> float:
    """Normal power of the two-sided level-``level`` test whose interval is ``[lo, hi]`` against ``effect``."""
    z = _N.inv_cdf(0.5 + level / 2)
    se = (hi - lo) / (2 * z)
    if se <= 0:
        return 1.0 if effect > 0 else 0.0
    return float(_N.cdf(abs(effect) / se - z))


def _record(a, b, t, budget, level, acc: dict, rel: dict) -> dict:
    return {
        "a": a,
        "b": b,
        "temperature": t,
        "budget": budget,
        "level": level,
        "delta_a": {k: float(acc[k]) for k in ("mean", "lo", "hi", "se", "df")},
        "relative_tau_pct": {k: float(rel[k]) for k in ("mean", "lo", "hi")},
    }


def regime_units(folder: str | Path) -> dict:
    """Both units of every :data:`REGIME_RECORDS` comparison of a paper-regime run folder (its cells)."""
    paths = Paths(Path(folder))
    cfg = config_from_json(json.loads(paths.config.read_text(encoding="utf-8")))
    cells = read_all_cells(paths.out)
    t_s = float(json.loads(paths.scoring_temperature.read_text(encoding="utf-8"))["T_s"])
    out = []
    for a, b, t, budget, level in REGIME_RECORDS:
        temp = t_s if t == "T_s" else float(t)
        if budget != "row":
            r = compare(cells, cfg, a, b, temp, budget, level)
            out.append(_record(a, b, temp, budget, level, r["delta_a"], r["relative_tau_pct"]))
            continue
        acc, rel = [], []  # per (seed, prompt) differences averaged over the budget row
        for bud in cfg.budget_row:
            va = arm_values(cells, cfg, a, "code", temp, bud, "rb_tau")
            vb = arm_values(cells, cfg, b, "code", temp, bud, "rb_tau")
            xa = np.asarray([va[s] for s in cfg.seeds], dtype=np.float64)
            xb = np.asarray([vb[s] for s in cfg.seeds], dtype=np.float64)
            acc.append(1 / xb - 1 / xa)
            rel.append(100 * (xa / xb - 1))
        ca = crossed_mean_ci(np.mean(acc, 0), level=level)
        cr = crossed_mean_ci(np.mean(rel, 0), level=level)
        out.append(_record(a, b, temp, f"mean of {list(cfg.budget_row)}", level, ca, cr))
    return {
        "schema": SCHEMA,
        "source": str(Path(folder).name) + " (eval/cells*.jsonl, paper_regime_config.json)",
        "estimand": "Rao-Blackwellised tau per prompt, code prompts; a = 1 - 1/tau; crossed seed x prompt "
        "intervals (mini/stats.py)",
        "T_s": t_s,
        "records": out,
        "provenance": _provenance(),
    }


def _provenance() -> dict:
    return {
        "exitlaw_version": __version__,
        "git_commit": git_commit(Path(__file__).resolve().parent),
    }


def find(units: dict, a: str, b: str, temperature: float, budget) -> dict:
    """The one record of ``a - b`` at ``temperature`` and ``budget`` (``"row"``: the budget-row mean)."""
    hits = [
        r
        for r in units.get("records", [])
        if r["a"] == a
        and r["b"] == b
        and float(r["temperature"]) == float(temperature)
        and (str(r["budget"]).startswith("mean") if budget == "row" else r["budget"] == budget)
    ]
    if len(hits) != 1:
        raise KeyError(f"no single '{a} - {b}' record at T = {temperature:g}, B = {budget}")
    return hits[0]


def sweep_units(
    sweep: dict,
    a: str,
    b: str,
    regime: str = "deep",
    train_budget: int = 64,
    eval_budget: int = 64,
    temperatures=None,
    level: float = 0.95,
) -> dict:
    """``a - b`` of a simulation sweep in both units from its per-seed exact tau: per seed the equal-weight
    mean over the judged ``temperatures`` (default: every one the sweep judged), paired t over seeds."""
    from scipy import stats  # lazy: scipy (simulate extra); the ledger imports units

    cfg = sweep["config"]
    labels = [float(t) for t in cfg.get("eval_temperatures", (0.0, 1.0))]
    temps = labels if temperatures is None else [float(t) for t in temperatures]
    bi = list(cfg["eval_budgets"]).index(eval_budget)
    tau = sweep["regimes"][regime]["tau"][str(train_budget)]
    ta, tb = np.asarray(tau[a], dtype=np.float64), np.asarray(tau[b], dtype=np.float64)
    idx = [labels.index(t) for t in temps]
    da = (1 / tb - 1 / ta)[:, bi, idx].mean(-1)
    dr = (100 * (ta / tb - 1))[:, bi, idx].mean(-1)
    n = da.size
    q = float(stats.t.ppf(0.5 + level / 2, n - 1))

    def ci(d):
        m, se = float(d.mean()), float(d.std(ddof=1) / np.sqrt(n))
        return {"mean": m, "lo": m - q * se, "hi": m + q * se, "se": se, "df": n - 1}

    return {
        "a": a,
        "b": b,
        "temperatures": temps,
        "level": level,
        "seeds": n,
        "delta_a": ci(da),
        "relative_tau_pct": ci(dr),
        "tau_b": float(tb[:, bi, idx].mean()),
    }


def write_regime_units(
    regime: str | Path = RESULTS / "paper_regime", out: str | Path | None = None
) -> Path:
    """:func:`regime_units` of ``regime`` written to ``out`` (default ``regime/acceptance.json``)."""
    path = Path(out) if out else Path(regime) / "acceptance.json"
    atomic_write_json(path, regime_units(regime), indent=1)
    return path
