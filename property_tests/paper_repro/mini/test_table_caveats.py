"""The mini run's table says what it is: a pipeline check when it is one, where its base pair came from,
and what SR below 1 means at this scale (issue 38)."""

import json

from exitlaw.paper_repro.mini.pipeline import SHIPPED_RESULTS
from exitlaw.paper_repro.mini.table import format_markdown


def _shipped_full() -> dict:
    return json.loads((SHIPPED_RESULTS / "mini_full_seed0.json").read_text())


def test_a_smoke_run_says_it_is_not_evidence_and_names_its_base_pair():
    res = _shipped_full()
    res["config"]["preset"] = "smoke"
    made = json.loads((SHIPPED_RESULTS / "paper_regime" / "base" / "mini_config.json").read_text())
    res["base_pair"] = {"source": "paper_regime/base", "config": made, "timings_s": {}}
    md = format_markdown(res)
    assert "**A pipeline check, not evidence**" in md
    assert "copied from the shipped `paper_regime/base`" in md and "3000 steps" in md
    assert "SR below 1 means speculative decoding is slower than plain decoding" in md


def test_a_run_trained_from_scratch_carries_no_base_pair_line_or_smoke_caveat():
    md = format_markdown(_shipped_full())
    assert "copied from the shipped" not in md and "pipeline check" not in md
    assert "SR below 1 means" in md
