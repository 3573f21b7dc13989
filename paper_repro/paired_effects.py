"""Paired-effect records: the one shape in which the ledger reads ExitTrain comparisons.

A record (a dict; extra keys are ignored)::

    {"comparison": "exit-prefix",        # "A-B": A minus B; names: base token prefix exit exit-depth draft-opd
     "metric": "tau",
     "setting": {"regime": "deep", "train_budget": 64, "eval_budget": 64, "temperature": 0.0,
                 "lambda": 0.1, "weight_norm": "tree", "edge_floor": None,   # simulation sweep keys
                 "domain": "code", "verifier": "tev"},                        # engine keys (deep mini)
     "diff":    {"mean": 0.21, "lo": 0.05, "hi": 0.37},    # A - B in tokens per round, 95 % CI
     "rel_pct": {"mean": 4.9,  "lo": 1.2,  "hi": 8.6},     # 100 (A - B) / mean tau of B, 95 % CI
     "level": 0.95, "mde_pct": 3.1, "n_seeds": 5, "n_units": 40, "method": "..."}

``temperature`` is a float, budgets are ints. A file holds records either
directly (a top-level list ``paired_effects``) or in one of two native formats
that :func:`records` converts:

* the simulation sweep (``schema`` ``exitlaw.sim_exittrain_sweep``): ``rows`` of
  ``{regime, train_budget, eval_budget, T: "T=0", a, b, n, diff, rel_pct}`` with
  objective names ``token`` | ``start`` | ``weight/norm/lambda=x[/floor=alpha]``;
  a row whose two arms differ in normalisation, lambda or floor (other than
  against ``token``/``start``) has no single setting and is skipped;
* the deep mini run (``paired.cells``): cells ``{domain, temperature, budget,
  verifier, pairs: {"A - B": {mean, lo, hi, rel_mean, rel_lo, rel_hi, rel_mde,
  seeds, prompts}}}``.

:func:`paired_interval` selects records by a selector (key -> value, or a tuple
of allowed values; an absent key reads as ``None``) and pools them
(:func:`exitlaw.paper_repro.verdicts.pool`). Cells of one comparison share their training seeds
(the sweep judges one trained drafter at T = 0 and T = 1; the field lab's noise cells reuse its
seeds), so several cells are pooled with the interval that holds under any correlation between
them (``correlated=True``, docs/design.md §1.11).
"""

from __future__ import annotations

from exitlaw.paper_repro.verdicts import Interval, VerdictError, pool

SWEEP_SCHEMA = "exitlaw.sim_exittrain_sweep"


class PairedEffectError(ValueError):
    """A paired-effect file or record lacks what the ledger needs (named in the message)."""


def _objective(name: str) -> dict:
    """``{"weight", "weight_norm", "lambda", "edge_floor"}`` of a sweep objective name."""
    if name in ("token", "start"):
        return {"weight": "base" if name == "start" else "token"}
    parts = name.split("/")
    if len(parts) < 3 or not parts[2].startswith("lambda="):
        raise PairedEffectError(f"unreadable sweep objective name {name!r}")
    out = {
        "weight": parts[0],
        "weight_norm": parts[1],
        "lambda": float(parts[2][len("lambda=") :]),
        "edge_floor": None,
    }
    for extra in parts[3:]:
        if extra.startswith("floor="):
            out["edge_floor"] = float(extra[len("floor=") :])
    return out


def _from_sweep(data: dict) -> list[dict]:
    out = []
    for row in data.get("rows", []):
        a, b = _objective(row["a"]), _objective(row["b"])
        shared = {k: a.get(k) for k in ("weight_norm", "lambda", "edge_floor")}
        if len(b) > 1 and any(b.get(k) != v for k, v in shared.items()):
            continue  # arms with different settings: no single setting to select by
        out.append(
            {
                "comparison": f"{a['weight']}-{b['weight']}",
                "metric": "tau",
                "setting": {
                    "regime": row["regime"],
                    "train_budget": int(row["train_budget"]),
                    "eval_budget": int(row["eval_budget"]),
                    "temperature": float(str(row["T"]).removeprefix("T=")),
                    **shared,
                },
                "diff": row["diff"],
                "rel_pct": row["rel_pct"],
                "level": 0.95,
                "n_seeds": row.get("n"),
                "n_units": "exact tau (stationary contexts)",
                "method": "paired t-interval over seeds",
            }
        )
    return out


def _from_deep(data: dict) -> list[dict]:
    out = []
    for cell in data["paired"]["cells"]:
        setting = {
            "domain": cell["domain"],
            "temperature": float(cell["temperature"]),
            "eval_budget": int(cell["budget"]),
            "verifier": cell["verifier"],
        }
        for pair, r in cell.get("pairs", {}).items():
            a, b = (s.strip() for s in pair.split(" - "))
            out.append(
                {
                    "comparison": f"{a}-{b}",
                    "metric": "tau",
                    "setting": setting,
                    "diff": {k: r[k] for k in ("mean", "lo", "hi")},
                    "rel_pct": {"mean": r["rel_mean"], "lo": r["rel_lo"], "hi": r["rel_hi"]},
                    "level": float(r.get("level", 0.95)),
                    "mde_pct": r.get("rel_mde"),
                    "n_seeds": r.get("seeds"),
                    "n_units": r.get("prompts"),
                    "method": data["paired"].get("method", "paired over seeds and prompts"),
                }
            )
    return out


def records(data: dict) -> list[dict]:
    """The paired-effect records of one loaded file (module docstring)."""
    if not isinstance(data, dict):
        raise PairedEffectError("a paired-effect file must hold a JSON object")
    try:
        if isinstance(data.get("paired_effects"), list):
            return list(data["paired_effects"])
        if data.get("schema") == SWEEP_SCHEMA:
            return _from_sweep(data)
        if isinstance(data.get("paired"), dict) and "cells" in data["paired"]:
            return _from_deep(data)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise PairedEffectError(
            f"malformed paired-effect file: {type(err).__name__} {err}"
        ) from None
    raise PairedEffectError("no 'paired_effects' list, sweep rows or paired cells in the file")


def readable(data) -> bool:
    """Whether ``data`` holds paired effects in one of the known shapes."""
    try:
        records(data)
        return True
    except PairedEffectError:
        return False


def _matches(setting: dict, selector: dict) -> bool:
    for k, want in selector.items():
        have = setting.get(k)
        if not (have in want if isinstance(want, tuple) else have == want):
            return False
    return True


def paired_interval(
    files, comparison: str, selector: dict, cells: int
) -> tuple[Interval, list[dict]]:
    """The pooled relative effect (%) of exactly ``cells`` tau records of ``comparison`` matching ``selector``."""
    recs = [r for data in (files if isinstance(files, list) else [files]) for r in records(data)]
    hits = [
        r
        for r in recs
        if r.get("comparison") == comparison
        and r.get("metric", "tau") == "tau"
        and _matches(r.get("setting", {}), selector)
    ]
    if len(hits) != cells:
        raise PairedEffectError(
            f"expected {cells} '{comparison}' tau record(s) with setting {selector}, "
            f"found {len(hits)}"
        )
    try:
        ivs = [
            Interval(
                float(r["rel_pct"]["mean"]),
                float(r["rel_pct"]["lo"]),
                float(r["rel_pct"]["hi"]),
                float(r.get("level", 0.95)),
            )
            for r in hits
        ]
    except (KeyError, TypeError, VerdictError) as err:
        raise PairedEffectError(
            f"a '{comparison}' record has no usable rel_pct interval: {err}"
        ) from None
    levels = sorted({iv.level for iv in ivs})
    if len(levels) != 1:
        raise PairedEffectError(
            f"the '{comparison}' records mix interval levels {levels}: pool one level at a time"
        )
    return pool(ivs, level=levels[0], correlated=len(ivs) > 1), hits


__all__ = ["records", "readable", "paired_interval", "PairedEffectError", "SWEEP_SCHEMA"]
