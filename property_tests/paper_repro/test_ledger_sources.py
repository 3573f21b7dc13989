"""The ledger says where each row comes from and at what scale (docs/design.md §1.11; issue 38).

Every row names its source (``this run (...)`` or ``shipped (file, commit ...)``; ``GPU, not run`` for
claims decidable on a GPU only); no row measured at mini scale, on a CPU or in simulation carries a bare
verdict; dirty inputs are flagged; this run's inputs carry a version and commit.
"""

from __future__ import annotations

import json
import re

import pytest

from exitlaw.paper_repro.ledger import CLAIMS, build_ledger, format_markdown
from exitlaw.paper_repro.ledger_inputs import RESULTS, fill_this_run, gather_shipped
from exitlaw.paper_repro.verdicts import (
    CONTRADICTED,
    INCONCLUSIVE,
    MINI_WORDS,
    REPRODUCED,
    VERDICTS,
    Rule,
    scale_kind,
    scaled_verdict,
)

SOURCE = re.compile(r"^(this run \(|shipped \(|missing \(|GPU, not run)")
SCALED = ("simulation", "at mini scale", "CPU", "GPU")


def source_problems(row: dict) -> list[str]:
    """What is wrong with a row's source and verdict wording (empty: nothing)."""
    out = []
    parts = [p.strip() for p in str(row.get("source", "")).split(";") if p.strip()]
    if not parts or not all(SOURCE.match(p) for p in parts):
        out.append(f"{row['key']}: source {row.get('source')!r} names no origin")
    for p in parts:
        if p.startswith("shipped (") and "commit" not in p:
            out.append(f"{row['key']}: shipped source {p!r} names no commit")
    text = str(row.get("verdict_text", ""))
    if text in VERDICTS or not any(w in text for w in SCALED):
        out.append(f"{row['key']}: bare verdict {text!r} (scale {row.get('scale')!r})")
    mini = MINI_WORDS.get(row["verdict"], "")
    if scale_kind(row.get("scale", "")) == "mini-scale, CPU" and not text.startswith(mini):
        out.append(f"{row['key']}: a mini-scale row reads {text!r}, not {mini!r}")
    if not (text.startswith(MINI_WORDS[row["verdict"]]) or text.startswith(row["verdict"])) and (
        f"direction {row['verdict']}" not in text
    ):
        out.append(
            f"{row['key']}: verdict text {text!r} does not carry the verdict {row['verdict']!r}"
        )
    return out


def _shipped_rows():
    return json.loads((RESULTS / "ledger.json").read_text())["rows"]


def test_every_shipped_row_names_its_source_and_no_verdict_is_bare():
    rows = _shipped_rows()
    assert [p for r in rows for p in source_problems(r)] == []
    md = (RESULTS / "ledger.md").read_text()
    for r in rows:  # the markdown prints the scaled verdict, never the bare word
        assert f"**{r['verdict_text']}**" in md and f"**{r['verdict']}**" not in md


def test_gpu_rows_say_gpu_not_run_and_dirty_inputs_are_flagged():
    rows = {r["key"]: r for r in _shipped_rows()}
    for c in CLAIMS:
        if "cpu" not in c.rule.decidable_at:
            r = rows[c.key]
            assert r["source"] == r["scale"] == "GPU, not run" and r["verdict"] == INCONCLUSIVE
            assert r["exitlaw"] == "not run (GPU only)"
    ledger = json.loads((RESULTS / "ledger.json").read_text())
    for r in ledger["rows"]:
        dirty = any(
            "dirty" in ledger["inputs"][n]["git_commit"]
            for n in r["inputs"]
            if n in ledger["inputs"]
        )
        assert ("DIRTY" in r["source"]) == dirty, r["key"]
    md = (RESULTS / "ledger.md").read_text()
    assert all(
        "DIRTY" in line for line in md.splitlines() if line.startswith("| ") and "-dirty" in line
    )


def test_the_checker_catches_a_bare_verdict_and_a_row_without_source():
    inputs, prov = gather_shipped()
    rows = build_ledger(inputs, prov)
    assert [p for r in rows for p in source_problems(r)] == []
    bare = {**rows[0], "verdict_text": rows[0]["verdict"]}
    assert source_problems(bare) and "bare verdict" in source_problems(bare)[0]
    nowhere = {**rows[0], "source": "paper_repro/results/x.json"}
    assert source_problems(nowhere)
    assert "**reproduced**" not in format_markdown(rows)


def test_scaled_verdicts_by_hand():
    d = Rule("direction", "%", paper_effect=12.0)
    assert scaled_verdict(d, REPRODUCED, "cpu, V=151936") == (
        "direction reproduced (size not comparable: CPU)"
    )
    assert scaled_verdict(Rule("direction", "tokens"), REPRODUCED, "simulation, 200 rounds") == (
        "direction reproduced (simulation; the paper states no size)"
    )
    # a mini-scale row never reads a bare "contradicted" beside a paper-scale number (issue 34)
    assert scaled_verdict(d, CONTRADICTED, "the paper-regime mini run (CPU)") == (
        "not reproduced at mini scale (CPU)"
    )
    assert scaled_verdict(d, REPRODUCED, "mini scale (CPU)") == (
        "reproduced at mini scale (CPU; direction only, size not comparable)"
    )
    assert scaled_verdict(
        eq := Rule("equivalence", "tokens", margin=0.03), INCONCLUSIVE, "mini"
    ) == ("inconclusive at mini scale (CPU)")
    assert scaled_verdict(eq, REPRODUCED, "exact enumeration, V=3") == "reproduced (simulation)"
    assert scaled_verdict(d, INCONCLUSIVE, "GPU, not run") == "inconclusive (GPU, not run)"
    assert scale_kind("conformance kit hard cases") == "simulation"
    # a row measured on a CUDA device says GPU; one measured on the CPU says CPU
    assert scale_kind("cuda, V=151936, T=1.0, 8 trees x 30 repeats per B") == "GPU"
    assert scale_kind("cpu, V=151936, T=1.0, 2 trees x 5 repeats per B") == "CPU"
    assert scaled_verdict(d, CONTRADICTED, "cuda, V=151936") == "contradicted (GPU)"


def test_this_runs_inputs_get_a_version_and_commit_and_say_they_were_filled():
    prov = {
        "mini": {"origin": "this run", "exitlaw_version": "0.1.0", "git_commit": "unknown"},
        "paper_regime": {
            "origin": "shipped",
            "exitlaw_version": "unknown",
            "git_commit": "unknown",
        },
    }
    fill_this_run(prov)
    assert prov["mini"]["git_commit"] != "unknown" and "commit" in prov["mini"]["filled"]
    assert prov["paper_regime"]["git_commit"] == "unknown" and "filled" not in prov["paper_regime"]


@pytest.mark.parametrize("key", ["engine_tau_equal"])
def test_correlated_cells_get_the_interval_that_holds_under_any_correlation(key):
    row = {r["key"]: r for r in _shipped_rows()}[key]
    assert (
        "valid under any correlation" in row["exitlaw"]
        and "treated as independent" in row["exitlaw"]
    )


def test_a_ledger_over_a_run_names_this_runs_inputs_and_their_commit(tmp_path):
    from exitlaw.paper_repro.ledger_inputs import FIGURE_INPUTS, make_ledger

    figs = tmp_path / "figs"
    figs.mkdir()
    for name in FIGURE_INPUTS:
        data = json.loads((RESULTS / "ledger_inputs" / f"{name}.json").read_text())
        data.pop(
            "provenance", None
        )  # a file that records no commit: the ledger fills it and says so
        (figs / f"{name}.json").write_text(json.dumps(data))
    rows, md, js = make_ledger(figs, tmp_path / "ledger")
    ledger = json.loads(js.read_text())
    assert [p for r in rows for p in source_problems(r)] == []
    row = {r["key"]: r for r in rows}["tev_stage_savings"]
    assert row["source"].startswith("this run (verifier_latency")
    rec = ledger["inputs"]["verifier_latency"]
    assert rec["origin"] == "this run" and rec["git_commit"] != "unknown" and "filled" in rec
    assert "verifier_latency" in ledger["header"]["inputs from this run"]
    assert "paper_regime" in ledger["header"]["inputs shipped (paper_repro/results)"]
