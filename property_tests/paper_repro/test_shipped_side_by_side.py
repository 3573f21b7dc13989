"""The shipped exitlaw-vs-DDTree run (issue 25) is what its README says: measured at a committed state,
both engines exact at T = 0, the same weights, and every ratio the README quotes equal to the JSON's."""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "paper_repro" / "results" / "ddtree_side_by_side"


def _shipped() -> dict:
    return json.loads((RESULTS / "side_by_side.json").read_text(encoding="utf-8"))


def test_the_shipped_run_is_exact_on_the_same_weights_at_a_committed_state():
    res = _shipped()
    assert res["schema"] == "exitlaw.bench_ddtree"
    assert res["exitlaw_uncommitted_changes"] is False and len(res["exitlaw_commit"]) == 40
    assert res["weights_identical"]["target"] > 0 and res["weights_identical"]["drafter"] > 0
    greedy = [c for c in res["results"] if c["temperature"] == 0.0]
    assert {c["name"] for c in greedy} >= {"ar", "chain", "ddtree B=32", "ddtree B=64"}
    for c in greedy:
        assert c["exact"] and all(c["exact"].values()), (c["name"], c["exact"])


def test_the_readme_quotes_the_shipped_ratios():
    res = _shipped()
    readme = (RESULTS / "README.md").read_text(encoding="utf-8")
    assert res["exitlaw_commit"][:7] in readme
    for c in res["results"]:
        for name, eng in c["engines"].items():
            ratio = eng.get("ratio_tokens_per_s") or eng.get("ratio_round_speed")
            if ratio is None:
                continue
            quoted = f"{ratio['median']:.3f} [{ratio['min']:.3f}], {ratio['lo']:.3f}-{ratio['hi']:.3f} ({ratio['centre']:.3f})"
            assert quoted in readme, (
                f"{c['name']} T={c['temperature']} {name}: README does not quote {quoted}"
            )
