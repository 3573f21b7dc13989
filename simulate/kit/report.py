"""Plain-text report of the conformance kit: one line per check, the verdict and, on failure, where."""

from __future__ import annotations


def _fmt(x) -> str:
    if x is None:
        return "-"
    return f"{x:.3g}" if isinstance(x, float) else str(x)


def _stat_cells(c: dict) -> str:
    """statistic, dof, p-value and threshold columns; a zero-cell failure reads the same in every row."""
    if c.get("test") == "zero cell":
        return (
            f"{'count in a zero cell: ' + str(int(c['statistic'])):>34}  {_fmt(c['threshold']):>9}"
        )
    return (
        f"{_fmt(float(c['statistic'])):>10} {c['dof']:>5} {_fmt(float(c['pvalue'])):>9}     "
        f"   {_fmt(c.get('threshold')):>9}"
    )


def _power_line(rep) -> str:
    """The computed-power line; a run in which no check ran (every call failed) states that instead."""
    if rep.min_power is None:
        why = (
            "every call of the verifier failed"
            if rep.cases and all(c.get("error") for c in rep.cases)
            else "no check ran"
        )
        return f"power: none computed ({why}; 0 samples judged)"
    return (
        f"power >= {rep.power_target} per chi-square against TV >= {rep.delta} on pooled cells (smallest "
        f"computed: {rep.min_power:.4f}; below the target the verdict is 'insufficient samples')"
    )


def format_report(rep) -> str:
    fmt = "" if rep.verifier_format == "exitlaw" else f"   format {rep.verifier_format}"
    out = [
        f"exitlaw check {rep.verifier}{fmt}   mode {rep.mode}   seed {rep.seed}",
        f"false-failure rate <= {rep.family_alpha:g} for the whole run: alpha = {rep.alpha_per_check:.3g} per check "
        f"(Bonferroni over checks and cases); a distribution check is two tests, the pooled chi-square at "
        f"alpha / 2 and its worst cell at alpha / 2 / cells; completed_block is tested at every prefix "
        f"length k at alpha / horizon each; every row is judged 'p-value < threshold'",
        _power_line(rep),
        *(
            [
                f"settings mode: the verifier got raw logits and the settings; judged on the processed target law "
                f"under {len(rep.settings)} setting(s) (the case names say which)"
            ]
            if getattr(rep, "settings", None)
            else []
        ),
        f"{'case':<12} {'samples':>7}  {'check':<20} {'test':<14} {'statistic':>10} {'dof':>5} {'p-value':>9}"
        f"  {'threshold':>12} {'power':>7}  result",
    ]
    for case in rep.cases:
        if case.get("error"):
            out.append(
                f"{case['name']:<12} {case['samples']:>7}  VERIFIER FAILED: {case['error']['error']}"
            )
        for i, c in enumerate(case["checks"]):
            head = f"{case['name']:<12} {case['samples']:>7}" if i == 0 else " " * 20
            res = "REJECT" if c["rejected"] else "ok"
            out.append(
                f"{head}  {c['name']:<20} {c.get('test', ''):<14} {_stat_cells(c)} {_fmt(c['power']):>7}  {res}"
            )
        if "ceiling" in case:
            out.append(
                " " * 20
                + f"  E[L] observed {case['mean_length']:.4f}   1 + C_p = {case['ceiling']:.4f}"
            )
    out.append(
        f"verdict: {rep.verdict.upper() if rep.exit_code else rep.verdict}   (exit status {rep.exit_code})"
    )
    shown: dict[str, str] = {}  # traceback text -> the case it was printed under (printed once)
    for err in rep.errors:
        out.append(
            f"  case {err['case']} failed: {err['error']}   (tree {err['tree']}, seed {err['seed']})"
        )
        out.append(f"  reproduce: {err['reproduce']}")
        tb = (err["traceback"] or "").rstrip()
        if tb in shown:
            out.append(f"    (same traceback as case {shown[tb]})")
        elif tb:
            shown[tb] = err["case"]
            out.extend("    " + line for line in tb.splitlines()[-6:])
    if rep.failure and rep.failure.get("check") != "call":
        f = dict(rep.failure)
        out.append(f"  case {f.pop('case')}: tree {f.pop('tree')}")
        out.append(
            f"  check {f.pop('check')}: statistic {_fmt(float(f.pop('statistic')))}, "
            f"p-value {_fmt(float(f.pop('pvalue')))}"
        )
        cell = f.pop("cell", {})
        where = {**(cell if isinstance(cell, dict) else {"cell": cell}), **f}
        if "node" in where:
            out.append(
                f"  node {where.pop('node')}: "
                + ", ".join(f"{k} {_fmt(v)}" for k, v in where.items())
            )
        else:
            out.append("  where: " + ", ".join(f"{k} {_fmt(v)}" for k, v in where.items()))
        out.append(f"  reproduce: {rep.reproduce}")
    return "\n".join(out)
