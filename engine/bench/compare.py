"""Compare two ``exitlaw bench decoding`` results files: tau / SR deltas with 95 % intervals, T = 0 output agreement.

For every configuration ``(method, verifier, budget, temperature)`` that both files hold
(the AR baseline excluded), with ``A`` the first file and ``B`` the second:

* ``tau = sum_i b_i / sum_i r_i`` (``b_i`` block tokens, ``r_i`` rounds of prompt ``i``, all
  turns) and ``SR = (sum_i d^AR_i / sum_i n^AR_i) / (sum_i d_i / sum_i n_i)`` (decode seconds
  ``d``, generated tokens ``n``; each file's own AR run at the same temperature), recomputed
  from the stored per-prompt outputs, and ``delta = stat_B - stat_A``.
* 95 % interval by the delta method. Both statistics have the form
  ``S = prod_k (sum_i x_ki)^c_k``, so prompt ``i``'s influence is
  ``psi_i = n S sum_k c_k x_ki / X_k`` (``X_k = sum_i x_ki``) and ``se(S) = sd(psi) / sqrt(n)``.
  **Paired** when at least two prompts appear in both files (matched by their text or
  ids): ``psi^B_i - psi^A_i`` over the matched prompts, Student t with ``n - 1`` degrees
  of freedom (with equal rounds per prompt this is the paired t interval of per-prompt
  tau). Otherwise **unpaired**: Welch's interval over each file's prompts. The result
  says which, and how many prompts were left out of the pairing.
* T = 0: per configuration, the number of matched prompts whose outputs (every turn)
  differ token for token between the files.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from exitlaw.theory.infra.json_read import read_json_file

SCHEMA = "exitlaw.bench"


class CompareError(ValueError):
    """A results file that cannot be compared (wrong schema, no stored outputs, ...)."""


def t_quantile(p: float, df: float) -> float:
    """Quantile of Student's t with ``df >= 1`` (real) degrees of freedom, for ``0.5 <= p < 1``.

    ``F(t) = 1/2 + int_0^t f`` with the density ``f(x) = Gamma((df+1)/2) / (sqrt(df pi) Gamma(df/2))
    (1 + x^2/df)^(-(df+1)/2)``, integrated by composite Simpson (4096 panels, smooth integrand),
    inverted by bisection.
    """
    # below one degree of freedom the tail outruns the quadrature
    if not (0.5 <= p < 1.0) or not df >= 1:
        raise ValueError(f"t_quantile needs 0.5 <= p < 1 and df >= 1, got p={p}, df={df}")
    logc = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def cdf(t: float) -> float:
        x = np.linspace(0.0, t, 4097)
        f = np.exp(logc - (df + 1) / 2 * np.log1p(x * x / df))
        h = t / 4096
        return 0.5 + h / 3 * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum())

    lo, hi = 0.0, 1.0
    while cdf(hi) < p:
        lo, hi = hi, 2 * hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if cdf(mid) < p else (lo, mid)
    return 0.5 * (lo + hi)


def load_results(path: str | Path) -> dict[str, Any]:
    res = read_json_file(path, "bench results", error=CompareError, object_only=False)
    _check(res, str(path))
    return res


def _check(res: dict, where: str) -> None:
    if not isinstance(res, dict) or res.get("schema") != SCHEMA:
        raise CompareError(f"{where} is not an exitlaw bench results file (schema {SCHEMA!r})")
    if "prompts" not in res or any("outputs" not in r for r in res.get("runs", [])):
        raise CompareError(
            f"{where} stores no outputs (written before bench kept them); rerun exitlaw bench decoding"
        )


def _key(run: dict) -> tuple:
    return run["method"], run["verifier"], run["budget"], float(run["temperature"])


def _prompt_keys(res: dict) -> list[str]:
    """One key per prompt: its content, with an occurrence number so repeated prompts pair in order."""
    seen: dict[str, int] = {}
    out = []
    for p in res["prompts"]:
        text = json.dumps(p, sort_keys=True)
        seen[text] = seen.get(text, 0) + 1
        out.append(f"{seen[text]}:{text}")
    return out


def per_prompt(run: dict, n_prompts: int) -> dict[str, np.ndarray]:
    """Per-prompt sums over turns: ``block`` tokens, ``rounds``, generated ``tokens``, ``decode`` seconds,
    and ``outputs`` (the token lists of every turn)."""
    cols = {k: np.zeros(n_prompts) for k in ("block", "rounds", "tokens", "decode")}
    outs: list[list[list[int]]] = [[] for _ in range(n_prompts)]
    for o in run["outputs"]:
        i = o["prompt"]
        cols["block"][i] += o["block_tokens"]
        cols["rounds"][i] += o["rounds"]
        cols["tokens"][i] += len(o["tokens"])
        cols["decode"][i] += o["decode_s"]
        outs[i].append(list(o["tokens"]))
    return {**cols, "outputs": outs}


def _stat_and_influence(columns: list[tuple[np.ndarray, float]]) -> tuple[float, np.ndarray]:
    """``S = prod_k X_k^c_k`` and ``psi_i = n S sum_k c_k x_ki / X_k`` for ``columns = [(x_k, c_k)]``."""
    n = len(columns[0][0])
    sums = [float(x.sum()) for x, _ in columns]
    s = math.prod(X**c for X, (_, c) in zip(sums, columns))
    psi = n * s * sum(c * x / X for X, (x, c) in zip(sums, columns))
    return s, psi


def _stats(cols: dict, ar: dict, idx: np.ndarray) -> dict[str, tuple[float, np.ndarray]]:
    pick = {k: cols[k][idx] for k in ("block", "rounds", "tokens", "decode")}
    arp = {k: ar[k][idx] for k in ("tokens", "decode")}
    return {
        "tau": _stat_and_influence([(pick["block"], 1.0), (pick["rounds"], -1.0)]),
        "SR": _stat_and_influence(
            [
                (arp["decode"], 1.0),
                (arp["tokens"], -1.0),
                (pick["decode"], -1.0),
                (pick["tokens"], 1.0),
            ]
        ),
    }


def _interval(delta: float, psi_a: np.ndarray, psi_b: np.ndarray, paired: bool) -> dict[str, Any]:
    if paired:
        n = len(psi_a)
        d = psi_b - psi_a
        if n < 2:
            return {"ci95": None, "df": None}
        se, df = float(np.std(d, ddof=1)) / math.sqrt(n), n - 1.0
    else:
        na, nb = len(psi_a), len(psi_b)
        if na < 2 or nb < 2:
            return {"ci95": None, "df": None}
        va, vb = float(np.var(psi_a, ddof=1)) / na, float(np.var(psi_b, ddof=1)) / nb
        se = math.sqrt(va + vb)
        df = (
            (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
            if va + vb > 0
            else float(na + nb - 2)
        )
    if se == 0:
        return {"ci95": [delta, delta], "df": df}
    half = t_quantile(0.975, df) * se
    return {"ci95": [delta - half, delta + half], "df": df}


def compare_results(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Compare results ``a`` and ``b`` (module docstring); JSON-ready."""
    _check(a, "the first results")
    _check(b, "the second results")
    ka, kb = _prompt_keys(a), _prompt_keys(b)
    in_b = set(kb)
    common = [k for k in ka if k in in_b]
    paired = len(common) >= 2
    ia = np.array([ka.index(k) for k in common], dtype=int)
    ib = np.array([kb.index(k) for k in common], dtype=int)
    runs_a, runs_b = {_key(r): r for r in a["runs"]}, {_key(r): r for r in b["runs"]}
    rows = []
    for key in [k for k in runs_a if k in runs_b and k[0] != "ar"]:
        temp = key[3]
        ar_key = ("ar", None, None, temp)
        if ar_key not in runs_a or ar_key not in runs_b:
            raise CompareError(
                f"a file lacks the AR run at T = {temp:g} that SR is measured against"
            )
        ca, cb = per_prompt(runs_a[key], len(ka)), per_prompt(runs_b[key], len(kb))
        ara, arb = per_prompt(runs_a[ar_key], len(ka)), per_prompt(runs_b[ar_key], len(kb))
        sel_a = ia if paired else np.arange(len(ka))
        sel_b = ib if paired else np.arange(len(kb))
        sa, sb = _stats(ca, ara, sel_a), _stats(cb, arb, sel_b)
        row: dict[str, Any] = {
            "method": key[0],
            "verifier": key[1],
            "budget": key[2],
            "temperature": temp,
        }
        for name in ("tau", "SR"):
            (va, pa), (vb, pb) = sa[name], sb[name]
            row[name] = {"a": va, "b": vb, "delta": vb - va, **_interval(vb - va, pa, pb, paired)}
        if temp == 0:
            pairs = list(zip(ia.tolist(), ib.tolist()))
            row["t0_compared"] = len(pairs)
            row["t0_mismatches"] = sum(ca["outputs"][i] != cb["outputs"][j] for i, j in pairs)
        rows.append(row)
    note = (
        f"paired by prompt over the {len(common)} prompts both files hold"
        + (
            f" ({len(ka) - len(common)} only in the first, {len(kb) - len(common)} only in the second, left out)"
            if len(common) < max(len(ka), len(kb))
            else ""
        )
        if paired
        else f"unpaired (Welch): the files share {len(common)} prompt(s), fewer than the 2 a paired interval needs"
    )
    return {
        "pairing": "paired" if paired else "unpaired",
        "note": note,
        "prompts": {"a": len(ka), "b": len(kb), "matched": len(common)},
        "rows": rows,
        "only_in_a": [list(k) for k in runs_a if k not in runs_b],
        "only_in_b": [list(k) for k in runs_b if k not in runs_a],
    }


def compare_files(path_a: str | Path, path_b: str | Path) -> dict[str, Any]:
    return {
        "a": str(path_a),
        "b": str(path_b),
        **compare_results(load_results(path_a), load_results(path_b)),
    }


def format_comparison(cmp: dict[str, Any]) -> str:
    """A fixed-width table: per configuration, tau and SR of both files, the delta and its 95 % interval."""

    def cell(s: dict) -> str:
        ci = "      n/a" if s["ci95"] is None else f"[{s['ci95'][0]:+.3f}, {s['ci95'][1]:+.3f}]"
        return f"{s['a']:>6.3f} {s['b']:>6.3f} {s['delta']:>+7.3f} {ci:>18}"

    lines = [
        f"B - A, {cmp['note']}",
        f"{'method':<7} {'verifier':<8} {'B':>4} {'T':>4}   {'tau A':>6} {'tau B':>6} {'delta':>7} "
        f"{'95% CI':>18}   {'SR A':>6} {'SR B':>6} {'delta':>7} {'95% CI':>18}   T=0 outputs",
    ]
    for r in cmp["rows"]:
        same = ""
        if "t0_mismatches" in r:
            same = (
                f"all {r['t0_compared']} equal"
                if r["t0_mismatches"] == 0
                else f"{r['t0_mismatches']} of {r['t0_compared']} prompts DIFFER"
            )
        lines.append(
            f"{r['method']:<7} {str(r['verifier'] or '-'):<8} {str(r['budget'] or '-'):>4} "
            f"{r['temperature']:>4g}   {cell(r['tau'])}   {cell(r['SR'])}   {same}"
        )
    for side in ("a", "b"):
        if cmp[f"only_in_{side}"]:
            lines.append(
                f"only in {side.upper()}: "
                + ", ".join(str(tuple(k)) for k in cmp[f"only_in_{side}"])
            )
    return "\n".join(lines)


__all__ = [
    "CompareError",
    "compare_results",
    "compare_files",
    "format_comparison",
    "load_results",
    "per_prompt",
    "t_quantile",
]
